//! YCbCr → RGB ([`crate::reference::color::ycc_to_rgb`]) with SSE2, sixteen pixels at a time,
//! into planar R, G and B rows. The constants that do not fit a 16-bit lane are split off
//! whole multiples of 2^16, which pass through the final `>> 16` exactly: 1.40200·x =
//! 0.40200·x + x, 1.77200·x = −0.22800·x + 2·x and −0.71414·x = 0.28586·x − x.

use crate::reference::color::YccTables;
use std::arch::x86_64::*;

/// 0.40200, 0.22800, 0.34414 and 0.28586 in 16 fractional bits.
const FIX_0_40200: i16 = 26345;
const FIX_0_22800: i16 = 14942;
const FIX_0_34414: i16 = 22554;
const FIX_0_28586: i16 = 18734;

/// Converts `y.len()` pixels of full-size Y, Cb, Cr rows into the `r`, `g`, `b` rows.
#[allow(unsafe_code, reason = "calling an SSE2 function; see the SAFETY note")]
pub fn ycc_to_rgb_rows(y: &[u8], cb: &[u8], cr: &[u8], rgb: [&mut [u8]; 3]) {
    // SAFETY: SSE2 is part of the x86-64 baseline, so every CPU this code runs on has it.
    unsafe { rows_sse2(y, cb, cr, rgb) }
}

#[target_feature(enable = "sse2")]
fn rows_sse2(y: &[u8], cb: &[u8], cr: &[u8], [r, g, b]: [&mut [u8]; 3]) {
    let n = y.len();
    let (cb, cr, r, g, b) = (&cb[..n], &cr[..n], &mut r[..n], &mut g[..n], &mut b[..n]);
    let simd = n - n % 16;
    for i in (0..simd).step_by(16) {
        let at = |row: &[u8]| -> __m128i {
            bytemuck::cast(<[u8; 16]>::try_from(&row[i..i + 16]).unwrap())
        };
        let [rv, gv, bv] = sixteen_pixels(at(y), at(cb), at(cr));
        r[i..i + 16].copy_from_slice(&bytemuck::cast::<_, [u8; 16]>(rv));
        g[i..i + 16].copy_from_slice(&bytemuck::cast::<_, [u8; 16]>(gv));
        b[i..i + 16].copy_from_slice(&bytemuck::cast::<_, [u8; 16]>(bv));
    }
    let tables = &YccTables::BUILT;
    for i in simd..n {
        [r[i], g[i], b[i]] = tables.to_rgb(y[i], cb[i], cr[i]);
    }
}

/// The three RGB vectors of sixteen pixels.
#[inline]
#[target_feature(enable = "sse2")]
fn sixteen_pixels(y: __m128i, cb: __m128i, cr: __m128i) -> [__m128i; 3] {
    let zero = _mm_setzero_si128();
    let centre = _mm_set1_epi16(128);
    let halves = |v: __m128i| [_mm_unpacklo_epi8(v, zero), _mm_unpackhi_epi8(v, zero)];
    let (y, cb, cr) = (halves(y), halves(cb), halves(cr));
    let channel = |half: usize| {
        let cb = _mm_sub_epi16(cb[half], centre);
        let cr = _mm_sub_epi16(cr[half], centre);
        let r = _mm_add_epi16(descaled(cr, FIX_0_40200, zero, 0), cr);
        let b = _mm_add_epi16(descaled(cb, -FIX_0_22800, zero, 0), _mm_add_epi16(cb, cb));
        let g = _mm_sub_epi16(descaled(cb, -FIX_0_34414, cr, FIX_0_28586), cr);
        [r, g, b].map(|term| _mm_add_epi16(y[half], term))
    };
    let (lo, hi) = (channel(0), channel(1));
    std::array::from_fn(|c| _mm_packus_epi16(lo[c], hi[c]))
}

/// (a·x + b·y + 2^15) >> 16 per 16-bit lane, through exact 32-bit products (`pmaddwd`).
#[inline]
#[target_feature(enable = "sse2")]
fn descaled(x: __m128i, a: i16, y: __m128i, b: i16) -> __m128i {
    let ab = _mm_set1_epi32(i32::from(a) & 0xffff | i32::from(b) << 16);
    let half = _mm_set1_epi32(1 << 15);
    let [lo, hi] = [_mm_unpacklo_epi16(x, y), _mm_unpackhi_epi16(x, y)]
        .map(|p| _mm_srai_epi32::<16>(_mm_add_epi32(_mm_madd_epi16(p, ab), half)));
    _mm_packs_epi32(lo, hi)
}

#[cfg(test)]
mod tests {
    use crate::reference::color::ycc_to_rgb;

    #[test]
    fn equals_the_spec_for_every_chroma_pair() {
        // All 65,536 (Cb, Cr) pairs, each with several Y values, in rows of odd length so that
        // the scalar tail runs too.
        let n = 256 * 256 * 4 + 5;
        let y: Vec<u8> = (0..n)
            .map(|i| (i * 37 % 251) as u8 + (i % 5) as u8)
            .collect();
        let cb: Vec<u8> = (0..n).map(|i| (i / 4 % 256) as u8).collect();
        let cr: Vec<u8> = (0..n).map(|i| (i / 4 / 256 % 256) as u8).collect();
        let (mut r, mut g, mut b) = (vec![0u8; n], vec![0u8; n], vec![0u8; n]);
        super::ycc_to_rgb_rows(&y, &cb, &cr, [&mut r, &mut g, &mut b]);
        for i in 0..n {
            assert_eq!(
                [r[i], g[i], b[i]],
                ycc_to_rgb(y[i], cb[i], cr[i]),
                "pixel {i}"
            );
        }
    }
}
