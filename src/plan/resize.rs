//! Pillow's resampling filters turned into integer tap tables (`Resample.c`, PARITY §3.2–3.3).
//!
//! Taps are computed once per (filter, input size, box, output size) in f64 on the CPU, exactly as
//! Pillow computes them, and rounded to Q22 integers. Both backends consume the same tables, so
//! the floating-point part never runs on a GPU (WGSL has no f64).

use crate::transform::Filter;
use std::f64::consts::PI;

/// Fixed-point precision of the taps: 32 − 8 − 2 bits (`PRECISION_BITS` in Pillow).
pub const PRECISION_BITS: u32 = 22;

/// The tap arithmetic of each of Pillow's filters.
impl Filter {
    /// Half-width of the filter at scale 1 (`_filters_support`).
    pub fn support(self) -> f64 {
        match self {
            Self::Nearest | Self::Box => 0.5,
            Self::Bilinear | Self::Hamming => 1.0,
            Self::Bicubic => 2.0,
            Self::Lanczos => 3.0,
        }
    }

    /// The filter's weight at distance `x` (Pillow's `*_filter` functions, in f64).
    pub fn weight(self, x: f64) -> f64 {
        match self {
            Self::Nearest | Self::Box => f64::from(u8::from(x > -0.5 && x <= 0.5)),
            Self::Bilinear => {
                let x = x.abs();
                if x < 1.0 {
                    1.0 - x
                } else {
                    0.0
                }
            }
            Self::Hamming => {
                let x = x.abs();
                if x == 0.0 {
                    1.0
                } else if x >= 1.0 {
                    0.0
                } else {
                    let x = x * PI;
                    // Pillow writes the window constants as C floats (0.54f, 0.46f).
                    x.sin() / x * (f64::from(0.54f32) + f64::from(0.46f32) * x.cos())
                }
            }
            Self::Bicubic => {
                const A: f64 = -0.5;
                let x = x.abs();
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
            Self::Lanczos => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
        }
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let x = x * PI;
        x.sin() / x
    }
}

/// Integer taps for one axis: output sample `i` is the sum over `k < len(i)` of
/// `input[start(i) + k] * weights[i * window + k]`, plus 2^21, shifted right by 22 and clamped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taps {
    /// Taps per output sample (Pillow's `ksize`); rows of `weights` have this length.
    pub window: usize,
    /// For each output sample: first input sample and number of taps used.
    pub bounds: Vec<(u32, u32)>,
    /// Q22 weights, `window` per output sample, zero past each sample's `len`.
    pub weights: Vec<i32>,
}

impl Taps {
    /// Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc` for resampling the input span
    /// [`in0`, `in1`) of `in_size` samples to `out_size` samples. The span is a C `float` box.
    pub fn new(filter: Filter, in_size: usize, in0: f32, in1: f32, out_size: usize) -> Self {
        if filter == Filter::Nearest {
            return Self::nearest(in_size, in0, in1, out_size);
        }
        // The span is subtracted in float32, as Pillow's box is float32.
        let scale = f64::from(in1 - in0) / out_size as f64;
        let filter_scale = scale.max(1.0);
        let support = filter.support() * filter_scale;
        let window = support.ceil() as usize * 2 + 1;
        let mut bounds = Vec::with_capacity(out_size);
        let mut weights = vec![0i32; out_size * window];
        let mut row = vec![0f64; window];
        let inverse_scale = 1.0 / filter_scale;
        for (i, weights) in weights.chunks_exact_mut(window).enumerate() {
            let center = f64::from(in0) + (i as f64 + 0.5) * scale;
            // `as` truncates toward zero, like C's (int) cast.
            let start = ((center - support + 0.5) as i64).max(0);
            let end = ((center + support + 0.5) as i64).min(in_size as i64);
            let len = ((end - start).max(0) as usize).min(window);
            let mut total = 0.0;
            for (k, w) in row[..len].iter_mut().enumerate() {
                *w = filter.weight(((k as i64 + start) as f64 - center + 0.5) * inverse_scale);
                total += *w;
            }
            for (w, out) in row[..len].iter().zip(weights.iter_mut()) {
                let w = if total != 0.0 { w / total } else { *w };
                *out = to_fixed(w);
            }
            bounds.push((start as u32, len as u32));
        }
        Self {
            window,
            bounds,
            weights,
        }
    }
}

impl Taps {
    /// Pillow's nearest-neighbour resize as taps: one tap of weight 1.0 per output sample, at
    /// the input sample `ImagingScaleAffine` picks. Pillow steps a double from
    /// `in0 + scale / 2` by `scale` (the box's span in float32 over `out_size`, in double) and
    /// truncates it, so the positions are accumulated here the same way, not multiplied out. A
    /// position outside the input keeps Pillow's zero fill (no tap). With a weight of exactly
    /// 1.0 the integer passes copy the sample: (v · 2^22 + 2^21) >> 22 = v.
    pub fn nearest(in_size: usize, in0: f32, in1: f32, out_size: usize) -> Self {
        let scale = f64::from(in1 - in0) / out_size as f64;
        let mut position = f64::from(in0) + scale * 0.5;
        let mut bounds = Vec::with_capacity(out_size);
        let mut last = 0;
        for _ in 0..out_size {
            // Pillow's COORD: -1 below zero, else truncation.
            let at = if position < 0.0 { -1 } else { position as i64 };
            if (0..in_size as i64).contains(&at) {
                last = at as u32;
                bounds.push((last, 1));
            } else {
                bounds.push((last, 0));
            }
            position += scale;
        }
        let weights = bounds
            .iter()
            .map(|&(_, len)| if len == 1 { 1 << PRECISION_BITS } else { 0 })
            .collect();
        Self {
            window: 1,
            bounds,
            weights,
        }
    }
}

/// Rounds a weight to Q22, half away from zero (`normalize_coeffs_8bpc`).
fn to_fixed(w: f64) -> i32 {
    let scaled = w * f64::from(1u32 << PRECISION_BITS);
    if w < 0.0 {
        (scaled - 0.5) as i32
    } else {
        (scaled + 0.5) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_box_has_one_full_tap() {
        let taps = Taps::new(Filter::Box, 4, 0.0, 4.0, 4);
        assert_eq!(taps.window, 3);
        assert_eq!(taps.bounds, vec![(0, 1), (1, 1), (2, 1), (3, 1)]);
        assert_eq!(taps.weights[0], 1 << PRECISION_BITS);
    }

    #[test]
    fn bilinear_halving_averages_pairs_with_quarter_neighbours() {
        // Scale 2: the support doubles to 2; output 1 is centred on input 3.0 and takes inputs
        // 1..=4 with weights 1/8, 3/8, 3/8, 1/8.
        let taps = Taps::new(Filter::Bilinear, 8, 0.0, 8.0, 4);
        let (start, len) = taps.bounds[1];
        assert_eq!((start, len), (1, 4));
        let sum: i32 = taps.weights[taps.window..taps.window + len as usize]
            .iter()
            .sum();
        assert!((sum - (1 << 22)).abs() <= 2, "{sum}");
    }

    #[test]
    fn nearest_steps_as_pillow_does() {
        // 5 → 3: scale 5/3; positions 0.833, 2.5, 4.167 → samples 0, 2, 4.
        let taps = Taps::nearest(5, 0.0, 5.0, 3);
        assert_eq!(taps.bounds, vec![(0, 1), (2, 1), (4, 1)]);
        assert!(taps.weights.iter().all(|&w| w == 1 << PRECISION_BITS));
        // 2 → 5: scale 0.4; positions 0.2, 0.6, 1.0, 1.4, 1.8.
        let up = Taps::nearest(2, 0.0, 2.0, 5);
        assert_eq!(up.bounds, vec![(0, 1), (0, 1), (1, 1), (1, 1), (1, 1)]);
    }

    #[test]
    fn lanczos_is_defined_on_a_half_open_interval() {
        assert_eq!(Filter::Lanczos.weight(3.0), 0.0);
        assert_ne!(Filter::Lanczos.weight(-2.9), 0.0);
    }
}

/// Pillow's `Image.resize(size, filter)` on a whole image (`ImagingResampleInner`): which
/// passes run, their taps, and the source rows the horizontal pass covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResizePlan {
    /// Horizontal taps, when the width changes.
    pub horizontal: Option<Taps>,
    /// Vertical taps (bounds relative to `first_row` when the horizontal pass runs), when the
    /// height changes.
    pub vertical: Option<Taps>,
    /// First source row the horizontal pass reads.
    pub first_row: usize,
    /// Rows the horizontal pass produces.
    pub rows: usize,
}

impl ResizePlan {
    /// The plan for resizing `in_w`×`in_h` to `out_w`×`out_h` with `filter`.
    pub fn new(
        filter: Filter,
        (in_w, in_h): (usize, usize),
        (out_w, out_h): (usize, usize),
    ) -> Self {
        // The box is the whole image, as a C float.
        let horizontal = Taps::new(filter, in_w, 0.0, in_w as f32, out_w);
        let mut vertical = Taps::new(filter, in_h, 0.0, in_h as f32, out_h);
        let need_horizontal = out_w != in_w;
        let need_vertical = out_h != in_h;
        // Pillow computes the vertical taps first to learn which rows the horizontal pass needs.
        let first_row = vertical.bounds.first().map_or(0, |b| b.0 as usize);
        let last_row = vertical.bounds.last().map_or(0, |b| (b.0 + b.1) as usize);
        if need_horizontal {
            for bound in &mut vertical.bounds {
                bound.0 -= first_row as u32;
            }
        }
        Self {
            horizontal: need_horizontal.then_some(horizontal),
            vertical: need_vertical.then_some(vertical),
            first_row,
            rows: last_row - first_row,
        }
    }
}
