//! A folder of JPEGs → one ImageNet-evaluation batch in a stacked `.npy`, on the GPU when there
//! is one (the CPU otherwise), with the per-image report beside it.
//!
//! `cargo run --release --example folder_to_npy -- tests/data/photos out/batch.npy`

use gpuprep::convert::{self, Destination, Job};
use gpuprep::{Backend, Limits, Transform};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (folder, out) = match (args.next(), args.next()) {
        (Some(folder), Some(out)) => (folder, out),
        _ => return Err("usage: folder_to_npy FOLDER OUT.npy".into()),
    };
    let backend = Backend::gpu().unwrap_or_else(|e| {
        eprintln!("note: {e}; using the CPU");
        Backend::Cpu
    });
    let job = Job {
        transform: Transform::imagenet_eval(),
        limits: Limits::default(),
        backend: &backend,
        progress: Some(&|done, total| eprintln!("{done} of {total} images")),
        stop: None,
    };
    let files = convert::find_inputs(&[folder.into()], false)?;
    let destination = Destination::from_path(out.into());
    let reports = convert::convert(&files, &destination, &job)?;
    let ok = reports.iter().filter(|r| r.result.is_ok()).count();
    println!(
        "{ok} of {} images on {} → {}",
        reports.len(),
        backend.describe(),
        destination.report_path().display()
    );
    Ok(())
}
