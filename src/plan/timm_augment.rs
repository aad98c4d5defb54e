//! timm's `RandAugment` (timm/data/auto_augment.py, `rand-...` strings) on a PIL image: its
//! fifteen operations (or the "increasing" set's), `num_ops` of them drawn with replacement, each
//! applied with its probability at a magnitude drawn about the policy's (Gaussian noise of
//! `magnitude_std`, or uniform from 0 for an infinite one), clipped to 0..=`magnitude_max`, and
//! turned into the operation's argument by timm's level rules (in Python's double arithmetic,
//! with a random sign where timm draws one). A geometric operation samples with the policy's
//! filter or one drawn of bilinear and bicubic. The draws become [`Augment`]s that the output
//! plan applies as torchvision's are; timm's operations of its own are the `Timm…` ones of
//! [`AugmentOp`].

use super::random::Stream;
use super::{Augment, AugmentOp};
use crate::transform::{Filter, TimmRandAugment};

/// timm's operations, in the order of its `_RAND_TRANSFORMS` (the increasing set's names its
/// `…Increasing` variants in the same places).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimmOp {
    AutoContrast,
    Equalize,
    Invert,
    Rotate,
    Posterize,
    Solarize,
    SolarizeAdd,
    Color,
    Contrast,
    Brightness,
    Sharpness,
    ShearX,
    ShearY,
    TranslateXRel,
    TranslateYRel,
}

const OPS: [TimmOp; 15] = [
    TimmOp::AutoContrast,
    TimmOp::Equalize,
    TimmOp::Invert,
    TimmOp::Rotate,
    TimmOp::Posterize,
    TimmOp::Solarize,
    TimmOp::SolarizeAdd,
    TimmOp::Color,
    TimmOp::Contrast,
    TimmOp::Brightness,
    TimmOp::Sharpness,
    TimmOp::ShearX,
    TimmOp::ShearY,
    TimmOp::TranslateXRel,
    TimmOp::TranslateYRel,
];

/// timm's `_LEVEL_DENOM`: magnitudes run 0 to 10.
const LEVEL_DENOM: f64 = 10.0;

/// `RandAugment.__call__`'s draws for an image of `size`: the `num_ops` operations (uniform,
/// with replacement), then for each in turn whether it applies, its magnitude, its sign and its
/// filter; the operations that apply, in order.
pub(crate) fn draw(r: &TimmRandAugment, size: (usize, usize), s: &mut Stream) -> Vec<Augment> {
    let chosen: Vec<TimmOp> = (0..r.num_ops)
        .map(|_| OPS[s.below(OPS.len() as u64) as usize])
        .collect();
    chosen
        .into_iter()
        .filter_map(|op| draw_op(r, op, size, s))
        .collect()
}

/// `AugmentOp.__call__`: skipped when a uniform draw exceeds the probability, else its
/// magnitude (noisy, clipped) through the operation's level rule.
fn draw_op(
    r: &TimmRandAugment,
    op: TimmOp,
    size: (usize, usize),
    s: &mut Stream,
) -> Option<Augment> {
    if r.prob < 1.0 && s.uniform() > r.prob {
        return None;
    }
    let mut magnitude = r.magnitude;
    if r.magnitude_std == f64::INFINITY {
        magnitude *= s.uniform(); // random.uniform(0, magnitude)
    } else if r.magnitude_std > 0.0 {
        magnitude = gauss(s, magnitude, r.magnitude_std);
    }
    let level = magnitude.min(r.upper_bound()).max(0.0) / LEVEL_DENOM;
    let (op, argument) = level_to_arg(r, op, level, size, s);
    let geometric = matches!(
        op,
        AugmentOp::Rotate
            | AugmentOp::TimmShearX
            | AugmentOp::TimmShearY
            | AugmentOp::TimmTranslateX
            | AugmentOp::TimmTranslateY
    );
    let filter = geometric.then(|| {
        r.interpolation
            .unwrap_or_else(|| [Filter::Bilinear, Filter::Bicubic][s.below(2) as usize])
    });
    Some(Augment {
        filter,
        ..Augment::new(op, argument)
    })
}

/// The operation and its argument at `level` (the clipped magnitude over 10): timm's
/// `LEVEL_TO_ARG` rules, each in its order of double operations.
fn level_to_arg(
    r: &TimmRandAugment,
    op: TimmOp,
    level: f64,
    (width, height): (usize, usize),
    s: &mut Stream,
) -> (AugmentOp, f64) {
    // timm's `_randomly_negate`: negated when a uniform draw exceeds one half.
    let mut signed = |v: f64| if s.uniform() > 0.5 { -v } else { v };
    let truncated = |v: f64| v.trunc(); // Python's int() of a non-negative double
    match op {
        TimmOp::AutoContrast => (AugmentOp::AutoContrast, 0.0),
        TimmOp::Equalize => (AugmentOp::Equalize, 0.0),
        TimmOp::Invert => (AugmentOp::Invert, 0.0),
        TimmOp::Rotate => (AugmentOp::Rotate, signed(level * 30.0)),
        TimmOp::Posterize => {
            let bits = truncated(level * 4.0);
            // ImageOps.posterize keeps every bit from 8 on (timm returns the image), and none
            // at 0 or below (its mask clears them all).
            let bits = if r.increasing { 4.0 - bits } else { bits };
            (AugmentOp::Posterize, bits.clamp(0.0, 8.0))
        }
        TimmOp::Solarize => {
            let threshold = truncated(level * 256.0).min(256.0);
            let threshold = if r.increasing {
                256.0 - threshold
            } else {
                threshold
            };
            (AugmentOp::Solarize, threshold)
        }
        TimmOp::SolarizeAdd => (AugmentOp::SolarizeAdd, truncated(level * 110.0).min(128.0)),
        TimmOp::Color | TimmOp::Contrast | TimmOp::Brightness | TimmOp::Sharpness => {
            let factor = if r.increasing {
                (1.0 + signed(level * 0.9)).max(0.1)
            } else {
                level * 1.8 + 0.1
            };
            let enhance = match op {
                TimmOp::Color => AugmentOp::TimmColor,
                TimmOp::Contrast => AugmentOp::TimmContrast,
                TimmOp::Brightness => AugmentOp::TimmBrightness,
                _ => AugmentOp::TimmSharpness,
            };
            (enhance, factor)
        }
        TimmOp::ShearX => (AugmentOp::TimmShearX, signed(level * 0.3)),
        TimmOp::ShearY => (AugmentOp::TimmShearY, signed(level * 0.3)),
        TimmOp::TranslateXRel => (
            AugmentOp::TimmTranslateX,
            signed(level * r.translate_pct) * width as f64,
        ),
        TimmOp::TranslateYRel => (
            AugmentOp::TimmTranslateY,
            signed(level * r.translate_pct) * height as f64,
        ),
    }
}

/// A normal draw of mean `mu` and deviation `sigma` (Box–Muller over two uniform doubles, the
/// form of Python's `random.gauss`).
fn gauss(s: &mut Stream, mu: f64, sigma: f64) -> f64 {
    let angle = s.uniform() * std::f64::consts::TAU;
    let radius = (-2.0 * (1.0 - s.uniform()).ln()).sqrt();
    mu + angle.cos() * radius * sigma
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::random::{Op, SampleKey};

    fn draws(r: &TimmRandAugment, samples: u64) -> Vec<Vec<Augment>> {
        (0..samples)
            .map(|index| {
                let key = SampleKey {
                    seed: 9,
                    epoch: 2,
                    index,
                };
                draw(r, (224, 160), &mut Stream::new(key, Op::TimmRandAugment))
            })
            .collect()
    }

    #[test]
    fn timms_level_rules_at_full_magnitude() {
        // m10, no noise, every operation applied: each argument at the end of its range.
        let r = TimmRandAugment {
            prob: 1.0,
            num_ops: 4,
            ..TimmRandAugment::default()
        };
        let mut seen = std::collections::HashSet::new();
        for a in draws(&r, 400).into_iter().flatten() {
            let m = a.magnitude;
            let expected = match a.op {
                AugmentOp::Rotate => 30.0,
                AugmentOp::Posterize => 4.0,
                AugmentOp::Solarize => 256.0,
                AugmentOp::SolarizeAdd => 110.0,
                AugmentOp::TimmColor
                | AugmentOp::TimmContrast
                | AugmentOp::TimmBrightness
                | AugmentOp::TimmSharpness => 1.0 * 1.8 + 0.1,
                AugmentOp::TimmShearX | AugmentOp::TimmShearY => 0.3,
                AugmentOp::TimmTranslateX => 0.45 * 224.0,
                AugmentOp::TimmTranslateY => 0.45 * 160.0,
                _ => 0.0,
            };
            assert_eq!(m.abs(), expected, "{a:?}");
            assert!(a.op.allows(m), "{a:?}");
            let geometric = matches!(
                a.op,
                AugmentOp::Rotate
                    | AugmentOp::TimmShearX
                    | AugmentOp::TimmShearY
                    | AugmentOp::TimmTranslateX
                    | AugmentOp::TimmTranslateY
            );
            assert_eq!(a.filter.is_some(), geometric, "{a:?}");
            seen.insert(a.op);
        }
        assert_eq!(seen.len(), 15);
    }

    #[test]
    fn timms_strings_parse_as_timm_reads_them() {
        let r = TimmRandAugment::parse("rand-m9-mstd0.5-inc1").unwrap();
        assert_eq!(
            (r.magnitude, r.magnitude_std, r.increasing),
            (9.0, 0.5, true)
        );
        assert_eq!((r.num_ops, r.prob, r.magnitude_max), (2, 0.5, None));
        let r = TimmRandAugment::parse("rand-n3-m15-mmax15-mstd101-p0.7-inc0").unwrap();
        assert_eq!((r.num_ops, r.magnitude, r.upper_bound()), (3, 15.0, 15.0));
        assert_eq!(
            (r.magnitude_std, r.prob, r.increasing),
            (f64::INFINITY, 0.7, false)
        );
        // The first mstd and mmax count, as timm's hparams.setdefault keeps them.
        let r = TimmRandAugment::parse("rand-mstd0.5-mstd1-mmax15-mmax20").unwrap();
        assert_eq!((r.magnitude_std, r.magnitude_max), (0.5, Some(15.0)));
        // A section without a number is skipped, as timm skips it.
        assert_eq!(TimmRandAugment::parse("rand-x-m7").unwrap().magnitude, 7.0);
        for (bad, why) in [
            ("augmix-m5", "starts with `rand-`"),
            ("rand-m9-tweights", "operation set"),
            ("rand-m9.5", "integer"),
            ("rand-q3", "unknown"),
            ("rand-p0.x", "not a number"),
        ] {
            let e = TimmRandAugment::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn the_increasing_set_grows_with_the_magnitude() {
        let r = TimmRandAugment {
            prob: 1.0,
            magnitude: 9.0,
            increasing: true,
            ..TimmRandAugment::default()
        };
        for a in draws(&r, 300).into_iter().flatten() {
            match a.op {
                // 4 - int(3.6) and 256 - int(230.4).
                AugmentOp::Posterize => assert_eq!(a.magnitude, 1.0),
                AugmentOp::Solarize => assert_eq!(a.magnitude, 26.0),
                AugmentOp::TimmColor | AugmentOp::TimmSharpness => {
                    let f = a.magnitude;
                    assert!(f == 1.0 + 0.9 * 0.9 || f == 1.0 - 0.9 * 0.9, "{f}");
                }
                _ => {}
            }
        }
    }

    #[test]
    fn noise_probability_and_filters_are_drawn() {
        let r = TimmRandAugment {
            magnitude: 9.0,
            magnitude_std: 0.5,
            ..TimmRandAugment::default()
        };
        let all = draws(&r, 2000);
        let applied: usize = all.iter().map(Vec::len).sum();
        // Two operations a sample, each with probability 0.5.
        assert!((1800..2200).contains(&applied), "{applied}");
        let rotations: Vec<f64> = all
            .iter()
            .flatten()
            .filter(|a| a.op == AugmentOp::Rotate)
            .map(|a| a.magnitude.abs() / 3.0)
            .collect();
        let mean = rotations.iter().sum::<f64>() / rotations.len() as f64;
        // Gauss(9, 0.5) clipped at 10: a mean a little under 9, a spread about 0.5.
        assert!((8.85..9.05).contains(&mean), "{mean}");
        assert!(rotations.iter().any(|&m| m > 9.6) && rotations.iter().any(|&m| m < 8.4));
        let filters: std::collections::HashSet<_> =
            all.iter().flatten().filter_map(|a| a.filter).collect();
        assert_eq!(filters.len(), 2);
        let uniform = TimmRandAugment {
            magnitude_std: f64::INFINITY,
            prob: 1.0,
            ..r
        };
        let shears: Vec<f64> = draws(&uniform, 3000)
            .into_iter()
            .flatten()
            .filter(|a| a.op == AugmentOp::TimmShearX)
            .map(|a| a.magnitude.abs() / 0.03)
            .collect();
        assert!(shears.iter().all(|&m| m < 9.0));
        assert!(shears.iter().any(|&m| m < 1.0) && shears.iter().any(|&m| m > 8.0));
    }
}
