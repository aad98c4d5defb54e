//! Where the stream's submissions land once the GPU has run them: each image's tensor read back
//! on its own ([`Tensors`]), read back into the slots of one stacked array ([`IntoSlots`]), or
//! left on the device for a consumer there ([`OnDevice`]). The loader's steps are landings of
//! their own (src/loader/stream.rs). A new landing is one [`Landing`] impl.

use super::pipeline::{GpuPipeline, GpuTimings, Placed, Submitted};
use super::stats::BatchStats;
use crate::error::{Error, Result};
use crate::plan::Params;
use crate::tensor::unstackable;
use crate::transform::DType;
use crate::Tensor;
use std::time::{Duration, Instant};

/// Where each submission goes once on the GPU.
pub(crate) trait Landing {
    /// Whether the stream copies each submission's tensors where the CPU can read them (else
    /// they stay in the submission's output buffer, on the device).
    fn reads_back(&self) -> bool;

    /// Takes `flight` (the stream has queued the submissions after it meanwhile): waits for it,
    /// or hands it to what does, and puts its images' tensors, and the failures of the others,
    /// where they go.
    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight);
}

/// One submission on the GPU: its batches, in order.
pub(crate) struct Flight {
    pub(super) batches: Vec<FlyingBatch>,
    pub(super) submitted: Result<Submitted>,
    pub(super) gpu_start: Instant,
    /// The start of the call, which the timeline counts from.
    pub(super) call_start: Instant,
}

/// One batch of a [`Flight`], and the images of it that failed before.
pub(super) struct FlyingBatch {
    pub failed: Vec<(usize, Error)>,
    /// The images on the GPU.
    pub running: Vec<usize>,
    pub stats: BatchStats,
    /// When the first of its images began decoding.
    pub started: Option<Instant>,
}

impl FlyingBatch {
    /// Its stats, now that its submission landed with `timings`.
    fn landed(
        &mut self,
        gpu_start: Instant,
        call_start: Instant,
        timings: GpuTimings,
    ) -> BatchStats {
        BatchStats {
            gpu: gpu_start.elapsed(),
            latency: self.started.map_or(Duration::ZERO, |s| s.elapsed()),
            landed_at: call_start.elapsed(),
            gpu_timings: timings,
            ..std::mem::take(&mut self.stats)
        }
    }
}

/// A landed submission read back: every image's outcome, and its batches' stats in order.
pub(crate) struct Landed<T> {
    pub outcomes: Vec<(usize, Result<T>)>,
    pub batches: Vec<BatchStats>,
}

impl Flight {
    /// Waits for the submission through `finish`, which reads its tensors back; a GPU failure
    /// is every running image's error.
    fn land_with<T>(
        self,
        finish: impl FnOnce(Submitted) -> Result<(Vec<(usize, Result<T>)>, GpuTimings)>,
    ) -> Landed<T> {
        let Flight {
            mut batches,
            submitted,
            gpu_start,
            call_start,
        } = self;
        let mut outcomes: Vec<(usize, Result<T>)> = Vec::new();
        for batch in &mut batches {
            outcomes.extend(batch.failed.drain(..).map(|(i, e)| (i, Err(e))));
        }
        let mut timings = GpuTimings::default();
        match submitted.and_then(finish) {
            Ok((landed, landed_timings)) => {
                outcomes.extend(landed);
                timings = landed_timings;
            }
            Err(e) => {
                let running = batches.iter().flat_map(|b| &b.running);
                outcomes.extend(running.map(|&i| (i, Err(e.clone()))));
            }
        }
        let batches = batches
            .iter_mut()
            .map(|batch| batch.landed(gpu_start, call_start, std::mem::take(&mut timings)))
            .collect();
        Landed { outcomes, batches }
    }

    /// Waits for the submission and reads each of its tensors back into a fresh one.
    pub(crate) fn tensors(self, pipeline: &GpuPipeline) -> Landed<Tensor> {
        self.land_with(|s| {
            let (tensors, timings) = pipeline.finish(s)?;
            let outcomes = tensors.into_iter().map(|(i, t)| (i, Ok(t))).collect();
            Ok((outcomes, timings))
        })
    }

    /// Waits for the submission and hands its mapped read-back buffer, and where each tensor
    /// lies in it, to `read`, which copies out what it keeps and says each tensor's outcome.
    pub(crate) fn read_back<T>(
        self,
        pipeline: &GpuPipeline,
        read: impl FnOnce(&[u8], Vec<Placed>) -> Vec<(usize, Result<T>)>,
    ) -> Landed<T> {
        self.land_with(|s| pipeline.finish_reading(s, |bytes, placed, _| read(bytes, placed)))
    }

    /// Waits for the submission and hands its tensors, still on the GPU, to `consume`, batch
    /// by batch, with their failures (every image's, when the GPU failed the submission);
    /// returns the batches' stats. `consumer_free`: when the consumer returned from the batch
    /// before, updated.
    pub(crate) fn hand_over(
        self,
        pipeline: &GpuPipeline,
        dtype: DType,
        consumer_free: &mut Instant,
        consume: &mut impl FnMut(DeviceBatch<'_>),
    ) -> Vec<BatchStats> {
        let Flight {
            batches,
            submitted,
            gpu_start,
            call_start,
        } = self;
        let landed = submitted.and_then(|s| pipeline.finish_on_device(s));
        let (buffer, placed, mut timings, error) = match landed {
            Ok((buffer, placed, timings)) => (Some(buffer), placed, timings, None),
            Err(e) => (None, Vec::new(), GpuTimings::default(), Some(e)),
        };
        // Placed in the order of the submission's images: batch after batch.
        let mut placed = placed.into_iter();
        let together = batches.len();
        let mut all = Vec::with_capacity(together);
        for (k, mut batch) in batches.into_iter().enumerate() {
            let mut failed = std::mem::take(&mut batch.failed);
            let tensors = match &error {
                None => placed
                    .by_ref()
                    .take(batch.running.len())
                    .map(|placed| DeviceTensor {
                        index: placed.index,
                        shape: placed.shape,
                        offset: placed.at * 4,
                        params: placed.params,
                    })
                    .collect(),
                Some(e) => {
                    failed.extend(batch.running.iter().map(|&i| (i, e.clone())));
                    Vec::new()
                }
            };
            let mut stats = batch.landed(gpu_start, call_start, std::mem::take(&mut timings));
            stats.consumer_waited = consumer_free.elapsed();
            consume(DeviceBatch {
                buffer: buffer.as_ref(),
                tensors,
                dtype,
                failed,
                stats: &stats,
                last_of_submission: k + 1 == together,
            });
            *consumer_free = Instant::now();
            all.push(stats);
        }
        // Work the consumer submitted on it runs before any later use.
        if let Some(buffer) = buffer {
            pipeline.pool.put(buffer);
        }
        all
    }
}

/// The results of [`GpuPipeline::preprocess_many`], in input order, and per-batch stats.
pub struct Streamed {
    /// One result per input image.
    pub results: Vec<Result<Tensor>>,
    /// One entry per batch, in order.
    pub batches: Vec<BatchStats>,
}

/// Each image's tensor read back on its own, into its input's place.
pub(super) struct Tensors {
    pub results: Vec<Option<Result<Tensor>>>,
    pub batches: Vec<BatchStats>,
}

impl Landing for Tensors {
    fn reads_back(&self) -> bool {
        true
    }

    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight) {
        let landed = flight.tensors(pipeline);
        for (i, result) in landed.outcomes {
            self.results[i] = Some(result);
        }
        self.batches.extend(landed.batches);
    }
}

/// Tensors of one shape read back into their input's slot of one stacked array.
pub(super) struct IntoSlots<'s, 'b> {
    pub slots: &'s mut [Option<&'b mut [u8]>],
    pub shape: [usize; 3],
    pub outcomes: Vec<Result<Params>>,
    pub batches: Vec<BatchStats>,
}

impl Landing for IntoSlots<'_, '_> {
    fn reads_back(&self) -> bool {
        true
    }

    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight) {
        let landed = flight.read_back(pipeline, |bytes, placed| {
            let copies = placed.into_iter().map(|placed| {
                let slot = self.slots.get_mut(placed.index).and_then(Option::take);
                (placed, slot)
            });
            copy_into_slots(bytes, copies.collect(), self.shape)
        });
        for (i, outcome) in landed.outcomes {
            self.outcomes[i] = outcome;
        }
        self.batches.extend(landed.batches);
    }
}

/// Copies each tensor of a mapped read-back buffer (`bytes`) into its slot, on rayon's pool,
/// where the fresh slots' page faults spread over every core (a read-back landing runs aside,
/// off the path that feeds the GPU); a tensor without a slot, or of another shape than
/// `shape`, fails its image.
pub(crate) fn copy_into_slots(
    bytes: &[u8],
    copies: Vec<(Placed, Option<&mut [u8]>)>,
    shape: [usize; 3],
) -> Vec<(usize, Result<Params>)> {
    use rayon::prelude::*;
    copies
        .into_par_iter()
        .map(|(placed, slot)| {
            let tensor = bytes.get(placed.at as usize * 4..);
            let outcome = match (slot, tensor) {
                (Some(slot), Some(tensor))
                    if placed.shape == shape && tensor.len() >= slot.len() =>
                {
                    slot.copy_from_slice(&tensor[..slot.len()]);
                    Ok(placed.params)
                }
                _ => Err(unstackable(&placed.shape, &shape)),
            };
            (placed.index, outcome)
        })
        .collect()
}

/// One batch of [`GpuPipeline::preprocess_on_device`], its tensors on the GPU.
pub struct DeviceBatch<'a> {
    /// The tensors, `STORAGE | COPY_SRC`, little-endian, C order; `None` when the GPU failed
    /// the whole batch (its images are in `failed`). The batches of one submission share it;
    /// it is usable until the call for the last of them ([`Self::last_of_submission`]) returns,
    /// then serves a later submission, after any work the consumer submitted on it.
    pub buffer: Option<&'a wgpu::Buffer>,
    /// Where each of the batch's tensors lies in `buffer`.
    pub tensors: Vec<DeviceTensor>,
    /// Element type of every tensor.
    pub dtype: DType,
    /// The batch's images that failed, with why (each alone: the others are exact).
    pub failed: Vec<(usize, Error)>,
    /// What the batch cost.
    pub stats: &'a BatchStats,
    /// Whether it is the last of the batches that went to the GPU in one submission: a
    /// consumer recording work on `buffer` over several of them submits it before this one's
    /// call returns.
    pub last_of_submission: bool,
}

/// One tensor of a [`DeviceBatch`].
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTensor {
    /// The input image's index.
    pub index: usize,
    /// Dimensions in the transform's layout: `[h, w, 3]` or `[3, h, w]`.
    pub shape: [usize; 3],
    /// Its first byte in the buffer (a multiple of 4).
    pub offset: u64,
    /// The random parameters it was made with.
    pub params: Params,
}

/// Each batch's tensors left on the GPU for `consume`, on the stream's thread, so that what it
/// submits goes in order with the stream's own work.
pub(super) struct OnDevice<F> {
    pub dtype: DType,
    pub consume: F,
    /// When the consumer was last done with a batch (at first, when the call began).
    pub consumer_free: Instant,
    pub batches: Vec<BatchStats>,
}

impl<F: FnMut(DeviceBatch<'_>)> Landing for OnDevice<F> {
    fn reads_back(&self) -> bool {
        false
    }

    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight) {
        let stats = flight.hand_over(
            pipeline,
            self.dtype,
            &mut self.consumer_free,
            &mut self.consume,
        );
        self.batches.extend(stats);
    }
}

/// A landing run on a thread of its own: the stream's thread hands each flight over and goes
/// on packing and submitting the next while the landing waits for the GPU and copies tensors
/// out. One flight waits for the landing while it lands the one before.
pub(super) struct Aside {
    pub sender: std::sync::mpsc::SyncSender<Flight>,
    pub reads_back: bool,
}

impl Landing for Aside {
    fn reads_back(&self) -> bool {
        self.reads_back
    }

    fn land(&mut self, _: &GpuPipeline, flight: Flight) {
        // The landing's thread takes flights until the stream ends, unless it panicked: then
        // the stream stops here, and `stream_landing_aside` passes the landing's panic on.
        if self.sender.send(flight).is_err() {
            panic!("the landing thread stopped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::context::test_gpu;
    use crate::gpu::stream::{Arrival, Arriving, Source, StreamOptions};
    use crate::plan::Sample;

    /// A landing that panics on its second flight, counting the flights it took.
    struct Fails(usize);

    impl Landing for Fails {
        fn reads_back(&self) -> bool {
            true
        }

        fn land(&mut self, _: &GpuPipeline, _: Flight) {
            self.0 += 1;
            assert!(self.0 < 2, "the landing's own panic");
        }
    }

    /// A photo over and over, without end, counting what was taken.
    struct Endless<'a>(&'a [u8], &'a std::sync::atomic::AtomicUsize);

    impl<'a> Source<'a> for Endless<'a> {
        fn next(&mut self, _wait: bool) -> Arrival<'a> {
            let index = self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Arrival::Image(Arriving {
                index,
                sample: Sample::Index(index as u64),
                bytes: std::borrow::Cow::Borrowed(self.0),
            })
        }
    }

    /// A landing that panics stops a stream whose source never ends, and the caller gets the
    /// landing's own panic, not a hang or another message.
    #[test]
    fn a_landing_that_panics_stops_the_stream_with_its_panic() {
        let Some(gpu) = test_gpu() else { return };
        let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/photos/mpl__grace_hopper.jpg"
        );
        let bytes = std::fs::read(path).unwrap();
        let transform = crate::Transform::exact(32, 32);
        let limits = crate::Limits::default();
        let options = StreamOptions::new(&transform, &limits, 2);
        let taken = std::sync::atomic::AtomicUsize::new(0);
        let stream = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pipeline.stream_landing_aside(Endless(&bytes, &taken), &options, Fails(0))
        }));
        let panic = stream.err().expect("the stream stopped with a panic");
        let message = match panic.downcast_ref::<&str>() {
            Some(text) => text.to_string(),
            None => panic.downcast_ref::<String>().cloned().unwrap_or_default(),
        };
        assert!(message.contains("the landing's own panic"), "{message:?}");
        // It stopped within a few submissions of the failure, not at the source's end.
        assert!(taken.load(std::sync::atomic::Ordering::Relaxed) < 10_000);
    }
}
