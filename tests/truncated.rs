//! Files that end early, against what Pillow made of the same truncations
//! (tests/goldens/truncated.tsv): refused by default, as Pillow refuses them; with
//! `Limits::load_truncated`, the very pixels Pillow gives with `LOAD_TRUNCATED_IMAGES = True`.

mod common;

use gpuprep::{Error, Limits};
use std::collections::BTreeMap;

/// One row of tests/goldens/truncated.tsv.
struct Truncation {
    file: String,
    kept: usize,
    strict_error: String,
    lenient_sha256: String,
    /// Pillow's image with the flag has one value everywhere (libjpeg output nothing).
    lenient_blank: bool,
}

fn truncations() -> Vec<Truncation> {
    let text = std::fs::read_to_string(common::manifest_dir().join("tests/goldens/truncated.tsv"))
        .expect("tests/goldens/truncated.tsv (made by tools/goldens.py)");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("file\t"))
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            Truncation {
                file: f[0].to_string(),
                kept: f[1].parse().unwrap(),
                strict_error: f[2].to_string(),
                lenient_sha256: f[3].to_string(),
                lenient_blank: f[4] == "yes",
            }
        })
        .collect()
}

#[test]
fn truncated_files_decode_as_pillow_decodes_them() {
    let rows = truncations();
    assert!(rows.len() > 1000, "{} truncations", rows.len());
    let lenient = Limits {
        load_truncated: true,
        ..Limits::default()
    };
    let mut files = BTreeMap::new();
    let mut failures = Vec::new();
    let mut counts = BTreeMap::<&str, usize>::new();
    for row in &rows {
        let bytes = files.entry(row.file.clone()).or_insert_with(|| {
            std::fs::read(common::manifest_dir().join("tests/data").join(&row.file)).unwrap()
        });
        let data = &bytes[..row.kept];
        let what = format!("{} cut at {} of {}", row.file, row.kept, bytes.len());
        let lenient_result = gpuprep::decode_rgb(data, &lenient);
        let lenient_exact = match (&lenient_result, row.lenient_sha256.as_str()) {
            (Ok(rgb), "") => {
                failures.push(format!(
                    "{what}: decoded {}x{} with load_truncated, Pillow refuses it",
                    rgb.width, rgb.height
                ));
                false
            }
            (Ok(rgb), sha) if common::sha256_hex(&rgb.data) == sha => {
                *counts.entry("lenient: Pillow's pixels").or_default() += 1;
                true
            }
            (Ok(_), _) => {
                failures.push(format!("{what}: pixels differ from Pillow's"));
                false
            }
            (Err(_), "") => {
                *counts
                    .entry("lenient: refused, as Pillow refuses")
                    .or_default() += 1;
                false
            }
            // libjpeg output nothing before the data ran out (a multi-scan file cut inside a
            // marker segment): Pillow returns its blank buffer, gpuprep refuses to invent one.
            (Err(Error::Truncated(_) | Error::Corrupt { .. }), _) if row.lenient_blank => {
                *counts
                    .entry("lenient: refused, Pillow gives a blank image")
                    .or_default() += 1;
                false
            }
            (Err(e), _) => {
                failures.push(format!(
                    "{what}: {e} with load_truncated, Pillow decodes what is there"
                ));
                false
            }
        };
        match (
            gpuprep::decode_rgb(data, &Limits::default()),
            row.strict_error.as_str(),
        ) {
            (Ok(_), "") => {
                *counts
                    .entry("strict: decoded, as Pillow decodes")
                    .or_default() += 1
            }
            (Ok(_), error) => failures.push(format!("{what}: decoded, Pillow: {error}")),
            // Pillow accepts scan data that stops in its last bytes when libjpeg's read-ahead
            // happened not to need them; gpuprep reads further ahead and refuses. The pixels
            // are there with load_truncated.
            (Err(Error::Truncated(_)), "") if lenient_exact => {
                *counts
                    .entry("strict: refused, Pillow decodes (exact when lenient)")
                    .or_default() += 1
            }
            (Err(e), "") => failures.push(format!("{what}: {e}, Pillow decodes it")),
            (Err(e), error) if error.contains("truncated") || error.contains("Truncated") => {
                if matches!(e, Error::Truncated(_)) {
                    *counts.entry("strict: Truncated, as Pillow").or_default() += 1
                } else {
                    failures.push(format!("{what}: {e}, Pillow: {error}"))
                }
            }
            (Err(_), _) => {
                *counts
                    .entry("strict: refused, as Pillow refuses")
                    .or_default() += 1
            }
        }
    }
    println!("{counts:#?}");
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
