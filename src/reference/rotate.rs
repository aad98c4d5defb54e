//! The pixels of `RandomRotation` and the augmentations' affine maps ([`crate::plan::Rotation`]),
//! as libImaging/Geometry.c makes them. Nearest-neighbour sampling: `affine_fixed` walking the
//! plan's fixed-point map row by row and pixel by pixel, as the C code does (shaders/tensor.wgsl
//! and shaders/adjust.wgsl compute the same map per pixel), or, for a matrix without rotation or
//! shear, `ImagingScaleAffine` adding up its steps in doubles. Bilinear and bicubic sampling:
//! `ImagingGenericTransform` with `affine_transform` and `bilinear_filter32RGB` or
//! `bicubic_filter32RGB`; `RandomPerspective`'s maps with any filter: `ImagingGenericTransform`
//! with `perspective_transform` (and `nearest_filter32` for the nearest pixel). Every operation
//! runs in doubles in the C code's order (Rust's `f64` rounds each as x86-64's doubles do, and
//! never fuses a multiply and an add; shaders/adjust.wgsl does the same in shaders/double.wgsl).

use super::resample::Image8;
use crate::plan::Rotation;
use crate::transform::Filter;

/// `image` mapped as `rotation` says: each output pixel is the image's pixel the map lands on
/// (or the image interpolated there), or the fill where it lands outside.
pub fn rotate(image: &Image8, rotation: &Rotation) -> Image8 {
    if rotation.is_scaling() {
        return scaled(image, rotation);
    }
    if !rotation.is_fixed_point() {
        return generic(image, rotation);
    }
    let (width, height, channels) = (image.width, image.height, image.channels);
    let fill = &rotation.fill[..channels.min(3)];
    let mut data: Vec<u8> = fill
        .iter()
        .copied()
        .cycle()
        .take(width * height * channels)
        .collect();
    let [a0, a1, a2] = rotation.x_map.map(i64::from);
    let [a3, a4, a5] = rotation.y_map.map(i64::from);
    let (mut row_x, mut row_y) = (a2, a5);
    for y in 0..height {
        let (mut xx, mut yy) = (row_x, row_y);
        for x in 0..width {
            let (xin, yin) = (xx >> 16, yy >> 16);
            if (0..width as i64).contains(&xin) && (0..height as i64).contains(&yin) {
                let from = (yin as usize * width + xin as usize) * channels;
                let to = (y * width + x) * channels;
                data[to..to + channels].copy_from_slice(&image.data[from..from + channels]);
            }
            xx += a0;
            yy += a3;
        }
        row_x += a1;
        row_y += a4;
    }
    Image8 {
        width,
        height,
        channels,
        data,
    }
}

/// `ImagingScaleAffine` of `image` by `map`'s matrix: the source column of each output column
/// and the source row of each output row, walked in doubles from the first pixel's centre
/// (`COORD`: -1 for a negative position, else truncated); the fill where either falls outside.
fn scaled(image: &Image8, map: &Rotation) -> Image8 {
    let (width, height, channels) = (image.width, image.height, image.channels);
    let m = map.matrix;
    let walk = |start: f64, step: f64, count: usize, limit: usize| -> Vec<Option<usize>> {
        let mut at = start;
        (0..count)
            .map(|_| {
                let source = (at >= 0.0 && at < limit as f64).then_some(at as usize);
                at += step;
                source
            })
            .collect()
    };
    let columns = walk(m[2] + m[0] * 0.5, m[0], width, width);
    let rows = walk(m[5] + m[4] * 0.5, m[4], height, height);
    let fill = &map.fill[..channels.min(3)];
    let mut data = Vec::with_capacity(width * height * channels);
    for row in &rows {
        for column in &columns {
            match row.zip(*column) {
                Some((y, x)) => {
                    let at = (y * width + x) * channels;
                    data.extend_from_slice(&image.data[at..at + channels]);
                }
                None => data.extend_from_slice(fill),
            }
        }
    }
    Image8 {
        width,
        height,
        channels,
        data,
    }
}

/// `ImagingGenericTransform` of `image` by `map` (`affine_transform` or
/// `perspective_transform`) with its filter: `nearest_filter32`, `bilinear_filter32RGB` or
/// `bicubic_filter32RGB`.
fn generic(image: &Image8, map: &Rotation) -> Image8 {
    let (width, height, channels) = (image.width, image.height, image.channels);
    let fill = &map.fill[..channels.min(3)];
    let mut data = Vec::with_capacity(width * height * channels);
    for y in 0..height {
        for x in 0..width {
            // The filters' bounds test (COORD's for the nearest pixel is the same).
            let inside = |&(xin, yin): &(f64, f64)| {
                xin >= 0.0 && xin < width as f64 && yin >= 0.0 && yin < height as f64
            };
            let Some((xin, yin)) = map.point(x, y).filter(inside) else {
                data.extend_from_slice(fill);
                continue;
            };
            if map.filter == Filter::Nearest {
                let at = ((yin as usize) * width + xin as usize) * channels;
                data.extend_from_slice(&image.data[at..at + channels]);
                continue;
            }
            let sampler = Sampler::at(image, xin, yin);
            for c in 0..channels {
                data.push(match map.filter {
                    Filter::Bicubic => sampler.bicubic(c),
                    _ => sampler.bilinear(c),
                });
            }
        }
    }
    Image8 {
        width,
        height,
        channels,
        data,
    }
}

/// One output pixel's interpolation: the filters' `_HEAD` macros, its point less half a pixel
/// split into a whole part (`x`, `y`) and a fraction (`dx`, `dy`).
struct Sampler<'a> {
    image: &'a Image8,
    x: i64,
    y: i64,
    dx: f64,
    dy: f64,
}

impl<'a> Sampler<'a> {
    fn at(image: &'a Image8, xin: f64, yin: f64) -> Self {
        let (xin, yin) = (xin - 0.5, yin - 0.5);
        // FLOOR: floor for negative values, truncation for the others (the same whole number).
        let (x, y) = (xin.floor(), yin.floor());
        Self {
            image,
            x: x as i64,
            y: y as i64,
            dx: xin - x,
            dy: yin - y,
        }
    }

    /// Sample `c` of column `x` and row `y`, each clipped to the image (`XCLIP`, `YCLIP`; the C
    /// code's rows past the image repeat the last row read, the same value).
    fn sample(&self, x: i64, y: i64, c: usize) -> f64 {
        let image = self.image;
        let x = x.clamp(0, image.width as i64 - 1) as usize;
        let y = y.clamp(0, image.height as i64 - 1) as usize;
        f64::from(image.data[(y * image.width + x) * image.channels + c])
    }

    /// `BILINEAR_BODY`, truncated to a byte: `a + (b - a)·d` along the row, then down.
    fn bilinear(&self, c: usize) -> u8 {
        let row = |y| {
            let (a, b) = (self.sample(self.x, y, c), self.sample(self.x + 1, y, c));
            a + (b - a) * self.dx
        };
        let (top, bottom) = (row(self.y), row(self.y + 1));
        (top + (bottom - top) * self.dy) as u8
    }

    /// `BICUBIC_BODY`, clamped to 0..=255 and truncated: the cubic through four samples along
    /// each of four rows, then through the rows' four values.
    fn bicubic(&self, c: usize) -> u8 {
        let row = |y| {
            let v = [-1, 0, 1, 2].map(|k| self.sample(self.x + k, y, c));
            cubic(v, self.dx)
        };
        let v = cubic([-1, 0, 1, 2].map(|k| row(self.y + k)), self.dy);
        if v <= 0.0 {
            0
        } else if v >= 255.0 {
            255
        } else {
            v as u8
        }
    }
}

/// The `BICUBIC` macro: Pillow's cubic through `v` at `d`, in its order of operations (on a
/// row's samples, its integer sums are exact in doubles too).
fn cubic([v1, v2, v3, v4]: [f64; 4], d: f64) -> f64 {
    let p1 = v2;
    let p2 = -v1 + v3;
    let p3 = 2.0 * (v1 - v2) + v3 - v4;
    let p4 = -v1 + v2 - v3 + v4;
    p1 + d * (p2 + d * (p3 + d * p4))
}
