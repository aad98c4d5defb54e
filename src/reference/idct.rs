//! Dequantisation + inverse DCT: libjpeg-turbo's ISLOW (`jidctint.c`, PARITY §2a), with the
//! 16-bit lanes of its AVX2 version, which is what Pillow's x86-64 wheels run.
//!
//! For valid data the 16-bit lanes never overflow and this equals the C code. Corrupt files can
//! carry coefficients that do overflow, and Pillow decodes them with the SIMD behaviour, so the
//! reference keeps it: dequantised values wrap to 16 bits, so do the sums the SIMD code forms in
//! 16-bit lanes, and each pass saturates its outputs to 16 bits (`packssdw`). Products and the
//! other sums are i32 that wrap (as WGSL's i32 does); descales are arithmetic shifts.

// On x86-64 the SSE2 version of ISLOW runs (`FAST_ISLOW`): the scalar one here, and what only
// it uses, is then the spec that version is tested equal to, unused outside tests.
#![cfg_attr(
    target_arch = "x86_64",
    allow(
        dead_code,
        reason = "the scalar ISLOW is the SSE2 version's spec there"
    )
)]

use std::num::Wrapping;

type W = Wrapping<i32>;

const CONST_BITS: u32 = 13;
const PASS1_BITS: u32 = 2;

#[cfg(any(test, not(target_arch = "x86_64")))]
const FIX_0_298631336: i32 = 2446;
#[cfg(any(test, not(target_arch = "x86_64")))]
const FIX_0_390180644: i32 = 3196;
#[cfg(any(test, not(target_arch = "x86_64")))]
const FIX_0_541196100: i32 = 4433;
const FIX_0_765366865: i32 = 6270;
const FIX_0_899976223: i32 = 7373;
#[cfg(any(test, not(target_arch = "x86_64")))]
const FIX_1_175875602: i32 = 9633;
#[cfg(any(test, not(target_arch = "x86_64")))]
const FIX_1_501321110: i32 = 12299;
const FIX_1_847759065: i32 = 15137;
#[cfg(any(test, not(target_arch = "x86_64")))]
const FIX_1_961570560: i32 = 16069;
#[cfg(any(test, not(target_arch = "x86_64")))]
const FIX_2_053119869: i32 = 16819;
const FIX_2_562915447: i32 = 20995;
#[cfg(any(test, not(target_arch = "x86_64")))]
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

// On x86-64 the SSE2 version of ISLOW runs (`FAST_ISLOW`): the scalar one, and what only it
// uses, is then the spec that version is tested equal to, compiled for tests only.
/// The 1-D 8-point kernel on 16-bit inputs, descaled by `shift` and saturated to 16 bits.
#[cfg(any(test, not(target_arch = "x86_64")))]
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
#[cfg(any(test, not(target_arch = "x86_64")))]
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

/// libjpeg's IDCT range limit for the C (non-SIMD) 1×1 IDCT: the +128 level shift and a clamp,
/// wrapping mod 1024 as its table does (`prepare_range_limit_table`, RANGE_MASK = 1023).
#[inline]
pub fn range_limit(x: i32) -> u8 {
    match x & 1023 {
        m @ 0..=127 => (m + 128) as u8,
        128..=511 => 255,
        512..=895 => 0,
        m => (m - 896) as u8,
    }
}

/// Dequantised coefficient `i` as the SIMD code holds it: a 16-bit lane (`pmullw`).
#[inline]
fn dequantised16(coefs: &[i16; 64], quant: &[u16; 64], i: usize) -> i32 {
    wrap16(i32::from(coefs[i]) * i32::from(quant[i]))
}

/// The 4-point kernel of `jpeg_idct_4x4` on inputs 0, 1, 2, 3, 5, 6, 7 of an 8-point column or
/// row (input 4 is never used), before descaling; outputs in order 0..4.
#[inline]
fn kernel_4(x: [i32; 8]) -> [W; 4] {
    let tmp0 = Wrapping(x[0]) << (CONST_BITS + 1) as usize;
    let tmp2 = madd(x[2], FIX_1_847759065, x[6], -FIX_0_765366865);
    let (tmp10, tmp12) = (tmp0 + tmp2, tmp0 - tmp2);
    let odd0 = madd(x[7], -1730, x[5], 11893) + madd(x[3], -17799, x[1], 8697);
    let odd2 = madd(x[7], -4176, x[5], -4926) + madd(x[3], FIX_0_899976223, x[1], FIX_2_562915447);
    [tmp10 + odd2, tmp12 + odd0, tmp12 - odd0, tmp10 - odd2]
}

/// libjpeg's reduced 4×4 IDCT (`jidctred.c`) as its SSE2 version computes it (16-bit
/// dequantisation, column shortcut, saturated pass outputs); used in draft mode.
pub fn idct_4x4(coefs: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let d: [i32; 64] = std::array::from_fn(|i| dequantised16(coefs, quant, i));
    let mut ws = [0i32; 32];
    // Rows 1, 2, 3, 5, 6, 7 all zero (row 4 is never used): flat columns, shifted in 16 bits.
    if [1, 2, 3, 5, 6, 7]
        .iter()
        .all(|&row| coefs[row * 8..row * 8 + 8] == [0; 8])
    {
        for (k, value) in ws.iter_mut().enumerate() {
            *value = wrap16(d[k % 8] << PASS1_BITS);
        }
    } else {
        for u in [0, 1, 2, 3, 5, 6, 7] {
            let column = kernel_4(std::array::from_fn(|k| d[k * 8 + u]));
            for (k, y) in column.into_iter().enumerate() {
                ws[k * 8 + u] = sat16(descale(y, CONST_BITS - PASS1_BITS + 1));
            }
        }
    }
    for r in 0..4 {
        let row = kernel_4(std::array::from_fn(|k| ws[r * 8 + k]));
        for (k, y) in row.into_iter().enumerate() {
            let value = descale(y, CONST_BITS + PASS1_BITS + 3 + 1);
            out[r * stride + k] = (value.clamp(-128, 127) + 128) as u8;
        }
    }
}

/// The 2-point kernel of `jpeg_idct_2x2` on inputs 0, 1, 3, 5, 7, before descaling.
#[inline]
fn kernel_2(x: [i32; 8]) -> [W; 2] {
    let tmp10 = Wrapping(x[0]) << (CONST_BITS + 2) as usize;
    let tmp0 = madd(x[1], 29692, x[3], -10426) + madd(x[5], 6967, x[7], -5906);
    [tmp10 + tmp0, tmp10 - tmp0]
}

/// libjpeg's reduced 2×2 IDCT (`jidctred.c`) as its SSE2 version computes it: 16-bit
/// dequantisation; between the passes the odd inputs are saturated to 16 bits while the DC term
/// stays 32-bit. Used in draft mode.
pub fn idct_2x2(coefs: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let d: [i32; 64] = std::array::from_fn(|i| dequantised16(coefs, quant, i));
    let mut ws = [0i32; 16];
    for u in [0, 1, 3, 5, 7] {
        let column = kernel_2(std::array::from_fn(|k| d[k * 8 + u]));
        for (k, y) in column.into_iter().enumerate() {
            ws[k * 8 + u] = descale(y, CONST_BITS - PASS1_BITS + 2);
        }
    }
    for r in 0..2 {
        let row = kernel_2(std::array::from_fn(|k| match k {
            0 => ws[r * 8],
            _ => sat16(ws[r * 8 + k]),
        }));
        for (k, y) in row.into_iter().enumerate() {
            let value = descale(y, CONST_BITS + PASS1_BITS + 3 + 2);
            out[r * stride + k] = (value.clamp(-128, 127) + 128) as u8;
        }
    }
}

/// libjpeg's 1×1 IDCT: the rounded DC average. It has no SIMD version: C arithmetic, with the
/// 16-bit quantisation table of ISLOW and its wrapping range-limit table.
pub fn idct_1x1(coefs: &[i16; 64], quant: &[u16; 64], out: &mut [u8], _stride: usize) {
    let dc = Wrapping(i32::from(coefs[0])) * Wrapping(i32::from(quant[0] as i16));
    out[0] = range_limit(descale(dc, 3));
}

/// An IDCT: dequantises a block and writes its samples to `out[row * stride + col]`.
pub type Idct = fn(&[i16; 64], &[u16; 64], &mut [u8], usize);

/// The ISLOW the CPU path runs: the SSE2 one where the CPU has it (same results, faster).
#[cfg(target_arch = "x86_64")]
const FAST_ISLOW: Idct = super::sse2::idct::idct_islow;
#[cfg(not(target_arch = "x86_64"))]
const FAST_ISLOW: Idct = idct_islow;

/// The IDCT that produces `size`×`size` samples per block (8, 4, 2 or 1).
pub fn idct_of_size(size: usize) -> Idct {
    match size {
        8 => FAST_ISLOW,
        4 => idct_4x4,
        2 => idct_2x2,
        _ => idct_1x1,
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
        assert_eq!(range_limit(-300), 0);
        // The table wraps mod 1024: -600 lands where +424 does.
        assert_eq!(range_limit(-600), 255);
        assert_eq!(range_limit(-1), 127);
        // Past ±512 the table wraps: 1024 & 1023 is 0.
        assert_eq!(range_limit(1024), 128);
    }

    #[test]
    fn reduced_idcts_of_a_dc_block_are_flat() {
        let mut coefs = [0i16; 64];
        coefs[0] = 10;
        let mut quant = [1u16; 64];
        quant[0] = 16;
        for size in [4, 2, 1] {
            let mut out = [0u8; 16];
            idct_of_size(size)(&coefs, &quant, &mut out, size);
            assert!(
                out[..size * size].iter().all(|&v| v == 148),
                "{size}: {out:?}"
            );
        }
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
