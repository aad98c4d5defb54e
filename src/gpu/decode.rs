//! Stages 1–3 on the GPU: coefficients → RGB. One command buffer per image: an IDCT dispatch per
//! component, then colour conversion in bands of rows that fit the device's binding limits.

use super::dispatch::{dispatch, read_buffer, run, storage_buffer, uniform_buffer};
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
        let mut encoder = device.create_command_encoder(&Default::default());
        let planes = self.encode_idct(device, &mut encoder, image, 1)?;
        let rgbx = self.encode_color(device, &mut encoder, image, 1, &planes)?;
        let (width, height) = (image.width, image.height);
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rgbx readback"),
            size: (width * height * 4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.copy_buffer_to_buffer(&rgbx, 0, &readback, 0, readback.size());
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
    ) -> Result<wgpu::Buffer> {
        let (width, height) = crate::reference::scaled_size(image, denominator);
        let row_bytes = (width * 4) as u64;
        let limits = device.limits();
        let max_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        // Bands start at multiples of 64 rows, which keeps their byte offsets 256-aligned.
        let band_rows = ((max_binding / row_bytes) / 64 * 64).max(64) as usize;
        if band_rows as u64 * row_bytes > max_binding && height > 1 {
            return Err(Error::Gpu(format!(
                "a row of {width} pixels exceeds the device's binding limit"
            )));
        }
        let rgbx = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rgbx"),
            size: row_bytes * height as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let dummy = storage_buffer(device, "unused plane", &[0u32], wgpu::BufferUsages::empty());
        let plane_buffer = |c: usize| planes.get(c).map_or(&dummy, |p| &p.0);
        let mut plane_params = [PlaneParams::default(); 4];
        for (slot, (_, p)) in plane_params.iter_mut().zip(planes) {
            *slot = *p;
        }
        for first_row in (0..height).step_by(band_rows) {
            let rows = band_rows.min(height - first_row);
            let params = ColorParams {
                width: width as u32,
                rows: rows as u32,
                first_row: first_row as u32,
                color_space: color_space_index(image.color_space),
                planes: plane_params,
            };
            let uniform = uniform_buffer(device, &params.to_bytes());
            let band = wgpu::BufferBinding {
                buffer: &rgbx,
                offset: first_row as u64 * row_bytes,
                size: wgpu::BufferSize::new(rows as u64 * row_bytes),
            };
            let layout = self.color.get_bind_group_layout(0);
            let mut entries: Vec<wgpu::BindGroupEntry> = vec![wgpu::BindGroupEntry {
                binding: 0,
                resource: uniform.as_entire_binding(),
            }];
            for c in 0..4 {
                entries.push(wgpu::BindGroupEntry {
                    binding: c as u32 + 1,
                    resource: plane_buffer(c).as_entire_binding(),
                });
            }
            entries.push(wgpu::BindGroupEntry {
                binding: 5,
                resource: wgpu::BindingResource::Buffer(band),
            });
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("color"),
                layout: &layout,
                entries: &entries,
            });
            run(
                device,
                encoder,
                &self.color,
                &bind_group,
                (rows * width) as u32,
            );
        }
        Ok(rgbx)
    }
}

/// Component `ci`'s coefficients as two i16 per word; blocks libjpeg would smooth are uploaded
/// smoothed (the smoothing is rare and cheap, so it stays on the CPU).
fn upload_coefficients(image: &CoefficientImage, ci: usize) -> Vec<u32> {
    let comp = &image.components[ci];
    let mut words = Vec::with_capacity(comp.blocks.len() / 2);
    match &image.smoothing {
        None => pack_all(&comp.blocks, &mut words),
        Some(s) => {
            for by in 0..comp.blocks_h {
                for bx in 0..comp.blocks_w {
                    let inside = bx < comp.width_in_blocks && by < comp.height_in_blocks;
                    let block = if inside {
                        smoothing::smoothed_block(image, s, ci, bx, by)
                    } else {
                        *comp.block(bx, by)
                    };
                    pack_all(&block, &mut words);
                }
            }
        }
    }
    words
}

/// Appends `coefficients` two to a word, the first in the low half.
fn pack_all(coefficients: &[i16], out: &mut Vec<u32>) {
    out.extend(
        coefficients
            .chunks_exact(2)
            .map(|pair| u32::from(pair[0] as u16) | u32::from(pair[1] as u16) << 16),
    );
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
