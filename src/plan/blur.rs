//! The blurs. torchvision's `GaussianBlur`: its kernels in torch's float32 arithmetic: `_get_gaussian_kernel1d`
//! (`linspace`, `x / sigma`, `-0.5 * t.pow(2)`, `exp`, `pdf / pdf.sum()`, the sum in ATen's
//! `cascade_sum` order: four 8-lane partial sums, AVX2's width even on AVX-512 machines) per axis,
//! and `_get_gaussian_kernel2d`'s outer product, each weight one float32 product. Both are held
//! to real torch's (tests/goldens/gaussian_kernels.tsv, made by tools/gaussian_kernels.py).
//! transforms.v2's kernels: a softmax over another linspace ([`kernel1d_v2`], held to
//! tests/goldens/gaussian_kernels_v2.tsv).
//! Pillow's `ImageFilter.GaussianBlur` (timm's `GaussianBlurRand`): box blurs in fixed point
//! ([`BoxBlur`]).

use crate::transform::MAX_KERNEL;

/// One image's blur: its two 1D kernels, the parameters it is exact for. Drawn, they are
/// torchvision's kernels of the sigma drawn in gpuprep's float32 arithmetic (`kernel1d`);
/// given, whatever the caller recorded (torch's own, for instance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Blur {
    /// Kernel width and height: odd, 1..=[`MAX_KERNEL`](crate::MAX_KERNEL).
    pub kernel_size: (usize, usize),
    /// The horizontal kernel's weights, the first `kernel_size.0` of them.
    pub kernel_x: [f32; MAX_KERNEL],
    /// The vertical kernel's weights, the first `kernel_size.1` of them.
    pub kernel_y: [f32; MAX_KERNEL],
}

impl Blur {
    /// torchvision's kernels of `sigma` (one for both axes, as `GaussianBlur` passes it):
    /// transforms.v2's (`v2`) or v1's.
    pub fn drawn(kernel_size: (usize, usize), sigma: f32, v2: bool) -> Self {
        let kernel1d = if v2 { kernel1d_v2 } else { kernel1d };
        Self::given(
            &kernel1d(kernel_size.0, sigma),
            &kernel1d(kernel_size.1, sigma),
        )
        .expect("kernel sizes the transform checked")
    }

    /// A blur with these kernels: none unless both have an odd length up to [`MAX_KERNEL`](crate::MAX_KERNEL).
    pub fn given(x: &[f32], y: &[f32]) -> Option<Self> {
        let fits = |k: &[f32]| k.len() % 2 == 1 && k.len() <= MAX_KERNEL;
        if !fits(x) || !fits(y) {
            return None;
        }
        let mut blur = Self {
            kernel_size: (x.len(), y.len()),
            kernel_x: [0.0; MAX_KERNEL],
            kernel_y: [0.0; MAX_KERNEL],
        };
        blur.kernel_x[..x.len()].copy_from_slice(x);
        blur.kernel_y[..y.len()].copy_from_slice(y);
        Some(blur)
    }

    /// The 2D kernel, row-major: `kernel_size.1` rows of `kernel_size.0` weights, each the
    /// float32 product of its row's and column's weights (`_get_gaussian_kernel2d`'s `mm`).
    pub fn kernel(&self) -> Vec<f32> {
        let (kx, ky) = self.kernel_size;
        let x = &self.kernel_x[..kx];
        self.kernel_y[..ky]
            .iter()
            .flat_map(|&wy| x.iter().map(move |&wx| wy * wx))
            .collect()
    }
}

/// torchvision's `_get_gaussian_kernel1d(size, sigma)` in float32, each `exp` correctly rounded.
/// torch's x86-64 builds take `exp` from MKL, whose last bit differs from the correctly rounded
/// one for about 1% of arguments: then a weight differs in its last bits (46 of
/// the 976 kernels of tests/goldens/gaussian_kernels.tsv), and a blurred value by one in about
/// 1 of 7 million. Blurs given torch's own kernels are exact.
pub fn kernel1d(size: usize, sigma: f32) -> Vec<f32> {
    // linspace(-h, h, size) of an odd size steps by exactly 1: the integers -h..=h.
    let half = (size / 2) as f32;
    let pdf: Vec<f32> = (0..size)
        .map(|i| {
            let t = (i as f32 - half) / sigma;
            f64::from(-0.5 * (t * t)).exp() as f32
        })
        .collect();
    let total = aten_sum(&pdf);
    pdf.iter().map(|&p| p / total).collect()
}

/// transforms.v2's `_get_gaussian_kernel1d(size, sigma)` in float32, as torch computes it on an
/// x86-64 CPU with AVX-512: `x = linspace(-lim, lim, size)` with `lim = (size - 1) / (2√2)` (a
/// double, made float32 by torch), then `softmax(-(x / sigma)²)` as ATen's vectorised kernel makes
/// it: the largest exponent subtracted from each, each `exp` SLEEF's ([`sleef_expf`]), their sum
/// in `reduce_all`'s order over [`SOFTMAX_LANES`] lanes, and each weight the product by the
/// float32 reciprocal of the sum. Held to real torch's (tests/goldens/gaussian_kernels_v2.tsv).
pub fn kernel1d_v2(size: usize, sigma: f32) -> Vec<f32> {
    softmax_kernel1d(size, sigma, SOFTMAX_LANES)
}

/// The lanes of the vectors ATen's softmax sums in on a CPU with AVX-512. On a CPU with AVX2
/// alone torch sums in 8, and its kernels of 9 weights or more differ from these now and then,
/// by 1 to 4 units in the last place (126 of the 976 of
/// tests/goldens/gaussian_kernels_v2_avx2.tsv, which the same arithmetic over 8 lanes gives, bit
/// for bit).
pub const SOFTMAX_LANES: usize = 16;

fn softmax_kernel1d(size: usize, sigma: f32, lanes: usize) -> Vec<f32> {
    let lim = ((size - 1) as f64 / (2.0 * 2f64.sqrt())) as f32;
    let exponents: Vec<f32> = (0..size as u32)
        .map(|i| {
            let t = super::auto_augment::linspace(-lim, lim, i, size as u32) / sigma;
            -(t * t)
        })
        .collect();
    let max = exponents.iter().fold(f32::NEG_INFINITY, |m, &z| m.max(z));
    let pdf: Vec<f32> = exponents.iter().map(|&z| sleef_expf(z - max)).collect();
    let reciprocal = 1.0 / reduce_all_sum(&pdf, lanes);
    pdf.iter().map(|&p| p * reciprocal).collect()
}

/// SLEEF's float32 `exp` (`xexpf`, within one unit in the last place), which ATen's vectorised
/// kernels take on x86-64: `q` the nearest integer to `d / ln 2`, the remainder `s` by `ln 2` in
/// two parts, a polynomial in `s`, scaled by 2^q in two halves; each `vmla` a fused multiply-add,
/// as SLEEF's AVX2 and AVX-512 builds make it.
fn sleef_expf(d: f32) -> f32 {
    const R_LN2: f32 = std::f32::consts::LOG2_E;
    const L2U: f32 = 0.693_145_75;
    const L2L: f32 = 1.428_606_8e-6;
    const POLYNOMIAL: [f32; 6] = [
        0.000_198_527_62,
        0.001_393_043_6,
        0.008_333_361,
        0.041_666_485,
        0.166_666_67,
        0.5,
    ];
    let q = (d * R_LN2).round_ties_even() as i32;
    let s = (q as f32).mul_add(-L2U, d);
    let s = (q as f32).mul_add(-L2L, s);
    let u = POLYNOMIAL[1..]
        .iter()
        .fold(POLYNOMIAL[0], |u, &c| u.mul_add(s, c));
    let u = 1.0 + (s * s).mul_add(u, s);
    let pow2 = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    if d < -104.0 {
        0.0
    } else if d > 100.0 {
        f32::INFINITY
    } else {
        u * pow2(q >> 1) * pow2(q - (q >> 1))
    }
}

/// ATen's `vec::reduce_all` of `x + y` over `values` in vectors of `lanes`: below `lanes` values,
/// added in order; from `lanes` on, the whole vectors added lane by lane, the tail into its first
/// lanes, then the lanes folded in halves (lane i + lane i + lanes/2, …), as its shuffles do.
fn reduce_all_sum(values: &[f32], lanes: usize) -> f32 {
    if values.len() < lanes {
        return values.iter().skip(1).fold(values[0], |acc, &v| acc + v);
    }
    let mut sums = values[..lanes].to_vec();
    for chunk in values[lanes..].chunks(lanes) {
        for (sum, &v) in sums.iter_mut().zip(chunk) {
            *sum += v;
        }
    }
    let mut half = lanes / 2;
    while half > 0 {
        for i in 0..half {
            sums[i] += sums[i + half];
        }
        half /= 2;
    }
    sums[0]
}

/// torch's `sum` of a short contiguous float32 tensor (ATen's `cascade_sum`, 8-lane vectors):
/// below 8 values, four running sums (the tail into the first) added in order; from 8 on, each
/// lane of the whole vectors summed likewise, then the tail, then the lanes in order.
fn aten_sum(values: &[f32]) -> f32 {
    const LANES: usize = 8;
    if values.len() < LANES {
        return row_sum(values.iter().map(|&v| [v]).collect::<Vec<_>>().as_slice())[0];
    }
    let vectors: Vec<[f32; LANES]> = values
        .chunks_exact(LANES)
        .map(|c| std::array::from_fn(|l| c[l]))
        .collect();
    let lanes = row_sum(&vectors);
    let tail = &values[vectors.len() * LANES..];
    let sum = tail.iter().fold(0.0f32, |acc, &v| acc + v);
    lanes.iter().fold(sum, |acc, &v| acc + v)
}

/// ATen's `row_sum` of rows of lanes: four running sums over the rows (row i into sum i % 4),
/// the rows past the last four into the first, then the four added in order.
fn row_sum<const N: usize>(rows: &[[f32; N]]) -> [f32; N] {
    let add = |a: [f32; N], b: [f32; N]| std::array::from_fn(|l| a[l] + b[l]);
    let whole = rows.len() / 4 * 4;
    let mut sums = [[0.0f32; N]; 4];
    for (i, row) in rows[..whole].iter().enumerate() {
        sums[i % 4] = add(sums[i % 4], *row);
    }
    for row in &rows[whole..] {
        sums[0] = add(sums[0], *row);
    }
    sums[1..].iter().fold(sums[0], |acc, s| add(acc, *s))
}

/// Pillow's `ImageFilter.GaussianBlur(radius)` (libImaging/BoxBlur.c): [`BoxBlur::PASSES`] box
/// blurs across the image, then as many down, each value of a pass
/// `(weight · Σ of the 2·radius + 1 values about it + edge_weight · (the two just beyond) + 2²³)
/// >> 24` in 32-bit unsigned arithmetic, a line's end values repeated past it. Its integers are
/// worked out from the radius once, here, in Pillow's float32 arithmetic (x86-64's: a CPU that
/// fuses multiply-adds, as ARM builds may, could round `_gaussian_blur_radius` otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxBlur {
    /// The box's whole radius: each value sums the 2·radius + 1 values about it.
    pub radius: u32,
    /// Their weight, in 24-bit fixed point (`ww`).
    pub weight: u32,
}

impl BoxBlur {
    /// The passes each way (`ImagingGaussianBlur`'s `passes`, 3 from Python).
    pub const PASSES: u32 = 3;

    /// The box blur of `ImageFilter.GaussianBlur(radius)`, `radius` as Pillow's C holds it
    /// (the float32 of Python's float). A zero box radius (Pillow then copies the image) weighs
    /// the value itself by 2²⁴: the same image.
    pub fn of(radius: f32) -> Self {
        let box_radius = box_radius(radius, Self::PASSES);
        // ImagingHorizontalBoxBlur: `(UINT32)(1 << 24) / (floatRadius * 2 + 1)`, a float32
        // division truncated.
        Self {
            radius: box_radius as u32,
            weight: (16_777_216.0f32 / (box_radius * 2.0 + 1.0)) as u32,
        }
    }

    /// The weight of the two values just beyond the box (`fw`): what the whole box's leaves of
    /// 2²⁴, halved (in unsigned arithmetic, as C wraps it).
    pub fn edge_weight(&self) -> u32 {
        (1u32 << 24).wrapping_sub((2 * self.radius + 1).wrapping_mul(self.weight)) / 2
    }

    /// One value of a pass: from the sum of the box's values and of the two just beyond it.
    pub fn value(&self, sum: u32, beyond: u32) -> u8 {
        let bulk = sum
            .wrapping_mul(self.weight)
            .wrapping_add(beyond.wrapping_mul(self.edge_weight()));
        (bulk.wrapping_add(1 << 23) >> 24) as u8
    }
}

/// `_gaussian_blur_radius(radius, passes)`: the box radius whose `passes` box blurs have the
/// Gaussian's variance (Gwosdek et al.), in its float32 arithmetic, the box length's square
/// root and halving in double.
fn box_radius(radius: f32, passes: u32) -> f32 {
    let sigma2 = radius * radius / passes as f32;
    let length = (12.0 * f64::from(sigma2) + 1.0).sqrt() as f32;
    let whole = ((f64::from(length) - 1.0) / 2.0).floor() as f32;
    let fraction = (2.0 * whole + 1.0) * (whole * (whole + 1.0) - 3.0 * sigma2)
        / (6.0 * (sigma2 - (whole + 1.0) * (whole + 1.0)));
    whole + fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(word: &str) -> f32 {
        f32::from_bits(u32::from_str_radix(word, 16).expect("a hex word"))
    }

    /// The kernels of tests/goldens/gaussian_kernels.tsv (real torch's): equal bit for bit but
    /// where torch's MKL exp differs from the correctly rounded one: 46 kernels, whose weights
    /// differ by at most 4 units in the last place (an exp's one, and the sum's they divide by).
    #[test]
    fn kernels_are_torchs_but_for_its_exp() {
        let table = include_str!("../../tests/goldens/gaussian_kernels.tsv");
        let (mut rows, mut differ, mut most) = (0, 0, 0);
        for line in table.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.split('\t').collect();
            let size: usize = fields[0].parse().expect("a kernel size");
            let sigma = hex(fields[1]);
            let torch: Vec<f32> = fields[2].split(',').map(hex).collect();
            let ours = kernel1d(size, sigma);
            rows += 1;
            differ += usize::from(ours != torch);
            for (a, b) in ours.iter().zip(&torch) {
                most = most.max((a.to_bits() as i64 - b.to_bits() as i64).abs());
            }
        }
        println!("{rows} kernels, {differ} differ, by at most {most} units in the last place");
        assert_eq!((rows, differ, most), (976, 46, 4));
    }

    /// transforms.v2's kernels are real torch's, bit for bit: made on an AVX-512 CPU
    /// (tests/goldens/gaussian_kernels_v2.tsv), and with `ATEN_CPU_CAPABILITY=avx2`
    /// (gaussian_kernels_v2_avx2.tsv), whose softmax sums in 8 lanes.
    #[test]
    fn v2_kernels_are_torchs() {
        for (table, lanes, differing) in [
            (
                include_str!("../../tests/goldens/gaussian_kernels_v2.tsv"),
                16,
                0,
            ),
            (
                include_str!("../../tests/goldens/gaussian_kernels_v2_avx2.tsv"),
                8,
                0,
            ),
            // The sum's order is the one difference between the two.
            (
                include_str!("../../tests/goldens/gaussian_kernels_v2_avx2.tsv"),
                16,
                126,
            ),
        ] {
            let (mut rows, mut differ) = (0, 0);
            for line in table.lines().filter(|l| !l.starts_with('#')) {
                let fields: Vec<&str> = line.split('\t').collect();
                let size: usize = fields[0].parse().expect("a kernel size");
                let torch: Vec<f32> = fields[2].split(',').map(hex).collect();
                let ours = softmax_kernel1d(size, hex(fields[1]), lanes);
                let bits = |k: &[f32]| k.iter().map(|w| w.to_bits()).collect::<Vec<_>>();
                rows += 1;
                differ += usize::from(bits(&ours) != bits(&torch));
            }
            assert_eq!((rows, differ), (976, differing), "{lanes} lanes");
        }
        assert_eq!(kernel1d_v2(1, 0.5), [1.0]);
    }

    /// The 2D kernel is the outer product, row by row, each weight rounded once.
    #[test]
    fn kernel_is_the_outer_product() {
        let blur = Blur::drawn((3, 5), 1.25, false);
        let (x, y) = (kernel1d(3, 1.25), kernel1d(5, 1.25));
        let k = blur.kernel();
        assert_eq!(k.len(), 15);
        assert_eq!(k[7].to_bits(), (y[2] * x[1]).to_bits());
        assert_eq!(k[14].to_bits(), (y[4] * x[2]).to_bits());
    }

    /// `_gaussian_blur_radius`'s float32 values (1 → 0.25, 2 → 1.375: its formula's, give or take
    /// its rounding) and Pillow's integers of them; the whole box's weight never above 2²⁴, so
    /// that a flat image stays flat.
    #[test]
    fn box_blurs_are_pillows_integers() {
        assert_eq!(box_radius(2.0, 3), 1.375);
        assert_eq!(box_radius(1.0, 3), 0.25000003);
        assert_eq!(
            BoxBlur::of(2.0),
            BoxBlur {
                radius: 1,
                weight: 4_473_924
            }
        );
        assert_eq!(BoxBlur::of(2.0).edge_weight(), 1_677_722);
        let tiny = BoxBlur::of(1e-30);
        assert_eq!(
            (tiny, tiny.edge_weight()),
            (
                BoxBlur {
                    radius: 0,
                    weight: 1 << 24
                },
                0
            )
        );
        for k in 1..=200 {
            let b = BoxBlur::of(k as f32 * 0.05);
            let whole = u64::from(2 * b.radius + 1) * u64::from(b.weight);
            assert!(whole <= 1 << 24, "{k}: {b:?}");
            assert_eq!(b.value(255 * (2 * b.radius + 1), 510), 255, "{k}: {b:?}");
        }
    }
}
