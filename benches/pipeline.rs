//! The whole preprocessing job — decode, resize to 224×224 (bilinear), ImageNet-normalise to
//! float32 C×H×W — over the same files and threads, by what a Rust user could pick:
//!
//! - gpuprep on the GPU (entropy decoding on the CPU threads, the rest in WGSL), when an adapter
//!   exists;
//! - gpuprep's CPU path (exact, like the GPU);
//! - zune-jpeg + fast_image_resize + a normalise loop, the fastest CPU pipeline at hand (not
//!   exact: it differs from Pillow);
//! - jpeg-decoder + fast_image_resize + the same loop.
//!
//! Then the CPU stages one by one on one thread. Before timing, it prints how far each
//! pipeline's tensors are from gpuprep's CPU reference (= Pillow + torchvision, which the tests
//! hold): max and mean difference in grey levels and the share of values that differ.
//!
//! `cargo bench --bench pipeline`; GPUPREP_BENCH_DIR picks the folder (default
//! `../shared/bench/photos-imagenet` when present, else the bundled photos); `-- --test` runs
//! each benchmark once (CI's smoke run).

#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented functions"
)]

mod common;

use common::bench_files;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fast_image_resize::{images::Image, FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use gpuprep::drift::Drift;
use gpuprep::gpu::StreamOptions;
use gpuprep::{Backend, Limits, Tensor, TensorData, Transform};
use rayon::prelude::*;

const SIZE: u32 = 224;
const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// RGB pixels → 224×224 bilinear (fast_image_resize) → normalised f32 C×H×W.
fn resize_normalise(width: u32, height: u32, rgb: Vec<u8>, resizer: &mut Resizer) -> Vec<f32> {
    let src = Image::from_vec_u8(width, height, rgb, PixelType::U8x3).expect("RGB buffer");
    let mut dst = Image::new(SIZE, SIZE, PixelType::U8x3);
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    resizer.resize(&src, &mut dst, &options).expect("resizes");
    let plane = (SIZE * SIZE) as usize;
    let mut out = vec![0f32; 3 * plane];
    for (i, pixel) in dst.buffer().chunks_exact(3).enumerate() {
        for c in 0..3 {
            out[c * plane + i] = (f32::from(pixel[c]) / 255.0 - MEAN[c]) / STD[c];
        }
    }
    out
}

fn zune_pipeline(bytes: &[u8], resizer: &mut Resizer) -> Option<Vec<f32>> {
    use zune_core::{bytestream::ZCursor, colorspace::ColorSpace, options::DecoderOptions};
    let options = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::RGB);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    let rgb = decoder.decode().ok()?;
    let info = decoder.info()?;
    Some(resize_normalise(
        u32::from(info.width),
        u32::from(info.height),
        rgb,
        resizer,
    ))
}

fn jpeg_decoder_pipeline(bytes: &[u8], resizer: &mut Resizer) -> Option<Vec<f32>> {
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    let pixels = decoder.decode().ok()?;
    let info = decoder.info()?;
    let rgb = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => pixels,
        jpeg_decoder::PixelFormat::L8 => pixels.iter().flat_map(|&l| [l; 3]).collect(),
        _ => return None,
    };
    Some(resize_normalise(
        u32::from(info.width),
        u32::from(info.height),
        rgb,
        resizer,
    ))
}

/// Max and mean |a − b| in grey levels and the share differing, over the images both have
/// (gpuprep's drift measure, the one `gpuprep parity` prints).
fn drift(
    name: &str,
    outputs: &[Option<Vec<f32>>],
    reference: &[Option<Tensor>],
    transform: &Transform,
) {
    let mut total = Drift::default();
    for (ours, theirs) in outputs.iter().zip(reference) {
        let (Some(ours), Some(theirs)) = (ours, theirs) else {
            continue;
        };
        let ours = Tensor {
            shape: theirs.shape,
            data: TensorData::F32(ours.clone()),
            params: Default::default(),
        };
        total.merge(&Drift::between(&ours, theirs, transform).expect("same shapes"));
    }
    let total = total.total();
    println!(
        "drift vs gpuprep CPU reference (= Pillow): {name}: max {:.2} grey levels, mean {:.3}, {:.1}% of values differ",
        total.max,
        total.mean(),
        100.0 * total.share_differing()
    );
}

fn pipelines(c: &mut Criterion) {
    let (dir, files) = bench_files();
    let images: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let limits = Limits::default();
    let transform = Transform::exact(SIZE as usize, SIZE as usize);
    let gpu = Backend::gpu()
        .map_err(|e| println!("no GPU pipeline in this run: {e}"))
        .ok();

    let reference: Vec<Option<Tensor>> = images
        .par_iter()
        .map(|b| gpuprep::preprocess(b, &transform, &limits).ok())
        .collect();
    let as_values = |t: &Option<Tensor>| match t {
        Some(Tensor {
            data: TensorData::F32(v),
            ..
        }) => Some(v.clone()),
        _ => None,
    };
    if let Some(gpu) = &gpu {
        let outputs: Vec<Option<Vec<f32>>> = gpu
            .preprocess_many(&images, &transform, &limits)
            .into_iter()
            .map(|r| as_values(&r.ok()))
            .collect();
        drift("gpuprep GPU", &outputs, &reference, &transform);
    }
    let zune: Vec<_> = images
        .iter()
        .map(|b| zune_pipeline(b, &mut Resizer::new()))
        .collect();
    drift(
        "zune-jpeg + fast_image_resize",
        &zune,
        &reference,
        &transform,
    );
    let jd: Vec<_> = images
        .iter()
        .map(|b| jpeg_decoder_pipeline(b, &mut Resizer::new()))
        .collect();
    drift(
        "jpeg-decoder + fast_image_resize",
        &jd,
        &reference,
        &transform,
    );

    let threads = rayon::current_num_threads();
    let bytes: u64 = images.iter().map(|b| b.len() as u64).sum();
    for (unit, throughput) in [
        ("images", Throughput::Elements(images.len() as u64)),
        ("compressed bytes", Throughput::Bytes(bytes)),
    ] {
        let mut group = c.benchmark_group(format!(
            "decode + resize 224 + normalise, {} files of {dir}, {threads} threads, per {unit}",
            images.len()
        ));
        group.throughput(throughput);
        group.sample_size(10);
        if let Some(gpu) = &gpu {
            // Submit and wait are inside: the tensors are back on the CPU when it returns.
            group.bench_function("gpuprep GPU", |b| {
                b.iter(|| gpu.preprocess_many(&images, &transform, &limits))
            });
            // The tensors stay on the GPU, as a model on the same device takes them (and as
            // torchvision's nvJPEG pipeline leaves them); the span ends when the GPU is done.
            if let Backend::Gpu(g) = gpu {
                group.bench_function("gpuprep GPU, tensors kept on the GPU", |b| {
                    b.iter(|| {
                        let mut tensors = 0;
                        g.pipeline.preprocess_on_device(
                            &images,
                            &StreamOptions::new(&transform, &limits, gpuprep::gpu::DEFAULT_BATCH),
                            |batch| tensors += batch.tensors.len(),
                        );
                        tensors
                    })
                });
            }
        }
        group.bench_function("gpuprep CPU", |b| {
            b.iter(|| Backend::Cpu.preprocess_many(&images, &transform, &limits))
        });
        group.bench_function("zune-jpeg + fast_image_resize", |b| {
            b.iter(|| {
                images
                    .par_iter()
                    .map_init(Resizer::new, |r, bytes| zune_pipeline(bytes, r))
                    .collect::<Vec<_>>()
            })
        });
        group.bench_function("jpeg-decoder + fast_image_resize", |b| {
            b.iter(|| {
                images
                    .par_iter()
                    .map_init(Resizer::new, |r, bytes| jpeg_decoder_pipeline(bytes, r))
                    .collect::<Vec<_>>()
            })
        });
        group.finish();
    }
}

/// gpuprep's CPU stages one by one, one thread, over the same files.
fn stages(c: &mut Criterion) {
    let (dir, files) = bench_files();
    let limits = Limits::default();
    let transform = Transform::exact(SIZE as usize, SIZE as usize);
    let coefficients: Vec<_> = files
        .iter()
        .filter_map(|f| gpuprep::jpeg::decode_coefficients(f, &limits).ok())
        .collect();
    let decoded: Vec<_> = coefficients
        .iter()
        .filter_map(|c| gpuprep::reference::decode_rgb(c).ok())
        .collect();
    let mut group = c.benchmark_group(format!(
        "CPU stages, {} files of {dir}, 1 thread",
        files.len()
    ));
    group.throughput(Throughput::Elements(files.len() as u64));
    group.sample_size(10);
    group.bench_function(
        BenchmarkId::new("entropy decode", "jpeg → coefficients"),
        |b| {
            b.iter(|| {
                for f in &files {
                    let _ = gpuprep::jpeg::decode_coefficients(f, &limits);
                }
            })
        },
    );
    group.bench_function(
        BenchmarkId::new("IDCT + upsample + colour", "coefficients → RGB"),
        |b| {
            b.iter(|| {
                for c in &coefficients {
                    let _ = gpuprep::reference::decode_rgb(c);
                }
            })
        },
    );
    group.bench_function(
        BenchmarkId::new("resize + tensor", "RGB → 224² f32"),
        |b| {
            b.iter(|| {
                for rgb in &decoded {
                    let _ = gpuprep::reference::apply_transform(rgb.clone(), &transform);
                }
            })
        },
    );
    group.finish();
}

criterion_group!(benches, pipelines, stages);
criterion_main!(benches);
