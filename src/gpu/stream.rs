//! Many images of any sizes: entropy decoding and packing on CPU threads run one batch ahead of
//! the GPU, so both stay busy.

use super::packing::binding_window;
use super::pipeline::{too_large, GpuPipeline, GpuTimings};
use super::work::ImageWork;
use crate::error::{Error, Result};
use crate::{jpeg, Limits, Tensor, Transform};
use std::time::{Duration, Instant};

/// What one batch cost.
#[derive(Clone, Debug, Default)]
pub struct BatchStats {
    /// Images in the batch.
    pub images: usize,
    /// Bytes uploaded to the GPU (compact coefficients, job records, taps).
    pub bytes_uploaded: u64,
    /// What the same coefficients take as dense 16-bit blocks, for comparison.
    pub dense_coefficient_bytes: u64,
    /// CPU time of entropy decoding and preparing its images, summed over the threads.
    pub decode: Duration,
    /// Wall time of the GPU work: recording, upload, dispatches, read-back.
    pub gpu: Duration,
    /// How long the GPU side waited for this batch's images to be decoded (the decoding the
    /// previous batches' GPU work did not hide).
    pub waited: Duration,
    /// From the start of its decoding to its tensors being on the CPU.
    pub latency: Duration,
    /// The GPU side's time, phase by phase.
    pub gpu_timings: GpuTimings,
}

/// The results of [`GpuPipeline::preprocess_many`], in input order, and per-batch stats.
pub struct Streamed {
    /// One result per input image.
    pub results: Vec<Result<Tensor>>,
    /// One entry per batch, in order.
    pub batches: Vec<BatchStats>,
}

/// One image decoded and prepared on a CPU thread.
struct Decoded {
    index: usize,
    work: Result<ImageWork>,
    started: Instant,
    took: Duration,
}

/// Images per batch when the caller does not say.
pub const DEFAULT_BATCH: usize = 64;

impl GpuPipeline {
    /// Decodes and transforms `images` in batches of up to `batch`: CPU threads decode
    /// continuously while the GPU runs what they have finished. Outputs may differ in shape; each
    /// result stands alone (a bad image fails alone, in its own slot).
    pub fn preprocess_many(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        images: &[&[u8]],
        transform: &Transform,
        limits: &Limits,
        batch: usize,
    ) -> Streamed {
        let window = binding_window(device);
        let batch = batch.max(1);
        let prepare = |i: usize| -> Decoded {
            let started = Instant::now();
            let work = jpeg::decode_coefficients(images[i], limits)
                .and_then(|image| ImageWork::new(&image, transform))
                .and_then(|work| too_large(&work, window).map_or(Ok(work), Err));
            Decoded {
                index: i,
                work,
                started,
                took: started.elapsed(),
            }
        };
        let mut results: Vec<Option<Result<Tensor>>> = (0..images.len()).map(|_| None).collect();
        let mut batches = Vec::new();
        // This thread feeds the GPU; rayon's threads decode. At most two batches' worth of
        // images are being decoded or waiting at any time, which bounds memory; decoding tasks
        // never block, so the GPU side's own parallel copies always find threads.
        rayon::in_place_scope(|scope| {
            let (sender, receiver) = std::sync::mpsc::channel::<Decoded>();
            let mut spawned = 0;
            let mut spawn_until = |limit: usize| {
                while spawned < limit.min(images.len()) {
                    let (sender, i) = (sender.clone(), spawned);
                    scope.spawn(move |_| {
                        let _ = sender.send(prepare_caught(i, prepare));
                    });
                    spawned += 1;
                }
            };
            spawn_until(2 * batch);
            // The first batches are small, so the GPU starts early; then they grow to `batch`.
            let mut target = (batch / 8).max(1);
            let mut received = 0;
            while received < images.len() {
                let wait = Instant::now();
                let mut pending = Vec::with_capacity(batch);
                while pending.len() < target.min(images.len() - received) {
                    match receiver.recv() {
                        Ok(decoded) => pending.push(decoded),
                        Err(_) => break,
                    }
                }
                while pending.len() < batch {
                    match receiver.try_recv() {
                        Ok(decoded) => pending.push(decoded),
                        Err(_) => break,
                    }
                }
                if pending.is_empty() {
                    break;
                }
                received += pending.len();
                spawn_until(received + 2 * batch);
                let (ran, stats) =
                    self.run_batch(device, queue, pending, wait.elapsed(), transform);
                batches.push(stats);
                for (i, result) in ran {
                    results[i] = Some(result);
                }
                target = (target * 2).min(batch);
            }
        });
        Streamed {
            results: results
                .into_iter()
                .enumerate()
                .map(|(i, r)| {
                    r.unwrap_or_else(|| Err(Error::Gpu(format!("image {i} was never decoded"))))
                })
                .collect(),
            batches,
        }
    }

    /// Runs one batch of decoded images and says what it cost.
    fn run_batch(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pending: Vec<Decoded>,
        waited: Duration,
        transform: &Transform,
    ) -> (Vec<(usize, Result<Tensor>)>, BatchStats) {
        let good = pending.iter().filter_map(|d| d.work.as_ref().ok());
        let (uploaded, dense) = good.fold((0, 0), |(u, d), w| {
            (u + w.uploaded_bytes(), d + w.dense_coefficient_bytes)
        });
        let mut stats = BatchStats {
            images: pending.len(),
            bytes_uploaded: uploaded,
            dense_coefficient_bytes: dense,
            decode: pending.iter().map(|d| d.took).sum(),
            waited,
            ..BatchStats::default()
        };
        let started = pending.iter().map(|d| d.started).min();
        let gpu_start = Instant::now();
        let prepared = pending.into_iter().map(|d| (d.index, d.work)).collect();
        let (ran, timings) = self.run_prepared(device, queue, prepared, transform);
        stats.gpu = gpu_start.elapsed();
        stats.gpu_timings = timings;
        stats.latency = started.map_or(Duration::ZERO, |s| s.elapsed());
        (ran, stats)
    }

    /// Runs the prepared images of one batch; the ones that failed to prepare keep their error,
    /// and a GPU failure is every image's error.
    fn run_prepared(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        prepared: Vec<(usize, Result<ImageWork>)>,
        transform: &Transform,
    ) -> (Vec<(usize, Result<Tensor>)>, GpuTimings) {
        let mut results = Vec::with_capacity(prepared.len());
        let mut works = Vec::with_capacity(prepared.len());
        for (i, work) in prepared {
            match work {
                Ok(work) => works.push((i, work)),
                Err(e) => results.push((i, Err(e))),
            }
        }
        let indices: Vec<usize> = works.iter().map(|(i, _)| *i).collect();
        let mut timings = GpuTimings::default();
        match self.run_images(device, queue, works, transform) {
            Ok((tensors, spent)) => {
                results.extend(tensors.into_iter().map(|(i, t)| (i, Ok(t))));
                timings = spent;
            }
            Err(e) => results.extend(indices.into_iter().map(|i| (i, Err(gpu_error(&e))))),
        }
        (results, timings)
    }
}

/// `prepare(i)`, with a panic (a decoder bug) turned into that image's error, so that it can
/// neither take down the other images nor leave the GPU side waiting for it.
fn prepare_caught(i: usize, prepare: impl Fn(usize) -> Decoded) -> Decoded {
    let started = Instant::now();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prepare(i))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Decoded {
            index: i,
            work: Err(Error::Corrupt(format!(
                "the decoder failed unexpectedly ({what}); please report this file"
            ))),
            started,
            took: started.elapsed(),
        }
    })
}

/// A copy of a batch-wide GPU error for one image.
fn gpu_error(e: &Error) -> Error {
    Error::Gpu(e.to_string())
}
