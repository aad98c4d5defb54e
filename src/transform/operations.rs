//! The operations a [`Transform`](crate::Transform) holds, declared once with the names each front end gives
//! them: torchvision's class, the field of `Transform` (its key in the JSON form), the command
//! line's flag and the Python `Transform` method, and where torchvision's usual order puts it.
//! The single-operation transforms come from their own table ([`super::COLOR_OPERATIONS`]),
//! which declares the rest of each of them too. The command line, the Python methods and their
//! stubs, `from_torchvision` (which reads this table) and the JSON form are checked against it
//! by tests.

use super::COLOR_OPERATIONS;

/// One operation of a [`Transform`](crate::Transform).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    /// torchvision's class (`transforms` and `transforms.v2` spell it alike).
    pub torchvision: &'static str,
    /// The field of [`Transform`](crate::Transform) it sets, and its key in [`Transform::to_json`](crate::Transform::to_json).
    pub field: &'static str,
    /// The command line's flag.
    pub flag: &'static str,
    /// The Python `Transform` method.
    pub method: &'static str,
    /// Its place in torchvision's usual order, the one gpuprep applies: `from_torchvision`
    /// refuses a pipeline that goes back to an earlier place (the tensor conversions sit at 7
    /// and 8), and checks the order within a place where it matters (a rotation after a flip).
    pub stage: u8,
}

const fn op(
    torchvision: &'static str,
    field: &'static str,
    flag: &'static str,
    method: &'static str,
    stage: u8,
) -> Operation {
    Operation {
        torchvision,
        field,
        flag,
        method,
        stage,
    }
}

/// Every operation, in torchvision's usual order.
pub const OPERATIONS: [Operation; FIELDS.len() + COLOR_OPERATIONS.len()] = every_operation();

/// Where the single-operation transforms go among the operations of [`FIELDS`]: after
/// `RandomGrayscale`.
const COLOR_STAGE: u8 = 5;

/// [`FIELDS`] with [`COLOR_OPERATIONS`] in their place.
const fn every_operation() -> [Operation; FIELDS.len() + COLOR_OPERATIONS.len()] {
    let mut all = [FIELDS[0]; FIELDS.len() + COLOR_OPERATIONS.len()];
    let (mut from, mut to) = (0, 0);
    while from < FIELDS.len() {
        if FIELDS[from].stage > COLOR_STAGE && to == from {
            let mut c = 0;
            while c < COLOR_OPERATIONS.len() {
                let o = &COLOR_OPERATIONS[c];
                all[to] = op(o.torchvision, "color_ops", o.flag, o.method, COLOR_STAGE);
                (c, to) = (c + 1, to + 1);
            }
        }
        all[to] = FIELDS[from];
        (from, to) = (from + 1, to + 1);
    }
    all
}

/// The operations that are fields of their own.
const FIELDS: [Operation; 23] = [
    op("Resize", "resize", "--resize", "resize", 0),
    op(
        "RandomResizedCrop",
        "random_resized_crop",
        "--random-resized-crop",
        "random_resized_crop",
        0,
    ),
    op(
        "RandomResize",
        "random_resize",
        "--random-resize",
        "random_resize",
        0,
    ),
    op(
        "RandomShortestSize",
        "random_shortest_size",
        "--random-shortest-size",
        "random_shortest_size",
        0,
    ),
    op("Pad", "pad", "--pad", "pad", 1),
    op("CenterCrop", "center_crop", "--crop", "center_crop", 2),
    op(
        "RandomCrop",
        "random_crop",
        "--random-crop",
        "random_crop",
        2,
    ),
    op(
        "RandomHorizontalFlip",
        "horizontal_flip",
        "--hflip",
        "horizontal_flip",
        3,
    ),
    op(
        "RandomVerticalFlip",
        "vertical_flip",
        "--vflip",
        "vertical_flip",
        3,
    ),
    op(
        "RandomRotation",
        "random_rotation",
        "--random-rotation",
        "random_rotation",
        3,
    ),
    op(
        "RandomAffine",
        "random_affine",
        "--random-affine",
        "random_affine",
        3,
    ),
    op(
        "TrivialAugmentWide",
        "trivial_augment",
        "--trivial-augment",
        "trivial_augment_wide",
        3,
    ),
    op(
        "RandAugment",
        "rand_augment",
        "--rand-augment",
        "rand_augment",
        3,
    ),
    op(
        "AutoAugment",
        "auto_augment",
        "--auto-augment",
        "auto_augment",
        3,
    ),
    op(
        "TimmRandAugment",
        "timm_rand_augment",
        "--timm-rand-augment",
        "timm_rand_augment",
        3,
    ),
    op(
        "TimmAutoAugment",
        "timm_auto_augment",
        "--timm-auto-augment",
        "timm_auto_augment",
        3,
    ),
    op(
        "TimmAugMix",
        "timm_aug_mix",
        "--timm-aug-mix",
        "timm_aug_mix",
        3,
    ),
    op(
        "RandomPerspective",
        "random_perspective",
        "--random-perspective",
        "random_perspective",
        3,
    ),
    op(
        "ColorJitter",
        "color_jitter",
        "--color-jitter",
        "color_jitter",
        3,
    ),
    op(
        "RandomGrayscale",
        "grayscale",
        "--grayscale",
        "grayscale",
        4,
    ),
    op(
        "GaussianBlur",
        "gaussian_blur",
        "--gaussian-blur",
        "gaussian_blur",
        6,
    ),
    op("Normalize", "normalize", "--normalize", "normalize", 9),
    op(
        "RandomErasing",
        "random_erasing",
        "--random-erasing",
        "random_erasing",
        10,
    ),
];

/// The keys of [`Transform::to_json`](crate::Transform::to_json) that are settings of the whole
/// transform, not operations (`channels` is the field `channel_order`).
pub const SETTINGS: [&str; 10] = [
    "filter",
    "draft",
    "exif_transpose",
    "reciprocal_scale",
    "layout",
    "dtype",
    "channels",
    "order",
    "seed",
    "epoch",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transform;

    #[test]
    fn the_single_operation_transforms_stand_after_random_grayscale() {
        let names: Vec<&str> = OPERATIONS.iter().map(|o| o.torchvision).collect();
        let grey = names.iter().position(|&n| n == "RandomGrayscale").unwrap();
        let singles: Vec<&str> = COLOR_OPERATIONS.iter().map(|o| o.torchvision).collect();
        assert_eq!(names[grey + 1..grey + 1 + singles.len()], singles);
        assert_eq!(names.last(), Some(&"RandomErasing"));
    }

    /// The JSON form's keys are the operations' fields and the settings, each once.
    #[test]
    fn every_field_of_a_transform_is_an_operation_or_a_setting() {
        let json = Transform::default().to_json();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut declared: Vec<&str> = OPERATIONS.iter().map(|o| o.field).collect();
        declared.extend(SETTINGS);
        declared.sort_unstable();
        declared.dedup();
        assert_eq!(keys, declared);
    }

    #[test]
    fn names_are_unique_and_the_order_never_goes_back() {
        for name in [
            |o: &Operation| o.torchvision,
            |o: &Operation| o.flag,
            |o: &Operation| o.method,
        ] {
            let mut names: Vec<&str> = OPERATIONS.iter().map(name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), OPERATIONS.len());
        }
        // One field each, but the single-operation transforms' list they share.
        let mut fields: Vec<&str> = FIELDS.iter().map(|o| o.field).collect();
        fields.sort_unstable();
        fields.dedup();
        assert_eq!(fields.len(), FIELDS.len());
        assert!(OPERATIONS.windows(2).all(|w| w[0].stage <= w[1].stage));
    }
}
