//! How a job's samples flow from its input files to its writer, every stage busy at once:
//!
//! - reading threads read the files, in order but for the few read at once, a bounded number
//!   of bytes ahead;
//! - on a GPU backend they go through the GPU's stream, which decodes and resizes them
//!   continuously, and land in [`Encoding`], which hands each image (or, with the forward stages
//!   on the GPU, its quantised blocks) to the encoding threads; on the CPU backend the encoding
//!   threads decode and resize the files too;
//! - the encoding threads, a pool of their own, write each image's JPEG;
//! - each sample's outcome goes to the writer (the job's thread), which writes them in order.
//!
//! The bytes between the stages are bounded (read ahead, waiting for an encoding thread); the
//! stream bounds what it holds itself, and so how far out of order samples reach the writer.

use super::{Encoded, ShardInput, StageTimes};
use crate::convert::Job;
use crate::encode::{self, Coefficients, JpegOptions, Pixels};
use crate::error::{Error, Result};
use crate::gpu::{Arrival, Arriving, Flight, GpuPipeline, Landing, StreamOptions};
use crate::plan::{Sample, Samples};
use crate::{Backend, Tensor, TensorData};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes of input files read and not yet taken by the decoding side, at most (a file larger
/// than it is read alone).
const READ_AHEAD_BYTES: u64 = 128 << 20;

/// Threads reading the input files: reading from the page cache is a copy that one thread
/// does at a few GB/s, and from a disk a wait, so several read at once.
const READERS: usize = 4;

/// Bytes of decoded images (or their blocks) waiting for an encoding thread, at most (an image
/// larger than it waits alone).
const ENCODE_AHEAD_BYTES: u64 = 256 << 20;

/// Outcomes on their way to the writer, at most: a writer held up by its disk holds up the
/// encoding threads.
pub(super) const WRITER_QUEUE: usize = 256;

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
    /// What each sample carries from its source file, from its reading to its encoding.
    carried: Mutex<HashMap<usize, Carried>>,
    /// Set when the writer failed: the reader stops.
    aborted: AtomicBool,
    pub times: Mutex<StageTimes>,
}

impl<'a> Flow<'a> {
    pub fn new(
        inputs: &'a [ShardInput],
        job: &'a Job<'a>,
        jpeg: &'a JpegOptions,
        forward_on_gpu: bool,
    ) -> Self {
        Self {
            inputs,
            job,
            jpeg,
            forward_on_gpu,
            carried: Mutex::default(),
            aborted: Default::default(),
            times: Mutex::default(),
        }
    }

    /// Samples `first..` through every stage, each outcome sent to `to_writer`; returns once
    /// every sample was sent (or the job was stopped or aborted).
    pub fn run(&self, first: usize, to_writer: SyncSender<Outcome>) -> Result<()> {
        let budget = ByteBudget::new(READ_AHEAD_BYTES);
        std::thread::scope(|threads| {
            let (to_decoding, files) = std::sync::mpsc::channel();
            let writer = to_writer.clone();
            threads.spawn(|| self.read(first, &budget, to_decoding, writer));
            // The reader never waits for a decoding side that is gone.
            let _stop_reading = StopOnDrop(&budget);
            self.decode_and_encode(files, &budget, to_writer)
        })
    }

    /// The writer failed: the reader stops, and what is under way drains.
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
    }

    fn stopping(&self) -> bool {
        self.job.stopped() || self.aborted.load(Ordering::Relaxed)
    }

    /// Reads the files of samples `first..` on [`READERS`] threads, each taking the next file
    /// not yet taken, its bytes held against `budget` first; a file that cannot be read is its
    /// sample's outcome.
    fn read(
        &self,
        first: usize,
        budget: &ByteBudget,
        to_decoding: Sender<Read>,
        to_writer: SyncSender<Outcome>,
    ) {
        let next = AtomicUsize::new(first);
        std::thread::scope(|readers| {
            for _ in 0..READERS {
                let (to_decoding, to_writer) = (to_decoding.clone(), to_writer.clone());
                let next = &next;
                readers.spawn(move || {
                    while let Some(n) = self.next_to_read(next) {
                        if !self.read_one(n, budget, &to_decoding, &to_writer) {
                            return;
                        }
                    }
                });
            }
        });
    }

    /// The next sample whose file is to be read, unless the job stops.
    fn next_to_read(&self, next: &AtomicUsize) -> Option<usize> {
        let n = next.fetch_add(1, Ordering::Relaxed);
        (n < self.inputs.len() && !self.stopping()).then_some(n)
    }

    /// Reads sample `n`'s file and sends it on (or its error to the writer); false once the
    /// side it goes to is gone.
    fn read_one(
        &self,
        n: usize,
        budget: &ByteBudget,
        to_decoding: &Sender<Read>,
        to_writer: &SyncSender<Outcome>,
    ) -> bool {
        let path = &self.inputs[n].path;
        let estimate = std::fs::metadata(path).map_or(0, |m| m.len());
        budget.hold(estimate);
        let reading = Instant::now();
        let read = std::fs::read(path);
        lock(&self.times).reading += reading.elapsed();
        // The file as read replaces its metadata's estimate.
        budget.hold_more(read.as_ref().map_or(0, |b| b.len() as u64));
        budget.release(estimate);
        match read {
            Ok(bytes) => {
                lock(&self.carried).insert(n, Carried::of(&bytes));
                to_decoding.send(Read { n, bytes }).is_ok()
            }
            Err(e) => {
                let result = Err(e.into());
                to_writer.send(Outcome { n, result }).is_ok()
            }
        }
    }

    /// Decodes and resizes the files `files` brings (on the job's backend) and encodes them on
    /// a pool of encoding threads.
    fn decode_and_encode(
        &self,
        files: Receiver<Read>,
        reading: &ByteBudget,
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
            match self.job.backend {
                Backend::Gpu(gpu) => {
                    let source = Files {
                        files,
                        reading,
                        flow: self,
                    };
                    let options = StreamOptions {
                        transform: &self.job.transform,
                        limits: &self.job.limits,
                        batching: gpu.batching,
                        samples: Samples::Positions,
                    };
                    let landing = Encoding {
                        encoders: &encoders,
                    };
                    let decoding = Instant::now();
                    gpu.pipeline.stream_landing_aside(source, &options, landing);
                    lock(&self.times).decoding += decoding.elapsed();
                }
                Backend::Cpu => {
                    for read in files {
                        reading.release(read.bytes.len() as u64);
                        if self.stopping() {
                            break;
                        }
                        encoders.submit(read.n, Work::File(read.bytes));
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
        let carried = lock(&self.carried).remove(&n).unwrap_or_default();
        let jpeg = self.jpeg;
        let started = Instant::now();
        let blocks = match work {
            Work::Blocks(blocks) => blocks,
            Work::Pixels(tensor) => encode::forward_stages(&pixels_of(&tensor)?, jpeg)?,
            Work::File(bytes) => {
                let job = self.job;
                let sample = Sample::Index(n as u64);
                let tensor =
                    job.backend
                        .preprocess_sample(&bytes, &job.transform, &sample, &job.limits);
                lock(&self.times).decoding += started.elapsed();
                let started = Instant::now();
                let blocks = encode::forward_stages(&pixels_of(&tensor?)?, jpeg);
                lock(&self.times).encoding += started.elapsed();
                blocks?
            }
        };
        let writing = Instant::now();
        let file = encode::write(&blocks, jpeg, carried.comment.as_deref());
        lock(&self.times).encoding += writing.elapsed();
        Ok((file?, carried.size))
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
    /// (a panic, a bug, is its error alone); waits for room first.
    fn submit(&self, n: usize, work: Work) {
        let bytes = work.bytes();
        let waited = self.budget.hold(bytes);
        lock(&self.flow.times).waiting += waited;
        let (flow, budget, to_writer) = (self.flow, self.budget, self.to_writer.clone());
        self.scope.spawn(move |_| {
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flow.encode(n, work)))
                    .unwrap_or_else(|panic| Err(Error::from_panic(&*panic)));
            budget.release(bytes);
            let _gone = to_writer.send(Outcome { n, result });
        });
    }
}

/// The read files as the GPU stream's source: in order, each sample the transform's sample
/// of its number.
struct Files<'r, 'f, 'a> {
    files: Receiver<Read>,
    reading: &'r ByteBudget,
    flow: &'f Flow<'a>,
}

impl crate::gpu::Source<'static> for Files<'_, '_, '_> {
    fn next(&mut self, wait: bool) -> Arrival<'static> {
        if self.flow.stopping() {
            return Arrival::End;
        }
        let received = if wait {
            self.files.recv().map_err(|_| TryRecvError::Disconnected)
        } else {
            self.files.try_recv()
        };
        match received {
            Ok(Read { n, bytes }) => {
                self.reading.release(bytes.len() as u64);
                Arrival::Image(Arriving {
                    index: n,
                    sample: Sample::Index(n as u64),
                    bytes: bytes.into(),
                })
            }
            Err(TryRecvError::Empty) => Arrival::NotYet,
            Err(TryRecvError::Disconnected) => Arrival::End,
        }
    }
}

/// The GPU stream's landing: each submission read back, its images (or, with the forward
/// stages on the GPU, their quantised blocks) handed to the encoding threads.
struct Encoding<'e, 'r, 's, 'a> {
    encoders: &'e Encoders<'r, 's, 'a>,
}

impl Landing for Encoding<'_, '_, '_, '_> {
    fn reads_back(&self) -> bool {
        true
    }

    fn land(&mut self, pipeline: &GpuPipeline, flight: Flight) {
        let encoders = self.encoders;
        let flow = encoders.flow;
        let mut images = Vec::new();
        for (n, outcome) in flight.tensors(pipeline).outcomes {
            match outcome {
                Ok(tensor) => images.push((n, tensor)),
                Err(e) => flow.fail(&encoders.to_writer, n, e),
            }
        }
        if !flow.forward_on_gpu {
            for (n, tensor) in images {
                encoders.submit(n, Work::Pixels(tensor));
            }
            return;
        }
        let forward = Instant::now();
        let blocks = {
            let views: Vec<Pixels> = images
                .iter()
                .filter_map(|(_, t)| pixels_of(t).ok())
                .collect();
            pipeline.jpeg_forward(&views, flow.jpeg)
        };
        lock(&flow.times).forward += forward.elapsed();
        let mut blocks = match blocks {
            Ok(blocks) => blocks.into_iter(),
            // The GPU failed these images; the job goes on.
            Err(e) => {
                for (n, _) in images {
                    flow.fail(&encoders.to_writer, n, e.clone());
                }
                return;
            }
        };
        for (n, tensor) in images {
            let outcome =
                pixels_of(&tensor).and_then(|_| blocks.next().unwrap_or_else(|| Err(lost_image())));
            match outcome {
                Ok(blocks) => encoders.submit(n, Work::Blocks(blocks)),
                Err(e) => flow.fail(&encoders.to_writer, n, e),
            }
        }
    }
}

fn lost_image() -> Error {
    Error::Internal("the GPU's forward stages returned fewer images than they were given".into())
}

/// A loaded image's pixels.
pub(super) fn pixels_of(tensor: &Tensor) -> Result<Pixels<'_>> {
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
#[derive(Default)]
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

/// Bytes handed on and not yet taken: whoever hands more on waits while they would pass
/// `bound` (what is larger than the bound passes alone), until the budget is stopped.
struct ByteBudget {
    bound: u64,
    state: Mutex<(u64, bool)>,
    freed: Condvar,
}

impl ByteBudget {
    fn new(bound: u64) -> Self {
        Self {
            bound,
            state: Mutex::new((0, false)),
            freed: Condvar::new(),
        }
    }

    /// Holds `len` bytes once there is room for them; returns how long that took.
    fn hold(&self, len: u64) -> Duration {
        let started = Instant::now();
        let mut state = lock(&self.state);
        while !state.1 && state.0 > 0 && state.0 + len > self.bound {
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.0 += len;
        started.elapsed()
    }

    /// Holds `len` more bytes at once (what was held for them was an estimate).
    fn hold_more(&self, len: u64) {
        lock(&self.state).0 += len;
    }

    fn release(&self, len: u64) {
        let mut state = lock(&self.state);
        state.0 -= len.min(state.0);
        self.freed.notify_all();
    }

    /// Nobody waits for room any more.
    fn stop(&self) {
        lock(&self.state).1 = true;
        self.freed.notify_all();
    }
}

/// Stops a budget when dropped (also by a panic).
struct StopOnDrop<'b>(&'b ByteBudget);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// A mutex's guard, also where a thread panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
