//! Steps' batches made from their samples. On the CPU backend a worker thread makes a whole
//! batch at once. On the GPU one stream runs the whole epoch (and on into the next), so that
//! decoding runs ahead across batch boundaries and the GPU never waits for a batch to start:
//! each step's batch is put together in place as its images land (in any order) and handed
//! over once complete.

use super::arrays::{BatchArray, Ring};
use super::device_arrays::{DeviceArray, DeviceRing};
use super::{Batch, Done, Raw, RawBatch, StepStats, StreamWaits, WaitedFor};
use crate::error::{Error, GpuError, Result};
use crate::gpu::{Arrival, Arriving, DeviceBatch, StreamOptions};
use crate::plan::{Params, Sample, Samples};
use crate::tensor::{close_up, unstackable};
use crate::{Backend, GpuBackend, Limits, Transform};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a batch keeps of each sample that was read while its image is made.
struct Meta {
    index: u64,
    label: i64,
    name: PathBuf,
}

/// A raw batch's samples: the metadata and bytes of those that were read, and the others.
#[derive(Default)]
struct Read {
    metas: Vec<Meta>,
    images: Vec<Vec<u8>>,
    failed: Vec<(u64, Error)>,
}

fn split(raw: RawBatch) -> Read {
    let Read {
        mut metas,
        mut images,
        mut failed,
    } = Read::default();
    for sample in raw.samples {
        match sample.bytes {
            Ok(bytes) => {
                metas.push(Meta {
                    index: sample.index,
                    label: sample.label,
                    name: sample.name,
                });
                images.push(bytes);
            }
            Err(e) => failed.push((sample.index, e)),
        }
    }
    Read {
        metas,
        images,
        failed,
    }
}

/// Step `step`'s batch from its samples' outcomes (in `metas`' order) and their tensors of
/// `shape`, stacked in `data`.
fn batch_of(
    (step, read, started): (usize, Duration, Instant),
    metas: &[Meta],
    (shape, data, outcomes): ([usize; 3], BatchArray, Vec<Result<Params>>),
    failed: Vec<(u64, Error)>,
) -> Batch {
    let mut batch = Batch {
        shape: [0; 4],
        data,
        device: None,
        labels: Vec::new(),
        indices: Vec::new(),
        params: Vec::new(),
        failed,
        stats: StepStats {
            step,
            read,
            ..StepStats::default()
        },
    };
    for (meta, outcome) in metas.iter().zip(outcomes) {
        match outcome {
            Ok(params) => {
                batch.labels.push(meta.label);
                batch.indices.push(meta.index);
                batch.params.push(params);
            }
            Err(e) => batch.failed.push((meta.index, e.in_file(&meta.name))),
        }
    }
    let [a, b, c] = shape;
    batch.shape = [batch.indices.len(), a, b, c];
    batch.stats.prepared = started.elapsed();
    batch
}

/// A whole raw batch through `backend` at once (its samples drawn for its epoch), stacked as
/// it is made.
pub(super) fn prepare(
    backend: &Backend,
    transform: &Transform,
    limits: &Limits,
    raw: RawBatch,
) -> Result<Batch> {
    let started = Instant::now();
    let transform = &Transform {
        epoch: raw.epoch,
        ..*transform
    };
    let (step, read) = (raw.step, raw.read);
    let Read {
        metas,
        images,
        failed,
    } = split(raw);
    let images: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
    let indices: Vec<u64> = metas.iter().map(|m| m.index).collect();
    let stacked =
        backend.preprocess_stacked(&images, transform, Samples::Indices(&indices), limits)?;
    let stacked = (
        stacked.shape,
        BatchArray::own(stacked.data),
        stacked.outcomes,
    );
    Ok(batch_of((step, read, started), &metas, stacked, failed))
}

/// Where a step's batch lands.
enum Landing {
    /// A host array, each tensor read back into its slot.
    Host(BatchArray),
    /// A buffer on the device, each tensor copied into its slot there.
    Device(DeviceArray),
}

/// A step's batch on the GPU while its images are being made.
struct Partial {
    pass: u64,
    step: usize,
    read: Duration,
    started: Instant,
    metas: Vec<Meta>,
    failed: Vec<(u64, Error)>,
    /// Slot `k` holds sample `metas[k]`'s tensor once it has landed.
    data: Landing,
    outcomes: Vec<Option<Result<Params>>>,
    /// Samples still to land.
    left: usize,
}

impl Partial {
    /// Every sample's outcome, now that all have landed.
    fn outcomes(&mut self) -> Vec<Result<Params>> {
        let never = || Err(GpuError::Internal("an image of the batch never landed").into());
        let outcomes = std::mem::take(&mut self.outcomes).into_iter();
        outcomes.map(|o| o.unwrap_or_else(never)).collect()
    }

    /// The batch, its tensors closed up (the failed samples' slots removed).
    fn finish(mut self, shape: [usize; 3]) -> Batch {
        let outcomes = self.outcomes();
        let timing = (self.step, self.read, self.started);
        match self.data {
            Landing::Host(mut data) => {
                close_up(data.data_mut(), shape, &outcomes);
                batch_of(timing, &self.metas, (shape, data, outcomes), self.failed)
            }
            Landing::Device(array) => {
                let empty = BatchArray::own(crate::TensorData::zeroed(crate::DType::U8, 0));
                let mut batch =
                    batch_of(timing, &self.metas, (shape, empty, outcomes), self.failed);
                batch.device = Some(array);
                batch
            }
        }
    }

    /// Records `outcome` for slot `k`; whether that was the last one.
    fn put(&mut self, k: usize, outcome: Result<Params>) -> bool {
        if let Some(place @ None) = self.outcomes.get_mut(k) {
            *place = Some(outcome);
            self.left -= 1;
        }
        self.left == 0
    }
}

/// A loader's passes on the GPU, as one stream that runs on from epoch to epoch. Sample `k` of
/// the batch of serial number `s` (its place among all the passes' batches) is image `s ·
/// batch_size + k` of the stream. Each step lands in an array: read back into one of `host`,
/// or, with `on_device`, copied into a buffer of that ring on the device. What the stream's
/// thread waits for goes to `waits`.
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
        let Self {
            gpu,
            host,
            on_device,
            transform,
            limits,
            batch_size,
            waits,
        } = *self;
        let Some(shape) = transform.fixed_output_shape() else {
            let e = Error::Options("a loader's transform needs one output size".into());
            let batch = Err(e);
            let _ = done.send(Done::Batch {
                pass: 0,
                step: 0,
                batch,
            });
            return;
        };
        let elements: usize = shape.iter().product();
        let slot_bytes = elements * transform.dtype.size();
        // The steps being made, by serial number.
        let partials: Mutex<BTreeMap<usize, Partial>> = Mutex::default();
        let stopped = AtomicBool::new(false);
        let hand_over = |message: Done| {
            let sent = waits.timing(WaitedFor::Consumer, || done.send(message).is_ok());
            if !sent {
                stopped.store(true, Ordering::Relaxed);
            }
        };
        let send = |(pass, step): (u64, usize), batch: Result<Batch>| {
            hand_over(Done::Batch { pass, step, batch });
        };
        let take = |samples: usize| -> Result<Landing> {
            let Some(ring) = on_device else {
                let (capacity, len) = (batch_size * elements, samples * elements);
                return Ok(Landing::Host(host.take(transform.dtype, capacity, len)));
            };
            let (capacity, len) = (batch_size * slot_bytes, samples * slot_bytes);
            waits
                .timing(WaitedFor::Buffers, || {
                    ring.take(capacity as u64, len as u64)
                })
                .map(Landing::Device)
                .map_err(|e| GpuError::HandOff(e).into())
        };
        let mut arriving: std::vec::IntoIter<Arriving<'static>> = Vec::new().into_iter();
        // The stream's source: the current raw batch's images, then the next raw batch's, waited
        // for only when the stream asks to wait.
        let next = |wait: bool| loop {
            if stopped.load(Ordering::Relaxed) {
                return Arrival::End;
            }
            if let Some(image) = arriving.next() {
                return Arrival::Image(image);
            }
            let received = if wait {
                waits.timing(WaitedFor::Samples, || raw.recv().map_err(|_| true))
            } else {
                raw.try_recv().map_err(|e| e == TryRecvError::Disconnected)
            };
            let raw = match received {
                Ok(Raw::Batch(raw)) => raw,
                Ok(Raw::End { pass, steps }) => {
                    hand_over(Done::End { pass, steps });
                    continue;
                }
                Err(true) => return Arrival::End,
                Err(false) => return Arrival::NotYet,
            };
            let started = Instant::now();
            let (pass, epoch, step, serial, read) =
                (raw.pass, raw.epoch, raw.step, raw.serial, raw.read);
            let Read {
                metas,
                images,
                failed,
            } = split(raw);
            let data = match take(metas.len()) {
                Ok(data) => data,
                Err(e) => {
                    send((pass, step), Err(e));
                    continue;
                }
            };
            let base = serial * batch_size;
            arriving = images
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
            let partial = Partial {
                pass,
                step,
                read,
                started,
                data,
                outcomes: (0..metas.len()).map(|_| None).collect(),
                left: metas.len(),
                metas,
                failed,
            };
            if partial.left == 0 {
                send((pass, step), Ok(partial.finish(shape)));
            } else {
                lock(&partials).insert(serial, partial);
            }
        };
        // Outcomes of images, by stream index; the steps they completed, taken out.
        let put_all = |outcomes: Vec<(usize, Result<Params>)>| -> Vec<Partial> {
            let mut open = lock(&partials);
            let mut complete = Vec::new();
            for (index, outcome) in outcomes {
                let (serial, k) = (index / batch_size, index % batch_size);
                if open.get_mut(&serial).is_some_and(|p| p.put(k, outcome)) {
                    complete.extend(open.remove(&serial));
                }
            }
            complete
        };
        let options = StreamOptions {
            transform,
            limits,
            batching: gpu.batching,
            samples: Samples::Positions,
        };
        let (device, queue) = (&gpu.gpu.device, &gpu.gpu.queue);
        if let Some(ring) = on_device {
            let copier = DeviceCopier {
                device,
                ring,
                slot_bytes: slot_bytes as u64,
                batch_size,
                shape,
            };
            // A submission's copies go to the GPU together, after its last batch.
            let mut copies = Copies::default();
            let consume = |batch: DeviceBatch<'_>| {
                waits.landed(batch.stats);
                let last = batch.last_of_submission;
                let closed = waits.landing(|| {
                    copier.record(batch, &partials, &mut copies);
                    if !last {
                        return Vec::new();
                    }
                    let (outcomes, ready) = copier.submit(&mut copies);
                    let complete = put_all(outcomes).into_iter();
                    complete
                        .map(|partial| {
                            let key = (partial.pass, partial.step);
                            (key, copier.close_up(partial, ready))
                        })
                        .collect()
                });
                if last {
                    waits.submitted();
                }
                for (key, batch) in closed {
                    send(key, batch);
                }
            };
            gpu.pipeline
                .preprocess_arriving_on_device(device, queue, next, &options, consume);
            return;
        }
        let read = |bytes: &[u8], placed: Vec<crate::gpu::Placed>| {
            waits.landing(|| {
                let mut partials = lock(&partials);
                let mut slots: HashMap<usize, &mut [u8]> = HashMap::new();
                for (serial, partial) in partials.iter_mut() {
                    if let Landing::Host(data) = &mut partial.data {
                        let chunks = data.bytes_mut().chunks_mut(slot_bytes.max(1));
                        let first = serial * batch_size;
                        slots.extend(chunks.enumerate().map(|(k, c)| (first + k, c)));
                    }
                }
                let copies = placed
                    .into_iter()
                    .map(|placed| {
                        let slot = slots.remove(&placed.0);
                        (placed, slot)
                    })
                    .collect();
                crate::gpu::copy_into_slots(bytes, copies, shape)
            })
        };
        let put = |index: usize, outcome: Result<Params>| {
            for partial in put_all(vec![(index, outcome)]) {
                send((partial.pass, partial.step), Ok(partial.finish(shape)));
            }
        };
        let landed = |batches: &[crate::gpu::BatchStats]| {
            batches.iter().for_each(|stats| waits.landed(stats));
            waits.submitted();
        };
        gpu.pipeline
            .preprocess_arriving(device, queue, next, &options, read, put, landed);
    }
}

/// Copies landed tensors into their steps' device buffers, GPU to GPU, on the stream's
/// thread (so the copies go in order with the stream's own submissions).
struct DeviceCopier<'a> {
    device: &'a wgpu::Device,
    ring: &'a Arc<DeviceRing>,
    slot_bytes: u64,
    batch_size: usize,
    shape: [usize; 3],
}

/// The copies of one submission's batches, recorded batch by batch, and its images' outcomes.
#[derive(Default)]
struct Copies {
    encoder: Option<wgpu::CommandEncoder>,
    outcomes: Vec<(usize, Result<Params>)>,
}

impl DeviceCopier<'_> {
    /// Records the copy of each of `batch`'s tensors into its slot, and every image's outcome
    /// (the failed ones' included), in `copies`: a copy a [`Run`].
    fn record(
        &self,
        batch: DeviceBatch<'_>,
        partials: &Mutex<BTreeMap<usize, Partial>>,
        copies: &mut Copies,
    ) {
        let outcomes = &mut copies.outcomes;
        outcomes.extend(batch.failed.into_iter().map(|(i, e)| (i, Err(e))));
        let open = lock(partials);
        let mut placed = Vec::with_capacity(batch.tensors.len());
        for tensor in batch.tensors {
            let (serial, k) = (
                tensor.index / self.batch_size,
                tensor.index % self.batch_size,
            );
            if !matches!(open.get(&serial).map(|p| &p.data), Some(Landing::Device(_))) {
                continue;
            }
            if batch.buffer.is_none() || tensor.shape != self.shape {
                let e = unstackable(&tensor.shape, &self.shape);
                outcomes.push((tensor.index, Err(e)));
                continue;
            }
            outcomes.push((tensor.index, Ok(tensor.params)));
            placed.push((serial, k, tensor.offset));
        }
        let (Some(from), false) = (batch.buffer, placed.is_empty()) else {
            return;
        };
        let encoder = copies
            .encoder
            .get_or_insert_with(|| self.device.create_command_encoder(&Default::default()));
        for run in runs(placed, self.slot_bytes) {
            if let Some(Landing::Device(array)) = open.get(&run.serial).map(|p| &p.data) {
                let (to, bytes) = (
                    run.first as u64 * self.slot_bytes,
                    run.slots * self.slot_bytes,
                );
                encoder.copy_buffer_to_buffer(from, run.at, array.buffer(), to, bytes);
            }
        }
    }

    /// Submits the copies recorded in `copies`; returns the outcomes and the timeline value
    /// the copies signal (0 without CUDA), leaving `copies` empty.
    fn submit(&self, copies: &mut Copies) -> (Vec<(usize, Result<Params>)>, u64) {
        let outcomes = std::mem::take(&mut copies.outcomes);
        let encoder = copies
            .encoder
            .take()
            .unwrap_or_else(|| self.device.create_command_encoder(&Default::default()));
        (outcomes, self.ring.submit(encoder.finish()))
    }

    /// `partial`'s batch, its copies signalling `ready`: where some samples failed, the
    /// others are copied up into a buffer of their own, in order.
    fn close_up(&self, mut partial: Partial, ready: u64) -> Result<Batch> {
        let Landing::Device(array) = &mut partial.data else {
            return Err(GpuError::Internal("a device batch without its buffer").into());
        };
        array.set_ready(ready);
        let kept: Vec<usize> = (0..partial.outcomes.len())
            .filter(|&k| matches!(partial.outcomes[k], Some(Ok(_))))
            .collect();
        if kept.len() == partial.outcomes.len() {
            return Ok(partial.finish(self.shape));
        }
        let capacity = self.batch_size as u64 * self.slot_bytes;
        let len = kept.len() as u64 * self.slot_bytes;
        let mut closed = self.ring.take(capacity, len).map_err(GpuError::HandOff)?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        for (j, &k) in kept.iter().enumerate() {
            let (from, to) = (k as u64 * self.slot_bytes, j as u64 * self.slot_bytes);
            encoder.copy_buffer_to_buffer(
                array.buffer(),
                from,
                closed.buffer(),
                to,
                self.slot_bytes,
            );
        }
        closed.set_ready(self.ring.submit(encoder.finish()));
        closed.set_len(len);
        // The old buffer goes back to the ring; the copy out of it runs before any later use
        // (the same queue).
        partial.data = Landing::Device(closed);
        Ok(partial.finish(self.shape))
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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
