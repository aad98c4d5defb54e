//! `gpuprep bench`: throughput of the pipeline on files held in memory, as JSON lines.

use super::{backend, ms, summarise, BenchArgs};
use gpuprep::convert::{self, Destination, Job};
use gpuprep::gpu::{BatchStats, StreamOptions};
use gpuprep::{Backend, Limits, Transform};
use rayon::prelude::*;
use serde_json::json;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One timed pass: its wall time, per-batch stats, how many images succeeded, and the first
/// failure (the input's index and the error).
struct Pass {
    seconds: f64,
    batches: Vec<BatchStats>,
    ok: usize,
    first_failure: Option<(usize, gpuprep::Error)>,
}

pub fn run(args: BenchArgs) -> ExitCode {
    if let Err(code) = super::set_threads(args.threads) {
        return code;
    }
    if let (Some(note), false) = (args.transform.notes(), args.quiet) {
        err!("{note}");
    }
    let backend = match backend(args.backend, args.adapter.as_deref(), args.quiet) {
        Ok(Backend::Cpu) if args.keep_on_gpu => {
            err!("error: --keep-on-gpu needs the GPU backend");
            return ExitCode::from(2);
        }
        Ok(Backend::Gpu(mut gpu)) if args.time_stages => {
            gpu.pipeline =
                gpuprep::gpu::GpuPipeline::new(&gpu.gpu.device, &gpu.gpu.queue).timing_stages();
            Backend::Gpu(gpu)
        }
        Ok(b) => b.with_batching(args.limits.batching(args.batch)),
        Err(e) => {
            err!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if args.loader {
        let source = match super::bench_loader::source(&args.inputs, args.recursive, args.quiet) {
            Ok(source) => source,
            Err(e) => {
                err!("error: {e}");
                return ExitCode::from(2);
            }
        };
        return super::bench_loader::run(&args, backend, source);
    }
    let files = match super::find_inputs(&args.inputs, args.recursive, args.quiet) {
        Ok(files) => files,
        Err(e) => {
            err!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let data: Vec<Vec<u8>> = match files.iter().map(|f| std::fs::read(&f.path)).collect() {
        Ok(data) => data,
        Err(e) => {
            err!("error: reading the inputs: {e}");
            return ExitCode::from(2);
        }
    };
    let images: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let transform = args.transform.transform();
    if let Err(e) = transform.validate() {
        err!("error: {e}");
        return ExitCode::from(2);
    }
    let limits = args.limits.limits();
    let options = StreamOptions {
        transform: &transform,
        limits: &limits,
        batching: args.limits.batching(args.batch),
        samples: gpuprep::Samples::Positions,
    };
    let megabytes = images.iter().map(|b| b.len()).sum::<usize>() as f64 / 1e6;
    let n = images.len() as f64;
    let threads = rayon::current_num_threads();

    let entropy = (0..args.repeat.max(1))
        .map(|_| {
            let start = Instant::now();
            images.par_iter().for_each(|bytes| {
                let _ = gpuprep::jpeg::decode_coefficients(bytes, &limits);
            });
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    // Terminals see how far the timed passes are; logs and pipes (the JSON) do not.
    let line = crate::progress::Line::on_terminal(args.quiet);
    let repeat = args.repeat.max(1);
    let mut passes: Vec<Pass> = (0..repeat)
        .map(|r| {
            let pass = timed_pass(&backend, &images, &options, args.keep_on_gpu);
            if let Some(line) = &line {
                line.report((r + 1) * images.len(), repeat * images.len());
            }
            pass
        })
        .collect();
    // Throughput counts the images that converted, in the best pass and in the median one.
    passes.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let median_img_s = passes[passes.len() / 2].ok as f64 / passes[passes.len() / 2].seconds;
    let failure = passes.iter().find_map(|p| p.first_failure.clone());
    let failed_most = passes
        .iter()
        .map(|p| images.len() - p.ok)
        .max()
        .unwrap_or(0);
    let pass = passes.swap_remove(0);
    if let Some(line) = &line {
        line.finish();
    }

    let mut latencies: Vec<f64> = pass.batches.iter().map(|b| ms(b.latency)).collect();
    latencies.sort_by(f64::total_cmp);
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let total =
        |f: fn(&BatchStats) -> Duration| -> f64 { pass.batches.iter().map(|b| ms(f(b))).sum() };
    let uploaded: u64 = pass.batches.iter().map(|b| b.bytes_uploaded).sum();
    let dense: u64 = pass.batches.iter().map(|b| b.dense_coefficient_bytes).sum();
    let pixel_images: usize = pass.batches.iter().map(|b| b.pixel_images).sum();
    let lines = [
        json!({
            "what": "pipeline", "backend": backend.describe(), "images": images.len(),
            "ok": pass.ok, "failed": images.len() - pass.ok, "threads": threads, "batch": args.batch,
            "tensors": if args.keep_on_gpu { "kept on the GPU" } else { "read back to the CPU" },
            // Non-JPEG inputs, uploaded as pixels: the slower path (GPU backend only).
            "pixel_path_images": pixel_images,
            "img_s": pass.ok as f64 / pass.seconds, "img_s_median": median_img_s,
            "passes": repeat, "mb_s": megabytes / pass.seconds,
            "p50_ms": percentile(0.5), "p95_ms": percentile(0.95),
        }),
        json!({
            "what": "stages", "batches": pass.batches.len(),
            // Batches that waited for the GPU go to it several to a submission.
            "submissions": pass.batches.iter().map(|b| 1.0 / b.submitted_with.max(1) as f64).sum::<f64>().round(),
            "decode_cpu_ms": total(|b| b.decode), "gpu_ms": total(|b| b.gpu),
            "gpu_waited_for_decode_ms": total(|b| b.waited), "wall_ms": pass.seconds * 1e3,
            // With --keep-on-gpu: how long the consumer of the batches waited for them.
            "consumer_waited_ms": total(|b| b.consumer_waited),
            // Images whose Huffman data the GPU decoded (stage 0), and of them those it gave up
            // on, redone from the CPU decoder.
            "huffman_on_gpu_images": pass.batches.iter().map(|b| b.gpu_timings.huffman_on_gpu).sum::<usize>(),
            "redone_on_cpu_images": pass.batches.iter().map(|b| b.gpu_timings.redone_on_cpu).sum::<usize>(),
        }),
        gpu_phases(&pass.batches),
        json!({
            "what": "upload", "bytes_per_image": uploaded as f64 / n,
            "dense_i16_coefficient_bytes_per_image": dense as f64 / n,
            "share_of_dense": if dense > 0 { uploaded as f64 / dense as f64 } else { 0.0 },
        }),
        json!({
            "what": "entropy_only", "threads": threads,
            "img_s": n / entropy, "mb_s": megabytes / entropy,
        }),
    ];
    for line in lines {
        out!("{line}");
    }
    // The best pass's batches through the GPU's streaming loader, one line each: where its
    // time went.
    for batch in pass.batches.iter().filter(|b| !b.landed_at.is_zero()) {
        let line = json!({
            "what": "batch", "images": batch.images, "bytes_in": batch.bytes_in,
            "bytes_uploaded": batch.bytes_uploaded, "decode_cpu_ms": ms(batch.decode),
            "gpu_ms": ms(batch.gpu), "waited_ms": ms(batch.waited),
            "consumer_waited_ms": ms(batch.consumer_waited), "gathered_at_ms": ms(batch.gathered_at),
            "submitted_at_ms": ms(batch.submitted_at), "landed_at_ms": ms(batch.landed_at),
            "submitted_with": batch.submitted_with,
        });
        out!("{line}");
    }
    let written = match args.out {
        Some(out) => write_outputs(&files, out, transform, limits, &backend, args.quiet),
        None => ExitCode::SUCCESS,
    };
    if let Some((index, e)) = failure {
        // A throughput figure over failed images would mislead: say so, and fail.
        err!(
            "error: up to {failed_most} of {} images failed in a timed pass (img_s counts only \
             the images that converted); the first: {}: {e}",
            images.len(),
            files[index].path.display()
        );
        return ExitCode::from(1);
    }
    written
}

/// The GPU side's phases summed over the batches (and its stages, when timed one by one).
fn gpu_phases(batches: &[BatchStats]) -> serde_json::Value {
    let sum =
        |f: &dyn Fn(&BatchStats) -> Duration| -> f64 { batches.iter().map(|b| ms(f(b))).sum() };
    let mut line = json!({
        "what": "gpu_phases",
        "pack_ms": sum(&|b| b.gpu_timings.pack),
        "record_upload_ms": sum(&|b| b.gpu_timings.record),
        "of_which_upload_ms": sum(&|b| b.gpu_timings.upload),
        "execute_ms": sum(&|b| b.gpu_timings.execute),
        "read_back_ms": sum(&|b| b.gpu_timings.read_back),
    });
    // Of batches that went to the GPU together, the first carries the submission's timings.
    let timed: Vec<&BatchStats> = batches
        .iter()
        .filter(|b| !b.gpu_timings.stages.is_empty())
        .collect();
    if !timed.is_empty() {
        let gpu_clock = timed.iter().all(|b| b.gpu_timings.stages_on_gpu_clock);
        line["stage_clock"] = if gpu_clock { "gpu" } else { "wall" }.into();
    }
    for batch in batches {
        for (stage, time) in &batch.gpu_timings.stages {
            let key = format!("stage_{stage}_ms");
            let total = line[&key].as_f64().unwrap_or(0.0) + ms(*time);
            line[key] = total.into();
        }
    }
    line
}

/// One pass over every image, `batch` at a time; with `keep_on_gpu`, the tensors stay there.
fn timed_pass(
    backend: &Backend,
    images: &[&[u8]],
    options: &StreamOptions,
    keep_on_gpu: bool,
) -> Pass {
    let StreamOptions {
        transform,
        limits,
        batching,
        samples,
    } = *options;
    let batch = batching.images;
    let start = Instant::now();
    let mut first_failure = None;
    let mut failed = |index: usize, e: &gpuprep::Error| {
        if first_failure.as_ref().is_none_or(|(i, _)| index < *i) {
            first_failure = Some((index, e.clone()));
        }
    };
    let (batches, ok) = match backend {
        Backend::Gpu(gpu) if keep_on_gpu => {
            let mut ok = 0;
            let batches = gpu.pipeline.preprocess_on_device(images, options, |batch| {
                ok += batch.tensors.len();
                for (index, e) in &batch.failed {
                    failed(*index, e);
                }
            });
            (batches, ok)
        }
        Backend::Gpu(gpu) => {
            let streamed = gpu.pipeline.preprocess_many(images, options);
            for (index, result) in streamed.results.iter().enumerate() {
                if let Err(e) = result {
                    failed(index, e);
                }
            }
            let ok = streamed.results.iter().filter(|r| r.is_ok()).count();
            (streamed.batches, ok)
        }
        Backend::Cpu => {
            let mut ok = 0;
            let batches = images
                .chunks(batch.max(1))
                .enumerate()
                .map(|(k, chunk)| {
                    let started = Instant::now();
                    let first = k * batch.max(1);
                    let results: Vec<_> = chunk
                        .par_iter()
                        .enumerate()
                        .map(|(i, bytes)| {
                            let sample = samples.of(first + i);
                            Backend::Cpu.preprocess_sample(bytes, transform, &sample, limits)
                        })
                        .collect();
                    for (i, result) in results.iter().enumerate() {
                        match result {
                            Ok(_) => ok += 1,
                            Err(e) => failed(k * batch.max(1) + i, e),
                        }
                    }
                    BatchStats {
                        images: chunk.len(),
                        bytes_in: chunk.iter().map(|b| b.len() as u64).sum(),
                        decode: started.elapsed(),
                        latency: started.elapsed(),
                        ..BatchStats::default()
                    }
                })
                .collect();
            (batches, ok)
        }
    };
    Pass {
        seconds: start.elapsed().as_secs_f64(),
        batches,
        ok,
        first_failure,
    }
}

/// `convert` into `out`, untimed.
fn write_outputs(
    files: &[convert::Input],
    out: std::path::PathBuf,
    transform: Transform,
    limits: Limits,
    backend: &Backend,
    quiet: bool,
) -> ExitCode {
    let destination = Destination::from_path(out);
    let job = Job {
        transform,
        limits,
        backend,
        progress: None,
        stop: None,
    };
    match convert::convert(files, &destination, &job) {
        Ok(reports) => summarise(&reports, &destination, backend, quiet),
        Err(e) => super::job_failed(&e),
    }
}
