//! What the benches share: the folder of JPEGs they run over.

use std::path::PathBuf;

/// The folder's name and its JPEG files' bytes: GPUPREP_BENCH_DIR, else
/// `../shared/bench/photos-imagenet` when present, else the bundled photos.
pub fn bench_files() -> (String, Vec<Vec<u8>>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("GPUPREP_BENCH_DIR")
        .map(PathBuf::from)
        .or_else(|| Some(root.join("../shared/bench/photos-imagenet")).filter(|d| d.is_dir()))
        .unwrap_or_else(|| root.join("tests/data/photos"));
    let files = gpuprep::convert::expand_inputs(std::slice::from_ref(&dir)).expect("bench folder");
    let bytes = files
        .iter()
        .map(|f| std::fs::read(f).expect("readable"))
        .collect();
    let name = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    (name, bytes)
}
