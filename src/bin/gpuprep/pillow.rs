//! Pillow + torchvision as a third opinion for `parity --pillow`: the project's reference
//! script (tools/pillow_reference.py, built into the binary) run by the local Python.

use gpuprep::Filter;
use gpuprep::{ChannelOrder, DType, Layout, Resize};
use gpuprep::{Tensor, Transform};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const SCRIPT: &str = include_str!("../../../tools/pillow_reference.py");

/// The Python that runs the reference: `GPUPREP_PYTHON`, or `python3`.
fn python() -> String {
    std::env::var("GPUPREP_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Pillow's outputs for `files` under `transform`, the first being sample `first` of a random
/// one: one tensor or Pillow's error per file, and the versions that made them.
pub fn outputs(
    files: &[PathBuf],
    transform: &Transform,
    first: usize,
    scratch: &Path,
) -> Result<(Vec<Result<Tensor, String>>, String), String> {
    std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let mut spec = spec(transform);
    spec["first_index"] = first.into();
    let output = Command::new(python())
        .arg("-c")
        .arg(SCRIPT)
        .arg(spec.to_string())
        .arg(scratch)
        .args(files)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "the Pillow reference failed ({}); it needs Pillow and numpy: \
             pip install -r tools/requirements.txt\n{}",
            output.status,
            stderr.lines().last().unwrap_or("")
        ));
    }
    let versions = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let results = (0..files.len())
        .map(|i| {
            let read = |ext: &str| std::fs::read(scratch.join(format!("{i}.{ext}")));
            match (read("npy"), read("err")) {
                (Ok(npy), _) => gpuprep::npy::read_tensor(&npy).map_err(|e| e.to_string()),
                (_, Ok(error)) => Err(format!("Pillow: {}", String::from_utf8_lossy(&error))),
                _ => Err("Pillow wrote nothing for this file".into()),
            }
        })
        .collect();
    for entry in std::fs::read_dir(scratch).into_iter().flatten().flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
    Ok((results, versions))
}

/// The transform in the reference script's terms (tests/goldens/transforms.json's).
fn spec(t: &Transform) -> Value {
    let mut spec = Map::new();
    match t.resize {
        Some(Resize::ShorterSide(n)) => spec.insert("resize".into(), json!(format!("short:{n}"))),
        Some(Resize::ShorterSideAtMost { size, max_size }) => {
            spec.insert("resize".into(), json!(format!("short:{size}:{max_size}")))
        }
        Some(Resize::Exact { width, height }) => {
            spec.insert("resize".into(), json!([width, height]))
        }
        Some(Resize::KeepRatio {
            width,
            height,
            longest,
        }) => {
            let longest = if longest { ":longest" } else { "" };
            spec.insert(
                "resize".into(),
                json!(format!("keep_ratio:{width}:{height}{longest}")),
            )
        }
        None => None,
    };
    if let Some((width, height)) = t.center_crop {
        spec.insert("crop".into(), json!([width, height]));
    }
    if let Some(fill) = t.center_crop_fill {
        spec.insert("crop_fill".into(), json!(fill));
    }
    spec.insert("filter".into(), json!(t.filter.name()));
    spec.insert("draft".into(), json!(t.draft));
    if let Some(n) = t.normalize {
        let values = |v: [f32; 3]| v.map(f64::from);
        spec.insert(
            "normalize".into(),
            json!({"mean": values(n.mean), "std": values(n.std)}),
        );
    }
    let dtype = match t.dtype {
        DType::U8 => "u8",
        DType::F32 => "f32",
        DType::F16 => "f16",
    };
    spec.insert("dtype".into(), json!(dtype));
    let layout = match t.layout {
        Layout::Hwc => "hwc",
        Layout::Chw => "chw",
    };
    spec.insert("layout".into(), json!(layout));
    let order = match t.channel_order {
        ChannelOrder::Rgb => "rgb",
        ChannelOrder::Bgr => "bgr",
    };
    spec.insert("channel_order".into(), json!(order));
    spec.insert("exif_transpose".into(), json!(t.exif_transpose));
    spec.insert("reciprocal_scale".into(), json!(t.reciprocal_scale));
    if let Some(c) = t.random_resized_crop {
        spec.insert(
            "random_resized_crop".into(),
            json!({"size": [c.size.0, c.size.1], "scale": [c.scale.0, c.scale.1],
                   "ratio": [c.ratio.0, c.ratio.1]}),
        );
        if c.filters == Some([Filter::Bilinear, Filter::Bicubic]) {
            spec.insert("filter".into(), json!("random"));
        }
    }
    for (key, p) in [
        ("hflip", t.horizontal_flip),
        ("vflip", t.vertical_flip),
        ("grayscale", t.grayscale),
    ] {
        if let Some(p) = p {
            spec.insert(key.into(), json!(p));
        }
    }
    if let Some(j) = t.color_jitter {
        let range = |r: Option<(f32, f32)>| r.map(|(lo, hi)| [f64::from(lo), f64::from(hi)]);
        spec.insert(
            "color_jitter".into(),
            json!([
                range(j.brightness),
                range(j.contrast),
                range(j.saturation),
                range(j.hue)
            ]),
        );
        spec.insert("color_jitter_p".into(), json!(j.p));
    }
    // The transform's own JSON form of these.
    let own_form = [
        "pad",
        "random_crop",
        "random_rotation",
        "random_affine",
        "random_perspective",
        "trivial_augment",
        "rand_augment",
        "auto_augment",
        "timm_rand_augment",
        "timm_auto_augment",
        "timm_aug_mix",
        "random_resize",
        "random_shortest_size",
        "gaussian_blur",
        "order",
    ];
    for policy in own_form {
        let json = t.to_json()[policy].clone();
        if !json.is_null() {
            spec.insert(policy.into(), json);
        }
    }
    if !t.color_ops.is_empty() {
        // The transform's own JSON form of them.
        spec.insert("color_ops".into(), t.to_json()["color_ops"].clone());
    }
    if t.random_erasing.is_some() {
        // The transform's own JSON form of it.
        spec.insert(
            "random_erasing".into(),
            t.to_json()["random_erasing"].clone(),
        );
    }
    spec.insert("seed".into(), json!(t.seed));
    spec.insert("epoch".into(), json!(t.epoch));
    Value::Object(spec)
}
