//! The gpuprep command line.

#[macro_use]
mod output;
mod advice;
mod args;
mod bench;
mod bench_loader;
mod parity;
mod picture;
mod pillow;
mod progress;
mod shard;
mod values;

use clap::{Parser, Subcommand, ValueEnum};
use gpuprep::convert::{self, Destination, Job};
use gpuprep::loader::{shard_index, ShardUrl};
use gpuprep::{Backend, Error};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Encoded images to model-ready arrays, bit-identical to Pillow + torchvision.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode (and transform) images to `.npy` arrays plus a JSON report. Without transform
    /// options each array is uint8 H×W×3, equal to `np.asarray(Image.open(f).convert('RGB'))`.
    Convert(ConvertArgs),
    /// Time the pipeline on files held in memory and print JSON lines: throughput and batch
    /// latency, the stage breakdown, upload sizes, and entropy decoding alone on the same
    /// threads (the ceiling). With --out, also convert the files as `convert` does.
    Bench(BenchArgs),
    /// Run the GPU pipeline and the CPU reference (and with --pillow, Pillow + torchvision) on
    /// the same images and report how far apart they are: per channel, the worst files, the
    /// files one side refuses; with --diff-dir, PNG heat maps and a histogram. Exit code 0 when
    /// every comparison is identical, 1 when anything differs.
    Parity(parity::ParityArgs),
    /// List the GPU adapters wgpu finds, with the limits gpuprep uses and whether a device
    /// opens on each, then what --backend auto would use.
    Info(InfoArgs),
    /// Count the samples of WebDataset shards and write their index (webdataset's wids JSON:
    /// each shard's address and sample count). A loader given the index splits the shards from
    /// it instead of reading every shard through as it starts.
    Index(IndexArgs),
    /// Resize a dataset's images (torchvision's Resize(N), Pillow's arithmetic) and write them
    /// as JPEGs byte for byte as Pillow's save() would, into WebDataset tar shards: KEY.jpg,
    /// KEY.cls (an ImageFolder's class) and KEY.json (source, original size, settings), KEY the
    /// sample's number. Shards are written whole under temporary names; run again, the job
    /// keeps the complete shards and writes the rest. Prints the inputs that failed and a
    /// summary as JSON lines; exit code 1 when any input failed.
    Shard(shard::ShardArgs),
}

#[derive(clap::Args)]
struct IndexArgs {
    /// Shards as a loader takes them: paths, file:, http(s)://, s3://, gs:// or pipe:
    /// addresses, brace patterns (train-{000000..000127}.tar) and `::` lists.
    #[arg(required = true)]
    shards: Vec<String>,
    /// The index file, written whole or not at all; shards in its folder or below it are
    /// listed relative to it, so the folder can be moved or served with it.
    #[arg(long, short)]
    out: PathBuf,
}

#[derive(clap::Args)]
struct InfoArgs {
    /// The adapter --backend auto is asked about: its number, a part of its name, or cuda:N.
    #[arg(long)]
    adapter: Option<String>,
}

#[derive(clap::Args)]
struct ConvertArgs {
    #[arg(required = true, help = inputs_help())]
    inputs: Vec<PathBuf>,
    /// Also take the images in every folder below the directories given (an ImageFolder tree:
    /// sorted path order; each output mirrors its path below the directory).
    #[arg(long, short)]
    recursive: bool,
    /// A directory (`<file name>.npy` per input and report.json), or a FILE.npy that gets one
    /// stacked (N, …) array of the images that converted, and FILE.report.json.
    #[arg(long)]
    out: PathBuf,
    /// Where the pixel stages run: a GPU when one is found (auto), or as chosen.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// The GPU adapter to use: its number or a part of its name, as `gpuprep info` lists them,
    /// or cuda:N for the GPU that CUDA calls device N (default: the WGPU_ADAPTER_NAME variable,
    /// else the high-performance one).
    #[arg(long)]
    adapter: Option<String>,
    #[command(flatten)]
    limits: args::LimitArgs,
    /// CPU threads for decoding (default: all cores, or their share where torchrun's
    /// LOCAL_WORLD_SIZE says several ranks share the machine; RAYON_NUM_THREADS overrides).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    threads: Option<usize>,
    /// Print only errors: no progress line, no notes, no summary.
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    transform: args::TransformArgs,
}

#[derive(clap::Args)]
struct BenchArgs {
    #[arg(required = true, help = inputs_help())]
    inputs: Vec<PathBuf>,
    /// Also take the images in every folder below the directories given (an ImageFolder tree:
    /// sorted path order; each output mirrors its path below the directory).
    #[arg(long, short)]
    recursive: bool,
    /// Also write the outputs, as `convert --out` does (not timed).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the pixel stages run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// The GPU adapter to use: its number or a part of its name, as `gpuprep info` lists them,
    /// or cuda:N for the GPU that CUDA calls device N (default: the WGPU_ADAPTER_NAME variable,
    /// else the high-performance one).
    #[arg(long)]
    adapter: Option<String>,
    /// Images per batch (at least 1).
    #[arg(long, default_value_t = gpuprep::gpu::DEFAULT_BATCH,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    batch: usize,
    /// CPU threads for decoding (default: all cores, or their share where torchrun's
    /// LOCAL_WORLD_SIZE says several ranks share the machine; RAYON_NUM_THREADS overrides).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    threads: Option<usize>,
    /// Timed passes over the files (at least 1); the best and the median are reported.
    #[arg(long, default_value_t = 3,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    repeat: usize,
    /// Print only the JSON lines and errors: no progress line, no notes, no summary.
    #[arg(long, short)]
    quiet: bool,
    /// Submit and wait for each GPU stage on its own, to report what each costs (slower).
    #[arg(long)]
    time_stages: bool,
    /// Leave the tensors on the GPU, as a model on the same device takes them, instead of
    /// reading them back into CPU memory (GPU backend only). The timed span still ends when the
    /// GPU has finished every batch.
    #[arg(long)]
    keep_on_gpu: bool,
    /// Time the training loader instead: each pass an epoch of the inputs read from their
    /// files, or of WebDataset shards where every input names shards (.tar files, http(s)://,
    /// s3://, gs:// or pipe: sources, brace patterns and :: lists as webdataset writes them, or
    /// their index: one .json that `gpuprep index` wrote),
    /// shuffled (--seed, the pass its epoch), in batches of --batch stacked and read back into
    /// CPU memory, as a training loop gets them (with --keep-on-gpu: stacked in buffers of the
    /// GPU, as a consumer on the same device gets them). Needs one output size.
    #[arg(long, conflicts_with_all = ["time_stages", "out"])]
    loader: bool,
    /// With --loader: batches prepared at once ahead of the consumer.
    #[arg(long, default_value_t = 2, requires = "loader",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    prefetch: usize,
    #[command(flatten)]
    limits: args::LimitArgs,
    #[command(flatten)]
    transform: args::TransformArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// The GPU when a hardware adapter exists, else the CPU (said on stderr; a software
    /// adapter such as lavapipe is slower than the CPU backend).
    Auto,
    /// WGSL compute shaders through wgpu; fails when no adapter exists.
    Gpu,
    /// The CPU reference implementation.
    Cpu,
}

fn main() -> ExitCode {
    quiet_headless_device_select();
    match Cli::parse().command {
        Command::Convert(args) => run(args),
        Command::Bench(args) => bench::run(args),
        Command::Parity(args) => parity::run(args),
        Command::Info(args) => info(args),
        Command::Index(args) => index(args),
        Command::Shard(args) => shard::run(args),
    }
}

/// On a machine without a display, Mesa's device-select Vulkan layer (which orders GPUs by the
/// display's) has nothing to consult, yet prints "XDG_RUNTIME_DIR is invalid" trying Wayland:
/// disabled there (`NODEVICE_SELECT`, its own switch), unless a device is chosen through it. Set
/// first thing, while the process has one thread.
fn quiet_headless_device_select() {
    let unset = |name| std::env::var_os(name).is_none();
    if unset("XDG_RUNTIME_DIR")
        && unset("WAYLAND_DISPLAY")
        && unset("DISPLAY")
        && unset("MESA_VK_DEVICE_SELECT")
        && unset("NODEVICE_SELECT")
    {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}

fn backend(arg: BackendArg, adapter: Option<&str>, quiet: bool) -> gpuprep::Result<Backend> {
    match arg {
        BackendArg::Cpu => Ok(Backend::Cpu),
        BackendArg::Gpu => Backend::gpu_on(adapter),
        BackendArg::Auto => {
            let (backend, why) = Backend::auto(adapter);
            if let (Some(why), false) = (why, quiet) {
                err!("note: {why}");
            }
            Ok(backend)
        }
    }
}

/// The inputs' image files; a directory that holds none is noted (unless `quiet`), and no image
/// at all is an error.
fn find_inputs(
    inputs: &[PathBuf],
    recursive: bool,
    quiet: bool,
) -> gpuprep::Result<Vec<convert::Input>> {
    let found = convert::find_inputs(inputs, recursive)?;
    for dir in inputs.iter().filter(|i| i.is_dir()) {
        if !quiet && !found.iter().any(|f| f.path.starts_with(dir)) {
            let hint = if recursive {
                ""
            } else {
                " (folders below it are searched with --recursive)"
            };
            err!("note: {} holds no image{hint}", dir.display());
        }
    }
    if found.is_empty() {
        return Err(gpuprep::Error::Options("no image among the inputs".into()));
    }
    Ok(found)
}

/// Sizes rayon's global pool, which decodes: `threads`, or the process's share of the cores
/// ([`gpuprep::default_threads`]).
fn set_threads(threads: Option<usize>) -> Result<(), ExitCode> {
    let threads = threads.unwrap_or_else(gpuprep::default_threads);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .map_err(|e| {
            err!("error: cannot set {threads} threads: {e}");
            ExitCode::from(2)
        })
}

fn run(args: ConvertArgs) -> ExitCode {
    if let Err(code) = set_threads(args.threads) {
        return code;
    }
    if let (Some(note), false) = (args.transform.notes(), args.quiet) {
        err!("{note}");
    }
    let destination = Destination::from_path(args.out);
    let batching = args.limits.batching(gpuprep::gpu::DEFAULT_BATCH);
    let backend = match backend(args.backend, args.adapter.as_deref(), args.quiet) {
        Ok(b) => b.with_batching(batching),
        Err(e) => {
            err!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let line = progress::Line::on_terminal(args.quiet);
    let report = |done: usize, total: usize| {
        if let Some(line) = &line {
            line.report(done, total);
        }
    };
    let job = Job {
        transform: args.transform.transform(),
        limits: args.limits.limits(),
        backend: &backend,
        progress: line
            .as_ref()
            .map(|_| &report as &(dyn Fn(usize, usize) + Sync)),
        stop: Some(stop_on_signals()),
    };
    let result = find_inputs(&args.inputs, args.recursive, args.quiet)
        .map_err(convert::JobError::from)
        .and_then(|files| convert::convert(&files, &destination, &job));
    if let Some(line) = &line {
        line.finish();
    }
    match result {
        Ok(reports) => summarise(&reports, &destination, &backend, args.quiet),
        Err(e) => job_failed(&e),
    }
}

/// A flag that SIGINT and SIGTERM set, for the job to stop at its next chunk (it keeps what it
/// finished, removes its temporary files and writes its report); a second signal exits at once
/// (a later run removes what that leaves).
fn stop_on_signals() -> &'static AtomicBool {
    static STOP: AtomicBool = AtomicBool::new(false);
    let installed = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::Relaxed) {
            std::process::exit(EXIT_INTERRUPTED);
        }
    });
    if let Err(e) = installed {
        err!("note: interrupting will not keep the work done: {e}");
    }
    &STOP
}

/// The exit code of a job stopped by a signal (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: i32 = 130;

/// Says why a convert job stopped (naming `--out` when the destination is the problem); exit 2.
fn job_failed(e: &convert::JobError) -> ExitCode {
    match e {
        convert::JobError::Destination { .. } => err!("error: --out {e}"),
        _ => err!("error: {e}"),
    }
    ExitCode::from(2)
}

/// The help of a command's inputs, naming the formats gpuprep reads.
fn inputs_help() -> String {
    format!(
        "Image files, or directories: their {} files in name order, those directly inside them \
         only unless --recursive",
        gpuprep::formats::names(" and ")
    )
}

/// A duration in milliseconds, as the bench reports print them.
fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Prints each failure and a count; the exit code is 1 when any image failed.
fn summarise(
    reports: &[convert::ImageReport],
    destination: &Destination,
    backend: &Backend,
    quiet: bool,
) -> ExitCode {
    let interrupted = |r: &&convert::ImageReport| matches!(r.result, Err(Error::Interrupted));
    let not_reached = reports.iter().filter(interrupted).count();
    let failed = reports.iter().filter(|r| r.result.is_err()).count() - not_reached;
    // Each error names its file; what to do is said once per kind, after them.
    let mut advice: Vec<(&str, usize)> = Vec::new();
    for report in reports.iter().filter(|r| !interrupted(r)) {
        if let Err(e) = &report.result {
            err!("error: {e}");
            if let Some(said) = advice::advice(e) {
                match advice.iter_mut().find(|(a, _)| *a == said) {
                    Some((_, files)) => *files += 1,
                    None => advice.push((said, 1)),
                }
            }
        }
    }
    for (said, files) in advice {
        let plural = if files == 1 { "" } else { "s" };
        err!("what to do ({files} file{plural}): {said}");
    }
    let (Destination::Directory(path) | Destination::Stacked(path)) = destination;
    if not_reached > 0 {
        err!(
            "interrupted: converted {} of {} images into {} before the signal; the report ({}) \
             lists what was finished and what was not reached",
            reports.len() - failed - not_reached,
            reports.len(),
            path.display(),
            destination.report_path().display()
        );
        return ExitCode::from(EXIT_INTERRUPTED as u8);
    }
    if !quiet {
        err!(
            "converted {} of {} images into {} on {} (report: {})",
            reports.len() - failed,
            reports.len(),
            path.display(),
            backend.describe(),
            destination.report_path().display()
        );
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `gpuprep index`: the shards' samples counted and their index written; a JSON line saying
/// how many.
fn index(args: IndexArgs) -> ExitCode {
    let urls: gpuprep::Result<Vec<Vec<ShardUrl>>> =
        args.shards.iter().map(|s| ShardUrl::expand(s)).collect();
    let fetch = gpuprep::loader::FetchOptions::default();
    match urls.and_then(|urls| shard_index::save(&args.out, &urls.concat(), &fetch)) {
        Ok(shards) => {
            let line = serde_json::json!({
                "what": "index", "out": args.out, "shards": shards.len(),
                "samples": shards.iter().map(|s| s.samples).sum::<u64>(),
            });
            out!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            err!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `gpuprep info`: each adapter wgpu finds, with its limits and whether a device opens on it,
/// then what `--backend auto` would use.
fn info(args: InfoArgs) -> ExitCode {
    let adapters = gpuprep::gpu::adapters();
    for (index, adapter) in adapters.iter().enumerate() {
        let (info, limits) = (adapter.get_info(), adapter.limits());
        let uuid = gpuprep::gpu::adapter_uuid(adapter)
            .map(|u| u.iter().map(|b| format!("{b:02x}")).collect::<String>());
        // An adapter can be listed and still refuse a device (a GL context without compute
        // shaders, say): opened as the pipeline opens it, with the same checks.
        let opened = gpuprep::gpu::open_device(adapter);
        let line = serde_json::json!({
            "what": "adapter", "index": index,
            "name": info.name, "uuid": uuid, "pci_bus_id": info.device_pci_bus_id, "backend": format!("{:?}", info.backend),
            "device_type": format!("{:?}", info.device_type), "driver": info.driver,
            "driver_info": info.driver_info,
            "opens": opened.is_ok(),
            "open_error": opened.err().map(|e| e.to_string()),
            "max_storage_buffer_binding_size": limits.max_storage_buffer_binding_size,
            "max_buffer_size": limits.max_buffer_size,
            "max_compute_workgroups_per_dimension": limits.max_compute_workgroups_per_dimension,
        });
        out!("{line}");
    }
    let (backend, why) = Backend::auto(args.adapter.as_deref());
    let line = serde_json::json!({
        "what": "auto", "backend": backend.describe(), "why": why,
    });
    out!("{line}");
    if adapters.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
