//! shaders/double.wgsl: IEEE 754 binary64 arithmetic in 32-bit integers, for the stages whose
//! Pillow arithmetic is in C doubles (a filtered affine map). Its mirror is Rust's own `f64`,
//! which rounds every operation as C's doubles on x86-64 do: the test below holds each function
//! of the shader to it on a real adapter.

/// The shader's functions, compiled before the stages that use them.
pub(super) const SOURCE: &str = include_str!("../../shaders/double.wgsl");

#[cfg(test)]
mod tests {
    use super::SOURCE;
    use crate::gpu::dispatch::run_test_shader;

    /// The test's entry point: per pair (a, b), a + b, a − b, a · b, floor(a), a < b, the
    /// double of `bitcast<i32>(a's low word)` (the conversion from an integer) and a / b (b not
    /// zero).
    const CASES: &str = r"
@group(0) @binding(0) var<storage, read> pairs: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> results: array<vec4<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= arrayLength(&pairs) {
        return;
    }
    let a = pairs[i].xy;
    let b = pairs[i].zw;
    results[3u * i] = vec4<u32>(d_add(a, b), d_sub(a, b));
    results[3u * i + 1u] = vec4<u32>(d_mul(a, b), u32(d_floor(a)), select(0u, 1u, d_less(a, b)));
    var quotient = vec2<u32>(0u, 0u);
    if (b.y & 0x7FF00000u) != 0u {
        quotient = d_div(a, b);
    }
    results[3u * i + 2u] = vec4<u32>(d_from_i32(bitcast<i32>(a.x)), quotient);
}
";

    fn bits(v: f64) -> [u32; 2] {
        let b = v.to_bits();
        [b as u32, (b >> 32) as u32]
    }

    /// Doubles like the maps' (coordinates, fractions, pixel values and their differences) and
    /// edge cases of rounding: ties, carries into the next power of two, cancellation, zeros of
    /// both signs, far-apart magnitudes.
    fn pairs() -> Vec<(f64, f64)> {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut pairs = Vec::new();
        let special = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1.5,
            255.0,
            -255.0,
            2.0f64.powi(-53),
            1.0 + 2.0f64.powi(-52),
            1.0 - 2.0f64.powi(-53),
            3.0 * 2.0f64.powi(-54),
            0.1,
            223.99999999999997,
            1e-300,
            1e300,
            f64::MIN_POSITIVE,
        ];
        for &a in &special {
            for &b in &special {
                pairs.push((a, b));
            }
        }
        for k in 0..400_000 {
            let r = next();
            // Random significands, short ones (exact products, ties) a quarter of the time.
            let mut significand = (r >> 12) | (1 << 52);
            if k % 4 == 0 {
                significand &= !((1u64 << (next() % 52)) - 1);
            }
            let exponent = (next() % 80) as i32 - 40;
            let a = significand as f64 * 2f64.powi(exponent - 52);
            let a = if r & 1 == 1 { -a } else { a };
            let b = match k % 5 {
                // Close to a (cancellation), a tie away, or a random neighbour.
                0 => a * (1.0 + (next() % 16) as f64 * 2f64.powi(-52)),
                1 => -a + (next() % 1024) as f64 * a.abs() * 2f64.powi(-50),
                2 => a * 2f64.powi(-53 - (next() % 4) as i32),
                3 => (next() % 511) as f64 - 255.0,
                _ => {
                    let s = (next() >> 12) | (1 << 52);
                    let e = (next() % 80) as i32 - 40;
                    s as f64 * 2f64.powi(e - 52) * if next() & 1 == 1 { -1.0 } else { 1.0 }
                }
            };
            pairs.push((a, b));
        }
        pairs.extend(near_tie_products(&mut next));
        pairs
    }

    /// Pairs whose exact product lies just above halfway between two doubles, by a few of
    /// its lowest bits only (which rounding must still see): significands solved modulo 2^53
    /// (2^52 for products below 2^105) for such low bits.
    fn near_tie_products(next: &mut impl FnMut() -> u64) -> Vec<(f64, f64)> {
        let mut pairs = Vec::new();
        while pairs.len() < 2000 {
            let a = (next() >> 11) | (1 << 52) | 1;
            let inverse = (0..6).fold(a, |x, _| {
                x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)))
            });
            let low = next() % (1 << 32) + 1;
            let wide = pairs.len() % 2 == 0;
            let (bits, half) = if wide { (53, 52) } else { (52, 51) };
            let target = (1u64 << half) + low;
            let b = target.wrapping_mul(inverse) & ((1 << bits) - 1) | (1 << 52);
            if b >> 53 != 0 {
                continue;
            }
            let product = u128::from(a) * u128::from(b);
            let top = 127 - product.leading_zeros();
            if (top == 105) == wide && product & ((1 << (half + 1)) - 1) == u128::from(target) {
                pairs.push((a as f64, b as f64 * 2f64.powi(-60)));
            }
        }
        pairs
    }

    #[test]
    fn every_function_is_rusts_f64() {
        let Some(gpu) = crate::gpu::context::test_gpu() else {
            return;
        };
        let pairs = pairs();
        let words: Vec<u32> = pairs
            .iter()
            .flat_map(|&(a, b)| [bits(a), bits(b)].concat())
            .collect();
        let source = format!("{SOURCE}{CASES}");
        let got = run_test_shader(&gpu, &source, &words, 4, pairs.len() * 12);
        let double = |w: &[u32]| f64::from_bits(u64::from(w[0]) | u64::from(w[1]) << 32);
        let (mut checked_floors, mut checked_quotients) = (0, 0);
        for (i, &(a, b)) in pairs.iter().enumerate() {
            let r = &got[12 * i..12 * i + 12];
            // A subnormal is read as a zero: only the cases that keep clear of them count.
            let normal = |v: f64| v == 0.0 || v.abs() >= f64::MIN_POSITIVE;
            let case = format!("{a:e} ({:?}), {b:e} ({:?})", bits(a), bits(b));
            if normal(a) && normal(b) {
                for (name, want, at) in [("+", a + b, 0), ("-", a - b, 2), ("*", a * b, 4)] {
                    // Products too small for a normal double are outside the shader's range.
                    let underflows = name == "*" && a * b != 0.0 && want.abs() < 2f64.powi(-1000)
                        || name == "*" && want == 0.0 && a != 0.0 && b != 0.0;
                    if normal(want) && want.is_finite() && !underflows {
                        assert_eq!(
                            double(&r[at..]).to_bits(),
                            want.to_bits(),
                            "{case}: {name} gives {:e}, not {want:e}",
                            double(&r[at..])
                        );
                    }
                }
                assert_eq!(r[7] == 1, a < b, "{case}: <");
                let quotient = a / b;
                if b != 0.0
                    && normal(quotient)
                    && quotient.is_finite()
                    && (a == 0.0) == (quotient == 0.0)
                {
                    assert_eq!(
                        double(&r[10..]).to_bits(),
                        quotient.to_bits(),
                        "{case}: / gives {:e}, not {quotient:e}",
                        double(&r[10..])
                    );
                    checked_quotients += 1;
                }
            }
            if a.abs() < 2f64.powi(31) && normal(a) {
                assert_eq!(r[6] as i32, a.floor() as i32, "{case}: floor");
                checked_floors += 1;
            }
            let int = bits(a)[0] as i32;
            assert_eq!(double(&r[8..]), f64::from(int), "from {int}");
        }
        assert!(checked_floors > 100_000, "{checked_floors} floors checked");
        assert!(
            checked_quotients > 300_000,
            "{checked_quotients} quotients checked"
        );
    }
}
