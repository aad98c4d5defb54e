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
    pub fn expanded(&self, width: usize, height: usize) -> Plane {
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

    /// Downsampled by `h` across and `v` down (1 or 2 each), as `jcsample.c` does: pairs
    /// averaged with a bias that alternates along each row (0, 1 for two samples; 1, 2 for
    /// four), so that rounding does not drift one way. The plane's sides are multiples of the
    /// factors.
    pub fn downsampled(&self, h: usize, v: usize) -> Plane {
        let (width, height) = (self.width / h, self.height / v);
        if (h, v) == (1, 1) {
            return self.clone();
        }
        let mut samples = vec![0; width * height];
        let rows = self.samples.chunks_exact(self.width * v);
        for (out, rows) in samples.chunks_exact_mut(width.max(1)).zip(rows) {
            let (top, bottom) = rows.split_at(self.width);
            let bottom = if v == 2 { bottom } else { top };
            for (x, out) in out.iter_mut().enumerate() {
                let bias = x as u32 & 1;
                let (a, b) = (u32::from(top[h * x]), u32::from(bottom[h * x]));
                *out = match (h, v) {
                    (2, 1) => (a + u32::from(top[2 * x + 1]) + bias) >> 1,
                    (1, 2) => (a + b + bias) >> 1,
                    _ => {
                        let right = u32::from(top[2 * x + 1]) + u32::from(bottom[2 * x + 1]);
                        (a + b + right + 1 + bias) >> 2
                    }
                } as u8;
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
    pub fn block(&self, bx: usize, by: usize) -> [i32; 64] {
        let mut block = [0; 64];
        for (y, out) in block.chunks_exact_mut(8).enumerate() {
            let row = &self.samples[(by * 8 + y) * self.width + bx * 8..][..8];
            for (out, &sample) in out.iter_mut().zip(row) {
                *out = i32::from(sample) - 128;
            }
        }
        block
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

/// One 8-point pass of `jpeg_fdct_islow`: the first pass (`row`) keeps `PASS1_BITS` more bits,
/// the second takes them and the DCT's factor 8 is left in.
fn fdct_pass(d: [i32; 8], row: bool) -> [i32; 8] {
    let (tmp0, tmp7) = (d[0] + d[7], d[0] - d[7]);
    let (tmp1, tmp6) = (d[1] + d[6], d[1] - d[6]);
    let (tmp2, tmp5) = (d[2] + d[5], d[2] - d[5]);
    let (tmp3, tmp4) = (d[3] + d[4], d[3] - d[4]);
    let (tmp10, tmp13) = (tmp0 + tmp3, tmp0 - tmp3);
    let (tmp11, tmp12) = (tmp1 + tmp2, tmp1 - tmp2);
    let (even, odd) = if row {
        (0, CONST_BITS - PASS1_BITS)
    } else {
        (PASS1_BITS, CONST_BITS + PASS1_BITS)
    };
    let mut out = [0i32; 8];
    if row {
        out[0] = (tmp10 + tmp11) << PASS1_BITS;
        out[4] = (tmp10 - tmp11) << PASS1_BITS;
    } else {
        out[0] = descale(tmp10 + tmp11, even);
        out[4] = descale(tmp10 - tmp11, even);
    }
    let z1 = (tmp12 + tmp13) * FIX_0_541196100;
    out[2] = descale(z1 + tmp13 * FIX_0_765366865, odd);
    out[6] = descale(z1 - tmp12 * FIX_1_847759065, odd);
    let (z1, z2, z3, z4) = (tmp4 + tmp7, tmp5 + tmp6, tmp4 + tmp6, tmp5 + tmp7);
    let z5 = (z3 + z4) * FIX_1_175875602;
    let (tmp4, tmp5) = (tmp4 * FIX_0_298631336, tmp5 * FIX_2_053119869);
    let (tmp6, tmp7) = (tmp6 * FIX_3_072711026, tmp7 * FIX_1_501321110);
    let (z1, z2) = (-z1 * FIX_0_899976223, -z2 * FIX_2_562915447);
    let (z3, z4) = (-z3 * FIX_1_961570560 + z5, -z4 * FIX_0_390180644 + z5);
    out[7] = descale(tmp4 + z1 + z3, odd);
    out[5] = descale(tmp5 + z2 + z4, odd);
    out[3] = descale(tmp6 + z2 + z3, odd);
    out[1] = descale(tmp7 + z1 + z4, odd);
    out
}

/// `jpeg_fdct_islow`: the block's DCT, each coefficient 8 times its orthonormal value.
pub fn fdct(block: &mut [i32; 64]) {
    for row in block.chunks_exact_mut(8) {
        let done = fdct_pass(row.try_into().expect("rows of 8"), true);
        row.copy_from_slice(&done);
    }
    for column in 0..8 {
        let done = fdct_pass(std::array::from_fn(|k| block[column + 8 * k]), false);
        for (k, value) in done.into_iter().enumerate() {
            block[column + 8 * k] = value;
        }
    }
}

/// A quantisation table's divisors (each entry times 8, the DCT's scale) with their
/// reciprocals, `ceil(2^32 / d)`: for a numerator below 2^32 / d, `(n × r) >> 32` is `n / d`
/// exactly, and a coefficient's magnitude is at most 2^15.
pub struct Divisors {
    pub divisor: [u32; 64],
    reciprocal: [u64; 64],
}

impl Divisors {
    /// Those of `table` (natural order).
    pub fn new(table: &[u16; 64]) -> Self {
        let divisor = table.map(|q| u32::from(q) * 8);
        let reciprocal = divisor.map(|d| (1u64 << 32).div_ceil(u64::from(d)));
        Self {
            divisor,
            reciprocal,
        }
    }
}

/// The DCT's coefficients divided by their divisors, the magnitude rounded half up and the
/// sign kept, as `quantize` computes with its reciprocals.
pub fn quantise(coefficients: &[i32; 64], divisors: &Divisors) -> [i16; 64] {
    let mut out = [0; 64];
    for (i, (out, &c)) in out.iter_mut().zip(coefficients).enumerate() {
        let d = divisors.divisor[i];
        let numerator = u64::from(c.unsigned_abs() + d / 2);
        let magnitude = ((numerator * divisors.reciprocal[i]) >> 32) as i32;
        *out = (magnitude * c.signum()) as i16;
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
        let mut block = [10; 64];
        fdct(&mut block);
        // 8 × (the orthonormal DC, 8 × 10).
        assert_eq!(block[0], 640);
        assert!(block[1..].iter().all(|&c| c == 0));
    }

    #[test]
    fn downsampling_alternates_its_bias() {
        let plane = Plane {
            width: 4,
            height: 2,
            samples: vec![1, 2, 1, 2, 1, 2, 1, 2],
        };
        // (1 + 2 + 1 + 2 + 1) >> 2 = 1, then (6 + 2) >> 2 = 2.
        assert_eq!(plane.downsampled(2, 2).samples, [1, 2]);
        // (1 + 2 + 0) >> 1 = 1, then (3 + 1) >> 1 = 2.
        assert_eq!(plane.downsampled(2, 1).samples, [1, 2, 1, 2]);
        let divisors = Divisors::new(&[3; 64]);
        let coefficients: [i32; 64] = [-12, 12, 11, -11].repeat(16).try_into().unwrap();
        assert_eq!(quantise(&coefficients, &divisors)[..4], [-1, 1, 0, 0]);
    }

    #[test]
    fn reciprocals_divide_exactly() {
        // Every baseline divisor, every magnitude a coefficient can have (and its rounding).
        for q in 1..=255u16 {
            let divisors = Divisors::new(&[q; 64]);
            let d = u32::from(q) * 8;
            for magnitude in 0..=(1 << 15) {
                let numerator = u64::from(magnitude + d / 2);
                let by_reciprocal = (numerator * divisors.reciprocal[0]) >> 32;
                assert_eq!(by_reciprocal, numerator / u64::from(d), "{magnitude} / {d}");
            }
        }
    }
}
