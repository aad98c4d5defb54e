//! The gpuprep command line.

use clap::{Parser, Subcommand, ValueEnum};
use gpuprep::convert::{self, Backend};
use gpuprep::Limits;
use std::path::PathBuf;
use std::process::ExitCode;

/// Encoded images to model-ready arrays, bit-identical to Pillow.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode images to uint8 H×W×3 RGB `.npy` files (equal to
    /// `np.asarray(Image.open(f).convert('RGB'))`) plus a report.json.
    Convert {
        /// Image files, or directories (their JPEG files, in name order).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output directory: `<file name>.npy` per input and `report.json`.
        #[arg(long)]
        out: PathBuf,
        /// Where the pixel stages run.
        #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
        backend: BackendArg,
        /// Refuse images with more pixels than this (decompression-bomb guard).
        #[arg(long, default_value_t = Limits::default().max_pixels)]
        max_pixels: u64,
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
        } => {
            let _backend = Backend::from(backend);
            let limits = Limits { max_pixels };
            let result = convert::expand_inputs(&inputs)
                .and_then(|files| convert::convert(&files, &out, &limits));
            match result {
                Ok(reports) => {
                    let failed: Vec<_> = reports.iter().filter(|r| r.result.is_err()).collect();
                    for report in &failed {
                        if let Err(e) = &report.result {
                            eprintln!("error: {e}");
                        }
                    }
                    eprintln!(
                        "converted {} of {} images into {}",
                        reports.len() - failed.len(),
                        reports.len(),
                        out.display()
                    );
                    if failed.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    }
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
