//! Many images into one tensor that stays on the GPU: the call a host application embeds.

use super::bindings::Fit;
use super::dispatch::{checked, read_buffer};
use super::packing::pack;
use super::pipeline::{output_buffer, prepare_image, tensor_data, GpuPipeline};
use super::work::ImageWork;
use crate::error::{Error, Result};
use crate::plan::output::element_bytes;
use crate::transform::DType;
use crate::{Limits, Tensor, Transform};
use rayon::prelude::*;

/// A preprocessed batch on the GPU.
///
/// `buffer` holds the images back to back: image `i` starts at byte `i * image_stride`, and is
/// `image_shape` (in the transform's layout) of `dtype` elements, little-endian, C order. The
/// stride is the image's size rounded up to 4 bytes. A failed image's slot is all zeros.
pub struct Batch {
    /// The output, usable as a storage or copy source (`STORAGE | COPY_SRC`).
    pub buffer: wgpu::Buffer,
    /// One image's dimensions: `[h, w, 3]` or `[3, h, w]`.
    pub image_shape: [usize; 3],
    /// Element type.
    pub dtype: DType,
    /// Bytes from one image to the next.
    pub image_stride: u64,
    /// Per input image, in order: its slot holds its tensor, or why not (slot zero-filled).
    pub outcomes: Vec<Result<crate::plan::Params>>,
}

impl Batch {
    /// Copies the batch back to the CPU: one tensor per image that succeeded, `None` for the
    /// others.
    pub fn read_back(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<Vec<Option<Tensor>>> {
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("batch readback"),
            size: self.buffer.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&self.buffer, 0, &readback, 0, readback.size());
        let submission = crate::gpu::submit(queue, [encoder.finish()]);
        let elements = self.image_shape.iter().product();
        checked(device, || {
            read_buffer(device, &readback, readback.size(), submission, |bytes| {
                self.outcomes
                    .iter()
                    .enumerate()
                    .map(|(i, outcome)| {
                        outcome.as_ref().ok().map(|params| Tensor {
                            params: params.clone(),
                            shape: self.image_shape,
                            data: tensor_data(
                                &bytes[i * self.image_stride as usize..],
                                self.dtype,
                                elements,
                            ),
                        })
                    })
                    .collect()
            })
        })
    }
}

impl GpuPipeline {
    /// Decodes `images` (entropy decoding on CPU threads) and runs every pixel stage on the GPU,
    /// one dispatch per stage for as many images as the device's bindings hold, into one buffer
    /// that stays on the GPU. The transform must fix the output size (an exact resize or a
    /// crop), and the batch must fit the device's largest buffer (the error says how many images
    /// do). A bad image fails alone: its outcome says why and its slot is zero; the others are
    /// exact.
    pub fn preprocess_batch(
        &self,
        images: &[&[u8]],
        transform: &Transform,
        limits: &Limits,
    ) -> Result<Batch> {
        transform.validate()?;
        let image_shape = transform.fixed_output_shape().ok_or_else(|| {
            Error::Options("a batch needs one output size: an exact resize or a crop".into())
        })?;
        let elements: usize = image_shape.iter().product();
        let image_stride = (elements * element_bytes(transform.dtype)).next_multiple_of(4) as u64;
        let size = image_stride * images.len() as u64;
        let max = self.device.limits().max_buffer_size;
        if size > max {
            return Err(Error::Options(format!(
                "a batch of {} images needs {size} bytes, above this device's largest buffer ({max} bytes): \
                 split it into batches of at most {} images",
                images.len(),
                max / image_stride
            )));
        }
        let fit = Fit::of(&self.device);
        let window = fit.window;
        let works: Vec<Result<ImageWork>> = images
            .par_iter()
            .enumerate()
            .map(|(i, bytes)| {
                let sample = crate::plan::Sample::Index(i as u64);
                prepare_image(bytes, transform, &sample, limits, fit, false)
            })
            .collect();
        let mut outcomes = Vec::with_capacity(images.len());
        let mut placed = Vec::with_capacity(images.len());
        for (i, work) in works.into_iter().enumerate() {
            outcomes.push(work.map(|work| {
                let params = work.params.clone();
                placed.push((i, work, i as u64 * image_stride / 4));
                params
            }));
        }
        let packings = pack(placed, transform, window);
        let buffer = output_buffer(
            &self.device,
            size,
            wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        );
        // Each packing is recorded and submitted in its own error scope, so that a GPU failure
        // stays with its images.
        let recorder = self.recorder();
        for packing in &packings {
            let submitted = checked(&self.device, || {
                let mut encoder = self.device.create_command_encoder(&Default::default());
                let recorded =
                    recorder.record(packing, &mut encoder, &buffer, window, &mut |_, _| {})?;
                crate::gpu::submit(&self.queue, [encoder.finish()]);
                let _ = recorded.submitted(&self.staging);
                Ok(())
            });
            if let Err(e) = submitted {
                for &i in &packing.images {
                    outcomes[i] = Err(e.clone());
                }
            }
        }
        Ok(Batch {
            buffer,
            image_shape,
            dtype: transform.dtype,
            image_stride,
            outcomes,
        })
    }
}
