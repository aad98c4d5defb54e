//! `RandomRotation`'s pixels: Pillow's `affine_fixed` (libImaging/Geometry.c) walking the plan's
//! fixed-point map ([`crate::plan::Rotation`]) row by row and pixel by pixel, as the C code does;
//! shaders/tensor.wgsl computes the same map per pixel.

use super::resample::Image8;
use crate::plan::Rotation;

/// `image` rotated as `rotation` says: each output pixel is the image's pixel the map lands on,
/// or the fill where it lands outside.
pub fn rotate(image: &Image8, rotation: &Rotation) -> Image8 {
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
