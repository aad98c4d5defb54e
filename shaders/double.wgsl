// IEEE 754 binary64 arithmetic in 32-bit integers, rounded to nearest, ties to even, as C's
// doubles on x86-64 compute it: Pillow's filtered affine maps and its perspective maps work in
// doubles (libImaging/Geometry.c), and WGSL has no f64 on most adapters. Mirrored by Rust's own f64 (src/gpu/double.rs
// holds every function here to it). A double is its bits, vec2<u32>(low word, high word). Only zero
// and normal numbers occur: the plan keeps a map's matrix to those, and its coordinates and
// interpolations stay far from overflow and underflow; a subnormal reads as a zero.

// 64-bit unsigned integers as vec2<u32>(low word, high word).
fn u64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let low = a.x + b.x;
    return vec2<u32>(low, a.y + b.y + select(0u, 1u, low < a.x));
}

fn u64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

fn u64_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

fn u64_is_zero(a: vec2<u32>) -> bool {
    return (a.x | a.y) == 0u;
}

// `a << n` for n < 64.
fn u64_shl(a: vec2<u32>, n: u32) -> vec2<u32> {
    if n == 0u {
        return a;
    }
    if n >= 32u {
        return vec2<u32>(0u, a.x << (n - 32u));
    }
    return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}

// `a >> n` for n < 64.
fn u64_shr(a: vec2<u32>, n: u32) -> vec2<u32> {
    if n == 0u {
        return a;
    }
    if n >= 32u {
        return vec2<u32>(a.y >> (n - 32u), 0u);
    }
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}

// `a >> n` for any n, bit 0 set where a bit that is shifted out was (the sticky bit rounding
// needs).
fn u64_shr_sticky(a: vec2<u32>, n: u32) -> vec2<u32> {
    if n == 0u {
        return a;
    }
    if n >= 64u {
        return vec2<u32>(select(0u, 1u, !u64_is_zero(a)), 0u);
    }
    let kept = u64_shr(a, n);
    let lost = any(u64_shl(kept, n) != a);
    return vec2<u32>(kept.x | select(0u, 1u, lost), kept.y);
}

fn u64_leading_zeros(a: vec2<u32>) -> u32 {
    if a.y != 0u {
        return countLeadingZeros(a.y);
    }
    return 32u + countLeadingZeros(a.x);
}

// a · b as 64 bits, in 16-bit halves.
fn u32_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xFFFFu;
    let a1 = a >> 16u;
    let b0 = b & 0xFFFFu;
    let b1 = b >> 16u;
    let middle = u64_add(vec2<u32>(a0 * b1, 0u), vec2<u32>(a1 * b0, 0u));
    let low = u64_add(vec2<u32>(a0 * b0, a1 * b1), u64_shl(middle, 16u));
    return low;
}

// A double taken apart: its value is significand · 2^exponent, the significand 0 (a zero) or in
// [2^52, 2^53).
struct Unpacked {
    negative: bool,
    exponent: i32,
    significand: vec2<u32>,
}

fn d_unpack(d: vec2<u32>) -> Unpacked {
    let negative = (d.y >> 31u) == 1u;
    let biased = (d.y >> 20u) & 0x7FFu;
    if biased == 0u {
        return Unpacked(negative, 0, vec2<u32>(0u, 0u));
    }
    return Unpacked(negative, i32(biased) - 1075, vec2<u32>(d.x, (d.y & 0xFFFFFu) | 0x100000u));
}

fn d_zero(negative: bool) -> vec2<u32> {
    return vec2<u32>(0u, select(0u, 0x80000000u, negative));
}

// The double nearest m · 2^exponent (ties to even) for m > 0, whose bit 0 may be a sticky bit
// standing for lower bits: its callers set that bit only where m's leading one is at bit 54 or
// above, so that it lies below the bit that decides the rounding.
fn d_round(negative: bool, exponent: i32, m: vec2<u32>) -> vec2<u32> {
    let shift = u64_leading_zeros(m);
    let top = u64_shl(m, shift);
    var significand = u64_shr(top, 11u);
    var e = exponent - i32(shift) + 11;
    let rest = top.x & 0x7FFu;
    if rest > 0x400u || (rest == 0x400u && (significand.x & 1u) == 1u) {
        significand = u64_add(significand, vec2<u32>(1u, 0u));
        if significand.y == 0x200000u {
            significand = u64_shr(significand, 1u);
            e += 1;
        }
    }
    let biased = u32(e + 1075);
    let sign = select(0u, 0x80000000u, negative);
    return vec2<u32>(significand.x, sign | (biased << 20u) | (significand.y & 0xFFFFFu));
}

fn d_from_i32(v: i32) -> vec2<u32> {
    if v == 0 {
        return d_zero(false);
    }
    return d_round(v < 0, 0, vec2<u32>(u32(abs(v)), 0u));
}

fn d_neg(a: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x, a.y ^ 0x80000000u);
}

fn d_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    var x = d_unpack(a);
    var y = d_unpack(b);
    if u64_is_zero(y.significand) {
        if u64_is_zero(x.significand) {
            return d_zero(x.negative && y.negative);
        }
        return a;
    }
    if u64_is_zero(x.significand) {
        return b;
    }
    // x the larger in magnitude.
    if x.exponent < y.exponent
        || (x.exponent == y.exponent && u64_less(x.significand, y.significand)) {
        let t = x;
        x = y;
        y = t;
    }
    // Both significands' leading ones at bit 62, the smaller's aligned to the larger's: ten
    // places below the 53 kept for rounding. A difference loses leading bits only where the
    // alignment shifted by at most one place, which keeps every bit.
    let larger = u64_shl(x.significand, 10u);
    let smaller = u64_shr_sticky(u64_shl(y.significand, 10u), u32(x.exponent - y.exponent));
    var m: vec2<u32>;
    if x.negative == y.negative {
        m = u64_add(larger, smaller);
    } else {
        m = u64_sub(larger, smaller);
        if u64_is_zero(m) {
            return d_zero(false);
        }
    }
    return d_round(x.negative, x.exponent - 10, m);
}

fn d_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return d_add(a, d_neg(b));
}

fn d_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let x = d_unpack(a);
    let y = d_unpack(b);
    let negative = x.negative != y.negative;
    if u64_is_zero(x.significand) || u64_is_zero(y.significand) {
        return d_zero(negative);
    }
    // The 106-bit product in four words w0..w3.
    let ll = u32_mul_wide(x.significand.x, y.significand.x);
    let lh = u32_mul_wide(x.significand.x, y.significand.y);
    let hl = u32_mul_wide(x.significand.y, y.significand.x);
    let hh = u32_mul_wide(x.significand.y, y.significand.y);
    let w1 = u64_add(u64_add(vec2<u32>(ll.y, 0u), vec2<u32>(lh.x, 0u)), vec2<u32>(hl.x, 0u));
    let high = u64_add(u64_add(u64_add(vec2<u32>(lh.y, 0u), vec2<u32>(hl.y, 0u)), hh), vec2<u32>(w1.y, 0u));
    // Its bits 105..42, with the 42 below as a sticky bit.
    let sticky = select(0u, 1u, ll.x != 0u || (w1.x & 0x3FFu) != 0u);
    let m = vec2<u32>((w1.x >> 10u) | (high.x << 22u) | sticky, (high.x >> 10u) | (high.y << 22u));
    return d_round(negative, x.exponent + y.exponent + 42, m);
}

// a < b (a zero of either sign equals the other).
fn d_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    let x = d_unpack(a);
    let y = d_unpack(b);
    let x_negative = x.negative && !u64_is_zero(x.significand);
    let y_negative = y.negative && !u64_is_zero(y.significand);
    if x_negative != y_negative {
        return x_negative;
    }
    let magnitude_a = vec2<u32>(a.x, a.y & 0x7FFFFFFFu) * select(0u, 1u, !u64_is_zero(x.significand));
    let magnitude_b = vec2<u32>(b.x, b.y & 0x7FFFFFFFu) * select(0u, 1u, !u64_is_zero(y.significand));
    if x_negative {
        return u64_less(magnitude_b, magnitude_a);
    }
    return u64_less(magnitude_a, magnitude_b);
}

// One step of `d_div`'s long division: the quotient's next bit.
fn division_step(q: ptr<function, vec2<u32>>, r: ptr<function, vec2<u32>>, divisor: vec2<u32>) {
    *r = u64_shl(*r, 1u);
    *q = u64_shl(*q, 1u);
    if !u64_less(*r, divisor) {
        *r = u64_sub(*r, divisor);
        (*q).x |= 1u;
    }
}

// a / b for b not zero: the quotient of the significands to 56 bits by long division (eight bits
// a turn, so that llvmpipe counts seven loop iterations, not 56), the remainder's being non-zero
// its sticky bit. An exact quotient never lies halfway between two doubles (it would need 54
// significant bits), so the sticky bit decides every rounding the remaining bits leave open.
fn d_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let x = d_unpack(a);
    let y = d_unpack(b);
    let negative = x.negative != y.negative;
    if u64_is_zero(x.significand) {
        return d_zero(negative);
    }
    // x.significand / y.significand lies in (1/2, 2): its whole part, then 56 more bits.
    var q = vec2<u32>(0u, 0u);
    var r = x.significand;
    if !u64_less(r, y.significand) {
        r = u64_sub(r, y.significand);
        q.x = 1u;
    }
    for (var turn = 0u; turn < 7u; turn++) {
        division_step(&q, &r, y.significand);
        division_step(&q, &r, y.significand);
        division_step(&q, &r, y.significand);
        division_step(&q, &r, y.significand);
        division_step(&q, &r, y.significand);
        division_step(&q, &r, y.significand);
        division_step(&q, &r, y.significand);
        division_step(&q, &r, y.significand);
    }
    q.x |= select(0u, 1u, !u64_is_zero(r));
    return d_round(negative, x.exponent - y.exponent - 56, q);
}

// floor(a), for |a| below 2^31 (whose exponent is below -21).
fn d_floor(a: vec2<u32>) -> i32 {
    let x = d_unpack(a);
    if u64_is_zero(x.significand) {
        return 0;
    }
    let shift = u32(min(-x.exponent, 64));
    var whole = vec2<u32>(0u, 0u);
    var fraction = true;
    if shift < 64u {
        whole = u64_shr(x.significand, shift);
        fraction = any(u64_shl(whole, shift) != x.significand);
    }
    if x.negative {
        return -i32(whole.x) - select(0, 1, fraction);
    }
    return i32(whole.x);
}
