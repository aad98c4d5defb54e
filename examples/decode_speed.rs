//! Single-thread decoding speed over a folder of JPEGs: entropy decoding alone (the CPU stage of
//! the pipeline) and the whole CPU reference decode.
//!
//! `cargo run --release --example decode_speed -- DIR [REPEAT]`

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: decode_speed DIR [REPEAT]");
    let repeat: usize = args
        .next()
        .map_or(3, |r| r.parse().expect("REPEAT is a number"));
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("readable folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            gpuprep::convert::expand_inputs(std::slice::from_ref(p)).is_ok_and(|v| !v.is_empty())
        })
        .collect();
    paths.sort();
    let files: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| std::fs::read(p).expect("readable"))
        .collect();
    let bytes: usize = files.iter().map(Vec::len).sum();
    let limits = gpuprep::Limits::default();
    let best = |f: &dyn Fn(&[u8])| {
        (0..repeat)
            .map(|_| {
                let start = Instant::now();
                files.iter().for_each(|b| f(b));
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let entropy = best(&|b| {
        gpuprep::jpeg::decode_coefficients(b, &limits).expect("decodes");
    });
    let full = best(&|b| {
        gpuprep::decode_rgb(b, &limits).expect("decodes");
    });
    let resize224 = best(&|b| {
        gpuprep::preprocess(b, &gpuprep::Transform::exact(224, 224), &limits).expect("decodes");
    });
    let eval = best(&|b| {
        gpuprep::preprocess(b, &gpuprep::Transform::imagenet_eval(), &limits).expect("decodes");
    });
    for (stage, secs) in [
        ("entropy decode", entropy),
        ("full CPU decode", full),
        ("decode + resize 224x224 + normalize", resize224),
        ("decode + imagenet eval", eval),
    ] {
        println!(
            "{dir}: {} files, {:.1} MB: {stage}: {:.1} MB/s, {:.1} images/s (1 thread, best of {repeat})",
            files.len(),
            bytes as f64 / 1e6,
            bytes as f64 / 1e6 / secs,
            files.len() as f64 / secs
        );
    }
}
