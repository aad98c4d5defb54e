//! Chroma upsampling with libjpeg's "fancy" filters and their box fallbacks (`jdsample.c`,
//! PARITY §2b). One function per output sample, as the shader computes it.

use crate::plan::Upsampling;
#[cfg(test)]
use crate::plan::UpsamplingAxis;

/// A component's decoded samples: `width`×`height` real samples in rows of `stride` bytes.
pub struct Plane<'a> {
    /// Samples, row-major.
    pub samples: &'a [u8],
    /// Bytes per row.
    pub stride: usize,
    /// Real samples per row (the downsampled width); later ones are padding, never read.
    pub width: usize,
    /// Real rows (the downsampled height).
    pub height: usize,
}

#[cfg(test)]
impl Plane<'_> {
    /// Sample at (x, y) with both indices clamped to the real samples.
    #[inline]
    fn at(&self, x: isize, y: isize) -> i32 {
        let x = x.clamp(0, self.width as isize - 1) as usize;
        let y = y.clamp(0, self.height as isize - 1) as usize;
        i32::from(self.samples[y * self.stride + x])
    }
}

/// The full-resolution sample at (`x`, `y`): the weighted sum of [`Upsampling::axes`]' 2×2
/// taps, rounded as libjpeg rounds each filter.
#[cfg(test)]
#[inline]
pub fn upsample_at(plane: &Plane, method: Upsampling, x: usize, y: usize) -> u8 {
    let [horizontal, vertical] = method.axes();
    let ((x0, x1), (wx0, wx1)) = taps(horizontal, x);
    let ((y0, y1), (wy0, wy1)) = taps(vertical, y);
    let row = |y| wx0 * plane.at(x0, y) + wx1 * plane.at(x1, y);
    let sum = wy0 * row(y0) + wy1 * row(y1);
    let (odd_x, odd_y) = ((x % 2) as i32, (y % 2) as i32);
    // One fancy axis weighs 4 and adds 1 at even and 2 at odd samples; two weigh 16 and add 8
    // or 7 by column (h2v2 rounds once, over the unrounded column sums).
    let (bias, shift) = match (horizontal.fancy, vertical.fancy) {
        (true, true) => (8 - odd_x, 4),
        (true, false) => (1 + odd_x, 2),
        (false, true) => (1 + odd_y, 2),
        (false, false) => (0, 0),
    };
    ((sum + bias) >> shift) as u8
}

/// The two source samples output index `i` reads along `axis`, and their weights.
#[cfg(test)]
#[inline]
fn taps(axis: UpsamplingAxis, i: usize) -> ((isize, isize), (i32, i32)) {
    let source = (i / axis.repeat) as isize;
    if !axis.fancy {
        return ((source, source), (1, 0));
    }
    let near = if i.is_multiple_of(2) {
        source - 1
    } else {
        source + 1
    };
    ((source, near), (3, 1))
}

/// Upsamples a whole plane to `width`×`height` samples: [`upsample_at`] for every sample,
/// computed a row at a time (a test holds the two equal).
#[cfg(test)]
pub fn upsample(plane: &Plane, method: Upsampling, width: usize, height: usize) -> Vec<u8> {
    let mut out = vec![0u8; width * height];
    let mut rows = RowUpsampler::new(plane, method);
    for (y, out) in out.chunks_exact_mut(width).enumerate() {
        out.copy_from_slice(rows.row(y, width));
    }
    out
}

/// Produces full-size rows of one component on demand, so that a decoder can colour-convert a
/// row at a time instead of holding full-size chroma planes (the CPU path).
pub struct RowUpsampler<'a> {
    plane: &'a Plane<'a>,
    method: Upsampling,
    /// Column sums with the edges repeated at both ends (fancy horizontal filters).
    sums: Vec<i16>,
    /// The row handed out, with room for the whole last pair of samples.
    out: Vec<u8>,
}

impl<'a> RowUpsampler<'a> {
    /// An upsampler of `plane` by `method`.
    pub fn new(plane: &'a Plane<'a>, method: Upsampling) -> Self {
        Self {
            plane,
            method,
            sums: vec![0; plane.width + 2],
            out: Vec::new(),
        }
    }

    /// Source row `j`, clamped to the real rows.
    fn source(&self, j: usize) -> &'a [u8] {
        let j = j.min(self.plane.height - 1);
        &self.plane.samples[j * self.plane.stride..][..self.plane.width]
    }

    /// Output row `y`, `width` samples wide.
    pub fn row(&mut self, y: usize, width: usize) -> &[u8] {
        let (j, odd_row) = (y / 2, y % 2 == 1);
        // The nearer neighbour row of a fancy vertical filter, clamped to the real rows.
        let near = if odd_row { j + 1 } else { j.saturating_sub(1) };
        if self.method == Upsampling::Full && width <= self.plane.width {
            return &self.source(y)[..width];
        }
        self.out.resize(width.max(2 * self.plane.width), 0);
        let last = self.plane.width - 1;
        match self.method {
            Upsampling::Full | Upsampling::Box { .. } => {
                let (h, v) = match self.method {
                    Upsampling::Box { h, v } => (h, v),
                    _ => (1, 1),
                };
                let src = self.source(y / v);
                for (x, o) in self.out[..width].iter_mut().enumerate() {
                    *o = src[(x / h).min(last)];
                }
            }
            Upsampling::H2V1Fancy => {
                let src = self.source(y);
                for (s, &p) in self.sums[1..].iter_mut().zip(src) {
                    *s = i16::from(p);
                }
                pad_ends(&mut self.sums);
                fancy_row::<2>(&self.sums, [1, 2], &mut self.out);
            }
            Upsampling::H1V2Fancy => {
                let (src, nb) = (self.source(j), self.source(near));
                let bias = if odd_row { 2 } else { 1 };
                for (x, o) in self.out[..width].iter_mut().enumerate() {
                    *o = ((3 * i32::from(src[x]) + i32::from(nb[x]) + bias) >> 2) as u8;
                }
            }
            Upsampling::H2V2Fancy => {
                column_sums(self.source(j), self.source(near), &mut self.sums);
                pad_ends(&mut self.sums);
                fancy_row::<4>(&self.sums, [8, 7], &mut self.out);
            }
        }
        &self.out[..width]
    }
}

#[cfg(target_arch = "x86_64")]
use super::sse2::upsample::{column_sums, fancy_row};
#[cfg(not(target_arch = "x86_64"))]
use {column_sums_scalar as column_sums, fancy_row_scalar as fancy_row};

/// Column sums 3·`near`[i] + `far`[i] (the vertical half of h2v2) into `padded[1..=n]`.
#[cfg_attr(
    target_arch = "x86_64",
    allow(dead_code, reason = "the SSE2 version runs; tests compare")
)]
fn column_sums_scalar(near: &[u8], far: &[u8], padded: &mut [i16]) {
    for ((s, &p), &q) in padded[1..].iter_mut().zip(near).zip(far) {
        *s = 3 * i16::from(p) + i16::from(q);
    }
}

/// The horizontal triangle filter of h2v1 (`SHIFT` 2) and h2v2 (`SHIFT` 4) fancy upsampling:
/// each of the `n` samples of `padded[1..=n]` gives `out[2i]` and `out[2i + 1]`. `padded` holds
/// the row with its first and last sample repeated at either end, which is the edge clamp.
#[cfg_attr(
    target_arch = "x86_64",
    allow(dead_code, reason = "the SSE2 version runs; tests compare")
)]
fn fancy_row_scalar<const SHIFT: i32>(
    padded: &[i16],
    [even_bias, odd_bias]: [i16; 2],
    out: &mut [u8],
) {
    for (w, pair) in padded.windows(3).zip(out.chunks_exact_mut(2)) {
        let centre = 3 * w[1];
        pair[0] = ((centre + w[0] + even_bias) >> SHIFT) as u8;
        pair[1] = ((centre + w[2] + odd_bias) >> SHIFT) as u8;
    }
}

/// Repeats the end samples of `padded[1..=n]` into `padded[0]` and `padded[n + 1]`.
fn pad_ends(padded: &mut [i16]) {
    let n = padded.len() - 2;
    padded[0] = padded[1];
    padded[n + 1] = padded[n];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_follow_libjpeg() {
        let choose = |max, width, fancy| Upsampling::choose((1, 1), max, width, fancy).unwrap();
        assert_eq!(choose((2, 2), 8, true), Upsampling::H2V2Fancy);
        assert_eq!(choose((2, 2), 2, true), Upsampling::Box { h: 2, v: 2 });
        assert_eq!(choose((2, 1), 8, true), Upsampling::H2V1Fancy);
        assert_eq!(choose((1, 2), 1, true), Upsampling::H1V2Fancy);
        assert_eq!(choose((1, 2), 8, false), Upsampling::Box { h: 1, v: 2 });
        assert_eq!(choose((4, 1), 8, true), Upsampling::Box { h: 4, v: 1 });
        assert!(Upsampling::choose((2, 1), (3, 1), 8, true).is_err());
    }

    #[test]
    fn whole_plane_equals_the_per_sample_spec() {
        let methods = [
            Upsampling::Full,
            Upsampling::H2V1Fancy,
            Upsampling::H1V2Fancy,
            Upsampling::H2V2Fancy,
            Upsampling::Box { h: 2, v: 2 },
            Upsampling::Box { h: 4, v: 1 },
        ];
        let samples: Vec<u8> = (0..48 * 9)
            .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for (w, h) in [(1, 1), (2, 3), (5, 4), (7, 9), (16, 3), (41, 5)] {
            let plane = Plane {
                samples: &samples,
                stride: 48,
                width: w,
                height: h,
            };
            for method in methods {
                let (sx, sy) = match method {
                    Upsampling::Full => (1, 1),
                    Upsampling::H2V1Fancy => (2, 1),
                    Upsampling::H1V2Fancy => (1, 2),
                    Upsampling::H2V2Fancy => (2, 2),
                    Upsampling::Box { h, v } => (h, v),
                };
                // Odd output sizes drop the last half sample, as libjpeg does.
                let (width, height) = (
                    (w * sx).saturating_sub(sx / 2).max(1),
                    (h * sy).saturating_sub(sy / 2).max(1),
                );
                let rows = upsample(&plane, method, width, height);
                for y in 0..height {
                    for x in 0..width {
                        assert_eq!(
                            rows[y * width + x],
                            upsample_at(&plane, method, x, y),
                            "{method:?} {w}x{h} at {x},{y}"
                        );
                    }
                }
            }
        }
    }

    /// The portable filters (run on other architectures) equal the SSE2 ones.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn scalar_filters_equal_the_sse2_ones() {
        for n in [1, 7, 8, 9, 23, 64] {
            let near: Vec<u8> = (0..n).map(|i| (i * 97 % 256) as u8).collect();
            let far: Vec<u8> = (0..n).map(|i| (255 - i * 31 % 256) as u8).collect();
            let (mut a, mut b) = (vec![0i16; n + 2], vec![0i16; n + 2]);
            column_sums(&near, &far, &mut a);
            column_sums_scalar(&near, &far, &mut b);
            assert_eq!(a, b);
            pad_ends(&mut a);
            let (mut x, mut y) = (vec![0u8; 2 * n], vec![0u8; 2 * n]);
            fancy_row::<4>(&a, [8, 7], &mut x);
            fancy_row_scalar::<4>(&a, [8, 7], &mut y);
            assert_eq!(x, y);
            let samples: Vec<i16> = (0..n + 2).map(|i| i16::from(near[i.min(n - 1)])).collect();
            fancy_row::<2>(&samples, [1, 2], &mut x);
            fancy_row_scalar::<2>(&samples, [1, 2], &mut y);
            assert_eq!(x, y);
        }
    }

    #[test]
    fn h2v2_rounds_once() {
        let samples = [10u8, 20, 30, 40];
        let plane = Plane {
            samples: &samples,
            stride: 2,
            width: 2,
            height: 2,
        };
        // Output row 3 (odd) pairs chroma row 1 with row 2, clamped to 1: S = [120, 160], and
        // column 1 (odd) gives (3*120 + 160 + 7) >> 4 = 32.
        assert_eq!(upsample_at(&plane, Upsampling::H2V2Fancy, 1, 3), 32);
        // Output row 1 pairs chroma rows 0 and 1: S = [60, 100]; (180 + 100 + 7) >> 4 = 17.
        assert_eq!(upsample_at(&plane, Upsampling::H2V2Fancy, 1, 1), 17);
    }
}
