//! torchvision's `TrivialAugmentWide` on a PIL image: one operation drawn per sample from its
//! augmentation space, with a magnitude from that operation's bins and, for a signed one, a random
//! sign (`TrivialAugmentWide.forward`), applied as `_apply_op` does. Each operation is one that
//! both backends already compute exactly, or an integer one: the geometric ones become the
//! nearest-neighbour map of [`super::Rotation`] (Pillow's `affine_fixed`), the others an
//! [`Adjustment`] ahead of `ColorJitter`'s.

use super::random::Stream;
use super::{Adjustment, Rotation};

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
}

/// The augmentation space's operations, in order.
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
        }
    }

    /// The operation torchvision names `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        OPS.into_iter().find(|op| op.name() == name)
    }

    /// `magnitudes[bin]` of the augmentation space with `bins` bins, as the float32 value torch
    /// holds; `None` for the operations without magnitudes (a 0-d tensor there).
    pub fn magnitude(self, bin: u32, bins: u32) -> Option<f32> {
        let up_to = |end: f32| linspace(0.0, end, bin, bins);
        match self {
            Self::Identity | Self::AutoContrast | Self::Equalize => None,
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

    /// Whether `magnitude` lies in the range torchvision's bins span for this operation (any
    /// number of bins): a given draw outside it is refused, so that no map leaves Pillow's
    /// fixed-point range.
    pub fn allows(self, magnitude: f64) -> bool {
        let m = magnitude.abs();
        match self {
            Self::Identity | Self::AutoContrast | Self::Equalize => magnitude == 0.0,
            Self::TranslateX | Self::TranslateY => m <= 32.0,
            Self::Rotate => m <= 135.0,
            Self::Posterize => (2.0..=8.0).contains(&magnitude) && magnitude.fract() == 0.0,
            Self::Solarize => (0.0..=255.0).contains(&magnitude),
            _ => m <= 0.99f32 as f64,
        }
    }

    /// Whether a random sign applies to the magnitude.
    pub fn signed(self) -> bool {
        !matches!(
            self,
            Self::Identity | Self::Posterize | Self::Solarize | Self::AutoContrast | Self::Equalize
        )
    }
}

/// `torch.linspace(start, end, bins)[bin]` as torch's scalar CPU kernel computes it in float32:
/// the first half counted up from `start`, the second down from `end`.
fn linspace(start: f32, end: f32, bin: u32, bins: u32) -> f32 {
    if bins < 2 {
        return start;
    }
    let step = (end - start) / (bins - 1) as f32;
    if bin < bins / 2 {
        start + step * bin as f32
    } else {
        end - step * (bins - 1 - bin) as f32
    }
}

/// One sample's `TrivialAugmentWide` draw: the operation and its signed magnitude (the Python
/// float `_apply_op` is given; 0 for the operations without one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Augment {
    /// The operation.
    pub op: AugmentOp,
    /// Its magnitude.
    pub magnitude: f64,
}

/// What an operation does to the image, for the output plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    /// Nothing (Identity, a zero shear or translation, or a rotation by a multiple of 360°).
    None,
    /// A nearest-neighbour affine map.
    Map(Rotation),
    /// A colour operation, run before `ColorJitter`'s.
    Adjust(Adjustment),
}

impl Augment {
    /// `TrivialAugmentWide.forward`'s draws: the operation, then (for one with magnitudes) the
    /// bin, then (for a signed one) whether it is negated, each uniform.
    pub(crate) fn draw(bins: u32, s: &mut Stream) -> Self {
        let op = OPS[s.below(OPS.len() as u64) as usize];
        let Some(magnitude) = op.magnitude(s.below(u64::from(bins)) as u32, bins) else {
            return Self { op, magnitude: 0.0 };
        };
        let mut magnitude = f64::from(magnitude);
        if op.signed() && s.below(2) == 1 {
            magnitude = -magnitude;
        }
        Self { op, magnitude }
    }

    /// What `_apply_op(img, op, magnitude, NEAREST, fill)` does to an image of `size`.
    pub(crate) fn effect(&self, size: (usize, usize), fill: [u8; 3]) -> Effect {
        let m = self.magnitude;
        // ImageEnhance's factors: `1.0 + magnitude`, handed to C as a float.
        let factor = (1.0 + m) as f32;
        let (w, h) = (size.0 as f64, size.1 as f64);
        let map = |matrix: Option<[f64; 6]>| {
            matrix.map_or(Effect::None, |m| {
                Effect::Map(Rotation::from_matrix(m, fill))
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
            AugmentOp::Rotate => Rotation::new(m, size, fill).map_or(Effect::None, Effect::Map),
            AugmentOp::Brightness => Effect::Adjust(Adjustment::Brightness(factor)),
            AugmentOp::Color => Effect::Adjust(Adjustment::Saturation(factor)),
            AugmentOp::Contrast => Effect::Adjust(Adjustment::Contrast(factor)),
            AugmentOp::Sharpness => Effect::Adjust(Adjustment::Sharpness(factor)),
            AugmentOp::Posterize => Effect::Adjust(Adjustment::Posterize(m.clamp(0.0, 8.0) as u8)),
            AugmentOp::Solarize => Effect::Adjust(Adjustment::solarize(m)),
            AugmentOp::AutoContrast => Effect::Adjust(Adjustment::AutoContrast),
            AugmentOp::Equalize => Effect::Adjust(Adjustment::Equalize),
        }
    }
}

/// `math.degrees(math.atan(magnitude))`.
fn shear(m: f64) -> f64 {
    m.atan().to_degrees()
}

/// torchvision's `_get_inverse_affine_matrix(center, 0, translate, 1.0, shear)` for a PIL image,
/// in Python's order of operations; `None` for the identity, which leaves every pixel where it
/// is.
fn affine_matrix(
    (cx, cy): (f64, f64),
    (tx, ty): (f64, f64),
    shear: (f64, f64),
) -> Option<[f64; 6]> {
    let rot = 0.0f64.to_radians();
    let (sx, sy) = (shear.0.to_radians(), shear.1.to_radians());
    let a = (rot - sy).cos() / sy.cos();
    let b = -(rot - sy).cos() * sx.tan() / sy.cos() - rot.sin();
    let c = (rot - sy).sin() / sy.cos();
    let d = -(rot - sy).sin() * sx.tan() / sy.cos() + rot.cos();
    // [d, -b, 0, -c, a, 0] / scale, with scale 1.0.
    let mut m = [d / 1.0, -b / 1.0, 0.0, -c / 1.0, a / 1.0, 0.0];
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
    m[2] += cx;
    m[5] += cy;
    let identity = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
    (m != identity).then_some(m)
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
        assert_eq!(AugmentOp::from_name("Invert"), None);
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
            let a = Augment::draw(31, &mut Stream::new(key, Op::TrivialAugment));
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
        let shift = Augment {
            op: AugmentOp::TranslateX,
            magnitude: -7.9,
        };
        let Effect::Map(map) = shift.effect((33, 20), [1, 2, 3]) else {
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
