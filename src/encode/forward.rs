//! The pixel stages of libjpeg-turbo's compressor, in its integer arithmetic: RGB to YCbCr
//! (`jccolor.c`), edge expansion and downsampling (`jcprepct.c`, `jcsample.c`), the slow-integer
//! forward DCT (`jfdctint.c`) and quantisation by reciprocals (`jcdctmgr.c`, which rounds as a
//! division of the magnitude, half away from zero, would).

/// `jccolor.c`'s fixed point: 16 fraction bits.
const SCALE_BITS: u32 = 16;
const ONE_HALF: i32 = 1 << (SCALE_BITS - 1);
const CBCR_OFFSET: i32 = 128 << SCALE_BITS;

/// `FIX(x)`: `x` in 16-bit fixed point, rounded.
const fn fix(x: f64) -> i32 {
    (x * (1u32 << SCALE_BITS) as f64 + 0.5) as i32
}

/// One RGB pixel as YCbCr, as `rgb_ycc_convert` computes it.
#[inline(always)]
pub fn ycc(r: u8, g: u8, b: u8) -> [u8; 3] {
    let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
    let y = (fix(0.29900) * r + fix(0.58700) * g + fix(0.11400) * b + ONE_HALF) >> SCALE_BITS;
    // B's and R's 0.5 is FIX(0.5) with ONE_HALF - 1 folded into the offset, so that the largest
    // input gives 255, not 256.
    let cb = (-fix(0.16874) * r - fix(0.33126) * g + fix(0.5) * b + CBCR_OFFSET + ONE_HALF - 1)
        >> SCALE_BITS;
    let cr = (fix(0.5) * r - fix(0.41869) * g - fix(0.08131) * b + CBCR_OFFSET + ONE_HALF - 1)
        >> SCALE_BITS;
    [y as u8, cb as u8, cr as u8]
}

/// RGB pixels (`rgb`, three bytes each) as YCbCr planes, as [`ycc`] converts each: the planes
/// hold a sample for each pixel.
pub fn ycc_planes(rgb: &[u8], y: &mut [u8], cb: &mut [u8], cr: &mut [u8]) {
    debug_assert!(rgb.len() == 3 * y.len() && y.len() == cb.len() && y.len() == cr.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, which `ycc_planes_avx2` enables.
        #[allow(unsafe_code, reason = "calling an AVX2 function; see the SAFETY note")]
        return unsafe { ycc_planes_avx2(rgb, y, cb, cr) };
    }
    ycc_planes_lanes(rgb, y, cb, cr);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn ycc_planes_avx2(rgb: &[u8], y: &mut [u8], cb: &mut [u8], cr: &mut [u8]) {
    ycc_planes_lanes(rgb, y, cb, cr);
}

/// [`ycc_planes`] eight pixels at a time, each lane computed as [`ycc`] does, so that the
/// arithmetic compiles to vector instructions.
#[inline(always)]
fn ycc_planes_lanes(rgb: &[u8], y: &mut [u8], cb: &mut [u8], cr: &mut [u8]) {
    let lanes = rgb.chunks_exact(24).zip(y.chunks_exact_mut(8));
    let lanes = lanes
        .zip(cb.chunks_exact_mut(8))
        .zip(cr.chunks_exact_mut(8));
    for (((px, y), cb), cr) in lanes {
        // Arrays, whose lengths the compiler knows: no bounds checks between the lanes.
        let px: &[u8; 24] = px.try_into().expect("chunks of 24");
        let [y, cb, cr]: [&mut [u8; 8]; 3] =
            [y, cb, cr].map(|p| p.try_into().expect("chunks of 8"));
        for k in 0..8 {
            [y[k], cb[k], cr[k]] = ycc(px[3 * k], px[3 * k + 1], px[3 * k + 2]);
        }
    }
    let done = y.len() / 8 * 8;
    let rest = rgb[3 * done..].chunks_exact(3).zip(&mut y[done..]);
    for ((px, y), (cb, cr)) in rest.zip(cb[done..].iter_mut().zip(&mut cr[done..])) {
        [*y, *cb, *cr] = ycc(px[0], px[1], px[2]);
    }
}

/// Every block of `plane` (`across` × `down` of them, row by row) transformed ([`fdct`]) and
/// quantised by `divisors` ([`quantise`]).
pub fn quantised_blocks(
    plane: &Plane,
    across: usize,
    down: usize,
    divisors: &Divisors,
) -> Vec<[i16; 64]> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, which `quantised_blocks_avx2` enables.
        #[allow(unsafe_code, reason = "calling an AVX2 function; see the SAFETY note")]
        return unsafe { quantised_blocks_avx2(plane, across, down, divisors) };
    }
    quantised_blocks_lanes(plane, across, down, divisors)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn quantised_blocks_avx2(
    plane: &Plane,
    across: usize,
    down: usize,
    divisors: &Divisors,
) -> Vec<[i16; 64]> {
    quantised_blocks_lanes(plane, across, down, divisors)
}

/// [`quantised_blocks`], its stages inlined, so that they compile for the caller's features.
#[inline(always)]
fn quantised_blocks_lanes(
    plane: &Plane,
    across: usize,
    down: usize,
    divisors: &Divisors,
) -> Vec<[i16; 64]> {
    let mut blocks = Vec::with_capacity(across * down);
    for by in 0..down {
        for bx in 0..across {
            let mut block = plane.block(bx, by);
            fdct(&mut block);
            blocks.push(quantise(&block, divisors));
        }
    }
    blocks
}

/// A plane of samples, rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub samples: Vec<u8>,
}

impl Plane {
    /// The plane grown to `width` × `height` by repeating its last column and its last row, as
    /// the compressor fills its MCUs past the image's edges.
    pub fn expanded(mut self, width: usize, height: usize) -> Plane {
        if width == self.width {
            // The same width: rows repeated (or cut) in place.
            self.samples
                .reserve(width * height.saturating_sub(self.height));
            let last = self.samples.len() - width;
            for _ in self.height..height {
                self.samples.extend_from_within(last..last + width);
            }
            self.samples.truncate(width * height);
            self.height = height;
            return self;
        }
        let mut samples = Vec::with_capacity(width * height);
        for y in 0..height {
            let row = &self.samples[y.min(self.height - 1) * self.width..][..self.width];
            samples.extend_from_slice(row);
            samples.extend(std::iter::repeat_n(row[self.width - 1], width - self.width));
        }
        Plane {
            width,
            height,
            samples,
        }
    }

    /// Downsampled by `h` across and `v` down (1 or 2 each), as `jcsample.c` does: across
    /// (`h2v1_downsample`, `h2v2_downsample`), samples averaged with a bias that alternates
    /// along each row (0, 1 for two samples; 1, 2 for four), so that rounding does not drift
    /// one way; down only, with a bias of 1. The plane's sides are multiples of the factors.
    pub fn downsampled(self, h: usize, v: usize) -> Plane {
        let (width, height) = (self.width / h, self.height / v);
        if (h, v) == (1, 1) {
            return self;
        }
        let mut samples = vec![0; width * height];
        let rows = self.samples.chunks_exact(self.width * v);
        for (out, rows) in samples.chunks_exact_mut(width.max(1)).zip(rows) {
            let (top, bottom) = rows.split_at(self.width);
            // The bias alternates 0, 1 (pairs) or 1, 2 (fours) along the row.
            let bias = |x: usize| x as u32 & 1;
            let wide = |x: u8| u32::from(x);
            match (h, v) {
                (2, 1) => {
                    for (x, (out, pair)) in out.iter_mut().zip(top.chunks_exact(2)).enumerate() {
                        *out = ((wide(pair[0]) + wide(pair[1]) + bias(x)) >> 1) as u8;
                    }
                }
                (1, 2) => {
                    // No subsampling Pillow writes: libjpeg-turbo's `int_downsample`, whose
                    // bias is 1, not alternating.
                    for (out, (&a, &b)) in out.iter_mut().zip(top.iter().zip(bottom)) {
                        *out = ((wide(a) + wide(b) + 1) >> 1) as u8;
                    }
                }
                _ => {
                    debug_assert_eq!((h, v), (2, 2));
                    let fours = top.chunks_exact(2).zip(bottom.chunks_exact(2));
                    for (x, (out, (t, b))) in out.iter_mut().zip(fours).enumerate() {
                        let sum = wide(t[0]) + wide(t[1]) + wide(b[0]) + wide(b[1]);
                        *out = ((sum + 1 + bias(x)) >> 2) as u8;
                    }
                }
            }
        }
        Plane {
            width,
            height,
            samples,
        }
    }

    /// The 8×8 block whose top-left sample is at block column `bx`, row `by`, centred on 0
    /// (each sample less 128), as the DCT takes it.
    #[inline(always)]
    pub fn block(&self, bx: usize, by: usize) -> [[i32; 8]; 8] {
        std::array::from_fn(|y| {
            let row = &self.samples[(by * 8 + y) * self.width + bx * 8..][..8];
            std::array::from_fn(|x| i32::from(row[x]) - 128)
        })
    }
}

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

/// `x` divided by 2^`n`, rounded half up (`DESCALE`).
fn descale(x: i32, n: u32) -> i32 {
    (x + (1 << (n - 1))) >> n
}

/// One 8-point pass of `jpeg_fdct_islow` over each of eight lanes at once (`d[k][lane]`: point
/// `k` of lane `lane`), so that it compiles to vector instructions: the first pass (`ROW`) keeps
/// `PASS1_BITS` more bits, the second takes them and the DCT's factor 8 is left in.
#[inline(always)]
fn fdct_pass<const ROW: bool>(d: &[[i32; 8]; 8]) -> [[i32; 8]; 8] {
    let (even, odd) = if ROW {
        (0, CONST_BITS - PASS1_BITS)
    } else {
        (PASS1_BITS, CONST_BITS + PASS1_BITS)
    };
    let mut out = [[0i32; 8]; 8];
    for lane in 0..8 {
        let (tmp0, tmp7) = (d[0][lane] + d[7][lane], d[0][lane] - d[7][lane]);
        let (tmp1, tmp6) = (d[1][lane] + d[6][lane], d[1][lane] - d[6][lane]);
        let (tmp2, tmp5) = (d[2][lane] + d[5][lane], d[2][lane] - d[5][lane]);
        let (tmp3, tmp4) = (d[3][lane] + d[4][lane], d[3][lane] - d[4][lane]);
        let (tmp10, tmp13) = (tmp0 + tmp3, tmp0 - tmp3);
        let (tmp11, tmp12) = (tmp1 + tmp2, tmp1 - tmp2);
        if ROW {
            out[0][lane] = (tmp10 + tmp11) << PASS1_BITS;
            out[4][lane] = (tmp10 - tmp11) << PASS1_BITS;
        } else {
            out[0][lane] = descale(tmp10 + tmp11, even);
            out[4][lane] = descale(tmp10 - tmp11, even);
        }
        let z1 = (tmp12 + tmp13) * FIX_0_541196100;
        out[2][lane] = descale(z1 + tmp13 * FIX_0_765366865, odd);
        out[6][lane] = descale(z1 - tmp12 * FIX_1_847759065, odd);
        let (z1, z2, z3, z4) = (tmp4 + tmp7, tmp5 + tmp6, tmp4 + tmp6, tmp5 + tmp7);
        let z5 = (z3 + z4) * FIX_1_175875602;
        let (tmp4, tmp5) = (tmp4 * FIX_0_298631336, tmp5 * FIX_2_053119869);
        let (tmp6, tmp7) = (tmp6 * FIX_3_072711026, tmp7 * FIX_1_501321110);
        let (z1, z2) = (-z1 * FIX_0_899976223, -z2 * FIX_2_562915447);
        let (z3, z4) = (-z3 * FIX_1_961570560 + z5, -z4 * FIX_0_390180644 + z5);
        out[7][lane] = descale(tmp4 + z1 + z3, odd);
        out[5][lane] = descale(tmp5 + z2 + z4, odd);
        out[3][lane] = descale(tmp6 + z2 + z3, odd);
        out[1][lane] = descale(tmp7 + z1 + z4, odd);
    }
    out
}

/// `m` transposed.
#[inline(always)]
fn transpose(m: &[[i32; 8]; 8]) -> [[i32; 8]; 8] {
    std::array::from_fn(|i| std::array::from_fn(|j| m[j][i]))
}

/// `jpeg_fdct_islow`: the block's DCT, each coefficient 8 times its orthonormal value. Rows
/// first, then columns, as libjpeg (the passes round differently): each pass transforms the
/// lanes of its input, so the rows' pass takes the block transposed.
#[inline(always)]
pub fn fdct(block: &mut [[i32; 8]; 8]) {
    let rows_done = fdct_pass::<true>(&transpose(block));
    *block = fdct_pass::<false>(&transpose(&rows_done));
}

/// A quantisation table's divisors (each entry times 8, the DCT's scale) with their
/// reciprocals, `ceil(2^32 / d)` (at most 2^29, as `d` is at least 8): for a numerator below
/// 2^32 / d, `(n × r) >> 32` is `n / d` exactly, and a coefficient's magnitude is at most 2^15.
pub struct Divisors {
    pub divisor: [u32; 64],
    reciprocal: [u32; 64],
}

impl Divisors {
    /// Those of `table` (natural order).
    pub fn new(table: &[u16; 64]) -> Self {
        let divisor = table.map(|q| u32::from(q) * 8);
        let reciprocal = divisor.map(|d| (1u64 << 32).div_ceil(u64::from(d)) as u32);
        Self {
            divisor,
            reciprocal,
        }
    }
}

/// The DCT's coefficients divided by their divisors, the magnitude rounded half up and the
/// sign kept, as `quantize` computes with its reciprocals.
#[inline(always)]
pub fn quantise(coefficients: &[[i32; 8]; 8], divisors: &Divisors) -> [i16; 64] {
    let mut out = [0; 64];
    for (i, (out, &c)) in out.iter_mut().zip(coefficients.as_flattened()).enumerate() {
        let d = divisors.divisor[i];
        let numerator = u64::from(c.unsigned_abs() + d / 2);
        let magnitude = ((numerator * u64::from(divisors.reciprocal[i])) >> 32) as i32;
        *out = (if c < 0 { -magnitude } else { magnitude }) as i16;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_convert_as_jccolor_does() {
        assert_eq!(ycc(0, 0, 0), [0, 128, 128]);
        assert_eq!(ycc(255, 255, 255), [255, 128, 128]);
        // The largest chroma stays 255.
        assert_eq!(ycc(0, 0, 255)[1], 255);
        assert_eq!(ycc(255, 0, 0)[2], 255);
    }

    #[test]
    fn a_flat_block_has_only_its_dc() {
        let mut block = [[10; 8]; 8];
        fdct(&mut block);
        // 8 × (the orthonormal DC, 8 × 10).
        assert_eq!(block[0][0], 640);
        assert!(block.as_flattened()[1..].iter().all(|&c| c == 0));
    }

    #[test]
    fn downsampling_alternates_its_bias() {
        let plane = Plane {
            width: 4,
            height: 2,
            samples: vec![1, 2, 1, 2, 1, 2, 1, 2],
        };
        // (1 + 2 + 1 + 2 + 1) >> 2 = 1, then (6 + 2) >> 2 = 2.
        assert_eq!(plane.clone().downsampled(2, 2).samples, [1, 2]);
        // (1 + 2 + 0) >> 1 = 1, then (3 + 1) >> 1 = 2.
        assert_eq!(plane.downsampled(2, 1).samples, [1, 2, 1, 2]);
        let divisors = Divisors::new(&[3; 64]);
        let coefficients = [[-12, 12, 11, -11, -12, 12, 11, -11]; 8];
        assert_eq!(quantise(&coefficients, &divisors)[..4], [-1, 1, 0, 0]);
    }

    #[test]
    fn every_compiled_form_of_the_stages_agrees() {
        // Pseudo-random samples (a linear congruential sequence), 203 pixels: 25 lanes of 8
        // and 3 left over.
        let mut state = 12345u32;
        let mut next = || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        };
        let rgb: Vec<u8> = (0..203 * 3).map(|_| next()).collect();
        let [mut y, mut cb, mut cr] = [(); 3].map(|()| vec![0; 203]);
        ycc_planes(&rgb, &mut y, &mut cb, &mut cr);
        let [mut y2, mut cb2, mut cr2] = [(); 3].map(|()| vec![0; 203]);
        ycc_planes_lanes(&rgb, &mut y2, &mut cb2, &mut cr2);
        for (i, px) in rgb.chunks_exact(3).enumerate() {
            let each = ycc(px[0], px[1], px[2]);
            assert_eq!([y[i], cb[i], cr[i]], each, "pixel {i}");
            assert_eq!([y2[i], cb2[i], cr2[i]], each, "pixel {i}");
        }
        let plane = Plane {
            width: 24,
            height: 16,
            samples: (0..24 * 16).map(|_| next()).collect(),
        };
        let divisors = Divisors::new(&std::array::from_fn(|i| 1 + i as u16 % 7));
        let blocks = quantised_blocks(&plane, 3, 2, &divisors);
        assert_eq!(blocks, quantised_blocks_lanes(&plane, 3, 2, &divisors));
        // Against `jpeg_fdct_islow` as jfdctint.c writes it (its rows in place, then its
        // columns) and a division rounding the magnitude half up.
        for (n, block) in blocks.iter().enumerate() {
            let (bx, by) = (n % 3, n / 3);
            let mut data: [i32; 64] = std::array::from_fn(|i| {
                i32::from(plane.samples[(by * 8 + i / 8) * 24 + bx * 8 + i % 8]) - 128
            });
            for (stride, step, row) in [(1, 8, true), (8, 1, false)] {
                for line in 0..8 {
                    let at = |k: usize| line * step + k * stride;
                    let d: [[i32; 8]; 8] = std::array::from_fn(|k| [data[at(k)]; 8]);
                    let done = if row {
                        fdct_pass::<true>(&d)
                    } else {
                        fdct_pass::<false>(&d)
                    };
                    for k in 0..8 {
                        data[at(k)] = done[k][0];
                    }
                }
            }
            let expected: [i16; 64] = std::array::from_fn(|i| {
                let d = divisors.divisor[i] as i32;
                let magnitude = (data[i].abs() + d / 2) / d;
                (magnitude * data[i].signum()) as i16
            });
            assert_eq!(block, &expected, "block {n}");
        }
    }

    #[test]
    fn reciprocals_divide_exactly() {
        // Every baseline divisor, every magnitude a coefficient can have (and its rounding).
        for q in 1..=255u16 {
            let divisors = Divisors::new(&[q; 64]);
            let d = u32::from(q) * 8;
            for magnitude in 0..=(1 << 15) {
                let numerator = u64::from(magnitude + d / 2);
                let by_reciprocal = (numerator * u64::from(divisors.reciprocal[0])) >> 32;
                assert_eq!(by_reciprocal, numerator / u64::from(d), "{magnitude} / {d}");
            }
        }
    }
}
