//! The offline job's samples and their classes: an ImageFolder tree's (each class folder's
//! index in sorted order, as torchvision's ImageFolder gives them), a labels file's, or none.
//!
//! A labels file maps images to classes: JSON, an object of `"name": label`; otherwise CSV
//! (TSV where the file ends in `.tsv`), a row `name,label` an image, a first row that names
//! no input taken for a header. A name is the image's path below the folder it was found in
//! (`n01440764/0001.jpg`, with `/`), or its file name. Labels are class indices (integers from
//! 0), or class names, which get indices in sorted order over the file's names (so that every
//! split labelled from one file agrees). Every input needs a label: one without is an error
//! naming it, never a sample silently unlabelled.

use super::ShardInput;
use crate::convert::Input;
use crate::error::{Error, Result};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// A labels file's size, at most.
const MAX_LABELS_BYTES: u64 = 256 << 20;

/// The samples of an ImageFolder tree at `root`: each image with its class folder's index and
/// name.
pub fn image_folder_inputs(root: &Path) -> Result<Vec<ShardInput>> {
    let (items, classes) = crate::loader::dataset::image_folder(root)?;
    Ok(items
        .into_iter()
        .map(|item| ShardInput {
            class: usize::try_from(item.label)
                .ok()
                .and_then(|l| classes.get(l).cloned()),
            path: item.path,
            label: item.label,
        })
        .collect())
}

/// `found` as unlabelled samples.
pub fn unlabelled_inputs(found: Vec<Input>) -> Vec<ShardInput> {
    found
        .into_iter()
        .map(|input| ShardInput {
            path: input.path,
            label: -1,
            class: None,
        })
        .collect()
}

/// `found` labelled by the labels file at `labels` (see the module's doc).
pub fn labelled_inputs(found: Vec<Input>, labels: &Path) -> Result<Vec<ShardInput>> {
    let rows = read_rows(labels)?;
    let in_labels = |why: String| Error::Options(format!("{}: {why}", labels.display()));
    let name_of = |input: &Input| input.name.to_string_lossy().replace('\\', "/");
    let file_name_of = |input: &Input| {
        let name = input.path.file_name().unwrap_or_default();
        name.to_string_lossy().into_owned()
    };
    let mut rows = rows.as_slice();
    if let Some((first, _)) = rows.first() {
        let names_an_input = found
            .iter()
            .any(|i| name_of(i) == *first || file_name_of(i) == *first);
        if !names_an_input {
            rows = &rows[1..];
        }
    }
    let by_name: HashMap<&str, &str> = rows
        .iter()
        .map(|(name, label)| (name.as_str(), label.as_str()))
        .collect();
    let indices = label_indices(rows).map_err(in_labels)?;
    let mut inputs = Vec::with_capacity(found.len());
    let mut missing = Vec::new();
    for input in found {
        let label = by_name
            .get(name_of(&input).as_str())
            .or_else(|| by_name.get(file_name_of(&input).as_str()));
        let Some(&label) = label else {
            missing.push(input.path.display().to_string());
            continue;
        };
        let (index, class) = &indices[label];
        inputs.push(ShardInput {
            path: input.path,
            label: *index,
            class: class.then(|| label.to_string()),
        });
    }
    if let Some(first) = missing.first() {
        return Err(in_labels(format!(
            "no label for {first}{} (a row `name,label` an image: its path below the folder \
             given, or its file name)",
            match missing.len() {
                1 => String::new(),
                n => format!(" and {} other inputs", n - 1),
            }
        )));
    }
    Ok(inputs)
}

/// Each label's class index, and whether the label is a class name.
type Indices<'a> = HashMap<&'a str, (i64, bool)>;

/// The class indices of `rows`' labels: integers stand for themselves; names (where any label
/// is not an integer, all are names) are numbered in sorted order.
fn label_indices(rows: &[(String, String)]) -> std::result::Result<Indices<'_>, String> {
    let integers: Option<Vec<i64>> = rows.iter().map(|(_, l)| l.parse().ok()).collect();
    let Some(integers) = integers else {
        let names: BTreeSet<&str> = rows.iter().map(|(_, l)| l.as_str()).collect();
        return Ok(names
            .into_iter()
            .enumerate()
            .map(|(index, name)| (name, (index as i64, true)))
            .collect());
    };
    let mut indices = HashMap::new();
    for ((name, label), index) in rows.iter().zip(integers) {
        if index < 0 {
            return Err(format!(
                "{name}'s label {label} is negative (class indices start at 0)"
            ));
        }
        indices.insert(label.as_str(), (index, false));
    }
    Ok(indices)
}

/// The (name, label) rows of the labels file at `path`.
fn read_rows(path: &Path) -> Result<Vec<(String, String)>> {
    let in_file = |e: std::io::Error| Error::from(e).in_file(path);
    let size = std::fs::metadata(path).map_err(in_file)?.len();
    if size > MAX_LABELS_BYTES {
        return Err(Error::Options(format!(
            "{}: a labels file is at most {MAX_LABELS_BYTES} bytes, this one {size}",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(in_file)?;
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let refused = |why: String| Error::Options(format!("{}: {why}", path.display()));
    if extension.as_deref() == Some("json") {
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| refused(format!("not JSON: {e}")))?;
        let object = value
            .as_object()
            .ok_or_else(|| refused("a JSON labels file is an object of \"name\": label".into()))?;
        return object
            .iter()
            .map(|(name, label)| match label {
                serde_json::Value::String(s) => Ok((name.clone(), s.clone())),
                serde_json::Value::Number(n) if n.is_i64() => Ok((name.clone(), n.to_string())),
                other => Err(refused(format!(
                    "{name}'s label {other} is neither a class index nor a class name"
                ))),
            })
            .collect();
    }
    let separator = if extension.as_deref() == Some("tsv") {
        '\t'
    } else {
        ','
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            let mut fields = line.split(separator).map(|f| f.trim().trim_matches('"'));
            match (fields.next(), fields.next()) {
                (Some(name), Some(label)) if !name.is_empty() && !label.is_empty() => {
                    Ok((name.to_string(), label.to_string()))
                }
                _ => Err(refused(format!(
                    "line {}: a row is `name{separator}label`, got {line:?}",
                    n + 1
                ))),
            }
        })
        .collect()
}
