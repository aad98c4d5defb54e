//! `RandomErasing`'s boxes and what fills them: the draw of each box, and the normal values of
//! the noise modes.
//!
//! torchvision (`value='random'`) and timm (`'rand'`, `'pixel'`) fill a box with `normal_()` of
//! torch's generator. gpuprep draws its own standard normal values, the same on every backend:
//! each erased box drawn with noise gets a 64-bit key from the erasing stream, and element
//! (c, y, x) of a box `width` wide is
//!
//! ```text
//! NORMAL[philox4x32_10(counter = [y·width + x, 0, 0, 0], key = [key mod 2³², key >> 32])[c] >> 16]
//! ```
//!
//! where NORMAL holds the standard normal distribution's quantiles at (i + ½) / 2¹⁶, i = 0 …
//! 2¹⁶ − 1, computed by Wichura's AS241 in double precision (as Python's
//! `statistics.NormalDist().inv_cdf`) and rounded to float32: a distribution of 65,536 equally
//! likely values whose tails end at ±4.32. A per-channel draw (timm's `'rand'`) is the box's
//! element (c, 0, 0). A caller may instead give the values themselves (torch's, to replay
//! torchvision bit for bit).

use super::random::{area_and_aspect, Stream};
use super::CropBox;
use crate::{ErasedValue, RandomErasing};
use std::sync::OnceLock;

/// One erased box of the output: the box and, for the noise modes, its normal values.
#[derive(Clone, Debug, PartialEq)]
pub struct Erasure {
    /// The box of the output tensor.
    pub region: CropBox,
    /// The box's normal values (`None` with a constant value).
    pub noise: Option<Noise>,
}

/// The normal values of one erased box.
#[derive(Clone, Debug, PartialEq)]
pub enum Noise {
    /// Drawn with this key (see the module's documentation).
    Drawn(u64),
    /// Given: three values (one per channel), or one per element in C×H×W order.
    Given(Vec<f32>),
}

/// One erased box as the output writes it: the box and the value of each of its elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Erased {
    /// The box of the output tensor.
    pub region: CropBox,
    /// Its values.
    pub fill: Fill,
}

/// The values of an erased box.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    /// One value per channel.
    Constant([f32; 3]),
    /// The normal values drawn with this key, one per element.
    Drawn(u64),
    /// Given values, one per element in C×H×W order.
    Given(Vec<f32>),
}

impl Erased {
    /// How `erasure` of `erasing` is written: a per-channel draw becomes that box's constant.
    pub fn new(erasure: &Erasure, erasing: &RandomErasing) -> Self {
        let fill = match (erasing.value, &erasure.noise) {
            (ErasedValue::Constant(value), _) => Fill::Constant(value),
            (ErasedValue::NormalPerChannel, Some(Noise::Drawn(key))) => {
                Fill::Constant(std::array::from_fn(|c| normal(*key, 0, c)))
            }
            (ErasedValue::NormalPerChannel, Some(Noise::Given(values))) => {
                Fill::Constant(std::array::from_fn(|c| values[c]))
            }
            (ErasedValue::NormalPerElement, Some(Noise::Drawn(key))) => Fill::Drawn(*key),
            (ErasedValue::NormalPerElement, Some(Noise::Given(values))) => {
                Fill::Given(values.clone())
            }
            // `Params::check` refuses a noise box without its values before any plan is made.
            (_, None) => Fill::Constant([0.0; 3]),
        };
        Self {
            region: erasure.region,
            fill,
        }
    }

    /// The value of channel `c` at (`x`, `y`) of the box.
    pub fn value(&self, c: usize, y: usize, x: usize) -> f32 {
        let b = self.region;
        match &self.fill {
            Fill::Constant(value) => value[c],
            Fill::Drawn(key) => normal(*key, (y * b.width + x) as u32, c),
            Fill::Given(values) => values[(c * b.height + y) * b.width + x],
        }
    }
}

/// The erasing of one image: with probability `p`, `count` boxes (drawn from `count`'s range
/// when it is one), each from ten tries at a box of the output (`width`, `height`) whose area is
/// a share of the image's uniform in `scale`, divided by the count (as timm divides it), and
/// whose aspect ratio (height / width) is log-uniform in `ratio`, strictly smaller than the
/// output; a box whose ten tries all fail is left out. A noise box then draws its key.
pub(crate) fn erase_boxes(
    erasing: &RandomErasing,
    (width, height): (usize, usize),
    s: &mut Stream,
) -> Vec<Erasure> {
    if s.uniform() >= erasing.p {
        return Vec::new();
    }
    let (low, high) = erasing.count;
    let count = if low == high {
        low
    } else {
        low + s.below(u64::from(high - low + 1)) as u32
    };
    let area = (width * height) as f64;
    let mut boxes = Vec::new();
    for _ in 0..count {
        for _ in 0..10 {
            let (share, aspect) = area_and_aspect(area, erasing.scale, erasing.ratio, s);
            let target = share / f64::from(count);
            let h = (target * aspect).sqrt().round_ties_even() as usize;
            let w = (target / aspect).sqrt().round_ties_even() as usize;
            if h < height && w < width {
                let top = s.below((height - h + 1) as u64) as usize;
                let left = s.below((width - w + 1) as u64) as usize;
                let noise = erasing.is_noise().then(|| Noise::Drawn(s.next_u64()));
                let region = CropBox {
                    top,
                    left,
                    height: h,
                    width: w,
                };
                boxes.push(Erasure { region, noise });
                break;
            }
        }
    }
    boxes
}

/// Why `boxes` cannot be `erasing`'s on an output of (`width`, `height`), if they cannot: more
/// boxes than its count allows, a box outside the output, noise where the value is constant
/// (or none where it is not), given values of the wrong number or not finite.
pub(crate) fn misfit(
    boxes: &[Erasure],
    erasing: &RandomErasing,
    (width, height): (usize, usize),
) -> Option<String> {
    if boxes.len() > erasing.count.1 as usize {
        return Some(format!(
            "{} erased boxes, more than the transform's count of at most {}",
            boxes.len(),
            erasing.count.1
        ));
    }
    boxes.iter().find_map(|erasure| {
        let b = erasure.region;
        if b.left + b.width > width || b.top + b.height > height {
            return Some(format!(
                "the erased box {b:?} does not lie inside the {width}x{height} output"
            ));
        }
        let values = match (&erasure.noise, erasing.value) {
            (None, ErasedValue::Constant(_)) => return None,
            (Some(_), ErasedValue::Constant(_)) => {
                return Some(format!(
                    "the erased box {b:?} has noise, but the transform writes a constant"
                ))
            }
            (None, _) => {
                return Some(format!(
                    "the erased box {b:?} has no noise, but the transform writes normal values"
                ))
            }
            (Some(Noise::Drawn(_)), _) => return None,
            (Some(Noise::Given(values)), _) => values,
        };
        let wanted = match erasing.value {
            ErasedValue::NormalPerChannel => 3,
            _ => 3 * b.width * b.height,
        };
        if values.len() != wanted {
            return Some(format!(
                "the erased box {b:?} needs {wanted} noise values, got {}",
                values.len()
            ));
        }
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Some(format!(
                "the erased box {b:?} has a noise value that is not a finite float32: {v}"
            ));
        }
        None
    })
}

/// Element `pixel` · 3 + `channel` of the noise drawn with `key` (see the module's
/// documentation).
pub fn normal(key: u64, pixel: u32, channel: usize) -> f32 {
    let words = philox4x32_10([pixel, 0, 0, 0], [key as u32, (key >> 32) as u32]);
    normal_table()[(words[channel] >> 16) as usize]
}

/// The standard normal quantiles at (i + ½) / 2¹⁶, as float32 (see the module's
/// documentation).
pub fn normal_table() -> &'static [f32] {
    static TABLE: OnceLock<Vec<f32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0..1u32 << 16)
            .map(|i| inverse_normal((f64::from(i) + 0.5) / 65536.0) as f32)
            .collect()
    })
}

/// Philox4x32 with ten rounds (Salmon et al. 2011), the word generator of the noise; mirrored by
/// `philox4x32_10` in shaders/tensor.wgsl.
pub fn philox4x32_10(mut counter: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    const M0: u32 = 0xD251_1F53;
    const M1: u32 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    let mul = |a: u32, b: u32| {
        let product = u64::from(a) * u64::from(b);
        ((product >> 32) as u32, product as u32)
    };
    for round in 0..10 {
        if round > 0 {
            key = [key[0].wrapping_add(W0), key[1].wrapping_add(W1)];
        }
        let (hi0, lo0) = mul(M0, counter[0]);
        let (hi1, lo1) = mul(M1, counter[2]);
        counter = [
            hi1 ^ counter[1] ^ key[0],
            lo1,
            hi0 ^ counter[3] ^ key[1],
            lo0,
        ];
    }
    counter
}

/// The standard normal distribution's quantile at `p` in (0, 1): Wichura's AS241 (PPND16), in
/// the order of operations of Python's `statistics._normal_dist_inv_cdf`.
#[allow(
    clippy::excessive_precision,
    reason = "AS241's coefficients digit for digit, as Python writes them"
)]
fn inverse_normal(p: f64) -> f64 {
    let horner = |coefficients: &[f64], r: f64| {
        coefficients[1..]
            .iter()
            .fold(coefficients[0], |acc, &c| acc * r + c)
    };
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        let num = horner(
            &[
                2.5090809287301226727e3,
                3.3430575583588128105e4,
                6.7265770927008700853e4,
                4.5921953931549871457e4,
                1.3731693765509461125e4,
                1.9715909503065514427e3,
                1.3314166789178437745e2,
                3.3871328727963666080,
            ],
            r,
        ) * q;
        let den = horner(
            &[
                5.2264952788528545610e3,
                2.8729085735721942674e4,
                3.9307895800092710610e4,
                2.1213794301586595867e4,
                5.3941960214247511077e3,
                6.8718700749205790830e2,
                4.2313330701600911252e1,
                1.0,
            ],
            r,
        );
        return num / den;
    }
    let r = if q <= 0.0 { p } else { 1.0 - p };
    let r = (-r.ln()).sqrt();
    let (num, den) = if r <= 5.0 {
        let r = r - 1.6;
        (
            horner(
                &[
                    7.74545014278341407640e-4,
                    2.27238449892691845833e-2,
                    2.41780725177450611770e-1,
                    1.27045825245236838258,
                    3.64784832476320460504,
                    5.76949722146069140550,
                    4.63033784615654529590,
                    1.42343711074968357734,
                ],
                r,
            ),
            horner(
                &[
                    1.05075007164441684324e-9,
                    5.47593808499534494600e-4,
                    1.51986665636164571966e-2,
                    1.48103976427480074590e-1,
                    6.89767334985100004550e-1,
                    1.67638483018380384940,
                    2.05319162663775882187,
                    1.0,
                ],
                r,
            ),
        )
    } else {
        let r = r - 5.0;
        (
            horner(
                &[
                    2.01033439929228813265e-7,
                    2.71155556874348757815e-5,
                    1.24266094738807843860e-3,
                    2.65321895265761230930e-2,
                    2.96560571828504891230e-1,
                    1.78482653991729133580,
                    5.46378491116411436990,
                    6.65790464350110377720,
                ],
                r,
            ),
            horner(
                &[
                    2.04426310338993978564e-15,
                    1.42151175831644588870e-7,
                    1.84631831751005468180e-5,
                    7.86869131145613259100e-4,
                    1.48753612908506148525e-2,
                    1.36929880922735805310e-1,
                    5.99832206555887937690e-1,
                    1.0,
                ],
                r,
            ),
        )
    };
    let x = num / den;
    if q < 0.0 {
        -x
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table equals Python 3.11's `np.float32(NormalDist().inv_cdf((i + 0.5) / 65536))`:
    /// some entries, and an FNV-1a hash of every entry's bits (word by word), both printed by
    /// Python.
    #[test]
    fn the_normal_table_is_pythons_inv_cdf() {
        let table = normal_table();
        for (i, bits) in [
            (0, 0xc08a_65bd),
            (1, 0xc082_7049),
            (100, 0xc03d_800b),
            (5585, 0xbfaf_746b),
            (5586, 0xbfaf_7136),
            (20000, 0xbf02_71dd),
            (32767, 0xb7a0_6c99),
            (32768, 0x37a0_6c99),
            (50000, 0x3f37_3fa0),
            (65535, 0x408a_65bd),
        ] {
            assert_eq!(table[i].to_bits(), bits, "entry {i}");
        }
        let hash = table.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, v| {
            (h ^ u64::from(v.to_bits())).wrapping_mul(0x100_0000_01b3)
        });
        assert_eq!(hash, 0xc74e_bdc0_32ef_e1c1);
    }

    /// Given boxes that are not the transform's are refused, each saying why.
    #[test]
    fn given_boxes_that_do_not_fit_the_transform_are_refused() {
        let region = CropBox {
            top: 1,
            left: 2,
            height: 3,
            width: 4,
        };
        let constant = RandomErasing::new(1.0);
        let pixels = RandomErasing {
            value: ErasedValue::NormalPerElement,
            ..constant
        };
        let channels = RandomErasing {
            value: ErasedValue::NormalPerChannel,
            ..constant
        };
        let boxed = |noise| vec![Erasure { region, noise }];
        let why = |boxes: &[Erasure], erasing| misfit(boxes, erasing, (8, 8)).unwrap_or_default();
        assert_eq!(why(&boxed(None), &constant), "");
        assert_eq!(why(&boxed(Some(Noise::Drawn(5))), &pixels), "");
        assert_eq!(why(&boxed(Some(Noise::Given(vec![0.5; 36]))), &pixels), "");
        assert_eq!(why(&boxed(Some(Noise::Given(vec![0.5; 3]))), &channels), "");
        assert!(why(&boxed(Some(Noise::Drawn(5))), &constant).contains("has noise"));
        assert!(why(&boxed(None), &pixels).contains("has no noise"));
        assert!(why(&boxed(Some(Noise::Given(vec![0.5; 3]))), &pixels).contains("needs 36"));
        let mut values = vec![0.5; 36];
        values[7] = f32::INFINITY;
        assert!(why(&boxed(Some(Noise::Given(values))), &pixels).contains("not a finite"));
        let outside = CropBox { top: 6, ..region };
        let boxes = [Erasure {
            region: outside,
            noise: None,
        }];
        assert!(why(&boxes, &constant).contains("does not lie inside"));
        let two = [boxed(None), boxed(None)].concat();
        assert!(why(&two, &constant).contains("more than the transform's count"));
    }

    /// Drawn boxes: between the count's bounds, inside the output, a key exactly where the
    /// values are normal; and the per-channel values are the box's first element.
    #[test]
    fn drawn_boxes_keep_to_the_transform() {
        use crate::plan::random::{Op, SampleKey};
        let erasing = RandomErasing {
            value: ErasedValue::NormalPerChannel,
            count: (2, 4),
            ..RandomErasing::new(1.0)
        };
        let mut counts = std::collections::BTreeSet::new();
        for index in 0..200 {
            let key = SampleKey {
                seed: 3,
                epoch: 0,
                index,
            };
            let boxes = erase_boxes(&erasing, (64, 48), &mut Stream::new(key, Op::Erase));
            assert_eq!(misfit(&boxes, &erasing, (64, 48)), None);
            assert!(boxes
                .iter()
                .all(|b| matches!(b.noise, Some(Noise::Drawn(_)))));
            counts.insert(boxes.len());
            for b in &boxes {
                let erased = Erased::new(b, &erasing);
                let Some(Noise::Drawn(key)) = b.noise else {
                    unreachable!()
                };
                for c in 0..3 {
                    assert_eq!(erased.value(c, 1, 1), normal(key, 0, c));
                }
            }
        }
        assert_eq!(counts, [2, 3, 4].into());
    }

    /// Random123's known answers for Philox4x32-10 (its kat_vectors).
    #[test]
    fn philox4x32_gives_random123s_known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }
}
