//! Decoding throughput on one thread: gpuprep's entropy decoder (the CPU stage of the pipeline),
//! gpuprep's full CPU reference decode, and jpeg-decoder as an independent baseline, over the
//! same files. Uses `../shared/bench/photos-imagenet` when present, else the bundled photos.
//!
//! `cargo bench --bench decode` (set GPUPREP_BENCH_DIR to use another folder).

#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented functions"
)]

mod common;

use common::bench_files;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn decode(c: &mut Criterion) {
    let (dir, files) = bench_files();
    let total: usize = files.iter().map(Vec::len).sum();
    let limits = gpuprep::Limits::default();
    let mut group = c.benchmark_group(format!("decode {} files of {dir}", files.len()));
    group.throughput(Throughput::Bytes(total as u64));
    group.sample_size(10);
    group.bench_function("gpuprep entropy decode", |b| {
        b.iter(|| {
            for f in &files {
                gpuprep::jpeg::decode_coefficients(f, &limits).expect("decodes");
            }
        })
    });
    group.bench_function("gpuprep CPU reference decode", |b| {
        b.iter(|| {
            for f in &files {
                gpuprep::decode_rgb(f, &limits).expect("decodes");
            }
        })
    });
    group.bench_function("jpeg-decoder decode", |b| {
        b.iter(|| {
            for f in &files {
                jpeg_decoder::Decoder::new(f.as_slice())
                    .decode()
                    .expect("decodes");
            }
        })
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
