//! Dequantisation + inverse DCT: libjpeg-turbo's ISLOW (`jidctint.c`, PARITY §2a), with the
//! 16-bit lanes of its AVX2 version, which is what Pillow's x86-64 wheels run.
//!
//! For valid data the 16-bit lanes never overflow and this equals the C code. Corrupt files can
//! carry coefficients that do overflow, and Pillow decodes them with the SIMD behaviour, so the
//! reference keeps it: dequantised values wrap to 16 bits, so do the sums the SIMD code forms in
//! 16-bit lanes, and each pass saturates its outputs to 16 bits (`packssdw`). Products and the
//! other sums are i32 that wrap (as WGSL's i32 does); descales are arithmetic shifts.

use std::num::Wrapping;

type W = Wrapping<i32>;

const CONST_BITS: u32 = 13;
const PASS1_BITS: u32 = 2;

const FIX_0_298631336: i32 = 2446;
const FIX_0_390180644: i32 = 3196;
const FIX_0_541196100: i32 = 4433;
const FIX_0_765366865: i32 = 6270;
const FIX_0_899976223: i32 = 7373;
const FIX_1_175875602: i32 = 9633;
const FIX_1_501321110: i32 = 12299;
const FIX_1_847759065: i32 = 15137;
const FIX_1_961570560: i32 = 16069;
const FIX_2_053119869: i32 = 16819;
const FIX_2_562915447: i32 = 20995;
const FIX_3_072711026: i32 = 25172;

/// Wraps to a 16-bit lane.
#[inline]
fn wrap16(x: i32) -> i32 {
    i32::from(x as i16)
}

/// Saturates to a 16-bit lane (`packssdw`).
#[inline]
fn sat16(x: i32) -> i32 {
    x.clamp(i32::from(i16::MIN), i32::from(i16::MAX))
}

/// a·x + b·y in 32 bits (`pmaddwd`).
#[inline]
fn madd(x: i32, a: i32, y: i32, b: i32) -> W {
    Wrapping(x) * Wrapping(a) + Wrapping(y) * Wrapping(b)
}

/// libjpeg's DESCALE: divide by 2^n, rounding half up (an arithmetic shift, never `/`).
#[inline]
fn descale(x: W, n: u32) -> i32 {
    ((x + Wrapping(1 << (n - 1))) >> n as usize).0
}

/// The 1-D 8-point kernel on 16-bit inputs, descaled by `shift` and saturated to 16 bits.
#[inline]
fn kernel(x: [i32; 8], shift: u32) -> [i32; 8] {
    // Even part.
    let tmp3 = madd(
        x[2],
        FIX_0_541196100 + FIX_0_765366865,
        x[6],
        FIX_0_541196100,
    );
    let tmp2 = madd(
        x[2],
        FIX_0_541196100,
        x[6],
        FIX_0_541196100 - FIX_1_847759065,
    );
    let tmp0 = Wrapping(wrap16(x[0] + x[4])) << CONST_BITS as usize;
    let tmp1 = Wrapping(wrap16(x[0] - x[4])) << CONST_BITS as usize;
    let (e10, e13, e11, e12) = (tmp0 + tmp3, tmp0 - tmp3, tmp1 + tmp2, tmp1 - tmp2);
    // Odd part, with a = x7, b = x5, c = x3, e = x1.
    let z3 = wrap16(x[7] + x[3]);
    let z4 = wrap16(x[5] + x[1]);
    let z3 = madd(z3, FIX_1_175875602 - FIX_1_961570560, z4, FIX_1_175875602);
    let z4 = madd(
        wrap16(x[7] + x[3]),
        FIX_1_175875602,
        wrap16(x[5] + x[1]),
        FIX_1_175875602 - FIX_0_390180644,
    );
    let o0 = madd(
        x[7],
        FIX_0_298631336 - FIX_0_899976223,
        x[1],
        -FIX_0_899976223,
    ) + z3;
    let o1 = madd(
        x[5],
        FIX_2_053119869 - FIX_2_562915447,
        x[3],
        -FIX_2_562915447,
    ) + z4;
    let o2 = madd(
        x[5],
        -FIX_2_562915447,
        x[3],
        FIX_3_072711026 - FIX_2_562915447,
    ) + z3;
    let o3 = madd(
        x[7],
        -FIX_0_899976223,
        x[1],
        FIX_1_501321110 - FIX_0_899976223,
    ) + z4;
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
    .map(|y| sat16(descale(y, shift)))
}

/// Dequantises `coefs` with `quant` (both natural order) and writes the 8×8 samples to
/// `out[row * stride + col]`.
pub fn idct_islow(coefs: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let d: [i32; 64] = std::array::from_fn(|i| wrap16(i32::from(coefs[i]) * i32::from(quant[i])));
    let mut ws = [0i32; 64];
    // Pass 1: columns. When no coefficient below the first row is set, each column is flat; the
    // SIMD code then shifts in 16 bits, which only differs from the full path on overflow.
    if coefs[8..].iter().all(|&c| c == 0) {
        for (k, value) in ws.iter_mut().enumerate() {
            *value = wrap16(d[k % 8] << PASS1_BITS);
        }
    } else {
        for u in 0..8 {
            let column = kernel(
                std::array::from_fn(|k| d[k * 8 + u]),
                CONST_BITS - PASS1_BITS,
            );
            for (k, value) in column.into_iter().enumerate() {
                ws[k * 8 + u] = value;
            }
        }
    }
    // Pass 2: rows, then the level shift with a clamp to 0..=255.
    for r in 0..8 {
        let row = kernel(
            std::array::from_fn(|k| ws[r * 8 + k]),
            CONST_BITS + PASS1_BITS + 3,
        );
        for (k, value) in row.into_iter().enumerate() {
            out[r * stride + k] = (value.clamp(-128, 127) + 128) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
