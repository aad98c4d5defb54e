//! The colour stage's operations ([`Adjustment`]) on an 8-bit RGB image, as torchvision's
//! PIL functions compute them (`_functional_pil.adjust_*`, `to_grayscale`): Pillow's
//! `ImageEnhance` blends with a degenerate image in `ImagingBlend`'s float32 arithmetic, and the
//! hue shift goes through Pillow's HSV conversion ([`crate::plan::hsv`]); Pillow's Gaussian blur
//! is its box blurs ([`super::blur::box_blur`]). Mirror of
//! shaders/adjust.wgsl.

use super::resample::Image8;
use crate::plan::hsv::{hsv_to_rgb, hue_shift, rgb_to_hsv};
use crate::plan::{levels, Adjustment, BoxBlur};

/// Applies `adjustment`.
pub fn adjust(image: &mut Image8, adjustment: &Adjustment) {
    debug_assert_eq!(image.channels, 3);
    match *adjustment {
        // Blended with black.
        Adjustment::Brightness(f) => image.data.iter_mut().for_each(|v| *v = blend(0, *v, f)),
        // Blended with a flat grey at the rounded mean of the image's luma.
        Adjustment::Contrast(f) => {
            let mean = mean_luma(image);
            image.data.iter_mut().for_each(|v| *v = blend(mean, *v, f));
        }
        // Blended with the image's own luma.
        Adjustment::Saturation(f) => {
            for pixel in image.data.chunks_exact_mut(3) {
                let l = luma(pixel);
                pixel.iter_mut().for_each(|v| *v = blend(l, *v, f));
            }
        }
        Adjustment::Hue(f) => {
            let shift = hue_shift(f);
            for pixel in image.data.chunks_exact_mut(3) {
                let [h, s, v] = rgb_to_hsv(pixel);
                pixel.copy_from_slice(&hsv_to_rgb([h.wrapping_add(shift), s, v]));
            }
        }
        // Blended with the image smoothed.
        Adjustment::Sharpness(f) => {
            let smooth = smoothed(image);
            for (v, s) in image.data.iter_mut().zip(smooth) {
                *v = blend(s, *v, f);
            }
        }
        Adjustment::Posterize(bits) => {
            image
                .data
                .iter_mut()
                .for_each(|v| *v = levels::posterize(*v, bits));
        }
        Adjustment::Solarize(from) => {
            image
                .data
                .iter_mut()
                .for_each(|v| *v = levels::solarize(*v, from));
        }
        Adjustment::SolarizeAdd(add) => {
            image
                .data
                .iter_mut()
                .for_each(|v| *v = levels::solarize_add(*v, add));
        }
        Adjustment::AutoContrast => through_tables(image, |h| {
            let (lo, hi) = levels::extremes(h);
            levels::autocontrast_table(lo, hi)
        }),
        Adjustment::Equalize => through_tables(image, levels::equalize_table),
        Adjustment::Grayscale => {
            for pixel in image.data.chunks_exact_mut(3) {
                pixel.fill(luma(pixel));
            }
        }
        Adjustment::PillowGaussianBlur(radius) => {
            *image = super::blur::box_blur(image, &BoxBlur::of(radius));
        }
    }
}

/// Each channel through the table `table` makes of its histogram (`ImageOps._lut`).
fn through_tables(image: &mut Image8, table: impl Fn(&[u32; 256]) -> [u8; 256]) {
    let mut histograms = [[0u32; 256]; 3];
    for pixel in image.data.chunks_exact(3) {
        for (c, &v) in pixel.iter().enumerate() {
            histograms[c][usize::from(v)] += 1;
        }
    }
    let tables = histograms.map(|h| table(&h));
    for pixel in image.data.chunks_exact_mut(3) {
        for (c, v) in pixel.iter_mut().enumerate() {
            *v = tables[c][usize::from(*v)];
        }
    }
}

/// `image.filter(ImageFilter.SMOOTH)`: Pillow's `ImagingFilter3x3` with the kernel (1 1 1, 1 5 1,
/// 1 1 1) / 13 in float32, summed row by row from the row below (each row's three products left
/// to right, then added to the sum that starts at 0.5), truncated and clipped; the edge pixels,
/// and an image under 3×3, as they are.
pub fn smoothed(image: &Image8) -> Vec<u8> {
    let (w, h) = (image.width, image.height);
    let mut out = image.data.clone();
    if w < 3 || h < 3 {
        return out;
    }
    let (k, centre) = (1.0f32 / 13.0, 5.0f32 / 13.0);
    let at = |x: usize, y: usize, c: usize| f32::from(image.data[(y * w + x) * 3 + c]);
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            for c in 0..3 {
                let row = |y: usize, middle: f32| {
                    at(x - 1, y, c) * k + at(x, y, c) * middle + at(x + 1, y, c) * k
                };
                let mut sum = 0.5f32;
                sum += row(y + 1, k);
                sum += row(y, centre);
                sum += row(y - 1, k);
                // `as` truncates and saturates, as Pillow's clip8 does.
                out[(y * w + x) * 3 + c] = sum as u8;
            }
        }
    }
    out
}

/// `ImagingBlend` for one sample: `in1 + alpha · (in2 − in1)` in float32 (a product, then a
/// sum, each rounded), truncated toward zero and clipped to 0..=255.
#[inline]
pub fn blend(in1: u8, in2: u8, alpha: f32) -> u8 {
    let value = f32::from(in1) + alpha * (i32::from(in2) - i32::from(in1)) as f32;
    // `as` truncates toward zero and saturates, as Pillow's clip and (UINT8) cast do.
    value as u8
}

/// Pillow's `convert('L')` of one RGB pixel (ITU-R 601-2 in 16-bit fixed point).
#[inline]
pub fn luma(pixel: &[u8]) -> u8 {
    let [r, g, b] = [0, 1, 2].map(|c| u32::from(pixel[c]));
    ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16) as u8
}

/// `ImageEnhance.Contrast`'s grey: `int(ImageStat.Stat(img.convert('L')).mean[0] + 0.5)`. The
/// sum is exact and the mean of n ≤ 2²⁴ samples lies at least 1/(2n) from a rounding tie
/// unless on it, so the integer form `(2·sum + n) / (2n)` equals Python's double arithmetic.
pub fn mean_luma(image: &Image8) -> u8 {
    let sum: u64 = image.data.chunks_exact(3).map(|p| u64::from(luma(p))).sum();
    let n = (image.width * image.height).max(1) as u64;
    ((2 * sum + n) / (2 * n)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blend_truncates_and_clips_like_pillow() {
        assert_eq!(blend(0, 200, 1.4), 255);
        assert_eq!(blend(0, 101, 0.6), 60); // 60.6
        assert_eq!(blend(128, 10, 1.5), 0); // 128 - 177 < 0
        assert_eq!(blend(100, 100, 1.3), 100);
        assert_eq!(blend(7, 9, 0.0), 7);
        assert_eq!(blend(7, 9, 1.0), 9);
    }

    #[test]
    fn white_is_full_luma() {
        assert_eq!(luma(&[255, 255, 255]), 255);
        assert_eq!(luma(&[0, 0, 0]), 0);
    }
}
