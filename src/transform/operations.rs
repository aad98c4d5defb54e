//! The operations a [`Transform`](crate::Transform) holds, declared once with the names each front end gives
//! them: torchvision's class, the field of `Transform` (its key in the JSON form), the command
//! line's flag and the Python `Transform` method, and where torchvision's usual order puts it.
//! The command line, the Python methods and their stubs, `from_torchvision` (which reads this
//! table) and the JSON form are checked against it by tests.

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
    /// refuses a pipeline that goes back to an earlier place (the tensor conversions sit at 4
    /// and 5), and checks the order within a place where it matters (a rotation after a flip).
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
pub const OPERATIONS: [Operation; 11] = [
    op("Resize", "resize", "--resize", "resize", 0),
    op(
        "RandomResizedCrop",
        "random_resized_crop",
        "--random-resized-crop",
        "random_resized_crop",
        0,
    ),
    op("CenterCrop", "center_crop", "--crop", "center_crop", 1),
    op(
        "RandomHorizontalFlip",
        "horizontal_flip",
        "--hflip",
        "horizontal_flip",
        2,
    ),
    op(
        "RandomVerticalFlip",
        "vertical_flip",
        "--vflip",
        "vertical_flip",
        2,
    ),
    op(
        "RandomRotation",
        "random_rotation",
        "--random-rotation",
        "random_rotation",
        2,
    ),
    op(
        "TrivialAugmentWide",
        "trivial_augment",
        "--trivial-augment",
        "trivial_augment_wide",
        2,
    ),
    op(
        "ColorJitter",
        "color_jitter",
        "--color-jitter",
        "color_jitter",
        2,
    ),
    op(
        "RandomGrayscale",
        "grayscale",
        "--grayscale",
        "grayscale",
        3,
    ),
    op("Normalize", "normalize", "--normalize", "normalize", 6),
    op(
        "RandomErasing",
        "random_erasing",
        "--random-erasing",
        "random_erasing",
        7,
    ),
];

/// The keys of [`Transform::to_json`](crate::Transform::to_json) that are settings of the whole
/// transform, not operations (`channels` is the field `channel_order`).
pub const SETTINGS: [&str; 8] = [
    "filter",
    "draft",
    "exif_transpose",
    "layout",
    "dtype",
    "channels",
    "seed",
    "epoch",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transform;

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
        assert_eq!(keys, declared);
    }

    #[test]
    fn names_are_unique_and_the_order_never_goes_back() {
        for name in [
            |o: &Operation| o.torchvision,
            |o: &Operation| o.field,
            |o: &Operation| o.flag,
            |o: &Operation| o.method,
        ] {
            let mut names: Vec<&str> = OPERATIONS.iter().map(name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), OPERATIONS.len());
        }
        assert!(OPERATIONS.windows(2).all(|w| w[0].stage <= w[1].stage));
    }
}
