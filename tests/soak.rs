//! Load: 100,000 images (small corpus files cycled, a broken one among them) streamed through the
//! GPU loader and through the CPU backend, with the process's resident memory flat after
//! warm-up. On lavapipe the GPU's buffers are host memory too, so they are counted.

mod common;

use gpuprep::gpu::{GpuPipeline, StreamOptions};
use gpuprep::{Backend, Limits, Transform};

/// Images per run (GPUPREP_SOAK_IMAGES overrides, for a longer soak).
fn total() -> usize {
    std::env::var("GPUPREP_SOAK_IMAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// Resident memory of this process, in bytes.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// The files cycled through: small JPEGs of every colour space, a palette PNG (the pixel path),
/// and a corrupt JPEG (the one that fails each cycle).
fn inputs() -> Vec<Vec<u8>> {
    [
        "conformance/jsuite__baseline__32x32x8_ycbcr.jpg",
        "conformance/jsuite__baseline__32x32x8_ycbcr_2x2_1x1_1x1.jpg",
        "conformance/jsuite__baseline__32x32x8_ycbcr_2x2_2x1_1x2.jpg",
        "conformance/jsuite__baseline__32x32x8_rgb.jpg",
        "conformance/jsuite__baseline__32x32x8_cmyk.jpg",
        "conformance/jsuite__baseline__32x32x8_restarts.jpg",
        "conformance/jsuite__baseline__16x16x8_grayscale.jpg",
        "formats/made__p64.png",
        "malformed/jdec__derive-huffman-codes-overflow.jpg",
    ]
    .iter()
    .map(|f| std::fs::read(common::manifest_dir().join("tests/data").join(f)).unwrap())
    .collect()
}

/// Resident memory is the whole process's: one soak test at a time, from before it opens a
/// device (compiling shaders on lavapipe takes memory) to its end.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `chunks` calls of `run` over `chunk` cycled inputs each; checks every call's results
/// against the first call's, and that the peaks of resident memory and of the GPU memory kept
/// between calls (`gpu_bytes`) over the second half of the calls stay within 8 MiB of their
/// peaks over the first half. The first half is the warm-up: which buffers a call keeps depends
/// on the order in which the two batches in flight hand theirs back, so the pool (host memory
/// on lavapipe) fills over a number of calls that depends on the machine's timing (one CI run
/// on two cores was still filling it at the tenth call). A leak grows with every call, so the
/// second half outgrows the first by any fixed slack once the run is long enough: 8 MiB over
/// the 49 calls of the second half is 171 bytes an image.
fn soak(
    name: &str,
    run: impl Fn(&[&[u8]]) -> Vec<gpuprep::Result<gpuprep::Tensor>>,
    gpu_bytes: impl Fn() -> u64,
) {
    let files = inputs();
    let chunk = 1_000;
    let images: Vec<&[u8]> = files
        .iter()
        .cycle()
        .take(chunk)
        .map(Vec::as_slice)
        .collect();
    let chunks = total().div_ceil(chunk);
    assert!(
        chunks >= 4,
        "{name}: a soak of at least 4,000 images has two halves to compare"
    );
    let expected: Vec<Option<gpuprep::Tensor>> = run(&images).into_iter().map(Result::ok).collect();
    assert_eq!(
        expected.iter().filter(|t| t.is_none()).count(),
        chunk / files.len()
    );
    let (mut warm, mut peak) = (0, 0);
    let (mut gpu_warm, mut gpu_peak) = (0, 0);
    for i in 1..chunks {
        let results = run(&images);
        for (result, expected) in results.iter().zip(&expected) {
            assert_eq!(result.as_ref().ok(), expected.as_ref(), "{name}: call {i}");
        }
        let (rss, gpu) = (resident_bytes(), gpu_bytes());
        if i <= chunks / 2 {
            (warm, gpu_warm) = (warm.max(rss), gpu_warm.max(gpu));
        } else {
            (peak, gpu_peak) = (peak.max(rss), gpu_peak.max(gpu));
        }
    }
    println!(
        "{name}: {} images; resident memory's peak {:.1} MiB over the first half, {:.1} MiB over \
         the second; GPU buffers kept: {:.1} MiB, then {:.1} MiB",
        chunks * chunk,
        warm as f64 / 1048576.0,
        peak as f64 / 1048576.0,
        gpu_warm as f64 / 1048576.0,
        gpu_peak as f64 / 1048576.0
    );
    let slack = 8 << 20;
    assert!(
        gpu_peak <= gpu_warm + slack,
        "{name}: GPU buffers kept grew from {gpu_warm} to {gpu_peak} bytes"
    );
    assert!(
        peak <= warm + slack,
        "{name}: resident memory grew from {warm} to {peak} bytes"
    );
}

#[test]
fn gpu_loader_streams_without_growing() {
    let _turn = one_at_a_time();
    let Some(gpu) = common::gpu() else {
        return;
    };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let transform = Transform::exact(24, 24);
    soak(
        "GPU loader",
        |images| {
            pipeline
                .preprocess_many(
                    images,
                    &StreamOptions::new(&transform, &Limits::default(), 64),
                )
                .results
        },
        || pipeline.pooled_bytes(),
    );
}

#[test]
fn cpu_backend_streams_without_growing() {
    let _turn = one_at_a_time();
    let transform = Transform::exact(24, 24);
    soak(
        "CPU backend",
        |images| Backend::Cpu.preprocess_many(images, &transform, &Limits::default()),
        || 0,
    );
}
