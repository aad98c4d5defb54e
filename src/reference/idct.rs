//! Dequantisation + inverse DCT: libjpeg-turbo's ISLOW (`jidctint.c`), PARITY §2a.
//!
//! Written as the shader will be: i32 arithmetic that wraps (WGSL's i32 does), arithmetic shifts
//! for every descale, no shortcuts (they give the same result). Valid data never overflows.

use std::num::Wrapping;

type W = Wrapping<i32>;

const CONST_BITS: u32 = 13;
const PASS1_BITS: u32 = 2;

const FIX_0_298631336: W = Wrapping(2446);
const FIX_0_390180644: W = Wrapping(3196);
const FIX_0_541196100: W = Wrapping(4433);
const FIX_0_765366865: W = Wrapping(6270);
const FIX_0_899976223: W = Wrapping(7373);
const FIX_1_175875602: W = Wrapping(9633);
const FIX_1_501321110: W = Wrapping(12299);
const FIX_1_847759065: W = Wrapping(15137);
const FIX_1_961570560: W = Wrapping(16069);
const FIX_2_053119869: W = Wrapping(16819);
const FIX_2_562915447: W = Wrapping(20995);
const FIX_3_072711026: W = Wrapping(25172);

/// libjpeg's DESCALE: divide by 2^n, rounding half up (an arithmetic shift, never `/`).
#[inline]
fn descale(x: W, n: u32) -> W {
    (x + Wrapping(1 << (n - 1))) >> n as usize
}

/// libjpeg's IDCT range limit: the +128 level shift and a clamp, wrapping mod 1024 as its
/// table does (`prepare_range_limit_table`, RANGE_MASK = 1023).
#[inline]
pub fn range_limit(x: i32) -> u8 {
    let m = x & 1023;
    match m {
        0..=127 => (m + 128) as u8,
        128..=511 => 255,
        512..=895 => 0,
        _ => (m - 896) as u8,
    }
}

/// The 1-D 8-point kernel shared by both passes, before descaling.
#[inline]
fn kernel(x: [W; 8]) -> [W; 8] {
    // Even part.
    let z1 = (x[2] + x[6]) * FIX_0_541196100;
    let t2 = z1 - x[6] * FIX_1_847759065;
    let t3 = z1 + x[2] * FIX_0_765366865;
    let t0 = (x[0] + x[4]) << CONST_BITS as usize;
    let t1 = (x[0] - x[4]) << CONST_BITS as usize;
    let (e10, e13, e11, e12) = (t0 + t3, t0 - t3, t1 + t2, t1 - t2);
    // Odd part.
    let (a, b, c, e) = (x[7], x[5], x[3], x[1]);
    let z5 = (a + c + b + e) * FIX_1_175875602;
    let z1 = -(a + e) * FIX_0_899976223;
    let z2 = -(b + c) * FIX_2_562915447;
    let z3 = -(a + c) * FIX_1_961570560 + z5;
    let z4 = -(b + e) * FIX_0_390180644 + z5;
    let o0 = a * FIX_0_298631336 + z1 + z3;
    let o1 = b * FIX_2_053119869 + z2 + z4;
    let o2 = c * FIX_3_072711026 + z2 + z3;
    let o3 = e * FIX_1_501321110 + z1 + z4;
    [
        e10 + o3,
        e11 + o2,
        e12 + o1,
        e13 + o0,
        e13 - o0,
        e12 - o1,
        e11 - o2,
        e10 - o3,
    ]
}

/// Dequantises `coefs` with `quant` (both natural order) and writes the 8×8 samples to
/// `out[row * stride + col]`.
pub fn idct_islow(coefs: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let mut ws = [Wrapping(0i32); 64];
    // Pass 1: columns, from dequantised coefficients into the workspace.
    for u in 0..8 {
        // libjpeg multiplies in its 16-bit ISLOW_MULT_TYPE, so tables above 32767 wrap.
        let x = std::array::from_fn(|k| {
            Wrapping(i32::from(coefs[k * 8 + u])) * Wrapping(i32::from(quant[k * 8 + u] as i16))
        });
        for (k, y) in kernel(x).into_iter().enumerate() {
            ws[k * 8 + u] = descale(y, CONST_BITS - PASS1_BITS);
        }
    }
    // Pass 2: rows, from the workspace into samples.
    for r in 0..8 {
        let x = std::array::from_fn(|k| ws[r * 8 + k]);
        for (k, y) in kernel(x).into_iter().enumerate() {
            out[r * stride + k] = range_limit(descale(y, CONST_BITS + PASS1_BITS + 3).0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_limit_matches_libjpeg_table() {
        assert_eq!(range_limit(0), 128);
        assert_eq!(range_limit(127), 255);
        assert_eq!(range_limit(300), 255);
        assert_eq!(range_limit(-128), 0);
        assert_eq!(range_limit(-600), 0);
        assert_eq!(range_limit(-1), 127);
        // Past ±512 the table wraps: 1023 & -1 is 1023.
        assert_eq!(range_limit(1024), 128);
    }

    #[test]
    fn dc_only_block_is_flat() {
        let mut coefs = [0i16; 64];
        coefs[0] = 10;
        let mut quant = [1u16; 64];
        quant[0] = 16;
        let mut out = [0u8; 64];
        idct_islow(&coefs, &quant, &mut out, 8);
        // DC 160 → 160/8 = 20 above mid-grey.
        assert!(out.iter().all(|&v| v == 148), "{out:?}");
    }
}
