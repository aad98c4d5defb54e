//! shaders/float.wgsl: float32 products and fused multiply-adds of non-negative numbers in 32-bit
//! integers, rounded once as IEEE 754 rounds them (GaussianBlur's kernel and its sums, as torch's
//! CPU computes them). Its mirror is Rust's own `f32` `*` and `mul_add`: the test below holds both
//! functions of the shader to them on a real adapter.

/// The shader's functions (they need shaders/double.wgsl's 64-bit integer helpers before them).
pub(super) const SOURCE: &str = include_str!("../../shaders/float.wgsl");

#[cfg(test)]
mod tests {
    use super::SOURCE;
    use crate::gpu::dispatch::run_test_shader;

    /// The test's entry point: per case (a, b, v, sum), a · b and v · b + sum.
    const CASES: &str = r"
@group(0) @binding(0) var<storage, read> cases: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> results: array<vec4<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= arrayLength(&cases) {
        return;
    }
    let c = cases[i];
    results[i] = vec4<u32>(f_mul(c.x, c.y), f_fma_u8(c.z, c.y, c.w), 0u, 0u);
}
";

    /// Non-negative float32 bits across the whole range: zeros, subnormals, normals; short
    /// significands a quarter of the time (exact products, ties).
    fn random_float(next: &mut impl FnMut() -> u64, k: u64) -> u32 {
        let r = next();
        let mut fraction = (r as u32) & 0x7F_FFFF;
        if k.is_multiple_of(4) {
            fraction &= !((1u32 << (next() % 23)) - 1);
        }
        let biased = match k % 5 {
            0 => 0,                          // subnormal
            1 => 100 + (next() % 40) as u32, // kernel weights
            2 => 120 + (next() % 15) as u32, // running sums of pixel values
            _ => (next() % 140) as u32,      // anywhere below 2^13
        };
        (biased << 23) | fraction
    }

    fn cases() -> Vec<[u32; 4]> {
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let special = [
            0.0f32,
            1.0,
            0.5,
            1.5,
            255.0,
            127.5,
            2.0f32.powi(-24),
            1.0 + 2.0f32.powi(-23),
            f32::from_bits(1),
            f32::from_bits(0x7F_FFFF),
            f32::MIN_POSITIVE,
            0.1,
            0.370_997_64,
        ];
        let mut cases = Vec::new();
        for &a in &special {
            for &b in &special {
                for v in [0u32, 1, 2, 3, 127, 255] {
                    cases.push([a.to_bits(), b.to_bits(), v, a.to_bits()]);
                }
            }
        }
        for k in 0..400_000u64 {
            let a = random_float(&mut next, k);
            let b = random_float(&mut next, k / 5);
            let sum = random_float(&mut next, k / 25);
            cases.push([a, b, (next() % 256) as u32, sum]);
        }
        cases
    }

    #[test]
    fn products_and_fused_sums_are_rusts_f32() {
        let Some(gpu) = crate::gpu::context::test_gpu() else {
            return;
        };
        let cases = cases();
        let words: Vec<u32> = cases.iter().flatten().copied().collect();
        let source = format!("{}{SOURCE}{CASES}", super::super::double::SOURCE);
        let got = run_test_shader(&gpu, &source, &words, 4, cases.len() * 4);
        let mut ties = 0;
        for (i, c) in cases.iter().enumerate() {
            let (a, b, v, sum) = (
                f32::from_bits(c[0]),
                f32::from_bits(c[1]),
                c[2],
                f32::from_bits(c[3]),
            );
            let product = a * b;
            let fused = (v as f32).mul_add(b, sum);
            let case = format!(
                "{a:e} ({:#x}), {b:e} ({:#x}), {v}, {sum:e} ({:#x})",
                c[0], c[1], c[3]
            );
            assert_eq!(got[4 * i], product.to_bits(), "{case}: a * b");
            assert_eq!(got[4 * i + 1], fused.to_bits(), "{case}: v * b + sum");
            // Sums that land halfway between two floats (the rounding that breaks the tie).
            let exact = f64::from(v) * f64::from(b) + f64::from(sum);
            ties += usize::from(exact as f32 != fused && f64::from(fused) != exact);
        }
        assert!(ties > 0 || cases.len() < 1000, "no case rounded");
    }
}
