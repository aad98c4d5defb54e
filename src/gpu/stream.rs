//! Many images of any sizes: entropy decoding and packing on CPU threads run one batch ahead of
//! the GPU, so both stay busy.

use super::packing::binding_window;
use super::pipeline::{too_large, GpuPipeline, GpuTimings};
use super::work::ImageWork;
use crate::error::{Error, Result};
use crate::{jpeg, Limits, Tensor, Transform};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// What one batch cost.
#[derive(Clone, Debug, Default)]
pub struct BatchStats {
    /// Images in the batch.
    pub images: usize,
    /// Encoded bytes in.
    pub bytes_in: u64,
    /// Bytes uploaded to the GPU (compact coefficients, job records, taps).
    pub bytes_uploaded: u64,
    /// What the same coefficients take as dense 16-bit blocks, for comparison.
    pub dense_coefficient_bytes: u64,
    /// Wall time of entropy decoding and packing on the CPU threads.
    pub decode: Duration,
    /// Wall time of the GPU work: recording, upload, dispatches, read-back.
    pub gpu: Duration,
    /// How long the GPU side sat idle waiting for this batch to be decoded (the decoding time
    /// the previous batch's GPU work did not hide).
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

/// A batch decoded and packed on the CPU.
struct Prepared {
    works: Vec<(usize, Result<ImageWork>)>,
    stats: BatchStats,
    started: Instant,
}

/// Images per batch when the caller does not say.
pub const DEFAULT_BATCH: usize = 64;

impl GpuPipeline {
    /// Decodes and transforms `images`, `batch` at a time: while the GPU runs one batch, CPU
    /// threads decode the next. Outputs may differ in shape; each result stands alone (a bad
    /// image fails alone, in its own slot).
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
        let prepare = |first: usize, chunk: &[&[u8]]| -> Prepared {
            let started = Instant::now();
            let works: Vec<(usize, Result<ImageWork>)> = chunk
                .par_iter()
                .enumerate()
                .map(|(i, bytes)| {
                    let work = jpeg::decode_coefficients(bytes, limits)
                        .and_then(|image| ImageWork::new(&image, transform))
                        .and_then(|work| too_large(&work, window).map_or(Ok(work), Err));
                    (first + i, work)
                })
                .collect();
            let good = works.iter().filter_map(|(_, w)| w.as_ref().ok());
            let (uploaded, dense) = good.fold((0, 0), |(u, d), w| {
                (u + w.uploaded_bytes(), d + w.dense_coefficient_bytes)
            });
            let stats = BatchStats {
                images: chunk.len(),
                bytes_in: chunk.iter().map(|b| b.len() as u64).sum(),
                bytes_uploaded: uploaded,
                dense_coefficient_bytes: dense,
                decode: started.elapsed(),
                ..BatchStats::default()
            };
            Prepared {
                works,
                stats,
                started,
            }
        };
        let mut results: Vec<Option<Result<Tensor>>> = (0..images.len()).map(|_| None).collect();
        let mut batches = Vec::new();
        let batch = batch.max(1);
        let mut chunks = images.chunks(batch).enumerate();
        let mut prepared = chunks.next().map(|(_, chunk)| {
            // Nothing runs beside the first batch's decoding.
            let mut first = prepare(0, chunk);
            first.stats.waited = first.stats.decode;
            first
        });
        while let Some(current) = prepared {
            let next = chunks.next();
            let gpu_start = Instant::now();
            let mut stats = current.stats;
            let started = current.started;
            let (((ran, timings), gpu_time), following) = rayon::join(
                || {
                    let ran = self.run_prepared(device, queue, current.works, transform);
                    (ran, gpu_start.elapsed())
                },
                || next.map(|(k, chunk)| prepare(k * batch, chunk)),
            );
            stats.gpu = gpu_time;
            stats.gpu_timings = timings;
            stats.latency = started.elapsed();
            batches.push(stats);
            for (i, result) in ran {
                results[i] = Some(result);
            }
            // The GPU side idles while the next batch is still being decoded.
            prepared = following.map(|mut next| {
                next.stats.waited = next.stats.decode.saturating_sub(gpu_time);
                next
            });
        }
        Streamed {
            results: results
                .into_iter()
                .map(|r| r.expect("every image has a result"))
                .collect(),
            batches,
        }
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

/// A copy of a batch-wide GPU error for one image.
fn gpu_error(e: &Error) -> Error {
    Error::Gpu(e.to_string())
}
