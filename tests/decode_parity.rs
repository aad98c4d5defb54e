//! Decoding is bit-identical to Pillow 12.0.0 (libjpeg-turbo 3.1.2) on every image it decodes.

mod common;

use common::Golden;
use gpuprep::{Error, Limits, Unsupported};
use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// How one file fared against its golden.
enum Verdict {
    /// Same pixels as Pillow.
    Identical,
    /// Pillow refused it, and so did we (or we decoded it anyway): both allowed.
    BothRefused,
    /// A format (or a variant of one) gpuprep does not read and Pillow does: refused by name.
    OtherFormat,
    /// Out of scope: coding processes Pillow decodes but gpuprep names as unsupported.
    OutOfScope,
    /// A failure, described.
    Failed(String),
}

fn check(root: &Path, golden: &Golden) -> Verdict {
    let path = root.join(&golden.file);
    let bytes = std::fs::read(&path).expect("file listed in goldens");
    if common::sha256_hex(&bytes) != golden.file_sha256 {
        return Verdict::Failed(format!(
            "{}: file changed since goldens were made",
            golden.file
        ));
    }
    let decoded = catch_unwind(AssertUnwindSafe(|| {
        gpuprep::decode_rgb(&bytes, &Limits::default())
    }));
    let Ok(decoded) = decoded else {
        return Verdict::Failed(format!("{}: PANIC", golden.file));
    };
    match (&golden.rgb, decoded) {
        (None, _) => Verdict::BothRefused,
        (
            Some(_),
            Err(Error::Unsupported(Unsupported::ArithmeticCoding | Unsupported::Lossless)),
        ) => Verdict::OutOfScope,
        (Some(_), Err(Error::UnknownFormat { .. } | Error::UnsupportedImage { .. })) => {
            Verdict::OtherFormat
        }
        (Some(_), Err(e)) => {
            Verdict::Failed(format!("{}: Pillow decodes it, we say: {e}", golden.file))
        }
        (Some((w, h, sha)), Ok(rgb)) => {
            if (rgb.width, rgb.height) != (*w, *h) {
                Verdict::Failed(format!(
                    "{}: size {}x{} vs Pillow's {w}x{h}",
                    golden.file, rgb.width, rgb.height
                ))
            } else if common::sha256_hex(&rgb.data) != *sha {
                Verdict::Failed(common::report_mismatch(&golden.file, &path, &rgb))
            } else {
                Verdict::Identical
            }
        }
    }
}

/// Checks every golden whose file exists under `root`; panics listing all failures.
fn check_root(root: &Path) {
    let goldens: Vec<Golden> = common::goldens()
        .into_values()
        .filter(|g| root.join(&g.file).is_file())
        .collect();
    assert!(
        !goldens.is_empty(),
        "no golden files under {}",
        root.display()
    );
    let verdicts: Vec<Verdict> = goldens.par_iter().map(|g| check(root, g)).collect();
    let count = |f: fn(&Verdict) -> bool| verdicts.iter().filter(|v| f(v)).count();
    let failures: Vec<&String> = verdicts
        .iter()
        .filter_map(|v| match v {
            Verdict::Failed(why) => Some(why),
            _ => None,
        })
        .collect();
    println!(
        "{}: {} files: {} identical to Pillow, {} refused by Pillow (no panic here), {} out of scope (arithmetic/lossless), {} other formats, {} failed",
        root.display(),
        verdicts.len(),
        count(|v| matches!(v, Verdict::Identical)),
        count(|v| matches!(v, Verdict::BothRefused)),
        count(|v| matches!(v, Verdict::OutOfScope)),
        count(|v| matches!(v, Verdict::OtherFormat)),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Guard against a golden set that silently lost its decodable images.
    assert!(count(|v| matches!(v, Verdict::Identical)) > goldens.len() / 3);
}

#[test]
fn test_data_decodes_identically_to_pillow() {
    check_root(&common::manifest_dir().join("tests/data"));
}

#[test]
fn shared_corpus_decodes_identically_to_pillow() {
    match common::shared_corpus() {
        Some(root) => check_root(&root),
        None => {
            println!("shared corpus not found beside the checkout: only tests/data was checked")
        }
    }
}
