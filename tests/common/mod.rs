//! Shared by the integration tests: Pillow goldens, test roots, and mismatch reports.
#![allow(dead_code, reason = "each test binary uses a different part")]

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The device the GPU tests run on. No adapter fails the test with the fix, unless
/// `GPUPREP_NO_GPU=1` explicitly marks the run GPU-less, which is then said out loud (a GPU test
/// must never pass because no GPU was found).
pub fn gpu() -> Option<gpuprep::gpu::Gpu> {
    if std::env::var("GPUPREP_NO_GPU").is_ok_and(|v| v == "1") {
        println!("GPUPREP_NO_GPU=1: GPU tests NOT run");
        return None;
    }
    let gpu = gpuprep::gpu::create_device().unwrap_or_else(|e| panic!("{e}"));
    println!(
        "adapter: {} ({:?}, {})",
        gpu.info.name, gpu.info.backend, gpu.info.driver_info
    );
    Some(gpu)
}

/// What real Pillow made of one file (a row of tests/goldens/decode.tsv).
#[derive(Clone, Debug)]
pub struct Golden {
    pub file: String,
    pub file_sha256: String,
    /// (width, height, sha256 of the RGB bytes), or None when Pillow raised `pillow_error`.
    pub rgb: Option<(usize, usize, String)>,
    pub pillow_error: String,
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The goldens, keyed by path relative to a test root.
pub fn goldens() -> BTreeMap<String, Golden> {
    let text = std::fs::read_to_string(manifest_dir().join("tests/goldens/decode.tsv"))
        .expect("tests/goldens/decode.tsv (made by tools/goldens.py)");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("file\t"))
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let rgb = (!f[4].is_empty()).then(|| {
                (
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    f[4].to_string(),
                )
            });
            let golden = Golden {
                file: f[0].to_string(),
                file_sha256: f[1].to_string(),
                rgb,
                pillow_error: f.get(5).unwrap_or(&"").to_string(),
            };
            (golden.file.clone(), golden)
        })
        .collect()
}

/// The shared corpus beside the checkout (`GPUPREP_CORPUS` overrides), if present.
pub fn shared_corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("GPUPREP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../shared/corpus"));
    dir.is_dir().then_some(dir)
}

/// Whether `file`, a path under `root`, is also under tests/data with the same bytes (most of
/// the shared corpus is): a file checked there proves nothing new when checked again.
pub fn checked_in_test_data(root: &Path, file: &str) -> bool {
    let test_data = manifest_dir().join("tests/data");
    root != test_data
        && std::fs::read(test_data.join(file))
            .is_ok_and(|ours| std::fs::read(root.join(file)).is_ok_and(|theirs| ours == theirs))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes actual/expected/diff images for a mismatch under target/parity/ and returns a line
/// naming the first differing pixel. Expected pixels come from Pillow via tools/goldens.py.
pub fn report_mismatch(name: &str, image: &Path, actual: &gpuprep::RgbImage) -> String {
    let dir = manifest_dir().join("target/parity");
    std::fs::create_dir_all(&dir).unwrap();
    let stem = name.replace('/', "__");
    let actual_path = dir.join(format!("{stem}.actual.ppm"));
    write_ppm(&actual_path, actual.width, actual.height, &actual.data);
    let expected_path = dir.join(format!("{stem}.expected.ppm"));
    let dumped = std::process::Command::new("python3")
        .arg(manifest_dir().join("tools/goldens.py"))
        .arg("--dump")
        .arg(image)
        .arg(&expected_path)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let Some(expected) = dumped.then(|| read_ppm(&expected_path)).flatten() else {
        return format!("{name}: differs (Pillow unavailable for a diff image)");
    };
    if expected.len() != actual.data.len() {
        return format!("{name}: size differs from Pillow's");
    }
    let diff: Vec<u8> = expected
        .iter()
        .zip(&actual.data)
        .map(|(&e, &a)| e.abs_diff(a).saturating_mul(16))
        .collect();
    write_ppm(
        &dir.join(format!("{stem}.diff.ppm")),
        actual.width,
        actual.height,
        &diff,
    );
    let first = expected
        .iter()
        .zip(&actual.data)
        .position(|(e, a)| e != a)
        .unwrap_or(0);
    let pixel = first / 3;
    let (x, y) = (pixel % actual.width, pixel / actual.width);
    let count = expected
        .chunks(3)
        .zip(actual.data.chunks(3))
        .filter(|(e, a)| e != a)
        .count();
    let summary = serde_json::json!({
        "file": name, "first_x": x, "first_y": y,
        "expected": &expected[pixel * 3..pixel * 3 + 3], "actual": &actual.data[pixel * 3..pixel * 3 + 3],
        "pixels_differing": count,
    });
    std::fs::write(dir.join(format!("{stem}.json")), summary.to_string()).unwrap();
    summary.to_string()
}

fn write_ppm(path: &Path, width: usize, height: usize, rgb: &[u8]) {
    let mut bytes = format!("P6\n{width} {height}\n255\n").into_bytes();
    bytes.extend_from_slice(rgb);
    std::fs::write(path, bytes).unwrap();
}

fn read_ppm(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    // Header: "P6\n<w> <h>\n255\n".
    let mut newlines = 0;
    let start = bytes.iter().position(|&b| {
        newlines += usize::from(b == b'\n');
        newlines == 3
    })?;
    Some(bytes[start + 1..].to_vec())
}

/// A transform golden: a row of tests/goldens/transforms.tsv.
#[derive(Clone, Debug)]
pub struct TransformGolden {
    pub file: String,
    pub transform: String,
    pub shape: Vec<usize>,
    pub dtype: String,
    pub sha256: String,
    /// For a sample of a random transform (`name#index`): the parameters Python drew, as JSON.
    pub params: Option<serde_json::Value>,
}

impl TransformGolden {
    /// The spec's name and, for a random transform's sample, its index.
    pub fn spec_and_sample(&self) -> (&str, gpuprep::Sample) {
        match self.transform.split_once('#') {
            Some((name, index)) => (name, gpuprep::Sample::Index(index.parse().unwrap())),
            None => (&self.transform, gpuprep::Sample::default()),
        }
    }
}

/// The parameters in report.json's form: `{"crop": {...}, "flip": b, "vflip": b, "color":
/// {"order": [...], name: factor}, "grayscale": b}`, absent keys for absent operations.
pub fn params_json(params: &gpuprep::Params) -> serde_json::Value {
    gpuprep::plan::params_json(params)
}

pub fn transform_goldens() -> Vec<TransformGolden> {
    let text = std::fs::read_to_string(manifest_dir().join("tests/goldens/transforms.tsv"))
        .expect("tests/goldens/transforms.tsv (made by tools/goldens.py)");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("file\t"))
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            TransformGolden {
                file: f[0].to_string(),
                transform: f[1].to_string(),
                shape: f[2].split('x').map(|d| d.parse().unwrap()).collect(),
                dtype: f[3].to_string(),
                sha256: f[4].to_string(),
                params: f
                    .get(5)
                    .filter(|p| !p.is_empty())
                    .map(|p| serde_json::from_str(p).unwrap()),
            }
        })
        .collect()
}

/// The transforms of tests/goldens/transforms.json, by name.
pub fn transform_specs() -> BTreeMap<String, gpuprep::Transform> {
    use gpuprep::Filter;
    use gpuprep::{ChannelOrder, DType, Layout, Normalize, Resize};
    let text =
        std::fs::read_to_string(manifest_dir().join("tests/goldens/transforms.json")).unwrap();
    let specs: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pair = |v: &serde_json::Value| {
        (
            v[0].as_u64().unwrap() as usize,
            v[1].as_u64().unwrap() as usize,
        )
    };
    let triple =
        |v: &serde_json::Value| -> [f64; 3] { std::array::from_fn(|i| v[i].as_f64().unwrap()) };
    specs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            // These in the transform's own JSON form (a key the spec lacks reads as null).
            let keys = [
                "color_ops",
                "pad",
                "random_crop",
                "random_affine",
                "random_perspective",
                "rand_augment",
                "auto_augment",
                "timm_rand_augment",
                "timm_auto_augment",
                "timm_aug_mix",
                "random_resize",
                "random_shortest_size",
                "gaussian_blur",
            ];
            let own: serde_json::Map<String, serde_json::Value> = keys
                .iter()
                .map(|&k| (k.to_string(), s[k].clone()))
                .collect();
            let listed = gpuprep::Transform::from_json(&serde_json::Value::Object(own)).unwrap();
            let resize = match &s["resize"] {
                serde_json::Value::Null => None,
                serde_json::Value::String(keep) if keep.starts_with("keep_ratio:") => {
                    let mut parts = keep.trim_start_matches("keep_ratio:").split(':');
                    let mut side = || parts.next().unwrap().parse().unwrap();
                    let (width, height) = (side(), side());
                    Some(Resize::KeepRatio {
                        width,
                        height,
                        longest: keep.ends_with(":longest"),
                    })
                }
                serde_json::Value::String(short) => {
                    let mut sides = short.trim_start_matches("short:").split(':');
                    let size = sides.next().unwrap().parse().unwrap();
                    Some(match sides.next() {
                        Some(max_size) => Resize::ShorterSideAtMost {
                            size,
                            max_size: max_size.parse().unwrap(),
                        },
                        None => Resize::ShorterSide(size),
                    })
                }
                exact => {
                    let (width, height) = pair(exact);
                    Some(Resize::Exact { width, height })
                }
            };
            let normalize = match &s["normalize"] {
                serde_json::Value::Null => None,
                serde_json::Value::String(_) => Some(Normalize::IMAGENET),
                custom => Some(Normalize::from_f64(
                    triple(&custom["mean"]),
                    triple(&custom["std"]),
                )),
            };
            let transform = gpuprep::Transform {
                resize,
                center_crop: (!s["crop"].is_null()).then(|| pair(&s["crop"])),
                center_crop_fill: (!s["crop_fill"].is_null())
                    .then(|| std::array::from_fn(|i| s["crop_fill"][i].as_u64().unwrap() as u8)),
                filter: match s["filter"].as_str().unwrap_or("bilinear") {
                    "random" => Filter::Bilinear,
                    "nearest" => Filter::Nearest,
                    "box" => Filter::Box,
                    "bilinear" => Filter::Bilinear,
                    "hamming" => Filter::Hamming,
                    "bicubic" => Filter::Bicubic,
                    "lanczos" => Filter::Lanczos,
                    other => panic!("unknown filter {other}"),
                },
                draft: s["draft"].as_bool().unwrap_or(false),
                normalize,
                layout: match s["layout"].as_str().unwrap_or("hwc") {
                    "chw" => Layout::Chw,
                    _ => Layout::Hwc,
                },
                dtype: match s["dtype"].as_str().unwrap_or("u8") {
                    "f32" => DType::F32,
                    "f16" => DType::F16,
                    _ => DType::U8,
                },
                channel_order: match s["channel_order"].as_str().unwrap_or("rgb") {
                    "bgr" => ChannelOrder::Bgr,
                    _ => ChannelOrder::Rgb,
                },
                exif_transpose: s["exif_transpose"].as_bool().unwrap_or(false),
                reciprocal_scale: s["reciprocal_scale"].as_bool().unwrap_or(false),
                random_resized_crop: s.get("random_resized_crop").map(|c| {
                    let range = |key: &str, default: (f64, f64)| {
                        c.get(key).map_or(default, |r| {
                            (r[0].as_f64().unwrap(), r[1].as_f64().unwrap())
                        })
                    };
                    gpuprep::RandomResizedCrop {
                        size: pair(&c["size"]),
                        scale: range("scale", (0.08, 1.0)),
                        ratio: range("ratio", (3.0 / 4.0, 4.0 / 3.0)),
                        // timm's interpolation='random'.
                        filters: (s["filter"] == "random")
                            .then_some([Filter::Bilinear, Filter::Bicubic]),
                    }
                }),
                horizontal_flip: s["hflip"].as_f64(),
                vertical_flip: s["vflip"].as_f64(),
                // Single numbers, or [low, high] ranges as they are (null: none).
                color_jitter: s.get("color_jitter").map(|j| {
                    let v = |i: usize| j.get(i).and_then(|v| v.as_f64()).unwrap_or(0.0);
                    let mut jitter = gpuprep::ColorJitter::new(v(0), v(1), v(2), v(3));
                    let slots = [
                        &mut jitter.brightness,
                        &mut jitter.contrast,
                        &mut jitter.saturation,
                        &mut jitter.hue,
                    ];
                    for (i, slot) in slots.into_iter().enumerate() {
                        if let Some(r) = j.get(i).and_then(|r| r.as_array()) {
                            let end = |k: usize| r[k].as_f64().unwrap() as f32;
                            *slot = Some((end(0), end(1)));
                        } else if j.get(i).is_some_and(|r| r.is_null()) {
                            *slot = None;
                        }
                    }
                    jitter.p = s["color_jitter_p"].as_f64().unwrap_or(1.0);
                    jitter
                }),
                grayscale: s["grayscale"].as_f64(),
                random_rotation: s.get("random_rotation").map(|r| gpuprep::RandomRotation {
                    degrees: (
                        r["degrees"][0].as_f64().unwrap(),
                        r["degrees"][1].as_f64().unwrap(),
                    ),
                    fill: r.get("fill").map_or([0; 3], |f| {
                        std::array::from_fn(|i| f[i].as_u64().unwrap() as u8)
                    }),
                    interpolation: interpolation(r),
                    center: r
                        .get("center")
                        .map(|c| (c[0].as_f64().unwrap(), c[1].as_f64().unwrap())),
                    p: r.get("p").map_or(1.0, |p| p.as_f64().unwrap()),
                }),
                trivial_augment: s.get("trivial_augment").map(|t| gpuprep::TrivialAugment {
                    bins: t.get("bins").map_or(31, |b| b.as_u64().unwrap() as u32),
                    fill: t.get("fill").map_or([0; 3], |f| {
                        std::array::from_fn(|i| f[i].as_u64().unwrap() as u8)
                    }),
                    interpolation: interpolation(t),
                    v2: t.get("v2").is_some_and(|v| v.as_bool().unwrap()),
                }),
                pad: listed.pad,
                random_crop: listed.random_crop,
                random_affine: listed.random_affine,
                random_perspective: listed.random_perspective,
                gaussian_blur: listed.gaussian_blur,
                rand_augment: listed.rand_augment,
                auto_augment: listed.auto_augment,
                timm_rand_augment: listed.timm_rand_augment,
                timm_auto_augment: listed.timm_auto_augment,
                timm_aug_mix: listed.timm_aug_mix,
                random_resize: listed.random_resize,
                random_shortest_size: listed.random_shortest_size,
                random_erasing: s.get("random_erasing").map(|e| {
                    let range = |key: &str, default: (f64, f64)| {
                        e.get(key).map_or(default, |r| {
                            (r[0].as_f64().unwrap(), r[1].as_f64().unwrap())
                        })
                    };
                    gpuprep::RandomErasing {
                        p: e["p"].as_f64().unwrap_or(0.5),
                        scale: range("scale", (0.02, 0.33)),
                        ratio: range("ratio", (0.3, 3.3)),
                        value: match e.get("value") {
                            None => gpuprep::ErasedValue::Constant([0.0; 3]),
                            Some(serde_json::Value::String(mode)) => match mode.as_str() {
                                "normal_per_channel" => gpuprep::ErasedValue::NormalPerChannel,
                                _ => gpuprep::ErasedValue::NormalPerElement,
                            },
                            Some(v) => gpuprep::ErasedValue::Constant(std::array::from_fn(|i| {
                                v[i].as_f64().unwrap() as f32
                            })),
                        },
                        count: e.get("count").map_or((1, 1), |c| {
                            (c[0].as_u64().unwrap() as u32, c[1].as_u64().unwrap() as u32)
                        }),
                    }
                }),
                color_ops: listed.color_ops,
                order: s
                    .get("order")
                    .map_or_else(gpuprep::StepOrder::default, |o| {
                        gpuprep::StepOrder::from_json(o).unwrap()
                    }),
                seed: s["seed"].as_u64().unwrap_or(0),
                epoch: s["epoch"].as_u64().unwrap_or(0),
            };
            (s["name"].as_str().unwrap().to_string(), transform)
        })
        .collect()
}

/// A spec's map `interpolation` (nearest where it names none).
fn interpolation(object: &serde_json::Value) -> gpuprep::Filter {
    object
        .get("interpolation")
        .map_or(gpuprep::Filter::Nearest, |f| {
            gpuprep::Filter::from_name(f.as_str().unwrap()).unwrap()
        })
}
