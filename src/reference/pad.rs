//! `Pad` and `RandomCrop`'s padding on the CPU: each pad makes the padded image, as torchvision's
//! `F.pad` does (`ImageOps.expand` with the fill, or `np.pad`'s modes), from the plan's
//! [`Padding`]s, one after another. shaders/tensor.wgsl reads the resized image through the same
//! pads instead, a position at a time (`cropped`).

use super::resample::Image8;
use crate::plan::Padding;

/// `image` padded by each of `paddings` in turn.
pub fn pad(image: &Image8, paddings: &[Padding]) -> Image8 {
    let mut image = image.clone();
    for padding in paddings {
        image = pad_once(&image, padding);
    }
    image
}

/// One `F.pad`: each pixel of the padded image is the one its position maps to, or the fill.
fn pad_once(image: &Image8, padding: &Padding) -> Image8 {
    let (width, height) = padding.outer;
    let channels = image.channels;
    let mut data = Vec::with_capacity(width * height * channels);
    for y in 0..height {
        for x in 0..width {
            match padding.source(x as isize, y as isize) {
                Some((sx, sy)) => {
                    let at = (sy as usize * image.width + sx as usize) * channels;
                    data.extend_from_slice(&image.data[at..at + channels]);
                }
                None => data.extend_from_slice(&padding.fill[..channels]),
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
