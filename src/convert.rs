//! The `convert` job: image files in; one `.npy` per image (or one stacked `.npy`) and a JSON
//! report out.
//!
//! Images are decoded in parallel across threads; one bad image never stops the others.

use crate::error::{Error, Result};
use crate::plan::params_json;
use crate::{npy, Backend, Limits, Tensor, Transform};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Images read and preprocessed together before their outputs are written (in input order), at
/// most: bounds memory. The first chunks are smaller (16, 32, …), so that progress shows early
/// on large images.
const CHUNK: usize = 256;

/// `files` in chunks of 16, 32, 64, … up to [`CHUNK`] files, each with the index of its first
/// file (the sample index of a random transform).
fn chunks(files: &[Input]) -> impl Iterator<Item = (usize, &[Input])> {
    let mut rest = files;
    let mut size = 16;
    let mut first = 0;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (chunk, after) = rest.split_at(size.min(rest.len()));
        rest = after;
        size = (size * 2).min(CHUNK);
        first += chunk.len();
        Some((first - chunk.len(), chunk))
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

    /// Refuses a destination that cannot hold the outputs, before any work: standard output, a
    /// `.npz` (not written), a file where a folder is needed and a folder where a file is.
    pub fn check(&self) -> Result<(), JobError> {
        let refuse = |path: &Path, problem: &str| {
            Err(JobError::Destination {
                path: path.to_path_buf(),
                problem: problem.into(),
            })
        };
        match self {
            Self::Directory(dir) if dir.as_os_str() == "-" => refuse(
                dir,
                "arrays are not written to standard output: name a folder or a FILE.npy",
            ),
            Self::Directory(dir)
                if dir
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("npz")) =>
            {
                refuse(
                    dir,
                    ".npz is not written: name a FILE.npy (one stacked array) or a folder",
                )
            }
            Self::Directory(dir) if dir.exists() && !dir.is_dir() => refuse(
                dir,
                "is a file, not a folder (a FILE.npy gets one stacked array)",
            ),
            Self::Stacked(file) if file.is_dir() => refuse(file, "is a folder, not a .npy file"),
            _ => Ok(()),
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
    /// The random parameters it was made with.
    pub params: crate::Params,
}

/// One input file, and the name its output takes in a destination folder: its file name, or,
/// found by a recursive search, its path below the folder searched (so that `0001.jpg` in every
/// class folder of an ImageFolder tree gets its own output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The file.
    pub path: PathBuf,
    /// Its output's name, `.npy` aside.
    pub name: PathBuf,
}

/// Expands directories into the image files directly inside them, in name order; files stay.
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    Ok(find_inputs(inputs, false)?
        .into_iter()
        .map(|input| input.path)
        .collect())
}

/// Expands directories into their image files, in sorted path order: those directly inside
/// them, or with `recursive` those in every folder below too (symbolic links to folders are not
/// followed); files stay.
pub fn find_inputs(inputs: &[PathBuf], recursive: bool) -> Result<Vec<Input>> {
    let mut found = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            let name = PathBuf::from(input.file_name().unwrap_or(input.as_os_str()));
            found.push(Input {
                path: input.clone(),
                name,
            });
            continue;
        }
        let mut files = Vec::new();
        images_below(input, recursive, &mut files)?;
        files.sort();
        found.extend(files.into_iter().map(|path| Input {
            name: path.strip_prefix(input).unwrap_or(&path).to_path_buf(),
            path,
        }));
    }
    Ok(found)
}

/// The image files in `dir` (and, with `recursive`, below it) into `files`.
fn images_below(dir: &Path, recursive: bool, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(|e| Error::from(e).in_file(dir))? {
        let entry = entry.map_err(|e| Error::from(e).in_file(dir))?;
        let path = entry.path();
        let is_real_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if recursive && is_real_dir {
            images_below(&path, recursive, files)?;
        } else if path.is_file() && has_image_extension(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn has_image_extension(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    crate::formats::is_image_extension(ext)
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
    /// The destination cannot hold the outputs (a file where a folder is needed, say).
    #[error("{}: {problem}", path.display())]
    Destination {
        /// The destination as given.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The options, or an input of the job (the error names it).
    #[error(transparent)]
    Job(#[from] Error),
}

/// Refuses two inputs whose outputs would have the same name.
pub fn check_unique_names(inputs: &[Input]) -> Result<(), JobError> {
    let mut seen: HashMap<&Path, &Path> = HashMap::new();
    for input in inputs {
        if let Some(first) = seen.insert(&input.name, &input.path) {
            return Err(JobError::OutputClash {
                name: input.name.to_string_lossy().into_owned(),
                first: first.to_path_buf(),
                second: input.path.clone(),
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
    /// Looked at before each chunk (the shard job: before each file it reads, and while it
    /// waits): once set (a signal handler sets it), the job stops, keeps what it finished (a
    /// stacked array holds the rows done, the shard job its complete shards) and reports the
    /// inputs it did not reach as [`Error::Interrupted`].
    pub stop: Option<&'a AtomicBool>,
}

impl Job<'_> {
    pub(crate) fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    pub(crate) fn report_progress(&self, done: usize, total: usize) {
        if let Some(progress) = self.progress {
            progress(done, total);
        }
    }

    /// Loads `files`, samples `first..` of a random transform, together (one GPU batch when the
    /// backend allows), in order.
    pub(crate) fn load_many(&self, first: usize, files: &[Input]) -> Vec<Result<Tensor>> {
        let read: Vec<Result<Vec<u8>>> = files.par_iter().map(|f| Ok(fs::read(&f.path)?)).collect();
        let (good, indices): (Vec<&[u8]>, Vec<u64>) = read
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_deref().ok().map(|b| (b, (first + i) as u64)))
            .unzip();
        let samples = crate::Samples::Indices(&indices);
        let mut tensors = self
            .backend
            .preprocess_samples(&good, &self.transform, samples, &self.limits)
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
    files: &[Input],
    destination: &Destination,
    job: &Job,
) -> Result<Vec<ImageReport>, JobError> {
    job.transform.validate().map_err(Error::from)?;
    destination.check()?;
    remove_stale_partials(destination);
    let reports = match destination {
        Destination::Directory(dir) => convert_to_directory(files, dir, job)?,
        Destination::Stacked(file) => convert_to_stack(files, file, job)?,
    };
    let report_path = destination.report_path();
    let report = report_json(&reports, job);
    write_whole(&report_path, |to| {
        std::io::Write::write_all(to, report.as_bytes())
    })?;
    Ok(reports)
}

fn convert_to_directory(
    files: &[Input],
    dir: &Path,
    job: &Job,
) -> Result<Vec<ImageReport>, JobError> {
    check_unique_names(files)?;
    fs::create_dir_all(dir).map_err(|e| cannot_write(dir, e))?;
    let mut reports = Vec::with_capacity(files.len());
    for (first, chunk) in chunks(files) {
        if job.stopped() {
            break;
        }
        let tensors = job.load_many(first, chunk);
        let written: Vec<ImageReport> = chunk
            .par_iter()
            .zip(tensors)
            .map(|(input, tensor)| {
                let output = output_path(dir, input);
                let result = tensor
                    .map_err(|e| e.in_file(&input.path))
                    .and_then(|tensor| {
                        if let Some(parent) = output.parent() {
                            fs::create_dir_all(parent).map_err(|e| cannot_write(parent, e))?;
                        }
                        write_whole(&output, |to| npy::write_tensor(to, &tensor))?;
                        Ok(Written {
                            output: Output::File(output.clone()),
                            shape: tensor.shape,
                            params: tensor.params,
                        })
                    });
                if result.is_err() {
                    // The folder holds no array that this run's report does not account for:
                    // an earlier run's output for this input goes.
                    let _ = fs::remove_file(&output);
                }
                ImageReport {
                    file: input.path.clone(),
                    result,
                }
            })
            .collect();
        reports.extend(written);
        job.report_progress(reports.len(), files.len());
    }
    Ok(not_reached(reports, files))
}

/// `reports`, then each input after them reported as not reached (an interrupted job's).
fn not_reached(mut reports: Vec<ImageReport>, files: &[Input]) -> Vec<ImageReport> {
    let rest = files[reports.len()..].iter().map(|input| ImageReport {
        file: input.path.clone(),
        result: Err(Error::Interrupted),
    });
    reports.extend(rest);
    reports
}

/// Removes what an interrupted earlier run on this machine left under `destination`: the
/// temporary files of its outputs and report (`NAME.partial-HOST-PID`, see [`partial_path`]) of
/// processes no longer running. A running job's stay, and so do other tools' files.
fn remove_stale_partials(destination: &Destination) {
    let stale = |path: &Path, ours: &dyn Fn(&str) -> bool| {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        name.split_once(".partial-")
            .is_some_and(|(output, owner)| ours(output) && owner_is_gone(owner))
    };
    let remove_in = |folder: &Path, ours: &dyn Fn(&str) -> bool, recursive: bool| {
        let mut folders = vec![folder.to_path_buf()];
        while let Some(folder) = folders.pop() {
            let Ok(entries) = fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    if recursive {
                        folders.push(path);
                    }
                } else if stale(&path, ours) {
                    let _ = fs::remove_file(&path);
                }
            }
        }
    };
    match destination {
        Destination::Directory(dir) => {
            let ours = |output: &str| output.ends_with(".npy") || output == "report.json";
            remove_in(dir, &ours, true);
        }
        Destination::Stacked(file) => {
            let report = destination.report_path();
            let names =
                [file.file_name(), report.file_name()].map(|n| n.unwrap_or_default().to_owned());
            let ours = |output: &str| names.iter().any(|n| n.to_string_lossy() == output);
            let folder = file.parent().filter(|p| !p.as_os_str().is_empty());
            remove_in(folder.unwrap_or(Path::new(".")), &ours, false);
        }
    }
}

/// This machine's name as the temporary files carry it (Linux's; elsewhere none, and no file is
/// taken for stale there).
fn host() -> Option<&'static str> {
    static HOST: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let name = HOST.get_or_init(|| {
        let name = fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
        Some(name.trim().to_string()).filter(|n| !n.is_empty())
    });
    name.as_deref()
}

/// Whether the process `HOST-PID` was of this machine and is no longer running.
pub(crate) fn owner_is_gone(owner: &str) -> bool {
    let (Some((host, pid)), Some(here)) = (owner.rsplit_once('-'), host()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    host == here && pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists()
}

/// Writes `path` whole or not at all: into a temporary file beside it, renamed to `path` once
/// complete (so that an interrupted run never leaves a half-written file under the final name),
/// removed on failure.
pub(crate) fn write_whole(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let partial = partial_path(path);
    let written = fs::File::create(&partial).and_then(|file| {
        let mut to = std::io::BufWriter::new(file);
        write(&mut to)?;
        finish_file(to, &partial, path)
    });
    written.map_err(|e| {
        let _ = fs::remove_file(&partial);
        cannot_write(path, e)
    })
}

/// Where `path` is written until it is complete: beside it, named for the machine and the
/// process writing it, so that a later run can tell a file left by a run that is gone.
pub(crate) fn partial_path(path: &Path) -> PathBuf {
    let mut partial = path.as_os_str().to_owned();
    let host = host().unwrap_or("host");
    partial.push(format!(".partial-{host}-{}", std::process::id()));
    PathBuf::from(partial)
}

/// Flushes and syncs `to` (the file at `partial`), then gives it its final name.
pub(crate) fn finish_file(
    to: std::io::BufWriter<fs::File>,
    partial: &Path,
    path: &Path,
) -> std::io::Result<()> {
    to.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    fs::rename(partial, path)
}

pub(crate) fn cannot_write(path: &Path, e: std::io::Error) -> Error {
    Error::CannotWrite {
        path: path.to_path_buf(),
        source: std::sync::Arc::new(e),
    }
}

fn convert_to_stack(files: &[Input], path: &Path, job: &Job) -> Result<Vec<ImageReport>, JobError> {
    let transform = &job.transform;
    // One output size: fixed by the transform, or that of the one input.
    let mut first = None;
    let shape = match transform.fixed_output_shape() {
        Some(shape) => shape,
        None if files.len() == 1 => {
            let tensor = job.load_many(0, files).remove(0);
            let shape = tensor.as_ref().map_or([0, 0, 3], |t| t.shape);
            first = Some(tensor);
            shape
        }
        None => return Err(Error::Options(
            "a stacked .npy of several images needs one output size: add --resize WxH or --crop"
                .into(),
        )
        .into()),
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| cannot_write(parent, e))?;
    }
    let partial = partial_path(path);
    let written = write_stack(files, &partial, shape, first, job).and_then(|(to, reports)| {
        finish_file(to, &partial, path).map_err(|e| cannot_write(path, e))?;
        Ok(reports)
    });
    written.map_err(|e| {
        let _ = fs::remove_file(&partial);
        JobError::from(e)
    })
}

/// The stacked array of `files` written to `partial` (the first file's tensor already made,
/// when given); returns the writer, to be finished, and the reports.
fn write_stack(
    files: &[Input],
    partial: &Path,
    shape: [usize; 3],
    mut first: Option<Result<Tensor>>,
    job: &Job,
) -> Result<(std::io::BufWriter<fs::File>, Vec<ImageReport>)> {
    let write_error = |e| cannot_write(partial, e);
    let file = fs::File::create(partial).map_err(write_error)?;
    let mut stack =
        npy::StackedWriter::new(std::io::BufWriter::new(file), job.transform.dtype, shape)
            .map_err(write_error)?;
    let mut reports = Vec::with_capacity(files.len());
    for (at, chunk) in chunks(files) {
        if job.stopped() {
            break;
        }
        let tensors = match first.take() {
            Some(tensor) => vec![tensor],
            None => job.load_many(at, chunk),
        };
        for (input, tensor) in chunk.iter().zip(tensors) {
            let result = match tensor {
                Ok(tensor) => {
                    let index = stack.push(&tensor).map_err(write_error)?;
                    Ok(Written {
                        output: Output::Index(index),
                        shape: tensor.shape,
                        params: tensor.params,
                    })
                }
                Err(e) => Err(e.in_file(&input.path)),
            };
            reports.push(ImageReport {
                file: input.path.clone(),
                result,
            });
        }
        job.report_progress(reports.len(), files.len());
    }
    let to = stack.finish_into().map_err(write_error)?;
    Ok((to, not_reached(reports, files)))
}

/// `<dir>/<input's name>.npy`.
fn output_path(dir: &Path, input: &Input) -> PathBuf {
    let mut output = dir.join(&input.name).into_os_string();
    output.push(".npy");
    PathBuf::from(output)
}

/// Writes an RGB image as a uint8 H×W×3 `.npy`.
pub fn write_rgb_npy(path: &Path, image: &crate::RgbImage) -> Result<()> {
    let tensor = Tensor {
        shape: [image.height, image.width, 3],
        data: crate::TensorData::U8(image.data.clone()),
        params: Default::default(),
    };
    npy::write_tensor(std::io::BufWriter::new(fs::File::create(path)?), &tensor)?;
    Ok(())
}

/// The report: how the outputs were made (gpuprep's version, the backend and adapter, the
/// transform and limits), then one object per input in input order, its output or its error. A
/// path that is not UTF-8 is also given as the hex of its bytes (`file_hex`, `output_hex`), so
/// that it can be found again (`os.fsdecode(bytes.fromhex(...))`).
pub fn report_json(reports: &[ImageReport], job: &Job) -> String {
    let images: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            let mut entry = serde_json::json!({});
            path_fields(&mut entry, "file", &r.file);
            match &r.result {
                Ok(w) => {
                    entry["ok"] = true.into();
                    entry["shape"] = w.shape.to_vec().into();
                    if job.transform.is_random() {
                        entry["params"] = params_json(&w.params);
                    }
                    match &w.output {
                        Output::File(path) => path_fields(&mut entry, "output", path),
                        Output::Index(i) => entry["index"] = (*i).into(),
                    }
                }
                Err(e) => {
                    entry["ok"] = false.into();
                    entry["error"] = e.to_string().into();
                    entry["kind"] = e.kind_name().into();
                }
            }
            entry
        })
        .collect();
    let interrupted = reports
        .iter()
        .any(|r| matches!(r.result, Err(Error::Interrupted)));
    let report = serde_json::json!({
        "gpuprep": env!("CARGO_PKG_VERSION"),
        "interrupted": interrupted,
        "backend": job.backend.describe(),
        "transform": job.transform.to_json(),
        "limits": {
            "max_pixels": job.limits.max_pixels,
            "max_scans": job.limits.max_scans,
            "load_truncated": job.limits.load_truncated,
        },
        "images": images,
    });
    serde_json::to_string_pretty(&report).expect("JSON values serialise") + "\n"
}

/// `path` as `key` (its text, lossy where it is not UTF-8) and, where it is not UTF-8, as
/// `key_hex` (its bytes).
fn path_fields(entry: &mut serde_json::Value, key: &str, path: &Path) {
    entry[key] = path.display().to_string().into();
    if path.to_str().is_none() {
        let bytes = path.as_os_str().as_encoded_bytes();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        entry[format!("{key}_hex")] = hex.into();
    }
}
