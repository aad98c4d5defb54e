//! What an epoch cost and what its GPU stream waited for, counted by the stream's thread while
//! the consumer reads the counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// An epoch so far.
#[derive(Clone, Copy, Debug)]
pub struct EpochStats {
    /// Images handed over.
    pub images: usize,
    /// Since the epoch began.
    pub elapsed: Duration,
    /// Images per second.
    pub images_per_second: f64,
    /// The share of the time the consumer spent waiting for batches.
    pub data_wait_share: f64,
    /// What the GPU stream's thread waited for so far (zero on the CPU backend): which side
    /// holds the epoch back.
    pub stream: StreamWaited,
    /// GPU submissions the stream made so far (each of one or several batches: the fewer
    /// for its images, the less fixed cost a submission's images share).
    pub submissions: usize,
    /// The stream thread's own time packing and recording those submissions (uploads
    /// included), the work it does between its waits.
    pub packing: Duration,
    /// The time spent putting landed tensors into the steps' arrays and closing steps up: with
    /// batches kept on the GPU, recording and submitting their copies on the stream's thread;
    /// read back, copying them out on a thread beside it. What the stream's thread spent
    /// beyond its waits, `packing` and this (on the GPU) is its bookkeeping.
    pub landing: Duration,
}

/// How long an epoch's GPU stream waited, by what it waited for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StreamWaited {
    /// For the feeder's samples (reading is the bottleneck).
    pub samples: Duration,
    /// For images to be decoded (the CPU threads are).
    pub decoding: Duration,
    /// For a batch buffer that a consumer still held.
    pub buffers: Duration,
    /// For the consumer to take finished batches (the consumer is).
    pub consumer: Duration,
    /// For the GPU to finish a submission, with the next one already queued behind it (the
    /// GPU is the bottleneck).
    pub gpu: Duration,
}

/// A stream's counts at one moment: what it waited for, its submissions, packing and landing.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StreamCounts {
    pub(super) waited: StreamWaited,
    pub(super) submissions: usize,
    pub(super) packing: Duration,
    pub(super) landing: Duration,
}

impl StreamCounts {
    /// What was added since `earlier`.
    pub(super) fn since(self, earlier: Self) -> Self {
        let (a, b) = (self.waited, earlier.waited);
        Self {
            waited: StreamWaited {
                samples: a.samples.saturating_sub(b.samples),
                decoding: a.decoding.saturating_sub(b.decoding),
                buffers: a.buffers.saturating_sub(b.buffers),
                consumer: a.consumer.saturating_sub(b.consumer),
                gpu: a.gpu.saturating_sub(b.gpu),
            },
            submissions: self.submissions.saturating_sub(earlier.submissions),
            packing: self.packing.saturating_sub(earlier.packing),
            landing: self.landing.saturating_sub(earlier.landing),
        }
    }
}

/// [`StreamWaited`] as the stream's thread adds to it while the consumer reads it.
#[derive(Debug, Default)]
pub(crate) struct StreamWaits {
    pub(super) samples: AtomicU64,
    pub(super) decoding: AtomicU64,
    pub(super) buffers: AtomicU64,
    pub(super) consumer: AtomicU64,
    pub(super) gpu: AtomicU64,
    pub(super) submissions: AtomicU64,
    pub(super) packing: AtomicU64,
    pub(super) landing: AtomicU64,
}

/// What a [`StreamWaits`] entry counts.
#[derive(Clone, Copy)]
pub(crate) enum WaitedFor {
    Samples,
    Decoding,
    Buffers,
    Consumer,
    Gpu,
}

impl StreamWaits {
    pub(crate) fn add(&self, what: WaitedFor, waited: Duration) {
        let counter = match what {
            WaitedFor::Samples => &self.samples,
            WaitedFor::Decoding => &self.decoding,
            WaitedFor::Buffers => &self.buffers,
            WaitedFor::Consumer => &self.consumer,
            WaitedFor::Gpu => &self.gpu,
        };
        add_to(counter, waited);
    }

    /// Counts what a landed batch's stats say the stream waited for and spent packing.
    pub(crate) fn landed(&self, stats: &crate::gpu::BatchStats) {
        self.add(WaitedFor::Decoding, stats.waited);
        self.add(WaitedFor::Gpu, stats.gpu_timings.execute);
        add_to(
            &self.packing,
            stats.gpu_timings.pack + stats.gpu_timings.record,
        );
    }

    /// `f`'s result, its time counted as landing tensors in their steps' arrays.
    pub(crate) fn landing<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        add_to(&self.landing, start.elapsed());
        out
    }

    /// Counts a landed submission.
    pub(crate) fn submitted(&self) {
        self.submissions.fetch_add(1, Ordering::Relaxed);
    }

    /// `f`'s result, its time added to `what`.
    pub(crate) fn timing<T>(&self, what: WaitedFor, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.add(what, start.elapsed());
        out
    }

    pub(super) fn snapshot(&self) -> StreamCounts {
        let read = |c: &AtomicU64| Duration::from_nanos(c.load(Ordering::Relaxed));
        StreamCounts {
            waited: StreamWaited {
                samples: read(&self.samples),
                decoding: read(&self.decoding),
                buffers: read(&self.buffers),
                consumer: read(&self.consumer),
                gpu: read(&self.gpu),
            },
            submissions: self.submissions.load(Ordering::Relaxed) as usize,
            packing: read(&self.packing),
            landing: read(&self.landing),
        }
    }
}

/// Adds `time` to `counter`'s nanoseconds.
pub(super) fn add_to(counter: &AtomicU64, time: Duration) {
    let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(nanos, Ordering::Relaxed);
}
