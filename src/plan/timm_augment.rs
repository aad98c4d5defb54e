//! timm's `RandAugment` (timm/data/auto_augment.py, `rand-...` strings) on a PIL image: its
//! fifteen operations (or the "increasing" set's), `num_ops` of them drawn with replacement, each
//! applied with its probability at a magnitude drawn about the policy's (Gaussian noise of
//! `magnitude_std`, or uniform from 0 for an infinite one), clipped to 0..=`magnitude_max`, and
//! turned into the operation's argument by timm's level rules (in Python's double arithmetic,
//! with a random sign where timm draws one). A geometric operation samples with the policy's
//! filter or one drawn of bilinear and bicubic. The draws become [`Augment`]s that the output
//! plan applies as torchvision's are; timm's operations of its own are the `Timm…` ones of
//! [`AugmentOp`]. timm's `AutoAugment` (`original`, `v0`... strings) draws one of its policy's
//! sub-policies and each of its operations as `RandAugment` draws one (the policies are timm's
//! tables, below). timm's `AugMix` (`augmix-...` strings) draws its mixing weights and blend
//! factor, then chains of its thirteen operations ([`AugMix`]).

use super::random::Stream;
use super::{Augment, AugmentOp};
use crate::transform::{
    Filter, TimmAugMix, TimmAutoAugment, TimmAutoAugmentPolicy, TimmRandAugment,
};

/// timm's operations, each with its level rule (timm's `LEVEL_TO_ARG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimmOp {
    AutoContrast,
    Equalize,
    Invert,
    Rotate,
    /// `Posterize` (0 to 4 bits kept as the level grows), `PosterizeIncreasing` (4 to 0) and
    /// `PosterizeOriginal` (4 to 8).
    Posterize(Bits),
    /// `Solarize` (the threshold rises with the level), `SolarizeIncreasing` (it falls).
    Solarize {
        increasing: bool,
    },
    SolarizeAdd,
    /// `Color`, `Contrast`, `Brightness`, `Sharpness` (factors 0.1 to 1.9 as the level grows)
    /// and their `…Increasing` forms (1 ± 0.9 × level, at least 0.1): as which enhancement.
    Enhance {
        op: AugmentOp,
        increasing: bool,
    },
    ShearX,
    ShearY,
    TranslateXRel,
    TranslateYRel,
    /// `Desaturate` (`3a`): `Color` by 1 − (0.5 to 1 as the level grows): grey at 10.
    Desaturate,
    /// `GaussianBlurRand` (`3a`): Pillow's Gaussian blur of a radius drawn in 0.1 to 2 × level.
    GaussianBlurRand,
}

/// How a posterize level becomes the bits kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bits {
    Decreasing,
    Increasing,
    Original,
}

const fn enhance(op: AugmentOp, increasing: bool) -> TimmOp {
    TimmOp::Enhance { op, increasing }
}

/// timm's `_RAND_TRANSFORMS` (`increasing`: `_RAND_INCREASING_TRANSFORMS`), in its order.
const fn rand_ops(increasing: bool) -> [TimmOp; 15] {
    [
        TimmOp::AutoContrast,
        TimmOp::Equalize,
        TimmOp::Invert,
        TimmOp::Rotate,
        TimmOp::Posterize(if increasing {
            Bits::Increasing
        } else {
            Bits::Decreasing
        }),
        TimmOp::Solarize { increasing },
        TimmOp::SolarizeAdd,
        enhance(AugmentOp::TimmColor, increasing),
        enhance(AugmentOp::TimmContrast, increasing),
        enhance(AugmentOp::TimmBrightness, increasing),
        enhance(AugmentOp::TimmSharpness, increasing),
        TimmOp::ShearX,
        TimmOp::ShearY,
        TimmOp::TranslateXRel,
        TimmOp::TranslateYRel,
    ]
}

/// timm's `_LEVEL_DENOM`: magnitudes run 0 to 10.
const LEVEL_DENOM: f64 = 10.0;

/// What one of timm's `AugmentOp`s holds besides its operation.
struct Settings {
    /// Its probability of applying.
    prob: f64,
    /// Its magnitude, 0 to 10 (or to `upper_bound`).
    magnitude: f64,
    /// The magnitude's noise (infinite: uniform from 0).
    magnitude_std: f64,
    /// The most a drawn magnitude may be.
    upper_bound: f64,
    /// The largest relative translation.
    translate_pct: f64,
    /// The geometric operations' filter; `None` draws bilinear or bicubic.
    interpolation: Option<Filter>,
}

/// `RandAugment.__call__`'s draws for an image of `size`: the `num_ops` operations (uniform,
/// with replacement), then for each in turn whether it applies, its magnitude, its sign and its
/// filter; the operations that apply, in order.
pub(crate) fn draw(r: &TimmRandAugment, size: (usize, usize), s: &mut Stream) -> Vec<Augment> {
    let ops = rand_ops(r.increasing);
    let chosen: Vec<TimmOp> = (0..r.num_ops)
        .map(|_| ops[s.below(ops.len() as u64) as usize])
        .collect();
    let settings = Settings {
        prob: r.prob,
        magnitude: r.magnitude,
        magnitude_std: r.magnitude_std,
        upper_bound: r.upper_bound(),
        translate_pct: r.translate_pct,
        interpolation: r.interpolation,
    };
    chosen
        .into_iter()
        .filter_map(|op| draw_op(op, &settings, size, s))
        .collect()
}

/// timm `AutoAugment.__call__`'s draws for an image of `size`: the sub-policy (uniform), then
/// each of its operations in turn as `RandAugment`'s are drawn, at its own probability and
/// magnitude; the operations that apply, in order.
pub(crate) fn draw_auto(a: &TimmAutoAugment, size: (usize, usize), s: &mut Stream) -> Vec<Augment> {
    let policy = sub_policies(a.policy);
    let chosen = &policy[s.below(policy.len() as u64) as usize];
    chosen
        .iter()
        .filter_map(|&(op, prob, magnitude)| {
            let settings = Settings {
                prob,
                magnitude: f64::from(magnitude),
                magnitude_std: a.magnitude_std,
                upper_bound: LEVEL_DENOM,
                translate_pct: a.translate_pct,
                interpolation: a.interpolation,
            };
            draw_op(op, &settings, size, s)
        })
        .collect()
}

/// One image's draws of timm's `AugMix`: its chains, each run on the image, summed with their
/// weights in float32, clipped and truncated to uint8, then blended into the image.
#[derive(Clone, Debug, PartialEq)]
pub struct AugMix {
    /// Each chain's weight in the sum (numpy's float32 of the Dirichlet draw).
    pub weights: Vec<f32>,
    /// `Image.blend`'s factor of the sum over the image (float32 of the Beta draw).
    pub blend: f32,
    /// Each chain's operations, in the order they run.
    pub chains: Vec<Vec<Augment>>,
}

/// `AugMixAugment._calc_blended_weights(weights, blend)`: each chain's factor of
/// `Image.blend(running, chain, factor)`, made from the last chain back, in float32 as numpy 2
/// computes it (its running product starts as a Python float, which a float32 keeps float32).
/// Once the later chains leave no blend (only with a tiny alpha), an earlier factor is 0/0 or
/// w/0: NaN or infinite, which the output plan refuses.
pub(crate) fn blended_weights(weights: &[f32], blend: f32) -> Vec<f32> {
    let mut left = 1.0f32;
    let mut factors: Vec<f32> = weights
        .iter()
        .rev()
        .map(|&w| {
            let factor = w * blend / left;
            left *= 1.0 - factor;
            factor
        })
        .collect();
    factors.reverse();
    factors
}

/// timm's `_AUGMIX_TRANSFORMS`, in its order.
const AUGMIX_OPS: [TimmOp; 13] = [
    TimmOp::AutoContrast,
    enhance(AugmentOp::TimmColor, true),
    enhance(AugmentOp::TimmContrast, true),
    enhance(AugmentOp::TimmBrightness, true),
    enhance(AugmentOp::TimmSharpness, true),
    TimmOp::Equalize,
    TimmOp::Rotate,
    TimmOp::Posterize(Bits::Increasing),
    TimmOp::Solarize { increasing: true },
    TimmOp::ShearX,
    TimmOp::ShearY,
    TimmOp::TranslateXRel,
    TimmOp::TranslateYRel,
];

/// `AugMixAugment.__call__`'s draws for an image of `size` (blended or not): the mixing weights
/// (a Dirichlet of `alpha`s, as float32), the blend factor (a Beta of `alpha`, `alpha`), then
/// each chain's depth (or the fixed one) and operations, each drawn as `RandAugment`'s with
/// probability 1.
pub(crate) fn draw_aug_mix(m: &TimmAugMix, size: (usize, usize), s: &mut Stream) -> AugMix {
    let gammas: Vec<f64> = (0..m.width).map(|_| gamma(s, m.alpha)).collect();
    let total: f64 = gammas.iter().sum();
    let weights = if total > 0.0 {
        gammas.iter().map(|g| (g / total) as f32).collect()
    } else {
        // Every draw underflowed (a tiny alpha): the Dirichlet's limit, one chain alone (numpy's
        // Dirichlet gives NaN weights there, which timm casts to uint8 undefined).
        let one = s.below(u64::from(m.width)) as usize;
        (0..m.width as usize)
            .map(|i| f32::from(u8::from(i == one)))
            .collect()
    };
    let (x, y) = (gamma(s, m.alpha), gamma(s, m.alpha));
    let blend = if x + y > 0.0 {
        (x / (x + y)) as f32
    } else {
        s.below(2) as f32
    };
    let settings = Settings {
        prob: 1.0,
        magnitude: m.magnitude,
        magnitude_std: m.magnitude_std,
        upper_bound: LEVEL_DENOM,
        translate_pct: m.translate_pct,
        interpolation: m.interpolation,
    };
    let chains = (0..m.width)
        .map(|_| {
            let depth = m.depth.unwrap_or_else(|| 1 + s.below(3) as u32);
            let ops: Vec<TimmOp> = (0..depth)
                .map(|_| AUGMIX_OPS[s.below(AUGMIX_OPS.len() as u64) as usize])
                .collect();
            ops.into_iter()
                .filter_map(|op| draw_op(op, &settings, size, s))
                .collect()
        })
        .collect();
    AugMix {
        weights,
        blend,
        chains,
    }
}

/// Whether `op` is one of timm's geometric operations, which draw their filter (or take the
/// transform's).
fn is_geometric(op: AugmentOp) -> bool {
    matches!(
        op,
        AugmentOp::Rotate
            | AugmentOp::TimmShearX
            | AugmentOp::TimmShearY
            | AugmentOp::TimmTranslateX
            | AugmentOp::TimmTranslateY
    )
}

/// Whether `a` is one of AugMix's operations as timm draws them: one of its thirteen, a
/// geometric one with the filter it drew and the others with none.
pub(crate) fn mixes(a: &Augment) -> bool {
    let geometric = is_geometric(a.op);
    let colour = matches!(
        a.op,
        AugmentOp::AutoContrast
            | AugmentOp::Equalize
            | AugmentOp::Posterize
            | AugmentOp::Solarize
            | AugmentOp::TimmColor
            | AugmentOp::TimmContrast
            | AugmentOp::TimmBrightness
            | AugmentOp::TimmSharpness
    );
    (geometric && a.filter.is_some()) || (colour && a.filter.is_none())
}

/// A Gamma draw of `shape` and scale 1: Marsaglia and Tsang's method, boosted from `shape + 1`
/// below 1.
fn gamma(s: &mut Stream, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = s.uniform();
        return gamma(s, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    // Each try is accepted with probability above 0.95: a thousand fail together never.
    for _ in 0..1000 {
        let x = gauss(s, 0.0, 1.0);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = s.uniform();
        let x2 = x * x;
        if u < 1.0 - 0.0331 * (x2 * x2) || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
    d
}

/// `AugmentOp.__call__`: skipped when a uniform draw exceeds the probability, else its
/// magnitude (noisy, clipped) through the operation's level rule.
fn draw_op(op: TimmOp, o: &Settings, size: (usize, usize), s: &mut Stream) -> Option<Augment> {
    if o.prob < 1.0 && s.uniform() > o.prob {
        return None;
    }
    let mut magnitude = o.magnitude;
    if o.magnitude_std == f64::INFINITY {
        magnitude *= s.uniform(); // random.uniform(0, magnitude)
    } else if o.magnitude_std > 0.0 {
        magnitude = gauss(s, magnitude, o.magnitude_std);
    }
    let level = magnitude.min(o.upper_bound).max(0.0) / LEVEL_DENOM;
    let (op, argument) = level_to_arg(op, level, o.translate_pct, size, s);
    let filter = is_geometric(op).then(|| {
        o.interpolation
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
    op: TimmOp,
    level: f64,
    translate_pct: f64,
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
        TimmOp::Posterize(rule) => {
            let bits = truncated(level * 4.0);
            let bits = match rule {
                Bits::Decreasing => bits,
                Bits::Increasing => 4.0 - bits,
                Bits::Original => bits + 4.0,
            };
            // ImageOps.posterize keeps every bit from 8 on (timm returns the image), and none
            // at 0 or below (its mask clears them all).
            (AugmentOp::Posterize, bits.clamp(0.0, 8.0))
        }
        TimmOp::Solarize { increasing } => {
            let threshold = truncated(level * 256.0).min(256.0);
            let threshold = if increasing {
                256.0 - threshold
            } else {
                threshold
            };
            (AugmentOp::Solarize, threshold)
        }
        TimmOp::SolarizeAdd => (AugmentOp::SolarizeAdd, truncated(level * 110.0).min(128.0)),
        TimmOp::Enhance { op, increasing } => {
            let factor = if increasing {
                (1.0 + signed(level * 0.9)).max(0.1)
            } else {
                level * 1.8 + 0.1
            };
            (op, factor)
        }
        TimmOp::ShearX => (AugmentOp::TimmShearX, signed(level * 0.3)),
        TimmOp::ShearY => (AugmentOp::TimmShearY, signed(level * 0.3)),
        TimmOp::TranslateXRel => (
            AugmentOp::TimmTranslateX,
            signed(level * translate_pct) * width as f64,
        ),
        TimmOp::TranslateYRel => (
            AugmentOp::TimmTranslateY,
            signed(level * translate_pct) * height as f64,
        ),
        // `_minmax_level_to_arg(level, min_val=0.5, max_val=1.0)`, then `desaturate`'s factor.
        TimmOp::Desaturate => {
            let arg = (0.5 + (1.0 - 0.5) * level).clamp(0.5, 1.0);
            (AugmentOp::TimmColor, (1.0 - arg).clamp(0.0, 1.0))
        }
        // `_minmax_level_to_arg(level)`, then `gaussian_blur_rand`'s
        // `random.uniform(0.1, 2.0 * level)`.
        TimmOp::GaussianBlurRand => {
            let top = 2.0 * level.clamp(0.0, 1.0);
            (AugmentOp::TimmGaussianBlur, 0.1 + (top - 0.1) * s.uniform())
        }
    }
}

/// One operation of a timm sub-policy: the operation, its probability, its magnitude.
type PolicyOp = (TimmOp, f64, u8);

/// The sub-policies of `policy`, as timm's `auto_augment_policy_…` lists them. The `…r`
/// policies are their base's with every posterize of the research form.
fn sub_policies(policy: TimmAutoAugmentPolicy) -> Vec<Vec<PolicyOp>> {
    let (base, research): (&[[PolicyOp; 2]], bool) = match policy {
        TimmAutoAugmentPolicy::Original => (&ORIGINAL, false),
        TimmAutoAugmentPolicy::OriginalR => (&ORIGINAL, true),
        TimmAutoAugmentPolicy::V0 => (&V0, false),
        TimmAutoAugmentPolicy::V0R => (&V0, true),
        TimmAutoAugmentPolicy::ThreeA => return THREE_A.iter().map(|&op| vec![op]).collect(),
    };
    let research_form = |(op, prob, magnitude): PolicyOp| match op {
        TimmOp::Posterize(_) if research => (TimmOp::Posterize(Bits::Increasing), prob, magnitude),
        _ => (op, prob, magnitude),
    };
    base.iter()
        .map(|pair| pair.iter().map(|&op| research_form(op)).collect())
        .collect()
}

// Short names for the tables, timm's own.
const EQUALIZE: TimmOp = TimmOp::Equalize;
const AUTO_CONTRAST: TimmOp = TimmOp::AutoContrast;
const INVERT: TimmOp = TimmOp::Invert;
const ROTATE: TimmOp = TimmOp::Rotate;
const SOLARIZE: TimmOp = TimmOp::Solarize { increasing: false };
const SOLARIZE_ADD: TimmOp = TimmOp::SolarizeAdd;
const POSTERIZE: TimmOp = TimmOp::Posterize(Bits::Decreasing);
const POSTERIZE_ORIGINAL: TimmOp = TimmOp::Posterize(Bits::Original);
const COLOR: TimmOp = enhance(AugmentOp::TimmColor, false);
const CONTRAST: TimmOp = enhance(AugmentOp::TimmContrast, false);
const SHARPNESS: TimmOp = enhance(AugmentOp::TimmSharpness, false);
const SHEAR_X: TimmOp = TimmOp::ShearX;
const SHEAR_Y: TimmOp = TimmOp::ShearY;
const TRANSLATE_Y_REL: TimmOp = TimmOp::TranslateYRel;

/// timm's `auto_augment_policy_original`: the AutoAugment paper's ImageNet policy.
#[rustfmt::skip]
const ORIGINAL: [[PolicyOp; 2]; 25] = [
    [(POSTERIZE_ORIGINAL, 0.4, 8), (ROTATE, 0.6, 9)],
    [(SOLARIZE, 0.6, 5), (AUTO_CONTRAST, 0.6, 5)],
    [(EQUALIZE, 0.8, 8), (EQUALIZE, 0.6, 3)],
    [(POSTERIZE_ORIGINAL, 0.6, 7), (POSTERIZE_ORIGINAL, 0.6, 6)],
    [(EQUALIZE, 0.4, 7), (SOLARIZE, 0.2, 4)],
    [(EQUALIZE, 0.4, 4), (ROTATE, 0.8, 8)],
    [(SOLARIZE, 0.6, 3), (EQUALIZE, 0.6, 7)],
    [(POSTERIZE_ORIGINAL, 0.8, 5), (EQUALIZE, 1.0, 2)],
    [(ROTATE, 0.2, 3), (SOLARIZE, 0.6, 8)],
    [(EQUALIZE, 0.6, 8), (POSTERIZE_ORIGINAL, 0.4, 6)],
    [(ROTATE, 0.8, 8), (COLOR, 0.4, 0)],
    [(ROTATE, 0.4, 9), (EQUALIZE, 0.6, 2)],
    [(EQUALIZE, 0.0, 7), (EQUALIZE, 0.8, 8)],
    [(INVERT, 0.6, 4), (EQUALIZE, 1.0, 8)],
    [(COLOR, 0.6, 4), (CONTRAST, 1.0, 8)],
    [(ROTATE, 0.8, 8), (COLOR, 1.0, 2)],
    [(COLOR, 0.8, 8), (SOLARIZE, 0.8, 7)],
    [(SHARPNESS, 0.4, 7), (INVERT, 0.6, 8)],
    [(SHEAR_X, 0.6, 5), (EQUALIZE, 1.0, 9)],
    [(COLOR, 0.4, 0), (EQUALIZE, 0.6, 3)],
    [(EQUALIZE, 0.4, 7), (SOLARIZE, 0.2, 4)],
    [(SOLARIZE, 0.6, 5), (AUTO_CONTRAST, 0.6, 5)],
    [(INVERT, 0.6, 4), (EQUALIZE, 1.0, 8)],
    [(COLOR, 0.6, 4), (CONTRAST, 1.0, 8)],
    [(EQUALIZE, 0.8, 8), (EQUALIZE, 0.6, 3)],
];

/// timm's `auto_augment_policy_3a`: DeiT III's three-augment, three sub-policies of one
/// operation each (solarize at threshold 128, grey, a blur).
const THREE_A: [PolicyOp; 3] = [
    (SOLARIZE, 1.0, 5),
    (TimmOp::Desaturate, 1.0, 10),
    (TimmOp::GaussianBlurRand, 1.0, 10),
];

/// timm's `auto_augment_policy_v0`: TPU EfficientNet's ImageNet policy.
#[rustfmt::skip]
const V0: [[PolicyOp; 2]; 25] = [
    [(EQUALIZE, 0.8, 1), (SHEAR_Y, 0.8, 4)],
    [(COLOR, 0.4, 9), (EQUALIZE, 0.6, 3)],
    [(COLOR, 0.4, 1), (ROTATE, 0.6, 8)],
    [(SOLARIZE, 0.8, 3), (EQUALIZE, 0.4, 7)],
    [(SOLARIZE, 0.4, 2), (SOLARIZE, 0.6, 2)],
    [(COLOR, 0.2, 0), (EQUALIZE, 0.8, 8)],
    [(EQUALIZE, 0.4, 8), (SOLARIZE_ADD, 0.8, 3)],
    [(SHEAR_X, 0.2, 9), (ROTATE, 0.6, 8)],
    [(COLOR, 0.6, 1), (EQUALIZE, 1.0, 2)],
    [(INVERT, 0.4, 9), (ROTATE, 0.6, 0)],
    [(EQUALIZE, 1.0, 9), (SHEAR_Y, 0.6, 3)],
    [(COLOR, 0.4, 7), (EQUALIZE, 0.6, 0)],
    [(POSTERIZE, 0.4, 6), (AUTO_CONTRAST, 0.4, 7)],
    [(SOLARIZE, 0.6, 8), (COLOR, 0.6, 9)],
    [(SOLARIZE, 0.2, 4), (ROTATE, 0.8, 9)],
    [(ROTATE, 1.0, 7), (TRANSLATE_Y_REL, 0.8, 9)],
    [(SHEAR_X, 0.0, 0), (SOLARIZE, 0.8, 4)],
    [(SHEAR_Y, 0.8, 0), (COLOR, 0.6, 4)],
    [(COLOR, 1.0, 0), (ROTATE, 0.6, 2)],
    [(EQUALIZE, 0.8, 4), (EQUALIZE, 0.0, 8)],
    [(EQUALIZE, 1.0, 4), (AUTO_CONTRAST, 0.6, 2)],
    [(SHEAR_Y, 0.4, 7), (SOLARIZE_ADD, 0.6, 7)],
    [(POSTERIZE, 0.8, 2), (SOLARIZE, 0.6, 10)],
    [(SOLARIZE, 0.6, 8), (EQUALIZE, 0.6, 1)],
    [(COLOR, 0.8, 6), (ROTATE, 0.4, 5)],
];

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
            assert_eq!(a.filter.is_some(), is_geometric(a.op), "{a:?}");
            seen.insert(a.op);
        }
        assert_eq!(seen.len(), 15);
    }

    /// Every sub-policy is drawn, each operation at its own probability and magnitude: with no
    /// noise, an applied operation's argument is its level rule's at its magnitude.
    #[test]
    fn timms_auto_augment_draws_its_policys_sub_policies() {
        for policy in TimmAutoAugmentPolicy::ALL {
            let a = TimmAutoAugment {
                policy,
                ..TimmAutoAugment::default()
            };
            let table = sub_policies(policy);
            let mut used = std::collections::HashSet::new();
            for index in 0..3000 {
                let key = SampleKey {
                    seed: 4,
                    epoch: 0,
                    index,
                };
                let s = &mut Stream::new(key, Op::TimmAutoAugment);
                let drawn = draw_auto(&a, (224, 160), s);
                // The first draw of the stream is the sub-policy's.
                let chosen =
                    Stream::new(key, Op::TimmAutoAugment).below(table.len() as u64) as usize;
                used.insert(chosen);
                let applicable: Vec<_> = table[chosen].iter().filter(|o| o.1 > 0.0).collect();
                assert!(drawn.len() <= applicable.len());
                for d in &drawn {
                    let matches = applicable.iter().any(|&&(op, _, magnitude)| {
                        let settings = Settings {
                            prob: 1.0,
                            magnitude: f64::from(magnitude),
                            magnitude_std: 0.0,
                            upper_bound: 10.0,
                            translate_pct: 0.45,
                            interpolation: Some(Filter::Bilinear),
                        };
                        let s = &mut Stream::new(key, Op::Crop);
                        let expected = draw_op(op, &settings, (224, 160), s).unwrap();
                        // The blur's radius is a draw of its own, in 0.1 to 2.
                        let blur = d.op == AugmentOp::TimmGaussianBlur
                            && (0.1..2.0).contains(&d.magnitude);
                        expected.op == d.op
                            && (blur || expected.magnitude.abs() == d.magnitude.abs())
                    });
                    assert!(matches, "{policy:?} {chosen}: {d:?}");
                }
            }
            assert_eq!(used.len(), table.len());
        }
        // The research forms posterize with 4 - int(level * 4) bits: magnitude 8 keeps 1.
        let research = sub_policies(TimmAutoAugmentPolicy::OriginalR)[0][0];
        assert_eq!(research.0, TimmOp::Posterize(Bits::Increasing));
        let original = sub_policies(TimmAutoAugmentPolicy::Original)[0][0];
        let bits = |op| {
            let settings = Settings {
                prob: 1.0,
                magnitude: 8.0,
                magnitude_std: 0.0,
                upper_bound: 10.0,
                translate_pct: 0.45,
                interpolation: None,
            };
            let key = SampleKey::default();
            draw_op(op, &settings, (8, 8), &mut Stream::new(key, Op::Crop))
                .unwrap()
                .magnitude
        };
        assert_eq!((bits(original.0), bits(research.0)), (7.0, 1.0));
    }

    /// AugMix's draws: Dirichlet weights summing to one (as float32), a Beta blend factor, each
    /// chain 1 to 3 of its thirteen operations, with the moments their distributions have.
    #[test]
    fn timms_aug_mix_draws_weights_blends_and_chains() {
        let draws = |m: &TimmAugMix| -> Vec<AugMix> {
            (0..4000)
                .map(|index| {
                    let key = SampleKey {
                        seed: 5,
                        epoch: 1,
                        index,
                    };
                    draw_aug_mix(m, (64, 48), &mut Stream::new(key, Op::TimmAugMix))
                })
                .collect()
        };
        let all = draws(&TimmAugMix::default());
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let first: Vec<f64> = all.iter().map(|d| f64::from(d.weights[0])).collect();
        let blends: Vec<f64> = all.iter().map(|d| f64::from(d.blend)).collect();
        // Dirichlet(1, 1, 1)'s first weight: mean 1/3, variance 1/18; Beta(1, 1): uniform.
        assert!((mean(&first) - 1.0 / 3.0).abs() < 0.015, "{}", mean(&first));
        let variance = mean(
            &first
                .iter()
                .map(|w| (w - 1.0 / 3.0).powi(2))
                .collect::<Vec<_>>(),
        );
        assert!((variance - 1.0 / 18.0).abs() < 0.006, "{variance}");
        assert!((mean(&blends) - 0.5).abs() < 0.02, "{}", mean(&blends));
        let mut depths = [0; 4];
        let mut ops = std::collections::HashSet::new();
        for d in &all {
            let total: f32 = d.weights.iter().sum();
            assert!((total - 1.0).abs() < 1e-6, "{:?}", d.weights);
            assert!((0.0..=1.0).contains(&d.blend));
            assert_eq!(d.chains.len(), 3);
            for chain in &d.chains {
                depths[chain.len()] += 1;
                ops.extend(chain.iter().map(|a| a.op));
            }
        }
        assert_eq!(depths[0], 0);
        assert!(
            depths[1..].iter().all(|&n| (3600..4400).contains(&n)),
            "{depths:?}"
        );
        // AutoContrast, the four enhancements, Equalize, Rotate, Posterize, Solarize, the shears
        // and translations.
        assert_eq!(ops.len(), 13, "{ops:?}");
        // A small alpha: Gamma draws boosted below 1, Beta(0.2, 0.2) near its ends.
        let small = draws(&TimmAugMix {
            alpha: 0.2,
            depth: Some(2),
            width: 2,
            ..TimmAugMix::default()
        });
        let ends = small
            .iter()
            .filter(|d| d.blend < 0.1 || d.blend > 0.9)
            .count();
        assert!(ends > 2000, "{ends}");
        assert!(small.iter().all(|d| d.chains.iter().all(|c| c.len() == 2)));
    }

    #[test]
    fn timms_aug_mix_strings_parse_as_timm_reads_them() {
        let m = TimmAugMix::parse("augmix-m5-w4-d2-a0.5-mstd0.5").unwrap();
        assert_eq!(
            (m.magnitude, m.width, m.depth, m.alpha, m.magnitude_std),
            (5.0, 4, Some(2), 0.5, 0.5)
        );
        let m = TimmAugMix::parse("augmix-d0").unwrap();
        assert_eq!(m, TimmAugMix::default());
        assert_eq!(m.magnitude_std, f64::INFINITY);
        // timm's `bool(int(val))`, the last one counting: b1 blended, b0 not.
        for (config, blended) in [
            ("augmix-b1", true),
            ("augmix-b2", true),
            ("augmix-b1-b0", false),
        ] {
            let m = TimmAugMix::parse(config).unwrap();
            assert_eq!(
                m,
                TimmAugMix {
                    blended,
                    ..TimmAugMix::default()
                }
            );
        }
        for (bad, why) in [
            ("rand-m9", "starts with `augmix-`"),
            ("augmix-q3", "unknown timm AugMix section"),
            ("augmix-m2.5", "integer"),
        ] {
            let e = TimmAugMix::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let too_wide = TimmAugMix::parse("augmix-w4").unwrap();
        assert!(too_wide
            .check()
            .unwrap_err()
            .to_string()
            .contains("at most 14 steps"));
        assert!(TimmAugMix::parse("augmix-w4-d2").unwrap().check().is_ok());
        // Blended, held to the same bound.
        assert!(TimmAugMix::parse("augmix-w1-d12-b1")
            .unwrap()
            .check()
            .is_err());
    }

    #[test]
    fn timms_auto_augment_strings_parse_as_timm_reads_them() {
        let a = TimmAutoAugment::parse("original-mstd0.5").unwrap();
        assert_eq!(
            (a.policy, a.magnitude_std),
            (TimmAutoAugmentPolicy::Original, 0.5)
        );
        // Unlike its RandAugment strings, an mstd above 100 stays a deviation; the first counts.
        let a = TimmAutoAugment::parse("v0r-mstd101-mstd3").unwrap();
        assert_eq!(
            (a.policy, a.magnitude_std),
            (TimmAutoAugmentPolicy::V0R, 101.0)
        );
        assert_eq!(
            TimmAutoAugment::parse("v0").unwrap(),
            TimmAutoAugment::default()
        );
        let a = TimmAutoAugment::parse("3a-mstd1").unwrap();
        assert_eq!(
            (a.policy, a.magnitude_std),
            (TimmAutoAugmentPolicy::ThreeA, 1.0)
        );
        for (bad, why) in [
            ("3b", "starts with original"),
            ("rand-m9", "starts with original"),
            ("v0-m9", "unknown timm AutoAugment section"),
            ("v0-mstd0.x", "not a number"),
        ] {
            let e = TimmAutoAugment::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn timms_strings_parse_as_timm_reads_them() {
        let r = TimmRandAugment::parse("rand-m9-mstd0.5-inc1").unwrap();
        assert_eq!(
            (r.magnitude, r.magnitude_std, r.increasing),
            (9.0, 0.5, true)
        );
        assert_eq!((r.num_ops, r.prob, r.magnitude_max), (2, 0.5, None));
        let r = TimmRandAugment::parse("rand-n3-m15-mmax15-mstd101-p0.7").unwrap();
        assert_eq!((r.num_ops, r.magnitude, r.upper_bound()), (3, 15.0, 15.0));
        assert_eq!(
            (r.magnitude_std, r.prob, r.increasing),
            (f64::INFINITY, 0.7, false)
        );
        // timm's `bool(int(val))`, the last one counting.
        assert!(
            !TimmRandAugment::parse("rand-m9-inc1-inc0")
                .unwrap()
                .increasing
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

    /// `3a`'s three operations at magnitudes 5 and 10: solarize from 128, `Color` by 0 (grey),
    /// and a blur of a radius uniform in 0.1 to 2; with noise, desaturation by 0 to 0.5 and
    /// radii down to 0.
    #[test]
    fn timms_three_augment_solarizes_greys_or_blurs() {
        let draws = |std: f64| {
            let a = TimmAutoAugment {
                policy: TimmAutoAugmentPolicy::ThreeA,
                magnitude_std: std,
                ..TimmAutoAugment::default()
            };
            (0..3000).flat_map(move |index| {
                let key = SampleKey {
                    seed: 9,
                    epoch: 1,
                    index,
                };
                draw_auto(&a, (224, 224), &mut Stream::new(key, Op::TimmAutoAugment))
            })
        };
        let (mut radii, mut ops) = (Vec::new(), std::collections::BTreeMap::new());
        for d in draws(0.0) {
            *ops.entry(d.op.name()).or_insert(0) += 1;
            assert_eq!(d.filter, None);
            match d.op {
                AugmentOp::Solarize => assert_eq!(d.magnitude, 128.0),
                AugmentOp::TimmColor => assert_eq!(d.magnitude, 0.0),
                AugmentOp::TimmGaussianBlur => radii.push(d.magnitude),
                _ => panic!("{d:?}"),
            }
        }
        assert_eq!(ops.values().sum::<i32>(), 3000);
        assert!(ops.values().all(|&n| (900..1100).contains(&n)), "{ops:?}");
        assert!(radii.iter().all(|r| (0.1..2.0).contains(r)));
        let mean = radii.iter().sum::<f64>() / radii.len() as f64;
        assert!((mean - 1.05).abs() < 0.05, "{mean}");
        let noisy: Vec<Augment> = draws(3.0).collect();
        assert!(noisy.iter().all(|d| d.op.allows(d.magnitude)));
        let colour = noisy.iter().filter(|d| d.op == AugmentOp::TimmColor);
        assert!(colour.clone().all(|d| (0.0..=0.5).contains(&d.magnitude)));
        assert!(colour.clone().any(|d| d.magnitude > 0.1));
        let blurs = noisy.iter().filter(|d| d.op == AugmentOp::TimmGaussianBlur);
        assert!(blurs.clone().any(|d| d.magnitude < 0.1));
    }

    /// `_calc_blended_weights` from the last chain back: with weights w and blend m, the last
    /// chain's factor is w·m, and each earlier one its w·m over the blend the later ones left;
    /// the chained blends then weigh the chains as the mix does (up to rounding).
    #[test]
    fn blended_weights_are_timms_in_float32() {
        assert_eq!(blended_weights(&[0.5, 0.5], 1.0), [1.0, 0.5]);
        let (weights, m) = ([0.2f32, 0.3, 0.5], 0.8f32);
        let factors = blended_weights(&weights, m);
        let last = 0.5f32 * 0.8;
        let middle = 0.3f32 * 0.8 / (1.0 - last);
        let first = 0.2f32 * 0.8 / ((1.0 - last) * (1.0 - middle));
        assert_eq!(factors, [first, middle, last]);
        // The image's share after the three blends is 1 - m; each chain's its weight times m.
        let kept = (1.0 - factors[0]) * (1.0 - factors[1]) * (1.0 - factors[2]);
        assert!((kept - 0.2).abs() < 1e-6, "{kept}");
        // A weight of 0 before the blend is used up divides 0 by 0.
        assert!(blended_weights(&[0.0, 1.0], 1.0)[0].is_nan());
    }
}
