//! The CPU reference: one file per GPU stage, each written to read line by line like its shader.
//!
//! This is the spec in code. It is checked against real Pillow output (tests/goldens), and the
//! GPU stages are checked against it.

pub mod color;
pub mod idct;
pub mod orient;
pub mod resample;
pub mod smoothing;
#[cfg(target_arch = "x86_64")]
pub mod sse2;
pub mod tensor;
pub mod upsample;

use crate::error::Result;
use crate::image::RgbImage;
use crate::jpeg::{CoefficientImage, ColorSpace};
use upsample::{Method, Plane};

/// How one component is decoded at scale 1/`denominator` (libjpeg's DCT scaling, which
/// Pillow's `draft()` asks for; 1 is the normal decode). PARITY §2a-3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComponentScaling {
    /// Samples per block side from the IDCT: 8, 4, 2 or 1.
    pub idct_size: usize,
    /// Real samples per row after the IDCT.
    pub downsampled_width: usize,
    /// Real rows after the IDCT.
    pub downsampled_height: usize,
    /// How the samples reach the output size.
    pub upsampling: Method,
}

/// libjpeg's `jpeg_core_output_dimensions` and `_jinit_upsampler` choices for component `ci`.
pub fn component_scaling(
    image: &CoefficientImage,
    ci: usize,
    denominator: usize,
) -> Result<ComponentScaling> {
    let comp = &image.components[ci];
    let (max_h, max_v) = (image.max_h, image.max_v);
    let min_size = 8 / denominator;
    // Chroma gets a larger IDCT instead of upsampling where the ratios allow.
    let mut idct_size = min_size;
    while idct_size < 8
        && (max_h * min_size).is_multiple_of(comp.h * idct_size * 2)
        && (max_v * min_size).is_multiple_of(comp.v * idct_size * 2)
    {
        idct_size *= 2;
    }
    let downsampled_width = (image.width * comp.h * idct_size).div_ceil(max_h * 8);
    let downsampled_height = (image.height * comp.v * idct_size).div_ceil(max_v * 8);
    let groups_in = (comp.h * idct_size / min_size, comp.v * idct_size / min_size);
    let upsampling = Method::choose(groups_in, (max_h, max_v), downsampled_width, min_size > 1)?;
    Ok(ComponentScaling {
        idct_size,
        downsampled_width,
        downsampled_height,
        upsampling,
    })
}

/// Output size at scale 1/`denominator`: `ceil(size / denominator)`.
pub fn scaled_size(image: &CoefficientImage, denominator: usize) -> (usize, usize) {
    (
        image.width.div_ceil(denominator),
        image.height.div_ceil(denominator),
    )
}

/// Stage 1 for component `ci`: every block (block-smoothed when libjpeg would) through the
/// IDCT of `idct_size`, into a plane of `blocks_w * idct_size` × `blocks_h * idct_size` samples.
pub fn component_samples(image: &CoefficientImage, ci: usize, idct_size: usize) -> Vec<u8> {
    let comp = &image.components[ci];
    let idct = idct::idct_of_size(idct_size);
    let stride = comp.blocks_w * idct_size;
    let mut samples = vec![0u8; stride * comp.blocks_h * idct_size];
    for by in 0..comp.height_in_blocks {
        for bx in 0..comp.width_in_blocks {
            let out = &mut samples[by * idct_size * stride + bx * idct_size..];
            match &image.smoothing {
                Some(s) => idct(
                    &smoothing::smoothed_block(image, s, ci, bx, by),
                    &comp.quant,
                    out,
                    stride,
                ),
                None => idct(comp.block(bx, by), &comp.quant, out, stride),
            }
        }
    }
    samples
}

/// The whole reference pipeline: coefficients → RGB, equal to Pillow's `convert('RGB')`.
pub fn decode_rgb(image: &CoefficientImage) -> Result<RgbImage> {
    decode_rgb_scaled(image, 1)
}

/// Coefficients → RGB at scale 1/`denominator` (1, 2, 4 or 8), equal to Pillow after
/// `draft('RGB', …)` chose that scale.
pub fn decode_rgb_scaled(image: &CoefficientImage, denominator: usize) -> Result<RgbImage> {
    let (width, height) = scaled_size(image, denominator);
    let mut data = vec![0u8; width * height * 3];
    for_each_rgb_row(image, denominator, 0..height, |y, [r, g, b]| {
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

/// Stages 1–3 a row at a time: calls `row(y, [r, g, b])` for each image row `y` in `rows`, in
/// order, with its R, G and B samples as three planes (the same slice three times for grey
/// images). Components are upsampled and colour-converted row by row, so neither full-size
/// chroma planes nor (for callers that consume rows) the RGB image are ever held.
pub fn for_each_rgb_row(
    image: &CoefficientImage,
    denominator: usize,
    rows: std::ops::Range<usize>,
    mut row: impl FnMut(usize, [&[u8]; 3]),
) -> Result<()> {
    let scalings = (0..image.components.len())
        .map(|ci| component_scaling(image, ci, denominator))
        .collect::<Result<Vec<_>>>()?;
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
        .zip(&scalings)
        .map(|(plane, s)| upsample::RowUpsampler::new(plane, s.upsampling))
        .collect();
    let (width, _) = scaled_size(image, denominator);
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

/// Stages 1–4 on the CPU: the tensor of `transform` for `image`. When the width changes, each
/// decoded row goes straight through Pillow's horizontal pass, so the full-size RGB image is
/// never stored; the result is the same as [`decode_rgb_scaled`] then [`apply_transform`].
pub fn preprocess(image: &CoefficientImage, transform: &crate::Transform) -> Result<crate::Tensor> {
    let denominator = transform.draft_denominator(image.width, image.height);
    let orientation = transform.applied_orientation(image.orientation);
    if orientation != 1 {
        // Pillow orients the whole decoded image before resizing it.
        let rgb = orient::orient(decode_rgb_scaled(image, denominator)?, orientation);
        return Ok(apply_transform(rgb, transform));
    }
    let (width, height) = scaled_size(image, denominator);
    let target = transform
        .resize
        .map_or((width, height), |r| r.target(width, height));
    let plan = crate::resample::ResizePlan::new(transform.filter, (width, height), target);
    let Some(taps) = plan
        .horizontal
        .as_ref()
        .filter(|_| target != (width, height))
    else {
        return Ok(apply_transform(
            decode_rgb_scaled(image, denominator)?,
            transform,
        ));
    };
    let row_bytes = target.0 * 3;
    let mut intermediate = resample::Image8 {
        width: target.0,
        height: plan.rows,
        channels: 3,
        data: vec![0u8; row_bytes * plan.rows],
    };
    let horizontal = resample::PlanarHorizontal::new(taps);
    for_each_rgb_row(
        image,
        denominator,
        plan.first_row..plan.first_row + plan.rows,
        |y, rgb| {
            let out = &mut intermediate.data[(y - plan.first_row) * row_bytes..][..row_bytes];
            horizontal.row(rgb, out);
        },
    )?;
    let resized = match &plan.vertical {
        Some(taps) => resample::vertical(&intermediate, taps),
        None => intermediate,
    };
    Ok(tensor::to_tensor(&resized, transform))
}

/// [`preprocess`] for an input of any format: a non-JPEG image's pixels go straight to the
/// transform (oriented first when it asks).
pub fn preprocess_decoded(
    decoded: crate::formats::Decoded,
    transform: &crate::Transform,
) -> Result<crate::Tensor> {
    match decoded {
        crate::formats::Decoded::Jpeg(image) => preprocess(&image, transform),
        crate::formats::Decoded::Pixels(pixels) => {
            let orientation = transform.applied_orientation(pixels.orientation);
            let rgb = orient::orient(pixels.rgb, orientation);
            Ok(apply_transform(rgb, transform))
        }
    }
}

/// Stage 3 for one row of a colour-converted space (YCbCr, CMYK, YCCK): full-size component
/// rows → R, G and B rows, [`pixel_rgb`] for every pixel (SSE2 for YCbCr where the CPU has it).
pub fn convert_colors(color_space: ColorSpace, components: &[&[u8]], [r, g, b]: [&mut [u8]; 3]) {
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

/// Stage 3 for one pixel: the full-size component samples at index `i` → RGB.
#[inline]
pub fn pixel_rgb(color_space: ColorSpace, components: &[&[u8]], i: usize) -> [u8; 3] {
    let sample = |c: usize| components[c][i];
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
