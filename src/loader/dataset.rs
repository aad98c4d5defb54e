//! Datasets whose samples are known up front: a list of files, or a folder in torchvision's
//! `ImageFolder` layout.

use super::order::Split;
use super::shard_index::Shard;
use super::shard_url::ShardUrl;
use super::webdataset;
use super::LoaderOptions;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// torchvision's `IMG_EXTENSIONS`, which `ImageFolder` keeps (compared in lower case).
pub const IMAGE_FOLDER_EXTENSIONS: &[&str] = &[
    "jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp",
];

/// One sample of a dataset: its file and its label (−1 for none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The image file.
    pub path: PathBuf,
    /// Its class index; −1 for a list of files.
    pub label: i64,
}

/// Files in the given order, unlabelled.
pub fn files(paths: &[PathBuf]) -> Vec<Item> {
    paths
        .iter()
        .map(|path| Item {
            path: path.clone(),
            label: -1,
        })
        .collect()
}

/// torchvision's `ImageFolder(root)`: each folder directly under `root` is a class, numbered in
/// sorted name order; its samples are the files with an image extension anywhere below it (links
/// followed), folders in sorted path order and files in sorted name order within each, as
/// `sorted(os.walk(...))` lists them. Returns the class names too.
pub fn image_folder(root: &Path) -> Result<(Vec<Item>, Vec<String>)> {
    let in_root = |e: std::io::Error| Error::from(e).in_file(root);
    let mut classes: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(in_root)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect();
    sort_paths(&mut classes);
    let mut items = Vec::new();
    let mut empty = Vec::new();
    for (label, class) in classes.iter().enumerate() {
        let before = items.len();
        let mut folders = vec![class.clone()];
        collect_folders(class, &mut folders);
        sort_paths(&mut folders);
        for folder in folders {
            let mut names: Vec<PathBuf> = std::fs::read_dir(&folder)
                .map_err(in_root)?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| !path.is_dir() && has_image_extension(path))
                .collect();
            sort_paths(&mut names);
            items.extend(names.into_iter().map(|path| Item {
                path,
                label: label as i64,
            }));
        }
        if items.len() == before {
            empty.push(class_name(class));
        }
    }
    if classes.is_empty() {
        return Err(Error::Options(format!(
            "{}: no class folders (ImageFolder needs root/<class>/<image>)",
            root.display()
        )));
    }
    // torchvision's make_dataset raises likewise (allow_empty=False).
    if !empty.is_empty() {
        return Err(Error::Options(format!(
            "{}: found no valid file for the classes {}; supported extensions are {}",
            root.display(),
            empty.join(", "),
            IMAGE_FOLDER_EXTENSIONS.join(", ")
        )));
    }
    Ok((items, classes.iter().map(|c| class_name(c)).collect()))
}

/// A class folder's name.
fn class_name(class: &Path) -> String {
    class
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Every folder below `folder` (links followed; a link back up is not entered twice).
fn collect_folders(folder: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !into.contains(&path) && !loops_back(&path) {
            into.push(path.clone());
            collect_folders(&path, into);
        }
    }
}

/// Whether the folder `path` is (through links) one of its own ancestors.
fn loops_back(path: &Path) -> bool {
    let Ok(real) = path.canonicalize() else {
        return true;
    };
    path.parent()
        .and_then(|p| p.canonicalize().ok())
        .is_some_and(|parent| parent.starts_with(&real))
}

/// Sorted as Python sorts `str` paths: by code point, which is UTF-8's byte order.
fn sort_paths(paths: &mut [PathBuf]) {
    paths.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
}

fn has_image_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_FOLDER_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The shards at `urls`, each with its samples counted from its members' headers (remote ones
/// several at a time: [`webdataset::count_shards`]), checked as [`checked_shards`] checks them.
pub(super) fn count_and_check(
    urls: &[ShardUrl],
    split: Split,
    options: &LoaderOptions,
) -> Result<Vec<Shard>> {
    check_split(urls.len(), split, options)?;
    let counts = webdataset::count_shards(urls, &options.fetch)?;
    let shards = urls.iter().zip(counts).map(|(url, samples)| Shard {
        url: url.clone(),
        samples,
    });
    checked_shards(shards.collect(), split, options)
}

/// `shards` (counted, or listed with their counts by an index), or an error where there is
/// none, where a shard holds no sample, or where some rank of `split` would get no shard.
pub(super) fn checked_shards(
    shards: Vec<Shard>,
    split: Split,
    options: &LoaderOptions,
) -> Result<Vec<Shard>> {
    check_split(shards.len(), split, options)?;
    if let Some(empty) = shards.iter().find(|s| s.samples == 0) {
        // A rank could draw only empty shards and make fewer batches than the others.
        return Err(Error::Options(format!(
            "{}: the shard holds no sample (every shard needs one, so that every rank makes \
             its batches)",
            empty.url
        )));
    }
    Ok(shards)
}

/// An error where there is no shard, or where `shards` cannot be split between the ranks.
fn check_split(shards: usize, split: Split, options: &LoaderOptions) -> Result<()> {
    if shards == 0 {
        return Err(Error::Options(
            "a loader over shards needs at least one".into(),
        ));
    }
    if shards < split.world_size && !options.resampled {
        return Err(Error::Options(format!(
            "{shards} shard(s) cannot be split between {} ranks: rank {shards} would get none \
             (shards go to ranks whole, as webdataset's split_by_node splits them); give at \
             least as many shards as ranks, or resampled shards",
            split.world_size,
        )));
    }
    Ok(())
}

/// The files of a list, each checked to be there: a missing one is an error up front, as a
/// source that cannot be opened.
pub(super) fn listed_files(paths: &[PathBuf]) -> Result<Vec<Item>> {
    if paths.is_empty() {
        return Err(Error::Options(
            "a loader over a list of files needs at least one".into(),
        ));
    }
    for path in paths {
        std::fs::metadata(path).map_err(|e| Error::from(e).in_file(path))?;
    }
    Ok(files(paths))
}
