//! The offline job's samples and their classes: an ImageFolder tree's (each class folder's
//! index in sorted order, as torchvision's ImageFolder gives them), a labels file's, or none.
//!
//! A labels file maps images to classes: JSON, an object of `"name": label`; otherwise CSV
//! (TSV where the file ends in `.tsv`), a row `name,label` an image (a name holding a comma in
//! double quotes), a first row whose name has no extension and names no input taken for a
//! header. A name is the image's path below the folder it was found in
//! (`n01440764/0001.jpg`, with `/`), or its file name. Labels are class indices (integers from
//! 0), or class names, which get indices in sorted order over the file's names (so that every
//! split labelled from one file agrees); a file mixing the two is refused. Every input needs a
//! label: one without is an error naming it, never a sample silently unlabelled; a name given
//! two labels, or a file name that names inputs in several folders, is refused.

use super::ShardInput;
use crate::convert::Input;
use crate::error::{Error, Result};
use std::collections::{BTreeSet, HashMap, HashSet};
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
    let in_labels = |why: String| Error::Options(format!("{}: {why}", labels.display()));
    if found.is_empty() {
        return Err(in_labels(
            "no image among the inputs to label (images in folders below the ones given are \
             taken with --recursive, recursive=True in Python)"
                .into(),
        ));
    }
    let name_of = |input: &Input| input.name.to_string_lossy().replace('\\', "/");
    let file_name_of = |input: &Input| {
        let name = input.path.file_name().unwrap_or_default();
        name.to_string_lossy().into_owned()
    };
    let names: HashSet<String> = found.iter().map(name_of).collect();
    let mut file_names: HashMap<String, usize> = HashMap::new();
    for input in &found {
        *file_names.entry(file_name_of(input)).or_default() += 1;
    }
    let (rows, csv) = read_rows(labels)?;
    let mut rows = rows.as_slice();
    // A CSV's header: a first row whose name is not an image's (no extension) nor an input's.
    if let Some((first, _)) = rows.first().filter(|_| csv) {
        let header =
            !first.contains('.') && !names.contains(first) && !file_names.contains_key(first);
        if header {
            rows = &rows[1..];
        }
    }
    if rows.is_empty() {
        return Err(in_labels("the file holds no row `name,label`".into()));
    }
    let mut by_name: HashMap<&str, &str> = HashMap::new();
    for (name, label) in rows {
        if let Some(other) = by_name.insert(name, label).filter(|other| other != label) {
            return Err(in_labels(format!(
                "{name} is labelled twice, {other} and {label}"
            )));
        }
    }
    let indices = label_indices(rows).map_err(in_labels)?;
    let mut inputs = Vec::with_capacity(found.len());
    let mut missing = Vec::new();
    for input in found {
        let file_name = file_name_of(&input);
        let label = match by_name.get(name_of(&input).as_str()) {
            Some(label) => Some(label),
            None if file_names[&file_name] > 1 && by_name.contains_key(file_name.as_str()) => {
                return Err(in_labels(format!(
                    "{file_name} names {} inputs (in different folders): name them by their \
                     path below the folder given",
                    file_names[&file_name]
                )));
            }
            None => by_name.get(file_name.as_str()),
        };
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
            "no label for {first}{} (each image needs a row `name,label`, naming it by its path \
             below the folder given or by its file name)",
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

/// The class indices of `rows`' labels: integers stand for themselves; names are numbered in
/// sorted order over every row. A file mixing the two is refused (one `n/a` or `3.0` among
/// indices would otherwise renumber every class).
fn label_indices(rows: &[(String, String)]) -> std::result::Result<Indices<'_>, String> {
    let parsed: Vec<Option<i64>> = rows.iter().map(|(_, l)| l.parse().ok()).collect();
    let integer = parsed.iter().position(Option::is_some);
    let name = parsed.iter().position(Option::is_none);
    if let (Some(i), Some(n)) = (integer, name) {
        return Err(format!(
            "labels are all class indices or all class names: {} has {}, {} has {}",
            rows[i].0, rows[i].1, rows[n].0, rows[n].1
        ));
    }
    if name.is_some() {
        let names: BTreeSet<&str> = rows.iter().map(|(_, l)| l.as_str()).collect();
        return Ok(names
            .into_iter()
            .enumerate()
            .map(|(index, name)| (name, (index as i64, true)))
            .collect());
    }
    let mut indices = HashMap::new();
    for ((name, label), index) in rows.iter().zip(parsed.into_iter().flatten()) {
        if index < 0 {
            return Err(format!(
                "{name}'s label {label} is negative (class indices start at 0)"
            ));
        }
        indices.insert(label.as_str(), (index, false));
    }
    Ok(indices)
}

/// The (name, label) rows of the labels file at `path`, and whether it is CSV (or TSV).
fn read_rows(path: &Path) -> Result<(Vec<(String, String)>, bool)> {
    let in_file = |e: std::io::Error| Error::from(e).in_file(path);
    let size = std::fs::metadata(path).map_err(in_file)?.len();
    if size > MAX_LABELS_BYTES {
        return Err(Error::Options(format!(
            "{}: a labels file is at most {MAX_LABELS_BYTES} bytes, this one {size}",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(in_file)?;
    // A byte-order mark (as spreadsheets save CSV) is not part of the first name.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let refused = |why: String| Error::Options(format!("{}: {why}", path.display()));
    if extension.as_deref() == Some("json") {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| refused(format!("not JSON: {e}")))?;
        let object = value
            .as_object()
            .ok_or_else(|| refused("a JSON labels file is an object of \"name\": label".into()))?;
        let rows = object
            .iter()
            .map(|(name, label)| match label {
                serde_json::Value::String(s) => Ok((name.clone(), s.clone())),
                serde_json::Value::Number(n) if n.is_i64() => Ok((name.clone(), n.to_string())),
                other => Err(refused(format!(
                    "{name}'s label {other} is neither a class index nor a class name"
                ))),
            })
            .collect::<Result<_>>()?;
        return Ok((rows, false));
    }
    let separator = if extension.as_deref() == Some("tsv") {
        '\t'
    } else {
        ','
    };
    let rows = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| match fields(line, separator).as_deref() {
            Some([name, label]) if !name.is_empty() && !label.is_empty() => {
                Ok((name.clone(), label.clone()))
            }
            _ => Err(refused(format!(
                "line {}: a row is `name{separator}label` (a name holding {separator:?} in \
                 double quotes), got {line:?}",
                n + 1
            ))),
        })
        .collect::<Result<_>>()?;
    Ok((rows, true))
}

/// A CSV line's fields, trimmed: a field in double quotes may hold the separator, and `""`
/// stands for a quote there. `None` for a quote left open.
fn fields(line: &str, separator: char) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ') {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    '"' => break,
                    c => field.push(c),
                }
            }
            while chars.peek().is_some_and(|c| *c != separator) {
                chars.next();
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != separator) {
                field.push(c);
            }
        }
        fields.push(field.trim().to_string());
        if chars.next().is_none() {
            return Some(fields);
        }
    }
}
