//! `gpuprep parity`: the GPU pipeline against the CPU reference (and, with `--pillow`, both
//! against Pillow + torchvision) on the same inputs: drift per channel, the worst files, the
//! files one side refuses, and pictures of any difference.

use crate::args::{LimitArgs, TransformArgs};
use crate::picture::{self, Panel};
use crate::{pillow, progress};
use gpuprep::drift::{self, ChannelDrift, Drift};
use gpuprep::{convert, Backend, Tensor, Transform};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Images compared per round (bounds memory: three outputs each).
const CHUNK: usize = 256;

#[derive(clap::Args)]
pub struct ParityArgs {
    #[arg(required = true, help = format!(
        "Image files, or directories (their {} files, in name order)",
        gpuprep::formats::names(" and ")
    ))]
    inputs: Vec<PathBuf>,
    /// Also run Pillow + torchvision's arithmetic (Python with Pillow and numpy) as a third
    /// column.
    #[arg(long)]
    pillow: bool,
    /// The GPU adapter to compare on: a part of its name, as `gpuprep info` lists them.
    #[arg(long)]
    adapter: Option<String>,
    /// Write a PNG heat map for each image that differs, and histogram.png, into DIR.
    #[arg(long, value_name = "DIR")]
    diff_dir: Option<PathBuf>,
    /// Also write the whole report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// How many of the worst files to name per comparison.
    #[arg(long, default_value_t = 5)]
    worst: usize,
    /// Print only the verdict line and errors.
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    transform: TransformArgs,
}

/// Who made an output.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Gpu,
    Cpu,
    Pillow,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Gpu => "GPU",
            Side::Cpu => "CPU reference",
            Side::Pillow => "Pillow",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Side::Gpu => "gpu",
            Side::Cpu => "cpu",
            Side::Pillow => "pillow",
        }
    }
}

/// One pair of sides over all files.
struct Comparison {
    sides: (Side, Side),
    total: Drift,
    /// Per compared file: its index and its drift over all channels.
    files: Vec<(usize, ChannelDrift)>,
    /// Files that one side refused and the other did not (or whose shapes differ).
    disagreements: Vec<(usize, String)>,
    /// Files both refused.
    refused_by_both: usize,
}

impl Comparison {
    fn new(sides: (Side, Side)) -> Self {
        Self {
            sides,
            total: Drift::default(),
            files: Vec::new(),
            disagreements: Vec::new(),
            refused_by_both: 0,
        }
    }

    fn title(&self) -> String {
        format!("{} vs {}", self.sides.0.name(), self.sides.1.name())
    }

    fn identical(&self) -> bool {
        self.total.total().differing == 0 && self.disagreements.is_empty()
    }
}

/// Every side's output for one chunk of files.
struct Outputs {
    gpu: Option<Vec<gpuprep::Result<Tensor>>>,
    cpu: Vec<gpuprep::Result<Tensor>>,
    pillow: Option<Vec<Result<Tensor, String>>>,
}

impl Outputs {
    fn get(&self, side: Side, i: usize) -> Option<Result<&Tensor, String>> {
        let result = match side {
            Side::Gpu => self.gpu.as_ref()?[i].as_ref().map_err(|e| e.to_string()),
            Side::Cpu => self.cpu[i].as_ref().map_err(|e| e.to_string()),
            Side::Pillow => self.pillow.as_ref()?[i].as_ref().map_err(Clone::clone),
        };
        Some(result)
    }
}

pub fn run(args: ParityArgs) -> ExitCode {
    match compare_all(&args) {
        Ok(comparisons) if comparisons.iter().all(Comparison::identical) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            err!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn compare_all(args: &ParityArgs) -> Result<Vec<Comparison>, String> {
    let transform = args.transform.transform();
    transform.validate().map_err(|e| e.to_string())?;
    let limits = args.limits.limits();
    let files = convert::expand_inputs(&args.inputs).map_err(|e| e.to_string())?;
    let gpu = match Backend::gpu_on(args.adapter.as_deref()) {
        Ok(gpu) => Some(gpu.with_batching(args.limits.batching(gpuprep::gpu::DEFAULT_BATCH))),
        Err(e) if args.pillow => {
            err!("note: no GPU ({e}); comparing the CPU reference with Pillow only");
            None
        }
        Err(e) => {
            return Err(format!(
                "{e} (with --pillow, the CPU reference is compared with Pillow)"
            ))
        }
    };
    let mut comparisons: Vec<Comparison> = [
        (Side::Gpu, Side::Cpu),
        (Side::Gpu, Side::Pillow),
        (Side::Cpu, Side::Pillow),
    ]
    .into_iter()
    .filter(|&(a, b)| (a != Side::Gpu || gpu.is_some()) && (b != Side::Pillow || args.pillow))
    .map(Comparison::new)
    .collect();
    if let Some(dir) = &args.diff_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let scratch = std::env::temp_dir().join(format!("gpuprep-parity-{}", std::process::id()));
    let line = progress::Line::on_terminal(args.quiet);
    let mut pillow_version = String::new();
    for (c, chunk) in files.chunks(CHUNK).enumerate() {
        let bytes: Vec<Vec<u8>> = chunk
            .iter()
            .map(|f| std::fs::read(f).unwrap_or_default())
            .collect();
        let images: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        let pillow = if args.pillow {
            let (results, version) = pillow::outputs(chunk, &transform, c * CHUNK, &scratch)?;
            pillow_version = version;
            Some(results)
        } else {
            None
        };
        // File k of all is sample k of a random transform, as in convert.
        let indices: Vec<u64> = (0..chunk.len()).map(|i| (c * CHUNK + i) as u64).collect();
        let samples = gpuprep::Samples::Indices(&indices);
        let outputs = Outputs {
            gpu: gpu
                .as_ref()
                .map(|g| g.preprocess_samples(&images, &transform, samples, &limits)),
            cpu: Backend::Cpu.preprocess_samples(&images, &transform, samples, &limits),
            pillow,
        };
        for (i, file) in chunk.iter().enumerate() {
            let index = c * CHUNK + i;
            for comparison in &mut comparisons {
                compare_file(comparison, &outputs, i, index, file, &transform, args)?;
            }
        }
        if let Some(line) = &line {
            line.report((c * CHUNK + chunk.len()).min(files.len()), files.len());
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    if let Some(line) = &line {
        line.finish();
    }
    if let Some(dir) = &args.diff_dir {
        write_histogram(dir, &comparisons)?;
    }
    let adapter = gpu.as_ref().map(Backend::describe).unwrap_or_default();
    if let Some(path) = &args.json {
        let report = json_report(&comparisons, &files, &transform, &adapter, &pillow_version);
        std::fs::write(path, serde_json::to_string_pretty(&report).expect("json"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    print_report(&comparisons, &files, &adapter, &pillow_version, args);
    Ok(comparisons)
}

/// Compares file `i` of the chunk (`index` overall) on the comparison's two sides.
fn compare_file(
    comparison: &mut Comparison,
    outputs: &Outputs,
    i: usize,
    index: usize,
    file: &Path,
    transform: &Transform,
    args: &ParityArgs,
) -> Result<(), String> {
    let (a, b) = comparison.sides;
    let (Some(left), Some(right)) = (outputs.get(a, i), outputs.get(b, i)) else {
        return Ok(());
    };
    let (left, right) = match (left, right) {
        (Ok(left), Ok(right)) => (left, right),
        (Err(_), Err(_)) => {
            comparison.refused_by_both += 1;
            return Ok(());
        }
        (Err(e), Ok(_)) => {
            comparison
                .disagreements
                .push((index, format!("{} refuses it: {e}", a.name())));
            return Ok(());
        }
        (Ok(_), Err(e)) => {
            comparison
                .disagreements
                .push((index, format!("{} refuses it: {e}", b.name())));
            return Ok(());
        }
    };
    let drift = match Drift::between(left, right, transform) {
        Ok(drift) => drift,
        Err(e) => {
            comparison.disagreements.push((index, e.to_string()));
            return Ok(());
        }
    };
    let total = drift.total();
    if total.differing > 0 {
        if let Some(dir) = &args.diff_dir {
            let stem = file.file_name().unwrap_or_default().to_string_lossy();
            let path = dir.join(format!("{stem}.{}-vs-{}.png", a.tag(), b.tag()));
            let map = drift::per_pixel(left, right, transform).map_err(|e| e.to_string())?;
            let title = format!("{}: MAX {:.2}", comparison.title(), total.max);
            picture::heat_map(right, transform, map, &title)
                .save(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    comparison.total.merge(&drift);
    comparison.files.push((index, total));
    Ok(())
}

fn write_histogram(dir: &Path, comparisons: &[Comparison]) -> Result<(), String> {
    let panels: Vec<Panel> = comparisons
        .iter()
        .map(|c| {
            let total = c.total.total();
            Panel {
                title: format!(
                    "{}: {} of {} values differ",
                    c.title(),
                    total.differing,
                    total.count
                ),
                histogram: c.total.histogram,
            }
        })
        .collect();
    let path = dir.join("histogram.png");
    picture::histogram(&panels)
        .save(&path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The files of a comparison that differ most (largest max, then mean), at most `n`.
fn worst(comparison: &Comparison, n: usize) -> Vec<(usize, ChannelDrift)> {
    let mut differing: Vec<_> = comparison
        .files
        .iter()
        .filter(|(_, d)| d.differing > 0)
        .copied()
        .collect();
    differing.sort_by(|a, b| {
        b.1.max
            .total_cmp(&a.1.max)
            .then(b.1.mean().total_cmp(&a.1.mean()))
    });
    differing.truncate(n);
    differing
}

fn print_report(
    comparisons: &[Comparison],
    files: &[PathBuf],
    adapter: &str,
    pillow_version: &str,
    args: &ParityArgs,
) {
    let verdict = if comparisons.iter().all(Comparison::identical) {
        "identical"
    } else {
        "DIFFERENT"
    };
    out!("parity over {} files: {verdict}", files.len());
    if args.quiet {
        return;
    }
    if !adapter.is_empty() {
        out!("GPU: {adapter}");
    }
    if !pillow_version.is_empty() {
        out!("Pillow: {pillow_version}");
    }
    out!(
        "\n{:<28} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "grey levels",
        "compared",
        "max",
        "mean",
        "R max",
        "G max",
        "B max",
        "differ",
        "disagree"
    );
    for c in comparisons {
        let total = c.total.total();
        let [r, g, b] = c.total.channels.map(|ch| ch.max);
        out!(
            "{:<28} {:>8} {:>9.3} {:>9.5} {:>8.3} {:>8.3} {:>8.3} {:>8.4}% {:>9}",
            c.title(),
            c.files.len(),
            total.max,
            total.mean(),
            r,
            g,
            b,
            100.0 * total.share_differing(),
            c.disagreements.len()
        );
    }
    for c in comparisons {
        let worst = worst(c, args.worst);
        if !worst.is_empty() {
            out!("\nworst files, {}:", c.title());
            for (i, d) in worst {
                out!(
                    "  {}: max {:.3}, mean {:.5}, {:.3}% differ",
                    files[i].display(),
                    d.max,
                    d.mean(),
                    100.0 * d.share_differing()
                );
            }
        }
        if !c.disagreements.is_empty() {
            out!("\nrefused by one side only, {}:", c.title());
            for (i, why) in &c.disagreements {
                out!("  {}: {why}", files[*i].display());
            }
        }
    }
    if let Some(dir) = &args.diff_dir {
        out!("\npictures: {}", dir.display());
    }
}

fn json_report(
    comparisons: &[Comparison],
    files: &[PathBuf],
    transform: &Transform,
    adapter: &str,
    pillow_version: &str,
) -> serde_json::Value {
    let channel = |d: &ChannelDrift| json!({"max": d.max, "mean": d.mean(), "share_differing": d.share_differing(), "count": d.count});
    let comparisons: Vec<_> = comparisons
        .iter()
        .map(|c| {
            json!({
                "compared": c.title(),
                "files": c.files.len(),
                "identical": c.identical(),
                "total": channel(&c.total.total()),
                "channels": c.total.channels.iter().map(channel).collect::<Vec<_>>(),
                "histogram": {"bin_edges": drift::BIN_EDGES, "counts": c.total.histogram},
                "differing_files": c.files.iter().filter(|(_, d)| d.differing > 0)
                    .map(|(i, d)| json!({"file": files[*i].display().to_string(), "drift": channel(d)})).collect::<Vec<_>>(),
                "refused_by_one_side": c.disagreements.iter()
                    .map(|(i, why)| json!({"file": files[*i].display().to_string(), "why": why})).collect::<Vec<_>>(),
                "refused_by_both": c.refused_by_both,
            })
        })
        .collect();
    json!({
        "files": files.len(),
        "transform": format!("{transform:?}"),
        "gpu": adapter,
        "pillow": pillow_version,
        "comparisons": comparisons,
    })
}
