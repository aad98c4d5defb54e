//! The offline job that writes a dataset as WebDataset shards: each image decoded, resized (as
//! torchvision's `Resize` on a PIL image) and encoded as Pillow's `save(f, "JPEG", ...)` would
//! write it, byte for byte, into tar shards as webdataset's `ShardWriter` writes them.
//!
//! Sample `n` of the inputs (in their order) has the key `n` written with nine digits; its
//! members are `KEY.jpg`, `KEY.cls` (its class, where the inputs have labels) and `KEY.json`
//! (its source path, its original size, its class's name where the classes have names, and the
//! job's settings as fields). A shard is started when the one
//! being written holds `max_samples` samples or `max_bytes` bytes. Each shard is written under a
//! temporary name and renamed whole, so a shard under its own name is complete: a job run again
//! over the same inputs and settings keeps the shards there and writes the rest, to the same
//! bytes. An input that cannot be read, decoded or encoded is left out and listed (sample,
//! source, error) in the job's report; the job goes on. A failure of the GPU's own (a lost
//! device, a submission that failed) ends the job with its error instead: the shards written
//! stay, and a run again writes the rest.

mod flow;
mod labels;

pub use labels::{image_folder_inputs, labelled_inputs, unlabelled_inputs};

use crate::convert::{self, Job};
use crate::encode::JpegOptions;
use crate::error::{Error, Result};
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One image of the dataset and its class (−1: none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInput {
    /// The image file.
    pub path: PathBuf,
    /// Its class index, or −1.
    pub label: i64,
    /// Its class's name, where the classes have names (an ImageFolder's folders, a labels
    /// file's names): written in the sample's JSON.
    pub class: Option<String>,
}

/// Where shards go: a path with one `%0Nd` (or `%d`), the shard's number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardPattern {
    before: String,
    width: usize,
    after: String,
}

impl ShardPattern {
    /// The pattern of `text`, which holds exactly one `%d` or `%0Nd`.
    pub fn parse(text: &str) -> Result<Self> {
        let refused = || {
            Error::Options(format!(
                "{text}: a shard pattern holds one %d or %0Nd, the shard's number (e.g. \
                 shards/train-%06d.tar)"
            ))
        };
        let (before, rest) = text.split_once('%').ok_or_else(refused)?;
        let (digits, after) = rest.split_once('d').ok_or_else(refused)?;
        // `%6d` pads with spaces in Python (as webdataset's ShardWriter formats it): only
        // `%d` and zero-padded `%0Nd` are taken.
        let padded = digits.is_empty() || digits.starts_with('0');
        if after.contains('%') || !digits.chars().all(|c| c.is_ascii_digit()) || !padded {
            return Err(refused());
        }
        let compressed = [".gz", ".tgz", ".bz2", ".xz", ".zst", ".lz4"];
        if compressed
            .iter()
            .any(|c| after.to_ascii_lowercase().ends_with(c))
        {
            return Err(Error::Options(format!(
                "{text}: shards are written as plain .tar files (the loader reads no compressed \
                 shard)"
            )));
        }
        let width = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| refused())?
        };
        Ok(Self {
            before: before.into(),
            width: width.min(20),
            after: after.into(),
        })
    }

    /// Shard `n`'s path.
    pub fn path(&self, n: usize) -> PathBuf {
        PathBuf::from(format!(
            "{}{n:0width$}{}",
            self.before,
            self.after,
            width = self.width
        ))
    }
}

/// What the job writes.
#[derive(Clone, Debug)]
pub struct ShardOptions {
    /// The shards' paths.
    pub pattern: ShardPattern,
    /// The encoder's settings.
    pub jpeg: JpegOptions,
    /// A shard is closed once it holds this many samples.
    pub max_samples: usize,
    /// ... or this many bytes.
    pub max_bytes: u64,
    /// JPEG's forward stages (colour, downsampling, DCT, quantisation) on the job's GPU where
    /// its backend is one, rather than on CPU threads: the same bytes either way.
    pub forward_on_gpu: bool,
}

/// What a job did.
#[derive(Clone, Debug, Default)]
pub struct ShardReport {
    /// The shards written by this run, in order.
    pub written: Vec<PathBuf>,
    /// The complete shards found from an earlier run and kept.
    pub kept: usize,
    /// Samples written by this run.
    pub samples: usize,
    /// (sample, source, error) of the inputs left out by this run.
    pub failed: Vec<(usize, PathBuf, String)>,
    /// Where this run's time went.
    pub times: StageTimes,
    /// This run's wall time, from its first file read to its last shard written (the backend
    /// was opened before): the job's own rate is `samples` over it.
    pub elapsed: Duration,
}

/// Where a job's time went. Its stages run at once (see `flow`): files are read ahead, the
/// GPU decodes and resizes while the encoding threads encode what it made before, and the
/// writer writes what they made; the stage nearest its own wall time is the one that bounds
/// the job.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    /// Reading the input files: the reading threads' time, summed over the four of them.
    pub reading: Duration,
    /// Decoding and resizing them: on a GPU backend, the wall time of its stream (which reads
    /// the images back, and includes `waiting`); on the CPU backend, the encoding threads'
    /// time decoding, summed.
    pub decoding: Duration,
    /// JPEG's forward stages on the GPU (colour, downsampling, DCT, quantisation), where they
    /// run there ([`ShardOptions::forward_on_gpu`] on a GPU backend); else they are part of
    /// `encoding`, and this is zero.
    pub forward: Duration,
    /// Encoding the JPEGs: the encoding threads' time, summed over
    /// [`Self::encoding_threads`] threads.
    pub encoding: Duration,
    /// The threads that encode.
    pub encoding_threads: usize,
    /// Writing the shards (the writer's wall time).
    pub writing: Duration,
    /// The decoding side held back while the images it made waited for an encoding thread.
    pub waiting: Duration,
    /// On a GPU backend, what its stream's time went to: see [`StreamTimes`].
    pub stream: StreamTimes,
}

/// Where a GPU stream's time went, to tell which side bounds it (zero on the CPU backend). Wall
/// times: on a machine whose cores are all busy, each includes its waits for a core.
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamTimes {
    /// Preparing the images for the GPU on CPU threads (parsing, un-stuffing, and the whole
    /// Huffman decoding of progressive files), summed over the images.
    pub preparing: Duration,
    /// The submitting thread waiting for images still being prepared (while the submissions
    /// before may still run on the GPU).
    pub starved: Duration,
    /// Packing, uploading and recording each submission, on the stream's thread.
    pub submitting: Duration,
    /// The landing waiting for the GPU to finish a submission.
    pub executing: Duration,
    /// The landing copying the images out of the read-back buffer, on the thread pool the
    /// preparing uses (its waits for those threads included).
    pub reading_back: Duration,
}

/// Writes `inputs` as shards (see the module's doc) with `job`'s transform (its resize) on its
/// backend; `job.progress` hears (samples done, samples in all).
pub fn write_shards(
    inputs: &[ShardInput],
    options: &ShardOptions,
    job: &Job,
) -> Result<ShardReport> {
    job.transform.validate()?;
    if inputs.is_empty() {
        return Err(Error::Options("no image among the inputs".into()));
    }
    if !(1..=100).contains(&options.jpeg.quality) {
        return Err(Error::Options(format!(
            "quality is 1 to 100, got {}",
            options.jpeg.quality
        )));
    }
    if options.max_samples == 0 || options.max_bytes == 0 {
        return Err(Error::Options(
            "a shard holds at least one sample and one byte".into(),
        ));
    }
    let settings = settings(job, options, inputs);
    remove_stale_partials(&options.pattern);
    let earlier = complete_shards(&options.pattern, &settings, inputs)?;
    let (kept, first) = (earlier.shards, earlier.next);
    // Inputs that failed in the run that wrote the kept shards fail again here, so that a job
    // whose inputs did not all make it never ends as if they had.
    let failed_before = earlier.missing.into_iter().map(|n| {
        let why = "left out of the kept shards: it failed when they were written (to write it \
                   now, remove the shard it would be in and those after it, and run again)";
        (n, inputs[n].path.clone(), why.to_string())
    });
    let mut report = ShardReport {
        kept,
        failed: failed_before.collect(),
        ..ShardReport::default()
    };
    let started = Instant::now();
    let flow = flow::Flow::new(inputs, first, job, &options.jpeg, options.forward_on_gpu);
    let written = std::thread::scope(|threads| {
        let (to_writer, outcomes) = std::sync::mpsc::sync_channel(flow::WRITER_QUEUE);
        let flowing = threads.spawn(|| flow.run(to_writer));
        // However the writer ends (an error, a panic), the other stages stop.
        let abort = AbortOnDrop(&flow);
        let writer = Writer {
            options,
            settings: &settings,
            shard: None,
            number: kept,
            report: &mut report,
        };
        let written = write_in_order(writer, first, inputs, outcomes, &flow);
        drop(abort);
        let flowed = flowing
            .join()
            .unwrap_or_else(|panic| Err(Error::from_panic(&*panic)));
        flowed.and(written)
    });
    // The writer timed its own stage.
    report.times = StageTimes {
        writing: report.times.writing,
        ..*flow.times.lock().unwrap_or_else(|e| e.into_inner())
    };
    report.elapsed = started.elapsed();
    written?;
    if job.stopped() {
        return Err(Error::Interrupted);
    }
    Ok(report)
}

/// Writes samples `first..` as their outcomes arrive (in any order): each the moment the
/// samples before it are written; then closes the last shard. A job stopped, or failed by the
/// GPU, leaves the shard it was writing unfinished (and removes it).
fn write_in_order(
    mut writer: Writer,
    first: usize,
    inputs: &[ShardInput],
    outcomes: std::sync::mpsc::Receiver<flow::Outcome>,
    flow: &flow::Flow,
) -> Result<()> {
    let job = flow.job;
    let mut waiting = std::collections::BTreeMap::new();
    let mut next = first;
    for outcome in outcomes {
        waiting.insert(outcome.n, outcome.result);
        let writing = Instant::now();
        while let Some(result) = waiting.remove(&next) {
            writer.add(next, &inputs[next], result)?;
            next += 1;
            if next.is_multiple_of(64) || next == inputs.len() {
                job.report_progress(next, inputs.len());
                flow.written(next);
            }
        }
        writer.report.times.writing += writing.elapsed();
    }
    if let Some(failure) = flow.failure() {
        return Err(failure);
    }
    if job.stopped() {
        return Err(Error::Interrupted);
    }
    if let Some(input) = inputs.get(next) {
        return Err(Error::Internal(format!(
            "sample {next} ({}) never reached the writer",
            input.path.display()
        )));
    }
    let writing = Instant::now();
    writer.finish()?;
    writer.report.times.writing += writing.elapsed();
    Ok(())
}

/// Aborts a flow when dropped.
struct AbortOnDrop<'f, 'a>(&'f flow::Flow<'a>);

impl Drop for AbortOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The shards being written: samples added in order, a shard closed when it is full.
struct Writer<'a> {
    options: &'a ShardOptions,
    settings: &'a serde_json::Value,
    shard: Option<ShardFile>,
    number: usize,
    report: &'a mut ShardReport,
}

impl Writer<'_> {
    /// Sample `n` (of `source`): its members, or the input's failure in the report.
    fn add(&mut self, n: usize, source: &ShardInput, sample: Result<Encoded>) -> Result<()> {
        let (jpeg, size) = match sample {
            Ok(sample) => sample,
            Err(e) => {
                let failed = (n, source.path.clone(), e.to_string());
                self.report.failed.push(failed);
                return Ok(());
            }
        };
        let (max_samples, max_bytes) = (self.options.max_samples, self.options.max_bytes);
        if let Some(full) = self
            .shard
            .take_if(|s| s.samples >= max_samples || s.bytes >= max_bytes)
        {
            self.report.written.push(full.finish()?);
            self.number += 1;
        }
        let open = match self.shard.as_mut() {
            Some(open) => open,
            None => self
                .shard
                .insert(ShardFile::create(self.options.pattern.path(self.number))?),
        };
        let mut json = serde_json::json!({
            "source": source_name(&source.path), "width": size.map(|s| s.0),
            "height": size.map(|s| s.1), "settings": self.settings.clone(),
        });
        if let Some(class) = &source.class {
            json["class"] = class.as_str().into();
        }
        let key = format!("{n:09}");
        open.add(&format!("{key}.jpg"), &jpeg)?;
        if source.label >= 0 {
            open.add(&format!("{key}.cls"), source.label.to_string().as_bytes())?;
        }
        open.add(&format!("{key}.json"), json.to_string().as_bytes())?;
        open.samples += 1;
        self.report.samples += 1;
        Ok(())
    }

    /// The last shard closed.
    fn finish(&mut self) -> Result<()> {
        if let Some(open) = self.shard.take() {
            self.report.written.push(open.finish()?);
        }
        Ok(())
    }
}

/// The job's settings as each sample's JSON records them (and a re-run checks them): the
/// transform's resize, filter, draft and EXIF fields as its JSON names them, the encoder's
/// settings, the shards' bounds, and whether samples are labelled (a kept shard's classes are
/// checked sample by sample).
fn settings(job: &Job, options: &ShardOptions, inputs: &[ShardInput]) -> serde_json::Value {
    let transform = job.transform.to_json();
    let jpeg = &options.jpeg;
    let labelled = inputs.iter().any(|i| i.label >= 0);
    serde_json::json!({
        "resize": transform["resize"], "filter": transform["filter"],
        "draft": transform["draft"], "exif_transpose": transform["exif_transpose"],
        "quality": jpeg.quality, "subsampling": jpeg.subsampling.map(|s| s.name()),
        "optimize": jpeg.optimize, "shard_samples": options.max_samples,
        "shard_bytes": options.max_bytes, "labelled": labelled,
    })
}

/// A sample's JPEG file and its source's size (where its header says).
type Encoded = (Vec<u8>, Option<(usize, usize)>);

/// What an earlier run left: the complete shards (the first numbers whose files exist), the
/// sample after their last, and the samples before it that they do not hold (inputs that
/// failed then).
struct Kept {
    shards: usize,
    next: usize,
    missing: Vec<usize>,
}

/// The shards an earlier run completed, each checked to be this job's (its members KEY.jpg,
/// KEY.cls and KEY.json, every sample's JSON of these settings) and of these inputs (the last
/// sample kept is of the same input here); an error otherwise.
fn complete_shards(
    pattern: &ShardPattern,
    settings: &serde_json::Value,
    inputs: &[ShardInput],
) -> Result<Kept> {
    let (mut kept, mut next, mut last_source) = (0, 0, None::<String>);
    let mut held = std::collections::BTreeSet::new();
    // The first sample whose class differs from its input's here: (its shard, the sample, its
    // class there).
    let mut relabelled: Option<(usize, usize, String)> = None;
    let mut differs = |shard: usize, n: usize, written: String, here: String| {
        if written != here && relabelled.is_none() {
            relabelled = Some((shard, n, written));
        }
    };
    let refused = |path: &Path, why: String| {
        Error::Options(format!(
            "{}: {why}: write the shards elsewhere, or remove these",
            path.display()
        ))
    };
    while let Ok(mut file) = fs::File::open(pattern.path(kept)) {
        let path = pattern.path(kept);
        // A shard cut short (by damage since: one written here is renamed whole) is not
        // kept: it and those after it are written again.
        if !ends_whole(&mut file) {
            break;
        }
        let in_shard = |e: std::io::Error| Error::from(e).in_file(&path);
        let mut archive = tar::Archive::new(std::io::BufReader::new(file));
        let mut described = std::collections::BTreeSet::new();
        for member in archive.entries_with_seek().map_err(in_shard)? {
            let mut member = member.map_err(in_shard)?;
            let name = member
                .path()
                .map_err(in_shard)?
                .to_string_lossy()
                .into_owned();
            let sample = name
                .split_once('.')
                .filter(|(_, extension)| ["jpg", "cls", "json"].contains(extension))
                .and_then(|(key, extension)| Some((key.parse::<usize>().ok()?, extension)));
            let Some((n, extension)) = sample else {
                return Err(refused(
                    &path,
                    format!("not a shard of this job (it holds {name})"),
                ));
            };
            held.insert(n);
            let mut text = String::new();
            if extension == "jpg" {
                continue;
            }
            std::io::Read::read_to_string(&mut member, &mut text).map_err(in_shard)?;
            let input = inputs.get(n);
            if extension == "cls" {
                differs(
                    kept,
                    n,
                    text,
                    input.map_or(String::new(), |i| i.label.to_string()),
                );
                continue;
            }
            let written: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            let class = |c: Option<&str>| c.map_or(String::new(), |c| format!("{c:?}"));
            let here = input.and_then(|i| i.class.as_deref());
            differs(kept, n, class(written["class"].as_str()), class(here));
            if written["settings"] != *settings {
                let why = format!(
                    "written with other settings ({}), not these ({settings})",
                    written["settings"]
                );
                return Err(refused(&path, why));
            }
            described.insert(n);
            if n + 1 >= next {
                next = n + 1;
                last_source = written["source"].as_str().map(str::to_string);
            }
        }
        if described.is_empty() {
            return Err(refused(
                &path,
                "not a shard of this job (no sample's JSON)".into(),
            ));
        }
        kept += 1;
    }
    // The inputs must be the ones those shards were written from.
    if next > 0 {
        let here = inputs.get(next - 1).map(|i| source_name(&i.path));
        if here != last_source {
            let why = format!(
                "its last sample ({}) is of {}, and the inputs now have {} there: the inputs \
                 changed since the shards were written",
                next - 1,
                last_source.unwrap_or_else(|| "no source".into()),
                here.unwrap_or_else(|| "no input".into()),
            );
            return Err(refused(&pattern.path(kept - 1), why));
        }
    }
    if let Some((shard, n, written)) = relabelled {
        let why = match inputs.get(n) {
            Some(here) => {
                let class = here
                    .class
                    .as_deref()
                    .map_or(String::new(), |c| format!(" ({c})"));
                format!(
                    "sample {n} ({}) has {written} there and class {}{class} here: the labels \
                     changed since the shards were written",
                    source_name(&here.path),
                    here.label,
                )
            }
            None => format!("sample {n} is past the {} inputs", inputs.len()),
        };
        return Err(refused(&pattern.path(shard), why));
    }
    let missing = (0..next).filter(|n| !held.contains(n)).collect();
    Ok(Kept {
        shards: kept,
        next,
        missing,
    })
}

/// Whether a tar ends whole: a length of whole 512-byte blocks, the last two of them zeros (the
/// end-of-archive marker a finished shard has). The file is read from the start afterwards.
fn ends_whole(file: &mut fs::File) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut end = [1u8; 1024];
    let len = file.metadata().map_or(0, |m| m.len());
    let read = len.is_multiple_of(512)
        && len >= 1024
        && file.seek(SeekFrom::End(-1024)).is_ok()
        && file.read_exact(&mut end).is_ok();
    read && end.iter().all(|&b| b == 0) && file.seek(SeekFrom::Start(0)).is_ok()
}

/// A source path as the samples' JSON records it (lossily, where it is not UTF-8).
fn source_name(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Removes the temporary shards that runs no longer running left beside the pattern's.
fn remove_stale_partials(pattern: &ShardPattern) {
    let first = pattern.path(0);
    let folder = first.parent().filter(|p| !p.as_os_str().is_empty());
    let Ok(entries) = fs::read_dir(folder.unwrap_or(Path::new("."))) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((shard, owner)) = name.split_once(".partial-") else {
            continue;
        };
        let ours = shard.starts_with(&*pattern.before_name()) && shard.ends_with(&pattern.after);
        if ours && convert::owner_is_gone(owner) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

impl ShardPattern {
    /// Whether `path` is one that the pattern makes (its number in any width).
    pub fn matches(&self, path: &Path) -> bool {
        let text = path.to_string_lossy();
        text.strip_prefix(&self.before)
            .and_then(|rest| rest.strip_suffix(&self.after))
            .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
    }

    /// The file name's part before the number.
    fn before_name(&self) -> String {
        Path::new(&self.before)
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

/// The bytes of a shard being written after which the disk is asked to start writing them
/// (without waiting): else a large shard's bytes all go to the disk at its close, while the job
/// waits for its sync.
const WRITE_BACK_EVERY_BYTES: u64 = 64 << 20;

/// A shard being written, under its temporary name.
struct ShardFile {
    path: PathBuf,
    partial: PathBuf,
    tar: Option<tar::Builder<BufWriter<fs::File>>>,
    /// Renamed to its own name: complete.
    renamed: bool,
    samples: usize,
    bytes: u64,
}

impl ShardFile {
    fn create(path: PathBuf) -> Result<Self> {
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(folder).map_err(|e| convert::cannot_write(folder, e))?;
        }
        let partial = convert::partial_path(&path);
        let file = fs::File::create(&partial).map_err(|e| convert::cannot_write(&path, e))?;
        let mut tar = tar::Builder::new(BufWriter::new(file));
        tar.mode(tar::HeaderMode::Deterministic);
        Ok(Self {
            path,
            partial,
            tar: Some(tar),
            renamed: false,
            samples: 0,
            bytes: 0,
        })
    }

    /// A member, read-only, its time 0 (so that a shard written again is the same bytes).
    fn add(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o444);
        header.set_mtime(0);
        header.set_cksum();
        let tar = self
            .tar
            .as_mut()
            .ok_or(Error::Internal("a finished shard".into()))?;
        tar.append_data(&mut header, name, bytes)
            .map_err(|e| convert::cannot_write(&self.path, e))?;
        let before = self.bytes;
        self.bytes += 512 + (bytes.len() as u64).div_ceil(512) * 512;
        if before / WRITE_BACK_EVERY_BYTES != self.bytes / WRITE_BACK_EVERY_BYTES {
            let file = tar.get_mut();
            file.flush()
                .map_err(|e| convert::cannot_write(&self.path, e))?;
            start_writing_back(file.get_ref());
        }
        Ok(())
    }

    /// The tar finished, synced and renamed to its own name.
    fn finish(mut self) -> Result<PathBuf> {
        let tar = self
            .tar
            .take()
            .ok_or(Error::Internal("a finished shard".into()))?;
        tar.into_inner()
            .and_then(|to| convert::finish_file(to, &self.partial, &self.path))
            .map_err(|e| convert::cannot_write(&self.path, e))?;
        self.renamed = true;
        Ok(self.path.clone())
    }
}

/// Asks the kernel to start writing `file`'s cached bytes to the disk, and returns at once
/// (Linux's `sync_file_range` with `SYNC_FILE_RANGE_WRITE`): a hint, whose failure (a file
/// system without it) changes nothing, as the sync at the shard's close makes it durable. Not
/// a sync: on a file system that uploads a file at each sync (a mounted bucket), a sync every
/// 64 MiB would upload the shard again and again.
#[cfg(target_os = "linux")]
fn start_writing_back(file: &fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: `file` is open for the whole call, and the call reads or writes no memory of ours.
    #[allow(
        unsafe_code,
        reason = "a system call with no safe wrapper; see the SAFETY note"
    )]
    let _hint_only =
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

/// Elsewhere the sync at the shard's close writes it all.
#[cfg(not(target_os = "linux"))]
fn start_writing_back(_: &fs::File) {}

impl Drop for ShardFile {
    /// A shard not finished (an error, an interruption the job saw) leaves no temporary file
    /// behind; one a process killed outright left is removed by a later run on this machine.
    fn drop(&mut self) {
        if !self.renamed {
            let _ = fs::remove_file(&self.partial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_number_shards() {
        let pattern = ShardPattern::parse("out/train-%06d.tar").unwrap();
        assert_eq!(pattern.path(12), PathBuf::from("out/train-000012.tar"));
        assert_eq!(
            ShardPattern::parse("s-%d.tar").unwrap().path(7),
            PathBuf::from("s-7.tar")
        );
        for bad in [
            "train.tar",
            "a-%s.tar",
            "a-%06d-%06d.tar",
            "a-%x6d.tar",
            "a-%6d.tar",
        ] {
            assert!(ShardPattern::parse(bad).is_err(), "{bad}");
        }
    }
}
