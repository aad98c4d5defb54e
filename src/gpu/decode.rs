//! Stages 1–3 on the GPU: coefficients → RGB. One command buffer per image: an IDCT dispatch per
//! component, then colour conversion in bands of rows that fit the device's binding limits.

use super::dispatch::{dispatch, read_buffer, storage_buffer, uniform_buffer};
use super::params::{ColorParams, IdctParams, PlaneParams};
use crate::error::{Error, Result};
use crate::jpeg::{CoefficientImage, ColorSpace};
use crate::reference::upsample::Method;
use crate::reference::{component_scaling, smoothing};
use crate::RgbImage;

/// The compiled pipelines; make once per device and reuse.
pub struct GpuDecoder {
    idct: wgpu::ComputePipeline,
    color: wgpu::ComputePipeline,
}

impl GpuDecoder {
    /// Compiles the shaders for `device`.
    pub fn new(device: &wgpu::Device) -> Self {
        Self {
            idct: super::compute_pipeline(device, "idct", include_str!("../../shaders/idct.wgsl")),
            color: super::compute_pipeline(
                device,
                "color",
                include_str!("../../shaders/color.wgsl"),
            ),
        }
    }

    /// Decodes `image` to RGB on the GPU: bit-identical to [`crate::reference::decode_rgb`].
    pub fn decode_rgb(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        image: &CoefficientImage,
    ) -> Result<RgbImage> {
        super::dispatch::checked(device, || self.run(device, queue, image))
    }

    fn run(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        image: &CoefficientImage,
    ) -> Result<RgbImage> {
        let mut encoder = device.create_command_encoder(&Default::default());
        let planes = self.encode_idct(device, &mut encoder, image, 1)?;
        let rgbx = self.encode_color(device, &mut encoder, image, 1, &planes)?;
        let (width, height) = (rgbx.width, rgbx.height);
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rgbx readback"),
            size: (width * height * 4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let chunk_bytes = (rgbx.chunk_rows * width * 4) as u64;
        for (i, band) in rgbx.bands.iter().enumerate() {
            encoder.copy_buffer_to_buffer(band, 0, &readback, i as u64 * chunk_bytes, band.size());
        }
        queue.submit([encoder.finish()]);
        let words = read_buffer(device, &readback)?;
        let data = words
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        Ok(RgbImage {
            width,
            height,
            data,
        })
    }

    /// Stage 1 at scale 1/`denominator`: one IDCT dispatch per component, each into its own
    /// plane buffer.
    pub(crate) fn encode_idct(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        image: &CoefficientImage,
        denominator: usize,
    ) -> Result<Vec<(wgpu::Buffer, PlaneParams)>> {
        let mut planes = Vec::with_capacity(image.components.len());
        for (ci, comp) in image.components.iter().enumerate() {
            let scaling = component_scaling(image, ci, denominator)?;
            let size = scaling.idct_size;
            // Small blocks are done a few at a time so that each invocation writes whole words.
            let per_invocation = (4 / size).max(1);
            let words_per_group = (size * per_invocation / 4).max(1);
            let coefficients = upload_coefficients(image, ci);
            let coefs = storage_buffer(
                device,
                "coefficients",
                &coefficients,
                wgpu::BufferUsages::empty(),
            );
            let row_words = comp.blocks_w.div_ceil(per_invocation) * words_per_group;
            let samples = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("samples"),
                size: (row_words * comp.blocks_h * size * 4).max(4) as u64,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
            let params = IdctParams {
                blocks_w: comp.blocks_w as u32,
                width_in_blocks: comp.width_in_blocks as u32,
                height_in_blocks: comp.height_in_blocks as u32,
                sample_row_words: row_words as u32,
                idct_size: size as u32,
                blocks_per_invocation: per_invocation as u32,
                quant: comp.quant.map(|q| i32::from(q as i16)),
            };
            let uniform = uniform_buffer(device, &params.to_bytes());
            let blocks =
                (comp.width_in_blocks.div_ceil(per_invocation) * comp.height_in_blocks) as u32;
            dispatch(
                device,
                encoder,
                &self.idct,
                &[&uniform, &coefs, &samples],
                blocks,
            );
            let plane = PlaneParams {
                stride: (row_words * 4) as u32,
                width: scaling.downsampled_width as u32,
                height: scaling.downsampled_height as u32,
                method: method_index(scaling.upsampling).0,
                box_h: method_index(scaling.upsampling).1,
                box_v: method_index(scaling.upsampling).2,
            };
            planes.push((samples, plane));
        }
        Ok(planes)
    }

    /// Stages 2–3 at scale 1/`denominator`: upsampling and colour conversion, in bands that
    /// fit one storage binding.
    pub(crate) fn encode_color(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        image: &CoefficientImage,
        denominator: usize,
        planes: &[(wgpu::Buffer, PlaneParams)],
    ) -> Result<Rgbx> {
        let (width, height) = crate::reference::scaled_size(image, denominator);
        let chunk_rows = rows_per_binding(device, width)?;
        let chunks = height.div_ceil(chunk_rows);
        if chunks > MAX_CHUNKS {
            return Err(Error::Gpu(format!(
                "a {width}x{height} image exceeds this device's storage binding limits; use the CPU backend"
            )));
        }
        let dummy = storage_buffer(device, "unused plane", &[0u32], wgpu::BufferUsages::empty());
        let mut plane_params = [PlaneParams::default(); 4];
        for (slot, (_, p)) in plane_params.iter_mut().zip(planes) {
            *slot = *p;
        }
        let mut bands = Vec::with_capacity(chunks);
        for first_row in (0..height).step_by(chunk_rows) {
            let rows = chunk_rows.min(height - first_row);
            let params = ColorParams {
                width: width as u32,
                rows: rows as u32,
                first_row: first_row as u32,
                color_space: color_space_index(image.color_space),
                planes: plane_params,
            };
            let uniform = uniform_buffer(device, &params.to_bytes());
            let band = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("rgbx band"),
                size: (rows * width * 4) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let plane = |c: usize| planes.get(c).map_or(&dummy, |p| &p.0);
            let buffers = [&uniform, plane(0), plane(1), plane(2), plane(3), &band];
            dispatch(
                device,
                encoder,
                &self.color,
                &buffers,
                (rows * width) as u32,
            );
            bands.push(band);
        }
        Ok(Rgbx {
            bands,
            chunk_rows,
            width,
            height,
        })
    }
}

/// Shaders read an image from at most this many chunk buffers.
pub(crate) const MAX_CHUNKS: usize = 4;

/// A decoded image on the GPU: RGBX rows in chunks of `chunk_rows` rows, each chunk its own
/// buffer so that it fits one storage binding.
pub(crate) struct Rgbx {
    pub bands: Vec<wgpu::Buffer>,
    pub chunk_rows: usize,
    pub width: usize,
    pub height: usize,
}

impl Rgbx {
    /// The chunk buffers, padded to [`MAX_CHUNKS`] with `dummy`.
    pub fn chunks<'a>(&'a self, dummy: &'a wgpu::Buffer) -> [&'a wgpu::Buffer; MAX_CHUNKS] {
        std::array::from_fn(|i| self.bands.get(i).unwrap_or(dummy))
    }
}

/// Rows of `width` RGBX pixels that fit one storage binding.
pub(crate) fn rows_per_binding(device: &wgpu::Device, width: usize) -> Result<usize> {
    let limits = device.limits();
    let max_binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    let rows = max_binding / (width as u64 * 4).max(1);
    if rows == 0 {
        return Err(Error::Gpu(format!(
            "a row of {width} pixels exceeds the device's binding limit"
        )));
    }
    Ok(rows as usize)
}

/// Component `ci`'s coefficients in the compact form shaders/idct.wgsl reads: for the image
/// blocks in row-major order, `width_in_blocks` per row, an offset table (one word per block
/// plus one) followed by one word per non-zero coefficient, `natural index << 16 | value`.
/// Blocks libjpeg would smooth are uploaded smoothed (rare and cheap, so it stays on the CPU).
fn upload_coefficients(image: &CoefficientImage, ci: usize) -> Vec<u32> {
    let comp = &image.components[ci];
    let blocks = comp.width_in_blocks * comp.height_in_blocks;
    let mut words = vec![0u32; blocks + 1];
    words.reserve(blocks * 8);
    for by in 0..comp.height_in_blocks {
        for bx in 0..comp.width_in_blocks {
            let smoothed;
            let block = match &image.smoothing {
                Some(s) => {
                    smoothed = smoothing::smoothed_block(image, s, ci, bx, by);
                    &smoothed
                }
                None => comp.block(bx, by),
            };
            words[by * comp.width_in_blocks + bx] = words.len() as u32;
            let entries = block.iter().enumerate().filter(|&(_, &c)| c != 0);
            words.extend(entries.map(|(i, &c)| (i as u32) << 16 | u32::from(c as u16)));
        }
    }
    words[blocks] = words.len() as u32;
    words
}

fn method_index(method: Method) -> (u32, u32, u32) {
    match method {
        Method::Full => (0, 1, 1),
        Method::H2V1Fancy => (1, 1, 1),
        Method::H1V2Fancy => (2, 1, 1),
        Method::H2V2Fancy => (3, 1, 1),
        Method::Box { h, v } => (4, h as u32, v as u32),
    }
}

fn color_space_index(color_space: ColorSpace) -> u32 {
    match color_space {
        ColorSpace::Grayscale => 0,
        ColorSpace::YCbCr => 1,
        ColorSpace::Rgb => 2,
        ColorSpace::Cmyk => 3,
        ColorSpace::Ycck => 4,
    }
}
