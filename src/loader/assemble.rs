//! Steps' batches made from their samples. On the CPU backend a worker thread makes a whole
//! batch at once. On the GPU one stream runs the whole epoch, so that decoding runs ahead across
//! batch boundaries and the GPU never waits for a batch to start: each step's batch is put
//! together in place as its images land (in any order) and handed over once complete.

use super::arrays::{BatchArray, Ring};
use super::{Batch, RawBatch, StepStats};
use crate::error::{Error, GpuError, Result};
use crate::gpu::{Arriving, StreamOptions};
use crate::plan::{Params, Sample, Samples};
use crate::tensor::close_up;
use crate::{Backend, GpuBackend, Limits, Transform};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
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

/// A whole raw batch through `backend` at once, stacked as it is made.
pub(super) fn prepare(
    backend: &Backend,
    transform: &Transform,
    limits: &Limits,
    raw: RawBatch,
) -> Result<Batch> {
    let started = Instant::now();
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

/// A step's batch on the GPU while its images are being made.
struct Partial {
    step: usize,
    read: Duration,
    started: Instant,
    metas: Vec<Meta>,
    failed: Vec<(u64, Error)>,
    /// Slot `k` holds sample `metas[k]`'s tensor once it has landed.
    data: BatchArray,
    outcomes: Vec<Option<Result<Params>>>,
    /// Samples still to land.
    left: usize,
}

impl Partial {
    fn finish(mut self, shape: [usize; 3]) -> Batch {
        let outcomes = self.outcomes.into_iter();
        let never = || Err(GpuError::Internal("an image of the batch never landed").into());
        let outcomes: Vec<_> = outcomes.map(|o| o.unwrap_or_else(never)).collect();
        close_up(self.data.data_mut(), shape, &outcomes);
        let timing = (self.step, self.read, self.started);
        batch_of(
            timing,
            &self.metas,
            (shape, self.data, outcomes),
            self.failed,
        )
    }
}

/// One epoch on the GPU: the raw batches `raw` gives, as one stream, each step's batch sent to
/// `done` once all its images have landed; ends when `raw` does or `done`'s receiver is gone.
/// Sample `k` of step `s` is image `s · batch_size + k` of the stream; each step lands in an
/// array of `arrays`.
pub(super) fn stream_epoch(
    gpu: &GpuBackend,
    arrays: &Arc<Ring>,
    transform: &Transform,
    limits: &Limits,
    batch_size: usize,
    raw: &Receiver<RawBatch>,
    done: &SyncSender<(usize, Result<Batch>)>,
) {
    let Some(shape) = transform.fixed_output_shape() else {
        let e = Error::Options("a loader's transform needs one output size".into());
        let _ = done.send((0, Err(e)));
        return;
    };
    let elements: usize = shape.iter().product();
    let slot_bytes = elements * transform.dtype.size();
    let partials: Mutex<BTreeMap<usize, Partial>> = Mutex::default();
    let stopped = AtomicBool::new(false);
    let send = |batch: Partial| {
        let step = batch.step;
        if done.send((step, Ok(batch.finish(shape)))).is_err() {
            stopped.store(true, Ordering::Relaxed);
        }
    };
    let mut arriving: std::vec::IntoIter<Arriving<'static>> = Vec::new().into_iter();
    let next = || loop {
        if stopped.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(image) = arriving.next() {
            return Some(image);
        }
        let raw = raw.recv().ok()?;
        let started = Instant::now();
        let (step, read) = (raw.step, raw.read);
        let Read {
            metas,
            images,
            failed,
        } = split(raw);
        let base = step * batch_size;
        arriving = images
            .into_iter()
            .zip(&metas)
            .enumerate()
            .map(|(k, (bytes, meta))| Arriving {
                index: base + k,
                sample: Sample::Index(meta.index),
                bytes: bytes.into(),
            })
            .collect::<Vec<_>>()
            .into_iter();
        let partial = Partial {
            step,
            read,
            started,
            data: arrays.take(
                transform.dtype,
                batch_size * elements,
                metas.len() * elements,
            ),
            outcomes: (0..metas.len()).map(|_| None).collect(),
            left: metas.len(),
            metas,
            failed,
        };
        if partial.left == 0 {
            send(partial);
        } else {
            lock(&partials).insert(step, partial);
        }
    };
    let read = |bytes: &[u8], placed: Vec<crate::gpu::Placed>| {
        let mut partials = lock(&partials);
        let mut slots: HashMap<usize, &mut [u8]> = HashMap::new();
        for (step, partial) in partials.iter_mut() {
            let chunks = partial.data.bytes_mut().chunks_mut(slot_bytes.max(1));
            slots.extend(chunks.enumerate().map(|(k, c)| (step * batch_size + k, c)));
        }
        let copies = placed
            .into_iter()
            .map(|placed| {
                let slot = slots.remove(&placed.0);
                (placed, slot)
            })
            .collect();
        crate::gpu::copy_into_slots(bytes, copies, shape)
    };
    let put = |index: usize, outcome: Result<Params>| {
        let (step, k) = (index / batch_size, index % batch_size);
        let mut open = lock(&partials);
        let Some(partial) = open.get_mut(&step) else {
            return;
        };
        if let Some(place @ None) = partial.outcomes.get_mut(k) {
            *place = Some(outcome);
            partial.left -= 1;
        }
        if partial.left == 0 {
            if let Some(partial) = open.remove(&step) {
                drop(open);
                send(partial);
            }
        }
    };
    let options = StreamOptions {
        transform,
        limits,
        batching: gpu.batching,
        samples: Samples::Positions,
    };
    let (device, queue) = (&gpu.gpu.device, &gpu.gpu.queue);
    gpu.pipeline
        .preprocess_arriving(device, queue, next, &options, read, put);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
