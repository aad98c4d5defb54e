//! The whole GPU pipeline for one image: coefficients in, tensor out.

use super::decode::GpuDecoder;
use super::dispatch::{checked, read_buffer};
use super::transform::{EncodedTensor, GpuTransformer};
use crate::error::Result;
use crate::jpeg::CoefficientImage;
use crate::tensor::{Tensor, TensorData};
use crate::transform::DType;
use crate::Transform;

/// Compiled pipelines for every stage; make once per device and share.
pub struct GpuPipeline {
    decoder: GpuDecoder,
    transformer: GpuTransformer,
}

impl GpuPipeline {
    /// Compiles the shaders for the host's `device`.
    pub fn new(device: &wgpu::Device) -> Self {
        Self {
            decoder: GpuDecoder::new(device),
            transformer: GpuTransformer::new(device),
        }
    }

    /// Runs stages 1–4 on the GPU: the same tensor as [`crate::preprocess`], bit for bit.
    pub fn preprocess(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        image: &CoefficientImage,
        transform: &Transform,
    ) -> Result<Tensor> {
        checked(device, || self.run(device, queue, image, transform))
    }

    fn run(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        image: &CoefficientImage,
        transform: &Transform,
    ) -> Result<Tensor> {
        let mut encoder = device.create_command_encoder(&Default::default());
        let tensor = self.encode_image(device, &mut encoder, image, transform)?;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensor readback"),
            size: tensor.buffer.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.copy_buffer_to_buffer(&tensor.buffer, 0, &readback, 0, readback.size());
        queue.submit([encoder.finish()]);
        let bytes = read_buffer(device, &readback)?;
        Ok(Tensor {
            shape: tensor.shape,
            data: tensor_data(&bytes, transform.dtype, tensor.elements),
        })
    }

    /// Records stages 1–4 for one image.
    pub(crate) fn encode_image(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        image: &CoefficientImage,
        transform: &Transform,
    ) -> Result<EncodedTensor> {
        let denominator = transform.draft_denominator(image.width, image.height);
        let planes = self
            .decoder
            .encode_idct(device, encoder, image, denominator)?;
        let rgbx = self
            .decoder
            .encode_color(device, encoder, image, denominator, &planes)?;
        self.transformer.encode(device, encoder, &rgbx, transform)
    }
}

/// The first `elements` elements of packed little-endian `bytes`.
pub(crate) fn tensor_data(bytes: &[u8], dtype: DType, elements: usize) -> TensorData {
    match dtype {
        DType::U8 => TensorData::U8(bytes[..elements].to_vec()),
        DType::F16 => TensorData::F16(
            bytes
                .chunks_exact(2)
                .take(elements)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]))
                .collect(),
        ),
        DType::F32 => TensorData::F32(
            bytes
                .chunks_exact(4)
                .take(elements)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ),
    }
}
