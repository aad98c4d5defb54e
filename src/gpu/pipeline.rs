//! The GPU pipeline: compiled stages, and the calls that run images through them.

use super::bindings::{binding_window, Fit};
use super::dispatch::{checked, read_buffer, BufferPool};
use super::packing::{pack, Packing};
use super::record::Recorder;
use super::stages::Stages;
use super::staging::StagingRing;
use super::stamps::StageStamps;
use super::work::ImageWork;
use crate::error::{Error, GpuError, Result};
use crate::jpeg::CoefficientImage;
use crate::jpeg::Coefficients;
use crate::plan::{Params, Sample};
use crate::tensor::{Tensor, TensorData};
use crate::transform::DType;
use crate::{RgbImage, Transform};
use rayon::prelude::*;
use std::time::Instant;

/// Compiled pipelines for every stage, with the device they run on and the queue they submit to
/// (handles of the caller's): make once per device and share (it is `Send + Sync`).
pub struct GpuPipeline {
    /// The device it runs on, and the queue it submits to (handles: clones of the caller's).
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) stages: Stages,
    /// Arenas and output buffers kept between calls.
    pub(crate) pool: BufferPool,
    /// Upload staging buffers kept mapped between calls.
    pub(crate) staging: StagingRing,
    /// One word, bound where a stage's binding has nothing to show (an image's second RGBX
    /// window when its first holds it all).
    pub(crate) placeholder: wgpu::Buffer,
    /// A few threads of its own for copying uploads, so that they do not queue behind the
    /// decoding tasks on rayon's global pool: they are on the critical path.
    pub(crate) copiers: rayon::ThreadPool,
    /// Whether each stage is submitted and waited for on its own, to time it.
    time_stages: bool,
    /// Pillow's HSV conversions as tables for the hue adjustment (96 MiB), made on the first
    /// batch that needs them.
    pub(crate) hsv: std::sync::OnceLock<super::record::HsvBuffers>,
    /// The autocontrast fix table (2 MiB), made on the first batch that needs it.
    pub(crate) autocontrast_fixes: std::sync::OnceLock<wgpu::Buffer>,
}

/// Where the GPU side of one call spent its time.
#[derive(Clone, Debug, Default)]
pub struct GpuTimings {
    /// Packing prepared images into arenas and job tables (CPU).
    pub pack: std::time::Duration,
    /// Creating buffers (uploads included) and recording (CPU).
    pub record: std::time::Duration,
    /// Of `record`: creating and filling the upload buffer (CPU).
    pub upload: std::time::Duration,
    /// Waiting for the GPU's work and the transfers once nothing else is left to do (with a
    /// batch in flight, most of the GPU's work is hidden behind the next batch's packing),
    /// stage 0's verdicts included (and the rare images it gave up on, redone).
    pub execute: std::time::Duration,
    /// Mapping the results and copying them into tensors (CPU).
    pub read_back: std::time::Duration,
    /// With [`GpuPipeline::timing_stages`]: each stage's (and each of stage 0's passes') time,
    /// on the GPU's own clock where the device writes timestamps (`stages_on_gpu_clock`), else
    /// its wall time submitted and waited for on its own (so `record` and `execute` are then
    /// folded in here).
    pub stages: Vec<(&'static str, std::time::Duration)>,
    /// Whether `stages` were timed by the GPU's clock.
    pub stages_on_gpu_clock: bool,
    /// Images whose Huffman decoding ran on the GPU (stage 0).
    pub huffman_on_gpu: usize,
    /// Of them, those the GPU gave up on (data that runs out, or that never settles), decoded
    /// on the CPU instead and redone in place.
    pub redone_on_cpu: usize,
}

impl GpuPipeline {
    /// Compiles the shaders for `device`, whose `queue` it submits to.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        Self {
            device: device.clone(),
            queue: queue.clone(),
            stages: Stages::new(device),
            pool: BufferPool::default(),
            staging: StagingRing::default(),
            placeholder: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("placeholder"),
                size: 4,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            }),
            copiers: copy_threads(),
            time_stages: false,
            hsv: std::sync::OnceLock::new(),
            autocontrast_fixes: std::sync::OnceLock::new(),
        }
    }

    /// The same pipeline, submitting and waiting for each stage on its own so that
    /// [`GpuTimings::stages`] can say what each costs. Slower: for profiling only.
    pub fn timing_stages(mut self) -> Self {
        self.time_stages = true;
        self
    }

    /// What recording a packing needs of this pipeline.
    pub(crate) fn recorder(&self) -> Recorder<'_> {
        Recorder {
            device: &self.device,
            stages: &self.stages,
            pool: &self.pool,
            staging: &self.staging,
            placeholder: &self.placeholder,
            copiers: &self.copiers,
            upload_first: self.time_stages,
            hsv: &self.hsv,
            autocontrast_fixes: &self.autocontrast_fixes,
        }
    }

    /// GPU memory this pipeline keeps between calls (its pooled arenas and outputs, and its
    /// upload staging buffers), in bytes: bounded by a few buffers, whatever the number of
    /// images streamed.
    pub fn pooled_bytes(&self) -> u64 {
        let hsv = self
            .hsv
            .get()
            .map_or(0, |t| t.to_hsv.size() + t.to_rgb.size());
        let fixes = self.autocontrast_fixes.get().map_or(0, wgpu::Buffer::size);
        self.pool.bytes() + self.staging.bytes() + hsv + fixes
    }

    /// Runs every GPU stage on one image: the same tensor as [`crate::preprocess`], bit for
    /// bit; what the transform makes is held to `limits` (see [`crate::ImagePlan::check`]).
    pub fn preprocess(
        &self,
        image: &CoefficientImage,
        transform: &Transform,
        limits: &crate::Limits,
    ) -> Result<Tensor> {
        let work = ImageWork::new(image, transform, &Sample::default(), limits)?;
        let (mut results, _) = self.run_images(vec![(0, work)], transform)?;
        Ok(results.remove(0).1)
    }

    /// [`GpuPipeline::preprocess`] for an input of any format (see [`crate::formats`]), as
    /// `sample` of `transform`.
    pub fn preprocess_decoded(
        &self,
        image: &crate::formats::Decoded,
        transform: &Transform,
        sample: &Sample,
        limits: &crate::Limits,
    ) -> Result<Tensor> {
        let work = ImageWork::prepare(image, transform, sample, limits)?;
        let (mut results, _) = self.run_images(vec![(0, work)], transform)?;
        Ok(results.remove(0).1)
    }

    /// Decodes `image` to RGB on the GPU: bit-identical to [`crate::reference::decode_rgb`].
    pub fn decode_rgb(&self, image: &CoefficientImage) -> Result<RgbImage> {
        // The decoder checked the image against the limits it was given.
        let limits = crate::Limits::default().without_pixel_limit();
        let tensor = self.preprocess(image, &Transform::default(), &limits)?;
        let TensorData::U8(data) = tensor.data else {
            unreachable!("the default transform gives u8");
        };
        Ok(RgbImage {
            width: tensor.shape[1],
            height: tensor.shape[0],
            data,
        })
    }

    /// Runs prepared images (each tagged with the caller's index) in as few submissions as the
    /// device's binding limits allow, and reads their tensors back. An image too large for the
    /// device on its own is an error for the whole call; callers that want it to fail alone
    /// check [`too_large`] first.
    pub(crate) fn run_images(
        &self,
        works: Vec<(usize, ImageWork)>,
        transform: &Transform,
    ) -> Result<(Vec<(usize, Tensor)>, GpuTimings)> {
        let submitted = self.submit_images(works, transform, true)?;
        self.finish(submitted)
    }

    /// The first half of [`Self::run_images`]: packs, records and submits (with the copy to a
    /// read-back buffer when `read_back`), and returns without waiting for the GPU, so that the
    /// caller can prepare the next batch meanwhile.
    pub(crate) fn submit_images(
        &self,
        works: Vec<(usize, ImageWork)>,
        transform: &Transform,
        read_back: bool,
    ) -> Result<Submitted> {
        let fit = Fit::of(&self.device);
        let mut timings = GpuTimings::default();
        let mut clock = Instant::now();
        let mut shapes = Vec::with_capacity(works.len());
        let mut placed = Vec::with_capacity(works.len());
        let sizes: Vec<(usize, u64)> = works.iter().map(|(i, w)| (*i, w.tensor.words)).collect();
        let (firsts, words) = output_in_index_order(&sizes);
        // The batch's tensors share one buffer: no larger than the device's largest (the
        // streaming loader closes its batches before that; an image that passes it alone
        // fails alone).
        let max_output = self.device.limits().max_buffer_size;
        for ((index, work), at) in works.into_iter().zip(firsts) {
            if let Some(e) = too_large(&work, fit) {
                return Err(e);
            }
            if work.tensor.words * 4 > max_output {
                return Err(GpuError::ImageTooLarge {
                    width: work.color.width,
                    height: work.color.height,
                    limit: max_output,
                }
                .into());
            }
            shapes.push(Placed {
                index,
                shape: work.tensor.shape,
                at,
                params: work.params.clone(),
            });
            placed.push((index, work, at));
        }
        let window = fit.window;
        let mut packings = pack(placed, transform, window);
        timings.pack = lap(&mut clock);
        checked(&self.device, || {
            // Every word of the output that is read back is written by the tensor stage.
            let bytes = (words * 4).max(4);
            let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
            let output = self.pool.take(&self.device, "tensors", bytes, storage);
            let mut stage_clock = Instant::now();
            // Timed on the GPU's clock where the device writes timestamps, else one by one.
            let stamps = std::cell::RefCell::new(
                self.time_stages
                    .then(|| StageStamps::new(&self.device))
                    .flatten(),
            );
            let mut after_stage = |stage: &'static str, encoder: &mut wgpu::CommandEncoder| {
                if let Some(stamps) = stamps.borrow_mut().as_mut() {
                    stamps.end(encoder, stage);
                } else if self.time_stages {
                    let done = std::mem::replace(
                        encoder,
                        self.device.create_command_encoder(&Default::default()),
                    );
                    crate::gpu::submit(&self.queue, [done.finish()]);
                    let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
                    timings.stages.push((stage, lap(&mut stage_clock)));
                }
            };
            let mut checks = Vec::new();
            let mut submission = None;
            let recorder = self.recorder();
            for packing in &mut packings {
                let mut encoder = self.device.create_command_encoder(&Default::default());
                if let Some(stamps) = stamps.borrow_mut().as_mut() {
                    stamps.start(&mut encoder);
                }
                let recorded =
                    recorder.record(packing, &mut encoder, &output, window, &mut after_stage)?;
                timings.upload += recorded.upload;
                submission = Some(crate::gpu::submit(&self.queue, [encoder.finish()]));
                let status = recorded.submitted(&self.staging);
                if let Some(status) = status {
                    let images = std::mem::take(&mut packing.entropy_images);
                    timings.huffman_on_gpu += images.len();
                    checks.push(EntropyCheck { status, images });
                }
            }
            // The copy to read back, if any, is a submission of its own; else the last
            // packing's submission is the batch's.
            let (readback, submission) = match submission {
                Some(submission) if !read_back => (None, submission),
                _ => {
                    let mut encoder = self.device.create_command_encoder(&Default::default());
                    let readback = read_back.then(|| {
                        let mapped = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
                        let readback =
                            self.pool
                                .take(&self.device, "tensor readback", bytes, mapped);
                        encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, bytes);
                        readback
                    });
                    (
                        readback,
                        crate::gpu::submit(&self.queue, [encoder.finish()]),
                    )
                }
            };
            if let Some(stamps) = stamps.into_inner() {
                timings.stages = stamps.read(&self.device, &self.queue)?;
                timings.stages_on_gpu_clock = true;
            }
            timings.record = lap(&mut clock);
            Ok(Submitted {
                output,
                readback,
                bytes,
                shapes,
                dtype: transform.dtype,
                submission,
                timings,
                checks,
                transform: *transform,
            })
        })
    }

    /// The second half of [`Self::run_images`]: waits for `submitted` and reads its tensors
    /// back, each into a fresh tensor.
    pub(crate) fn finish(
        &self,
        submitted: Submitted,
    ) -> Result<(Vec<(usize, Tensor)>, GpuTimings)> {
        self.finish_reading(submitted, |bytes, placed, dtype| {
            // On rayon's global pool: measured faster than the copy threads here, as the
            // fresh tensors' page faults spread over every core.
            placed
                .into_par_iter()
                .map(|placed| {
                    let elements = placed.shape.iter().product();
                    let data = tensor_data(&bytes[placed.at as usize * 4..], dtype, elements);
                    let tensor = Tensor {
                        shape: placed.shape,
                        data,
                        params: placed.params,
                    };
                    (placed.index, tensor)
                })
                .collect()
        })
    }

    /// Waits for `submitted` and hands its mapped output (each tensor's elements start at
    /// word `at` of its [`Placed`]) to `read`, which copies out what it keeps.
    pub(crate) fn finish_reading<R>(
        &self,
        mut submitted: Submitted,
        read: impl FnOnce(&[u8], Vec<Placed>, DType) -> R,
    ) -> Result<(R, GpuTimings)> {
        // Time spent meanwhile on other batches is not this one's.
        let mut clock = Instant::now();
        self.redo_given_up(&mut submitted)?;
        let Submitted {
            output,
            readback,
            bytes,
            shapes,
            dtype,
            submission,
            mut timings,
            ..
        } = submitted;
        let readback = readback.ok_or(GpuError::Internal("submitted without a read-back"))?;
        let read = checked(&self.device, || {
            let read = read_buffer(&self.device, &readback, bytes, submission, |bytes| {
                timings.execute = lap(&mut clock);
                read(bytes, shapes, dtype)
            });
            self.pool.put(output);
            self.pool.put(readback);
            read
        })?;
        timings.read_back = lap(&mut clock);
        Ok((read, timings))
    }

    /// The other second half: waits for `submitted` and leaves its tensors on the GPU. Returns
    /// the output buffer (back to the pool with [`BufferPool::put`] once used), each tensor's
    /// caller's index, shape and first word, and the timings.
    pub(crate) fn finish_on_device(
        &self,
        mut submitted: Submitted,
    ) -> Result<(wgpu::Buffer, Vec<Placed>, GpuTimings)> {
        let clock = Instant::now();
        self.redo_given_up(&mut submitted)?;
        let Submitted {
            output,
            shapes,
            submission,
            mut timings,
            ..
        } = submitted;
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(submission),
                timeout: None,
            })
            .map_err(GpuError::from)?;
        timings.execute = clock.elapsed();
        Ok((output, shapes, timings))
    }
}

impl GpuPipeline {
    /// Waits for stage 0's verdicts on `submitted` and redoes, in place, the images the GPU
    /// gave up on (their data ran out, or their states never settled), decoded on the CPU
    /// exactly as the CPU decoder would; then the submission to wait for is the redo's.
    fn redo_given_up(&self, submitted: &mut Submitted) -> Result<()> {
        let mut given_up = Vec::new();
        for check in std::mem::take(&mut submitted.checks) {
            let size = check.status.size();
            let status = read_buffer(
                &self.device,
                &check.status,
                size,
                submitted.submission.clone(),
                |bytes| bytemuck::cast_slice::<u8, u32>(bytes).to_vec(),
            )?;
            given_up.extend(
                check
                    .images
                    .into_iter()
                    .zip(status)
                    .filter(|((_, _, source), decoded)| {
                        *decoded as usize != source.segment.intervals.len()
                    })
                    .map(|(image, _)| image),
            );
        }
        if given_up.is_empty() {
            return Ok(());
        }
        submitted.timings.redone_on_cpu += given_up.len();
        let transform = submitted.transform;
        // Each image passed its plan's checks when it was first prepared, with this transform.
        let checked_before = crate::Limits::default().without_pixel_limit();
        let works: Vec<(usize, ImageWork, u64)> = given_up
            .into_par_iter()
            .map(|(index, at, source)| {
                // With the parameters it drew before, whatever its sample was.
                let sample = Sample::Given(source.params.clone());
                let image = source.decoded_on_cpu();
                let work = ImageWork::new(&image, &transform, &sample, &checked_before)?;
                Ok((index, work, at))
            })
            .collect::<Result<_>>()?;
        let window = binding_window(&self.device);
        let packings = pack(works, &transform, window);
        checked(&self.device, || {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            let mut recorded = Vec::with_capacity(packings.len());
            let recorder = self.recorder();
            for packing in &packings {
                recorded.push(recorder.record(
                    packing,
                    &mut encoder,
                    &submitted.output,
                    window,
                    &mut |_, _| {},
                )?);
            }
            if let Some(readback) = &submitted.readback {
                encoder.copy_buffer_to_buffer(&submitted.output, 0, readback, 0, submitted.bytes);
            }
            submitted.submission = crate::gpu::submit(&self.queue, [encoder.finish()]);
            for recorded in recorded {
                let _ = recorded.submitted(&self.staging);
            }
            Ok(())
        })
    }
}

/// Stage 0's verdicts on one packing: a status word per image (its intervals decoded), and the
/// images.
pub(crate) struct EntropyCheck {
    status: wgpu::Buffer,
    images: Vec<(usize, u64, std::sync::Arc<super::work::SegmentImage>)>,
}

/// One image's tensor in a submission's output.
#[derive(Clone, Debug)]
pub(crate) struct Placed {
    /// The caller's index of the image.
    pub index: usize,
    /// The tensor's dimensions.
    pub shape: [usize; 3],
    /// Its first word in the output.
    pub at: u64,
    /// The random parameters it was made with.
    pub params: Params,
}

/// A batch submitted to the GPU whose tensors are still to be read back.
pub(crate) struct Submitted {
    output: wgpu::Buffer,
    /// Where the output is copied for reading back on the CPU, if it is.
    readback: Option<wgpu::Buffer>,
    /// Bytes of output.
    bytes: u64,
    /// Where each image's tensor is in the output.
    shapes: Vec<Placed>,
    dtype: DType,
    /// The last submission: the tensor stage, and the copy to `readback`.
    submission: wgpu::SubmissionIndex,
    timings: GpuTimings,
    /// Stage 0's verdicts, to read before the tensors are.
    checks: Vec<EntropyCheck>,
    transform: Transform,
}

/// The copy threads: a quarter of the cores, at least one.
fn copy_threads() -> rayon::ThreadPool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    rayon::ThreadPoolBuilder::new()
        .num_threads((cores / 4).max(1))
        .thread_name(|i| format!("gpuprep-copy-{i}"))
        .build()
        .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
        .expect("one thread can be started")
}

/// The time since `clock`, which restarts.
fn lap(clock: &mut Instant) -> std::time::Duration {
    let elapsed = clock.elapsed();
    *clock = Instant::now();
    elapsed
}

/// What a CPU thread does for each image of a batch: decodes `bytes` and prepares it as `sample`
/// of `transform`, refusing an image this device cannot run (see [`too_large`]). With
/// `huffman_on_gpu`, a JPEG that stage 0 can decode is left entropy-coded for it (the caller
/// must then finish its batch with [`GpuPipeline::finish`] or
/// [`GpuPipeline::finish_on_device`], which redo what the GPU gives up on).
pub(crate) fn prepare_image(
    bytes: &[u8],
    transform: &Transform,
    sample: &Sample,
    limits: &crate::Limits,
    fit: Fit,
    huffman_on_gpu: bool,
) -> Result<ImageWork> {
    let work = if crate::formats::JPEG.sniffs(bytes) {
        // Otherwise a JPEG's coefficients are decoded straight into the compact form where
        // they can be.
        let (image, coefficients) = match huffman_on_gpu {
            true => crate::jpeg::decode_for_gpu(bytes, limits)?,
            false => crate::jpeg::decode_compact_or_dense(bytes, limits)?,
        };
        match coefficients {
            Coefficients::Segment(segment) => {
                let work = ImageWork::from_segment(image, segment, transform, sample, limits)?;
                if Packing::fits_alone(&work, fit.window) {
                    work
                } else {
                    // Its dense coefficients would not bind on this device; compact ones may.
                    return prepare_image(bytes, transform, sample, limits, fit, false);
                }
            }
            Coefficients::Compact(planes) => {
                ImageWork::with_planes(&image, planes, transform, sample, limits)?
            }
            Coefficients::Dense => {
                let work = ImageWork::new(&image, transform, sample, limits)?;
                image.recycle();
                work
            }
        }
    } else {
        let decoded = crate::formats::decode(bytes, limits)?;
        ImageWork::prepare(&decoded, transform, sample, limits)?
    };
    too_large(&work, fit).map_or(Ok(work), Err)
}

/// The first word in a submission's output of each image (its index and its tensor's words),
/// and the output's words: the tensors lie in the order of the images' indices, whatever order
/// they are packed in, so that a consumer stacking consecutive images (the loader's steps)
/// copies a run of them at once.
fn output_in_index_order(sizes: &[(usize, u64)]) -> (Vec<u64>, u64) {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&j| sizes[j].0);
    let mut firsts = vec![0; sizes.len()];
    let mut words = 0;
    for j in order {
        firsts[j] = words;
        words += sizes[j].1;
    }
    (firsts, words)
}

/// The error for an image this device cannot run, if it is one: its arenas cannot be bound,
/// or its colour steps loop more than the device's shaders run.
pub(crate) fn too_large(work: &ImageWork, fit: Fit) -> Option<Error> {
    if !Packing::fits_alone(work, fit.window) {
        return Some(
            GpuError::ImageTooLarge {
                width: work.color.width,
                height: work.color.height,
                limit: fit.window,
            }
            .into(),
        );
    }
    let adjusted = work.tensor.adjusted.as_ref()?;
    let iterations = adjusted.job.lane_iterations();
    (iterations > fit.lane_iterations).then(|| {
        GpuError::LoopLimit {
            width: adjusted.job.width,
            height: adjusted.job.pixels / adjusted.job.width.max(1),
            iterations,
            budget: fit.lane_iterations,
        }
        .into()
    })
}

/// A zero-filled output buffer of at least `bytes` bytes, writable by the tensor stage.
pub(crate) fn output_buffer(
    device: &wgpu::Device,
    bytes: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tensors"),
        size: bytes.next_multiple_of(4).max(4),
        usage: wgpu::BufferUsages::STORAGE | usage,
        mapped_at_creation: false,
    })
}

/// The first `elements` elements of packed little-endian `bytes` (copied as they are: every
/// target wgpu runs on is little-endian).
pub(crate) fn tensor_data(bytes: &[u8], dtype: DType, elements: usize) -> TensorData {
    match dtype {
        DType::U8 => TensorData::U8(bytes[..elements].to_vec()),
        DType::F16 => TensorData::F16(bytemuck::pod_collect_to_vec(&bytes[..elements * 2])),
        DType::F32 => TensorData::F32(bytemuck::pod_collect_to_vec(&bytes[..elements * 4])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::context::test_adapter;

    /// A device on the test adapter with its limits changed by `change`, or `None` where the
    /// run is marked GPU-less (see [`test_adapter`]).
    fn test_device(change: impl FnOnce(&mut wgpu::Limits)) -> Option<(wgpu::Device, wgpu::Queue)> {
        let adapter = test_adapter()?;
        let mut limits = adapter.limits();
        change(&mut limits);
        let descriptor = wgpu::DeviceDescriptor {
            required_limits: limits,
            ..Default::default()
        };
        Some(pollster::block_on(adapter.request_device(&descriptor)).unwrap())
    }

    /// A submission's tensors lie in the order of their images' indices, one after the other,
    /// whatever order the images were packed in.
    #[test]
    fn outputs_lie_in_index_order() {
        let sizes = [(7, 10), (2, 3), (9, 1), (4, 5)];
        assert_eq!(output_in_index_order(&sizes), (vec![8, 0, 18, 3], 19));
        assert_eq!(output_in_index_order(&[]), (vec![], 0));
    }

    /// A JPEG whose dense coefficients (stage 0's output) would not bind on the device is
    /// prepared with compact coefficients instead, rather than refused.
    #[test]
    fn images_too_large_for_stage_0_go_compact() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/photos/sklearn__china.jpg"
        );
        let bytes = std::fs::read(path).unwrap();
        // Draft decoding keeps the other arenas small: only the coefficients stay large.
        let transform = Transform {
            resize: Some(crate::transform::Resize::ShorterSide(32)),
            draft: true,
            ..Transform::default()
        };
        let limits = crate::Limits::default();
        let roomy = prepare_image(
            &bytes,
            &transform,
            &Sample::default(),
            &limits,
            Fit::window(1 << 30),
            true,
        )
        .unwrap();
        assert!(roomy.entropy.is_some(), "stage 0 takes it where it binds");
        // Its dense coefficients take 1.7 MB, its compact ones 0.7 MB.
        let tight = prepare_image(
            &bytes,
            &transform,
            &Sample::default(),
            &limits,
            Fit::window(768 << 10),
            true,
        )
        .unwrap();
        assert!(tight.entropy.is_none(), "compact where it does not");
        assert!(tight
            .planes
            .iter()
            .all(|p| p.job.dense == 0 && !p.coefs.is_empty()));
    }

    /// Small bindings: several packings, RGBX read through both windows, outputs split across
    /// windows, pooled arenas larger than a binding; the tensors stay the CPU reference's.
    #[test]
    fn small_binding_windows_give_the_same_tensors() {
        // A device that binds 1 MiB at most: china.jpg (640x427) needs both RGBX windows, and
        // two images never share a packing.
        let window = 1 << 20;
        let Some((device, queue)) =
            test_device(|limits| limits.max_storage_buffer_binding_size = window)
        else {
            return;
        };
        assert_eq!(binding_window(&device), window);
        let pipeline = GpuPipeline::new(&device, &queue);
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/photos/");
        let transform = Transform::exact(224, 224);
        let images: Vec<CoefficientImage> = ["mpl__grace_hopper.jpg", "sklearn__china.jpg"]
            .iter()
            .map(|f| {
                let bytes = std::fs::read(format!("{dir}{f}")).unwrap();
                crate::jpeg::decode_coefficients(&bytes, &crate::Limits::default()).unwrap()
            })
            .collect();
        let works = images
            .iter()
            .chain(&images)
            .enumerate()
            .map(|(i, image)| {
                let work = ImageWork::new(
                    image,
                    &transform,
                    &Sample::default(),
                    &crate::Limits::default(),
                );
                (i, work.unwrap())
            })
            .collect();
        // Arenas as large as two windows (an RGBX arena's most), as a pool hands them out
        // again for any arena.
        for _ in 0..4 {
            pipeline
                .pool
                .put(device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("large arena"),
                    size: 2 * window,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }));
        }
        let submitted = pipeline.submit_images(works, &transform, true).unwrap();
        let (tensors, _) = pipeline.finish(submitted).unwrap();
        assert_eq!(tensors.len(), 4);
        for (i, tensor) in tensors {
            let expected = crate::reference::preprocess(&images[i % 2], &transform).unwrap();
            assert!(tensor == expected, "image {i}");
        }
    }

    /// A device whose largest binding is not a power of two, streamed images whose arenas need
    /// nearly all of it (stage 0's dense coefficients of china.jpg take 1.7 MB of a 2 MiB - 4
    /// binding): the pool rounds such an arena up to 2 MiB, which is bound no further than the
    /// window, so every image converts, exactly (before, each batch failed validation: "Buffer
    /// binding range exceeds max_storage_buffer_binding_size").
    #[test]
    fn a_binding_limit_below_the_pools_rounding_loses_no_image() {
        let max_binding = (2 << 20) - 4;
        let Some((device, queue)) =
            test_device(|limits| limits.max_storage_buffer_binding_size = max_binding)
        else {
            return;
        };
        assert!(binding_window(&device) < 2 << 20);
        let pipeline = GpuPipeline::new(&device, &queue);
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/photos/");
        let files = ["sklearn__china.jpg", "mpl__grace_hopper.jpg"];
        let bytes: Vec<Vec<u8>> = files
            .iter()
            .map(|f| std::fs::read(format!("{dir}{f}")).unwrap())
            .collect();
        let inputs: Vec<&[u8]> = bytes
            .iter()
            .chain(&bytes)
            .chain(&bytes)
            .map(Vec::as_slice)
            .collect();
        let transform = Transform::exact(224, 224);
        for batch in [1, 2, 6] {
            streams_the_cpu_tensors(&pipeline, &inputs, &transform, batch);
        }
    }

    /// `inputs` streamed through `pipeline` in batches of `batch`: stage 0 decodes on the GPU,
    /// and image i's tensor is the CPU backend's for sample i.
    fn streams_the_cpu_tensors(
        pipeline: &GpuPipeline,
        inputs: &[&[u8]],
        transform: &Transform,
        batch: usize,
    ) {
        let limits = crate::Limits::default();
        let options = super::super::StreamOptions::new(transform, &limits, batch);
        let streamed = pipeline.preprocess_many(inputs, &options);
        let on_gpu: usize = streamed
            .batches
            .iter()
            .map(|b| b.gpu_timings.huffman_on_gpu)
            .sum();
        assert!(on_gpu > 0, "stage 0 ran");
        for (i, (result, input)) in streamed.results.iter().zip(inputs).enumerate() {
            let sample = Sample::Index(i as u64);
            let expected = crate::Backend::Cpu
                .preprocess_sample(input, transform, &sample, &limits)
                .unwrap();
            let tensor = result
                .as_ref()
                .unwrap_or_else(|e| panic!("batch {batch}, image {i}: {e}"));
            assert!(*tensor == expected, "batch {batch}, image {i}");
        }
    }

    /// A device with WebGPU's default limits (what a browser or a small GPU gives: 8 storage
    /// buffers a stage, 128 MiB a binding, 256 MiB a buffer, 16 KiB of workgroup memory, 256
    /// invocations a workgroup) runs every stage, Huffman decoding and the colour stage
    /// included, and gives the CPU reference's tensors: gpuprep asks for the adapter's own
    /// limits to bind more at once, and needs no more than these.
    #[test]
    fn webgpu_default_limits_run_every_stage() {
        let Some((device, queue)) = test_device(|limits| *limits = wgpu::Limits::default()) else {
            return;
        };
        assert_eq!(device.limits(), wgpu::Limits::default());
        let pipeline = GpuPipeline::new(&device, &queue);
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/photos/");
        let bytes: Vec<Vec<u8>> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        let training = Transform {
            color_jitter: Some(crate::ColorJitter::new(0.4, 0.4, 0.4, 0.1)),
            grayscale: Some(0.3),
            trivial_augment: Some(crate::TrivialAugment::default()),
            color_ops: crate::ColorOps::default()
                .with(crate::ColorOp::new("random_adjust_sharpness", Some(2.0), 0.5).unwrap())
                .with(crate::ColorOp::new("random_equalize", None, 0.5).unwrap()),
            ..Transform::imagenet_train()
        };
        for transform in [Transform::imagenet_eval(), training] {
            streams_the_cpu_tensors(&pipeline, &inputs, &transform, 4);
        }
    }

    /// A device whose largest buffer is small: a stream's batches close before their tensors
    /// pass it (each output here is half of it), so no batch asks for a buffer the device
    /// cannot create, and every image converts exactly.
    #[test]
    fn batches_close_before_their_output_passes_the_largest_buffer() {
        let max_buffer = 4 << 20;
        let Some((device, queue)) = test_device(|limits| limits.max_buffer_size = max_buffer)
        else {
            return;
        };
        let pipeline = GpuPipeline::new(&device, &queue);
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/photos/mpl__grace_hopper.jpg"
        );
        let bytes = std::fs::read(path).unwrap();
        let inputs: Vec<&[u8]> = vec![&bytes; 5];
        // 418 x 418 float32 RGB: 2.1 MB each, half the largest buffer.
        let transform = Transform::exact(418, 418);
        let limits = crate::Limits::default();
        let options = super::super::StreamOptions::new(&transform, &limits, 8);
        let streamed = pipeline.preprocess_many(&inputs, &options);
        let expected = crate::preprocess(&bytes, &transform, &limits).unwrap();
        for (i, result) in streamed.results.iter().enumerate() {
            let tensor = result.as_ref().unwrap_or_else(|e| panic!("image {i}: {e}"));
            assert!(*tensor == expected, "image {i}");
        }
        assert!(
            streamed.batches.len() >= 3,
            "{} batches",
            streamed.batches.len()
        );
    }

    /// Throughput of the CPU's share of the GPU pipeline on a directory of images
    /// (`GPUPREP_BENCH_DIR`, each `GPUPREP_BENCH_COPIES` times): `prepare_image` of each on all
    /// cores as the stream's threads run it (a single-scan JPEG read for stage 0, a progressive
    /// one decoded and compacted), for a 224×224 tensor; the median of seven passes. The bound
    /// of a set of progressive photos, whose decoding stays on the CPU.
    #[test]
    #[ignore = "a measurement: run with GPUPREP_BENCH_DIR=DIR -- --ignored --nocapture"]
    fn preparation_throughput() {
        let dir = std::env::var("GPUPREP_BENCH_DIR").expect("GPUPREP_BENCH_DIR");
        let copies: usize = std::env::var("GPUPREP_BENCH_COPIES")
            .map_or(1, |c| c.parse().expect("GPUPREP_BENCH_COPIES: a number"));
        let mut paths: Vec<_> = (std::fs::read_dir(&dir).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        let files: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
        let stream: Vec<&[u8]> = (0..copies)
            .flat_map(|_| files.iter().map(Vec::as_slice))
            .collect();
        let transform = Transform::exact(224, 224);
        let limits = crate::Limits::default();
        let mut seconds: Vec<f64> = (0..7)
            .map(|_| {
                let start = std::time::Instant::now();
                stream.par_iter().for_each(|bytes| {
                    let sample = Sample::default();
                    let fit = Fit::window(1 << 31);
                    let work = prepare_image(bytes, &transform, &sample, &limits, fit, true);
                    std::hint::black_box(work.expect("prepared"));
                });
                start.elapsed().as_secs_f64()
            })
            .collect();
        seconds.sort_by(f64::total_cmp);
        let line = serde_json::json!({
            "what": "preparation",
            "dir": dir,
            "images": stream.len(),
            "threads": rayon::current_num_threads(),
            "img_s_median": stream.len() as f64 / seconds[3],
            "img_s_best": stream.len() as f64 / seconds[0],
        });
        println!("{line}");
    }
}
