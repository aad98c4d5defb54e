//! The last step's geometry and constants: `CenterCrop` (torchvision's zero padding included),
//! the flips, the rotation, the augmentation's maps and the colour adjustments in the order they
//! run, then `ToTensor` + `Normalize` through a 3×256 float32 table, in the chosen layout, dtype
//! and channel order (PARITY §4–5).

use super::augment::Params;
use super::auto_augment::Effect;
use crate::transform::Adjustment;
use crate::transform::{ChannelOrder, DType, Filter, Layout, Normalize, Transform};

/// The fill and interpolation of the augmentation policy's maps.
fn augment_map_options(transform: &Transform) -> ([u8; 3], Filter) {
    let policies = [
        transform.trivial_augment.map(|t| (t.fill, t.interpolation)),
        transform.rand_augment.map(|r| (r.fill, r.interpolation)),
        transform.auto_augment.map(|a| (a.fill, a.interpolation)),
        // Each of its geometric operations has a filter of its own.
        transform
            .timm_rand_augment
            .map(|r| (r.fill, Filter::Nearest)),
        transform
            .timm_auto_augment
            .map(|a| (a.fill, Filter::Nearest)),
        transform.timm_aug_mix.map(|m| (m.fill, Filter::Nearest)),
    ];
    let first = policies.into_iter().flatten().next();
    first.unwrap_or(([0; 3], Filter::Nearest))
}

/// A `CenterCrop` of a resized image: the output's size and where its first sample lies in the
/// image (negative where the image is zero-padded first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crop {
    /// Output width.
    pub width: usize,
    /// Output height.
    pub height: usize,
    /// Image column under output column 0.
    pub x: isize,
    /// Image row under output row 0.
    pub y: isize,
}

/// The most steps one image goes through after its rotation: its augmentation policy's
/// operations (or timm's AugMix's steps), `RandomPerspective`'s map, `ColorJitter`'s four,
/// `RandomGrayscale`, each single-operation transform once and `GaussianBlur` (given parameters
/// are held to that too). The GPU's job record has room for this many.
pub const MAX_STEPS: usize =
    MAX_POLICY_STEPS + 1 + 4 + 1 + crate::transform::COLOR_OPERATIONS.len() + 1;

/// The most steps of the augmentation policy's place: `RandAugment`'s operations, or timm's
/// AugMix's chains with its keeping, sums and blend.
const MAX_POLICY_STEPS: usize = {
    let (ops, mixed) = (
        crate::transform::MAX_AUGMENT_OPS as usize,
        crate::transform::MAX_MIXED_STEPS as usize,
    );
    if ops > mixed {
        ops
    } else {
        mixed
    }
};

/// The most maps among one image's steps: an augmentation's operations (a first map with
/// nearest-neighbour sampling is the rotation instead), or the operations of AugMix's chains,
/// `width × depth` of them where `width × (depth + 1) + 2` steps fit its [`MAX_MIXED_STEPS`]
/// (one chain of eleven); then `RandomPerspective`'s.
///
/// [`MAX_MIXED_STEPS`]: crate::MAX_MIXED_STEPS
pub const MAX_REMAPS: usize = {
    let (ops, chained) = (
        crate::transform::MAX_AUGMENT_OPS as usize,
        crate::transform::MAX_MIXED_STEPS as usize - 3,
    );
    (if ops > chained { ops } else { chained }) + 1
};

/// One step of the image after stage 4, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// A map of the image so far: `RandomRotation`, `RandomAffine`, an augmentation's shear,
    /// translation or rotation, or `RandomPerspective`'s, where stage 4 does not walk it (a
    /// filtered map, or one after another step).
    Remap(super::Rotation),
    /// A colour operation.
    Adjust(Adjustment),
    /// `GaussianBlur` with these kernels.
    Blur(super::Blur),
    /// AugMix's start: the image is kept, and the mix of its chains begins at zero.
    KeepForMix,
    /// The end of one of AugMix's chains: the image so far, times the weight (float32), added
    /// to the mix (float32, numpy's `mixed += w * img`); then the kept image again for the next.
    AddToMix(f32),
    /// AugMix's end: the mix clipped to 0..=255 and truncated (numpy's `astype(uint8)`), then
    /// `Image.blend(kept, mix, factor)`.
    BlendMix(f32),
    /// Blended AugMix's start: the image is kept, and the running blend starts as it.
    KeepForBlends,
    /// The end of one of blended AugMix's chains but the last: `Image.blend(running, image,
    /// weight)` becomes the running blend; then the kept image again for the next chain.
    BlendChain(f32),
    /// The end of its last chain: the image becomes `Image.blend(running, image, weight)`.
    BlendLastChain(f32),
}

/// How the resized image becomes the output tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputPlan {
    /// `Pad`'s and `RandomCrop`'s pads of the resized image, in order (none without them).
    pub padding: Vec<super::Padding>,
    /// The centre crop or random crop of the padded image (the whole of it when the transform
    /// has none).
    pub crop: Crop,
    /// Whether the cropped image is mirrored left to right (`RandomHorizontalFlip` flipped).
    pub horizontal_flip: bool,
    /// Whether it is mirrored top to bottom.
    pub vertical_flip: bool,
    /// The first step when it is a map stage 4 walks in fixed point (a nearest-pixel
    /// `RandomRotation`, `RandomAffine`, or a policy's shear, translation or rotation).
    pub rotation: Option<super::Rotation>,
    /// What happens to the (rotated) image, in the transform's order of its steps that keep the
    /// size ([`Transform::ordered_steps`], or the sample's drawn `steps`): the rotation, affine
    /// map or policy's operations (AugMix's chains), `RandomPerspective`'s map, `ColorJitter`'s
    /// adjustments, `RandomGrayscale`, the single-operation transforms that drew theirs,
    /// `GaussianBlur`, each where it applies.
    pub steps: Vec<Step>,
    /// `RandomErasing`'s boxes of the output and their values, in the order they are written
    /// (a later box over an earlier one).
    pub erase: Vec<super::Erased>,
    /// Dimensions in the chosen layout: `[h, w, 3]` or `[3, h, w]`.
    pub shape: [usize; 3],
    /// Memory layout.
    pub layout: Layout,
    /// Element type.
    pub dtype: DType,
    /// Channel order.
    pub channel_order: ChannelOrder,
    /// `Normalize` after `ToTensor`, if any.
    pub normalize: Option<Normalize>,
    /// v2's `ToDtype(scale=True)`: × float32(1 / 255) in place of / 255.
    pub reciprocal_scale: bool,
}

impl OutputPlan {
    /// The output of `transform` with the random parameters `params` for an image resized to
    /// `resized` (width, height).
    pub fn new(resized: (usize, usize), transform: &Transform, params: &Params) -> Self {
        let padding = super::padding::paddings(transform, resized);
        let (width, height) = super::padding::padded_size(&padding, resized);
        let (crop_w, crop_h) = transform.center_crop.unwrap_or((width, height));
        let crop = match (params.random_crop, transform.random_crop) {
            (Some(b), Some(_)) => Crop {
                width: b.width,
                height: b.height,
                x: b.left as isize,
                y: b.top as isize,
            },
            _ => Crop {
                width: crop_w,
                height: crop_h,
                x: crop_offset(width, crop_w),
                y: crop_offset(height, crop_h),
            },
        };
        let (crop_w, crop_h) = (crop.width, crop.height);
        let shape = match transform.layout {
            Layout::Hwc => [crop_h, crop_w, 3],
            Layout::Chw => [3, crop_h, crop_w],
        };
        // The steps this sample drew where a RandomOrder or RandomChoice draws them (drawn and
        // given parameters have them then: `Params::of`).
        debug_assert_eq!(params.steps.is_some(), transform.order.is_random());
        let methods = params
            .steps
            .clone()
            .unwrap_or_else(|| transform.ordered_steps());
        let mut steps: Vec<Step> = methods
            .into_iter()
            .flat_map(|method| step_of(method, transform, params, (crop_w, crop_h)))
            .collect();
        // Stage 4 walks a fixed-point map when it comes first; any other map is a step.
        let rotation = match steps.first() {
            Some(Step::Remap(map)) if map.is_fixed_point() => Some(*map),
            _ => None,
        };
        if rotation.is_some() {
            steps.remove(0);
        }
        Self {
            padding,
            crop,
            horizontal_flip: params.horizontal_flip == Some(true),
            vertical_flip: params.vertical_flip == Some(true),
            rotation,
            steps,
            erase: match (&params.erase, &transform.random_erasing) {
                (Some(boxes), Some(erasing)) => boxes
                    .iter()
                    .map(|b| super::Erased::new(b, erasing))
                    .collect(),
                _ => Vec::new(),
            },
            shape,
            layout: transform.layout,
            dtype: transform.dtype,
            channel_order: transform.channel_order,
            normalize: transform.normalize,
            reciprocal_scale: transform.reciprocal_scale,
        }
    }

    /// Whether the transform has steps after the rotation at all (then every image of a GPU
    /// batch goes through the adjustment stage, whatever its own parameters drew).
    pub fn has_steps(transform: &Transform) -> bool {
        // A nearest-neighbour rotation is stage 4's fixed-point walk, but about a given point
        // a half turn may be Pillow's scaling walk ([`super::Rotation::is_scaling`]), a step.
        let rotation_as_step = transform
            .random_rotation
            .is_some_and(|r| r.interpolation != Filter::Nearest || r.center.is_some());
        // Its maps without rotation or shear are Pillow's scaling walk, in stage 5.
        rotation_as_step
            || transform.random_affine.is_some()
            || transform.color_jitter.is_some()
            || transform.grayscale.is_some()
            || transform.trivial_augment.is_some()
            || transform.rand_augment.is_some()
            || transform.auto_augment.is_some()
            || transform.timm_rand_augment.is_some()
            || transform.timm_auto_augment.is_some()
            || transform.timm_aug_mix.is_some()
            || transform.random_perspective.is_some()
            || !transform.color_ops.is_empty()
            || transform.gaussian_blur.is_some()
    }

    /// Elements of the tensor.
    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes of the tensor.
    pub fn bytes(&self) -> usize {
        self.elements() * element_bytes(self.dtype)
    }

    /// Input (RGB) channel of output channel `c`.
    pub fn source_channel(&self, c: usize) -> usize {
        match self.channel_order {
            ChannelOrder::Rgb => c,
            ChannelOrder::Bgr => 2 - c,
        }
    }

    /// The value table: for each RGB channel and 8-bit sample, the output value as float32,
    /// computed in torchvision's order (v / 255 — or v2's v × float32(1 / 255) —, − mean,
    /// / std), so that every backend gets the same bits and no GPU does float arithmetic.
    pub fn value_table(&self) -> [[f32; 256]; 3] {
        std::array::from_fn(|c| {
            std::array::from_fn(|v| {
                let t = if self.reciprocal_scale {
                    v as f32 * (1.0 / 255.0f64) as f32
                } else {
                    v as f32 / 255.0
                };
                match self.normalize {
                    Some(n) => (t - n.mean[c]) / n.std[c],
                    None => t,
                }
            })
        })
    }
}

/// One image's AugMix as steps: each chain's operations (`effect` of each), between the steps
/// that keep the image and mix or blend the chains into it.
fn mix_steps(
    mix: &super::AugMix,
    blended: bool,
    effect: impl Fn(&super::Augment) -> Option<Step>,
) -> Vec<Step> {
    let chain = |c: &[super::Augment]| c.iter().filter_map(&effect).collect::<Vec<_>>();
    if !blended {
        let chains = mix
            .weights
            .iter()
            .zip(&mix.chains)
            .flat_map(|(&weight, c)| chain(c).into_iter().chain([Step::AddToMix(weight)]));
        return std::iter::once(Step::KeepForMix)
            .chain(chains)
            .chain([Step::BlendMix(mix.blend)])
            .collect();
    }
    let weights = super::timm_augment::blended_weights(&mix.weights, mix.blend);
    let last = weights.len().saturating_sub(1);
    let chains = weights.into_iter().zip(&mix.chains).enumerate();
    std::iter::once(Step::KeepForBlends)
        .chain(chains.flat_map(|(k, (weight, c))| {
            let blend = if k == last {
                Step::BlendLastChain(weight)
            } else {
                Step::BlendChain(weight)
            };
            chain(c).into_iter().chain([blend])
        }))
        .collect()
}

/// The steps of the transform's operation of Python method `method` for this sample, in order
/// (none where its draw did not apply), for an image of `size` after the crop.
fn step_of(
    method: &str,
    transform: &Transform,
    params: &Params,
    size: (usize, usize),
) -> Vec<Step> {
    let (fill, filter) = augment_map_options(transform);
    let effect = |a: &super::Augment| match a.effect(size, fill, filter) {
        Effect::None => None,
        Effect::Map(map) => Some(Step::Remap(map)),
        Effect::Adjust(adjustment) => Some(Step::Adjust(adjustment)),
    };
    let applied = |method| params.color_ops.as_ref().and_then(|c| c.get(method)) == Some(&true);
    match method {
        "random_rotation" => params
            .rotation
            .zip(transform.random_rotation)
            .and_then(|(angle, r)| {
                super::Rotation::new(angle, size, r.center, r.fill, r.interpolation)
            })
            .map(Step::Remap)
            .into_iter()
            .collect(),
        "random_affine" => params
            .affine
            .zip(transform.random_affine)
            .and_then(|(a, r)| super::Rotation::affine(&r, &a, size))
            .map(Step::Remap)
            .into_iter()
            .collect(),
        "timm_aug_mix" => params
            .aug_mix
            .iter()
            .flat_map(|mix| {
                let blended = transform.timm_aug_mix.is_some_and(|m| m.blended);
                mix_steps(mix, blended, effect)
            })
            .collect(),
        "trivial_augment_wide"
        | "rand_augment"
        | "auto_augment"
        | "timm_rand_augment"
        | "timm_auto_augment" => params.augment.iter().flatten().filter_map(effect).collect(),
        "random_perspective" => match (params.perspective, transform.random_perspective) {
            (Some(Some(c)), Some(p)) => {
                vec![Step::Remap(super::Rotation::perspective(
                    c,
                    p.fill,
                    p.interpolation,
                ))]
            }
            _ => Vec::new(),
        },
        "color_jitter" => params
            .color
            .iter()
            .flatten()
            .copied()
            .map(Step::Adjust)
            .collect(),
        "grayscale" => match params.grayscale {
            Some(true) => vec![Step::Adjust(Adjustment::Grayscale)],
            _ => Vec::new(),
        },
        "gaussian_blur" => params.blur.flatten().map(Step::Blur).into_iter().collect(),
        single => transform
            .color_ops
            .iter()
            .filter(|o| o.operation().method == single && applied(single))
            .map(|o| Step::Adjust(o.adjustment()))
            .collect(),
    }
}

/// Bytes of one element of `dtype`.
pub fn element_bytes(dtype: DType) -> usize {
    match dtype {
        DType::U8 => 1,
        DType::F16 => 2,
        DType::F32 => 4,
    }
}

/// Python's `round(d / 2.0)` for an integer `d ≥ 0`: halves go to the even neighbour.
pub fn half_round_even(d: usize) -> usize {
    let k = d / 2;
    if d % 2 == 1 && k % 2 == 1 {
        k + 1
    } else {
        k
    }
}

/// Where a `CenterCrop` of `crop` samples takes its first sample in an axis of `size` samples:
/// negative when the axis is zero-padded first (torchvision pads (crop − size) // 2 before).
pub fn crop_offset(size: usize, crop: usize) -> isize {
    if crop > size {
        -(((crop - size) / 2) as isize)
    } else {
        half_round_even(size - crop) as isize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crop_offsets_round_half_to_even() {
        assert_eq!(crop_offset(341, 224), 58); // 117 / 2 = 58.5 → 58
        assert_eq!(crop_offset(259, 224), 18); // 35 / 2 = 17.5 → 18
        assert_eq!(crop_offset(200, 224), -12);
        assert_eq!(crop_offset(201, 224), -11);
    }

    /// An augmentation's first map is the rotation stage 4 does; its other operations are the
    /// steps after it in the order drawn, before `ColorJitter`'s.
    #[test]
    fn a_policys_operations_become_the_rotation_and_the_steps_in_their_order() {
        use crate::plan::{Augment, AugmentOp};
        let transform = Transform {
            rand_augment: Some(crate::RandAugment {
                num_ops: 4,
                ..crate::RandAugment::default()
            }),
            grayscale: Some(0.5),
            ..Transform::default()
        };
        let op = Augment::new;
        let plan = |ops: Vec<Augment>| {
            let params = Params {
                augment: Some(ops),
                grayscale: Some(true),
                ..Params::default()
            };
            OutputPlan::new((40, 30), &transform, &params)
        };
        let shear = op(AugmentOp::ShearX, 0.3);
        let invert = op(AugmentOp::Invert, 0.0);
        let first = plan(vec![shear, invert, shear, op(AugmentOp::Identity, 0.0)]);
        let Effect::Map(map) = shear.effect((40, 30), [0; 3], Filter::Nearest) else {
            panic!("a shear maps");
        };
        assert_eq!(first.rotation, Some(map));
        let invert = Step::Adjust(Adjustment::Solarize(0));
        let grey = Step::Adjust(Adjustment::Grayscale);
        assert_eq!(first.steps, [invert, Step::Remap(map), grey]);
        let later = plan(vec![op(AugmentOp::Invert, 0.0), shear]);
        assert_eq!(later.rotation, None);
        assert_eq!(later.steps, [invert, Step::Remap(map), grey]);
    }

    /// A filtered map is never stage 4's rotation: it is the first step, and the transform has
    /// steps, so that every image of a GPU batch goes through the stage that runs it.
    #[test]
    fn a_filtered_first_map_is_the_first_step() {
        for filter in [Filter::Bilinear, Filter::Bicubic] {
            let rotating = Transform {
                random_rotation: Some(crate::RandomRotation {
                    interpolation: filter,
                    ..crate::RandomRotation::new(30.0)
                }),
                ..Transform::default()
            };
            let params = Params {
                rotation: Some(12.5),
                ..Params::default()
            };
            let plan = OutputPlan::new((40, 30), &rotating, &params);
            assert_eq!(plan.rotation, None);
            assert!(matches!(plan.steps[..], [Step::Remap(m)] if m.filter == filter));
            assert!(OutputPlan::has_steps(&rotating));
            let policy = Transform {
                trivial_augment: Some(crate::TrivialAugment {
                    interpolation: filter,
                    ..crate::TrivialAugment::default()
                }),
                ..Transform::default()
            };
            let params = Params {
                augment: Some(vec![crate::plan::Augment::new(
                    crate::plan::AugmentOp::ShearY,
                    -0.2,
                )]),
                ..Params::default()
            };
            let plan = OutputPlan::new((40, 30), &policy, &params);
            assert_eq!(plan.rotation, None);
            assert!(matches!(plan.steps[..], [Step::Remap(m)] if m.filter == filter));
        }
        let nearest = Transform {
            random_rotation: Some(crate::RandomRotation::new(30.0)),
            ..Transform::default()
        };
        assert!(!OutputPlan::has_steps(&nearest));
    }

    /// v2's ToDtype(scale=True) multiplies by float32(1/255): 3 × that is not 3 / 255 in float32.
    #[test]
    fn the_reciprocal_scale_is_v2s() {
        let v2 = Transform {
            reciprocal_scale: true,
            ..Transform::tensor(crate::Normalize::IMAGENET)
        };
        let divided = OutputPlan::new((8, 8), &Transform::imagenet_eval(), &Params::default());
        let multiplied = OutputPlan::new((8, 8), &v2, &Params::default());
        let third = 3.0f32 * (1.0f64 / 255.0) as f32;
        assert_ne!(third, 3.0f32 / 255.0);
        let expected = (third - 0.485f32) / 0.229f32;
        assert_eq!(multiplied.value_table()[0][3].to_bits(), expected.to_bits());
        // Normalised, some of the 126 values that differ still differ.
        let differ = (0..256)
            .filter(|&v| multiplied.value_table()[0][v] != divided.value_table()[0][v])
            .count();
        assert!(differ > 0, "{differ}");
    }

    #[test]
    fn imagenet_table_matches_torchvision_order() {
        let plan = OutputPlan::new((224, 224), &Transform::imagenet_eval(), &Params::default());
        let expected = ((255.0f32 / 255.0) - 0.485f32) / 0.229f32;
        assert_eq!(plan.value_table()[0][255].to_bits(), expected.to_bits());
    }
}
