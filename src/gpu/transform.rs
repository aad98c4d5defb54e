//! Stages 3–4 on the GPU: Pillow's horizontal pass into an 8-bit RGBX intermediate, then the
//! vertical pass, centre crop and tensor conversion in one shader.

use super::decode::{rows_per_binding, Rgbx};
use super::dispatch::{dispatch, storage_buffer, uniform_buffer};
use super::params::{ResampleParams, TensorParams};
use crate::error::{Error, Result};
use crate::reference::tensor::{crop_offset, value_table};
use crate::resample::{ResizePlan, Taps};
use crate::transform::{ChannelOrder, DType, Layout};
use crate::Transform;

/// The compiled stage 3–4 pipelines.
pub(crate) struct GpuTransformer {
    horizontal: wgpu::ComputePipeline,
    tensor: wgpu::ComputePipeline,
}

/// The output of [`GpuTransformer::encode`]: a buffer of packed words and the tensor's shape.
pub(crate) struct EncodedTensor {
    pub buffer: wgpu::Buffer,
    pub shape: [usize; 3],
    pub elements: usize,
}

impl GpuTransformer {
    pub fn new(device: &wgpu::Device) -> Self {
        Self {
            horizontal: super::compute_pipeline(
                device,
                "resample_h",
                include_str!("../../shaders/resample_h.wgsl"),
            ),
            tensor: super::compute_pipeline(
                device,
                "tensor",
                include_str!("../../shaders/tensor.wgsl"),
            ),
        }
    }

    /// Records `transform` applied to the decoded image `rgbx`.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        rgbx: &Rgbx,
        transform: &Transform,
    ) -> Result<EncodedTensor> {
        let (width, height) = (rgbx.width, rgbx.height);
        let target = transform
            .resize
            .map_or((width, height), |r| r.target(width, height));
        let plan = (target != (width, height))
            .then(|| ResizePlan::new(transform.filter, (width, height), target));
        let dummy = storage_buffer(device, "unused chunk", &[0u32], wgpu::BufferUsages::empty());
        // The image the vertical pass (or the crop) reads, `target.0` pixels per row either way:
        // the horizontal pass's rows in one chunk, or the decoded chunks.
        let horizontal = match plan
            .as_ref()
            .and_then(|p| p.horizontal.as_ref().map(|h| (p, h)))
        {
            Some((plan, taps)) => {
                Some(self.horizontal_pass(device, encoder, rgbx, &dummy, plan, taps)?)
            }
            None => None,
        };
        let (sources, chunk_rows) = match &horizontal {
            Some((buffer, rows)) => ([buffer, &dummy, &dummy, &dummy], (*rows).max(1)),
            None => (rgbx.chunks(&dummy), rgbx.chunk_rows),
        };
        let vertical = plan.as_ref().and_then(|p| p.vertical.as_ref());
        let (crop_w, crop_h) = transform.center_crop.unwrap_or(target);
        let elements = crop_w * crop_h * 3;
        let per_word = match transform.dtype {
            DType::U8 => 4,
            DType::F16 => 2,
            DType::F32 => 1,
        };
        let words = elements.div_ceil(per_word).max(1);
        let result = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensor"),
            size: (words * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let (bounds, weights) = tap_buffers(device, vertical);
        let table = storage_buffer(
            device,
            "value table",
            &table_bits(transform),
            wgpu::BufferUsages::empty(),
        );
        // Outputs larger than one binding are computed in bands and copied into place.
        let band_words = (rows_per_binding(device, 1)? / 64 * 64).max(64);
        for word_offset in (0..words).step_by(band_words) {
            let count = band_words.min(words - word_offset);
            let params = TensorParams {
                out_width: crop_w as u32,
                out_height: crop_h as u32,
                width: target.0 as u32,
                height: target.1 as u32,
                crop_x: crop_offset(target.0, crop_w) as i32,
                crop_y: crop_offset(target.1, crop_h) as i32,
                vertical: vertical.is_some(),
                window: vertical.map_or(0, |t| t.window as u32),
                chw: transform.layout == Layout::Chw,
                per_word: per_word as u32,
                words: words as u32,
                chunk_rows: chunk_rows as u32,
                word_offset: word_offset as u32,
                band_words: count as u32,
                channel_map: match transform.channel_order {
                    ChannelOrder::Rgb => [0, 1, 2],
                    ChannelOrder::Bgr => [2, 1, 0],
                },
            };
            let uniform = uniform_buffer(device, &params.to_bytes());
            let band = if count == words {
                result.clone()
            } else {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("tensor band"),
                    size: (count * 4) as u64,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            };
            let [s0, s1, s2, s3] = sources;
            let buffers = [&uniform, s0, s1, s2, s3, &bounds, &weights, &table, &band];
            dispatch(device, encoder, &self.tensor, &buffers, count as u32);
            if count != words {
                encoder.copy_buffer_to_buffer(
                    &band,
                    0,
                    &result,
                    (word_offset * 4) as u64,
                    band.size(),
                );
            }
        }
        Ok(EncodedTensor {
            buffer: result,
            shape: transform.output_shape(width, height),
            elements,
        })
    }

    /// Pillow's horizontal pass over the source rows the vertical pass needs; returns the
    /// intermediate and its row count.
    fn horizontal_pass(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        rgbx: &Rgbx,
        dummy: &wgpu::Buffer,
        plan: &ResizePlan,
        taps: &Taps,
    ) -> Result<(wgpu::Buffer, usize)> {
        let out_width = taps.bounds.len();
        if plan.rows > rows_per_binding(device, out_width)? {
            return Err(Error::Gpu(format!(
                "a {out_width}x{} intermediate exceeds this device's storage binding limit; use the CPU backend",
                plan.rows
            )));
        }
        let result = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("horizontal pass"),
            size: (out_width * plan.rows * 4).max(4) as u64,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let params = ResampleParams {
            out_width: out_width as u32,
            rows: plan.rows as u32,
            in_width: rgbx.width as u32,
            window: taps.window as u32,
            first_row: plan.first_row as u32,
            chunk_rows: rgbx.chunk_rows as u32,
        };
        let (bounds, weights) = tap_buffers(device, Some(taps));
        let uniform = uniform_buffer(device, &params.to_bytes());
        let [s0, s1, s2, s3] = rgbx.chunks(dummy);
        let buffers = [&uniform, s0, s1, s2, s3, &bounds, &weights, &result];
        dispatch(
            device,
            encoder,
            &self.horizontal,
            &buffers,
            (out_width * plan.rows) as u32,
        );
        Ok((result, plan.rows))
    }
}

/// The bounds (as pairs) and weights of `taps`, or dummies when there is no pass.
fn tap_buffers(device: &wgpu::Device, taps: Option<&Taps>) -> (wgpu::Buffer, wgpu::Buffer) {
    let bounds: Vec<u32> = taps.map_or(vec![0, 0], |t| {
        t.bounds.iter().flat_map(|&(s, n)| [s, n]).collect()
    });
    let weights: Vec<u32> = taps.map_or(vec![0], |t| t.weights.iter().map(|&w| w as u32).collect());
    (
        storage_buffer(device, "tap bounds", &bounds, wgpu::BufferUsages::empty()),
        storage_buffer(device, "tap weights", &weights, wgpu::BufferUsages::empty()),
    )
}

/// The 3×256 output elements as the bits the shader writes: u8 values, or f16 / f32 bits of the
/// CPU-built float32 table (so the GPU does no float arithmetic at all).
fn table_bits(transform: &Transform) -> Vec<u32> {
    let table = value_table(transform);
    table
        .iter()
        .flat_map(|channel| {
            channel
                .iter()
                .enumerate()
                .map(|(v, &value)| match transform.dtype {
                    DType::U8 => v as u32,
                    DType::F16 => u32::from(half::f16::from_f32(value).to_bits()),
                    DType::F32 => value.to_bits(),
                })
        })
        .collect()
}
