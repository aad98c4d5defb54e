//! The stream: many images of any sizes, taken from a [`Source`] as they arrive, decoded
//! continuously by CPU threads ahead of the GPU while two submissions run on the GPU and the
//! next is packed and submitted; each submission, once run, goes to a [`Landing`]. A
//! submission is one batch, or, while decoded batches wait for the GPU, several consecutive ones
//! (each still handed over as a batch of its own), which spreads a submission's fixed cost over
//! more images. What each submission takes is planned in [`super::submission`].

use super::bindings::Fit;
use super::landing::{Aside, Flight, FlyingBatch, IntoSlots, Landing, OnDevice, Streamed, Tensors};
use super::pipeline::{prepare_image, GpuPipeline};
use super::stats::BatchStats;
use super::submission::{Budget, Cost, Ready};
use super::work::ImageWork;
use super::DeviceBatch;
use crate::error::{Error, GpuError, Result};
use crate::plan::{Sample, Samples};
use crate::tensor::Stacked;
use crate::{Limits, Transform};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// One image for the streaming loop: its place among the call's results, which sample of the
/// transform it is, and its encoded bytes.
pub(crate) struct Arriving<'a> {
    pub index: usize,
    pub sample: Sample,
    pub bytes: std::borrow::Cow<'a, [u8]>,
}

/// Where the stream's images come from. Asked for the next image, a source gives it, or says
/// that none has arrived yet (only when not asked to `wait` for one), or that there are no
/// more. A new source is one impl.
pub(crate) trait Source<'a> {
    fn next(&mut self, wait: bool) -> Arrival<'a>;
}

/// What a [`Source`] answers when the streaming loop asks for an image.
#[allow(
    clippy::large_enum_variant,
    reason = "an image's sample (its given parameters) makes it large; moved once per image, \
              it costs less than a box would"
)]
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

impl Cost for Decoded {
    fn cost(&self) -> (u64, u64) {
        let work = self.work.as_ref();
        let upload = work.map_or(0, ImageWork::uploaded_bytes);
        let output = work.map_or(0, |w| w.tensor.words * 4);
        (upload, output)
    }
}

/// A call's images as a source: in input order, a batch's worth at a time, each largest first
/// (the longest-processing-time-first rule: a call then ends on small images, not on a large
/// one decoded alone while the other threads wait). Sorting the whole call instead would make
/// batches of the largest files and batches of the smallest, whose latencies lie far apart.
struct LargestFirst<'a> {
    images: &'a [&'a [u8]],
    samples: Samples<'a>,
    order: std::vec::IntoIter<usize>,
}

impl<'a> LargestFirst<'a> {
    fn new(images: &'a [&'a [u8]], options: &StreamOptions<'a>) -> Self {
        let mut order: Vec<usize> = (0..images.len()).collect();
        for window in order.chunks_mut(options.batching.images.max(1)) {
            window.sort_by_key(|&i| std::cmp::Reverse(images[i].len()));
        }
        Self {
            images,
            samples: options.samples,
            order: order.into_iter(),
        }
    }
}

impl<'a> Source<'a> for LargestFirst<'a> {
    fn next(&mut self, _wait: bool) -> Arrival<'a> {
        self.order.next().map_or(Arrival::End, |i| {
            Arrival::Image(Arriving {
                index: i,
                sample: self.samples.of(i),
                bytes: std::borrow::Cow::Borrowed(self.images[i]),
            })
        })
    }
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
    pub fn preprocess_many(&self, images: &[&[u8]], options: &StreamOptions) -> Streamed {
        let tensors = Tensors {
            results: (0..images.len()).map(|_| None).collect(),
            batches: Vec::new(),
        };
        let landed =
            self.stream_landing_aside(LargestFirst::new(images, options), options, tensors);
        Streamed {
            results: landed
                .results
                .into_iter()
                .enumerate()
                .map(|(i, r)| r.unwrap_or_else(|| Err(GpuError::NotRun(i).into())))
                .collect(),
            batches: landed.batches,
        }
    }

    /// [`Self::preprocess_many`] for images of one output shape, `shape`, read back straight
    /// into one stacked array in input order (a batch for a training step): each landing
    /// batch's tensors are copied from the mapped read-back buffer into their slots in
    /// parallel, so no tensor is allocated or copied on its own.
    pub fn preprocess_stacked(
        &self,
        images: &[&[u8]],
        options: &StreamOptions,
        shape: [usize; 3],
    ) -> Stacked {
        Stacked::fill(images.len(), shape, options.transform.dtype, |slots| {
            let into_slots = IntoSlots {
                slots,
                shape,
                outcomes: (0..images.len())
                    .map(|i| Err(GpuError::NotRun(i).into()))
                    .collect(),
                batches: Vec::new(),
            };
            let source = LargestFirst::new(images, options);
            self.stream_landing_aside(source, options, into_slots)
                .outcomes
        })
    }

    /// [`Self::preprocess_many`] for a consumer on the same device: each batch's tensors stay
    /// on the GPU, handed to `consume` as a [`DeviceBatch`] once the GPU has made them and the
    /// stream has queued the two submissions after theirs, or run out of images (in the order
    /// batches finish, not input order: files are decoded largest first). `consume` runs on
    /// this thread, the one that submits the stream's work, so that what it submits goes in
    /// order with it. Nothing is read back, so this is the fast path when a model on this
    /// device eats the tensors. Returns the per-batch stats.
    pub fn preprocess_on_device(
        &self,
        images: &[&[u8]],
        options: &StreamOptions,
        consume: impl FnMut(DeviceBatch<'_>),
    ) -> Vec<BatchStats> {
        let mut on_device = OnDevice {
            dtype: options.transform.dtype,
            consume,
            consumer_free: Instant::now(),
            batches: Vec::new(),
        };
        self.stream(LargestFirst::new(images, options), options, &mut on_device);
        on_device.batches
    }

    /// [`Self::stream`] with `landing` on a thread of its own ([`Aside`]): this thread packs
    /// and submits the next batch meanwhile, so the landing's copies are off the path that
    /// feeds the GPU. For landings that read tensors back: one on the device must run on the
    /// thread that submits. Returns the landing; a panic of the landing's (which stops the
    /// stream) or of the stream's goes on to the caller as it was.
    pub(crate) fn stream_landing_aside<'a, L: Landing + Send>(
        &self,
        source: impl Source<'a>,
        options: &StreamOptions,
        mut landing: L,
    ) -> L {
        debug_assert!(
            landing.reads_back(),
            "a landing on the device runs on the stream's thread"
        );
        std::thread::scope(|scope| {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Flight>(1);
            let reads_back = landing.reads_back();
            let lander = scope.spawn(move || {
                for flight in receiver {
                    landing.land(self, flight);
                }
                landing
            });
            let streamed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut aside = Aside { sender, reads_back };
                self.stream(source, options, &mut aside);
                // Its sender gone, the landing thread ends once it has landed what it was sent.
                drop(aside);
            }));
            match (lander.join(), streamed) {
                (Ok(landing), Ok(())) => landing,
                (Err(panic), _) | (Ok(_), Err(panic)) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// The streaming loop: CPU threads decode and prepare the images `source` gives (it is
    /// asked to wait for one only while fewer than two batches are being decoded; else the
    /// loop goes on submitting what is decoded), this thread gathers batches, submits each
    /// (with a copy for reading back when the landing reads back) and hands the one submitted
    /// [`IN_FLIGHT`] submissions before to `landing` (all in flight, before it waits for the
    /// source).
    pub(crate) fn stream<'a>(
        &self,
        mut source: impl Source<'a>,
        options: &StreamOptions,
        landing: &mut impl Landing,
    ) {
        let call_start = Instant::now();
        let read_back = landing.reads_back();
        let fit = Fit::of(&self.device);
        let StreamOptions {
            transform,
            limits,
            batching,
            ..
        } = *options;
        let batch = batching.images.max(1);
        let per_submission = batching.submission_images.max(batch);
        // One output buffer holds the whole batch's tensors.
        let max_output = self.device.limits().max_buffer_size;
        let prepare = |input: Arriving<'a>| -> Decoded {
            let started = Instant::now();
            let work = prepare_image(&input.bytes, transform, &input.sample, limits, fit, true);
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
            let mut ready = Ready::new(receiver);
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
                    let input = match source.next(must && wait) {
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
                let launched = self.launch(batches, (waited, call_start), transform, read_back);
                in_flight.push_back(launched);
                while in_flight.len() > IN_FLIGHT {
                    let flight = in_flight.pop_front().expect("more than IN_FLIGHT wait");
                    landing.land(self, flight);
                }
                if spawned == taken && !exhausted {
                    // Nothing left to decode: what is made lands, then the source is waited for.
                    in_flight.drain(..).for_each(|f| landing.land(self, f));
                    (spawned, exhausted) = spawn_ahead(taken, taken_bytes, true);
                }
                target = (target * 2).min(batch);
            }
            in_flight.into_iter().for_each(|f| landing.land(self, f));
        });
    }

    /// Submits batches of decoded images in one submission, gathered after waiting `waited`
    /// for them (`call_start`: when the call began); the ones that failed to decode wait
    /// beside them.
    fn launch(
        &self,
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
        let submitted = self.submit_images(works, transform, read_back);
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
        Decoded {
            index: i,
            bytes,
            work: Err(Error::from_panic(&*panic)),
            started,
            took: started.elapsed(),
        }
    })
}
