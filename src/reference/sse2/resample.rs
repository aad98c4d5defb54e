//! Pillow's horizontal pass ([`crate::reference::resample::horizontal_at`]) with SSE2, over
//! planar rows, eight taps per `pmaddwd`. A Q22 weight w does not fit a 16-bit lane, so it is
//! split as w = 2^16·hi + lo with lo the low 16 bits taken signed: Σ p·w = 2^16·Σ p·hi + Σ p·lo
//! holds in wrapping 32-bit arithmetic, which is what Pillow's `int` sums give.

use crate::plan::{Taps, PRECISION_BITS};
use std::arch::x86_64::*;

/// The weights of [`Taps`] split into 16-bit halves, each output's row padded with zeros to a
/// multiple of eight taps.
pub struct SplitTaps {
    /// Taps per output sample, a multiple of 8.
    window: usize,
    /// Low halves, `window` per output sample.
    lo: Vec<i16>,
    /// High halves, `window` per output sample.
    hi: Vec<i16>,
}

impl SplitTaps {
    /// Splits `taps`.
    pub fn new(taps: &Taps) -> Self {
        let window = taps.window.next_multiple_of(8);
        let outputs = taps.bounds.len();
        let (mut lo, mut hi) = (vec![0i16; outputs * window], vec![0i16; outputs * window]);
        for (x, &(_, len)) in taps.bounds.iter().enumerate() {
            let weights = &taps.weights[x * taps.window..][..len as usize];
            for (k, &w) in weights.iter().enumerate() {
                let low = w as i16;
                lo[x * window + k] = low;
                hi[x * window + k] = ((w - i32::from(low)) >> 16) as i16;
            }
        }
        Self { window, lo, hi }
    }
}

/// The horizontal pass of one row given as `N` planes, into interleaved `out` (`N` samples per
/// output pixel). Planes that are the same slice (grey images) are computed once.
#[allow(unsafe_code, reason = "calling an SSE2 function; see the SAFETY note")]
pub fn horizontal_planar_row<const N: usize>(
    planes: [&[u8]; N],
    taps: &Taps,
    split: &SplitTaps,
    out: &mut [u8],
) {
    // SAFETY: SSE2 is part of the x86-64 baseline, so every CPU this code runs on has it.
    unsafe { planar_row_sse2(planes, taps, split, out) }
}

#[target_feature(enable = "sse2")]
fn planar_row_sse2<const N: usize>(
    planes: [&[u8]; N],
    taps: &Taps,
    split: &SplitTaps,
    out: &mut [u8],
) {
    let width = planes[0].len();
    let grey = planes.iter().all(|p| std::ptr::eq(*p, planes[0]));
    for (x, out) in out.chunks_exact_mut(N).enumerate() {
        let (start, len) = taps.bounds[x];
        let start = start as usize;
        let sums: [i32; N] = if start + split.window <= width {
            let lo = &split.lo[x * split.window..][..split.window];
            let hi = &split.hi[x * split.window..][..split.window];
            if grey {
                [dot(planes[0], start, lo, hi); N]
            } else {
                let mut sums = [0; N];
                for (sum, plane) in sums.iter_mut().zip(planes) {
                    *sum = dot(plane, start, lo, hi);
                }
                sums
            }
        } else {
            // Near the right edge the eight-byte loads would pass the row's end.
            let weights = &taps.weights[x * taps.window..][..len as usize];
            planes.map(|plane| {
                plane[start..]
                    .iter()
                    .zip(weights)
                    .fold(0i32, |acc, (&p, &w)| {
                        acc.wrapping_add(i32::from(p).wrapping_mul(w))
                    })
            })
        };
        for (o, sum) in out.iter_mut().zip(sums) {
            let acc = sum.wrapping_add(1 << (PRECISION_BITS - 1));
            *o = (acc >> PRECISION_BITS).clamp(0, 255) as u8;
        }
    }
}

/// `Σ plane[start + k] · w[k]` over the split weights, wrapping.
#[inline]
#[target_feature(enable = "sse2")]
fn dot(plane: &[u8], start: usize, lo: &[i16], hi: &[i16]) -> i32 {
    let zero = _mm_setzero_si128();
    let (mut sum_lo, mut sum_hi) = (zero, zero);
    for k in (0..lo.len()).step_by(8) {
        let bytes = u64::from_le_bytes(plane[start + k..start + k + 8].try_into().unwrap());
        let pixels = _mm_unpacklo_epi8(_mm_cvtsi64_si128(bytes as i64), zero);
        let lo: __m128i = bytemuck::cast(<[i16; 8]>::try_from(&lo[k..k + 8]).unwrap());
        let hi: __m128i = bytemuck::cast(<[i16; 8]>::try_from(&hi[k..k + 8]).unwrap());
        sum_lo = _mm_add_epi32(sum_lo, _mm_madd_epi16(pixels, lo));
        sum_hi = _mm_add_epi32(sum_hi, _mm_madd_epi16(pixels, hi));
    }
    let sum = _mm_add_epi32(sum_lo, _mm_slli_epi32::<16>(sum_hi));
    let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b01_00_11_10>(sum));
    let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b10_11_00_01>(sum));
    _mm_cvtsi128_si32(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::resample::horizontal_row;
    use crate::Filter;

    #[test]
    fn equals_the_spec_for_every_filter_and_scale() {
        let width = 301;
        let planes: [Vec<u8>; 3] = std::array::from_fn(|c| {
            (0..width)
                .map(|i| ((i * 131 + c * 71) % 256) as u8)
                .collect()
        });
        let interleaved: Vec<u8> = (0..width * 3).map(|i| planes[i % 3][i / 3]).collect();
        for filter in [
            Filter::Nearest,
            Filter::Box,
            Filter::Bilinear,
            Filter::Hamming,
            Filter::Bicubic,
            Filter::Lanczos,
        ] {
            for out_width in [1, 7, 64, 224, 300, 640] {
                let taps = Taps::new(filter, width, 0.0, width as f32, out_width);
                let split = SplitTaps::new(&taps);
                let (mut simd, mut scalar) = (vec![0u8; out_width * 3], vec![0u8; out_width * 3]);
                let rows = [&planes[0][..], &planes[1][..], &planes[2][..]];
                horizontal_planar_row(rows, &taps, &split, &mut simd);
                horizontal_row::<3>(&interleaved, &taps, &mut scalar);
                assert_eq!(simd, scalar, "{filter:?} to {out_width}");
                let grey: Vec<u8> = planes[1].iter().flat_map(|&p| [p; 3]).collect();
                horizontal_planar_row([&planes[1][..]; 3], &taps, &split, &mut simd);
                horizontal_row::<3>(&grey, &taps, &mut scalar);
                assert_eq!(simd, scalar, "grey, {filter:?} to {out_width}");
            }
        }
    }
}
