//! A loader's passes on the GPU, as one stream that runs on from epoch to epoch, so that
//! decoding runs ahead across batch boundaries and the GPU never waits for a batch to start.
//! Its source is the raw batches the feeders read ([`RawBatches`]); it lands in each step's
//! array as the step's images land, in any order: read back into host memory ([`HostSteps`])
//! or copied into a buffer on the device ([`DeviceSteps`]). A step's batch is handed over once
//! all its images have landed.

use super::arrays::Ring;
use super::assemble::{split, Partial, Read, StepArray};
use super::device_arrays::DeviceRing;
use super::{lock, Batch, Done, Raw, StreamWaits, WaitedFor};
use crate::error::{Error, GpuError, Result};
use crate::gpu::{
    copy_into_slots, Arrival, Arriving, DeviceBatch, Flight, GpuPipeline, Landing, Placed, Source,
    StreamOptions,
};
use crate::plan::{Params, Sample, Samples};
use crate::tensor::unstackable;
use crate::{GpuBackend, Limits, Transform};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A loader's stream. Sample `k` of the batch of serial number `s` (its place among all the
/// passes' batches) is image `s · batch_size + k` of the stream. Each step lands in an array:
/// read back into one of `host`, or, with `on_device`, copied into a buffer of that ring on
/// the device. What the stream's thread waits for goes to `waits`.
pub(super) struct LoaderStream<'a> {
    pub gpu: &'a GpuBackend,
    pub host: &'a Arc<Ring>,
    pub on_device: Option<&'a Arc<DeviceRing>>,
    pub transform: &'a Transform,
    pub limits: &'a Limits,
    pub batch_size: usize,
    pub waits: &'a StreamWaits,
}

impl LoaderStream<'_> {
    /// The raw batches `raw` gives, each step's batch sent to `done` once all its images have
    /// landed, and each pass's end; ends when `raw` does or `done`'s receiver is gone.
    pub fn run(&self, raw: &Receiver<Raw>, done: &SyncSender<Done>) {
        let Some(shape) = self.transform.fixed_output_shape() else {
            let e = Error::Options("a loader's transform needs one output size".into());
            let _ = done.send(Done::Batch {
                pass: 0,
                step: 0,
                batch: Err(e),
            });
            return;
        };
        let steps = Steps {
            partials: Mutex::default(),
            stopped: AtomicBool::new(false),
            done,
            waits: self.waits,
            batch_size: self.batch_size,
            shape,
            slot_bytes: shape.iter().product::<usize>() * self.transform.dtype.size(),
        };
        let source = RawBatches {
            steps: &steps,
            raw,
            arriving: Vec::new().into_iter(),
            host: self.host,
            on_device: self.on_device,
            transform: self.transform,
        };
        let options = StreamOptions {
            transform: self.transform,
            limits: self.limits,
            batching: self.gpu.batching,
            samples: Samples::Positions,
        };
        let pipeline: &GpuPipeline = &self.gpu.pipeline;
        match self.on_device {
            Some(ring) => {
                let mut landing = DeviceSteps {
                    steps: &steps,
                    device: &self.gpu.gpu.device,
                    ring,
                    dtype: self.transform.dtype,
                    encoder: None,
                    outcomes: Vec::new(),
                    consumer_free: Instant::now(),
                };
                pipeline.stream(source, &options, &mut landing);
            }
            None => {
                pipeline.stream_landing_aside(source, &options, HostSteps { steps: &steps });
            }
        }
    }
}

/// What the loader's source and landing share: the steps being made, by serial number, and
/// the way to the consumer.
struct Steps<'a> {
    partials: Mutex<BTreeMap<usize, Partial>>,
    /// Set once the consumer is gone: the source then ends the stream.
    stopped: AtomicBool,
    done: &'a SyncSender<Done>,
    waits: &'a StreamWaits,
    batch_size: usize,
    shape: [usize; 3],
    /// Bytes of one tensor.
    slot_bytes: usize,
}

impl Steps<'_> {
    /// Hands `message` to the consumer, waiting while it is busy; marks the stream stopped
    /// when the consumer is gone.
    fn hand_over(&self, message: Done) {
        let sent = self
            .waits
            .timing(WaitedFor::Consumer, || self.done.send(message).is_ok());
        if !sent {
            self.stopped.store(true, Ordering::Relaxed);
        }
    }

    fn send(&self, (pass, step): (u64, usize), batch: Result<Batch>) {
        self.hand_over(Done::Batch { pass, step, batch });
    }

    /// Records images' outcomes, by stream index; returns the steps they completed, taken out.
    fn put_all(&self, outcomes: Vec<(usize, Result<Params>)>) -> Vec<Partial> {
        let mut open = lock(&self.partials);
        let mut complete = Vec::new();
        for (index, outcome) in outcomes {
            let (serial, k) = (index / self.batch_size, index % self.batch_size);
            if open.get_mut(&serial).is_some_and(|p| p.put(k, outcome)) {
                complete.extend(open.remove(&serial));
            }
        }
        complete
    }
}

/// The stream's source: the current raw batch's images, then the next raw batch's, waited for
/// only when the stream asks to wait. Each raw batch opens its step (with an array to land in)
/// before its images go to the stream; a pass's end is passed on to the consumer.
struct RawBatches<'s, 'a> {
    steps: &'s Steps<'a>,
    raw: &'s Receiver<Raw>,
    arriving: std::vec::IntoIter<Arriving<'static>>,
    host: &'s Arc<Ring>,
    on_device: Option<&'s Arc<DeviceRing>>,
    transform: &'s Transform,
}

impl RawBatches<'_, '_> {
    /// An array for a step of `samples` samples (its capacity a whole batch's, so that arrays
    /// are reused from step to step).
    fn array(&self, samples: usize) -> Result<StepArray> {
        let steps = self.steps;
        let Some(ring) = self.on_device else {
            let elements: usize = steps.shape.iter().product();
            let (capacity, len) = (steps.batch_size * elements, samples * elements);
            let dtype = self.transform.dtype;
            return Ok(StepArray::Host(self.host.take(dtype, capacity, len)));
        };
        let (capacity, len) = (
            steps.batch_size * steps.slot_bytes,
            samples * steps.slot_bytes,
        );
        steps
            .waits
            .timing(WaitedFor::Buffers, || {
                ring.take(capacity as u64, len as u64)
            })
            .map(StepArray::Device)
            .map_err(|e| GpuError::Handoff(e).into())
    }

    /// Opens the step of `raw`: its images become the ones arriving next.
    fn open(&mut self, raw: super::RawBatch) {
        let started = Instant::now();
        let (pass, epoch, step, serial, read) =
            (raw.pass, raw.epoch, raw.step, raw.serial, raw.read);
        let Read {
            metas,
            images,
            failed,
        } = split(raw);
        let data = match self.array(metas.len()) {
            Ok(data) => data,
            Err(e) => return self.steps.send((pass, step), Err(e)),
        };
        let base = serial * self.steps.batch_size;
        self.arriving = images
            .into_iter()
            .zip(&metas)
            .enumerate()
            .map(|(k, (bytes, meta))| Arriving {
                index: base + k,
                sample: Sample::InEpoch {
                    epoch,
                    index: meta.index,
                },
                bytes: bytes.into(),
            })
            .collect::<Vec<_>>()
            .into_iter();
        let partial = Partial::new((pass, step, read, started), data, metas, failed);
        if partial.is_complete() {
            self.steps
                .send((pass, step), Ok(partial.finish(self.steps.shape)));
        } else {
            lock(&self.steps.partials).insert(serial, partial);
        }
    }
}

impl Source<'static> for RawBatches<'_, '_> {
    fn next(&mut self, wait: bool) -> Arrival<'static> {
        loop {
            if self.steps.stopped.load(Ordering::Relaxed) {
                return Arrival::End;
            }
            if let Some(image) = self.arriving.next() {
                return Arrival::Image(image);
            }
            let received = if wait {
                let waits = self.steps.waits;
                waits.timing(WaitedFor::Samples, || self.raw.recv().map_err(|_| true))
            } else {
                let received = self.raw.try_recv();
                received.map_err(|e| e == TryRecvError::Disconnected)
            };
            match received {
                Ok(Raw::Batch(raw)) => self.open(raw),
                Ok(Raw::End { pass, steps }) => self.steps.hand_over(Done::End { pass, steps }),
                Err(true) => return Arrival::End,
                Err(false) => return Arrival::NotYet,
            }
        }
    }
}

/// Steps landing in host arrays: each submission read back, its tensors copied from the
/// mapped read-back buffer straight into their steps' slots.
struct HostSteps<'s, 'a> {
    steps: &'s Steps<'a>,
}

impl HostSteps<'_, '_> {
    /// Copies each placed tensor into its step's slot (a tensor whose step is not open fails).
    fn copy_out(&self, bytes: &[u8], placed: Vec<Placed>) -> Vec<(usize, Result<Params>)> {
        let steps = self.steps;
        let mut partials = lock(&steps.partials);
        let mut slots: HashMap<usize, &mut [u8]> = HashMap::new();
        for (serial, partial) in partials.iter_mut() {
            if let StepArray::Host(data) = &mut partial.data {
                let chunks = data.bytes_mut().chunks_mut(steps.slot_bytes.max(1));
                let first = serial * steps.batch_size;
                slots.extend(chunks.enumerate().map(|(k, c)| (first + k, c)));
            }
        }
        let copies = placed
            .into_iter()
            .map(|placed| {
                let slot = slots.remove(&placed.index);
                (placed, slot)
            })
            .collect();
        copy_into_slots(bytes, copies, steps.shape)
    }
}

impl Landing for HostSteps<'_, '_> {
    fn reads_back(&self) -> bool {
        true
    }

    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight) {
        let waits = self.steps.waits;
        let landed = flight.read_back(pipeline, |bytes, placed| {
            waits.landing(|| self.copy_out(bytes, placed))
        });
        landed.batches.iter().for_each(|stats| waits.landed(stats));
        waits.submitted();
        for partial in self.steps.put_all(landed.outcomes) {
            let key = (partial.pass, partial.step);
            self.steps.send(key, Ok(partial.finish(self.steps.shape)));
        }
    }
}

/// Steps landing in device buffers: each landed tensor copied into its step's buffer, GPU to
/// GPU, on the stream's thread (so the copies go in order with the stream's own submissions).
/// A submission's copies go to the GPU together, after its last batch.
struct DeviceSteps<'s, 'a> {
    steps: &'s Steps<'a>,
    device: &'s wgpu::Device,
    ring: &'s Arc<DeviceRing>,
    dtype: crate::DType,
    /// The copies recorded so far of the submission landing.
    encoder: Option<wgpu::CommandEncoder>,
    /// Its images' outcomes so far.
    outcomes: Vec<(usize, Result<Params>)>,
    /// When the stream last returned from handing a batch over.
    consumer_free: Instant,
}

impl Landing for DeviceSteps<'_, '_> {
    fn reads_back(&self) -> bool {
        false
    }

    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight) {
        let mut consumer_free = self.consumer_free;
        let dtype = self.dtype;
        flight.hand_over(pipeline, dtype, &mut consumer_free, &mut |b| self.take(b));
        self.consumer_free = consumer_free;
    }
}

impl DeviceSteps<'_, '_> {
    /// Takes one landed batch: records its copies; after a submission's last batch, submits
    /// them and hands over the steps they completed.
    fn take(&mut self, batch: DeviceBatch<'_>) {
        let waits = self.steps.waits;
        waits.landed(batch.stats);
        let last = batch.last_of_submission;
        let closed = waits.landing(|| {
            self.record(batch);
            if !last {
                return Vec::new();
            }
            let (outcomes, ready) = self.submit();
            let complete = self.steps.put_all(outcomes).into_iter();
            complete
                .map(|partial| ((partial.pass, partial.step), self.close_up(partial, ready)))
                .collect()
        });
        if last {
            waits.submitted();
        }
        for (key, batch) in closed {
            self.steps.send(key, batch);
        }
    }

    /// Records the copy of each of `batch`'s tensors into its slot, and every image's outcome
    /// (the failed ones' included): a copy a [`Run`].
    fn record(&mut self, batch: DeviceBatch<'_>) {
        let steps = self.steps;
        let slot_bytes = steps.slot_bytes as u64;
        let outcomes = &mut self.outcomes;
        outcomes.extend(batch.failed.into_iter().map(|(i, e)| (i, Err(e))));
        let open = lock(&steps.partials);
        let mut placed = Vec::with_capacity(batch.tensors.len());
        for tensor in batch.tensors {
            let (serial, k) = (
                tensor.index / steps.batch_size,
                tensor.index % steps.batch_size,
            );
            if !matches!(
                open.get(&serial).map(|p| &p.data),
                Some(StepArray::Device(_))
            ) {
                continue;
            }
            if batch.buffer.is_none() || tensor.shape != steps.shape {
                let e = unstackable(&tensor.shape, &steps.shape);
                outcomes.push((tensor.index, Err(e)));
                continue;
            }
            outcomes.push((tensor.index, Ok(tensor.params)));
            placed.push((serial, k, tensor.offset));
        }
        let (Some(from), false) = (batch.buffer, placed.is_empty()) else {
            return;
        };
        let device = self.device;
        let encoder = self
            .encoder
            .get_or_insert_with(|| device.create_command_encoder(&Default::default()));
        for run in runs(placed, slot_bytes) {
            if let Some(StepArray::Device(array)) = open.get(&run.serial).map(|p| &p.data) {
                let (to, bytes) = (run.first as u64 * slot_bytes, run.slots * slot_bytes);
                encoder.copy_buffer_to_buffer(from, run.at, array.buffer(), to, bytes);
            }
        }
    }

    /// Submits the copies recorded; returns the outcomes and the timeline value the copies
    /// signal (0 without CUDA), leaving none recorded.
    fn submit(&mut self) -> (Vec<(usize, Result<Params>)>, u64) {
        let outcomes = std::mem::take(&mut self.outcomes);
        let encoder = self
            .encoder
            .take()
            .unwrap_or_else(|| self.device.create_command_encoder(&Default::default()));
        (outcomes, self.ring.submit(encoder.finish()))
    }

    /// `partial`'s batch, its copies signalling `ready`: where some samples failed, the
    /// others are copied up into a buffer of their own, in order.
    fn close_up(&self, mut partial: Partial, ready: u64) -> Result<Batch> {
        let shape = self.steps.shape;
        let (kept, samples) = (partial.kept(), partial.samples());
        let StepArray::Device(array) = &mut partial.data else {
            return Err(GpuError::Internal("a device batch without its buffer").into());
        };
        array.set_ready(ready);
        if kept.len() == samples {
            return Ok(partial.finish(shape));
        }
        let slot_bytes = self.steps.slot_bytes as u64;
        let capacity = self.steps.batch_size as u64 * slot_bytes;
        let len = kept.len() as u64 * slot_bytes;
        let mut closed = self.ring.take(capacity, len).map_err(GpuError::Handoff)?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        for (j, &k) in kept.iter().enumerate() {
            let (from, to) = (k as u64 * slot_bytes, j as u64 * slot_bytes);
            encoder.copy_buffer_to_buffer(array.buffer(), from, closed.buffer(), to, slot_bytes);
        }
        closed.set_ready(self.ring.submit(encoder.finish()));
        closed.set_len(len);
        // The old buffer goes back to the ring; the copy out of it runs before any later use
        // (the same queue).
        partial.data = StepArray::Device(closed);
        Ok(partial.finish(shape))
    }
}

/// Consecutive slots of one step whose tensors lie one after the other in a submission's
/// buffer: one copy. (The stream places a submission's tensors in index order, so a step's
/// samples that went to the GPU together make one run.)
#[derive(Debug, PartialEq)]
struct Run {
    /// The step's serial number in the stream.
    serial: usize,
    /// The run's first slot of the step's array.
    first: usize,
    /// Its first tensor's first byte in the submission's buffer.
    at: u64,
    slots: u64,
}

/// The runs of `placed`: each tensor's step (by serial number), slot and first byte, in any
/// order.
fn runs(mut placed: Vec<(usize, usize, u64)>, slot_bytes: u64) -> Vec<Run> {
    placed.sort_by_key(|&(_, _, at)| at);
    let mut runs: Vec<Run> = Vec::new();
    for (serial, k, at) in placed {
        match runs.last_mut() {
            Some(run)
                if run.serial == serial
                    && run.first + run.slots as usize == k
                    && run.at + run.slots * slot_bytes == at =>
            {
                run.slots += 1
            }
            _ => runs.push(Run {
                serial,
                first: k,
                at,
                slots: 1,
            }),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(serial: usize, first: usize, at: u64, slots: u64) -> Run {
        Run {
            serial,
            first,
            at,
            slots,
        }
    }

    /// A submission's tensors, given in any order, copy as one run per stretch of a step's
    /// consecutive slots that lie one after the other; a gap in the slots (a failed sample), in
    /// the buffer, or a new step starts another.
    #[test]
    fn tensors_copy_in_runs_of_consecutive_slots_and_bytes() {
        let slot = 12;
        // Step 3's slots 5..8 at bytes 0, 12, 24; slot 9 after a failed slot 8; step 4's slot 0
        // right after it; step 4's slot 1 after a gap in the buffer; step 4's slot 2 lying
        // before slot 1.
        let placed = vec![
            (4, 1, 100),
            (3, 6, 12),
            (4, 0, 48),
            (3, 9, 36),
            (3, 5, 0),
            (3, 7, 24),
            (4, 2, 88),
        ];
        assert_eq!(
            runs(placed, slot),
            vec![
                run(3, 5, 0, 3),
                run(3, 9, 36, 1),
                run(4, 0, 48, 1),
                run(4, 2, 88, 1),
                run(4, 1, 100, 1),
            ]
        );
        // A whole step in index order, placed one after the other: one copy.
        let whole: Vec<_> = (0..64)
            .rev()
            .map(|k| (7, k, 1000 + k as u64 * slot))
            .collect();
        assert_eq!(runs(whole, slot), vec![run(7, 0, 1000, 64)]);
    }
}
