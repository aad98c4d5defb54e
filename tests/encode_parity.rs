//! The JPEG encoder against Pillow: the files `Image.save(f, "JPEG", quality=Q[, subsampling=S])`
//! writes (tests/goldens/encode.tsv, made by tools/goldens.py with the pinned Pillow), byte for
//! byte: crops of the bundled photos (1×1, 7×9, 17×33, 30×22, 100×75) and whole photos, RGB
//! and grey, every subsampling and Pillow's default, qualities 1 to 100, with the standard
//! Huffman tables and with optimised ones (`optimize=True`); the forward stages on the CPU and
//! on the GPU.

mod common;

use gpuprep::encode::{encode, write, JpegOptions, Pixels, Subsampling};
use gpuprep::{Limits, RgbImage};
use std::collections::HashMap;

struct Case {
    photo: String,
    width: usize,
    height: usize,
    grey: bool,
    subsampling: Option<Subsampling>,
    quality: u8,
    optimize: bool,
    sha256: String,
}

fn cases() -> Vec<Case> {
    let path = common::manifest_dir().join("tests/goldens/encode.tsv");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with("photo\t"))
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            Case {
                photo: f[0].to_string(),
                width: f[1].parse().unwrap(),
                height: f[2].parse().unwrap(),
                grey: f[3] == "L",
                subsampling: match f[4] {
                    "default" => None,
                    "4:4:4" => Some(Subsampling::Full),
                    "4:2:2" => Some(Subsampling::Half),
                    "4:2:0" => Some(Subsampling::Quarter),
                    other => panic!("subsampling {other}"),
                },
                quality: f[5].parse().unwrap(),
                optimize: f[6] == "yes",
                sha256: f[7].to_string(),
            }
        })
        .collect()
}

/// The case's pixels: the photo's RGB (gpuprep's decoding, which is Pillow's: see
/// decode_parity.rs) cropped at its top left, or the crop's green channel.
fn pixels(image: &RgbImage, case: &Case) -> Vec<u8> {
    let mut out = Vec::new();
    for y in 0..case.height {
        let row = &image.data[y * image.width * 3..][..case.width * 3];
        if case.grey {
            out.extend(row.chunks_exact(3).map(|p| p[1]));
        } else {
            out.extend_from_slice(row);
        }
    }
    out
}

/// Each case's pixels.
fn inputs(cases: &[Case]) -> Vec<Vec<u8>> {
    let mut photos: HashMap<String, RgbImage> = HashMap::new();
    cases
        .iter()
        .map(|case| {
            let image = photos.entry(case.photo.clone()).or_insert_with(|| {
                let path = common::manifest_dir()
                    .join("tests/data/photos")
                    .join(&case.photo);
                gpuprep::decode_rgb(&std::fs::read(path).unwrap(), &Limits::default()).unwrap()
            });
            pixels(image, case)
        })
        .collect()
}

fn view<'a>(case: &Case, data: &'a [u8]) -> Pixels<'a> {
    Pixels {
        width: case.width,
        height: case.height,
        channels: if case.grey { 1 } else { 3 },
        data,
    }
}

fn options(case: &Case) -> JpegOptions {
    JpegOptions {
        quality: case.quality,
        subsampling: case.subsampling,
        optimize: case.optimize,
    }
}

/// The cases whose `files` are not Pillow's, described.
fn differing(cases: &[Case], files: &[Vec<u8>]) -> Vec<String> {
    cases
        .iter()
        .zip(files)
        .filter(|(case, file)| common::sha256_hex(file) != case.sha256)
        .map(|(case, _)| {
            format!(
                "{} {}x{} {} {:?} q{} optimize {}",
                case.photo,
                case.width,
                case.height,
                if case.grey { "L" } else { "RGB" },
                case.subsampling,
                case.quality,
                case.optimize
            )
        })
        .collect()
}

#[test]
fn files_are_pillows_byte_for_byte() {
    let cases = cases();
    assert!(cases.len() > 1500, "{} cases", cases.len());
    assert!(cases.iter().filter(|c| c.optimize).count() > 400);
    let inputs = inputs(&cases);
    let files: Vec<Vec<u8>> = cases
        .iter()
        .zip(&inputs)
        .map(|(case, data)| encode(view(case, data), &options(case)).unwrap())
        .collect();
    let differ = differing(&cases, &files);
    assert!(
        differ.is_empty(),
        "{} of {} differ: {:?}",
        differ.len(),
        cases.len(),
        &differ[..differ.len().min(5)]
    );
}

/// The forward stages on the GPU (shaders/forward.wgsl), the Huffman coding on the CPU: the
/// same files, the cases of one quality and subsampling dispatched together.
#[test]
fn files_with_the_gpus_forward_stages_are_pillows_byte_for_byte() {
    let Some(gpu) = common::gpu() else {
        return;
    };
    let pipeline = gpuprep::gpu::GpuPipeline::new(&gpu.device, &gpu.queue);
    let cases = cases();
    let inputs = inputs(&cases);
    let mut files = vec![Vec::new(); cases.len()];
    // The forward stages depend on the quality and the subsampling alone.
    let forward_setting = |case: &Case| (case.quality, case.subsampling.map(|s| s as u8));
    let mut settings: Vec<_> = cases.iter().map(forward_setting).collect();
    settings.sort();
    settings.dedup();
    for setting in settings {
        let group: Vec<usize> = (0..cases.len())
            .filter(|&i| forward_setting(&cases[i]) == setting)
            .collect();
        let views: Vec<Pixels> = group.iter().map(|&i| view(&cases[i], &inputs[i])).collect();
        let forward = pipeline
            .jpeg_forward(&views, &options(&cases[group[0]]))
            .unwrap();
        for (&i, coefficients) in group.iter().zip(forward) {
            files[i] = write(&coefficients.unwrap(), &options(&cases[i]), None).unwrap();
        }
    }
    let differ = differing(&cases, &files);
    assert!(
        differ.is_empty(),
        "{} of {} differ: {:?}",
        differ.len(),
        cases.len(),
        &differ[..differ.len().min(5)]
    );
}

#[test]
fn what_cannot_be_encoded_is_refused_by_name() {
    let pixel = [1, 2, 3];
    let at = |width, height, channels, data: &[u8], quality| {
        let pixels = Pixels {
            width,
            height,
            channels,
            data,
        };
        let options = JpegOptions {
            quality,
            ..JpegOptions::default()
        };
        encode(pixels, &options).unwrap_err().to_string()
    };
    assert!(at(1, 1, 3, &pixel, 0).contains("quality is 1 to 100, got 0"));
    assert!(at(1, 1, 3, &pixel, 101).contains("got 101"));
    assert!(at(0, 1, 3, &[], 75).contains("1 to 65500 pixels a side, got 0×1"));
    assert!(at(70_000, 1, 3, &pixel, 75).contains("got 70000×1"));
    assert!(at(1, 1, 2, &pixel[..2], 75).contains("got 2 channels"));
    assert!(at(2, 1, 3, &pixel, 75).contains("2×1×3 pixels are 6 bytes, got 3"));
}
