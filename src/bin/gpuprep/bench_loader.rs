//! `gpuprep bench --loader`: throughput of the training loader, epoch by epoch, as a training
//! loop that does nothing else would see it (files read from disk, or WebDataset shards from
//! disk, URLs or object stores; batches stacked and read back into CPU memory, or with
//! `--keep-on-gpu` stacked in buffers of the GPU).

use super::{ms, BenchArgs};
use gpuprep::loader::order::Split;
use gpuprep::loader::{EpochStats, Handoff, Loader, LoaderOptions, ShardUrl, Source, StreamWaited};
use gpuprep::Backend;
use serde_json::json;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One epoch: when it began and ended, images handed over, and each step's stats.
struct EpochRun {
    span: (Instant, Instant),
    images: usize,
    failed: usize,
    prepared: Vec<Duration>,
    waited: Duration,
    /// The epoch's stats at its end: what the GPU stream waited for, its submissions.
    stats: EpochStats,
}

/// The loader's source: WebDataset shards where every input names shards (a `.tar`, a URL,
/// `pipe:`, patterns as webdataset writes them), their index (one `.json`: `gpuprep index`), else
/// the image files found.
pub fn source(
    inputs: &[std::path::PathBuf],
    recursive: bool,
    quiet: bool,
) -> gpuprep::Result<Source> {
    let names: Vec<String> = inputs
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let [index] = names.as_slice() {
        if index.to_ascii_lowercase().ends_with(".json") {
            return Ok(Source::ShardIndex(ShardUrl::parse(index)?));
        }
    }
    let shards = |name: &String| -> bool {
        ShardUrl::expand(name).is_ok_and(|urls| {
            urls.iter().all(|u| match u {
                ShardUrl::Local(path) => path.extension().is_some_and(|e| e == "tar"),
                _ => true,
            })
        })
    };
    if names.iter().all(shards) {
        let mut urls = Vec::new();
        for name in &names {
            urls.extend(ShardUrl::expand(name)?);
        }
        return Ok(Source::Shards(urls));
    }
    let files = super::find_inputs(inputs, recursive, quiet)?;
    Ok(Source::Files(files.into_iter().map(|f| f.path).collect()))
}

pub fn run(args: &BenchArgs, backend: Backend, source: Source) -> ExitCode {
    let transform = args.transform.transform();
    let options = LoaderOptions {
        split: Split {
            shuffle: true,
            seed: transform.seed,
            rank: 0,
            world_size: 1,
            drop_last: false,
        },
        prefetch: args.prefetch,
        handoff: if args.keep_on_gpu {
            Handoff::Device
        } else {
            Handoff::Host
        },
        ..LoaderOptions::new(args.batch)
    };
    let describe = backend.describe();
    let limits = args.limits.limits();
    // Batches kept on the GPU are timed until the device has run their copies too.
    let device = match &backend {
        Backend::Gpu(gpu) if args.keep_on_gpu => Some(gpu.gpu.device.clone()),
        _ => None,
    };
    // Made: the shards counted (each read through) or their index read.
    let making = std::time::Instant::now();
    let loader = match Loader::new(source, &transform, backend, &limits, options) {
        Ok(loader) => loader,
        Err(e) => {
            err!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let made_ms = making.elapsed().as_secs_f64() * 1e3;
    let epochs: Vec<EpochRun> = (0..args.repeat.max(1) as u64)
        .map(|epoch| timed_epoch(&loader, transform.epoch + epoch, device.as_ref()))
        .collect();
    // On the GPU the loader's stream runs on into the next epoch while one ends, so a single
    // epoch's rate may hold work done in the one before: the steady rate runs from the second
    // epoch's start to the last one's end.
    let steady = epochs.get(1..).filter(|e| !e.is_empty()).map(|later| {
        let images: usize = later.iter().map(|e| e.images).sum();
        let span = later[later.len() - 1].span.1 - later[0].span.0;
        images as f64 / span.as_secs_f64().max(1e-9)
    });
    let mut rates: Vec<f64> = epochs
        .iter()
        .map(|e| e.images as f64 / e.seconds())
        .collect();
    rates.sort_by(f64::total_cmp);
    let best = epochs
        .iter()
        .min_by(|a, b| a.seconds().total_cmp(&b.seconds()))
        .expect("at least one epoch");
    // What the stream did, for a mean epoch: its work runs on from one epoch into the next, so
    // the best epoch alone may show none of it.
    let mean = MeanEpoch::of(&epochs);
    let stream = mean.waited;
    let mut prepared: Vec<f64> = best.prepared.iter().map(|d| ms(*d)).collect();
    prepared.sort_by(f64::total_cmp);
    let line = json!({
        "what": "loader", "backend": describe, "images": loader.samples_per_epoch(), "ok": best.images,
        "failed": best.failed, "batch": args.batch, "prefetch": args.prefetch,
        "threads": rayon::current_num_threads(), "tensors": loader.handed_over().to_string(),
        "img_s": rates[rates.len() - 1], "img_s_median": rates[rates.len() / 2],
        "img_s_steady": steady, "made_ms": made_ms,
        "epochs": epochs.len(), "steps": best.prepared.len(),
        "prepare_p50_ms": prepared.get(prepared.len() / 2).copied().unwrap_or(0.0),
        "consumer_waited_ms": ms(best.waited), "wall_ms": best.seconds() * 1e3,
        "stream_waited_ms": stream
            .iter()
            .map(|(what, time)| (what.name().to_string(), ms(time).into()))
            .collect::<serde_json::Map<_, _>>(),
        "submissions": mean.submissions, "packing_ms": ms(mean.packing),
        "landing_ms": ms(mean.landing),
        "memory": (!args.keep_on_gpu).then(|| loader.memory().to_string()), "batch_arrays_made": loader.arrays_made(),
    });
    out!("{line}");
    if best.failed > 0 {
        err!(
            "error: {} of {} images failed (img_s counts only the images that converted)",
            best.failed,
            loader.samples_per_epoch()
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// Takes every batch of `epoch` as it comes, doing nothing with it; the epoch ends once
/// `device` (where the batches are kept on it) has run all its work.
fn timed_epoch(loader: &Loader, epoch: u64, device: Option<&gpuprep::wgpu::Device>) -> EpochRun {
    let start = Instant::now();
    let mut batches = loader.epoch(epoch);
    let mut run = EpochRun {
        span: (start, start),
        images: 0,
        failed: 0,
        prepared: Vec::new(),
        waited: Duration::ZERO,
        stats: batches.stats(),
    };
    for batch in batches.by_ref() {
        match batch {
            Ok(batch) => {
                run.images += batch.indices.len();
                run.failed += batch.failed.len();
                run.prepared.push(batch.stats.prepared);
                run.waited += batch.stats.waited;
            }
            // A step that failed as a whole (its images are not counted): the run fails.
            Err(e) => {
                err!("error: {e}");
                run.failed = run.failed.max(1);
            }
        }
    }
    if let Some(device) = device {
        if let Err(e) = device.poll(gpuprep::wgpu::PollType::wait_indefinitely()) {
            err!("error: {e}");
            run.failed = run.failed.max(1);
        }
    }
    run.span = (start, Instant::now());
    run.stats = batches.stats();
    run
}

impl EpochRun {
    /// Its wall time.
    fn seconds(&self) -> f64 {
        (self.span.1 - self.span.0).as_secs_f64()
    }
}

/// The stream's figures of a mean epoch: what each epoch's stats counted, summed and divided by
/// the epochs (each epoch counts from the end of the one before, so the sum is the whole run).
struct MeanEpoch {
    waited: gpuprep::loader::StreamWaited,
    submissions: f64,
    packing: Duration,
    landing: Duration,
}

impl MeanEpoch {
    fn of(epochs: &[EpochRun]) -> Self {
        let n = epochs.len().max(1) as u32;
        let mean = |f: &dyn Fn(&EpochStats) -> Duration| -> Duration {
            epochs.iter().map(|e| f(&e.stats)).sum::<Duration>() / n
        };
        Self {
            waited: StreamWaited::from_fn(|what| mean(&|s| s.stream[what])),
            submissions: epochs.iter().map(|e| e.stats.submissions).sum::<usize>() as f64
                / f64::from(n),
            packing: mean(&|s| s.packing),
            landing: mean(&|s| s.landing),
        }
    }
}
