//! A training loader on the streaming pipeline: batches of a dataset's samples (a list of files,
//! an `ImageFolder` tree, or WebDataset tar shards), each epoch in its own order, split between
//! ranks as torch's `DistributedSampler` splits them, with labels, sample indices and each
//! sample's random parameters beside the tensors.
//!
//! Work runs ahead of the consumer: a feeder thread reads the samples (files in parallel, shards
//! as streams). On the GPU one streaming call runs the whole epoch, and on into the next (the
//! epoch expected next is read and decoded while this one's last batches are made, so the GPU
//! does not drain and fill again between epochs): decoding runs ahead across batch boundaries
//! while the GPU makes the batches before, and each step's batch is put together in place as
//! its images land, read back straight into the one array it is handed over in (`assemble`).
//! On the CPU `prefetch` worker threads each make whole batches. Batches are
//! handed over in order; each step's stats say how long the consumer waited for it and carry a
//! warning when that passes a share of the step.

mod arrays;
mod assemble;
pub mod dataset;
#[cfg(target_os = "linux")]
mod device_arrays;
#[cfg(not(target_os = "linux"))]
#[path = "device_arrays_elsewhere.rs"]
mod device_arrays;
pub mod order;
mod refill;
pub mod webdataset;

use crate::error::{Error, Result};
use crate::gpu::Batching;
use crate::plan::Params;
use crate::{Backend, Limits, Transform};
pub use arrays::{BatchArray, HostMemory};
pub use device_arrays::DeviceArray;
use order::Split;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where a loader's samples come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// These files, in this order, unlabelled (label −1).
    Files(Vec<PathBuf>),
    /// torchvision's `ImageFolder` layout under this folder: class folders in sorted order
    /// give the labels.
    ImageFolder(PathBuf),
    /// WebDataset tar shards: samples are members grouped by key, the image from a `.jpg`,
    /// `.png`, … member and the label from `.cls` or `.json` (−1 without).
    Shards(Vec<PathBuf>),
}

/// How a loader batches, orders and splits its samples.
#[derive(Clone, Copy, Debug)]
pub struct LoaderOptions {
    /// Samples per batch.
    pub batch_size: usize,
    /// Order and split: shuffle, seed, rank, world size, and `drop_last`, which also drops an
    /// epoch's last batch when it is short (DataLoader's `drop_last`).
    pub split: Split,
    /// Batches made ahead of the consumer (at least 1): on the GPU, finished batches held
    /// ready (decoding runs two GPU batches ahead of them); on the CPU, batches made at once.
    pub prefetch: usize,
    /// Shards: samples held in the shuffle buffer (webdataset's `shuffle(n)`); 0 keeps the
    /// stream's order.
    pub shuffle_buffer: usize,
    /// Warn when the consumer waited more than this share of a step.
    pub wait_warning: f64,
    /// Shards: the largest member read, in bytes (a larger one fails its sample alone).
    pub max_member: u64,
    /// Page-lock the batch arrays for this CUDA device (DataLoader's `pin_memory`), through
    /// the CUDA driver loaded at run time; where it cannot be had the arrays stay pageable and
    /// [`Loader::memory`] says why. On the GPU backend only (CPU batches are arrays of their
    /// own).
    pub pin_memory: Option<u32>,
    /// Where the batches are handed over: host memory, or (GPU backend) memory of the GPU.
    pub handoff: Handoff,
    /// Keep every batch full (with `drop_last`, in host memory): a batch short of samples
    /// that failed takes the last samples of the batch after it, and so on, and a batch of
    /// spare samples (the rank's first samples again, with the same random parameters) is
    /// read past the epoch's end for the last one. The failed samples are still in each
    /// batch's `failed`. An epoch whose failures the spare samples cannot make up for ends
    /// with [`Error::TooManyFailed`].
    pub refill: bool,
}

/// Where a loader hands its batches over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Handoff {
    /// In host arrays ([`Batch::data`]), page-locked where `pin_memory` asks.
    #[default]
    Host,
    /// In buffers of the loader's own wgpu device ([`Batch::device`]), for a consumer on that
    /// device: each step's tensors copied into place GPU to GPU, nothing read back.
    Device,
    /// In CUDA device memory of this CUDA device ([`Batch::device`] with a CUDA pointer): the
    /// loader's Vulkan device exports its batch buffers and a timeline semaphore, which CUDA
    /// imports, so nothing is copied through the host. Where that cannot be had (not Vulkan,
    /// no CUDA, another GPU), host arrays page-locked for that device, and
    /// [`Loader::handed_over`] says why.
    Cuda(u32),
}

/// Where a loader's batches are handed over, as it turned out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandedOver {
    /// In host arrays, as asked.
    Host,
    /// In buffers of the loader's wgpu device.
    Device,
    /// In CUDA device memory of this device, without a copy.
    Cuda {
        /// The CUDA device's ordinal.
        device: u32,
    },
    /// On the device was asked for; in host arrays, because of this.
    HostBecause(String),
}

impl std::fmt::Display for HandedOver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Host => write!(f, "host memory"),
            Self::Device => write!(f, "buffers of gpuprep's GPU device"),
            Self::Cuda { device } => write!(
                f,
                "CUDA memory of device {device}, exported by gpuprep's Vulkan device (no copy)"
            ),
            Self::HostBecause(why) => write!(f, "host memory ({why})"),
        }
    }
}

impl LoaderOptions {
    /// Batches of `batch_size`, in the dataset's order on one process, two batches ahead.
    pub fn new(batch_size: usize) -> Self {
        Self {
            batch_size,
            split: Split::single(false, 0),
            prefetch: 2,
            shuffle_buffer: 1000,
            wait_warning: 0.1,
            max_member: 256 << 20,
            pin_memory: None,
            handoff: Handoff::Host,
            refill: false,
        }
    }

    /// Samples read past an epoch's end, to top up its batches (see [`Self::refill`]).
    fn spare(&self) -> usize {
        if self.refill {
            self.batch_size
        } else {
            0
        }
    }
}

/// One step's batch: the images that converted, stacked in sample order, and the rest.
#[derive(Debug)]
pub struct Batch {
    /// (images, then each image's shape in the transform's layout).
    pub shape: [usize; 4],
    /// The stacked elements, C order (on the GPU, in an array of the loader's that it goes back
    /// to when dropped); empty when the batch is handed over on the device.
    pub data: BatchArray,
    /// The stacked elements in a GPU buffer, when the loader hands over on the device
    /// ([`Handoff::Device`], [`Handoff::Cuda`]).
    pub device: Option<DeviceArray>,
    /// Each image's label (−1 for none).
    pub labels: Vec<i64>,
    /// Each image's sample index (the dataset index; for shards, shard · 2³² + place in shard),
    /// the key of its random parameters.
    pub indices: Vec<u64>,
    /// Each image's random parameters.
    pub params: Vec<Params>,
    /// The samples that failed, by sample index, with why (each alone).
    pub failed: Vec<(u64, Error)>,
    /// What the step cost.
    pub stats: StepStats,
}

/// What one step cost.
#[derive(Clone, Debug, Default)]
pub struct StepStats {
    /// The step's number in the epoch.
    pub step: usize,
    /// Reading the batch's samples (the feeder thread).
    pub read: Duration,
    /// Decoding and transforming them: from the batch's samples being read to its batch being
    /// complete (on the GPU, in a stream shared with the batches around it).
    pub prepared: Duration,
    /// How long the consumer waited for the batch.
    pub waited: Duration,
    /// Since the previous batch was handed over (the consumer's step: its own work and the
    /// wait); from the epoch's start for the first.
    pub step_time: Duration,
    /// `waited / step_time`.
    pub data_wait_share: f64,
    /// Set when the share passed the loader's `wait_warning` (not for the first step, which
    /// always waits).
    pub warning: Option<String>,
}

/// A sample read, before decoding.
struct RawSample {
    index: u64,
    label: i64,
    /// Its file, or its shard joined with its key: what its errors name.
    name: PathBuf,
    bytes: Result<Vec<u8>>,
}

/// A batch read, before decoding.
struct RawBatch {
    /// Which of the feeder's passes over the dataset it belongs to (see [`Done`]).
    pass: u64,
    /// That pass's epoch.
    epoch: u64,
    /// The step in the epoch.
    step: usize,
    /// Its place among all the batches the feeder sent, whatever their pass.
    serial: usize,
    samples: Vec<RawSample>,
    read: Duration,
}

/// What the feeder sends: batches read, and where each pass over the dataset ends.
enum Raw {
    Batch(RawBatch),
    /// Pass `pass` ended after `steps` batches.
    End {
        pass: u64,
        steps: usize,
    },
}

/// What the workers hand the consumer. The feeder reads the dataset in passes: pass 0 is the
/// epoch asked for; on the GPU it reads on into the epoch expected next (pass 1), and so on,
/// so that one stream runs from epoch to epoch without draining the GPU in between.
#[allow(
    clippy::large_enum_variant,
    reason = "a batch moves by value, as it always has; an end is one message a pass"
)]
enum Done {
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
fn caught<T>(work: impl FnOnce() -> T) -> std::result::Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .map_err(|panic| Error::from_panic(&*panic))
}

enum Dataset {
    Items(Vec<dataset::Item>),
    Shards(Vec<Shard>),
}

impl Dataset {
    /// Samples in one pass over the whole dataset (every rank's together).
    fn samples(&self) -> usize {
        match self {
            Self::Items(items) => items.len(),
            Self::Shards(shards) => shards.iter().map(|s| s.samples as usize).sum(),
        }
    }
}

/// A WebDataset shard and the samples it holds.
struct Shard {
    path: PathBuf,
    samples: u64,
}

/// The shards at `paths`, each with its samples counted from its members' headers; an error
/// for a shard that cannot be opened, and where some rank of `split` would get no shard.
fn index_shards(paths: &[PathBuf], split: Split) -> Result<Vec<Shard>> {
    if paths.len() < split.world_size {
        return Err(Error::Options(format!(
            "{} shard(s) cannot be split between {} ranks: rank {} would get none (shards go to \
             ranks whole, as webdataset's split_by_node splits them); give at least as many \
             shards as ranks",
            paths.len(),
            split.world_size,
            paths.len()
        )));
    }
    paths
        .iter()
        .map(|path| {
            let samples = webdataset::count_samples(path)?;
            if samples == 0 {
                // A rank could draw only empty shards and make fewer batches than the others.
                return Err(Error::Options(format!(
                    "{}: the shard holds no sample (every shard needs one, so that every rank \
                     makes its batches)",
                    path.display()
                )));
            }
            Ok(Shard {
                path: path.clone(),
                samples,
            })
        })
        .collect()
}

/// The files of a list, each checked to be there: a missing one is an error up front, as a
/// source that cannot be opened.
fn listed_files(paths: &[PathBuf]) -> Result<Vec<dataset::Item>> {
    if paths.is_empty() {
        return Err(Error::Options(
            "a loader over a list of files needs at least one".into(),
        ));
    }
    for path in paths {
        std::fs::metadata(path).map_err(|e| Error::from(e).in_file(path))?;
    }
    Ok(dataset::files(paths))
}

/// A loader over one dataset with one transform.
pub struct Loader {
    backend: Arc<Backend>,
    transform: Transform,
    limits: Limits,
    options: LoaderOptions,
    dataset: Arc<Dataset>,
    classes: Vec<String>,
    /// The GPU path's batch arrays, reused from epoch to epoch.
    arrays: Arc<arrays::Ring>,
    /// Its device arrays, when it hands over on the device.
    device_arrays: Option<Arc<device_arrays::DeviceRing>>,
    handed_over: HandedOver,
    /// On the GPU, the stream of the epoch last iterated to its end, running on into the epoch
    /// expected next.
    parked: Arc<Mutex<Parked>>,
}

/// A loader's GPU stream between epochs, and the epoch asked for last (which sets the epoch
/// expected after the next).
#[derive(Default)]
struct Parked {
    running: Option<Running>,
    last_asked: Option<u64>,
}

impl Loader {
    /// A loader of `source` through `transform` on `backend` (its batches set to the batch
    /// size), each image held to `limits`. The transform needs one output size (an exact
    /// resize, a crop or `RandomResizedCrop`); the loader's seed keys the random parameters
    /// too.
    pub fn new(
        source: Source,
        transform: &Transform,
        backend: Backend,
        limits: &Limits,
        options: LoaderOptions,
    ) -> Result<Self> {
        let split = options.split;
        if options.batch_size == 0 || split.world_size == 0 || split.rank >= split.world_size {
            return Err(Error::Options(format!(
                "a loader needs batch_size >= 1 and rank < world_size, got batch_size {}, rank \
                 {}, world_size {}",
                options.batch_size, split.rank, split.world_size
            )));
        }
        if !(1..=MAX_PREFETCH).contains(&options.prefetch) {
            return Err(Error::Options(format!(
                "prefetch is the batches made ahead, 1 to {MAX_PREFETCH}, got {}",
                options.prefetch
            )));
        }
        if options.refill && !split.drop_last {
            return Err(Error::Options(
                "keeping every batch full (refill) is drop_last's promise: set drop_last".into(),
            ));
        }
        if !(0.0..=1.0).contains(&options.wait_warning) {
            return Err(Error::Options(format!(
                "wait_warning is a share of a step, 0 to 1 (1: never warn), got {}",
                options.wait_warning
            )));
        }
        // A loader stacks its batches: one output size, each batch's array within bounds, and
        // the batches made ahead too.
        let shape = crate::backend::stacked_shape(transform, options.batch_size, limits)?;
        let batch_bytes = (shape.iter().product::<usize>() * transform.dtype.size()) as u64
            * options.batch_size as u64;
        let ahead = (options.prefetch + 2) as u64;
        let what = || format!("{ahead} batches of {batch_bytes} bytes (prefetch + 2)");
        crate::error::check_held(what, batch_bytes.saturating_mul(ahead))?;
        let (dataset, classes) = match source {
            Source::Files(paths) => (Dataset::Items(listed_files(&paths)?), Vec::new()),
            Source::ImageFolder(root) => {
                let (items, classes) = dataset::image_folder(&root)?;
                (Dataset::Items(items), classes)
            }
            Source::Shards(paths) => (Dataset::Shards(index_shards(&paths, split)?), Vec::new()),
        };
        let batching = Batching {
            images: options.batch_size,
            ..Batching::default()
        };
        let keep = Self::arrays_kept(&options, &batching);
        let slot_bytes = transform
            .fixed_output_shape()
            .map_or(0, |s| s.iter().product::<usize>() * transform.dtype.size());
        let on_device = on_device(&backend, options.handoff, slot_bytes, keep)?;
        if options.refill && on_device.0.is_some() {
            return Err(Error::Options(
                "keeping every batch full of the samples that did not fail (refill; Python's \
                 errors=\"skip\" with drop_last=True) moves tensors between host arrays, and \
                 these batches are handed over on the device: use errors=\"raise\", \
                 drop_last=False, or batches in host memory"
                    .into(),
            ));
        }
        let pin = match (&on_device.1, options.handoff) {
            (HandedOver::HostBecause(_), Handoff::Cuda(device)) => Some(device),
            _ => options.pin_memory,
        };
        Ok(Self {
            backend: Arc::new(backend.with_batching(batching)),
            transform: Transform {
                seed: split.seed,
                ..*transform
            },
            limits: *limits,
            options,
            dataset: Arc::new(dataset),
            classes,
            arrays: arrays::Ring::new(keep, pin),
            device_arrays: on_device.0,
            handed_over: on_device.1,
            parked: Arc::default(),
        })
    }

    /// Where the batches are handed over: as [`LoaderOptions::handoff`] asked, or host memory
    /// and why.
    pub fn handed_over(&self) -> HandedOver {
        self.handed_over.clone()
    }

    /// Batch arrays kept for reuse: as many as a stream has open at once, so that in a steady
    /// state none is freed and none made. A step's array is taken when its first image goes to
    /// decoding, and decoding runs up to two submissions (each of up to `submission_images`)
    /// ahead of the one being packed; [`IN_FLIGHT`] submissions run and the one before lands,
    /// a submission's batches and `prefetch` more wait ready, and the consumer holds one or two.
    ///
    /// [`IN_FLIGHT`]: crate::gpu::IN_FLIGHT
    fn arrays_kept(options: &LoaderOptions, batching: &Batching) -> usize {
        let per_submission = batching
            .submission_images
            .div_ceil(options.batch_size.max(1))
            .max(1);
        (4 + crate::gpu::IN_FLIGHT) * per_submission + options.prefetch.max(1) + 4
    }

    /// How the batch arrays of the GPU path are held: pageable, or page-locked for a CUDA
    /// device as [`LoaderOptions::pin_memory`] asked (or why not).
    pub fn memory(&self) -> HostMemory {
        self.arrays.memory()
    }

    /// Batch arrays (host or device) the GPU path allocated so far; every other batch reused
    /// one that a dropped batch gave back.
    pub fn arrays_made(&self) -> usize {
        let on_device = self.device_arrays.as_ref().map_or(0, |r| r.made());
        self.arrays.made() + on_device
    }

    /// The class names of an `ImageFolder` source, in label order (empty otherwise).
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// Samples each rank reads per epoch, the same on every rank (`DistributedSampler`'s
    /// `num_samples`): the dataset's samples (for shards, counted from their members when the
    /// loader was made) split evenly, the tail dropped with `drop_last`, else padded.
    pub fn samples_per_epoch(&self) -> usize {
        self.options.split.per_rank(self.dataset.samples())
    }

    /// Over shards split unevenly between ranks, the samples of an epoch that no rank reads
    /// (a rank whose shards hold more than [`Self::samples_per_epoch`] stops there): `Some`
    /// where the split is the same every epoch (no shuffle), 0 where nothing is left out;
    /// `None` with shuffled shards, whose split changes from epoch to epoch.
    pub fn unread_per_epoch(&self) -> Option<usize> {
        let Dataset::Shards(shards) = &*self.dataset else {
            return Some(0);
        };
        let split = self.options.split;
        if split.shuffle {
            return None;
        }
        let per_rank = self.samples_per_epoch();
        let rank_samples = |rank: usize| -> usize {
            let mine = shards.iter().skip(rank).step_by(split.world_size.max(1));
            mine.map(|s| s.samples as usize).sum()
        };
        let ranks = 0..split.world_size;
        Some(
            ranks
                .map(|r| rank_samples(r).saturating_sub(per_rank))
                .sum(),
        )
    }

    /// Batches each rank gets per epoch (`len(DataLoader)`), the same on every rank.
    pub fn len(&self) -> usize {
        let samples = self.samples_per_epoch();
        let size = self.options.batch_size;
        if self.options.split.drop_last {
            samples / size
        } else {
            samples.div_ceil(size)
        }
    }

    /// Whether an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Epoch `epoch`'s batches, in order; work starts at once. On the GPU the stream of an
    /// epoch iterated to its end runs on into the epoch expected next (the one after it, or
    /// the same again where the same epoch was asked for twice in a row), so that the GPU
    /// does not drain and fill again between epochs; asking for another epoch stops it (and
    /// waits for its stream to wind down).
    pub fn epoch(&self, epoch: u64) -> Epoch {
        let on_gpu = matches!(*self.backend, Backend::Gpu(_));
        let (parked, then) = {
            let mut parked = lock(&self.parked);
            let then = u64::from(parked.last_asked != Some(epoch));
            parked.last_asked = Some(epoch);
            (parked.running.take(), then)
        };
        let running = match parked {
            Some(running) if running.epoch == epoch => {
                // The feeder may read the pass after this one now (its receiver is gone only
                // once it stopped).
                let _ = running.pass_taken.send(());
                running
            }
            other => {
                // Stopped (and its stream wound down) before the next one starts.
                drop(other);
                self.start(epoch, on_gpu.then_some(then))
            }
        };
        let park = on_gpu.then(|| Arc::clone(&self.parked));
        let refill = self.options.refill.then(|| self.len());
        Epoch::new(running, park, self.options, refill)
    }

    /// Workers reading and making `epoch`, then, where `then` is given, the epochs `then`
    /// apart after it, until they are stopped.
    fn start(&self, epoch: u64, then: Option<u64>) -> Running {
        let prefetch = self.options.prefetch.max(1);
        let batch = self.options.batch_size.max(1);
        // On the GPU, files are read as far ahead as the stream decodes (two submissions), and
        // the raw batches of that many wait for it: the stream fills a submission of several
        // batches only with images it has taken ahead.
        let (read_ahead, raw_room) = match &*self.backend {
            Backend::Gpu(gpu) => {
                let ahead = (2 * gpu.batching.submission_images).max(batch);
                (ahead, ahead.div_ceil(batch).max(prefetch))
            }
            Backend::Cpu => (batch, prefetch),
        };
        let (raw_tx, raw_rx) = sync_channel::<Raw>(raw_room);
        let (pass_taken, passes_taken) = std::sync::mpsc::channel();
        let feeder = Feeder {
            dataset: Arc::clone(&self.dataset),
            options: self.options,
            first: epoch,
            then,
            passes_taken,
            read_ahead,
        };
        std::thread::spawn(move || {
            // A panic here leaves the stream without its end: the epoch then ends with an
            // error (see `Running::wait`).
            let _ = caught(|| feeder.run(&raw_tx));
        });
        let waits = Arc::new(StreamWaits::default());
        let running = |done, stream_thread| Running {
            pass: 0,
            epoch,
            then,
            pass_taken: pass_taken.clone(),
            done,
            early: BTreeMap::new(),
            ends: BTreeMap::new(),
            stream_thread,
            waits: Arc::clone(&waits),
            counted: StreamCounts::default(),
            broken: false,
        };
        if let Backend::Gpu(gpu) = &*self.backend {
            // A submission's batches land together: room for all of them beside the
            // `prefetch` held ready, so that the thread feeding the GPU does not wait for the
            // consumer in the middle of a landing.
            let landing = gpu
                .batching
                .submission_images
                .div_ceil(self.options.batch_size);
            let (done_tx, done_rx) = sync_channel(prefetch + landing.max(1));
            let backend = Arc::clone(&self.backend);
            let arrays = Arc::clone(&self.arrays);
            let device_arrays = self.device_arrays.clone();
            let (limits, size) = (self.limits, self.options.batch_size);
            let transform = self.transform;
            let stream_waits = Arc::clone(&waits);
            let stream = std::thread::spawn(move || {
                if let Backend::Gpu(gpu) = &*backend {
                    let stream = assemble::LoaderStream {
                        gpu,
                        host: &arrays,
                        on_device: device_arrays.as_ref(),
                        transform: &transform,
                        limits: &limits,
                        batch_size: size,
                        waits: &stream_waits,
                    };
                    if let Err(e) = caught(|| stream.run(&raw_rx, &done_tx)) {
                        let _ = done_tx.send(Done::Failed(e));
                    }
                }
            });
            return running(done_rx, Some(stream));
        }
        let (done_tx, done_rx) = sync_channel(prefetch);
        let raw_rx = Arc::new(Mutex::new(raw_rx));
        for _ in 0..prefetch {
            let (raw_rx, done_tx) = (Arc::clone(&raw_rx), done_tx.clone());
            let backend = Arc::clone(&self.backend);
            let (transform, limits) = (self.transform, self.limits);
            std::thread::spawn(move || loop {
                let raw = match raw_rx.lock() {
                    Ok(receiver) => receiver.recv(),
                    Err(_) => return,
                };
                let done = match raw {
                    Ok(Raw::Batch(raw)) => {
                        let (pass, step) = (raw.pass, raw.step);
                        match caught(|| assemble::prepare(&backend, &transform, &limits, raw)) {
                            Ok(batch) => Done::Batch { pass, step, batch },
                            Err(e) => Done::Failed(e),
                        }
                    }
                    Ok(Raw::End { pass, steps }) => Done::End { pass, steps },
                    Err(_) => return,
                };
                if done_tx.send(done).is_err() {
                    return;
                }
            });
        }
        running(done_rx, None)
    }
}

/// The device ring a loader on `backend` hands over through, as `handoff` asks, for tensors
/// of `slot_bytes`, keeping `keep` arrays; or none, and why (`HostBecause`). An error where the
/// device hand-off is asked for on the CPU backend.
#[cfg(target_os = "linux")]
fn on_device(
    backend: &Backend,
    handoff: Handoff,
    slot_bytes: usize,
    keep: usize,
) -> Result<(Option<Arc<device_arrays::DeviceRing>>, HandedOver)> {
    use crate::gpu::external::Exporter;
    let because = |why: String| Ok((None, HandedOver::HostBecause(why)));
    if handoff == Handoff::Host {
        return Ok((None, HandedOver::Host));
    }
    let Backend::Gpu(gpu) = backend else {
        if handoff == Handoff::Device {
            return Err(Error::Options(
                "handing batches over on the device needs the GPU backend".into(),
            ));
        }
        return because("the loader runs on the CPU backend".into());
    };
    // Copies into a batch's slots go by whole words.
    if !slot_bytes.is_multiple_of(4) {
        return because(format!(
            "a tensor of {slot_bytes} bytes is not whole 4-byte words, as GPU copies need"
        ));
    }
    let device = (&gpu.gpu.device, &gpu.gpu.queue);
    let exporter = Exporter::new(device.0);
    let Handoff::Cuda(ordinal) = handoff else {
        let ring = device_arrays::DeviceRing::new(device, exporter.ok(), None, keep);
        return Ok((Some(ring), HandedOver::Device));
    };
    let linked = exporter.and_then(|e| {
        let link = device_arrays::CudaLink::new(&e, ordinal)?;
        Ok((e, link))
    });
    match linked {
        Ok((exporter, link)) => {
            let handed = HandedOver::Cuda {
                device: link.device(),
            };
            let ring = device_arrays::DeviceRing::new(device, Some(exporter), Some(link), keep);
            Ok((Some(ring), handed))
        }
        Err(why) => because(why),
    }
}

/// Elsewhere batches are handed over in host memory.
#[cfg(not(target_os = "linux"))]
fn on_device(
    _backend: &Backend,
    handoff: Handoff,
    _slot_bytes: usize,
    _keep: usize,
) -> Result<(Option<Arc<device_arrays::DeviceRing>>, HandedOver)> {
    let handed = match handoff {
        Handoff::Host => HandedOver::Host,
        _ => HandedOver::HostBecause("exported GPU memory is implemented on Linux only".into()),
    };
    Ok((None, handed))
}

/// Reads epochs' samples in order and sends them as raw batches, each epoch a pass.
struct Feeder {
    dataset: Arc<Dataset>,
    options: LoaderOptions,
    /// The epoch of the first pass.
    first: u64,
    /// How far each later pass's epoch lies after the one before; `None`: one pass only.
    then: Option<u64>,
    /// A message each time the consumer takes up a pass after the first: the feeder reads at
    /// most one pass beyond the one being iterated, however small the passes.
    passes_taken: Receiver<()>,
    /// Files read ahead of the batcher, at most (and at most [`READ_AHEAD_BYTES`]).
    read_ahead: usize,
}

impl Feeder {
    /// Pass after pass, until the last or until the stream is gone.
    fn run(self, out: &SyncSender<Raw>) {
        let (mut pass, mut epoch, mut serial) = (0, self.first, 0);
        loop {
            // Gone: the workers were stopped.
            if pass >= 2 && self.passes_taken.recv().is_err() {
                return;
            }
            let mut batcher = Batcher {
                out,
                size: self.options.batch_size,
                drop_last: self.options.split.drop_last,
                pending: Vec::new(),
                pass,
                epoch,
                step: 0,
                serial,
                started: Instant::now(),
            };
            match &*self.dataset {
                Dataset::Items(items) => self.read_items(items, epoch, &mut batcher),
                Dataset::Shards(shards) => self.read_shards(shards, epoch, &mut batcher),
            }
            let (ControlFlow::Continue(next), Some(then)) = (batcher.finish(), self.then) else {
                return;
            };
            (pass, epoch, serial) = (pass + 1, epoch + then, next);
        }
    }

    /// The rank's indices of the epoch, files read in parallel, continuously, ahead of the
    /// batcher.
    fn read_items(&self, items: &[dataset::Item], epoch: u64, batcher: &mut Batcher) {
        let mut indices = self.options.split.indices(items.len(), epoch);
        // Spare samples past the end, to top batches up: the rank's first again.
        let spare: Vec<u64> = indices
            .iter()
            .copied()
            .cycle()
            .take(self.options.spare())
            .collect();
        indices.extend(spare);
        let ahead = (self.read_ahead, READ_AHEAD_BYTES);
        read_files(items, &indices, ahead, |s| batcher.push(s));
    }

    /// The epoch's shard order (shuffled when asked, then every `world_size`-th shard from the
    /// rank's, as webdataset's `split_by_node`), samples through the shuffle buffer, up to the
    /// samples every rank reads ([`Split::per_rank`]): a rank whose shards hold more stops
    /// there (its last samples are not read this epoch: see [`Loader::unread_per_epoch`]), one
    /// whose shards hold fewer reads them again from the first (`DistributedSampler` pads
    /// likewise), so that every rank makes the same number of batches.
    fn read_shards(&self, shards: &[Shard], epoch: u64, batcher: &mut Batcher) {
        let split = self.options.split;
        let samples = shards.iter().map(|s| s.samples as usize).sum();
        let per_rank = (split.per_rank(samples) + self.options.spare()) as u64;
        let mut order: Vec<usize> = (0..shards.len()).collect();
        if split.shuffle {
            order::shuffle(&mut order, &mut split.stream(epoch));
        }
        let mine: Vec<usize> = order
            .into_iter()
            .skip(split.rank)
            .step_by(split.world_size.max(1))
            .collect();
        let mut buffer = ShuffleBuffer {
            held: Vec::new(),
            capacity: if split.shuffle {
                self.options.shuffle_buffer
            } else {
                0
            },
            stream: split.buffer_stream(epoch),
        };
        let mut quota = Quota { left: per_rank };
        while quota.left > 0 {
            let mut read_any = false;
            for &shard in &mine {
                let flow = self.read_shard(shard, &shards[shard].path, &mut |sample| {
                    read_any = true;
                    match buffer.push(sample) {
                        Some(out) => quota.send(batcher, out),
                        None => ControlFlow::Continue(()),
                    }
                });
                if flow.is_break() {
                    return;
                }
            }
            while let Some(sample) = buffer.pop() {
                if quota.send(batcher, sample).is_break() {
                    return;
                }
            }
            if !read_any {
                let e = Error::Options(format!(
                    "rank {}'s shards hold no sample in epoch {epoch}, and every rank reads \
                     {per_rank}",
                    split.rank
                ));
                let failed = RawSample {
                    index: u64::MAX,
                    label: -1,
                    name: shards[mine[0]].path.clone(),
                    bytes: Err(e),
                };
                let _ = quota.send(batcher, failed);
                return;
            }
        }
    }

    /// The samples of shard number `shard` at `path` to `take`, until it says `Break`.
    fn read_shard(
        &self,
        shard: usize,
        path: &std::path::Path,
        take: &mut dyn FnMut(RawSample) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut flow = ControlFlow::Continue(());
        webdataset::for_each_sample(path, self.options.max_member, |sample| {
            let sample = match sample {
                Ok(s) => RawSample {
                    index: (shard as u64) << 32 | s.position,
                    label: s.label,
                    name: path.join(&s.key),
                    bytes: s.image,
                },
                // A shard that breaks off: its error stands for the rest of it.
                Err(e) => RawSample {
                    index: (shard as u64) << 32 | u64::from(u32::MAX),
                    label: -1,
                    name: path.to_path_buf(),
                    bytes: Err(e),
                },
            };
            flow = take(sample);
            flow
        });
        flow
    }
}

/// The samples a rank still sends in a pass.
struct Quota {
    left: u64,
}

impl Quota {
    /// `sample` to `batcher`, unless the rank sent all it reads (`Break`, as when the consumer
    /// is gone).
    fn send(&mut self, batcher: &mut Batcher, sample: RawSample) -> ControlFlow<()> {
        if self.left == 0 {
            return ControlFlow::Break(());
        }
        self.left -= 1;
        batcher.push(sample)
    }
}

/// Reads the files of `items` at `indices` and hands them to `take` in order, until it says
/// `Break`. Reader `j` of [`READERS`] reads every `READERS`-th file from the `j`-th, at most
/// `ahead.0` files and about `ahead.1` bytes before `take` has had them, so that reading
/// keeps up with a stream that takes a submission's files at once. The readers are threads of
/// their own: on rayon's, they would wait behind the decoding tasks that the GPU's stream keeps
/// queued.
fn read_files(
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
const READERS: usize = 4;

/// Files each reader holds ready, at most.
const MAX_READ_ROOM: usize = 1024;

/// Batches a loader makes ahead of its consumer (`prefetch`), at most.
pub const MAX_PREFETCH: usize = 64;

/// Encoded bytes read ahead of the batcher, at most (a file larger than it is read alone).
const READ_AHEAD_BYTES: u64 = 64 << 20;

/// The bytes read and not yet taken, and the place of the file to be taken next: a reader
/// holding a later file waits while the bytes pass `bound`; the next file always passes, so
/// the files taken in order are never held up by later ones.
#[derive(Default)]
struct ReadBudget {
    bound: u64,
    state: Mutex<Budgeted>,
    freed: std::sync::Condvar,
}

#[derive(Default)]
struct Budgeted {
    held: u64,
    next: usize,
    stopped: bool,
}

impl ReadBudget {
    /// Counts `len` bytes of the file at `position` as read, once there is room for them.
    fn hold(&self, position: usize, len: u64) {
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
    fn taken(&self, position: usize, len: u64) {
        let mut state = lock(&self.state);
        state.held -= len.min(state.held);
        state.next = position + 1;
        self.freed.notify_all();
    }

    fn stop(&self) {
        lock(&self.state).stopped = true;
        self.freed.notify_all();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// webdataset's `shuffle(n)`: samples held up to `capacity`; once full, each new one sends a
/// random held one out.
struct ShuffleBuffer {
    held: Vec<RawSample>,
    capacity: usize,
    stream: crate::plan::random::Stream,
}

impl ShuffleBuffer {
    fn push(&mut self, sample: RawSample) -> Option<RawSample> {
        if self.capacity == 0 {
            return Some(sample);
        }
        self.held.push(sample);
        (self.held.len() > self.capacity)
            .then(|| self.pop())
            .flatten()
    }

    fn pop(&mut self) -> Option<RawSample> {
        if self.held.is_empty() {
            return None;
        }
        let i = self.stream.below(self.held.len() as u64) as usize;
        Some(self.held.swap_remove(i))
    }
}

/// Cuts a pass's stream of samples into numbered batches.
struct Batcher<'a> {
    out: &'a SyncSender<Raw>,
    size: usize,
    drop_last: bool,
    pending: Vec<RawSample>,
    pass: u64,
    epoch: u64,
    step: usize,
    serial: usize,
    started: Instant,
}

impl Batcher<'_> {
    /// Adds a sample; `Break` once the consumer is gone.
    fn push(&mut self, sample: RawSample) -> ControlFlow<()> {
        self.pending.push(sample);
        if self.pending.len() < self.size {
            return ControlFlow::Continue(());
        }
        self.send()
    }

    fn send(&mut self) -> ControlFlow<()> {
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

    fn sent(&self, raw: Raw) -> ControlFlow<()> {
        match self.out.send(raw) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    }

    /// Sends the short last batch (unless dropped) and the pass's end; the serial number of
    /// the next pass's first batch, or `Break` once the consumer is gone.
    fn finish(mut self) -> ControlFlow<(), usize> {
        if !self.pending.is_empty() && !self.drop_last {
            self.send()?;
        }
        let (pass, steps) = (self.pass, self.step);
        self.sent(Raw::End { pass, steps })?;
        ControlFlow::Continue(self.serial)
    }
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
    /// Steps made so far (more than handed over where batches are topped up).
    made: usize,
    /// With [`LoaderOptions::refill`], the batches to hand over and the batch being topped up.
    refill: Option<(usize, refill::Refill)>,
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
struct Running {
    /// The pass the consumer takes batches of now, and its epoch.
    pass: u64,
    epoch: u64,
    /// How far each pass's epoch lies after the one before; `None`: one pass only.
    then: Option<u64>,
    /// Tells the feeder that the consumer took up the next pass.
    pass_taken: std::sync::mpsc::Sender<()>,
    done: Receiver<Done>,
    /// Batches received before their turn, by pass and step.
    early: BTreeMap<(u64, usize), Result<Batch>>,
    /// The passes whose end was received, with their steps.
    ends: BTreeMap<u64, usize>,
    /// The thread of the GPU stream, joined when the workers are stopped.
    stream_thread: Option<std::thread::JoinHandle<()>>,
    waits: Arc<StreamWaits>,
    /// The stream's counts when its last epoch ended (zero before the first).
    counted: StreamCounts,
    /// A worker failed: the workers end with this pass.
    broken: bool,
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
    fn wait(&mut self, step: usize, timeout: Duration) -> Waited {
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
    fn failed(&mut self, e: Error) -> Waited {
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
struct StreamCounts {
    waited: StreamWaited,
    submissions: usize,
    packing: Duration,
    landing: Duration,
}

impl StreamCounts {
    /// What was added since `earlier`.
    fn since(self, earlier: Self) -> Self {
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
    samples: AtomicU64,
    decoding: AtomicU64,
    buffers: AtomicU64,
    consumer: AtomicU64,
    gpu: AtomicU64,
    submissions: AtomicU64,
    packing: AtomicU64,
    landing: AtomicU64,
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

    fn snapshot(&self) -> StreamCounts {
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
fn add_to(counter: &AtomicU64, time: Duration) {
    let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(nanos, Ordering::Relaxed);
}

impl Epoch {
    /// The epoch `running` makes; `refill`: the batches it hands over, each full.
    fn new(
        running: Running,
        park: Option<Arc<Mutex<Parked>>>,
        options: LoaderOptions,
        refill: Option<usize>,
    ) -> Self {
        let now = Instant::now();
        let stream = Arc::clone(&running.waits);
        let wait_warning = options.wait_warning;
        Self {
            stream_at_start: running.counted,
            stream,
            running: Some(running),
            park,
            next: 0,
            made: 0,
            refill: refill.map(|batches| (batches, refill::Refill::new(options.batch_size))),
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
    fn end(&mut self) {
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
            if stats.step > 0 && share > self.wait_warning {
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
    fn made_batch(&mut self, timeout: Duration) -> Waited {
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
            let mut epoch = Epoch::new(running, None, options, None);
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
