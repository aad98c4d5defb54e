//! The gpuprep command line.

mod args;

use clap::{Parser, Subcommand, ValueEnum};
use gpuprep::convert::{self, Backend, Destination};
use gpuprep::Limits;
use std::path::PathBuf;
use std::process::ExitCode;

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
    Convert {
        /// Image files, or directories (their JPEG files, in name order).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// A directory (`<file name>.npy` per input and report.json), or a FILE.npy that gets
        /// one stacked (N, …) array of the images that converted, and FILE.report.json.
        #[arg(long)]
        out: PathBuf,
        /// Where the pixel stages run.
        #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
        backend: BackendArg,
        /// Refuse images with more pixels than this (decompression-bomb guard).
        #[arg(long, default_value_t = Limits::default().max_pixels)]
        max_pixels: u64,
        #[command(flatten)]
        transform: args::TransformArgs,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// The CPU reference implementation.
    Cpu,
}

impl From<BackendArg> for Backend {
    fn from(arg: BackendArg) -> Self {
        match arg {
            BackendArg::Cpu => Backend::Cpu,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Convert {
            inputs,
            out,
            backend,
            max_pixels,
            transform,
        } => {
            let _backend = Backend::from(backend);
            let limits = Limits { max_pixels };
            let destination = Destination::from_path(out);
            let result = convert::expand_inputs(&inputs).and_then(|files| {
                convert::convert(&files, &destination, &transform.transform(), &limits)
            });
            match result {
                Ok(reports) => summarise(&reports, &destination),
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// Prints each failure and a count; the exit code is 1 when any image failed.
fn summarise(reports: &[convert::ImageReport], destination: &Destination) -> ExitCode {
    let failed = reports.iter().filter(|r| r.result.is_err()).count();
    for report in reports {
        if let Err(e) = &report.result {
            eprintln!("error: {e}");
        }
    }
    let (Destination::Directory(path) | Destination::Stacked(path)) = destination;
    eprintln!(
        "converted {} of {} images into {} (report: {})",
        reports.len() - failed,
        reports.len(),
        path.display(),
        destination.report_path().display()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
