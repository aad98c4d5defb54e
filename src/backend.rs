//! Where the pixel stages run: the CPU reference or a GPU. Entropy decoding is on the CPU either
//! way.

use crate::error::{Error, Result};
use crate::gpu::{find_adapter, open_device, Batching, Gpu, GpuPipeline, StreamOptions};
use crate::plan::{Sample, Samples};
use crate::tensor::Stacked;
use crate::{formats, reference, Limits, Tensor, Transform};

/// A GPU with the pipelines compiled for it.
pub struct GpuBackend {
    /// The device.
    pub gpu: Gpu,
    /// The compiled stages.
    pub pipeline: GpuPipeline,
    /// How [`Backend::preprocess_many`] batches images.
    pub batching: Batching,
}

impl GpuBackend {
    /// The streaming calls' options for `transform` under `limits`, in this backend's batches.
    fn stream_options<'a>(
        &self,
        transform: &'a Transform,
        limits: &'a Limits,
        samples: Samples<'a>,
    ) -> StreamOptions<'a> {
        StreamOptions {
            transform,
            limits,
            batching: self.batching,
            samples,
        }
    }
}

/// The implementation of the pixel stages.
pub enum Backend {
    /// The CPU reference (also the fallback without a usable GPU).
    Cpu,
    /// WGSL compute shaders on a GPU.
    Gpu(Box<GpuBackend>),
}

impl Backend {
    /// A GPU backend on the device [`crate::gpu::create_device`] picks.
    pub fn gpu() -> Result<Self> {
        Self::gpu_on(None)
    }

    /// A GPU backend on the adapter whose name contains `adapter` (see [`find_adapter`]),
    /// or the default one.
    pub fn gpu_on(adapter: Option<&str>) -> Result<Self> {
        Self::gpu_with(&find_adapter(adapter)?)
    }

    /// A GPU backend on `adapter`.
    fn gpu_with(adapter: &wgpu::Adapter) -> Result<Self> {
        let gpu = open_device(adapter)?;
        let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
        Ok(Self::Gpu(Box::new(GpuBackend {
            gpu,
            pipeline,
            batching: Batching::default(),
        })))
    }

    /// The same backend, whose GPU (if it is one) batches images as `batching` says.
    pub fn with_batching(mut self, batching: Batching) -> Self {
        if let Self::Gpu(backend) = &mut self {
            backend.batching = batching;
        }
        self
    }

    /// Decodes `data` and applies `transform` (sample 0 of a random one); both backends give
    /// the same bits.
    pub fn preprocess(
        &self,
        data: &[u8],
        transform: &Transform,
        limits: &Limits,
    ) -> Result<Tensor> {
        self.preprocess_sample(data, transform, &Sample::default(), limits)
    }

    /// [`Self::preprocess`] as `sample` of `transform`.
    pub fn preprocess_sample(
        &self,
        data: &[u8],
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Tensor> {
        self.preprocess_decoded(formats::decode(data, limits)?, transform, sample, limits)
    }

    /// [`Self::preprocess_sample`] for an image already decoded: a JPEG's coefficients, or RGB
    /// pixels (`formats::Decoded::Pixels`, say from an array a caller holds).
    pub fn preprocess_decoded(
        &self,
        decoded: formats::Decoded,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Tensor> {
        if let formats::Decoded::Pixels(pixels) = &decoded {
            let (w, h) = (pixels.rgb.width as u64, pixels.rgb.height as u64);
            let bytes = pixels.rgb.data.len() as u64;
            if w.checked_mul(h).and_then(|n| n.checked_mul(3)) != Some(bytes) {
                return Err(crate::Error::Options(format!(
                    "{w}x{h} RGB pixels are {w}·{h}·3 bytes, not {bytes}"
                )));
            }
            if w * h > limits.max_pixels {
                return Err(crate::Error::TooLarge {
                    width: w as u32,
                    height: h as u32,
                    limit: limits.max_pixels,
                });
            }
        }
        match self {
            // A panic (a bug) is this image's error: it neither takes down the images beside it
            // in a batch nor reaches a caller in another language.
            Self::Cpu => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                reference::preprocess_decoded(decoded, transform, sample, limits)
            }))
            .unwrap_or_else(|panic| Err(crate::Error::from_panic(&*panic))),
            Self::Gpu(backend) => {
                let pipeline = &backend.pipeline;
                pipeline.preprocess_decoded(&decoded, transform, sample, limits)
            }
        }
    }

    /// Decodes and transforms many images; each result stands alone. The CPU backend runs an
    /// image per thread; the GPU backend runs batches as its [`GpuBackend::batching`] says, CPU
    /// threads decoding the next batch while the GPU runs the current one.
    pub fn preprocess_many(
        &self,
        images: &[&[u8]],
        transform: &Transform,
        limits: &Limits,
    ) -> Vec<Result<Tensor>> {
        self.preprocess_samples(images, transform, Samples::Positions, limits)
    }

    /// [`Self::preprocess_many`], image `i` being sample `samples.of(i)` of `transform`.
    pub fn preprocess_samples(
        &self,
        images: &[&[u8]],
        transform: &Transform,
        samples: Samples,
        limits: &Limits,
    ) -> Vec<Result<Tensor>> {
        use rayon::prelude::*;
        match self {
            Self::Cpu => images
                .par_iter()
                .enumerate()
                .map(|(i, data)| self.preprocess_sample(data, transform, &samples.of(i), limits))
                .collect(),
            Self::Gpu(backend) => {
                backend
                    .pipeline
                    .preprocess_many(images, &backend.stream_options(transform, limits, samples))
                    .results
            }
        }
    }

    /// [`Self::preprocess_samples`] for a transform whose outputs all have one shape (see
    /// [`Transform::fixed_output_shape`]), stacked in one array as they are made: on the GPU,
    /// each tensor goes from the read-back buffer straight to its place in the batch.
    pub fn preprocess_stacked(
        &self,
        images: &[&[u8]],
        transform: &Transform,
        samples: Samples,
        limits: &Limits,
    ) -> Result<Stacked> {
        let shape = stacked_shape(transform, images.len(), limits)?;
        Ok(match self {
            Self::Cpu => {
                let tensors = self.preprocess_samples(images, transform, samples, limits);
                Stacked::from_tensors(shape, transform.dtype, tensors)
            }
            Self::Gpu(backend) => backend.pipeline.preprocess_stacked(
                images,
                &backend.stream_options(transform, limits, samples),
                shape,
            ),
        })
    }

    /// The backend to use when the caller does not choose: the GPU, unless the only adapter
    /// found (or the one named) is a software rasteriser (device type CPU: llvmpipe,
    /// lavapipe, WARP), which is slower than the CPU backend's own SIMD paths, or there is none.
    /// The CPU backend gives the same bits; the string says why it was chosen.
    pub fn auto(adapter: Option<&str>) -> (Self, Option<String>) {
        let cpu = |why: String| (Self::Cpu, Some(format!("using the CPU backend: {why}")));
        let found = match find_adapter(adapter) {
            Ok(found) => found,
            Err(e) => return cpu(e.to_string()),
        };
        let info = found.get_info();
        // Decided before a device is opened and the shaders compiled for it.
        if info.device_type == wgpu::DeviceType::Cpu {
            return cpu(format!(
                "the GPU adapter is a software one ({}), slower than the CPU backend; --backend \
                 gpu uses it anyway",
                info.name
            ));
        }
        match Self::gpu_with(&found) {
            Ok(backend) => (backend, None),
            Err(e) => cpu(e.to_string()),
        }
    }

    /// A short description for logs: "cpu" or the adapter's name and backend.
    pub fn describe(&self) -> String {
        match self {
            Self::Cpu => "cpu".into(),
            Self::Gpu(b) => format!("gpu: {} ({:?})", b.gpu.info.name, b.gpu.info.backend),
        }
    }
}

/// The shape of each tensor of a stacked batch of `images` through `transform`, once the
/// transform is valid, each output within `limits.max_pixels` and the batch's array within
/// [`crate::error::MAX_HELD_BYTES`]: checked before the array is allocated.
pub(crate) fn stacked_shape(
    transform: &Transform,
    images: usize,
    limits: &Limits,
) -> Result<[usize; 3]> {
    transform.validate()?;
    let shape = transform.fixed_output_shape().ok_or_else(|| {
        Error::Options(
            "a stacked batch needs one output size (an exact resize, a crop or a random resized \
             crop)"
                .into(),
        )
    })?;
    let (width, height) = transform.fixed_output_size().unwrap_or_default();
    let (width, height) = (width as u64, height as u64);
    if width.saturating_mul(height) > limits.max_pixels {
        return Err(Error::OutputTooLarge {
            width,
            height,
            limit: limits.max_pixels,
        });
    }
    let bytes = shape
        .iter()
        .fold(transform.dtype.size() as u64, |n, &d| {
            n.saturating_mul(d as u64)
        })
        .saturating_mul(images as u64);
    let what = || format!("a stacked batch of {images} tensors of shape {shape:?}");
    crate::error::check_held(what, bytes)?;
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pixels a caller hands over whose bytes do not make their size are refused by name (they
    /// would otherwise be read past their end).
    #[test]
    fn pixels_whose_bytes_do_not_make_their_size_are_refused() {
        let pixels = |data: Vec<u8>| {
            formats::Decoded::Pixels(formats::Pixels {
                rgb: crate::RgbImage {
                    width: 64,
                    height: 48,
                    data,
                },
                orientation: 1,
            })
        };
        let run = |data| {
            Backend::Cpu.preprocess_decoded(
                pixels(data),
                &Transform::imagenet_eval(),
                &Sample::default(),
                &Limits::default(),
            )
        };
        match run(vec![0; 10]) {
            Err(Error::Options(why)) => {
                assert_eq!(why, "64x48 RGB pixels are 64·48·3 bytes, not 10")
            }
            other => panic!("not refused as options: {other:?}"),
        }
        assert_eq!(run(vec![7; 64 * 48 * 3]).unwrap().shape, [3, 224, 224]);
    }
}
