//! `ColorJitter`'s adjustments and `RandomGrayscale` on an 8-bit RGB image, as torchvision's
//! PIL functions compute them (`_functional_pil.adjust_*`, `to_grayscale`): Pillow's
//! `ImageEnhance` blends with a degenerate image in `ImagingBlend`'s float32 arithmetic, and the
//! hue shift goes through Pillow's HSV conversion. Mirror of shaders/adjust.wgsl (all but hue,
//! which runs on the CPU only).

use super::resample::Image8;
use crate::plan::Adjustment;

/// Applies `adjustments` in order, then the grey conversion when `grayscale`.
pub fn adjust(image: &mut Image8, adjustments: &[Adjustment], grayscale: bool) {
    debug_assert_eq!(image.channels, 3);
    for adjustment in adjustments {
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
        }
    }
    if grayscale {
        for pixel in image.data.chunks_exact_mut(3) {
            pixel.fill(luma(pixel));
        }
    }
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

/// The hue channel's shift for `factor`: `np.int32(factor * 255).astype(np.uint8)`, the
/// product in double.
pub fn hue_shift(factor: f32) -> u8 {
    (f64::from(factor) * 255.0) as i32 as u8
}

/// Pillow's `rgb2hsv_row` for one pixel, float and double where Pillow's C has them.
pub fn rgb_to_hsv(pixel: &[u8]) -> [u8; 3] {
    let (r, g, b) = (pixel[0], pixel[1], pixel[2]);
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    if max == min {
        return [0, 0, max];
    }
    let cr = f32::from(max - min);
    let s = cr / f32::from(max);
    let rc = f32::from(max - r) / cr;
    let gc = f32::from(max - g) / cr;
    let bc = f32::from(max - b) / cr;
    // `2.0 + rc - bc` is double arithmetic stored in a float.
    let h: f32 = if r == max {
        bc - gc
    } else if g == max {
        (2.0 + f64::from(rc) - f64::from(bc)) as f32
    } else {
        (4.0 + f64::from(gc) - f64::from(rc)) as f32
    };
    let h = ((f64::from(h) / 6.0 + 1.0) % 1.0) as f32;
    let clip8 = |v: f64| (v as i32).clamp(0, 255) as u8;
    [
        clip8(f64::from(h) * 255.0),
        clip8(f64::from(s) * 255.0),
        max,
    ]
}

/// Pillow's `hsv2rgb` for one pixel.
pub fn hsv_to_rgb([h, s, v]: [u8; 3]) -> [u8; 3] {
    if s == 0 {
        return [v; 3];
    }
    let sector = (f64::from(h) * 6.0 / 255.0).floor() as i32;
    let f = (f64::from(h) * 6.0 / 255.0 - f64::from(sector as f32)) as f32;
    let fs = (f64::from(s) / 255.0) as f32;
    let v64 = f64::from(v);
    // C's round: halves away from zero, as Rust's.
    let clip8 = |x: f64| (x.round() as i32).clamp(0, 255) as u8;
    let p = clip8(v64 * (1.0 - f64::from(fs)));
    let q = clip8(v64 * (1.0 - f64::from(fs * f)));
    let t = clip8(v64 * (1.0 - f64::from(fs) * (1.0 - f64::from(f))));
    match sector % 6 {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
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
    fn greys_keep_their_value_through_hsv() {
        for v in 0..=255u8 {
            assert_eq!(rgb_to_hsv(&[v, v, v]), [0, 0, v]);
            assert_eq!(hsv_to_rgb([17, 0, v]), [v; 3]);
        }
        assert_eq!(luma(&[255, 255, 255]), 255);
        assert_eq!(hue_shift(-0.1), (-25i32) as u8);
    }
}
