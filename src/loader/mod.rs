//! A training loader on the streaming pipeline: batches of a dataset's samples (a list of files,
//! an `ImageFolder` tree, or WebDataset tar shards, local or remote), each epoch in its own order, split between
//! ranks as torch's `DistributedSampler` splits them, with labels, sample indices and each
//! sample's random parameters beside the tensors.
//!
//! Work runs ahead of the consumer: a feeder thread reads the samples (files in parallel, shards
//! as streams). On the GPU one streaming call runs the whole epoch, and on into the next (the
//! epoch expected next is read and decoded while this one's last batches are made, so the GPU
//! does not drain and fill again between epochs): decoding runs ahead across batch boundaries
//! while the GPU makes the batches before, and each step's batch is put together in place as
//! its images land, read back straight into the one array it is handed over in (`stream`).
//! On the CPU `prefetch` worker threads each make whole batches. Batches are
//! handed over in order; each step's stats say how long the consumer waited for it and carry a
//! warning when that passes a share of the step.
//!
//! Where things are: this file holds the options, the public types and the loader, which starts
//! the workers; `dataset` what a loader reads (files, `ImageFolder`, shards counted up front),
//! `shard_url` where shards are (paths, URLs, object stores, commands, and webdataset's
//! patterns of them), `shard_index` the index that lists them with their counts, `fetch` how a shard's bytes are opened as a stream wherever it is, and
//! `webdataset` how shards are read; `order` each epoch's order and split between ranks;
//! `feeder` the sources behind its `Dataset` trait (files there, shards in `shards`), reading
//! samples ahead into raw batches;
//! `assemble` making steps' batches (whole on the CPU, as `Partial`s on the GPU) and `stream`
//! the GPU stream that lands them; `epoch` handing them over in order (`refill` topping them
//! up); `stats` what an epoch cost; `arrays` and `device_arrays` the memory batches land in.

mod arrays;
mod assemble;
mod aws_profile;
pub mod dataset;
#[cfg(target_os = "linux")]
mod device_arrays;
#[cfg(not(target_os = "linux"))]
#[path = "device_arrays_elsewhere.rs"]
mod device_arrays;
mod epoch;
mod feeder;
pub mod fetch;
pub mod order;
mod refill;
pub mod shard_index;
pub mod shard_url;
mod shards;
mod stats;
mod stream;
pub mod webdataset;

use crate::error::{Error, Result};
use crate::gpu::Batching;
use crate::plan::Params;
use crate::{Backend, Limits, Transform};
pub use arrays::{BatchArray, HostMemory};
use dataset::{checked_shards, count_and_check, listed_files};
pub use device_arrays::DeviceArray;
use epoch::{caught, Done, Running};
pub use epoch::{Epoch, Waited};
pub use feeder::MAX_PREFETCH;
use feeder::{Dataset, Feeder, Indexed, Raw, RawBatch};
pub use fetch::FetchOptions;
use order::Split;
pub use shard_index::Shard;
pub use shard_url::ShardUrl;
use shards::Shards;
pub use stats::{EpochStats, StreamWaited, WaitedFor};
use stats::{StreamCounts, StreamWaits};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where a loader's samples come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// These files, in this order, unlabelled (label −1).
    Files(Vec<PathBuf>),
    /// torchvision's `ImageFolder` layout under this folder: class folders in sorted order
    /// give the labels.
    ImageFolder(PathBuf),
    /// WebDataset tar shards: samples are members grouped by key, the image from a `.jpg`,
    /// `.png`, … member (a format gpuprep decodes) and the label from `.cls` (an integer) or
    /// `.json` (a number, or its `"label"` or `"cls"` field): −1 without one; a label member
    /// that holds none fails its sample.
    Shards(Vec<ShardUrl>),
    /// WebDataset shards as a shard index lists them (webdataset's `wids` JSON, as `gpuprep
    /// index` writes it): the shards and the samples each holds are read from the index, so
    /// no shard is read before the epoch reads it. A shard that holds other than its count
    /// fails under the error policy when it is read.
    ShardIndex(ShardUrl),
}

impl Source {
    /// Shards at these local paths.
    pub fn local_shards(paths: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        Self::Shards(
            paths
                .into_iter()
                .map(|p| ShardUrl::Local(p.into()))
                .collect(),
        )
    }
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
    /// Remote shards: retries and timeouts.
    pub fetch: FetchOptions,
    /// Shards: each rank draws the shards it reads at random, with replacement, from all of
    /// them (webdataset's `resampled=True`), its epoch still the samples every rank reads
    /// ([`Loader::samples_per_epoch`]); there need not be a shard per rank.
    pub resampled: bool,
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
    HostBecause(HostReason),
}

/// Why a loader asked to hand batches over on the device hands them over in host arrays.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostReason {
    /// The loader runs on the CPU backend.
    CpuBackend,
    /// A tensor of this many bytes is not whole 4-byte words, as GPU copies need.
    UnalignedTensor(usize),
    /// The CUDA hand-off could not be set up.
    Handoff(crate::HandoffError),
    /// Exported GPU memory is implemented on Linux only.
    NotLinux,
}

impl std::fmt::Display for HostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CpuBackend => write!(f, "the loader runs on the CPU backend"),
            Self::UnalignedTensor(bytes) => write!(
                f,
                "a tensor of {bytes} bytes is not whole 4-byte words, as GPU copies need"
            ),
            Self::Handoff(why) => write!(f, "{why}"),
            Self::NotLinux => write!(f, "exported GPU memory is implemented on Linux only"),
        }
    }
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
            fetch: FetchOptions::default(),
            resampled: false,
            pin_memory: None,
            handoff: Handoff::Host,
            refill: false,
        }
    }

    /// `Ok` when the options fit together, else what does not.
    fn check(&self) -> Result<()> {
        let split = self.split;
        let refused = |why: String| Err(Error::Options(why));
        if self.batch_size == 0 || split.world_size == 0 || split.rank >= split.world_size {
            return refused(format!(
                "a loader needs batch_size >= 1 and rank < world_size, got batch_size {}, rank \
                 {}, world_size {}",
                self.batch_size, split.rank, split.world_size
            ));
        }
        if !(1..=MAX_PREFETCH).contains(&self.prefetch) {
            return refused(format!(
                "prefetch is the batches made ahead, 1 to {MAX_PREFETCH}, got {}",
                self.prefetch
            ));
        }
        if self.refill && !split.drop_last {
            return refused(
                "keeping every batch full (refill) is drop_last's promise: set drop_last".into(),
            );
        }
        if !(0.0..=1.0).contains(&self.wait_warning) {
            return refused(format!(
                "wait_warning is a share of a step, 0 to 1 (1: never warn), got {}",
                self.wait_warning
            ));
        }
        Ok(())
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

/// A loader over one dataset with one transform.
pub struct Loader {
    backend: Arc<Backend>,
    transform: Transform,
    limits: Limits,
    options: LoaderOptions,
    dataset: Arc<dyn Dataset>,
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
pub(super) struct Parked {
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
        options.check()?;
        let split = options.split;
        // A loader stacks its batches: one output size, each batch's array within bounds, and
        // the batches made ahead too.
        let shape = crate::backend::stacked_shape(transform, options.batch_size, limits)?;
        let batch_bytes = (shape.iter().product::<usize>() * transform.dtype.size()) as u64
            * options.batch_size as u64;
        let ahead = (options.prefetch + 2) as u64;
        let what = || format!("{ahead} batches of {batch_bytes} bytes (prefetch + 2)");
        crate::error::check_held(what, batch_bytes.saturating_mul(ahead))?;
        if options.resampled && !matches!(source, Source::Shards(_) | Source::ShardIndex(_)) {
            return Err(Error::Options(
                "resampled draws shards, and this source is not shards (a list of files or a \
                 folder is split sample by sample, each epoch a permutation)"
                    .into(),
            ));
        }
        let (dataset, classes): (Arc<dyn Dataset>, _) = match source {
            Source::Files(paths) => (Arc::new(Indexed(listed_files(&paths)?)), Vec::new()),
            Source::ImageFolder(root) => {
                let (items, classes) = dataset::image_folder(&root)?;
                (Arc::new(Indexed(items)), classes)
            }
            Source::Shards(urls) => {
                let shards = count_and_check(&urls, split, &options)?;
                (Arc::new(Shards(shards)), Vec::new())
            }
            Source::ShardIndex(index) => {
                let listed = shard_index::read(&index, &options.fetch)?;
                let shards = checked_shards(listed, split, &options)?;
                (Arc::new(Shards(shards)), Vec::new())
            }
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
            dataset,
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
        if self.options.resampled {
            return None;
        }
        let per_rank = self.samples_per_epoch();
        self.dataset.unread(self.options.split, per_rank)
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
        self.start_epoch(epoch, 0)
    }

    /// Epoch `epoch`'s batches from step `first_step` on: bit for bit the batches an epoch
    /// iterated from its start gives from there (a run resumed after `first_step` batches).
    /// The samples of the steps before are not decoded: a list of files or a folder skips them
    /// unread; of shards, those whose samples all came before are not read either (the order
    /// and the shuffle buffer replayed from the counts), and the rest are read up to there. An
    /// error past the epoch's end, and where batches are topped up ([`LoaderOptions::refill`]),
    /// whose batches mid-epoch depend on which samples failed before.
    pub fn epoch_from(&self, epoch: u64, first_step: usize) -> Result<Epoch> {
        if first_step > self.len() {
            return Err(Error::Options(format!(
                "step {first_step} is past the end of an epoch of {} batches",
                self.len()
            )));
        }
        if first_step > 0 && first_step < self.len() && self.options.refill {
            return Err(Error::Options(
                "an epoch whose batches are topped up with later samples (refill; Python's \
                 errors=\"skip\" with drop_last=True) cannot resume mid-epoch: each batch \
                 depends on which samples failed before it; resume at an epoch's start"
                    .into(),
            ));
        }
        Ok(self.start_epoch(epoch, first_step))
    }

    fn start_epoch(&self, epoch: u64, first_step: usize) -> Epoch {
        let on_gpu = matches!(*self.backend, Backend::Gpu(_));
        let (parked, then) = {
            let mut parked = lock(&self.parked);
            let then = u64::from(parked.last_asked != Some(epoch));
            parked.last_asked = Some(epoch);
            (parked.running.take(), then)
        };
        let running = match parked {
            Some(running) if running.epoch == epoch && first_step == 0 => {
                // The feeder may read the pass after this one now (its receiver is gone only
                // once it stopped).
                let _ = running.pass_taken.send(());
                running
            }
            other => {
                // Stopped (and its stream wound down) before the next one starts.
                drop(other);
                self.start(epoch, on_gpu.then_some(then), first_step)
            }
        };
        let park = on_gpu.then(|| Arc::clone(&self.parked));
        let refill = self.options.refill.then(|| self.len());
        Epoch::new(running, park, self.options, refill, first_step)
    }

    /// Workers reading and making `epoch`, then, where `then` is given, the epochs `then`
    /// apart after it, until they are stopped.
    fn start(&self, epoch: u64, then: Option<u64>, first_step: usize) -> Running {
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
            first_step,
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
                    let stream = stream::LoaderStream {
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
    let because = |why| Ok((None, HandedOver::HostBecause(why)));
    if handoff == Handoff::Host {
        return Ok((None, HandedOver::Host));
    }
    let Backend::Gpu(gpu) = backend else {
        if handoff == Handoff::Device {
            return Err(Error::Options(
                "handing batches over on the device needs the GPU backend".into(),
            ));
        }
        return because(HostReason::CpuBackend);
    };
    // Copies into a batch's slots go by whole words.
    if !slot_bytes.is_multiple_of(4) {
        return because(HostReason::UnalignedTensor(slot_bytes));
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
        Err(why) => because(HostReason::Handoff(why)),
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
        _ => HandedOver::HostBecause(HostReason::NotLinux),
    };
    Ok((None, handed))
}

/// A mutex's guard, also where a thread panicked holding it (what it guards stays whole).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
