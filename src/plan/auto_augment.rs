//! torchvision's autoaugment.py on a PIL image: `TrivialAugmentWide` (one operation a sample,
//! drawn from its wide augmentation space with a magnitude from that operation's bins and, for a
//! signed one, a random sign), `RandAugment` (`num_ops` operations a sample from the standard
//! space, each at the one magnitude bin) and `AutoAugment` (one of a policy's sub-policies, each
//! of its two operations applied with its probability), each operation applied as `_apply_op`
//! does. Each is one that both backends already compute exactly, or an integer one: the
//! geometric ones become the nearest-neighbour map of [`super::Rotation`] (Pillow's
//! `affine_fixed`), the others an [`Adjustment`] ahead of `ColorJitter`'s; a sample's operations
//! become the steps of its output plan, in the order they were drawn.

use super::random::Stream;
use super::{Adjustment, Rotation};
use crate::transform::{AutoAugment, AutoAugmentPolicy, Filter, RandAugment, TrivialAugment};

/// `TrivialAugmentWide`'s operations, in the order of its augmentation space (the order its
/// `torch.randint` indexes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AugmentOp {
    /// The image as it is.
    Identity,
    /// `F.affine` with a horizontal shear of `atan(m)`, about the top-left corner.
    ShearX,
    /// `F.affine` with a vertical shear of `atan(m)`, about the top-left corner.
    ShearY,
    /// `F.affine` moving the image `int(m)` pixels right.
    TranslateX,
    /// `F.affine` moving the image `int(m)` pixels down.
    TranslateY,
    /// `F.rotate` by `m` degrees.
    Rotate,
    /// `ImageEnhance.Brightness` by `1 + m`.
    Brightness,
    /// `ImageEnhance.Color` by `1 + m`.
    Color,
    /// `ImageEnhance.Contrast` by `1 + m`.
    Contrast,
    /// `ImageEnhance.Sharpness` by `1 + m`.
    Sharpness,
    /// `ImageOps.posterize` to `m` bits.
    Posterize,
    /// `ImageOps.solarize` from the threshold `m`.
    Solarize,
    /// `ImageOps.autocontrast`.
    AutoContrast,
    /// `ImageOps.equalize`.
    Equalize,
    /// `ImageOps.invert` (`AutoAugment`'s space only).
    Invert,
    /// timm's `shear_x`: `img.transform(AFFINE, (1, m, 0, 0, 1, 0))`, about the top-left corner.
    TimmShearX,
    /// timm's `shear_y`: `img.transform(AFFINE, (1, 0, 0, m, 1, 0))`.
    TimmShearY,
    /// timm's `translate_x_rel`: `img.transform(AFFINE, (1, 0, m, 0, 1, 0))`, `m` in pixels
    /// (its share of the width, times the width).
    TimmTranslateX,
    /// timm's `translate_y_rel`: `img.transform(AFFINE, (1, 0, 0, 0, 1, m))`.
    TimmTranslateY,
    /// `ImageEnhance.Brightness` by the factor `m` (timm gives the factor itself).
    TimmBrightness,
    /// `ImageEnhance.Color` by the factor `m`.
    TimmColor,
    /// `ImageEnhance.Contrast` by the factor `m`.
    TimmContrast,
    /// `ImageEnhance.Sharpness` by the factor `m`.
    TimmSharpness,
    /// timm's `solarize_add`: `m` added to the values below 128, clipped at 255.
    SolarizeAdd,
    /// timm's `gaussian_blur_rand`: `img.filter(ImageFilter.GaussianBlur(m))`, `m` the radius
    /// it drew (Pillow's box blurs, not torchvision's `GaussianBlur`).
    TimmGaussianBlur,
}

/// timm's operations of its own (the others it shares with torchvision's spaces: Rotate,
/// Posterize, Solarize, AutoContrast, Equalize, Invert compute alike).
pub const TIMM_OPS: [AugmentOp; 10] = [
    AugmentOp::TimmShearX,
    AugmentOp::TimmShearY,
    AugmentOp::TimmTranslateX,
    AugmentOp::TimmTranslateY,
    AugmentOp::TimmBrightness,
    AugmentOp::TimmColor,
    AugmentOp::TimmContrast,
    AugmentOp::TimmSharpness,
    AugmentOp::SolarizeAdd,
    AugmentOp::TimmGaussianBlur,
];

/// `TrivialAugmentWide`'s and `RandAugment`'s augmentation space's operations, in order.
pub const OPS: [AugmentOp; 14] = [
    AugmentOp::Identity,
    AugmentOp::ShearX,
    AugmentOp::ShearY,
    AugmentOp::TranslateX,
    AugmentOp::TranslateY,
    AugmentOp::Rotate,
    AugmentOp::Brightness,
    AugmentOp::Color,
    AugmentOp::Contrast,
    AugmentOp::Sharpness,
    AugmentOp::Posterize,
    AugmentOp::Solarize,
    AugmentOp::AutoContrast,
    AugmentOp::Equalize,
];

impl AugmentOp {
    /// torchvision's name of the operation.
    pub fn name(self) -> &'static str {
        match self {
            Self::Identity => "Identity",
            Self::ShearX => "ShearX",
            Self::ShearY => "ShearY",
            Self::TranslateX => "TranslateX",
            Self::TranslateY => "TranslateY",
            Self::Rotate => "Rotate",
            Self::Brightness => "Brightness",
            Self::Color => "Color",
            Self::Contrast => "Contrast",
            Self::Sharpness => "Sharpness",
            Self::Posterize => "Posterize",
            Self::Solarize => "Solarize",
            Self::AutoContrast => "AutoContrast",
            Self::Equalize => "Equalize",
            Self::Invert => "Invert",
            Self::TimmShearX => "TimmShearX",
            Self::TimmShearY => "TimmShearY",
            Self::TimmTranslateX => "TimmTranslateX",
            Self::TimmTranslateY => "TimmTranslateY",
            Self::TimmBrightness => "TimmBrightness",
            Self::TimmColor => "TimmColor",
            Self::TimmContrast => "TimmContrast",
            Self::TimmSharpness => "TimmSharpness",
            Self::SolarizeAdd => "SolarizeAdd",
            Self::TimmGaussianBlur => "TimmGaussianBlur",
        }
    }

    /// The operation torchvision (or, prefixed "Timm", timm) names `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        OPS.into_iter()
            .chain([Self::Invert])
            .chain(TIMM_OPS)
            .find(|op| op.name() == name)
    }

    /// Whether the operation is one of timm's own.
    fn is_timms(self) -> bool {
        TIMM_OPS.contains(&self)
    }

    /// `magnitudes[bin]` of `TrivialAugmentWide`'s augmentation space with `bins` bins, as the
    /// float32 value torch holds; `None` for the operations without magnitudes (a 0-d tensor
    /// there).
    pub fn magnitude(self, bin: u32, bins: u32) -> Option<f32> {
        let up_to = |end: f32| linspace(0.0, end, bin, bins);
        match self {
            Self::Identity | Self::AutoContrast | Self::Equalize | Self::Invert => None,
            Self::TimmShearX
            | Self::TimmShearY
            | Self::TimmTranslateX
            | Self::TimmTranslateY
            | Self::TimmBrightness
            | Self::TimmColor
            | Self::TimmContrast
            | Self::TimmSharpness
            | Self::SolarizeAdd
            | Self::TimmGaussianBlur => None,
            Self::ShearX
            | Self::ShearY
            | Self::Brightness
            | Self::Color
            | Self::Contrast
            | Self::Sharpness => Some(up_to(0.99)),
            Self::TranslateX | Self::TranslateY => Some(up_to(32.0)),
            Self::Rotate => Some(up_to(135.0)),
            // `8 - (torch.arange(bins) / ((bins - 1) / 6)).round().int()`, in float32.
            Self::Posterize => {
                let step = ((f64::from(bins) - 1.0) / 6.0) as f32;
                Some(8.0 - (bin as f32 / step).round_ties_even())
            }
            Self::Solarize => Some(linspace(255.0, 0.0, bin, bins)),
        }
    }

    /// `magnitudes[bin]` of the standard augmentation space `RandAugment` and `AutoAugment`
    /// share, with `bins` bins, for an image of `(width, height)`: the translations reach
    /// `150 / 331` of its side (a Python double, which torch holds as a float32).
    pub fn standard_magnitude(
        self,
        bin: u32,
        bins: u32,
        (width, height): (usize, usize),
    ) -> Option<f32> {
        let up_to = |end: f32| linspace(0.0, end, bin, bins);
        let side = |side: usize| (150.0 / 331.0 * side as f64) as f32;
        match self {
            Self::Identity | Self::AutoContrast | Self::Equalize | Self::Invert => None,
            Self::TimmShearX
            | Self::TimmShearY
            | Self::TimmTranslateX
            | Self::TimmTranslateY
            | Self::TimmBrightness
            | Self::TimmColor
            | Self::TimmContrast
            | Self::TimmSharpness
            | Self::SolarizeAdd
            | Self::TimmGaussianBlur => None,
            Self::ShearX | Self::ShearY => Some(up_to(0.3)),
            Self::Brightness | Self::Color | Self::Contrast | Self::Sharpness => Some(up_to(0.9)),
            Self::TranslateX => Some(up_to(side(width))),
            Self::TranslateY => Some(up_to(side(height))),
            Self::Rotate => Some(up_to(30.0)),
            // `8 - (torch.arange(bins) / ((bins - 1) / 4)).round().int()`, in float32.
            Self::Posterize => {
                let step = ((f64::from(bins) - 1.0) / 4.0) as f32;
                Some(8.0 - (bin as f32 / step).round_ties_even())
            }
            Self::Solarize => Some(linspace(255.0, 0.0, bin, bins)),
        }
    }

    /// Whether `magnitude` lies in the range torchvision's bins (or timm's levels, up to its
    /// magnitude 30) span for this operation (any number of bins, either space; a translation
    /// by at most the largest side a map takes): a given draw outside it is refused, so that no
    /// map leaves Pillow's fixed-point range.
    pub fn allows(self, magnitude: f64) -> bool {
        let m = magnitude.abs();
        let integer = magnitude.fract() == 0.0;
        match self {
            Self::Identity | Self::AutoContrast | Self::Equalize | Self::Invert => magnitude == 0.0,
            Self::TranslateX | Self::TranslateY | Self::TimmTranslateX | Self::TimmTranslateY => {
                m <= super::rotate::MAX_ROTATED_SIDE as f64
            }
            Self::Rotate => m <= 135.0,
            Self::Posterize => (0.0..=8.0).contains(&magnitude) && integer,
            Self::Solarize => (0.0..=256.0).contains(&magnitude),
            Self::SolarizeAdd => (0.0..=255.0).contains(&magnitude) && integer,
            Self::TimmShearX | Self::TimmShearY => m <= 0.9,
            Self::TimmBrightness | Self::TimmColor | Self::TimmContrast | Self::TimmSharpness => {
                (0.0..=10.0).contains(&magnitude)
            }
            // timm draws up to 2 (`random.uniform(0.1, 2.0 * level)`): a box of radius 1.
            Self::TimmGaussianBlur => (0.0..=2.0).contains(&magnitude),
            _ => m <= 0.99f32 as f64,
        }
    }

    /// Whether a random sign applies to the magnitude.
    pub fn signed(self) -> bool {
        !matches!(
            self,
            Self::Identity
                | Self::Posterize
                | Self::Solarize
                | Self::AutoContrast
                | Self::Equalize
                | Self::Invert
        ) && !self.is_timms()
    }
}

/// `torch.linspace(start, end, bins)[bin]` as torch's vectorised CPU kernel (AVX2, AVX-512)
/// computes it in float32: the first half counted up from `start`, the second down from `end`,
/// each in one fused multiply-add. (torch's scalar kernel, on a CPU without those, rounds the
/// product first: a bin here and there one float32 step away.)
pub(super) fn linspace(start: f32, end: f32, bin: u32, bins: u32) -> f32 {
    if bins < 2 {
        return start;
    }
    let step = (end - start) / (bins - 1) as f32;
    if bin < bins / 2 {
        step.mul_add(bin as f32, start)
    } else {
        (-step).mul_add((bins - 1 - bin) as f32, end)
    }
}

/// One operation a sample's augmentation policy drew: the operation and its signed magnitude (the
/// Python float `_apply_op` is given, or timm's operation's argument; 0 for the operations
/// without one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Augment {
    /// The operation.
    pub op: AugmentOp,
    /// Its magnitude.
    pub magnitude: f64,
    /// Its own sampling, for a geometric operation of timm's (which draws one per operation);
    /// `None`: the policy's.
    pub filter: Option<Filter>,
}

/// What an operation does to the image, for the output plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    /// Nothing (Identity, a zero shear or translation, or a rotation by a multiple of 360°).
    None,
    /// An affine map.
    Map(Rotation),
    /// A colour operation.
    Adjust(Adjustment),
}

impl Augment {
    /// `TrivialAugmentWide.forward`'s draws: the operation, then (for one with magnitudes) the
    /// bin, then (for a signed one) whether it is negated, each uniform.
    pub(crate) fn draw_trivial(t: &TrivialAugment, s: &mut Stream) -> Self {
        let op = OPS[s.below(OPS.len() as u64) as usize];
        let bin = s.below(u64::from(t.bins)) as u32;
        Self::signed(op, op.magnitude(bin, t.bins), s).in_space(t.v2, bin, t.bins)
    }

    /// `RandAugment.forward`'s draws on an image of `size`: `num_ops` times the operation and
    /// (for a signed one) whether its magnitude is negated, each uniform.
    pub(crate) fn draw_rand(r: &RandAugment, size: (usize, usize), s: &mut Stream) -> Vec<Self> {
        (0..r.num_ops)
            .map(|_| {
                let op = OPS[s.below(OPS.len() as u64) as usize];
                Self::signed(op, op.standard_magnitude(r.magnitude, r.bins, size), s).in_space(
                    r.v2,
                    r.magnitude,
                    r.bins,
                )
            })
            .collect()
    }

    /// `AutoAugment.forward`'s draws on an image of `size`: the sub-policy, then a uniform
    /// float32 per operation (it applies when that is at most its probability), then a sign
    /// per operation (negated on 0, as torchvision's `signs[i] == 0`); the operations that
    /// apply, in order.
    pub(crate) fn draw_auto(a: &AutoAugment, size: (usize, usize), s: &mut Stream) -> Vec<Self> {
        let policies = sub_policies(a.policy);
        let chosen = policies[s.below(policies.len() as u64) as usize];
        let probs = [0; 2].map(|_| s.uniform_f32(0.0, 1.0));
        let negated = [0; 2].map(|_| s.below(2) == 0);
        chosen
            .iter()
            .zip(probs.into_iter().zip(negated))
            .filter(|((_, p, _), (prob, _))| prob <= p)
            .map(|(&(op, _, bin), (_, negated))| {
                let m = bin.and_then(|b| op.standard_magnitude(b, AUTO_AUGMENT_BINS, size));
                let magnitude = f64::from(m.unwrap_or(0.0));
                let signed = if op.signed() && negated {
                    -magnitude
                } else {
                    magnitude
                };
                let drawn = Self::new(op, signed);
                bin.map_or(drawn, |b| drawn.in_space(a.v2, b, AUTO_AUGMENT_BINS))
            })
            .collect()
    }

    /// `op` at `magnitude` (0 without one), negated on a uniform draw for a signed operation.
    fn signed(op: AugmentOp, magnitude: Option<f32>, s: &mut Stream) -> Self {
        let Some(magnitude) = magnitude else {
            return Self::new(op, 0.0);
        };
        let mut magnitude = f64::from(magnitude);
        if op.signed() && s.below(2) == 1 {
            magnitude = -magnitude;
        }
        Self::new(op, magnitude)
    }

    /// The draw as its policy applies it: for transforms.v2's (`v2`), Solarize at v2's
    /// threshold for `bin` of `bins`, `255.0 * linspace(1.0, 0.0)[bin]` (`bound * magnitude`,
    /// the float32 bin widened to a double), where v1's bins hold `linspace(255.0, 0.0)`.
    fn in_space(self, v2: bool, bin: u32, bins: u32) -> Self {
        if !(v2 && self.op == AugmentOp::Solarize) {
            return self;
        }
        Self {
            magnitude: 255.0 * f64::from(linspace(1.0, 0.0, bin, bins)),
            ..self
        }
    }

    /// `op` at `magnitude`, sampling as its policy does.
    pub fn new(op: AugmentOp, magnitude: f64) -> Self {
        Self {
            op,
            magnitude,
            filter: None,
        }
    }

    /// What `_apply_op(img, op, magnitude, filter, fill)` does to an image of `size`.
    pub(crate) fn effect(&self, size: (usize, usize), fill: [u8; 3], filter: Filter) -> Effect {
        let m = self.magnitude;
        let filter = self.filter.unwrap_or(filter);
        // ImageEnhance's factors: `1.0 + magnitude`, handed to C as a float.
        let factor = (1.0 + m) as f32;
        let (w, h) = (size.0 as f64, size.1 as f64);
        let map = |matrix: Option<[f64; 6]>| {
            matrix.map_or(Effect::None, |m| {
                Effect::Map(Rotation::from_matrix(m, fill, filter))
            })
        };
        match self.op {
            AugmentOp::Identity => Effect::None,
            // F.affine(shear=[degrees(atan(m)), 0], center=[0, 0]).
            AugmentOp::ShearX => map(affine_matrix((0.0, 0.0), (0.0, 0.0), (shear(m), 0.0))),
            AugmentOp::ShearY => map(affine_matrix((0.0, 0.0), (0.0, 0.0), (0.0, shear(m)))),
            // F.affine(translate=[int(m), 0]) about the image's centre.
            AugmentOp::TranslateX => map(affine_matrix(
                (w * 0.5, h * 0.5),
                (m.trunc(), 0.0),
                (0.0, 0.0),
            )),
            AugmentOp::TranslateY => map(affine_matrix(
                (w * 0.5, h * 0.5),
                (0.0, m.trunc()),
                (0.0, 0.0),
            )),
            AugmentOp::Rotate => {
                Rotation::new(m, size, None, fill, filter).map_or(Effect::None, Effect::Map)
            }
            AugmentOp::Brightness => Effect::Adjust(Adjustment::Brightness(factor)),
            AugmentOp::Color => Effect::Adjust(Adjustment::Saturation(factor)),
            AugmentOp::Contrast => Effect::Adjust(Adjustment::Contrast(factor)),
            AugmentOp::Sharpness => Effect::Adjust(Adjustment::Sharpness(factor)),
            AugmentOp::Posterize => Effect::Adjust(Adjustment::Posterize(m.clamp(0.0, 8.0) as u8)),
            AugmentOp::Solarize => Effect::Adjust(Adjustment::solarize(m)),
            AugmentOp::AutoContrast => Effect::Adjust(Adjustment::AutoContrast),
            AugmentOp::Equalize => Effect::Adjust(Adjustment::Equalize),
            // `ImageOps.invert`: every value inverted, as solarize from 0 does.
            AugmentOp::Invert => Effect::Adjust(Adjustment::Solarize(0)),
            // timm's: Pillow's transform of the matrix itself (the identity is a copy), and
            // ImageEnhance of the factor itself, handed to C as a float.
            AugmentOp::TimmShearX => map(not_identity([1.0, m, 0.0, 0.0, 1.0, 0.0])),
            AugmentOp::TimmShearY => map(not_identity([1.0, 0.0, 0.0, m, 1.0, 0.0])),
            AugmentOp::TimmTranslateX => map(not_identity([1.0, 0.0, m, 0.0, 1.0, 0.0])),
            AugmentOp::TimmTranslateY => map(not_identity([1.0, 0.0, 0.0, 0.0, 1.0, m])),
            AugmentOp::TimmBrightness => Effect::Adjust(Adjustment::Brightness(m as f32)),
            AugmentOp::TimmColor => Effect::Adjust(Adjustment::Saturation(m as f32)),
            AugmentOp::TimmContrast => Effect::Adjust(Adjustment::Contrast(m as f32)),
            AugmentOp::TimmSharpness => Effect::Adjust(Adjustment::Sharpness(m as f32)),
            AugmentOp::SolarizeAdd => {
                Effect::Adjust(Adjustment::SolarizeAdd(m.clamp(0.0, 255.0) as u8))
            }
            // Python's `GaussianBlur.filter` copies the image of radius 0.
            AugmentOp::TimmGaussianBlur if m == 0.0 => Effect::None,
            AugmentOp::TimmGaussianBlur => Effect::Adjust(Adjustment::PillowGaussianBlur(m as f32)),
        }
    }
}

/// The magnitude bins of `AutoAugment`'s space (`_augmentation_space(10, ...)`).
const AUTO_AUGMENT_BINS: u32 = 10;

/// A policy's 25 sub-policies: two operations each, with the probability it applies (the
/// float32 torch compares its draw with) and its magnitude's bin (`None`: none).
type SubPolicies = [[(AugmentOp, f32, Option<u32>); 2]; 25];

/// `AutoAugment._get_policies(policy)`.
fn sub_policies(policy: AutoAugmentPolicy) -> &'static SubPolicies {
    match policy {
        AutoAugmentPolicy::ImageNet => &IMAGENET,
        AutoAugmentPolicy::Cifar10 => &CIFAR10,
        AutoAugmentPolicy::Svhn => &SVHN,
    }
}

use AugmentOp::{
    AutoContrast, Brightness, Color, Contrast, Equalize, Invert, Posterize, Rotate, Sharpness,
    ShearX, ShearY, Solarize, TranslateX, TranslateY,
};

const IMAGENET: SubPolicies = [
    [(Posterize, 0.4, Some(8)), (Rotate, 0.6, Some(9))],
    [(Solarize, 0.6, Some(5)), (AutoContrast, 0.6, None)],
    [(Equalize, 0.8, None), (Equalize, 0.6, None)],
    [(Posterize, 0.6, Some(7)), (Posterize, 0.6, Some(6))],
    [(Equalize, 0.4, None), (Solarize, 0.2, Some(4))],
    [(Equalize, 0.4, None), (Rotate, 0.8, Some(8))],
    [(Solarize, 0.6, Some(3)), (Equalize, 0.6, None)],
    [(Posterize, 0.8, Some(5)), (Equalize, 1.0, None)],
    [(Rotate, 0.2, Some(3)), (Solarize, 0.6, Some(8))],
    [(Equalize, 0.6, None), (Posterize, 0.4, Some(6))],
    [(Rotate, 0.8, Some(8)), (Color, 0.4, Some(0))],
    [(Rotate, 0.4, Some(9)), (Equalize, 0.6, None)],
    [(Equalize, 0.0, None), (Equalize, 0.8, None)],
    [(Invert, 0.6, None), (Equalize, 1.0, None)],
    [(Color, 0.6, Some(4)), (Contrast, 1.0, Some(8))],
    [(Rotate, 0.8, Some(8)), (Color, 1.0, Some(2))],
    [(Color, 0.8, Some(8)), (Solarize, 0.8, Some(7))],
    [(Sharpness, 0.4, Some(7)), (Invert, 0.6, None)],
    [(ShearX, 0.6, Some(5)), (Equalize, 1.0, None)],
    [(Color, 0.4, Some(0)), (Equalize, 0.6, None)],
    [(Equalize, 0.4, None), (Solarize, 0.2, Some(4))],
    [(Solarize, 0.6, Some(5)), (AutoContrast, 0.6, None)],
    [(Invert, 0.6, None), (Equalize, 1.0, None)],
    [(Color, 0.6, Some(4)), (Contrast, 1.0, Some(8))],
    [(Equalize, 0.8, None), (Equalize, 0.6, None)],
];

const CIFAR10: SubPolicies = [
    [(Invert, 0.1, None), (Contrast, 0.2, Some(6))],
    [(Rotate, 0.7, Some(2)), (TranslateX, 0.3, Some(9))],
    [(Sharpness, 0.8, Some(1)), (Sharpness, 0.9, Some(3))],
    [(ShearY, 0.5, Some(8)), (TranslateY, 0.7, Some(9))],
    [(AutoContrast, 0.5, None), (Equalize, 0.9, None)],
    [(ShearY, 0.2, Some(7)), (Posterize, 0.3, Some(7))],
    [(Color, 0.4, Some(3)), (Brightness, 0.6, Some(7))],
    [(Sharpness, 0.3, Some(9)), (Brightness, 0.7, Some(9))],
    [(Equalize, 0.6, None), (Equalize, 0.5, None)],
    [(Contrast, 0.6, Some(7)), (Sharpness, 0.6, Some(5))],
    [(Color, 0.7, Some(7)), (TranslateX, 0.5, Some(8))],
    [(Equalize, 0.3, None), (AutoContrast, 0.4, None)],
    [(TranslateY, 0.4, Some(3)), (Sharpness, 0.2, Some(6))],
    [(Brightness, 0.9, Some(6)), (Color, 0.2, Some(8))],
    [(Solarize, 0.5, Some(2)), (Invert, 0.0, None)],
    [(Equalize, 0.2, None), (AutoContrast, 0.6, None)],
    [(Equalize, 0.2, None), (Equalize, 0.6, None)],
    [(Color, 0.9, Some(9)), (Equalize, 0.6, None)],
    [(AutoContrast, 0.8, None), (Solarize, 0.2, Some(8))],
    [(Brightness, 0.1, Some(3)), (Color, 0.7, Some(0))],
    [(Solarize, 0.4, Some(5)), (AutoContrast, 0.9, None)],
    [(TranslateY, 0.9, Some(9)), (TranslateY, 0.7, Some(9))],
    [(AutoContrast, 0.9, None), (Solarize, 0.8, Some(3))],
    [(Equalize, 0.8, None), (Invert, 0.1, None)],
    [(TranslateY, 0.7, Some(9)), (AutoContrast, 0.9, None)],
];

const SVHN: SubPolicies = [
    [(ShearX, 0.9, Some(4)), (Invert, 0.2, None)],
    [(ShearY, 0.9, Some(8)), (Invert, 0.7, None)],
    [(Equalize, 0.6, None), (Solarize, 0.6, Some(6))],
    [(Invert, 0.9, None), (Equalize, 0.6, None)],
    [(Equalize, 0.6, None), (Rotate, 0.9, Some(3))],
    [(ShearX, 0.9, Some(4)), (AutoContrast, 0.8, None)],
    [(ShearY, 0.9, Some(8)), (Invert, 0.4, None)],
    [(ShearY, 0.9, Some(5)), (Solarize, 0.2, Some(6))],
    [(Invert, 0.9, None), (AutoContrast, 0.8, None)],
    [(Equalize, 0.6, None), (Rotate, 0.9, Some(3))],
    [(ShearX, 0.9, Some(4)), (Solarize, 0.3, Some(3))],
    [(ShearY, 0.8, Some(8)), (Invert, 0.7, None)],
    [(Equalize, 0.9, None), (TranslateY, 0.6, Some(6))],
    [(Invert, 0.9, None), (Equalize, 0.6, None)],
    [(Contrast, 0.3, Some(3)), (Rotate, 0.8, Some(4))],
    [(Invert, 0.8, None), (TranslateY, 0.0, Some(2))],
    [(ShearY, 0.7, Some(6)), (Solarize, 0.4, Some(8))],
    [(Invert, 0.6, None), (Rotate, 0.8, Some(4))],
    [(ShearY, 0.3, Some(7)), (TranslateX, 0.9, Some(3))],
    [(ShearX, 0.1, Some(6)), (Invert, 0.6, None)],
    [(Solarize, 0.7, Some(2)), (TranslateY, 0.6, Some(7))],
    [(ShearY, 0.8, Some(4)), (Invert, 0.8, None)],
    [(ShearX, 0.7, Some(9)), (TranslateY, 0.8, Some(3))],
    [(ShearY, 0.8, Some(5)), (AutoContrast, 0.7, None)],
    [(ShearX, 0.7, Some(2)), (Invert, 0.1, None)],
];

/// `math.degrees(math.atan(magnitude))`.
fn shear(m: f64) -> f64 {
    m.atan().to_degrees()
}

/// torchvision's inverse affine matrix with no rotation and scale 1, `None` for the identity.
fn affine_matrix(center: (f64, f64), translate: (f64, f64), shear: (f64, f64)) -> Option<[f64; 6]> {
    not_identity(super::rotate::inverse_affine_matrix(
        center, 0.0, translate, 1.0, shear,
    ))
}

/// `m`, `None` for the identity (which Pillow's transform copies).
fn not_identity(m: [f64; 6]) -> Option<[f64; 6]> {
    (m != [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::random::{Op, SampleKey};

    #[test]
    fn the_bins_are_torchvisions() {
        // torch.linspace(0.0, 0.99, 31)[[0, 1, 30]] and the posterize bits of 31 bins.
        assert_eq!(AugmentOp::ShearX.magnitude(0, 31), Some(0.0));
        assert_eq!(AugmentOp::ShearX.magnitude(30, 31), Some(0.99));
        assert_eq!(AugmentOp::Rotate.magnitude(30, 31), Some(135.0));
        assert_eq!(AugmentOp::Solarize.magnitude(0, 31), Some(255.0));
        assert_eq!(AugmentOp::Solarize.magnitude(30, 31), Some(0.0));
        let bits: Vec<f32> = (0..31)
            .map(|b| AugmentOp::Posterize.magnitude(b, 31).unwrap())
            .collect();
        assert_eq!(bits[0], 8.0);
        assert_eq!(bits[2], 8.0); // 0.4 rounds down
        assert_eq!(bits[3], 7.0); // 0.6 rounds up
        assert_eq!(bits[30], 2.0);
        assert_eq!(AugmentOp::Equalize.magnitude(3, 31), None);
    }

    #[test]
    fn names_round_trip() {
        for op in OPS {
            assert_eq!(AugmentOp::from_name(op.name()), Some(op));
        }
        assert_eq!(AugmentOp::from_name("Invert"), Some(AugmentOp::Invert));
        assert_eq!(AugmentOp::from_name("Cutout"), None);
    }

    /// transforms.v2's Solarize thresholds: `255.0 * float(torch.linspace(1.0, 0.0,
    /// bins)[bin])` as torch 2.15 gives them (the v2 spaces of torchvision 0.29.2), where v1's
    /// bins are `linspace(255.0, 0.0)`'s float32 values; the first inverted value moves with it.
    #[test]
    fn v2_solarize_thresholds_are_torchvisions() {
        let threshold = |bin, bins| {
            Augment::new(AugmentOp::Solarize, 0.0)
                .in_space(true, bin, bins)
                .magnitude
        };
        assert_eq!(threshold(20, 31), 85.0000025331974);
        assert_eq!(threshold(10, 31), 169.9999898672104);
        assert_eq!(threshold(1, 31), 246.49999290704727);
        assert_eq!(threshold(3, 10), 170.0000050663948);
        assert_eq!(threshold(7, 10), 56.666667088866234);
        assert_eq!(AugmentOp::Solarize.magnitude(20, 31), Some(85.0));
        assert_eq!(Adjustment::solarize(85.0), Adjustment::Solarize(85));
        assert_eq!(
            Adjustment::solarize(threshold(20, 31)),
            Adjustment::Solarize(86)
        );
        let v1 = Augment::new(AugmentOp::Solarize, 85.0);
        assert_eq!(v1.in_space(false, 20, 31), v1);
        let rotate = Augment::new(AugmentOp::Rotate, 9.0);
        assert_eq!(rotate.in_space(true, 9, 31), rotate);
    }

    /// torch 2.15's `torch.linspace(0.0, 0.9, 31)[20]`, `linspace(0.0, 0.99, 31)[19]` and
    /// `linspace(255.0, 0.0, 100)[22]` on an AVX-512 CPU: the fused multiply-add's values, not the
    /// twice-rounded ones.
    #[test]
    fn linspace_is_torchs_vectorised_kernel() {
        assert_eq!(linspace(0.0, 0.9, 20, 31), 0.599_999_96);
        assert_eq!(
            linspace(0.0, 0.99, 19, 31).to_bits(),
            0.627f32.to_bits() + 1
        );
        assert_eq!(linspace(255.0, 0.0, 22, 100), 198.333_33);
    }

    #[test]
    fn the_standard_bins_are_torchvisions() {
        let size = (224, 160);
        let m = |op: AugmentOp, bin, bins| op.standard_magnitude(bin, bins, size);
        // torch.linspace(0.0, 0.3, 31)[9], linspace(0.0, 30.0, 10)[9], and the translations'
        // ends: 150 / 331 of the width and of the height.
        assert_eq!(m(AugmentOp::ShearX, 9, 31), Some(0.3f32 / 30.0 * 9.0));
        assert_eq!(m(AugmentOp::Rotate, 9, 10), Some(30.0));
        assert_eq!(
            m(AugmentOp::TranslateX, 30, 31),
            Some((150.0 / 331.0 * 224.0) as f32)
        );
        assert_eq!(
            m(AugmentOp::TranslateY, 9, 10),
            Some((150.0 / 331.0 * 160.0) as f32)
        );
        assert_eq!(m(AugmentOp::Brightness, 30, 31), Some(0.9));
        // `8 - (arange(bins) / ((bins - 1) / 4)).round()`: 9 / 7.5 rounds to 1, 8 / 2.25 to 4.
        assert_eq!(m(AugmentOp::Posterize, 9, 31), Some(7.0));
        assert_eq!(m(AugmentOp::Posterize, 8, 10), Some(4.0));
        assert_eq!(m(AugmentOp::Posterize, 30, 31), Some(4.0));
        assert_eq!(m(AugmentOp::Solarize, 9, 10), Some(0.0));
        assert_eq!(m(AugmentOp::Invert, 3, 10), None);
    }

    fn key(index: u64) -> SampleKey {
        SampleKey {
            seed: 3,
            epoch: 1,
            index,
        }
    }

    #[test]
    fn rand_augment_draws_its_number_of_operations_at_its_magnitude() {
        let r = RandAugment {
            num_ops: 3,
            magnitude: 30,
            ..RandAugment::default()
        };
        let mut seen = std::collections::HashSet::new();
        for index in 0..500 {
            let ops =
                Augment::draw_rand(&r, (64, 48), &mut Stream::new(key(index), Op::RandAugment));
            assert_eq!(ops.len(), 3);
            for a in ops {
                let top =
                    a.op.standard_magnitude(30, 31, (64, 48))
                        .map_or(0.0, f64::from);
                assert_eq!(a.magnitude.abs(), top, "{a:?}");
                seen.insert((a.op, a.magnitude < 0.0));
            }
        }
        assert_eq!(seen.len(), 9 * 2 + 5);
    }

    #[test]
    fn auto_augment_applies_a_sub_policys_operations_by_their_probabilities() {
        for policy in AutoAugmentPolicy::ALL {
            let (mut none, mut both, mut inverted) = (0, 0, 0);
            for index in 0..2000 {
                let s = &mut Stream::new(key(index), Op::AutoAugment);
                let auto = AutoAugment {
                    policy,
                    ..AutoAugment::default()
                };
                let ops = Augment::draw_auto(&auto, (32, 32), s);
                let in_policy = |a: &Augment| {
                    sub_policies(policy)
                        .iter()
                        .flatten()
                        .any(|&(op, _, _)| op == a.op)
                };
                assert!(ops.iter().all(in_policy), "{ops:?}");
                assert!(ops.iter().all(|a| a.op.allows(a.magnitude)), "{ops:?}");
                none += usize::from(ops.is_empty());
                both += usize::from(ops.len() == 2);
                inverted += ops.iter().filter(|a| a.op == AugmentOp::Invert).count();
            }
            assert!(none > 100 && both > 300, "{policy:?}: {none} {both}");
            // SVHN's policy inverts in 14 of its 50 operations.
            if policy == AutoAugmentPolicy::Svhn {
                assert!(inverted > 300, "{inverted}");
            }
        }
    }

    /// A probability of 0 (torchvision's `probs[i] <= 0.0`) applies only on a draw of exactly 0,
    /// and one of 1 always.
    #[test]
    fn the_policies_are_torchvisions() {
        for policy in AutoAugmentPolicy::ALL {
            let subs = sub_policies(policy);
            for &(op, p, bin) in subs.iter().flatten() {
                assert!((0.0..=1.0).contains(&p));
                assert_eq!(
                    bin.is_some(),
                    op.standard_magnitude(0, 10, (8, 8)).is_some(),
                    "{op:?}"
                );
                assert!(bin.is_none_or(|b| b < AUTO_AUGMENT_BINS));
            }
        }
        assert_eq!(
            IMAGENET[0],
            [(Posterize, 0.4, Some(8)), (Rotate, 0.6, Some(9))]
        );
        assert_eq!(CIFAR10[14][1], (Invert, 0.0, None));
        assert_eq!(SVHN[24], [(ShearX, 0.7, Some(2)), (Invert, 0.1, None)]);
    }

    #[test]
    fn draws_cover_every_operation_and_sign() {
        let mut seen = std::collections::HashSet::new();
        for index in 0..2000 {
            let key = SampleKey {
                seed: 1,
                epoch: 0,
                index,
            };
            let t = TrivialAugment::default();
            let a = Augment::draw_trivial(&t, &mut Stream::new(key, Op::TrivialAugment));
            if !a.op.signed() {
                assert!(a.magnitude >= 0.0);
            }
            seen.insert((a.op, a.magnitude < 0.0));
        }
        // Nine signed operations both ways (a zero bin counts as positive), five unsigned.
        assert_eq!(seen.len(), 9 * 2 + 5);
    }

    #[test]
    fn a_translation_is_an_integer_shift() {
        let shift = Augment::new(AugmentOp::TranslateX, -7.9);
        let Effect::Map(map) = shift.effect((33, 20), [1, 2, 3], Filter::Nearest) else {
            panic!("a translation maps");
        };
        // Output column x shows column x + 7 (int(-7.9) = -7, inverted).
        assert_eq!(map.x_map, [1 << 16, 0, (7 << 16) + (1 << 15)]);
        assert_eq!(map.y_map, [0, 1 << 16, 1 << 15]);
    }

    #[test]
    fn every_bin_is_allowed_and_nothing_far_outside() {
        for bins in [2, 7, 31, 1024] {
            for op in OPS {
                for bin in 0..bins {
                    let m = op.magnitude(bin, bins).map_or(0.0, f64::from);
                    assert!(
                        op.allows(m) && (!op.signed() || op.allows(-m)),
                        "{op:?} {m}"
                    );
                }
            }
        }
        assert!(!AugmentOp::TranslateX.allows(1e9));
        assert!(!AugmentOp::ShearY.allows(f64::NAN));
        assert!(!AugmentOp::Posterize.allows(9.0));
    }
}
