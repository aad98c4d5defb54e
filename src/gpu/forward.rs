//! JPEG's forward stages on the GPU (shaders/forward.wgsl): colour conversion, edges repeated,
//! downsampling, forward DCT and quantisation of a batch of images, giving each image's
//! quantised blocks exactly as the CPU's [`encode::forward_stages`] does; the Huffman coding
//! that follows stays on CPU threads ([`encode::write`]). Both read the images' layouts from
//! [`encode::Frame`].

use super::dispatch::{self, checked, read_buffer, storage_buffer};
use super::pipeline::GpuPipeline;
use crate::encode::{self, Coefficients, Frame, JpegOptions, Pixels};
use crate::error::{GpuError, Result};

/// Bytes of pixels, and of coefficients, that one dispatch takes at most: images are
/// dispatched together up to these, and an image over them alone goes through the CPU's
/// stages (the same numbers).
const DISPATCH_BYTES: usize = 64 << 20;

/// One image of a dispatch: its frame, and its blocks' first word in the dispatch's output.
struct Dispatched {
    frame: Frame,
    first_word: usize,
}

impl GpuPipeline {
    /// Each image's quantised blocks for `options` (its quality and subsampling), as
    /// [`encode::forward_stages`] computes them; an image that cannot be encoded (see
    /// [`Frame::of`]) fails alone. An error of the GPU's fails the call.
    pub fn jpeg_forward(
        &self,
        images: &[Pixels],
        options: &JpegOptions,
    ) -> Result<Vec<Result<Coefficients>>> {
        let divisors = encode::divisors(options.quality)?;
        let limit =
            DISPATCH_BYTES.min(self.device.limits().max_storage_buffer_binding_size as usize);
        let mut results: Vec<Option<Result<Coefficients>>> = Vec::with_capacity(images.len());
        let mut group: Vec<(usize, Frame)> = Vec::new();
        let (mut pixel_bytes, mut block_bytes) = (0, 0);
        for (i, image) in images.iter().enumerate() {
            let frame = match Frame::of(image, options.subsampling) {
                Ok(frame) => frame,
                Err(e) => {
                    results.push(Some(Err(e)));
                    continue;
                }
            };
            let (pixels, blocks) = (
                image.data.len().next_multiple_of(4),
                block_words(&frame) * 4,
            );
            if pixels > limit || blocks > limit {
                results.push(Some(encode::forward_stages(image, options)));
                continue;
            }
            if pixel_bytes + pixels > limit || block_bytes + blocks > limit {
                let full = std::mem::take(&mut group);
                self.run_forward(images, full, options.quality, &divisors, &mut results)?;
                (pixel_bytes, block_bytes) = (0, 0);
            }
            (pixel_bytes, block_bytes) = (pixel_bytes + pixels, block_bytes + blocks);
            results.push(None);
            group.push((i, frame));
        }
        self.run_forward(images, group, options.quality, &divisors, &mut results)?;
        Ok(results
            .into_iter()
            .map(|r| r.expect("every image has its result"))
            .collect())
    }

    /// The forward stages of the images `group` names (with their frames), in one dispatch,
    /// their results put in `results`.
    fn run_forward(
        &self,
        images: &[Pixels],
        group: Vec<(usize, Frame)>,
        quality: u8,
        divisors: &[[u32; 64]; 2],
        results: &mut [Option<Result<Coefficients>>],
    ) -> Result<()> {
        if group.is_empty() {
            return Ok(());
        }
        let mut uploads: Vec<(&[u8], usize)> = Vec::with_capacity(group.len());
        let mut placed = Vec::with_capacity(group.len());
        let (mut planes, mut starts) = (Vec::new(), vec![0u32]);
        let (mut pixel_words, mut words) = (0, 0);
        for (i, frame) in group {
            let data = images[i].data;
            uploads.push((data, pixel_words));
            let first_word = words;
            for c in &frame.components {
                let blocks = c.across * c.down;
                planes.extend([
                    pixel_words,
                    frame.width,
                    frame.height,
                    frame.channels,
                    c.index,
                    c.down_h,
                    c.down_v,
                    c.rows,
                    c.across,
                    c.table,
                    words,
                ]);
                words += blocks * 32;
                starts.push(starts[starts.len() - 1] + blocks as u32);
            }
            pixel_words += data.len().div_ceil(4);
            placed.push((i, Dispatched { frame, first_word }));
        }
        let planes: Vec<u32> = planes.into_iter().map(|n| n as u32).collect();
        let dispatch = Dispatch {
            starts: &starts,
            planes: &planes,
            uploads: &uploads,
            pixel_words,
            divisors: &divisors.concat(),
            words,
        };
        let unpacked = self.forward_dispatch(&dispatch, |coefficients| {
            use rayon::prelude::*;
            placed
                .into_par_iter()
                .map(|(i, dispatched)| (i, unpacked(dispatched, quality, coefficients)))
                .collect::<Vec<_>>()
        })?;
        for (i, coefficients) in unpacked {
            results[i] = Some(Ok(coefficients));
        }
        Ok(())
    }

    /// Runs forward.wgsl over `dispatch` and hands its coefficients (as they sit in the
    /// read-back buffer) to `read`.
    fn forward_dispatch<T>(
        &self,
        dispatch: &Dispatch,
        read: impl FnOnce(&[i16]) -> T,
    ) -> Result<T> {
        let device = &self.device;
        checked(device, || {
            let none = wgpu::BufferUsages::empty();
            let pixels = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forward pixels"),
                size: (dispatch.pixel_words.max(1) * 4) as u64,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: true,
            });
            {
                let mut view = pixels
                    .slice(..)
                    .get_mapped_range_mut()
                    .map_err(GpuError::from)?;
                for (data, word) in dispatch.uploads {
                    let at = word * 4;
                    view.slice(at..at + data.len()).copy_from_slice(data);
                }
            }
            pixels.unmap();
            let inputs = [
                storage_buffer(device, "forward starts", dispatch.starts, none)?,
                storage_buffer(device, "forward planes", dispatch.planes, none)?,
                pixels,
                storage_buffer(device, "forward divisors", dispatch.divisors, none)?,
            ];
            let size = (dispatch.words * 4) as u64;
            let output = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forward coefficients"),
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let readback = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forward read-back"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let pipeline = &self.stages.forward;
            let mut entries: Vec<wgpu::BindGroupEntry> = inputs
                .iter()
                .enumerate()
                .map(|(binding, buffer)| wgpu::BindGroupEntry {
                    binding: binding as u32,
                    resource: buffer.as_entire_binding(),
                })
                .collect();
            entries.push(wgpu::BindGroupEntry {
                binding: 4,
                resource: output.as_entire_binding(),
            });
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("forward"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
            let mut encoder = device.create_command_encoder(&Default::default());
            let blocks = dispatch.starts[dispatch.starts.len() - 1];
            dispatch::run(device, &mut encoder, pipeline, &bind_group, blocks);
            encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, size);
            let submission = super::submit(&self.queue, [encoder.finish()]);
            read_buffer(device, &readback, size, submission, |bytes| {
                read(bytemuck::cast_slice(bytes))
            })
        })
    }
}

/// What one dispatch of forward.wgsl takes: its jobs' starts and planes (see the shader),
/// each image's pixels with its first word, the divisors, and the words of coefficients out.
struct Dispatch<'a> {
    starts: &'a [u32],
    planes: &'a [u32],
    uploads: &'a [(&'a [u8], usize)],
    pixel_words: usize,
    divisors: &'a [u32],
    words: usize,
}

/// Words of quantised blocks the image of `frame` has: two coefficients a word.
fn block_words(frame: &Frame) -> usize {
    frame
        .components
        .iter()
        .map(|c| c.across * c.down * 32)
        .sum()
}

/// An image's blocks out of the dispatch's coefficients (two a word, the even one in the low
/// half: in a little-endian buffer, each block's 64 in order).
fn unpacked(dispatched: Dispatched, quality: u8, coefficients: &[i16]) -> Coefficients {
    let mut at = dispatched.first_word * 2;
    let blocks = dispatched
        .frame
        .components
        .iter()
        .map(|c| {
            let count = c.across * c.down;
            let component = &coefficients[at..at + count * 64];
            at += count * 64;
            component
                .chunks_exact(64)
                .map(|block| block.try_into().expect("64 coefficients"))
                .collect()
        })
        .collect();
    Coefficients {
        frame: dispatched.frame,
        quality,
        blocks,
    }
}

#[cfg(test)]
mod tests {
    use crate::encode::{self, JpegOptions, Pixels, Subsampling};
    use crate::gpu::context::test_gpu;
    use crate::gpu::GpuPipeline;

    /// Pixels with edges, gradients and noise, so that every coefficient and every rounding
    /// of the stages is exercised.
    fn pixels(width: usize, height: usize, channels: usize, seed: u32) -> Vec<u8> {
        let mut state = seed.wrapping_mul(2_654_435_761) | 1;
        (0..width * height * channels)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let (x, y) = ((i / channels) % width, (i / channels) / width);
                match (x / 5 + y / 3) % 3 {
                    0 => (state >> 24) as u8,
                    1 => (x * 255 / width.max(1)) as u8,
                    _ => {
                        if (x + y) % 2 == 0 {
                            255
                        } else {
                            0
                        }
                    }
                }
            })
            .collect()
    }

    #[test]
    fn the_gpus_blocks_are_the_cpus() {
        let Some(gpu) = test_gpu() else {
            return;
        };
        let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
        let sizes = [
            (1, 1),
            (7, 9),
            (8, 8),
            (17, 15),
            (33, 70),
            (320, 427),
            (131, 64),
        ];
        let mut images = Vec::new();
        for (k, &(width, height)) in sizes.iter().enumerate() {
            for channels in [1, 3] {
                images.push((
                    width,
                    height,
                    channels,
                    pixels(width, height, channels, k as u32),
                ));
            }
        }
        let views: Vec<Pixels> = images
            .iter()
            .map(|(width, height, channels, data)| Pixels {
                width: *width,
                height: *height,
                channels: *channels,
                data,
            })
            .collect();
        let subsamplings = [
            None,
            Some(Subsampling::Full),
            Some(Subsampling::Half),
            Some(Subsampling::Quarter),
        ];
        for (quality, subsampling) in [1, 50, 75, 90, 100]
            .into_iter()
            .zip(subsamplings.iter().cycle())
        {
            let options = JpegOptions {
                quality,
                subsampling: *subsampling,
                optimize: false,
            };
            let on_gpu = pipeline.jpeg_forward(&views, &options).unwrap();
            for (image, gpu) in views.iter().zip(on_gpu) {
                let cpu = encode::forward_stages(image, &options).unwrap();
                let (w, h, c) = (image.width, image.height, image.channels);
                assert!(
                    gpu.unwrap() == cpu,
                    "{w}×{h}×{c}, quality {quality}, {subsampling:?}: the GPU's blocks differ"
                );
            }
        }
        let refused = pipeline.jpeg_forward(
            &views[..1],
            &JpegOptions {
                quality: 0,
                ..JpegOptions::default()
            },
        );
        assert!(refused.is_err());
    }
}
