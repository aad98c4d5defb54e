//! torchvision's `GaussianBlur` of the uint8 image (`F.gaussian_blur` of a PIL image:
//! `pil_to_tensor`, float32, reflect padding, a depthwise `conv2d`, `round`, uint8), as torch's
//! CPU computes it: per output value the 2D kernel's taps in row-major order, summed from 0
//! with fused multiply-adds, rounded half to even. Mirror of shaders/adjust.wgsl `blur`. And
//! Pillow's `ImageFilter.GaussianBlur` as its box blurs ([`box_blur`], shaders/adjust.wgsl
//! `box_blur`).

use super::resample::Image8;
use crate::plan::{Blur, BoxBlur};

/// `image` blurred with `blur`'s kernel. Each side must be longer than half the kernel's (torch's
/// reflect padding refuses a pad as long as the side).
pub fn blur(image: &Image8, blur: &Blur) -> Image8 {
    let (kx, ky) = blur.kernel_size;
    let kernel = blur.kernel();
    let (w, h, channels) = (image.width, image.height, image.channels);
    let mut data = vec![0u8; image.data.len()];
    for y in 0..h {
        for x in 0..w {
            for c in 0..channels {
                let mut sum = 0.0f32;
                for (r, row) in kernel.chunks_exact(kx).enumerate() {
                    let sy = reflect(y + r, ky / 2, h);
                    for (s, &weight) in row.iter().enumerate() {
                        let sx = reflect(x + s, kx / 2, w);
                        let v = image.data[(sy * w + sx) * channels + c];
                        sum = f32::from(v).mul_add(weight, sum);
                    }
                }
                data[(y * w + x) * channels + c] = sum.round_ties_even().min(255.0) as u8;
            }
        }
    }
    Image8 { data, ..*image }
}

/// `image.filter(ImageFilter.GaussianBlur(radius))` as [`BoxBlur::of`] its radius: its passes
/// across each row, then as many down each column, each pass of the image the last one made.
pub fn box_blur(image: &Image8, blur: &BoxBlur) -> Image8 {
    let mut out = image.clone();
    for across in [true, false] {
        for _ in 0..BoxBlur::PASSES {
            out = box_pass(&out, blur, across);
        }
    }
    out
}

/// One pass of `blur` along each row (`across`) or column: each value from the box about it and
/// the two values just beyond, the line's ends repeated past it (`ImagingLineBoxBlur32`'s
/// running sums give the same integers).
fn box_pass(image: &Image8, blur: &BoxBlur, across: bool) -> Image8 {
    let (w, h, channels) = (image.width, image.height, image.channels);
    let (length, lines) = if across { (w, h) } else { (h, w) };
    let index = |line: usize, i: usize| if across { line * w + i } else { i * w + line };
    let r = blur.radius as isize;
    let mut data = vec![0u8; image.data.len()];
    for line in 0..lines {
        for i in 0..length {
            for c in 0..channels {
                let value = |k: isize| {
                    let at = (i as isize + k).clamp(0, length as isize - 1) as usize;
                    u32::from(image.data[index(line, at) * channels + c])
                };
                let sum = (-r..=r).map(value).fold(0u32, u32::wrapping_add);
                data[index(line, i) * channels + c] = blur.value(sum, value(-r - 1) + value(r + 1));
            }
        }
    }
    Image8 { data, ..*image }
}

/// The source index of padded index `i` (the padding `pad` before index 0) under reflect
/// padding: -1 reads 1, n reads n - 2.
pub fn reflect(i: usize, pad: usize, n: usize) -> usize {
    let i = i as isize - pad as isize;
    let last = n as isize - 1;
    (if i < 0 {
        -i
    } else if i > last {
        2 * last - i
    } else {
        i
    }) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    /// tools/gaussian_kernels.py's test images: a ramp, or hashed noise.
    pub(crate) fn pattern(name: &str, width: usize, height: usize) -> Image8 {
        let mut data = Vec::with_capacity(width * height * 3);
        for y in 0..height as u64 {
            for x in 0..width as u64 {
                for c in 0..3u64 {
                    let v = if name == "ramp" {
                        (x * 7 + y * 13 + c * 50) % 256
                    } else {
                        let v =
                            ((x * 73_856_093) ^ (y * 19_349_663) ^ (c * 83_492_791)) & 0xFFFF_FFFF;
                        (v ^ (v >> 13)) % 256
                    };
                    data.push(v as u8);
                }
            }
        }
        Image8 {
            width,
            height,
            channels: 3,
            data,
        }
    }

    fn kernel(words: &str) -> Vec<f32> {
        let word = |w| f32::from_bits(u32::from_str_radix(w, 16).expect("a hex word"));
        words.split(',').map(word).collect()
    }

    /// Each blur of tests/goldens/gaussian_blur.tsv (real torch's `F.gaussian_blur`, given its
    /// kernels) and of gaussian_blur_v2.tsv (transforms.v2's, given its softmax kernels: the same
    /// convolution), byte for byte.
    #[test]
    fn blurs_equal_torchs() {
        for table in [
            include_str!("../../tests/goldens/gaussian_blur.tsv"),
            include_str!("../../tests/goldens/gaussian_blur_v2.tsv"),
        ] {
            let mut rows = 0;
            for line in table.lines().filter(|l| !l.starts_with('#')) {
                let f: Vec<&str> = line.split('\t').collect();
                let (width, height) = (f[1].parse().unwrap(), f[2].parse().unwrap());
                let image = pattern(f[0], width, height);
                let given = Blur::given(&kernel(f[3]), &kernel(f[4])).expect("odd kernels");
                let digest = format!("{:x}", Sha256::digest(&blur(&image, &given).data));
                assert_eq!(digest, f[5], "{line}");
                rows += 1;
            }
            assert_eq!(rows, 60);
        }
    }

    #[test]
    fn reflect_mirrors_without_repeating_the_edge() {
        let read: Vec<usize> = (0..9).map(|i| reflect(i, 2, 5)).collect();
        assert_eq!(read, [2, 1, 0, 1, 2, 3, 4, 3, 2]);
    }
}
