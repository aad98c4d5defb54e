//! How a job's samples flow from its input files to its writer, every stage busy at once:
//!
//! - reading threads read the files, each taking the next, in sample order but for the few
//!   being read at once;
//! - on a GPU backend the files go through the GPU's stream, which decodes and resizes them
//!   continuously, and land in [`Encoding`], which hands each image (or, with the forward stages
//!   on the GPU, its quantised blocks) to the encoding threads; on the CPU backend the encoding
//!   threads decode and resize the files too;
//! - the encoding threads, a pool of their own, write each image's JPEG;
//! - each sample's outcome goes to the writer (the job's thread), which writes them in order.
//!
//! Memory is bounded at each step: the bytes read and not yet taken ([`READ_AHEAD_BYTES`]), the
//! bytes waiting for or being encoded ([`ENCODE_AHEAD_BYTES`]), and how far reading runs ahead
//! of writing ([`WRITE_WINDOW`] samples), which bounds what the writer holds while it waits for
//! a slow sample. Every wait wakes when the job is stopped or aborted.

use super::{Encoded, ShardInput, StageTimes};
use crate::convert::Job;
use crate::encode::{self, Coefficients, JpegOptions, Pixels};
use crate::error::{Error, GpuError, Result};
use crate::gpu::{Arrival, Arriving, Flight, GpuPipeline, Landing, StreamOptions};
use crate::loader::lock;
use crate::plan::{Sample, Samples};
use crate::{Backend, Tensor, TensorData};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Threads reading the input files: reading from the page cache is a copy that one thread
/// does at a few GB/s, and from a disk a wait, so several read at once.
const READERS: usize = 4;

/// Bytes of input files read and not yet taken by the decoding side, at most (a file larger
/// than it is read alone).
const READ_AHEAD_BYTES: u64 = 128 << 20;

/// Bytes handed to the encoding threads and not yet encoded (decoded images, their blocks, or
/// on the CPU backend the files), at most (what is larger waits alone).
const ENCODE_AHEAD_BYTES: u64 = 256 << 20;

/// Samples read ahead of the next one to be written, at most: the writer holds the JPEGs of
/// those that overtook a slow one, so this bounds them. Far more than the stream and the
/// encoding threads hold at once, so it holds back only behind a slow sample.
const WRITE_WINDOW: usize = 4096;

/// Outcomes on their way to the writer, at most: a writer held up by its disk holds up the
/// encoding threads.
pub(super) const WRITER_QUEUE: usize = 256;

/// How often a waiting thread looks whether the job was stopped.
const STOP_POLL: Duration = Duration::from_millis(50);

/// One sample's outcome, for the writer.
pub(super) struct Outcome {
    pub n: usize,
    pub result: Result<Encoded>,
}

/// An input file, read.
struct Read {
    n: usize,
    bytes: Vec<u8>,
}

/// What the job's threads share.
pub(super) struct Flow<'a> {
    pub inputs: &'a [ShardInput],
    pub job: &'a Job<'a>,
    pub jpeg: &'a JpegOptions,
    pub forward_on_gpu: bool,
    reading: ReadAhead,
    /// What each sample carries from its source file, from its reading to its encoding (on a
    /// GPU backend, where the file does not go along).
    carried: Mutex<HashMap<usize, Carried>>,
    /// Set when the writer failed or the GPU did: every stage stops taking new work.
    aborted: AtomicBool,
    /// The GPU's failure (not an image's) that ended the job.
    failed: Mutex<Option<Error>>,
    pub times: Mutex<StageTimes>,
}

impl<'a> Flow<'a> {
    pub fn new(
        inputs: &'a [ShardInput],
        first: usize,
        job: &'a Job<'a>,
        jpeg: &'a JpegOptions,
        forward_on_gpu: bool,
    ) -> Self {
        Self {
            inputs,
            job,
            jpeg,
            forward_on_gpu,
            reading: ReadAhead::new(first),
            carried: Mutex::default(),
            aborted: AtomicBool::new(false),
            failed: Mutex::default(),
            times: Mutex::default(),
        }
    }

    /// The samples from the first not yet written through every stage, each outcome sent to
    /// `to_writer`; returns once every sample was sent (or the job was stopped or aborted).
    pub fn run(&self, to_writer: SyncSender<Outcome>) -> Result<()> {
        let next = AtomicUsize::new(self.reading.first());
        std::thread::scope(|threads| {
            let (to_decoding, files) = std::sync::mpsc::channel();
            for _ in 0..READERS {
                let (to_decoding, to_writer) = (to_decoding.clone(), to_writer.clone());
                let next = &next;
                threads.spawn(move || self.read(next, &to_decoding, &to_writer));
            }
            drop(to_decoding);
            // The readers never wait for a decoding side that is gone.
            let _stop_reading = StopOnDrop(&self.reading);
            self.decode_and_encode(files, to_writer)
        })
    }

    /// Every stage stops taking new work, and what is under way drains.
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
        self.reading.stop();
    }

    /// The samples before `next` are written: reading may run [`WRITE_WINDOW`] past it.
    pub fn written(&self, next: usize) {
        self.reading.written(next);
    }

    /// The GPU's failure that ended the job, if one did.
    pub fn failure(&self) -> Option<Error> {
        lock(&self.failed).take()
    }

    fn stopping(&self) -> bool {
        self.job.stopped() || self.aborted.load(Ordering::Relaxed)
    }

    /// Ends the job with `error` (the GPU's, not an image's): no sample after the ones it hit
    /// is written, so the shards written stay whole and a run again redoes the rest.
    fn fail_job(&self, error: Error) {
        lock(&self.failed).get_or_insert(error);
        self.abort();
    }

    /// One reading thread: reads the next file not yet taken, in turn, until none is left.
    fn read(
        &self,
        next: &AtomicUsize,
        to_decoding: &Sender<Read>,
        to_writer: &SyncSender<Outcome>,
    ) {
        loop {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let Some(input) = self.inputs.get(n) else {
                return;
            };
            let estimate = std::fs::metadata(&input.path).map_or(0, |m| m.len());
            if !self.reading.hold(n, estimate, &|| self.stopping()) {
                return;
            }
            let reading = Instant::now();
            let read = std::fs::read(&input.path).map_err(Error::from);
            lock(&self.times).reading += reading.elapsed();
            // A panic reading the file's header (a bug) is this sample's error.
            let read = read.and_then(|bytes| {
                let carried = std::panic::catch_unwind(|| Carried::of(&bytes))
                    .map_err(|panic| Error::from_panic(&*panic))?;
                Ok((bytes, carried))
            });
            let sent = match read {
                Ok((bytes, carried)) => {
                    // The file as read replaces its metadata's estimate, until it is taken.
                    self.reading.replace(estimate, bytes.len() as u64);
                    lock(&self.carried).insert(n, carried);
                    to_decoding.send(Read { n, bytes }).is_ok()
                }
                Err(e) => {
                    self.reading.replace(estimate, 0);
                    let outcome = Outcome { n, result: Err(e) };
                    to_writer.send(outcome).is_ok()
                }
            };
            if !sent {
                return;
            }
        }
    }

    /// Decodes and resizes the files `files` brings (on the job's backend) and encodes them on
    /// a pool of encoding threads.
    fn decode_and_encode(
        &self,
        files: Receiver<Read>,
        to_writer: SyncSender<Outcome>,
    ) -> Result<()> {
        let threads = rayon::current_num_threads();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("gpuprep-encode-{i}"))
            .build()
            .map_err(|e| Error::Internal(format!("cannot start the encoding threads: {e}")))?;
        lock(&self.times).encoding_threads = threads;
        let budget = ByteBudget::new(ENCODE_AHEAD_BYTES);
        pool.in_place_scope(|scope| {
            let encoders = Encoders {
                flow: self,
                budget: &budget,
                scope,
                to_writer,
            };
            let mut files = Files { files, flow: self };
            match self.job.backend {
                Backend::Gpu(gpu) => {
                    let options = StreamOptions {
                        transform: &self.job.transform,
                        limits: &self.job.limits,
                        batching: gpu.batching,
                        // Unused: each arriving file names its own sample.
                        samples: Samples::Positions,
                    };
                    let decoding = Instant::now();
                    gpu.pipeline
                        .stream_landing_aside(files, &options, &encoders);
                    lock(&self.times).decoding += decoding.elapsed();
                }
                Backend::Cpu => {
                    while let Took::File(Read { n, bytes }) = files.take(true) {
                        encoders.submit(n, Work::File(bytes));
                    }
                }
            }
        });
        Ok(())
    }

    /// Sample `n`'s outcome `error`, from before its encoding.
    fn fail(&self, to_writer: &SyncSender<Outcome>, n: usize, error: Error) {
        lock(&self.carried).remove(&n);
        let _gone = to_writer.send(Outcome {
            n,
            result: Err(error),
        });
    }

    /// Sample `n`'s JPEG from `work`, with its source's size.
    fn encode(&self, n: usize, work: Work) -> Result<Encoded> {
        let started = Instant::now();
        let (blocks, carried) = match work {
            Work::Blocks(blocks) => (blocks, self.carried(n)?),
            Work::Pixels(tensor) => {
                let carried = self.carried(n)?;
                (
                    encode::forward_stages(&pixels_of(&tensor)?, self.jpeg)?,
                    carried,
                )
            }
            Work::File(bytes) => {
                let job = self.job;
                let sample = Sample::Index(n as u64);
                let carried = Carried::of(&bytes);
                let tensor =
                    job.backend
                        .preprocess_sample(&bytes, &job.transform, &sample, &job.limits);
                lock(&self.times).decoding += started.elapsed();
                let started = Instant::now();
                let blocks = encode::forward_stages(&pixels_of(&tensor?)?, self.jpeg);
                lock(&self.times).encoding += started.elapsed();
                (blocks?, carried)
            }
        };
        let writing = Instant::now();
        let file = encode::write(&blocks, self.jpeg, carried.comment.as_deref());
        lock(&self.times).encoding += writing.elapsed();
        Ok((file?, carried.size))
    }

    /// What sample `n` carries from its source file, taken.
    fn carried(&self, n: usize) -> Result<Carried> {
        lock(&self.carried)
            .remove(&n)
            .ok_or_else(|| Error::Internal(format!("sample {n}'s source was not kept")))
    }
}

/// What an encoding thread starts from.
#[allow(
    clippy::large_enum_variant,
    reason = "a tensor's parameters make it large; moved once per image, it costs less than a \
              box would"
)]
enum Work {
    /// The file (the CPU backend decodes and resizes it there).
    File(Vec<u8>),
    /// The decoded, resized image.
    Pixels(Tensor),
    /// Its quantised blocks (the forward stages ran on the GPU).
    Blocks(Coefficients),
}

impl Work {
    /// The bytes it holds, as the encoding threads' budget counts them.
    fn bytes(&self) -> u64 {
        match self {
            Self::File(bytes) => bytes.len() as u64,
            Self::Pixels(tensor) => tensor.data.as_bytes().len() as u64,
            Self::Blocks(blocks) => blocks.bytes() as u64,
        }
    }
}

/// The encoding threads: work is handed over once the bytes waiting for them leave room.
struct Encoders<'r, 's, 'a> {
    flow: &'s Flow<'a>,
    budget: &'s ByteBudget,
    scope: &'r rayon::Scope<'s>,
    to_writer: SyncSender<Outcome>,
}

impl Encoders<'_, '_, '_> {
    /// Encodes sample `n` from `work` on a thread of the pool, its outcome sent to the writer
    /// (a panic, a bug, is its error alone); waits for room first. Once the job stops, work
    /// not yet begun is dropped (the writer stops at the first sample missing).
    fn submit(&self, n: usize, work: Work) {
        let bytes = work.bytes();
        let waited = self.budget.hold(bytes);
        lock(&self.flow.times).waiting += waited;
        let (flow, budget, to_writer) = (self.flow, self.budget, self.to_writer.clone());
        self.scope.spawn(move |_| {
            if !flow.stopping() {
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flow.encode(n, work)))
                        .unwrap_or_else(|panic| Err(Error::from_panic(&*panic)));
                let _gone = to_writer.send(Outcome { n, result });
            }
            budget.release(bytes);
        });
    }
}

/// The read files, as they come: the GPU stream's source, and the CPU backend's.
struct Files<'f, 'a> {
    files: Receiver<Read>,
    flow: &'f Flow<'a>,
}

/// What [`Files::take`] gives.
enum Took {
    File(Read),
    /// None read yet (asked not to wait).
    NotYet,
    /// No more: every file was read, or the job stops.
    End,
}

impl Files<'_, '_> {
    /// The next file read, waiting for one where told to (looking meanwhile whether the job
    /// stops).
    fn take(&mut self, wait: bool) -> Took {
        loop {
            if self.flow.stopping() {
                return Took::End;
            }
            let read = if wait {
                match self.files.recv_timeout(STOP_POLL) {
                    Ok(read) => read,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return Took::End,
                }
            } else {
                match self.files.try_recv() {
                    Ok(read) => read,
                    Err(TryRecvError::Empty) => return Took::NotYet,
                    Err(TryRecvError::Disconnected) => return Took::End,
                }
            };
            self.flow.reading.taken(read.bytes.len() as u64);
            return Took::File(read);
        }
    }
}

impl crate::gpu::Source<'static> for Files<'_, '_> {
    fn next(&mut self, wait: bool) -> Arrival<'static> {
        match self.take(wait) {
            Took::File(Read { n, bytes }) => Arrival::Image(Arriving {
                index: n,
                sample: Sample::Index(n as u64),
                bytes: bytes.into(),
            }),
            Took::NotYet => Arrival::NotYet,
            Took::End => Arrival::End,
        }
    }
}

/// The GPU stream's landing: each submission read back, its images (or, with the forward
/// stages on the GPU, their quantised blocks) handed to the encoding threads. A failure of the
/// GPU's own (not an image's) ends the job.
impl Landing for &Encoders<'_, '_, '_> {
    fn reads_back(&self) -> bool {
        true
    }

    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight) {
        let flow = self.flow;
        let mut images = Vec::new();
        let landed = flight.tensors(pipeline);
        {
            let stream = &mut lock(&flow.times).stream;
            for batch in &landed.batches {
                let gpu = &batch.gpu_timings;
                stream.preparing += batch.decode;
                stream.starved += batch.waited;
                stream.submitting += gpu.pack + gpu.record;
                stream.executing += gpu.execute;
                stream.reading_back += gpu.read_back;
            }
        }
        for (n, outcome) in landed.outcomes {
            let outcome = outcome.and_then(|tensor| match pixels_of(&tensor) {
                Ok(_) => Ok(tensor),
                Err(e) => Err(e),
            });
            match outcome {
                _ if flow.stopping() => {}
                Ok(tensor) => images.push((n, tensor)),
                Err(e) if fails_the_job(&e) => flow.fail_job(e),
                Err(e) => flow.fail(&self.to_writer, n, e),
            }
        }
        if !flow.forward_on_gpu {
            for (n, tensor) in images {
                self.submit(n, Work::Pixels(tensor));
            }
            return;
        }
        let forward = Instant::now();
        let blocks = {
            let views: Vec<Pixels> = images.iter().flat_map(|(_, t)| pixels_of(t)).collect();
            pipeline.jpeg_forward(&views, flow.jpeg)
        };
        lock(&flow.times).forward += forward.elapsed();
        match blocks {
            Ok(blocks) if blocks.len() == images.len() => {
                for ((n, _), blocks) in images.into_iter().zip(blocks) {
                    match blocks {
                        Ok(blocks) => self.submit(n, Work::Blocks(blocks)),
                        Err(e) => flow.fail(&self.to_writer, n, e),
                    }
                }
            }
            Ok(_) => flow.fail_job(Error::Internal(
                "the GPU's forward stages returned another number of images".into(),
            )),
            Err(e) => flow.fail_job(e),
        }
    }
}

/// Whether `error` is the GPU's own (the device lost, a submission that failed, a read-back
/// that failed), which would fail every image after it, rather than one image's.
fn fails_the_job(error: &Error) -> bool {
    let one_image = matches!(
        error,
        Error::Gpu(GpuError::ImageTooLarge { .. } | GpuError::LoopLimit { .. })
    );
    matches!(error, Error::Gpu(_) | Error::Internal(_)) && !one_image
}

/// A loaded image's pixels.
fn pixels_of(tensor: &Tensor) -> Result<Pixels<'_>> {
    let TensorData::U8(data) = &tensor.data else {
        return Err(Error::Internal("a shard's image is not 8-bit".into()));
    };
    let [height, width, channels] = tensor.shape;
    Ok(Pixels {
        width,
        height,
        channels,
        data,
    })
}

/// What a sample keeps of its source file: its width and height as stored (before any
/// orientation), where its header says, and the comment Pillow would carry over into the JPEG
/// it saves (`im.info["comment"]`, see `crate::comment`).
struct Carried {
    size: Option<(usize, usize)>,
    comment: Option<Vec<u8>>,
}

impl Carried {
    /// What the file `bytes` keeps.
    fn of(bytes: &[u8]) -> Self {
        Self {
            size: crate::formats::dimensions(bytes),
            comment: crate::comment::carried(bytes),
        }
    }
}

/// What the reading threads may read: the files in sample order (each holds its bytes after the
/// one before it), while the bytes read and not yet taken stay within [`READ_AHEAD_BYTES`] (a
/// larger file waits until none are held, then goes alone: in order, nothing overtakes it) and
/// the sample within [`WRITE_WINDOW`] of the next to be written.
struct ReadAhead {
    state: Mutex<Reading>,
    changed: Condvar,
}

struct Reading {
    held: u64,
    /// The sample whose turn it is to hold its bytes.
    turn: usize,
    /// The first sample past the window.
    window_end: usize,
    stopped: bool,
}

impl ReadAhead {
    /// The first sample to read.
    fn first(&self) -> usize {
        lock(&self.state).turn
    }

    fn new(first: usize) -> Self {
        Self {
            state: Mutex::new(Reading {
                held: 0,
                turn: first,
                window_end: first + WRITE_WINDOW,
                stopped: false,
            }),
            changed: Condvar::new(),
        }
    }

    /// Holds `len` bytes for sample `n` once it may be read; false once reading stops (it stops
    /// for every reader once `stopping` says so to one).
    fn hold(&self, n: usize, len: u64, stopping: &dyn Fn() -> bool) -> bool {
        let mut state = lock(&self.state);
        loop {
            if state.stopped || stopping() {
                state.stopped = true;
                self.changed.notify_all();
                return false;
            }
            let room = state.held == 0 || state.held + len <= READ_AHEAD_BYTES;
            if n == state.turn && n < state.window_end && room {
                state.held += len;
                state.turn = n + 1;
                self.changed.notify_all();
                return true;
            }
            state = self
                .changed
                .wait_timeout(state, STOP_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// A file's `estimate` held replaced by the `len` bytes it holds as read.
    fn replace(&self, estimate: u64, len: u64) {
        let mut state = lock(&self.state);
        state.held = (state.held + len).saturating_sub(estimate);
        self.changed.notify_all();
    }

    /// A file of `len` bytes was taken by the decoding side.
    fn taken(&self, len: u64) {
        let mut state = lock(&self.state);
        state.held = state.held.saturating_sub(len);
        self.changed.notify_all();
    }

    /// The samples before `next` are written.
    fn written(&self, next: usize) {
        let mut state = lock(&self.state);
        state.window_end = state.window_end.max(next + WRITE_WINDOW);
        self.changed.notify_all();
    }

    fn stop(&self) {
        lock(&self.state).stopped = true;
        self.changed.notify_all();
    }
}

/// Stops reading when dropped (also by a panic).
struct StopOnDrop<'r>(&'r ReadAhead);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Bytes handed on and not yet done with: whoever hands more on waits while they would pass
/// `bound` (what is larger than the bound passes alone).
struct ByteBudget {
    bound: u64,
    held: Mutex<u64>,
    freed: Condvar,
}

impl ByteBudget {
    fn new(bound: u64) -> Self {
        Self {
            bound,
            held: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Holds `len` bytes once there is room for them; returns how long that took. (What is
    /// held is released by work that always finishes, so the wait ends.)
    fn hold(&self, len: u64) -> Duration {
        let started = Instant::now();
        let mut held = lock(&self.held);
        while *held > 0 && *held + len > self.bound {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *held += len;
        started.elapsed()
    }

    fn release(&self, len: u64) {
        let mut held = lock(&self.held);
        *held = held.saturating_sub(len);
        self.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `hold`, on another thread, returns only after `then` runs (300 ms in): it holds
    /// then, and not before.
    fn holds_after(reading: &ReadAhead, n: usize, len: u64, then: impl FnOnce()) -> bool {
        std::thread::scope(|s| {
            let held = s.spawn(|| {
                let started = Instant::now();
                let held = reading.hold(n, len, &|| false);
                (held, started.elapsed() < Duration::from_millis(200))
            });
            std::thread::sleep(Duration::from_millis(300));
            then();
            let (held, at_once) = held.join().unwrap();
            held && !at_once
        })
    }

    #[test]
    fn files_are_held_in_turn_within_the_bytes_and_the_window() {
        let never = || false;
        // A file larger than the bound goes alone; the next waits until it is taken.
        let reading = ReadAhead::new(0);
        assert!(reading.hold(0, 2 * READ_AHEAD_BYTES, &never));
        assert!(holds_after(&reading, 1, 1, || reading.taken(2 * READ_AHEAD_BYTES)));
        // A later sample waits for its turn: a small file does not overtake a large one.
        let reading = ReadAhead::new(10);
        assert!(holds_after(&reading, 11, 1, || {
            assert!(reading.hold(10, 1, &never));
        }));
        // Reading runs a window ahead of writing.
        let reading = ReadAhead::new(0);
        for n in 0..WRITE_WINDOW {
            assert!(reading.hold(n, 0, &never));
        }
        assert!(holds_after(&reading, WRITE_WINDOW, 0, || reading.written(1)));
        // Stopped, a waiting reader gives up.
        let reading = ReadAhead::new(0);
        assert!(reading.hold(0, READ_AHEAD_BYTES, &never));
        std::thread::scope(|s| {
            let waiting = s.spawn(|| reading.hold(1, 1, &never));
            std::thread::sleep(Duration::from_millis(100));
            reading.stop();
            assert!(!waiting.join().unwrap());
        });
        let stopping = || true;
        assert!(!ReadAhead::new(0).hold(0, 0, &stopping));
    }
}
