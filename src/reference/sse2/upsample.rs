//! libjpeg's fancy chroma upsampling ([`crate::reference::upsample`]'s row filters) with SSE2,
//! eight source samples (sixteen outputs) at a time.

use std::arch::x86_64::*;

/// Eight bytes from `row[i..]`, widened to 16-bit lanes.
#[inline]
#[target_feature(enable = "sse2")]
fn widened(row: &[u8], i: usize) -> __m128i {
    let bytes = u64::from_le_bytes(row[i..i + 8].try_into().unwrap());
    _mm_unpacklo_epi8(_mm_cvtsi64_si128(bytes as i64), _mm_setzero_si128())
}

/// Eight 16-bit lanes from `row[i..]`.
fn lanes(row: &[i16], i: usize) -> __m128i {
    bytemuck::cast(<[i16; 8]>::try_from(&row[i..i + 8]).unwrap())
}

/// Writes the column sums `3 * near[i] + far[i]` (the vertical half of h2v2) into
/// `padded[1..=n]`, `n` = `near.len()`; the caller pads the ends.
#[allow(unsafe_code, reason = "calling an SSE2 function; see the SAFETY note")]
pub fn column_sums(near: &[u8], far: &[u8], padded: &mut [i16]) {
    // SAFETY: SSE2 is part of the x86-64 baseline, so every CPU this code runs on has it.
    unsafe { column_sums_sse2(near, far, padded) }
}

#[target_feature(enable = "sse2")]
fn column_sums_sse2(near: &[u8], far: &[u8], padded: &mut [i16]) {
    let n = near.len();
    let simd = n - n % 8;
    for i in (0..simd).step_by(8) {
        let sums = column_sums8(near, far, i);
        padded[1 + i..9 + i].copy_from_slice(&bytemuck::cast::<_, [i16; 8]>(sums));
    }
    for i in simd..n {
        padded[1 + i] = 3 * i16::from(near[i]) + i16::from(far[i]);
    }
}

#[inline]
#[target_feature(enable = "sse2")]
fn column_sums8(near: &[u8], far: &[u8], i: usize) -> __m128i {
    let near = widened(near, i);
    _mm_add_epi16(
        _mm_add_epi16(near, _mm_add_epi16(near, near)),
        widened(far, i),
    )
}

/// The horizontal triangle filter: for each of the `n` samples of `padded[1..=n]` (ends
/// repeated at 0 and n + 1), outputs `(3 * s[i] + s[i - 1] + even_bias) >> SHIFT` and
/// `(3 * s[i] + s[i + 1] + odd_bias) >> SHIFT` into `out[2i]` and `out[2i + 1]`.
#[allow(unsafe_code, reason = "calling an SSE2 function; see the SAFETY note")]
pub fn fancy_row<const SHIFT: i32>(padded: &[i16], biases: [i16; 2], out: &mut [u8]) {
    // SAFETY: SSE2 is part of the x86-64 baseline, so every CPU this code runs on has it.
    unsafe { fancy_row_sse2::<SHIFT>(padded, biases, out) }
}

#[target_feature(enable = "sse2")]
fn fancy_row_sse2<const SHIFT: i32>(padded: &[i16], biases: [i16; 2], out: &mut [u8]) {
    let n = padded.len() - 2;
    let simd = n - n % 8;
    for i in (0..simd).step_by(8) {
        let pixels = fancy16::<SHIFT>(padded, biases, i);
        out[2 * i..2 * i + 16].copy_from_slice(&bytemuck::cast::<_, [u8; 16]>(pixels));
    }
    for i in simd..n {
        let centre = 3 * padded[i + 1];
        out[2 * i] = ((centre + padded[i] + biases[0]) >> SHIFT) as u8;
        out[2 * i + 1] = ((centre + padded[i + 2] + biases[1]) >> SHIFT) as u8;
    }
}

#[inline]
#[target_feature(enable = "sse2")]
fn fancy16<const SHIFT: i32>(padded: &[i16], [even_bias, odd_bias]: [i16; 2], i: usize) -> __m128i {
    let centre = lanes(padded, i + 1);
    let centre3 = _mm_add_epi16(centre, _mm_add_epi16(centre, centre));
    let even = _mm_add_epi16(
        _mm_add_epi16(centre3, lanes(padded, i)),
        _mm_set1_epi16(even_bias),
    );
    let odd = _mm_add_epi16(
        _mm_add_epi16(centre3, lanes(padded, i + 2)),
        _mm_set1_epi16(odd_bias),
    );
    let even = _mm_srai_epi16::<SHIFT>(even);
    let odd = _mm_srai_epi16::<SHIFT>(odd);
    let zero = _mm_setzero_si128();
    _mm_unpacklo_epi8(_mm_packus_epi16(even, zero), _mm_packus_epi16(odd, zero))
}
