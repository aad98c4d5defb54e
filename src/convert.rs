//! The `convert` job: image files in; one `.npy` per image (or one stacked `.npy`) and a JSON
//! report out.
//!
//! Images are decoded in parallel across threads; one bad image never stops the others.

use crate::error::{Error, Result};
use crate::{npy, Backend, Limits, Tensor, Transform};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// File extensions a directory input contributes (compared without case).
pub const IMAGE_EXTENSIONS: [&str; 11] = [
    "jpg", "jpeg", "jpe", "jfif", "jif", "png", "bmp", "gif", "tif", "tiff", "webp",
];

/// Images read and preprocessed together before their outputs are written (in input order), at
/// most: bounds memory. The first chunks are smaller (16, 32, …), so that progress shows early
/// on large images.
const CHUNK: usize = 256;

/// `files` in chunks of 16, 32, 64, … up to [`CHUNK`] files.
fn chunks(files: &[PathBuf]) -> impl Iterator<Item = &[PathBuf]> {
    let mut rest = files;
    let mut size = 16;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (chunk, after) = rest.split_at(size.min(rest.len()));
        rest = after;
        size = (size * 2).min(CHUNK);
        Some(chunk)
    })
}

/// Where the arrays go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// `<dir>/<file name>.npy` per input, and `<dir>/report.json`.
    Directory(PathBuf),
    /// One `.npy` of shape (N, …) of the images that converted, in input order, and
    /// `<stem>.report.json` beside it.
    Stacked(PathBuf),
}

impl Destination {
    /// A path ending in `.npy` is a stacked file; anything else a directory.
    pub fn from_path(path: PathBuf) -> Self {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
        {
            Self::Stacked(path)
        } else {
            Self::Directory(path)
        }
    }

    /// Where the report goes.
    pub fn report_path(&self) -> PathBuf {
        match self {
            Self::Directory(dir) => dir.join("report.json"),
            Self::Stacked(file) => file.with_extension("report.json"),
        }
    }
}

/// What one input became.
#[derive(Debug)]
pub struct ImageReport {
    /// The input path as given (or as found in a directory).
    pub file: PathBuf,
    /// Where its array went, or why there is none.
    pub result: Result<Written>,
}

/// Where one image's array went.
#[derive(Debug)]
pub enum Output {
    /// Its own `.npy` file.
    File(PathBuf),
    /// This index of the stacked array.
    Index(usize),
}

/// A written output.
#[derive(Debug)]
pub struct Written {
    /// Where it is.
    pub output: Output,
    /// Its array shape.
    pub shape: [usize; 3],
}

/// Expands directories into the image files directly inside them, in name order; files stay.
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            files.push(input.clone());
            continue;
        }
        let mut found = Vec::new();
        for entry in fs::read_dir(input).map_err(|e| Error::from(e).in_file(input))? {
            let path = entry.map_err(|e| Error::from(e).in_file(input))?.path();
            if path.is_file() && has_image_extension(&path) {
                found.push(path);
            }
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

fn has_image_extension(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    IMAGE_EXTENSIONS
        .iter()
        .any(|known| ext.eq_ignore_ascii_case(known))
}

/// Why a convert job stopped; one image's failure is in its own report instead.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Two inputs would write the same output file.
    #[error("two inputs named {name:?} ({} and {}) would write the same output", first.display(), second.display())]
    OutputClash {
        /// The shared file name.
        name: String,
        /// The first input with that name.
        first: PathBuf,
        /// The second input with that name.
        second: PathBuf,
    },
    /// The options, or a file of the job (the error names it).
    #[error(transparent)]
    Job(#[from] Error),
}

/// Refuses two inputs whose outputs would have the same name.
pub fn check_unique_names(files: &[PathBuf]) -> Result<(), JobError> {
    let mut seen: HashMap<&std::ffi::OsStr, &Path> = HashMap::new();
    for file in files {
        let name = file.file_name().unwrap_or(file.as_os_str());
        if let Some(first) = seen.insert(name, file) {
            return Err(JobError::OutputClash {
                name: name.to_string_lossy().into_owned(),
                first: first.to_path_buf(),
                second: file.clone(),
            });
        }
    }
    Ok(())
}

/// What to do to each image.
pub struct Job<'a> {
    /// The transform.
    pub transform: Transform,
    /// Safety limits.
    pub limits: Limits,
    /// Where the pixel stages run.
    pub backend: &'a Backend,
    /// Called with (images done, images in all) each time a chunk of outputs is written; `None`
    /// for silence.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

impl Job<'_> {
    fn report_progress(&self, done: usize, total: usize) {
        if let Some(progress) = self.progress {
            progress(done, total);
        }
    }

    /// Loads `files` together (one GPU batch when the backend allows), in order.
    fn load_many(&self, files: &[PathBuf]) -> Vec<Result<Tensor>> {
        let read: Vec<Result<Vec<u8>>> = files.par_iter().map(|f| Ok(fs::read(f)?)).collect();
        let good: Vec<&[u8]> = read.iter().filter_map(|r| r.as_deref().ok()).collect();
        let mut tensors = self
            .backend
            .preprocess_many(&good, &self.transform, &self.limits)
            .into_iter();
        read.into_iter()
            .map(|r| r.and_then(|_| tensors.next().expect("one result per readable file")))
            .collect()
    }
}

/// Preprocesses each file with the job's transform and writes the arrays to `destination`, plus the
/// report. Returns one report per file, in input order. Errors concern the whole job (options,
/// the destination); a bad image only fails its own report.
pub fn convert(
    files: &[PathBuf],
    destination: &Destination,
    job: &Job,
) -> Result<Vec<ImageReport>, JobError> {
    job.transform.validate().map_err(Error::Options)?;
    let reports = match destination {
        Destination::Directory(dir) => convert_to_directory(files, dir, job)?,
        Destination::Stacked(file) => convert_to_stack(files, file, job)?,
    };
    let report_path = destination.report_path();
    fs::write(&report_path, report_json(&reports))
        .map_err(|e| Error::from(e).in_file(&report_path))?;
    Ok(reports)
}

fn convert_to_directory(
    files: &[PathBuf],
    dir: &Path,
    job: &Job,
) -> Result<Vec<ImageReport>, JobError> {
    check_unique_names(files)?;
    fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
    let mut reports = Vec::with_capacity(files.len());
    for chunk in chunks(files) {
        let tensors = job.load_many(chunk);
        let written: Vec<ImageReport> = chunk
            .par_iter()
            .zip(tensors)
            .map(|(file, tensor)| {
                let result = tensor.and_then(|tensor| {
                    let output = output_path(dir, file);
                    let out = fs::File::create(&output)?;
                    npy::write_tensor(std::io::BufWriter::new(out), &tensor)?;
                    Ok(Written {
                        output: Output::File(output),
                        shape: tensor.shape,
                    })
                });
                ImageReport {
                    file: file.clone(),
                    result: result.map_err(|e| e.in_file(file)),
                }
            })
            .collect();
        reports.extend(written);
        job.report_progress(reports.len(), files.len());
    }
    Ok(reports)
}

fn convert_to_stack(files: &[PathBuf], path: &Path, job: &Job) -> Result<Vec<ImageReport>> {
    let transform = &job.transform;
    let Some((width, height)) = transform.fixed_output_size() else {
        return Err(Error::Options(
            "a stacked .npy needs one output size: add --resize WxH or --crop".into(),
        ));
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| Error::from(e).in_file(parent))?;
    }
    let shape = crate::plan::OutputPlan::new((width, height), transform).shape;
    let file = fs::File::create(path).map_err(|e| Error::from(e).in_file(path))?;
    let mut stack = npy::StackedWriter::new(std::io::BufWriter::new(file), transform.dtype, shape)
        .map_err(|e| Error::from(e).in_file(path))?;
    let mut reports = Vec::with_capacity(files.len());
    for chunk in chunks(files) {
        let tensors = job.load_many(chunk);
        for (file, tensor) in chunk.iter().zip(tensors) {
            let result = match tensor {
                Ok(tensor) => {
                    let index = stack
                        .push(&tensor)
                        .map_err(|e| Error::from(e).in_file(path))?;
                    Ok(Written {
                        output: Output::Index(index),
                        shape: tensor.shape,
                    })
                }
                Err(e) => Err(e.in_file(file)),
            };
            reports.push(ImageReport {
                file: file.clone(),
                result,
            });
        }
        job.report_progress(reports.len(), files.len());
    }
    stack.finish().map_err(|e| Error::from(e).in_file(path))?;
    Ok(reports)
}

/// `<dir>/<file name>.npy`.
fn output_path(dir: &Path, file: &Path) -> PathBuf {
    let mut output = dir
        .join(file.file_name().unwrap_or(file.as_os_str()))
        .into_os_string();
    output.push(".npy");
    PathBuf::from(output)
}

/// Writes an RGB image as a uint8 H×W×3 `.npy`.
pub fn write_rgb_npy(path: &Path, image: &crate::RgbImage) -> Result<()> {
    let tensor = Tensor {
        shape: [image.height, image.width, 3],
        data: crate::TensorData::U8(image.data.clone()),
    };
    npy::write_tensor(std::io::BufWriter::new(fs::File::create(path)?), &tensor)?;
    Ok(())
}

/// The report as a JSON array, one object per input in input order.
pub fn report_json(reports: &[ImageReport]) -> String {
    let entries: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            let file = r.file.display().to_string();
            match &r.result {
                Ok(w) => {
                    let mut entry =
                        serde_json::json!({ "file": file, "ok": true, "shape": w.shape });
                    match &w.output {
                        Output::File(path) => entry["output"] = path.display().to_string().into(),
                        Output::Index(i) => entry["index"] = (*i).into(),
                    }
                    entry
                }
                Err(e) => serde_json::json!({ "file": file, "ok": false, "error": e.to_string() }),
            }
        })
        .collect();
    serde_json::to_string_pretty(&entries).expect("JSON values serialise") + "\n"
}
