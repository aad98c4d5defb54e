//! The ISLOW IDCT ([`crate::reference::idct::idct_islow`]) with SSE2, eight columns (then
//! eight rows) per instruction, the way libjpeg-turbo's SIMD code runs it: `pmullw`
//! dequantisation, `pmaddwd` rotations, 16-bit sums where the scalar spec wraps to 16 bits and
//! `packssdw` where it saturates. A test holds it equal to the spec, overflow cases included.

use std::arch::x86_64::*;

const CONST_BITS: i32 = 13;
const PASS1_BITS: i32 = 2;

const F0298: i16 = 2446;
const F0390: i16 = 3196;
const F0541: i16 = 4433;
const F0765: i16 = 6270;
const F0899: i16 = 7373;
const F1175: i16 = 9633;
const F1501: i16 = 12299;
const F1847: i16 = 15137;
const F1961: i16 = 16069;
const F2053: i16 = 16819;
const F2562: i16 = 20995;
const F3072: i16 = 25172;

/// Eight i32 lanes as two vectors (the low and high four 16-bit lanes, widened).
#[derive(Clone, Copy)]
struct I32x8(__m128i, __m128i);

impl I32x8 {
    #[target_feature(enable = "sse2")]
    fn add(self, o: Self) -> Self {
        Self(_mm_add_epi32(self.0, o.0), _mm_add_epi32(self.1, o.1))
    }

    #[target_feature(enable = "sse2")]
    fn sub(self, o: Self) -> Self {
        Self(_mm_sub_epi32(self.0, o.0), _mm_sub_epi32(self.1, o.1))
    }

    /// DESCALE by `SHIFT` (rounding half up), then saturated back to 16-bit lanes.
    #[target_feature(enable = "sse2")]
    fn descale_saturated<const SHIFT: i32>(self) -> __m128i {
        let round = _mm_set1_epi32(1 << (SHIFT - 1));
        let lo = _mm_srai_epi32::<SHIFT>(_mm_add_epi32(self.0, round));
        let hi = _mm_srai_epi32::<SHIFT>(_mm_add_epi32(self.1, round));
        _mm_packs_epi32(lo, hi)
    }
}

/// a·x + b·y per lane, in 32 bits (`pmaddwd` on interleaved x, y).
#[target_feature(enable = "sse2")]
fn madd(x: __m128i, a: i16, y: __m128i, b: i16) -> I32x8 {
    let ab = _mm_set1_epi32(i32::from(a) & 0xffff | i32::from(b) << 16);
    I32x8(
        _mm_madd_epi16(_mm_unpacklo_epi16(x, y), ab),
        _mm_madd_epi16(_mm_unpackhi_epi16(x, y), ab),
    )
}

/// A 16-bit lane shifted left by CONST_BITS into 32 bits (sign-extended).
#[target_feature(enable = "sse2")]
fn widen_scaled(x: __m128i) -> I32x8 {
    let zero = _mm_setzero_si128();
    I32x8(
        _mm_srai_epi32::<{ 16 - CONST_BITS }>(_mm_unpacklo_epi16(zero, x)),
        _mm_srai_epi32::<{ 16 - CONST_BITS }>(_mm_unpackhi_epi16(zero, x)),
    )
}

/// The 1-D 8-point kernel across eight lanes, descaled by `SHIFT` and saturated.
#[target_feature(enable = "sse2")]
fn kernel<const SHIFT: i32>(x: [__m128i; 8]) -> [__m128i; 8] {
    // Even part.
    let tmp3 = madd(x[2], F0541 + F0765, x[6], F0541);
    let tmp2 = madd(x[2], F0541, x[6], F0541 - F1847);
    let tmp0 = widen_scaled(_mm_add_epi16(x[0], x[4]));
    let tmp1 = widen_scaled(_mm_sub_epi16(x[0], x[4]));
    let (e10, e13) = (tmp0.add(tmp3), tmp0.sub(tmp3));
    let (e11, e12) = (tmp1.add(tmp2), tmp1.sub(tmp2));
    // Odd part.
    let z3 = _mm_add_epi16(x[7], x[3]);
    let z4 = _mm_add_epi16(x[5], x[1]);
    let z3r = madd(z3, F1175 - F1961, z4, F1175);
    let z4r = madd(z3, F1175, z4, F1175 - F0390);
    let o0 = madd(x[7], F0298 - F0899, x[1], -F0899).add(z3r);
    let o1 = madd(x[5], F2053 - F2562, x[3], -F2562).add(z4r);
    let o2 = madd(x[5], -F2562, x[3], F3072 - F2562).add(z3r);
    let o3 = madd(x[7], -F0899, x[1], F1501 - F0899).add(z4r);
    [
        e10.add(o3),
        e11.add(o2),
        e12.add(o1),
        e13.add(o0),
        e13.sub(o0),
        e12.sub(o1),
        e11.sub(o2),
        e10.sub(o3),
    ]
    .map(|y| y.descale_saturated::<SHIFT>())
}

/// Transposes an 8×8 block of 16-bit lanes.
#[target_feature(enable = "sse2")]
fn transpose(r: [__m128i; 8]) -> [__m128i; 8] {
    let a = [
        _mm_unpacklo_epi16(r[0], r[1]),
        _mm_unpackhi_epi16(r[0], r[1]),
        _mm_unpacklo_epi16(r[2], r[3]),
        _mm_unpackhi_epi16(r[2], r[3]),
        _mm_unpacklo_epi16(r[4], r[5]),
        _mm_unpackhi_epi16(r[4], r[5]),
        _mm_unpacklo_epi16(r[6], r[7]),
        _mm_unpackhi_epi16(r[6], r[7]),
    ];
    let b = [
        _mm_unpacklo_epi32(a[0], a[2]),
        _mm_unpackhi_epi32(a[0], a[2]),
        _mm_unpacklo_epi32(a[1], a[3]),
        _mm_unpackhi_epi32(a[1], a[3]),
        _mm_unpacklo_epi32(a[4], a[6]),
        _mm_unpackhi_epi32(a[4], a[6]),
        _mm_unpacklo_epi32(a[5], a[7]),
        _mm_unpackhi_epi32(a[5], a[7]),
    ];
    [
        _mm_unpacklo_epi64(b[0], b[4]),
        _mm_unpackhi_epi64(b[0], b[4]),
        _mm_unpacklo_epi64(b[1], b[5]),
        _mm_unpackhi_epi64(b[1], b[5]),
        _mm_unpacklo_epi64(b[2], b[6]),
        _mm_unpackhi_epi64(b[2], b[6]),
        _mm_unpacklo_epi64(b[3], b[7]),
        _mm_unpackhi_epi64(b[3], b[7]),
    ]
}

/// [`crate::reference::idct::idct_islow`], eight lanes at a time.
#[allow(unsafe_code, reason = "calling an SSE2 function; see the SAFETY note")]
pub fn idct_islow(coefs: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    // SAFETY: SSE2 is part of the x86-64 baseline, so every CPU this code runs on has it.
    unsafe { islow_sse2(coefs, quant, out, stride) }
}

#[target_feature(enable = "sse2")]
fn islow_sse2(coefs: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let c: [__m128i; 8] = bytemuck::cast(*coefs);
    let q: [__m128i; 8] = bytemuck::cast(*quant);
    let d: [__m128i; 8] = std::array::from_fn(|k| _mm_mullo_epi16(c[k], q[k]));
    // Pass 1: columns, with the flat-column shortcut when rows 1..8 are all zero.
    let ac = c[1..]
        .iter()
        .fold(_mm_setzero_si128(), |acc, &r| _mm_or_si128(acc, r));
    let flat = _mm_movemask_epi8(_mm_cmpeq_epi16(ac, _mm_setzero_si128())) == 0xffff;
    let ws = if flat {
        [_mm_slli_epi16::<PASS1_BITS>(d[0]); 8]
    } else {
        kernel::<{ CONST_BITS - PASS1_BITS }>(d)
    };
    // Pass 2: rows (transposed into lanes), then back, the level shift and the clamp.
    let rows = transpose(kernel::<{ CONST_BITS + PASS1_BITS + 3 }>(transpose(ws)));
    let level = _mm_set1_epi8(-128);
    for (pair, chunk) in rows.chunks_exact(2).enumerate() {
        let bytes = _mm_xor_si128(_mm_packs_epi16(chunk[0], chunk[1]), level);
        let bytes: [u8; 16] = bytemuck::cast(bytes);
        out[2 * pair * stride..][..8].copy_from_slice(&bytes[..8]);
        out[(2 * pair + 1) * stride..][..8].copy_from_slice(&bytes[8..]);
    }
}

#[cfg(test)]
mod tests {
    use crate::reference::idct as spec;

    /// A deterministic stream of pseudo-random numbers (xorshift).
    fn numbers(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    fn assert_same(coefs: &[i16; 64], quant: &[u16; 64]) {
        let (mut simd, mut scalar) = ([0u8; 80], [0u8; 80]);
        super::idct_islow(coefs, quant, &mut simd, 10);
        spec::idct_islow(coefs, quant, &mut scalar, 10);
        assert_eq!(simd, scalar, "coefficients {coefs:?}, quant {quant:?}");
    }

    #[test]
    fn equals_the_spec_on_ordinary_blocks() {
        let mut next = numbers(0x9e37_79b9_7f4a_7c15);
        for case in 0..20_000 {
            let quant: [u16; 64] = std::array::from_fn(|_| 1 + (next() % 64) as u16);
            // Mostly small coefficients that thin out with frequency, as in real files.
            let coefs: [i16; 64] = std::array::from_fn(|i| {
                let keep = i == 0 || next() % 64 > (i as u64 + case % 3 * 20);
                if keep {
                    (next() % 512) as i16 - 256
                } else {
                    0
                }
            });
            assert_same(&coefs, &quant);
        }
    }

    #[test]
    fn equals_the_spec_where_16_bit_lanes_overflow() {
        let mut next = numbers(42);
        for _ in 0..20_000 {
            let quant: [u16; 64] = std::array::from_fn(|_| next() as u16);
            let coefs: [i16; 64] = std::array::from_fn(|_| next() as i16);
            assert_same(&coefs, &quant);
            let mut dc_only = [0i16; 64];
            dc_only[..8].copy_from_slice(&coefs[..8]);
            assert_same(&dc_only, &quant);
        }
    }
}
