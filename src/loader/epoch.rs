//! One epoch's batches as its consumer takes them: in order, from the workers' messages (which
//! may come early, or belong to the next pass of a stream running on), topped up where asked,
//! with each step's wait timed; and the end of an epoch, where a GPU stream goes back to the
//! loader to run on into the next.

use super::refill::Refill;
use super::stats::{EpochStats, StreamCounts, StreamWaits};
use super::{lock, Batch, LoaderOptions, Parked};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the workers hand the consumer. The feeder reads the dataset in passes: pass 0 is the
/// epoch asked for; on the GPU it reads on into the epoch expected next (pass 1), and so on,
/// so that one stream runs from epoch to epoch without draining the GPU in between.
#[allow(
    clippy::large_enum_variant,
    reason = "a batch moves by value, as it always has; an end is one message a pass"
)]
pub(super) enum Done {
    /// Step `step` of pass `pass` (or why the step failed as a whole).
    Batch {
        pass: u64,
        step: usize,
        batch: Result<Batch>,
    },
    /// Pass `pass` had `steps` steps.
    End { pass: u64, steps: usize },
    /// A worker failed as a whole (it panicked): the epoch ends with this error.
    Failed(Error),
}

/// `work`'s result, or the error a panic in it stands for (a worker's panic ends its epoch
/// with an error, not in silence).
pub(super) fn caught<T>(work: impl FnOnce() -> T) -> std::result::Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .map_err(|panic| Error::from_panic(&*panic))
}

/// One epoch's batches, in order (an iterator). Dropping it before its end stops the work;
/// on the GPU, once iterated to its end, its stream goes back to the loader and runs on into
/// the epoch expected next.
pub struct Epoch {
    /// The workers; `None` once the epoch is over.
    running: Option<Running>,
    /// Where the running stream goes at the epoch's end (on the GPU).
    park: Option<Arc<Mutex<Parked>>>,
    next: usize,
    /// The step it started at (past 0 where resumed): its first wait is not a warning.
    first_step: usize,
    /// Steps made so far (more than handed over where batches are topped up).
    made: usize,
    /// With [`LoaderOptions::refill`], the batches to hand over and the batch being topped up.
    refill: Option<(usize, Refill)>,
    /// When the batch of step `next` was first asked for.
    asked: Option<Instant>,
    handed: Instant,
    started: Instant,
    images: usize,
    waited: Duration,
    wait_warning: f64,
    stream: Arc<StreamWaits>,
    /// The stream's counts when the epoch began: when the epoch before it ended, where a stream
    /// ran on from it (its work between the two counts for this one).
    stream_at_start: StreamCounts,
}

/// The workers of a loader's passes over its dataset, and what they sent ahead of its turn.
pub(super) struct Running {
    /// The pass the consumer takes batches of now, and its epoch.
    pub(super) pass: u64,
    pub(super) epoch: u64,
    /// How far each pass's epoch lies after the one before; `None`: one pass only.
    pub(super) then: Option<u64>,
    /// Tells the feeder that the consumer took up the next pass.
    pub(super) pass_taken: std::sync::mpsc::Sender<()>,
    pub(super) done: Receiver<Done>,
    /// Batches received before their turn, by pass and step.
    pub(super) early: BTreeMap<(u64, usize), Result<Batch>>,
    /// The passes whose end was received, with their steps.
    pub(super) ends: BTreeMap<u64, usize>,
    /// The thread of the GPU stream, joined when the workers are stopped.
    pub(super) stream_thread: Option<std::thread::JoinHandle<()>>,
    pub(super) waits: Arc<StreamWaits>,
    /// The stream's counts when its last epoch ended (zero before the first).
    pub(super) counted: StreamCounts,
    /// A worker failed: the workers end with this pass.
    pub(super) broken: bool,
}

/// What waiting for a step's batch gave.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "a batch moves by value, as the iterator's item does"
)]
pub enum Waited {
    /// The step's batch (or why the step failed as a whole).
    Batch(Result<Batch>),
    /// The epoch is over.
    End,
    /// Nothing came in the time given: wait again (a caller checks for an interrupt first).
    TimedOut,
}

impl Running {
    /// The current pass's batch of `step`, its end, or nothing within `timeout`. Workers that
    /// failed, or stopped before the pass's end, give an error (once) and then the end.
    pub(super) fn wait(&mut self, step: usize, timeout: Duration) -> Waited {
        let deadline = Instant::now() + timeout;
        loop {
            if self.broken {
                return Waited::End;
            }
            if let Some(batch) = self.early.remove(&(self.pass, step)) {
                return Waited::Batch(batch);
            }
            if self.ends.get(&self.pass) == Some(&step) {
                return Waited::End;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                // A pass already over (its spare steps) is not kept.
                Ok(Done::Batch { pass, step, batch }) => {
                    if pass >= self.pass {
                        self.early.insert((pass, step), batch);
                    }
                }
                Ok(Done::End { pass, steps }) => {
                    if pass >= self.pass {
                        self.ends.insert(pass, steps);
                    }
                }
                Ok(Done::Failed(e)) => return self.failed(e),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => return Waited::TimedOut,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let e = Error::Internal(
                        "the loader's workers stopped before the epoch's end".into(),
                    );
                    return self.failed(e);
                }
            }
        }
    }

    /// `e` as the outcome of the step waited for; the workers end with it.
    pub(super) fn failed(&mut self, e: Error) -> Waited {
        self.broken = true;
        Waited::Batch(Err(e))
    }
}

impl Drop for Running {
    /// Stops the work and, on the GPU, waits for the stream to wind down (it lands what it has
    /// in flight): a later stream then never submits on the device beside it, which a CUDA
    /// hand-off needs, since its timeline's signal goes with the device's next submission
    /// (`gpu::external::Timeline::submit`).
    fn drop(&mut self) {
        let Some(stream) = self.stream_thread.take() else {
            return;
        };
        // With these gone, a feeder waiting for the consumer's pass to end stops, and the
        // stream's next hand-over fails, so that it stops taking images.
        drop(std::mem::replace(
            &mut self.pass_taken,
            std::sync::mpsc::channel().0,
        ));
        drop(std::mem::replace(&mut self.done, sync_channel(0).1));
        let _ = stream.join();
    }
}

impl Epoch {
    /// The epoch `running` makes; `refill`: the batches it hands over, each full.
    pub(super) fn new(
        running: Running,
        park: Option<Arc<Mutex<Parked>>>,
        options: LoaderOptions,
        refill: Option<usize>,
        first_step: usize,
    ) -> Self {
        let now = Instant::now();
        let stream = Arc::clone(&running.waits);
        let wait_warning = options.wait_warning;
        Self {
            stream_at_start: running.counted,
            stream,
            running: Some(running),
            park,
            next: first_step,
            first_step,
            made: first_step,
            refill: refill.map(|batches| (batches, Refill::new(options.batch_size))),
            asked: None,
            handed: now,
            started: now,
            images: 0,
            waited: Duration::ZERO,
            wait_warning,
        }
    }

    /// The epoch so far.
    pub fn stats(&self) -> EpochStats {
        let elapsed = self.started.elapsed();
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let stream = self.stream.snapshot().since(self.stream_at_start);
        EpochStats {
            images: self.images,
            elapsed,
            images_per_second: self.images as f64 / seconds,
            data_wait_share: self.waited.as_secs_f64() / seconds,
            stream: stream.waited,
            submissions: stream.submissions,
            packing: stream.packing,
            landing: stream.landing,
        }
    }

    /// The epoch is over: on the GPU its workers go back to the loader for the next pass
    /// (replacing, and so stopping, any parked there before); elsewhere they stop.
    pub(super) fn end(&mut self) {
        let Some(mut running) = self.running.take() else {
            return;
        };
        let (Some(park), Some(then), false) = (&self.park, running.then, running.broken) else {
            return;
        };
        // Steps of the pass not taken (spare samples a topped-up epoch did not need) go.
        let pass = running.pass;
        running.ends.remove(&pass);
        running.early.retain(|&(p, _), _| p > pass);
        running.pass += 1;
        running.epoch += then;
        running.counted = self.stream.snapshot();
        let replaced = lock(park).running.replace(running);
        drop(replaced);
    }
}

impl Epoch {
    /// The next step's batch, the epoch's end, or nothing within `timeout` (then call again:
    /// a caller that must answer an interrupt waits in short slices).
    pub fn wait(&mut self, timeout: Duration) -> Waited {
        let asked = *self.asked.get_or_insert_with(Instant::now);
        let batch = match self.made_batch(timeout) {
            Waited::Batch(batch) => batch,
            other => return other,
        };
        self.asked = None;
        let now = Instant::now();
        let (waited, step_time) = (now - asked, now - self.handed);
        self.handed = now;
        self.waited += waited;
        let step = self.next;
        self.next += 1;
        Waited::Batch(batch.map(|mut batch| {
            batch.stats.step = step;
            self.images += batch.indices.len();
            let share = waited.as_secs_f64() / step_time.as_secs_f64().max(1e-9);
            let stats = &mut batch.stats;
            stats.waited = waited;
            stats.step_time = step_time;
            stats.data_wait_share = share;
            if stats.step > self.first_step && share > self.wait_warning {
                stats.warning = Some(format!(
                    "step {}: the consumer waited {:.0}% of the step for data (more than {:.0}%): \
                     more prefetch, more decoding threads or a larger batch may help",
                    stats.step,
                    share * 100.0,
                    self.wait_warning * 100.0
                ));
            }
            batch
        }))
    }
}

impl Epoch {
    /// The next batch to hand over: the next step's as it was made or, topping batches up, the
    /// next full one.
    pub(super) fn made_batch(&mut self, timeout: Duration) -> Waited {
        loop {
            if self
                .refill
                .as_ref()
                .is_some_and(|(batches, _)| self.next == *batches)
            {
                self.end();
                return Waited::End;
            }
            let Some(running) = self.running.as_mut() else {
                return Waited::End;
            };
            let broken = running.broken;
            let made = match running.wait(self.made, timeout) {
                Waited::Batch(batch) => batch,
                Waited::End => {
                    if let Some((batches, _)) = self.refill.take().filter(|_| !broken) {
                        // Failures used up the spare samples: the epoch is short.
                        let e = Error::TooManyFailed { batches };
                        return Waited::Batch(Err(e));
                    }
                    self.end();
                    return Waited::End;
                }
                Waited::TimedOut => return Waited::TimedOut,
            };
            self.made += 1;
            let Some((_, refill)) = &mut self.refill else {
                return Waited::Batch(made);
            };
            match made.and_then(|batch| refill.push(batch)) {
                Ok(Some(full)) => return Waited::Batch(Ok(full)),
                Ok(None) => {}
                Err(e) => return Waited::Batch(Err(e)),
            }
        }
    }
}

impl Iterator for Epoch {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.wait(Duration::from_secs(3600)) {
                Waited::Batch(batch) => return Some(batch),
                Waited::End => return None,
                Waited::TimedOut => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workers that panic, or stop before their pass's end, end the epoch with an error (once),
    /// never in silence with the batches missing.
    #[test]
    fn workers_that_fail_end_the_epoch_with_an_error() {
        let panicked = caught(|| -> u8 { panic!("a worker's bug") }).expect_err("caught");
        assert!(matches!(&panicked, Error::Internal(m) if m == "a worker's bug"));
        for message in [Some(Done::Failed(panicked)), None] {
            let (sender, done) = sync_channel(4);
            let running = Running {
                pass: 0,
                epoch: 0,
                then: None,
                pass_taken: std::sync::mpsc::channel().0,
                done,
                early: BTreeMap::new(),
                ends: BTreeMap::new(),
                stream_thread: None,
                waits: Arc::default(),
                counted: StreamCounts::default(),
                broken: false,
            };
            let options = LoaderOptions::new(2);
            let mut epoch = Epoch::new(running, None, options, None, 0);
            // A failure, then a step sent after it (kept open: the epoch must not wait for
            // more); or workers gone with nothing sent.
            let _open = match message {
                Some(failure) => {
                    sender.send(failure).expect("sent");
                    let late = Done::Batch {
                        pass: 0,
                        step: 0,
                        batch: Err(Error::EmptyFile),
                    };
                    sender.send(late).expect("sent");
                    Some(sender)
                }
                None => {
                    drop(sender);
                    None
                }
            };
            let first = epoch.next().expect("an outcome").expect_err("an error");
            assert!(first.to_string().contains("internal error"), "{first}");
            assert!(epoch.next().is_none());
        }
    }
}
