// IEEE 754 binary32 products and fused multiply-adds of non-negative numbers in 32-bit integers,
// rounded once to nearest, ties to even, subnormals included: torch's CPU GaussianBlur sums its
// kernel's products with fused multiply-adds, and WGSL's `fma` and `*` may fuse, flush
// subnormals or round twice. Mirrored by Rust's f32 `*` and `mul_add` (src/gpu/float.rs holds
// both functions to them on a real adapter). Results must stay below 2^128 (no overflow to
// infinity here): the blur's weights are at most 1. Needs double.wgsl's 64-bit integer helpers.

// A non-negative float32 as significand · 2^exponent: the significand in [2^23, 2^24) for a
// normal number, below 2^23 for a subnormal, 0 for a zero.
struct Float {
    significand: u32,
    exponent: i32,
}

fn f_unpack(bits: u32) -> Float {
    let biased = (bits >> 23u) & 0xFFu;
    if biased == 0u {
        return Float(bits & 0x7FFFFFu, -149);
    }
    return Float((bits & 0x7FFFFFu) | 0x800000u, i32(biased) - 150);
}

// The float32 nearest m · 2^exponent (ties to even), m > 0; bit 0 of m may stand for lower bits
// (a sticky bit): its callers set it only where m's leading one is at bit 26 or above.
fn f_round(m: vec2<u32>, exponent: i32) -> u32 {
    let top = 63 - i32(u64_leading_zeros(m));
    // The kept bits' lowest place: 24 bits from the top, or the subnormals' fixed place.
    var lowest = max(top + exponent - 23, -149);
    let shift = lowest - exponent;
    var kept: u32;
    if shift <= 0 {
        kept = u64_shl(m, u32(-shift)).x;
    } else if shift >= 64 {
        // All of m lies below half the smallest subnormal, or (shift 64) at or past it.
        let over_half = u64_less(vec2<u32>(0u, 0x80000000u), m);
        return select(0u, 1u, shift == 64 && over_half);
    } else {
        let whole = u64_shr(m, u32(shift));
        let rest = u64_sub(m, u64_shl(whole, u32(shift)));
        let half = u64_shl(vec2<u32>(1u, 0u), u32(shift - 1));
        kept = whole.x;
        let tie = all(rest == half);
        if u64_less(half, rest) || (tie && (kept & 1u) == 1u) {
            kept += 1u;
        }
    }
    if kept == 0x1000000u {
        kept = 0x800000u;
        lowest += 1;
    }
    if kept < 0x800000u {
        return kept;
    }
    return (u32(lowest + 150) << 23u) | (kept & 0x7FFFFFu);
}

// a · b for non-negative float32 bits a and b.
fn f_mul(a: u32, b: u32) -> u32 {
    let x = f_unpack(a);
    let y = f_unpack(b);
    if x.significand == 0u || y.significand == 0u {
        return 0u;
    }
    return f_round(u32_mul_wide(x.significand, y.significand), x.exponent + y.exponent);
}

// v · w + sum for an integer v in 0..=255 and non-negative float32 bits w and sum, rounded
// once.
fn f_fma_u8(v: u32, w: u32, sum: u32) -> u32 {
    let weight = f_unpack(w);
    let product = v * weight.significand;
    if product == 0u {
        return sum;
    }
    let s = f_unpack(sum);
    if s.significand == 0u {
        return f_round(vec2<u32>(product, 0u), weight.exponent);
    }
    // Both terms with their leading one at bit 62; the lower one shifted to the higher one's
    // places, what it loses kept as a sticky bit far below the rounding.
    let p_shift = u64_leading_zeros(vec2<u32>(product, 0u)) - 1u;
    let s_shift = u64_leading_zeros(vec2<u32>(s.significand, 0u)) - 1u;
    let p = u64_shl(vec2<u32>(product, 0u), p_shift);
    let q = u64_shl(vec2<u32>(s.significand, 0u), s_shift);
    let p_exponent = weight.exponent - i32(p_shift);
    let q_exponent = s.exponent - i32(s_shift);
    if p_exponent >= q_exponent {
        return f_round(u64_add(p, u64_shr_sticky(q, u32(p_exponent - q_exponent))), p_exponent);
    }
    return f_round(u64_add(q, u64_shr_sticky(p, u32(q_exponent - p_exponent))), q_exponent);
}
