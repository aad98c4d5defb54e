//! `gpuprep shard`: a dataset resized and re-encoded as Pillow would, into WebDataset shards.

use super::{backend, set_threads, stop_on_signals, BackendArg};
use gpuprep::convert::Job;
use gpuprep::encode::{JpegOptions, Subsampling};
use gpuprep::shard::{self, ShardInput, ShardOptions, ShardPattern};
use gpuprep::{Filter, Limits, Resize, Transform};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ShardArgs {
    /// Image files or folders. One folder holding class folders is read as torchvision's
    /// ImageFolder (each sample's class in KEY.cls); otherwise the images found, unlabelled.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The shards' paths: one %d or %0Nd, the shard's number (e.g. shards/train-%06d.tar).
    #[arg(long)]
    out: String,
    /// torchvision's Resize(N): the shorter side becomes N.
    #[arg(long)]
    resize: usize,
    /// Pillow's resampling filter.
    #[arg(long, value_enum, default_value_t = FilterName::Bilinear)]
    filter: FilterName,
    /// Decode with Pillow's draft() towards the resize target first (for inputs many times
    /// its size: faster, and what Pillow's draft gives, not what a full decode would).
    #[arg(long)]
    draft: bool,
    /// JPEG quality, 1 to 100 (Pillow's default 75).
    #[arg(long, default_value_t = 75, value_parser = clap::value_parser!(u8).range(1..=100))]
    quality: u8,
    /// Chroma subsampling, as Pillow's subsampling=; default Pillow's (4:2:0).
    #[arg(long, value_parser = ["4:4:4", "4:2:2", "4:2:0"])]
    subsampling: Option<String>,
    /// Huffman tables made for each image (Pillow's optimize=True).
    #[arg(long)]
    optimize: bool,
    /// A shard is closed once it holds this many samples (webdataset ShardWriter's maxcount).
    #[arg(long, default_value_t = 100_000)]
    shard_samples: usize,
    /// ... or this many bytes (ShardWriter's maxsize).
    #[arg(long, default_value_t = 3_000_000_000)]
    shard_size: u64,
    /// Also take the images in every folder below the folders given (unlabelled, unless
    /// --labels).
    #[arg(long, short)]
    recursive: bool,
    /// Also write the shards' index (webdataset's wids JSON, as `gpuprep index` writes it:
    /// each shard with its sample count) here, for a Loader to split them without reading them.
    #[arg(long)]
    index: Option<PathBuf>,
    /// Each image's class from this file: CSV rows `name,label` (TSV for .tsv) or a JSON object
    /// of "name": label; a name is the image's path below the folder given, or its file name;
    /// labels are class indices or class names (numbered in sorted order). Every image needs
    /// one.
    #[arg(long)]
    labels: Option<PathBuf>,
    /// Where the pixel stages run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Where the encoder's forward stages (colour, downsampling, DCT, quantisation) run on a
    /// GPU backend: on CPU threads, or on the GPU (the same bytes; the images go to the GPU
    /// and their coefficients come back, which its first measurement found slower).
    #[arg(long, value_parser = ["cpu", "gpu"], default_value = "cpu")]
    forward_stages: String,
    /// The GPU adapter: its number or a part of its name, or cuda:N.
    #[arg(long)]
    adapter: Option<String>,
    /// Threads that read and encode (default: the process's share of the cores).
    #[arg(long)]
    threads: Option<usize>,
    /// No notes, no progress line.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum FilterName {
    Nearest,
    Bilinear,
    Bicubic,
    Lanczos,
    Box,
    Hamming,
}

pub fn run(args: ShardArgs) -> ExitCode {
    if let Err(code) = set_threads(args.threads) {
        return code;
    }
    match shard_job(&args) {
        Ok(code) => code,
        // The complete shards stay, and a run again writes the rest; 130 as for SIGINT.
        Err(gpuprep::Error::Interrupted) => {
            err!("interrupted: the complete shards are kept; run again to write the rest");
            ExitCode::from(130)
        }
        Err(e) => {
            err!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn shard_job(args: &ShardArgs) -> gpuprep::Result<ExitCode> {
    let options = ShardOptions {
        pattern: ShardPattern::parse(&args.out)?,
        jpeg: JpegOptions {
            quality: args.quality,
            subsampling: args.subsampling.as_deref().map(|s| match s {
                "4:4:4" => Subsampling::Full,
                "4:2:2" => Subsampling::Half,
                _ => Subsampling::Quarter,
            }),
            optimize: args.optimize,
        },
        max_samples: args.shard_samples,
        max_bytes: args.shard_size,
        forward_on_gpu: args.forward_stages == "gpu",
    };
    let inputs = inputs(args)?;
    if let Some(index) = &args.index {
        check_index_path(index, &options.pattern, &inputs)?;
    }
    let backend = backend(args.backend, args.adapter.as_deref(), args.quiet)?;
    let line = super::progress::Line::on_terminal(args.quiet);
    let report = |done: usize, total: usize| {
        if let Some(line) = &line {
            line.report(done, total);
        }
    };
    let job = Job {
        transform: Transform {
            resize: Some(Resize::ShorterSide(args.resize)),
            filter: filter(args.filter),
            draft: args.draft,
            ..Transform::default()
        },
        limits: Limits::default(),
        backend: &backend,
        progress: line
            .as_ref()
            .map(|_| &report as &(dyn Fn(usize, usize) + Sync)),
        stop: Some(stop_on_signals()),
    };
    let done = shard::write_shards(&inputs, &options, &job);
    if let Some(line) = &line {
        line.finish();
    }
    let done = done?;
    // Printed whether or not stdout is still read (`| head`): the exit code says 1 either way.
    let mut printed = true;
    for (sample, source, error) in &done.failed {
        let source = source.to_string_lossy();
        let line = serde_json::json!({"what": "failed", "sample": sample, "source": source, "error": error});
        printed &= super::output::try_line(format_args!("{line}"));
    }
    // An index of no shard would be refused by every loader: none is written.
    if let Some(index) = args
        .index
        .as_ref()
        .filter(|_| done.kept + done.written.len() > 0)
    {
        let shards: Vec<gpuprep::loader::ShardUrl> = (0..done.kept + done.written.len())
            .map(|n| gpuprep::loader::ShardUrl::Local(options.pattern.path(n)))
            .collect();
        let fetch = gpuprep::loader::FetchOptions::default();
        gpuprep::loader::shard_index::save(index, &shards, &fetch)?;
    }
    let written: Vec<_> = done.written.iter().map(|p| p.to_string_lossy()).collect();
    let t = &done.times;
    let seconds = serde_json::json!({
        "reading": t.reading.as_secs_f64(), "decoding": t.decoding.as_secs_f64(),
        "forward": t.forward.as_secs_f64(), "encoding": t.encoding.as_secs_f64(),
        "writing": t.writing.as_secs_f64(), "waiting": t.waiting.as_secs_f64(),
    });
    let s = &t.stream;
    let stream = serde_json::json!({
        "preparing": s.preparing.as_secs_f64(), "starved": s.starved.as_secs_f64(),
        "submitting": s.submitting.as_secs_f64(), "executing": s.executing.as_secs_f64(),
        "reading_back": s.reading_back.as_secs_f64(),
    });
    let line = serde_json::json!({
        "what": "shards", "written": written, "kept": done.kept, "samples": done.samples,
        "failed": done.failed.len(), "backend": backend.describe(), "seconds": seconds,
        "stream_seconds": stream,
        "encoding_threads": t.encoding_threads, "elapsed": done.elapsed.as_secs_f64(),
        "samples_per_second": done.samples as f64 / done.elapsed.as_secs_f64().max(1e-9),
    });
    printed &= super::output::try_line(format_args!("{line}"));
    if !printed {
        err!(
            "stdout was closed: {} inputs failed and are not all listed there",
            done.failed.len()
        );
    }
    Ok(if done.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The samples: labelled by `--labels`, an ImageFolder tree's, or the images found.
/// Refuses an index path that would overwrite one of the job's shards or inputs.
fn check_index_path(
    index: &std::path::Path,
    pattern: &ShardPattern,
    inputs: &[ShardInput],
) -> gpuprep::Result<()> {
    let refused = |what: &str| {
        Err(gpuprep::Error::Options(format!(
            "--index {}: that is {what}; the index goes beside the shards (e.g. shards/train.json)",
            index.display()
        )))
    };
    if pattern.matches(index) {
        return refused("where one of the shards goes");
    }
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a == b
            || a.canonicalize()
                .ok()
                .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    if inputs.iter().any(|input| same(&input.path, index)) {
        return refused("one of the inputs");
    }
    Ok(())
}

fn inputs(args: &ShardArgs) -> gpuprep::Result<Vec<ShardInput>> {
    if let Some(missing) = args.inputs.iter().find(|path| !path.exists()) {
        return Err(gpuprep::Error::Options(format!(
            "{}: no such file or folder",
            missing.display()
        )));
    }
    if let Some(labels) = &args.labels {
        let found = super::find_inputs(&args.inputs, args.recursive, args.quiet)?;
        return shard::labelled_inputs(found, labels);
    }
    if let [root] = args.inputs.as_slice() {
        let has_classes = std::fs::read_dir(root)
            .map(|entries| entries.flatten().any(|e| e.path().is_dir()))
            .unwrap_or(false);
        if has_classes && !args.recursive {
            let inputs = shard::image_folder_inputs(root)?;
            if !args.quiet {
                let classes: std::collections::BTreeSet<i64> =
                    inputs.iter().map(|i| i.label).collect();
                let every = gpuprep::convert::find_inputs(std::slice::from_ref(root), true)
                    .map_or(0, |found| found.len());
                if every > inputs.len() {
                    let extensions = gpuprep::loader::dataset::IMAGE_FOLDER_EXTENSIONS;
                    err!(
                        "{}: {} images there are not taken: ImageFolder takes only its class \
                         folders' files of torchvision's extensions ({})",
                        root.display(),
                        every - inputs.len(),
                        extensions.join(" ")
                    );
                }
                err!(
                    "{}: read as an ImageFolder tree, {} classes (its folders; images beside \
                     them are not taken; --recursive takes every image, unlabelled, and \
                     --labels FILE labels them)",
                    root.display(),
                    classes.len()
                );
            }
            return Ok(inputs);
        }
    }
    let found = super::find_inputs(&args.inputs, args.recursive, args.quiet)?;
    Ok(shard::unlabelled_inputs(found))
}

fn filter(name: FilterName) -> Filter {
    match name {
        FilterName::Nearest => Filter::Nearest,
        FilterName::Bilinear => Filter::Bilinear,
        FilterName::Bicubic => Filter::Bicubic,
        FilterName::Lanczos => Filter::Lanczos,
        FilterName::Box => Filter::Box,
        FilterName::Hamming => Filter::Hamming,
    }
}
