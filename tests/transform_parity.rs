//! Every golden transform (Pillow resize + torchvision tensor arithmetic) is bit-identical.

mod common;

use common::TransformGolden;
use gpuprep::DType;
use gpuprep::Limits;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "uint8",
        DType::F32 => "float32",
        DType::F16 => "float16",
    }
}

/// Checks all transforms of one file; returns the failures.
fn check_file(root: &Path, file: &str, goldens: &[&TransformGolden]) -> Vec<String> {
    let specs = common::transform_specs();
    let bytes = std::fs::read(root.join(file)).unwrap();
    goldens
        .iter()
        .filter_map(|g| {
            let (name, sample) = g.spec_and_sample();
            let transform = &specs[name];
            let cpu = gpuprep::Backend::Cpu;
            let tensor = match cpu.preprocess_sample(&bytes, transform, &sample, &Limits::default())
            {
                Ok(t) => t,
                // Formats (or variants) that gpuprep names as unsupported: decode_parity counts.
                Err(
                    gpuprep::Error::UnknownFormat { .. } | gpuprep::Error::UnsupportedImage { .. },
                ) => return None,
                Err(e) => return Some(format!("{file} {}: {e}", g.transform)),
            };
            if tensor.shape.to_vec() != g.shape || dtype_name(tensor.dtype()) != g.dtype {
                return Some(format!(
                    "{file} {}: {:?} {:?} vs Pillow's {:?} {}",
                    g.transform,
                    tensor.shape,
                    tensor.dtype(),
                    g.shape,
                    g.dtype
                ));
            }
            if let Some(params) = &g.params {
                let ours = common::params_json(&tensor.params);
                if ours != *params {
                    return Some(format!(
                        "{file} {}: drew {ours}, Python drew {params}",
                        g.transform
                    ));
                }
            }
            (common::sha256_hex(&tensor.to_le_bytes()) != g.sha256).then(|| {
                format!(
                    "{file} {}: values differ from Pillow + torchvision",
                    g.transform
                )
            })
        })
        .collect()
}

fn check_root(root: &Path) {
    let goldens = common::transform_goldens();
    let mut by_file: BTreeMap<&str, Vec<&TransformGolden>> = BTreeMap::new();
    for g in goldens.iter().filter(|g| root.join(&g.file).is_file()) {
        by_file.entry(g.file.as_str()).or_default().push(g);
    }
    assert!(
        !by_file.is_empty(),
        "no transform goldens for {}",
        root.display()
    );
    let failures: Vec<String> = by_file
        .par_iter()
        .flat_map(|(file, goldens)| check_file(root, file, goldens))
        .collect();
    let checked: usize = by_file.values().map(Vec::len).sum();
    println!(
        "{}: {} files x transforms = {checked} outputs, {} identical, {} failed",
        root.display(),
        by_file.len(),
        checked - failures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn test_data_transforms_match_pillow_and_torchvision() {
    check_root(&common::manifest_dir().join("tests/data"));
}

#[test]
fn shared_corpus_transforms_match_pillow_and_torchvision() {
    match common::shared_corpus() {
        Some(root) => check_root(&root),
        None => {
            println!("shared corpus not found beside the checkout: only tests/data was checked")
        }
    }
}
