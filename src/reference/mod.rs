//! The CPU reference: one file per GPU stage, each written to read line by line like its shader.
//!
//! This is the spec in code. It is checked against real Pillow output (tests/goldens), and the
//! GPU stages are checked against it.

pub mod color;
pub mod idct;
pub mod resample;
pub mod smoothing;
pub mod tensor;
pub mod upsample;

use crate::error::Result;
use crate::image::RgbImage;
use crate::jpeg::{CoefficientImage, ColorSpace};
use upsample::{Method, Plane};

/// Stage 1 for component `ci`: every block (block-smoothed when libjpeg would) through the
/// IDCT, into a plane of `blocks_w * 8` × `blocks_h * 8` samples.
pub fn component_samples(image: &CoefficientImage, ci: usize) -> Vec<u8> {
    let comp = &image.components[ci];
    let stride = comp.blocks_w * 8;
    let mut samples = vec![0u8; stride * comp.blocks_h * 8];
    for by in 0..comp.height_in_blocks {
        for bx in 0..comp.width_in_blocks {
            let out = &mut samples[by * 8 * stride + bx * 8..];
            match &image.smoothing {
                Some(s) => {
                    let block = smoothing::smoothed_block(image, s, ci, bx, by);
                    idct::idct_islow(&block, &comp.quant, out, stride);
                }
                None => idct::idct_islow(comp.block(bx, by), &comp.quant, out, stride),
            }
        }
    }
    samples
}

/// Stage 2 for component `ci`: its samples upsampled to the image size.
pub fn full_size_component(image: &CoefficientImage, ci: usize) -> Result<Vec<u8>> {
    let comp = &image.components[ci];
    let samples = component_samples(image, ci);
    let method = Method::choose(
        comp.h,
        comp.v,
        image.max_h,
        image.max_v,
        comp.downsampled_width,
    )?;
    let plane = Plane {
        samples: &samples,
        stride: comp.blocks_w * 8,
        width: comp.downsampled_width,
        height: comp.downsampled_height,
    };
    Ok(upsample::upsample(
        &plane,
        method,
        image.width,
        image.height,
    ))
}

/// The whole reference pipeline: coefficients → RGB, equal to Pillow's `convert('RGB')`.
pub fn decode_rgb(image: &CoefficientImage) -> Result<RgbImage> {
    let planes = (0..image.components.len())
        .map(|ci| full_size_component(image, ci))
        .collect::<Result<Vec<_>>>()?;
    let pixels = image.width * image.height;
    let data = (0..pixels)
        .flat_map(|i| pixel_rgb(image.color_space, &planes, i))
        .collect();
    Ok(RgbImage {
        width: image.width,
        height: image.height,
        data,
    })
}

/// Stage 3 for one pixel: the full-size component samples at index `i` → RGB.
#[inline]
pub fn pixel_rgb(color_space: ColorSpace, planes: &[Vec<u8>], i: usize) -> [u8; 3] {
    let sample = |c: usize| planes[c][i];
    match color_space {
        ColorSpace::Grayscale => [sample(0); 3],
        ColorSpace::Rgb => [sample(0), sample(1), sample(2)],
        ColorSpace::YCbCr => color::ycc_to_rgb(sample(0), sample(1), sample(2)),
        ColorSpace::Cmyk => color::cmyk_to_rgb(sample(0), sample(1), sample(2), sample(3)),
        ColorSpace::Ycck => color::ycck_to_rgb(sample(0), sample(1), sample(2), sample(3)),
    }
}

/// Stages 3–4: `transform` applied to a decoded image (resize, centre crop, tensor).
pub fn apply_transform(rgb: RgbImage, transform: &crate::Transform) -> crate::Tensor {
    let image = resample::Image8 {
        width: rgb.width,
        height: rgb.height,
        channels: 3,
        data: rgb.data,
    };
    let target = transform.resize.map_or((image.width, image.height), |r| {
        r.target(image.width, image.height)
    });
    let resized = if target == (image.width, image.height) {
        // torchvision returns the image untouched; Pillow's same-size resize is a copy.
        image
    } else {
        let plan =
            crate::resample::ResizePlan::new(transform.filter, (image.width, image.height), target);
        resample::resize(&image, &plan)
    };
    tensor::to_tensor(&resized, transform)
}
