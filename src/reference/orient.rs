//! The EXIF orientation, applied as Pillow's `ImageOps.exif_transpose` applies it: a pure
//! permutation of the decoded pixels, before any resize. Mirror of `oriented_index` in
//! shaders/color.wgsl, where the colour stage stores each pixel at its oriented place.

use crate::plan::oriented_size;
use crate::RgbImage;

/// Where pixel (x, y) of a `width`×`height` image lands in the oriented image (its index).
/// Orientations 2–8 are Pillow's FLIP_LEFT_RIGHT, ROTATE_180, FLIP_TOP_BOTTOM, TRANSPOSE,
/// ROTATE_270, TRANSVERSE and ROTATE_90; anything else leaves the image as it is.
pub fn oriented_index(x: usize, y: usize, width: usize, height: usize, orientation: u8) -> usize {
    let (right, bottom) = (width - 1 - x, height - 1 - y);
    let (ox, oy, oriented_width) = match orientation {
        2 => (right, y, width),
        3 => (right, bottom, width),
        4 => (x, bottom, width),
        5 => (y, x, height),
        6 => (bottom, x, height),
        7 => (bottom, right, height),
        8 => (y, right, height),
        _ => (x, y, width),
    };
    oy * oriented_width + ox
}

/// `rgb` in `orientation`.
pub fn orient(rgb: RgbImage, orientation: u8) -> RgbImage {
    if !(2..=8).contains(&orientation) {
        return rgb;
    }
    let (width, height) = oriented_size((rgb.width, rgb.height), orientation);
    let mut data = vec![0; rgb.data.len()];
    for (i, pixel) in rgb.data.chunks_exact(3).enumerate() {
        let to = oriented_index(
            i % rgb.width,
            i / rgb.width,
            rgb.width,
            rgb.height,
            orientation,
        );
        data[to * 3..to * 3 + 3].copy_from_slice(pixel);
    }
    RgbImage {
        width,
        height,
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3×2 image whose pixels are numbered 0..6 in their R byte.
    fn numbered() -> RgbImage {
        RgbImage {
            width: 3,
            height: 2,
            data: (0..6).flat_map(|v| [v, 0, 0]).collect(),
        }
    }

    fn reds(image: &RgbImage) -> Vec<u8> {
        image.data.chunks(3).map(|p| p[0]).collect()
    }

    #[test]
    fn every_orientation_moves_pixels_as_pillow_does() {
        // 0 1 2
        // 3 4 5
        let expected: [(u8, (usize, usize), [u8; 6]); 8] = [
            (1, (3, 2), [0, 1, 2, 3, 4, 5]),
            (2, (3, 2), [2, 1, 0, 5, 4, 3]), // mirrored
            (3, (3, 2), [5, 4, 3, 2, 1, 0]), // upside down
            (4, (3, 2), [3, 4, 5, 0, 1, 2]), // flipped
            (5, (2, 3), [0, 3, 1, 4, 2, 5]), // transposed
            (6, (2, 3), [3, 0, 4, 1, 5, 2]), // turned clockwise
            (7, (2, 3), [5, 2, 4, 1, 3, 0]), // transversed
            (8, (2, 3), [2, 5, 1, 4, 0, 3]), // turned anticlockwise
        ];
        for (orientation, size, pixels) in expected {
            let oriented = orient(numbered(), orientation);
            assert_eq!((oriented.width, oriented.height), size, "{orientation}");
            assert_eq!(reds(&oriented), pixels, "{orientation}");
        }
        assert_eq!(reds(&orient(numbered(), 9)), [0, 1, 2, 3, 4, 5]);
    }
}
