//! Reading a loader's samples ahead of decoding: the feeder reads each epoch's samples from
//! its [`Dataset`] (files in parallel, within a budget of bytes; shards as streams, through the
//! shuffle buffer) and cuts them into numbered raw batches, one pass over the dataset an epoch.

use super::dataset;
use super::order::Split;
use super::{lock, LoaderOptions};
use crate::error::{Error, Result};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A sample read, before decoding.
pub(super) struct RawSample {
    pub(super) index: u64,
    pub(super) label: i64,
    /// Its file, or its shard joined with its key: what its errors name.
    pub(super) name: PathBuf,
    pub(super) bytes: Result<Vec<u8>>,
}

/// A batch read, before decoding.
pub(super) struct RawBatch {
    /// Which of the feeder's passes over the dataset it belongs to (see [`super::epoch::Done`]).
    pub(super) pass: u64,
    /// That pass's epoch.
    pub(super) epoch: u64,
    /// The step in the epoch.
    pub(super) step: usize,
    /// Its place among all the batches the feeder sent, whatever their pass.
    pub(super) serial: usize,
    pub(super) samples: Vec<RawSample>,
    pub(super) read: Duration,
}

/// What the feeder sends: batches read, and where each pass over the dataset ends.
pub(super) enum Raw {
    Batch(RawBatch),
    /// Pass `pass` ended after `steps` batches.
    End {
        pass: u64,
        steps: usize,
    },
}

/// Where a loader's samples come from: how many a pass holds, and how a rank reads an epoch's
/// in order. A new source of samples is one impl (shards: `shards`).
pub(super) trait Dataset: Send + Sync {
    /// Samples in one pass over the whole dataset (every rank's together).
    fn samples(&self) -> usize;

    /// Of a pass, the samples that no rank reads when each reads `per_rank`: `None` where that
    /// changes from epoch to epoch.
    fn unread(&self, split: Split, per_rank: usize) -> Option<usize>;

    /// Reads the rank's samples of `epoch` into `batcher`, in order, as `feeder` is set to.
    fn read_epoch(&self, feeder: &Feeder, epoch: u64, batcher: &mut Batcher);
}

/// Samples known up front, each a file read on its own: a list of files, an `ImageFolder` tree.
pub(super) struct Indexed(pub Vec<dataset::Item>);

/// Reads epochs' samples in order and sends them as raw batches, each epoch a pass.
pub(super) struct Feeder {
    pub(super) dataset: Arc<dyn Dataset>,
    pub(super) options: LoaderOptions,
    /// The epoch of the first pass.
    pub(super) first: u64,
    /// How far each later pass's epoch lies after the one before; `None`: one pass only.
    pub(super) then: Option<u64>,
    /// A message each time the consumer takes up a pass after the first: the feeder reads at
    /// most one pass beyond the one being iterated, however small the passes.
    pub(super) passes_taken: Receiver<()>,
    /// Files read ahead of the batcher, at most (and at most [`READ_AHEAD_BYTES`]).
    pub(super) read_ahead: usize,
    /// The step the first pass starts at (a resumed epoch's; 0 otherwise).
    pub(super) first_step: usize,
}

impl Feeder {
    /// Pass after pass, until the last or until the stream is gone.
    pub(super) fn run(self, out: &SyncSender<Raw>) {
        let (mut pass, mut epoch, mut serial) = (0, self.first, 0);
        loop {
            // Gone: the workers were stopped.
            if pass >= 2 && self.passes_taken.recv().is_err() {
                return;
            }
            let first_step = if pass == 0 { self.first_step } else { 0 };
            let mut batcher = Batcher {
                out,
                size: self.options.batch_size,
                drop_last: self.options.split.drop_last,
                pending: Vec::new(),
                pass,
                epoch,
                step: first_step,
                serial,
                started: Instant::now(),
                skip: first_step * self.options.batch_size,
            };
            self.dataset.read_epoch(&self, epoch, &mut batcher);
            let (ControlFlow::Continue(next), Some(then)) = (batcher.finish(), self.then) else {
                return;
            };
            (pass, epoch, serial) = (pass + 1, epoch + then, next);
        }
    }
}

impl Dataset for Indexed {
    fn samples(&self) -> usize {
        self.0.len()
    }

    /// Indices are split as `DistributedSampler` splits them, each a rank's (the tail that
    /// `drop_last` drops is the sampler's own rule, not counted here).
    fn unread(&self, _split: Split, _per_rank: usize) -> Option<usize> {
        Some(0)
    }

    /// The rank's indices of the epoch, files read in parallel, continuously, ahead of the
    /// batcher.
    fn read_epoch(&self, feeder: &Feeder, epoch: u64, batcher: &mut Batcher) {
        let items = &self.0;
        let mut indices = feeder.options.split.indices(items.len(), epoch);
        // Spare samples past the end, to top batches up: the rank's first again.
        let spare: Vec<u64> = indices
            .iter()
            .copied()
            .cycle()
            .take(feeder.options.spare())
            .collect();
        indices.extend(spare);
        // A resumed epoch's samples already handed over are not read at all.
        let skip = std::mem::take(&mut batcher.skip).min(indices.len());
        indices.drain(..skip);
        let ahead = (feeder.read_ahead, READ_AHEAD_BYTES);
        read_files(items, &indices, ahead, |s| batcher.push(s));
    }
}

/// Reads the files of `items` at `indices` and hands them to `take` in order, until it says
/// `Break`. Reader `j` of [`READERS`] reads every `READERS`-th file from the `j`-th, at most
/// `ahead.0` files and about `ahead.1` bytes before `take` has had them, so that reading
/// keeps up with a stream that takes a submission's files at once. The readers are threads of
/// their own: on rayon's, they would wait behind the decoding tasks that the GPU's stream keeps
/// queued.
pub(super) fn read_files(
    items: &[dataset::Item],
    indices: &[u64],
    (ahead, bytes_ahead): (usize, u64),
    mut take: impl FnMut(RawSample) -> ControlFlow<()>,
) {
    let budget = ReadBudget {
        bound: bytes_ahead,
        ..ReadBudget::default()
    };
    let read = |(position, index): (usize, u64)| {
        let item = &items[index as usize];
        let bytes = std::fs::read(&item.path).map_err(|e| Error::from(e).in_file(&item.path));
        let len = bytes.as_ref().map_or(0, |b| b.len() as u64);
        budget.hold(position, len);
        let sample = RawSample {
            index,
            label: item.label,
            name: item.path.clone(),
            bytes,
        };
        (sample, len)
    };
    let read = &read;
    // The budget bounds the bytes read ahead; this bounds the files each reader's channel holds
    // (allocated up front), whatever the batch size.
    let room = ahead.div_ceil(READERS).clamp(1, MAX_READ_ROOM);
    std::thread::scope(|scope| {
        let readers: Vec<Receiver<(RawSample, u64)>> = (0..READERS)
            .map(|j| {
                let (sender, receiver) = sync_channel(room);
                let mine = indices.iter().copied().enumerate().skip(j).step_by(READERS);
                scope.spawn(move || {
                    for sample in mine.map(read) {
                        // Gone: `take` stopped.
                        if sender.send(sample).is_err() {
                            return;
                        }
                    }
                });
                receiver
            })
            .collect();
        for position in 0..indices.len() {
            let Ok((sample, len)) = readers[position % READERS].recv() else {
                break;
            };
            budget.taken(position, len);
            if take(sample).is_break() {
                break;
            }
        }
        // Readers waiting for room go on (and stop at their next send: the receivers go).
        budget.stop();
    });
}

/// Threads reading a loader's files.
pub(super) const READERS: usize = 4;

/// Files each reader holds ready, at most.
pub(super) const MAX_READ_ROOM: usize = 1024;

/// Batches a loader makes ahead of its consumer (`prefetch`), at most.
pub const MAX_PREFETCH: usize = 64;

/// Encoded bytes read ahead of the batcher, at most (a file larger than it is read alone).
pub(super) const READ_AHEAD_BYTES: u64 = 64 << 20;

/// The bytes read and not yet taken, and the place of the file to be taken next: a reader
/// holding a later file waits while the bytes pass `bound`; the next file always passes, so
/// the files taken in order are never held up by later ones.
#[derive(Default)]
pub(super) struct ReadBudget {
    pub(super) bound: u64,
    pub(super) state: Mutex<Budgeted>,
    pub(super) freed: std::sync::Condvar,
}

#[derive(Default)]
pub(super) struct Budgeted {
    pub(super) held: u64,
    pub(super) next: usize,
    pub(super) stopped: bool,
}

impl ReadBudget {
    /// Counts `len` bytes of the file at `position` as read, once there is room for them.
    pub(super) fn hold(&self, position: usize, len: u64) {
        let mut state = lock(&self.state);
        while !state.stopped
            && position != state.next
            && state.held > 0
            && state.held + len > self.bound
        {
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.held += len;
    }

    /// The file at `position`, of `len` bytes, was taken.
    pub(super) fn taken(&self, position: usize, len: u64) {
        let mut state = lock(&self.state);
        state.held -= len.min(state.held);
        state.next = position + 1;
        self.freed.notify_all();
    }

    pub(super) fn stop(&self) {
        lock(&self.state).stopped = true;
        self.freed.notify_all();
    }
}

/// webdataset's `shuffle(n)`: samples held up to `capacity`; once full, each new one sends a
/// random held one out.
pub(super) struct ShuffleBuffer {
    pub(super) held: Vec<RawSample>,
    pub(super) capacity: usize,
    pub(super) stream: crate::plan::random::Stream,
}

impl ShuffleBuffer {
    pub(super) fn push(&mut self, sample: RawSample) -> Option<RawSample> {
        if self.capacity == 0 {
            return Some(sample);
        }
        self.held.push(sample);
        (self.held.len() > self.capacity)
            .then(|| self.pop())
            .flatten()
    }

    pub(super) fn pop(&mut self) -> Option<RawSample> {
        if self.held.is_empty() {
            return None;
        }
        let i = self.stream.below(self.held.len() as u64) as usize;
        Some(self.held.swap_remove(i))
    }
}

/// Cuts a pass's stream of samples into numbered batches.
pub(super) struct Batcher<'a> {
    pub(super) out: &'a SyncSender<Raw>,
    pub(super) size: usize,
    pub(super) drop_last: bool,
    pub(super) pending: Vec<RawSample>,
    pub(super) pass: u64,
    pub(super) epoch: u64,
    pub(super) step: usize,
    pub(super) serial: usize,
    pub(super) started: Instant,
    /// Samples of the pass to drop before the first batch: those of the steps before the one
    /// a resumed epoch starts at (read, to replay the order, but not sent to decoding).
    pub(super) skip: usize,
}

impl Batcher<'_> {
    /// Adds a sample; `Break` once the consumer is gone.
    pub(super) fn push(&mut self, sample: RawSample) -> ControlFlow<()> {
        if self.skip > 0 {
            self.skip -= 1;
            return ControlFlow::Continue(());
        }
        self.pending.push(sample);
        if self.pending.len() < self.size {
            return ControlFlow::Continue(());
        }
        self.send()
    }

    pub(super) fn send(&mut self) -> ControlFlow<()> {
        let batch = RawBatch {
            pass: self.pass,
            epoch: self.epoch,
            step: self.step,
            serial: self.serial,
            samples: std::mem::take(&mut self.pending),
            read: self.started.elapsed(),
        };
        self.step += 1;
        self.serial += 1;
        self.started = Instant::now();
        self.sent(Raw::Batch(batch))
    }

    pub(super) fn sent(&self, raw: Raw) -> ControlFlow<()> {
        match self.out.send(raw) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    }

    /// Sends the short last batch (unless dropped) and the pass's end; the serial number of
    /// the next pass's first batch, or `Break` once the consumer is gone.
    pub(super) fn finish(mut self) -> ControlFlow<(), usize> {
        if !self.pending.is_empty() && !self.drop_last {
            self.send()?;
        }
        let (pass, steps) = (self.pass, self.step);
        self.sent(Raw::End { pass, steps })?;
        ControlFlow::Continue(self.serial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder of this test process's own.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gpuprep-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        dir
    }

    /// Files of 1 to 40 bytes, each its own place repeated.
    fn numbered_files(dir: &std::path::Path, n: usize) -> Vec<dataset::Item> {
        let paths: Vec<PathBuf> = (0..n)
            .map(|k| {
                let path = dir.join(format!("{k}.bin"));
                std::fs::write(&path, vec![k as u8; 1 + k % 40]).expect("written");
                path
            })
            .collect();
        dataset::files(&paths)
    }

    #[test]
    fn files_come_in_order_however_little_is_read_ahead() {
        let dir = scratch("read-order");
        let items = numbered_files(&dir, 50);
        let order: Vec<u64> = (0..50).rev().chain([7, 7]).collect();
        // One file ahead and fewer bytes than most files: every file must still come.
        for ahead in [(1, 3), (2, 1), (9, 100), (64, 1 << 20)] {
            let mut got = Vec::new();
            read_files(&items, &order, ahead, |sample| {
                let bytes = sample.bytes.expect("readable");
                got.push((sample.index, bytes));
                ControlFlow::Continue(())
            });
            let want: Vec<(u64, Vec<u8>)> = order
                .iter()
                .map(|&k| (k, vec![k as u8; 1 + k as usize % 40]))
                .collect();
            assert_eq!(got, want, "read ahead {ahead:?}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn reading_stops_when_told_and_names_a_missing_file() {
        let dir = scratch("read-stop");
        let mut items = numbered_files(&dir, 30);
        items[3].path = dir.join("missing.bin");
        let order: Vec<u64> = (0..30).collect();
        let mut got = Vec::new();
        read_files(&items, &order, (4, 8), |sample| {
            got.push(sample);
            if got.len() == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(got.len(), 5);
        let error = got[3]
            .bytes
            .as_ref()
            .expect_err("the missing file fails")
            .to_string();
        assert!(error.contains("missing.bin"), "{error}");
        assert!(got[4].bytes.is_ok());
        let _ = std::fs::remove_dir_all(dir);
    }
}
