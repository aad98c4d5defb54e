//! Steps' batches made from their samples. On the CPU backend a worker thread makes a whole
//! batch at once ([`prepare`]). On the GPU one stream runs the whole epoch (and on into the
//! next; see [`super::stream`]): each step's batch is a [`Partial`] while its images land (in
//! any order), finished once all have.

use super::arrays::BatchArray;
use super::device_arrays::DeviceArray;
use super::{Batch, RawBatch, StepStats};
use crate::error::{Error, GpuError, Result};
use crate::plan::{Params, Samples};
use crate::tensor::close_up;
use crate::{Backend, Limits, Transform};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a batch keeps of each sample that was read while its image is made.
pub(super) struct Meta {
    pub index: u64,
    label: i64,
    name: PathBuf,
}

/// A raw batch's samples: the metadata and bytes of those that were read, and the others.
#[derive(Default)]
pub(super) struct Read {
    pub metas: Vec<Meta>,
    pub images: Vec<Vec<u8>>,
    pub failed: Vec<(u64, Error)>,
}

pub(super) fn split(raw: RawBatch) -> Read {
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
pub(super) enum StepArray {
    /// A host array, each tensor read back into its slot.
    Host(BatchArray),
    /// A buffer on the device, each tensor copied into its slot there.
    Device(DeviceArray),
}

/// A step's batch on the GPU while its images are being made.
pub(super) struct Partial {
    pub pass: u64,
    pub step: usize,
    read: Duration,
    started: Instant,
    metas: Vec<Meta>,
    failed: Vec<(u64, Error)>,
    /// Slot `k` holds sample `metas[k]`'s tensor once it has landed.
    pub data: StepArray,
    outcomes: Vec<Option<Result<Params>>>,
    /// Samples still to land.
    left: usize,
}

impl Partial {
    /// Step `step` of pass `pass` (read in `read`, opened at `started`), its samples `metas`
    /// to land in `data`, and those that failed to be read.
    pub fn new(
        (pass, step, read, started): (u64, usize, Duration, Instant),
        data: StepArray,
        metas: Vec<Meta>,
        failed: Vec<(u64, Error)>,
    ) -> Self {
        Self {
            pass,
            step,
            read,
            started,
            data,
            outcomes: (0..metas.len()).map(|_| None).collect(),
            left: metas.len(),
            metas,
            failed,
        }
    }

    /// Whether every sample has landed.
    pub fn is_complete(&self) -> bool {
        self.left == 0
    }

    /// Samples that were read.
    pub fn samples(&self) -> usize {
        self.outcomes.len()
    }

    /// The slots of the samples that were made.
    pub fn kept(&self) -> Vec<usize> {
        (0..self.outcomes.len())
            .filter(|&k| matches!(self.outcomes[k], Some(Ok(_))))
            .collect()
    }

    /// Every sample's outcome, now that all have landed.
    fn outcomes(&mut self) -> Vec<Result<Params>> {
        let never = || Err(GpuError::Internal("an image of the batch never landed").into());
        let outcomes = std::mem::take(&mut self.outcomes).into_iter();
        outcomes.map(|o| o.unwrap_or_else(never)).collect()
    }

    /// The batch, its tensors closed up (the failed samples' slots removed).
    pub fn finish(mut self, shape: [usize; 3]) -> Batch {
        let outcomes = self.outcomes();
        let timing = (self.step, self.read, self.started);
        match self.data {
            StepArray::Host(mut data) => {
                close_up(data.data_mut(), shape, &outcomes);
                batch_of(timing, &self.metas, (shape, data, outcomes), self.failed)
            }
            StepArray::Device(array) => {
                let empty = BatchArray::own(crate::TensorData::zeroed(crate::DType::U8, 0));
                let mut batch =
                    batch_of(timing, &self.metas, (shape, empty, outcomes), self.failed);
                batch.device = Some(array);
                batch
            }
        }
    }

    /// Records `outcome` for slot `k`; whether that was the last one.
    pub fn put(&mut self, k: usize, outcome: Result<Params>) -> bool {
        if let Some(place @ None) = self.outcomes.get_mut(k) {
            *place = Some(outcome);
            self.left -= 1;
        }
        self.left == 0
    }
}
