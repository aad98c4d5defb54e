//! Many images of any sizes: CPU threads decode continuously, ahead of the GPU, while two
//! submissions run on the GPU and the next is packed and submitted. A submission is one batch,
//! or, while decoded batches wait for the GPU, several consecutive ones (each still handed over
//! as a batch of its own), which spreads a submission's fixed cost over more images.

use super::bindings::binding_window;
use super::pipeline::{prepare_image, GpuPipeline, GpuTimings, Placed, Submitted};
use super::work::ImageWork;
use crate::error::{Error, GpuError, Result};
use crate::plan::{Params, Sample, Samples};
use crate::tensor::{unstackable, Stacked};
use crate::transform::DType;
use crate::{Limits, Tensor, Transform};
use std::collections::VecDeque;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// What one batch cost.
#[derive(Clone, Debug, Default)]
pub struct BatchStats {
    /// Images in the batch.
    pub images: usize,
    /// Their encoded bytes (the files as given).
    pub bytes_in: u64,
    /// Of them, non-JPEG images, uploaded as pixels: the slower path.
    pub pixel_images: usize,
    /// Bytes uploaded to the GPU (compact coefficients, job records, taps).
    pub bytes_uploaded: u64,
    /// What the same coefficients take as dense 16-bit blocks, for comparison.
    pub dense_coefficient_bytes: u64,
    /// CPU time of entropy decoding and preparing its images, summed over the threads.
    pub decode: Duration,
    /// From packing the batch to its tensors being read back (with a batch in flight, this
    /// overlaps the next batch's packing).
    pub gpu: Duration,
    /// How long the GPU side waited for this batch's images to be decoded (the decoding the
    /// previous batches' GPU work did not hide).
    pub waited: Duration,
    /// How long the consumer of [`GpuPipeline::preprocess_on_device`] waited for this batch:
    /// from when it returned from the batch before (or the call began) until it was handed
    /// this one. Zero for [`GpuPipeline::preprocess_many`], whose caller gets every result when
    /// the call returns.
    pub consumer_waited: Duration,
    /// From the start of its decoding to its tensors being on the CPU.
    pub latency: Duration,
    /// The loader's timeline, from the start of the call: when the batch's images were all
    /// decoded and gathered,
    pub gathered_at: Duration,
    /// when it was submitted to the GPU (packed, uploaded and recorded),
    pub submitted_at: Duration,
    /// and when it landed (its tensors ready).
    pub landed_at: Duration,
    /// The GPU side's time, phase by phase: the submission's, which the first of the batches
    /// that went together carries (the others' are zero).
    pub gpu_timings: GpuTimings,
    /// How many batches went to the GPU in one submission with this one (itself included).
    pub submitted_with: usize,
}

/// The results of [`GpuPipeline::preprocess_many`], in input order, and per-batch stats.
pub struct Streamed {
    /// One result per input image.
    pub results: Vec<Result<Tensor>>,
    /// One entry per batch, in order.
    pub batches: Vec<BatchStats>,
}

/// One batch of [`GpuPipeline::preprocess_on_device`], its tensors on the GPU.
pub struct DeviceBatch<'a> {
    /// The tensors, `STORAGE | COPY_SRC`, little-endian, C order; `None` when the GPU failed
    /// the whole batch (its images are in `failed`). The batches of one submission share it;
    /// it is usable until the call for the last of them ([`Self::last_of_submission`]) returns,
    /// then serves a later submission, after any work the consumer submitted on it.
    pub buffer: Option<&'a wgpu::Buffer>,
    /// Where each of the batch's tensors lies in `buffer`.
    pub tensors: Vec<DeviceTensor>,
    /// Element type of every tensor.
    pub dtype: DType,
    /// The batch's images that failed, with why (each alone: the others are exact).
    pub failed: Vec<(usize, Error)>,
    /// What the batch cost.
    pub stats: &'a BatchStats,
    /// Whether it is the last of the batches that went to the GPU in one submission: a
    /// consumer recording work on `buffer` over several of them submits it before this one's
    /// call returns.
    pub last_of_submission: bool,
}

/// One tensor of a [`DeviceBatch`].
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTensor {
    /// The input image's index.
    pub index: usize,
    /// Dimensions in the transform's layout: `[h, w, 3]` or `[3, h, w]`.
    pub shape: [usize; 3],
    /// Its first byte in the buffer (a multiple of 4).
    pub offset: u64,
    /// The random parameters it was made with.
    pub params: Params,
}

/// One image for the streaming loop: its place among the call's results, which sample of the
/// transform it is, and its encoded bytes.
pub(crate) struct Arriving<'a> {
    pub index: usize,
    pub sample: Sample,
    pub bytes: std::borrow::Cow<'a, [u8]>,
}

/// What a source of arriving images answers when the streaming loop asks for one.
pub(crate) enum Arrival<'a> {
    /// The next image.
    Image(Arriving<'a>),
    /// None yet (asked not to wait): the loop goes on with what it has and asks again later.
    NotYet,
    /// No more images.
    End,
}

/// One image decoded and prepared on a CPU thread.
struct Decoded {
    index: usize,
    /// Its encoded bytes.
    bytes: usize,
    work: Result<ImageWork>,
    started: Instant,
    took: Duration,
}

/// Images per batch when the caller does not say.
pub const DEFAULT_BATCH: usize = 64;

/// How the streaming calls group images into GPU batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// Most images in one batch (at least 1). Default: [`DEFAULT_BATCH`].
    pub images: usize,
    /// Most bytes of prepared images (coefficients as uploaded) in one batch: a batch closes
    /// early rather than pass it, and an image larger than it runs in a batch of its own.
    /// Default: 256 MiB. A submission of several batches holds no more in all.
    pub max_bytes: u64,
    /// Most images one GPU submission carries. When the decoding threads are ahead of the GPU
    /// and whole batches wait, consecutive batches go to the GPU in one submission, each still
    /// handed over as a batch of its own, in order: a submission's fixed cost (some fifteen
    /// dispatches, the wait for its fence) is then spread over more images. When the GPU waits
    /// for the decoding instead, each batch goes alone, as soon as it is decoded. Default:
    /// [`DEFAULT_SUBMISSION`]; [`Self::images`] or fewer for one batch per submission.
    pub submission_images: usize,
}

/// Images per GPU submission, at most, when the caller does not say.
pub const DEFAULT_SUBMISSION: usize = 256;

/// Submissions a stream keeps on the GPU while it packs the next: with two, the GPU has the
/// next queued when it finishes one, whichever of the two sides (packing on the CPU, running on
/// the GPU) took longer for the one before; a batch lands a submission later than with one.
pub(crate) const IN_FLIGHT: usize = 2;

/// Encoded bytes the decoding threads take ahead of the GPU to fill submissions of several
/// batches (they always take two batches' worth): a bound on the memory of decoded images
/// waiting.
const AHEAD_BYTES: u64 = 64 << 20;

impl Default for Batching {
    fn default() -> Self {
        Self {
            images: DEFAULT_BATCH,
            max_bytes: 256 << 20,
            submission_images: DEFAULT_SUBMISSION,
        }
    }
}

impl Batching {
    /// Batches of up to `images` images, the other settings by default.
    pub fn of(images: usize) -> Self {
        Self {
            images,
            ..Self::default()
        }
    }
}

/// What the streaming calls make of their images, and how they batch them.
#[derive(Clone, Copy, Debug)]
pub struct StreamOptions<'a> {
    /// The transform every image gets.
    pub transform: &'a Transform,
    /// The limits every image is checked against.
    pub limits: &'a Limits,
    /// The batches.
    pub batching: Batching,
    /// Which sample of a random transform each image is.
    pub samples: Samples<'a>,
}

impl<'a> StreamOptions<'a> {
    /// `transform` under `limits`, in batches of up to `images` images.
    pub fn new(transform: &'a Transform, limits: &'a Limits, images: usize) -> Self {
        Self {
            transform,
            limits,
            batching: Batching::of(images),
            samples: Samples::Positions,
        }
    }
}

impl GpuPipeline {
    /// Decodes and transforms `images` in the batches `options` asks for: CPU threads decode
    /// continuously while the GPU runs what they have finished. Outputs may differ in shape; each
    /// result stands alone (a bad image fails alone, in its own slot).
    pub fn preprocess_many(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        images: &[&[u8]],
        options: &StreamOptions,
    ) -> Streamed {
        let mut results: Vec<Option<Result<Tensor>>> = (0..images.len()).map(|_| None).collect();
        let mut batches = Vec::new();
        let land = |flight| self.land(device, queue, flight, &mut results, &mut batches);
        let next = Self::largest_first(images, options.samples, options.batching.images);
        self.stream_landing_aside(device, queue, next, options, land);
        Streamed {
            results: results
                .into_iter()
                .enumerate()
                .map(|(i, r)| r.unwrap_or_else(|| Err(GpuError::NotRun(i).into())))
                .collect(),
            batches,
        }
    }

    /// [`Self::preprocess_many`] for images of one output shape, `shape`, read back straight
    /// into one stacked array in input order (a batch for a training step): each landing
    /// batch's tensors are copied from the mapped read-back buffer into their slots in
    /// parallel, so no tensor is allocated or copied on its own.
    pub fn preprocess_stacked(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        images: &[&[u8]],
        options: &StreamOptions,
        shape: [usize; 3],
    ) -> Stacked {
        let transform = options.transform;
        Stacked::fill(images.len(), shape, transform.dtype, |slots| {
            let mut outcomes: Vec<Result<Params>> = (0..images.len())
                .map(|i| Err(GpuError::NotRun(i).into()))
                .collect();
            let mut batches = Vec::new();
            let land = |flight: Flight| {
                let finish = |s| {
                    self.finish_reading(device, queue, s, |bytes, placed, _| {
                        let copies = placed.into_iter().map(|placed| {
                            let slot = slots.get_mut(placed.0).and_then(Option::take);
                            (placed, slot)
                        });
                        copy_into_slots(bytes, copies.collect(), shape)
                    })
                };
                for (i, outcome) in self.land_with(flight, &mut batches, finish) {
                    outcomes[i] = outcome;
                }
            };
            let next = Self::largest_first(images, options.samples, options.batching.images);
            self.stream_landing_aside(device, queue, next, options, land);
            outcomes
        })
    }

    /// [`Self::preprocess_stacked`] for images that arrive as they are read (a training
    /// loader's): `next(wait)` gives them (waiting for one only when `wait`). As each
    /// batch lands, `read` gets the mapped read-back buffer and where each tensor lies in it,
    /// copies them out (with [`copy_into_slots`]) and says their outcomes; `put` takes
    /// every image's outcome, the ones that failed before the GPU included; `landed` the stats
    /// of each landed submission's batches, before their outcomes go to `put`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the stream's callbacks, each a step of the landing"
    )]
    pub(crate) fn preprocess_arriving<'a>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        next: impl FnMut(bool) -> Arrival<'a>,
        options: &StreamOptions,
        mut read: impl FnMut(&[u8], Vec<Placed>) -> Vec<(usize, Result<Params>)> + Send,
        mut put: impl FnMut(usize, Result<Params>) + Send,
        mut landed: impl FnMut(&[BatchStats]) + Send,
    ) -> Vec<BatchStats> {
        let mut batches = Vec::new();
        let land = |flight: Flight| {
            let finish =
                |s| self.finish_reading(device, queue, s, |bytes, placed, _| read(bytes, placed));
            let before = batches.len();
            let outcomes = self.land_with(flight, &mut batches, finish);
            landed(&batches[before..]);
            for (i, outcome) in outcomes {
                put(i, outcome);
            }
        };
        self.stream_landing_aside(device, queue, next, options, land);
        batches
    }

    /// [`Self::preprocess_many`] for a consumer on the same device: each batch's tensors stay
    /// on the GPU, handed to `consume` as a [`DeviceBatch`] once the GPU has made them and the
    /// stream has queued the two submissions after theirs, or run out of images (in the order
    /// batches finish, not input order: files are decoded largest first). Nothing is read
    /// back, so this is the fast path when a model on this device eats the tensors. Returns the
    /// per-batch stats.
    pub fn preprocess_on_device(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        images: &[&[u8]],
        options: &StreamOptions,
        consume: impl FnMut(DeviceBatch<'_>),
    ) -> Vec<BatchStats> {
        let next = Self::largest_first(images, options.samples, options.batching.images);
        self.preprocess_arriving_on_device(device, queue, next, options, consume)
    }

    /// [`Self::preprocess_on_device`] for images that arrive as they are read (a training
    /// loader's): `next(wait)` gives them (waiting for one only when `wait`). `consume`
    /// runs on this thread, the one that submits the stream's work, so that what it submits
    /// goes in order with it.
    pub(crate) fn preprocess_arriving_on_device<'a>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        next: impl FnMut(bool) -> Arrival<'a>,
        options: &StreamOptions,
        mut consume: impl FnMut(DeviceBatch<'_>),
    ) -> Vec<BatchStats> {
        let mut batches = Vec::new();
        // When the consumer was last done with a batch (at first, when the call began).
        let mut consumer_free = Instant::now();
        let land = |flight| {
            let stats = self.hand_over(
                device,
                queue,
                flight,
                options.transform,
                &mut consume,
                &mut consumer_free,
            );
            batches.extend(stats);
        };
        self.stream_from(device, queue, next, options, false, land);
        batches
    }

    /// Waits for `flight` and hands its tensors, still on the GPU, to `consume`, batch by
    /// batch, with their failures (every image's, when the GPU failed the submission); returns
    /// the batches' stats. `consumer_free`: when the consumer returned from the batch before,
    /// updated.
    fn hand_over(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        flight: Flight,
        transform: &Transform,
        consume: &mut impl FnMut(DeviceBatch<'_>),
        consumer_free: &mut Instant,
    ) -> Vec<BatchStats> {
        let Flight {
            batches,
            submitted,
            gpu_start,
            call_start,
        } = flight;
        let landed = submitted.and_then(|s| self.finish_on_device(device, queue, s));
        let (buffer, placed, mut timings, error) = match landed {
            Ok((buffer, placed, timings)) => (Some(buffer), placed, timings, None),
            Err(e) => (None, Vec::new(), GpuTimings::default(), Some(e)),
        };
        // Placed in the order of the submission's images: batch after batch.
        let mut placed = placed.into_iter();
        let together = batches.len();
        let mut all = Vec::with_capacity(together);
        for (k, mut batch) in batches.into_iter().enumerate() {
            let mut failed = std::mem::take(&mut batch.failed);
            let tensors = match &error {
                None => placed
                    .by_ref()
                    .take(batch.running.len())
                    .map(|(index, shape, at, params)| DeviceTensor {
                        index,
                        shape,
                        offset: at * 4,
                        params,
                    })
                    .collect(),
                Some(e) => {
                    failed.extend(batch.running.iter().map(|&i| (i, e.clone())));
                    Vec::new()
                }
            };
            let mut stats = batch.landed(gpu_start, call_start, std::mem::take(&mut timings));
            stats.consumer_waited = consumer_free.elapsed();
            consume(DeviceBatch {
                buffer: buffer.as_ref(),
                tensors,
                dtype: transform.dtype,
                failed,
                stats: &stats,
                last_of_submission: k + 1 == together,
            });
            *consumer_free = Instant::now();
            all.push(stats);
        }
        // Work the consumer submitted on it runs before any later use.
        if let Some(buffer) = buffer {
            self.pool.put(buffer);
        }
        all
    }

    /// `images` for the streaming loop in input order, `batch` at a time, each `batch` largest
    /// first (the longest-processing-time-first rule: a call then ends on small images, not on
    /// a large one decoded alone while the other threads wait). Sorting the whole call instead
    /// would make batches of the largest files and batches of the smallest, whose latencies lie
    /// far apart.
    fn largest_first<'a>(
        images: &'a [&'a [u8]],
        samples: Samples<'a>,
        batch: usize,
    ) -> impl FnMut(bool) -> Arrival<'a> + 'a {
        let mut order: Vec<usize> = (0..images.len()).collect();
        for window in order.chunks_mut(batch.max(1)) {
            window.sort_by_key(|&i| std::cmp::Reverse(images[i].len()));
        }
        let mut order = order.into_iter();
        move |_wait| {
            order.next().map_or(Arrival::End, |i| {
                Arrival::Image(Arriving {
                    index: i,
                    sample: samples.of(i),
                    bytes: std::borrow::Cow::Borrowed(images[i]),
                })
            })
        }
    }

    /// [`Self::stream_from`] reading the tensors back, with the landing (waiting for the GPU,
    /// copying the tensors out) on a thread of its own: this thread packs and submits the next
    /// batch meanwhile, so the copies are off the path that feeds the GPU.
    fn stream_landing_aside<'a>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        next: impl FnMut(bool) -> Arrival<'a>,
        options: &StreamOptions,
        mut land: impl FnMut(Flight) + Send,
    ) {
        std::thread::scope(|scope| {
            // One batch waits for the lander while it lands the one before.
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Flight>(1);
            scope.spawn(move || {
                for flight in receiver {
                    land(flight);
                }
            });
            let hand = move |flight| {
                let _ = sender.send(flight);
            };
            self.stream_from(device, queue, next, options, true, hand);
        });
    }

    /// The streaming loop: CPU threads decode and prepare the images `next(wait)` gives (it
    /// waits for one only when asked to: while fewer than two batches are being decoded; else
    /// the loop goes on submitting what is decoded), this thread gathers batches, submits each (with
    /// a copy for reading back when `read_back`) and hands the one submitted [`IN_FLIGHT`]
    /// submissions before to `land` (all in flight, before it waits for the source).
    pub(crate) fn stream_from<'a>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        mut next: impl FnMut(bool) -> Arrival<'a>,
        options: &StreamOptions,
        read_back: bool,
        mut land: impl FnMut(Flight),
    ) {
        let call_start = Instant::now();
        let window = binding_window(device);
        let StreamOptions {
            transform,
            limits,
            batching,
            ..
        } = *options;
        let batch = batching.images.max(1);
        let per_submission = batching.submission_images.max(batch);
        // One output buffer holds the whole batch's tensors.
        let max_output = device.limits().max_buffer_size;
        let prepare = |input: Arriving<'a>| -> Decoded {
            let started = Instant::now();
            let work = prepare_image(&input.bytes, transform, &input.sample, limits, window, true);
            Decoded {
                index: input.index,
                bytes: input.bytes.len(),
                work,
                started,
                took: started.elapsed(),
            }
        };
        let prepare = &prepare;
        // This thread feeds the GPU; rayon's threads decode. At most two batches' worth of
        // images (more, within `AHEAD_BYTES`, to fill submissions of several batches) are being
        // decoded or waiting at any time, which bounds memory; decoding tasks never block, so
        // the GPU side's own parallel copies always find threads.
        rayon::in_place_scope(|scope| {
            let (sender, receiver) = std::sync::mpsc::channel::<Decoded>();
            let mut ready = Ready {
                receiver,
                queue: VecDeque::new(),
            };
            let (mut spawned, mut spawned_bytes, mut exhausted) = (0, 0, false);
            // Decoding runs two batches ahead of what submissions took (waiting for the source
            // while it is not, where told to `wait`), and up to two submissions ahead while the
            // encoded bytes ahead stay within `AHEAD_BYTES` (taking only what the source has:
            // this thread has decoded batches to submit meanwhile). The loop waits for the
            // source only once what it took is submitted and landed, so that batches made never
            // wait for images still to come (a loader's source waits for its consumer to take
            // them, at the end of an epoch).
            let mut spawn_ahead = |taken: usize, taken_bytes: u64, wait: bool| {
                while !exhausted {
                    let ahead = spawned - taken;
                    let must = ahead < 2 * batch;
                    let more = must
                        || (ahead < 2 * per_submission
                            && spawned_bytes - taken_bytes < AHEAD_BYTES);
                    if !more {
                        break;
                    }
                    let input = match next(must && wait) {
                        Arrival::Image(input) => input,
                        Arrival::NotYet => break,
                        Arrival::End => {
                            exhausted = true;
                            break;
                        }
                    };
                    spawned_bytes += input.bytes.len() as u64;
                    let sender = sender.clone();
                    scope.spawn(move |_| {
                        let (index, bytes) = (input.index, input.bytes.len());
                        let _ = sender.send(prepare_caught(index, bytes, || prepare(input)));
                    });
                    spawned += 1;
                }
                (spawned, exhausted)
            };
            let (mut spawned, mut exhausted) = spawn_ahead(0, 0, true);
            // The first batches are small, so the GPU starts early; then they grow to `batch`.
            let mut target = (batch / 8).max(1);
            let (mut taken, mut taken_bytes) = (0, 0);
            let mut in_flight = VecDeque::with_capacity(IN_FLIGHT + 1);
            let budget = Budget {
                upload: batching.max_bytes,
                output: max_output,
            };
            while taken < spawned {
                let wait = Instant::now();
                ready.wait_for(target.min(spawned - taken));
                let waited = wait.elapsed();
                // Once batches are full size, whole ones already decoded go along.
                let most = if target == batch {
                    per_submission
                } else {
                    batch
                };
                let left = (spawned - taken, exhausted);
                let batches = ready.submission(budget, batch, most, left);
                let images: usize = batches.iter().map(Vec::len).sum();
                if images == 0 {
                    break;
                }
                taken += images;
                taken_bytes += batches
                    .iter()
                    .flatten()
                    .map(|d| d.bytes as u64)
                    .sum::<u64>();
                (spawned, exhausted) = spawn_ahead(taken, taken_bytes, false);
                // `IN_FLIGHT` submissions stay on the GPU while the next is packed and submitted.
                let launched = self.launch(
                    device,
                    queue,
                    batches,
                    (waited, call_start),
                    transform,
                    read_back,
                );
                in_flight.push_back(launched);
                while in_flight.len() > IN_FLIGHT {
                    land(
                        in_flight
                            .pop_front()
                            .expect("more than IN_FLIGHT are waiting"),
                    );
                }
                if spawned == taken && !exhausted {
                    // Nothing left to decode: what is made lands, then the source is waited for.
                    in_flight.drain(..).for_each(&mut land);
                    (spawned, exhausted) = spawn_ahead(taken, taken_bytes, true);
                }
                target = (target * 2).min(batch);
            }
            in_flight.into_iter().for_each(land);
        });
    }

    /// Submits batches of decoded images in one submission, gathered after waiting `waited`
    /// for them (`call_start`: when the call began); the ones that failed to decode wait
    /// beside them.
    fn launch(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        batches: Vec<Vec<Decoded>>,
        (waited, call_start): (Duration, Instant),
        transform: &Transform,
        read_back: bool,
    ) -> Flight {
        let gathered_at = call_start.elapsed();
        let gpu_start = Instant::now();
        let together = batches.len();
        let mut works = Vec::new();
        let mut flying = Vec::with_capacity(together);
        for (k, pending) in batches.into_iter().enumerate() {
            let stats = BatchStats {
                waited: if k == 0 { waited } else { Duration::ZERO },
                gathered_at,
                submitted_with: together,
                ..batch_stats(&pending)
            };
            let started = pending.iter().map(|d| d.started).min();
            let (mut failed, mut running) = (Vec::new(), Vec::new());
            for decoded in pending {
                match decoded.work {
                    Ok(work) => {
                        running.push(decoded.index);
                        works.push((decoded.index, work));
                    }
                    Err(e) => failed.push((decoded.index, e)),
                }
            }
            flying.push(FlyingBatch {
                failed,
                running,
                stats,
                started,
            });
        }
        let submitted = self.submit_images(device, queue, works, transform, read_back);
        let submitted_at = call_start.elapsed();
        for batch in &mut flying {
            batch.stats.submitted_at = submitted_at;
        }
        Flight {
            batches: flying,
            submitted,
            gpu_start,
            call_start,
        }
    }

    /// Waits for `flight`, puts its results in place and its stats last in `batches`.
    fn land(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        flight: Flight,
        results: &mut [Option<Result<Tensor>>],
        batches: &mut Vec<BatchStats>,
    ) {
        let finish = |s| {
            let (tensors, timings) = self.finish(device, queue, s)?;
            Ok((
                tensors.into_iter().map(|(i, t)| (i, Ok(t))).collect(),
                timings,
            ))
        };
        for (i, result) in self.land_with(flight, batches, finish) {
            results[i] = Some(result);
        }
    }

    /// Waits for `flight` through `finish`, which reads its tensors back; puts the stats of its
    /// batches, in order, last in `out` and returns every image's outcome (a GPU failure is
    /// every image's error), so that a caller counts the batches before it hands them on.
    fn land_with<T>(
        &self,
        flight: Flight,
        out: &mut Vec<BatchStats>,
        finish: impl FnOnce(Submitted) -> Result<(Vec<(usize, Result<T>)>, GpuTimings)>,
    ) -> Vec<(usize, Result<T>)> {
        let Flight {
            mut batches,
            submitted,
            gpu_start,
            call_start,
        } = flight;
        let mut outcomes: Vec<(usize, Result<T>)> = Vec::new();
        for batch in &mut batches {
            outcomes.extend(batch.failed.drain(..).map(|(i, e)| (i, Err(e))));
        }
        let mut timings = GpuTimings::default();
        match submitted.and_then(finish) {
            Ok((landed, landed_timings)) => {
                outcomes.extend(landed);
                timings = landed_timings;
            }
            Err(e) => {
                let running = batches.iter().flat_map(|b| &b.running);
                outcomes.extend(running.map(|&i| (i, Err(e.clone()))));
            }
        }
        for mut batch in batches {
            let stats = batch.landed(gpu_start, call_start, std::mem::take(&mut timings));
            out.push(stats);
        }
        outcomes
    }
}

/// Copies each tensor of a mapped read-back buffer (`bytes`; a tensor's elements start at
/// word `at`) into its slot, on rayon's pool, where the fresh slots' page faults spread over
/// every core (the landing runs aside, off the path that feeds the GPU); a tensor without a
/// slot, or of another shape than `shape`, fails its image.
pub(crate) fn copy_into_slots(
    bytes: &[u8],
    copies: Vec<(Placed, Option<&mut [u8]>)>,
    shape: [usize; 3],
) -> Vec<(usize, Result<Params>)> {
    use rayon::prelude::*;
    copies
        .into_par_iter()
        .map(|((index, got, at, params), slot)| {
            let tensor = bytes.get(at as usize * 4..);
            let outcome = match (slot, tensor) {
                (Some(slot), Some(tensor)) if got == shape && tensor.len() >= slot.len() => {
                    slot.copy_from_slice(&tensor[..slot.len()]);
                    Ok(params)
                }
                _ => Err(unstackable(&got, &shape)),
            };
            (index, outcome)
        })
        .collect()
}

/// One submission on the GPU: its batches, in order.
pub(crate) struct Flight {
    batches: Vec<FlyingBatch>,
    submitted: Result<Submitted>,
    gpu_start: Instant,
    /// The start of the call, which the timeline counts from.
    call_start: Instant,
}

/// One batch of a [`Flight`], and the images of it that failed before.
struct FlyingBatch {
    failed: Vec<(usize, Error)>,
    /// The images on the GPU.
    running: Vec<usize>,
    stats: BatchStats,
    /// When the first of its images began decoding.
    started: Option<Instant>,
}

impl FlyingBatch {
    /// Its stats, now that its submission landed with `timings`.
    fn landed(
        &mut self,
        gpu_start: Instant,
        call_start: Instant,
        timings: GpuTimings,
    ) -> BatchStats {
        BatchStats {
            gpu: gpu_start.elapsed(),
            latency: self.started.map_or(Duration::ZERO, |s| s.elapsed()),
            landed_at: call_start.elapsed(),
            gpu_timings: timings,
            ..std::mem::take(&mut self.stats)
        }
    }
}

/// The stats a batch of `pending` images starts with, before the GPU (its submission sets when
/// and with how many others it went).
fn batch_stats(pending: &[Decoded]) -> BatchStats {
    let good = pending.iter().filter_map(|d| d.work.as_ref().ok());
    let (uploaded, dense) = good.fold((0, 0), |(u, d), w| {
        (u + w.uploaded_bytes(), d + w.dense_coefficient_bytes)
    });
    BatchStats {
        images: pending.len(),
        bytes_in: pending.iter().map(|d| d.bytes as u64).sum(),
        pixel_images: pending
            .iter()
            .filter(|d| d.work.as_ref().is_ok_and(ImageWork::is_pixels))
            .count(),
        bytes_uploaded: uploaded,
        dense_coefficient_bytes: dense,
        decode: pending.iter().map(|d| d.took).sum(),
        ..BatchStats::default()
    }
}

/// `prepare(i)`, with a panic (a decoder bug) turned into that image's error, so that it can
/// neither take down the other images nor leave the GPU side waiting for it.
fn prepare_caught(i: usize, bytes: usize, prepare: impl FnOnce() -> Decoded) -> Decoded {
    let started = Instant::now();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(prepare)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Decoded {
            index: i,
            bytes,
            work: Err(Error::Corrupt(format!(
                "the decoder failed unexpectedly ({what}); please report this file"
            ))),
            started,
            took: started.elapsed(),
        }
    })
}

/// What one submission may hold: bytes of uploads, bytes of output.
#[derive(Clone, Copy)]
struct Budget {
    /// [`Batching::max_bytes`]: one image alone may pass it.
    upload: u64,
    /// The device's largest buffer, which holds a submission's tensors: an image whose output
    /// passes it alone runs, and fails, in a submission of its own.
    output: u64,
}

/// Decoded images in the order they arrived, waiting for a batch.
struct Ready {
    receiver: Receiver<Decoded>,
    queue: VecDeque<Decoded>,
}

impl Ready {
    /// The next submission's batches of up to `batch` images: the first of what waits, then
    /// whole batches that wait too, up to `most` images in all, within `budget`. `left`: how
    /// many images were handed to the decoders and not yet taken, and whether those are all the
    /// call's (then its last batch may be short).
    fn submission(
        &mut self,
        budget: Budget,
        batch: usize,
        most: usize,
        (left, exhausted): (usize, bool),
    ) -> Vec<Vec<Decoded>> {
        let mut filling = Filling::new(budget);
        let mut batches = vec![filling.first_batch(&mut self.queue, batch)];
        let mut images = batches[0].len();
        while images + batch <= most {
            self.wait_for(0);
            let rest = left - images;
            if rest < batch && !exhausted {
                break;
            }
            let Some(more) = filling.whole_batch(&mut self.queue, batch.min(rest)) else {
                break;
            };
            images += more.len();
            batches.push(more);
        }
        batches
    }

    /// Blocks until `n` images wait (the caller knows that many are coming), then takes in
    /// whatever else has arrived.
    fn wait_for(&mut self, n: usize) {
        while self.queue.len() < n {
            match self.receiver.recv() {
                Ok(decoded) => self.queue.push_back(decoded),
                Err(_) => break,
            }
        }
        self.queue.extend(self.receiver.try_iter());
    }
}

/// One submission's batches as they are taken, against its budget.
#[derive(Clone, Copy)]
struct Filling {
    budget: Budget,
    upload: u64,
    output: u64,
}

impl Filling {
    fn new(budget: Budget) -> Self {
        Self {
            budget,
            upload: 0,
            output: 0,
        }
    }

    /// What `decoded` takes of the budget: bytes of uploads and of output.
    fn cost(decoded: &Decoded) -> (u64, u64) {
        let work = decoded.work.as_ref();
        let upload = work.map_or(0, ImageWork::uploaded_bytes);
        let output = work.map_or(0, |w| w.tensor.words * 4);
        (upload, output)
    }

    fn fits(&self, (upload, output): (u64, u64)) -> bool {
        self.upload + upload <= self.budget.upload && self.output + output <= self.budget.output
    }

    fn add(&mut self, (upload, output): (u64, u64)) {
        self.upload += upload;
        self.output += output;
    }

    /// The submission's first batch: up to `size` of the waiting images, closing early at one
    /// that would pass the budget (it waits for the next); its first image whatever it costs.
    fn first_batch(&mut self, queue: &mut VecDeque<Decoded>, size: usize) -> Vec<Decoded> {
        let mut batch = Vec::with_capacity(size);
        while let Some(decoded) = queue.front() {
            let cost = Self::cost(decoded);
            if batch.len() == size || (!batch.is_empty() && !self.fits(cost)) {
                break;
            }
            self.add(cost);
            batch.extend(queue.pop_front());
        }
        batch
    }

    /// Another batch of `size` of the waiting images, or `None` when fewer wait or they would
    /// pass the budget: a later batch goes whole or waits for a submission of its own.
    fn whole_batch(&mut self, queue: &mut VecDeque<Decoded>, size: usize) -> Option<Vec<Decoded>> {
        if size == 0 || queue.len() < size {
            return None;
        }
        let mut after = *self;
        for decoded in queue.iter().take(size) {
            let cost = Self::cost(decoded);
            if !after.fits(cost) {
                return None;
            }
            after.add(cost);
        }
        *self = after;
        Some(queue.drain(..size).collect())
    }
}
