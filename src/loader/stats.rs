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

/// What the GPU stream's thread waits for: which side holds an epoch back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitedFor {
    /// The feeder's samples (reading is the bottleneck).
    Samples,
    /// Images to be decoded (the CPU threads are).
    Decoding,
    /// A batch buffer that a consumer still held.
    Buffers,
    /// The consumer to take finished batches (the consumer is).
    Consumer,
    /// The GPU to finish a submission, with the next one already queued behind it (the GPU is
    /// the bottleneck).
    Gpu,
}

impl WaitedFor {
    /// Every kind, in the order reports list them.
    pub const ALL: [Self; 5] = [
        Self::Samples,
        Self::Decoding,
        Self::Buffers,
        Self::Consumer,
        Self::Gpu,
    ];

    /// Its name in reports and in Python's stats (`"samples"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Samples => "samples",
            Self::Decoding => "decoding",
            Self::Buffers => "buffers",
            Self::Consumer => "consumer",
            Self::Gpu => "gpu",
        }
    }
}

/// How long an epoch's GPU stream waited, by what it waited for (`waited[WaitedFor::Gpu]`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StreamWaited([Duration; WaitedFor::ALL.len()]);

impl StreamWaited {
    /// Each kind's time from `time`.
    pub fn from_fn(mut time: impl FnMut(WaitedFor) -> Duration) -> Self {
        Self(WaitedFor::ALL.map(&mut time))
    }

    /// Each kind with its time, in [`WaitedFor::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (WaitedFor, Duration)> + '_ {
        WaitedFor::ALL.into_iter().zip(self.0)
    }
}

impl std::ops::Index<WaitedFor> for StreamWaited {
    type Output = Duration;

    fn index(&self, what: WaitedFor) -> &Duration {
        &self.0[what as usize]
    }
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
            waited: StreamWaited::from_fn(|what| a[what].saturating_sub(b[what])),
            submissions: self.submissions.saturating_sub(earlier.submissions),
            packing: self.packing.saturating_sub(earlier.packing),
            landing: self.landing.saturating_sub(earlier.landing),
        }
    }
}

/// [`StreamWaited`] as the stream's thread adds to it while the consumer reads it.
#[derive(Debug, Default)]
pub(crate) struct StreamWaits {
    /// Nanoseconds, by [`WaitedFor`].
    waited: [AtomicU64; WaitedFor::ALL.len()],
    pub(super) submissions: AtomicU64,
    pub(super) packing: AtomicU64,
    pub(super) landing: AtomicU64,
}

impl StreamWaits {
    pub(crate) fn add(&self, what: WaitedFor, waited: Duration) {
        add_to(&self.waited[what as usize], waited);
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
            waited: StreamWaited::from_fn(|what| read(&self.waited[what as usize])),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `StreamWaited` and `StreamWaits` index by `what as usize`: `ALL` lists the kinds in
    /// their declared order, each once, each with a name of its own.
    #[test]
    fn every_kind_of_wait_is_listed_once_in_order() {
        for (i, what) in WaitedFor::ALL.into_iter().enumerate() {
            assert_eq!(what as usize, i);
        }
        let names: std::collections::BTreeSet<_> = WaitedFor::ALL.map(WaitedFor::name).into();
        assert_eq!(names.len(), WaitedFor::ALL.len());
        let waited = StreamWaited::from_fn(|what| Duration::from_millis(what as u64 + 1));
        let listed: Vec<_> = waited
            .iter()
            .map(|(w, t)| (w.name(), t.as_millis()))
            .collect();
        assert_eq!(
            listed,
            [
                ("samples", 1),
                ("decoding", 2),
                ("buffers", 3),
                ("consumer", 4),
                ("gpu", 5)
            ]
        );
    }
}
