//! The CPU reference: the mirror of each GPU stage, written to read line by line like its
//! shader, in a file of its own per operation (stage 2's upsampling, colour conversion and
//! orientation each have one; so do stage 4's resampling, rotation and tensor).
//!
//! This is the spec in code. It is checked against real Pillow output (tests/goldens), and the
//! GPU stages are checked against it. Every size, tap and table comes from the image's
//! [`ImagePlan`]; this module only computes pixels.

pub(crate) mod adjust;
pub(crate) mod blur;
pub(crate) mod color;
pub(crate) mod idct;
pub(crate) mod mix;
pub(crate) mod orient;
pub(crate) mod pad;
pub(crate) mod resample;
pub(crate) mod rotate;
#[cfg(target_arch = "x86_64")]
pub(crate) mod sse2;
pub(crate) mod tensor;
pub(crate) mod upsample;

use crate::error::Result;
use crate::image::RgbImage;
use crate::jpeg::{CoefficientImage, ColorSpace, Limits};
use crate::plan::{ComponentScaling, CropBox, ImagePlan, Sample};
use crate::{Tensor, Transform};
use upsample::Plane;

/// Stage 1 for component `ci`: every block (block-smoothed when libjpeg would) through the
/// IDCT of `idct_size`, into a plane of `blocks_w * idct_size` × `blocks_h * idct_size` samples.
pub(crate) fn component_samples(image: &CoefficientImage, ci: usize, idct_size: usize) -> Vec<u8> {
    let comp = &image.components[ci];
    let idct = idct::idct_of_size(idct_size);
    let stride = comp.blocks_w * idct_size;
    let mut samples = vec![0u8; stride * comp.blocks_h * idct_size];
    for by in 0..comp.height_in_blocks {
        for bx in 0..comp.width_in_blocks {
            let out = &mut samples[by * idct_size * stride + bx * idct_size..];
            idct(&image.block_for_idct(ci, bx, by), &comp.quant, out, stride);
        }
    }
    samples
}

/// The whole reference pipeline: coefficients → RGB, equal to Pillow's `convert('RGB')`.
pub fn decode_rgb(image: &CoefficientImage) -> Result<RgbImage> {
    // The decoder checked the image against the limits it was given.
    let limits = Limits::default().without_pixel_limit();
    let plan = ImagePlan::for_jpeg(image, &Transform::default(), &Sample::default(), &limits)?;
    decode_planned(image, &plan)
}

/// Coefficients → RGB at the plan's decoding scale (before orientation), equal to Pillow after
/// `draft('RGB', …)` chose that scale.
fn decode_planned(image: &CoefficientImage, plan: &ImagePlan) -> Result<RgbImage> {
    let (width, height) = plan.decoded;
    let mut data = vec![0u8; width * height * 3];
    for_each_rgb_row(image, plan, 0..height, |y, [r, g, b]| {
        let out = &mut data[y * width * 3..][..width * 3];
        for (((pixel, &r), &g), &b) in out.chunks_exact_mut(3).zip(r).zip(g).zip(b) {
            pixel.copy_from_slice(&[r, g, b]);
        }
    })?;
    Ok(RgbImage {
        width,
        height,
        data,
    })
}

/// Stages 1–2 a row at a time: calls `row(y, [r, g, b])` for each decoded row `y` in `rows`, in
/// order, with its R, G and B samples as three planes (the same slice three times for grey
/// images). Components are upsampled and colour-converted row by row, so neither full-size
/// chroma planes nor (for callers that consume rows) the RGB image are ever held.
fn for_each_rgb_row(
    image: &CoefficientImage,
    plan: &ImagePlan,
    rows: std::ops::Range<usize>,
    mut row: impl FnMut(usize, [&[u8]; 3]),
) -> Result<()> {
    let scalings: &[ComponentScaling] = &plan.components;
    let samples: Vec<Vec<u8>> = scalings
        .iter()
        .enumerate()
        .map(|(ci, s)| component_samples(image, ci, s.idct_size))
        .collect();
    let planes: Vec<Plane> = scalings
        .iter()
        .zip(&samples)
        .zip(&image.components)
        .map(|((s, samples), comp)| Plane {
            samples,
            stride: comp.blocks_w * s.idct_size,
            width: s.downsampled_width,
            height: s.downsampled_height,
        })
        .collect();
    let mut upsamplers: Vec<upsample::RowUpsampler> = planes
        .iter()
        .zip(scalings)
        .map(|(plane, s)| upsample::RowUpsampler::new(plane, s.upsampling))
        .collect();
    let (width, _) = plan.decoded;
    let mut rgb: [Vec<u8>; 3] = std::array::from_fn(|_| vec![0u8; width]);
    for y in rows {
        let mut components: [&[u8]; 4] = [&[]; 4];
        for (component, upsampler) in components.iter_mut().zip(&mut upsamplers) {
            *component = upsampler.row(y, width);
        }
        match image.color_space {
            ColorSpace::Grayscale => row(y, [components[0]; 3]),
            ColorSpace::Rgb => row(y, [components[0], components[1], components[2]]),
            color_space => {
                let [r, g, b] = &mut rgb;
                convert_colors(color_space, &components, [r, g, b]);
                row(y, [&rgb[0], &rgb[1], &rgb[2]]);
            }
        }
    }
    Ok(())
}

/// Stages 1–4 on the CPU: the tensor of `transform` for `image` (sample 0 of a random
/// transform), as `preprocess_planned` computes it, under the default [`Limits`].
pub fn preprocess(image: &CoefficientImage, transform: &Transform) -> Result<Tensor> {
    let plan = ImagePlan::for_jpeg(image, transform, &Sample::default(), &Limits::default())?;
    preprocess_planned(image, &plan)
}

/// Stages 1–4 on the CPU as `plan` says, the tensor carrying the plan's random parameters.
pub(crate) fn preprocess_planned(image: &CoefficientImage, plan: &ImagePlan) -> Result<Tensor> {
    let mut tensor = transform_planned(image, plan)?;
    tensor.params = plan.params.clone();
    Ok(tensor)
}

/// [`preprocess_planned`]'s pixels. When the width changes, each decoded row of the region goes
/// straight through Pillow's horizontal pass, so the full-size RGB image is never stored; the
/// result is the same as decoding the whole image, then [`apply_plan`].
fn transform_planned(image: &CoefficientImage, plan: &ImagePlan) -> Result<Tensor> {
    let streamed = plan
        .resize
        .as_ref()
        .and_then(|resize| resize.horizontal.as_ref().map(|taps| (resize, taps)));
    let Some((resize, taps)) = streamed.filter(|_| plan.orientation == 1) else {
        // Pillow orients the whole decoded image before resizing it.
        let rgb = orient::orient(decode_planned(image, plan)?, plan.orientation);
        return Ok(apply_plan(rgb, plan));
    };
    let row_bytes = plan.resized.0 * 3;
    let mut intermediate = resample::Image8 {
        width: plan.resized.0,
        height: resize.rows,
        channels: 3,
        data: vec![0u8; row_bytes * resize.rows],
    };
    let horizontal = resample::PlanarHorizontal::new(taps);
    let (first, left) = (plan.region.top + resize.first_row, plan.region.left);
    for_each_rgb_row(image, plan, first..first + resize.rows, |y, rgb| {
        let out = &mut intermediate.data[(y - first) * row_bytes..][..row_bytes];
        horizontal.row(rgb.map(|plane| &plane[left..]), out);
    })?;
    let resized = match &resize.vertical {
        Some(taps) => resample::vertical(&intermediate, taps),
        None => intermediate,
    };
    Ok(tensor::to_tensor(&resized, &plan.output))
}

/// [`preprocess`] for an input of any format, what the transform makes held to `limits`: a
/// non-JPEG image's pixels go straight to the transform (oriented first when it asks).
pub(crate) fn preprocess_decoded(
    decoded: crate::formats::Decoded,
    transform: &Transform,
    sample: &Sample,
    limits: &Limits,
) -> Result<Tensor> {
    match decoded {
        crate::formats::Decoded::Jpeg(image) => {
            let plan = ImagePlan::for_jpeg(&image, transform, sample, limits)?;
            preprocess_planned(&image, &plan)
        }
        crate::formats::Decoded::Pixels(pixels) => {
            let rgb = pixels.rgb;
            let size = (rgb.width, rgb.height);
            let plan = ImagePlan::for_pixels(size, pixels.orientation, transform, sample, limits)?;
            Ok(apply_plan(orient::orient(rgb, plan.orientation), &plan))
        }
    }
}

/// Stage 2 for one row of a colour-converted space (YCbCr, CMYK, YCCK): full-size component
/// rows → R, G and B rows, [`pixel_rgb`] for every pixel (SSE2 for YCbCr where the CPU has it).
pub(crate) fn convert_colors(
    color_space: ColorSpace,
    components: &[&[u8]],
    [r, g, b]: [&mut [u8]; 3],
) {
    if color_space == ColorSpace::YCbCr {
        #[cfg(target_arch = "x86_64")]
        return sse2::color::ycc_to_rgb_rows(
            components[0],
            components[1],
            components[2],
            [r, g, b],
        );
    }
    for (i, ((r, g), b)) in r.iter_mut().zip(g.iter_mut()).zip(b.iter_mut()).enumerate() {
        [*r, *g, *b] = pixel_rgb(color_space, components, i);
    }
}

/// Stage 2 for one pixel: the full-size component samples at index `i` → RGB.
#[inline]
pub(crate) fn pixel_rgb(color_space: ColorSpace, components: &[&[u8]], i: usize) -> [u8; 3] {
    let sample = |c: usize| components[c][i];
    match color_space {
        ColorSpace::Grayscale => [sample(0); 3],
        ColorSpace::Rgb => [sample(0), sample(1), sample(2)],
        ColorSpace::YCbCr => color::ycc_to_rgb(sample(0), sample(1), sample(2)),
        ColorSpace::Cmyk => color::cmyk_to_rgb(sample(0), sample(1), sample(2), sample(3)),
        ColorSpace::Ycck => color::ycck_to_rgb(sample(0), sample(1), sample(2), sample(3)),
    }
}

/// Stages 3–4: `transform` applied to a decoded, upright image (resize, centre crop, tensor;
/// sample 0 of a random transform), under the default [`Limits`].
pub fn apply_transform(rgb: RgbImage, transform: &Transform) -> Result<Tensor> {
    let size = (rgb.width, rgb.height);
    let plan = ImagePlan::for_pixels(size, 1, transform, &Sample::default(), &Limits::default())?;
    Ok(apply_plan(rgb, &plan))
}

/// Stages 3–4 as `plan` says, for an image already decoded and oriented (`plan.oriented`): its
/// region cut out (Pillow's `crop`), resized, then the output; the tensor carries the plan's
/// random parameters.
pub(crate) fn apply_plan(rgb: RgbImage, plan: &ImagePlan) -> Tensor {
    debug_assert_eq!((rgb.width, rgb.height), plan.oriented);
    let image = crop(
        resample::Image8 {
            width: rgb.width,
            height: rgb.height,
            channels: 3,
            data: rgb.data,
        },
        plan.region,
    );
    // Without a resize plan the size stays: torchvision returns the image untouched.
    let resized = match &plan.resize {
        Some(resize) => resample::resize(&image, resize),
        None => image,
    };
    let mut tensor = tensor::to_tensor(&resized, &plan.output);
    tensor.params = plan.params.clone();
    tensor
}

/// Pillow's `img.crop((left, top, left + width, top + height))` of a box inside the image.
fn crop(image: resample::Image8, region: CropBox) -> resample::Image8 {
    if (region.width, region.height) == (image.width, image.height) {
        return image;
    }
    let row = image.width * image.channels;
    let data = image
        .data
        .chunks_exact(row)
        .skip(region.top)
        .take(region.height)
        .flat_map(|r| &r[region.left * image.channels..][..region.width * image.channels])
        .copied()
        .collect();
    resample::Image8 {
        width: region.width,
        height: region.height,
        channels: image.channels,
        data,
    }
}
