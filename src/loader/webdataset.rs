//! WebDataset shards: tar files read as streams (nothing extracted), their members grouped into
//! samples by key as webdataset's `tariterators` group them.

use super::fetch::FetchOptions;
use super::shard_url::ShardUrl;
use crate::error::{Error, Result};
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// One sample of a shard: its key, its image's bytes (or why there are none) and its label
/// (−1 without a `.cls` or `.json` label).
#[derive(Debug)]
pub struct TarSample {
    /// The members' shared prefix: the path up to the first dot of the file name.
    pub key: String,
    /// The image member's bytes.
    pub image: Result<Vec<u8>>,
    /// The class index.
    pub label: i64,
    /// Its place in the shard (0, 1, …).
    pub position: u64,
}

/// webdataset's `base_plus_ext`: the path split at the first dot of its file name.
pub fn key_and_extension(path: &str) -> Option<(&str, &str)> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let dot = path[name_start..].find('.')? + name_start;
    (dot > name_start).then(|| (&path[..dot], &path[dot + 1..]))
}

/// Calls `each` with the samples of the shard read from `reader` (`shard` names it in errors),
/// in order, read as the stream goes, until it returns `Break`; members larger than
/// `max_member` bytes are refused (that sample fails alone). A shard that breaks off gives one
/// error and ends.
pub fn for_each_sample(
    reader: impl Read,
    shard: &Path,
    max_member: u64,
    mut each: impl FnMut(Result<TarSample>) -> ControlFlow<()>,
) {
    let in_shard = |e: std::io::Error| Error::from(e).in_file(shard);
    let mut archive = tar::Archive::new(std::io::BufReader::with_capacity(256 << 10, reader));
    let members = match archive.entries() {
        Ok(members) => members,
        Err(e) => {
            let _ = each(Err(in_shard(e)));
            return;
        }
    };
    let mut grouper = Grouper::new(shard);
    for member in members {
        let member = match member
            .and_then(|m| read_member(m, max_member))
            .map_err(in_shard)
        {
            Ok(Some(member)) => member,
            Ok(None) => continue,
            Err(e) => {
                if let Some(sample) = grouper.finish_at_break(&e) {
                    if each(Ok(sample)).is_break() {
                        return;
                    }
                }
                let _ = each(Err(e));
                return;
            }
        };
        if let Some(sample) = grouper.add(member) {
            if each(Ok(sample)).is_break() {
                return;
            }
        }
    }
    if let Some(sample) = grouper.finish() {
        let _ = each(Ok(sample));
    }
}

/// The samples [`for_each_sample`] gives for `shard`, counted from the members' headers (a
/// local file's data is skipped, not read; a remote or piped shard is read through): the key
/// groups, plus one for the error a shard that breaks off ends with. An error when the shard
/// cannot be opened, or is not a tar file.
pub fn count_samples(shard: &ShardUrl, fetch: &FetchOptions) -> Result<u64> {
    let in_shard = |e: std::io::Error| Error::from(e).in_file(shard.name());
    let counted = match shard {
        ShardUrl::Local(path) => {
            let file = std::fs::File::open(path).map_err(in_shard)?;
            let mut archive = tar::Archive::new(std::io::BufReader::new(file));
            let members = archive.entries_with_seek().map_err(in_shard)?;
            count_groups(members)
        }
        remote => {
            let reader = super::fetch::open(remote, fetch)?;
            let mut archive =
                tar::Archive::new(std::io::BufReader::with_capacity(256 << 10, reader));
            let members = archive.entries().map_err(in_shard)?;
            count_groups(members)
        }
    };
    counted.map_err(in_shard)
}

/// Remote shards counted at once (each read through once, as the loader is made).
const COUNTED_AT_ONCE: usize = 8;

/// Each shard's samples, counted from its members' headers (a local shard's data skipped, a
/// remote one read through) on up to 8 threads, remote ones; the first shard that cannot be
/// counted stops the counting (no shard is read for nothing after it) and is the error.
pub fn count_shards(urls: &[ShardUrl], fetch: &FetchOptions) -> Result<Vec<u64>> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
    let counts: Vec<std::sync::Mutex<Option<Result<u64>>>> =
        urls.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let threads = if urls.iter().all(ShardUrl::is_local) {
        1
    } else {
        COUNTED_AT_ONCE.min(urls.len())
    };
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(url) = urls.get(i) else { return };
                    let count = count_samples(url, fetch);
                    failed.fetch_or(count.is_err(), Ordering::Relaxed);
                    *super::lock(&counts[i]) = Some(count);
                }
            });
        }
    });
    let counts: Vec<Option<Result<u64>>> = counts
        .into_iter()
        .map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    if let Some(Some(Err(e))) = counts.iter().find(|c| matches!(c, Some(Err(_)))) {
        return Err(e.clone());
    }
    counts
        .into_iter()
        .map(|c| c.unwrap_or_else(|| Err(Error::Internal("a shard was not counted".into()))))
        .collect()
}

/// The key groups of `members` (see [`count_samples`]).
fn count_groups<R: Read>(members: tar::Entries<'_, R>) -> std::io::Result<u64> {
    let (mut samples, mut key) = (0, None::<String>);
    for member in members {
        let member = match member {
            Ok(member) => member,
            // Not a tar file at all: refused up front, as a source that cannot be read.
            Err(e) if samples == 0 && key.is_none() => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("not a tar file: {e}"),
                ));
            }
            // The reader gives the samples before the break, then the break's error.
            Err(_) => return Ok(samples + 1),
        };
        if !member.header().entry_type().is_file() {
            continue;
        }
        let name = String::from_utf8_lossy(&member.path_bytes()).into_owned();
        let Some((this, _)) = key_and_extension(&name) else {
            continue;
        };
        if key.as_deref() != Some(this) {
            samples += 1;
            key = Some(this.to_string());
        }
    }
    Ok(samples)
}

/// A regular member with a key: (key, extension in lower case, its bytes or why not); `None`
/// for other members.
type Member = (String, String, Result<Vec<u8>>);

fn read_member(
    mut entry: tar::Entry<impl Read>,
    max_member: u64,
) -> std::io::Result<Option<Member>> {
    if !entry.header().entry_type().is_file() {
        return Ok(None);
    }
    let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
    let Some((key, extension)) = key_and_extension(&name) else {
        return Ok(None);
    };
    let (key, extension) = (key.to_string(), extension.to_ascii_lowercase());
    let size = entry.header().size().unwrap_or(u64::MAX);
    if size > max_member {
        let refused = Error::Options(format!(
            "{name}: a member of {size} bytes, above the limit of {max_member} bytes"
        ));
        return Ok(Some((key, extension, Err(refused))));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    entry.read_to_end(&mut bytes)?;
    if (bytes.len() as u64) < size {
        // The tar reader ends a member's data where the stream ends.
        let why = format!(
            "the shard ends inside {name} ({} of its {size} bytes)",
            bytes.len()
        );
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why));
    }
    Ok(Some((key, extension, Ok(bytes))))
}

/// Consecutive members of one key made into a sample.
struct Grouper {
    shard: PathBuf,
    key: Option<String>,
    image: Option<Result<Vec<u8>>>,
    /// From `.cls` (which wins) or `.json`; `Err` for a label member that is not one.
    label: Result<Option<i64>>,
    /// Whether the label came from `.cls`.
    from_cls: bool,
    position: u64,
    /// The member extensions of the sample being grouped, and of the shard's first sample.
    extensions: Vec<String>,
    first_extensions: Option<Vec<String>>,
}

impl Grouper {
    fn new(shard: &Path) -> Self {
        Self {
            shard: shard.to_path_buf(),
            key: None,
            image: None,
            label: Ok(None),
            from_cls: false,
            position: 0,
            extensions: Vec::new(),
            first_extensions: None,
        }
    }

    /// The sample being grouped where the shard broke off: whole where it has the members the
    /// shard's first sample had (its next member would have had a key of its own), else failed
    /// with the break (its other members may be what was cut off: a sample that lost its
    /// `.cls` must not pass as unlabelled).
    fn finish_at_break(&mut self, e: &Error) -> Option<TarSample> {
        let mut extensions = self.extensions.clone();
        extensions.sort();
        let whole = self.first_extensions.as_ref() == Some(&extensions);
        let mut sample = self.finish()?;
        if !whole {
            sample.image = Err(e.clone());
        }
        Some(sample)
    }

    /// Adds a member; returns the sample before it when its key starts a new one.
    fn add(&mut self, (key, extension, bytes): Member) -> Option<TarSample> {
        let done = match &self.key {
            Some(current) if *current != key => self.finish(),
            _ => None,
        };
        self.key = Some(key);
        self.extensions.push(extension.clone());
        // The member that is the image: its (lower-cased) extension is one of a format gpuprep
        // reads.
        let image = crate::formats::extensions().any(|e| e == extension);
        if image && self.image.is_none() {
            self.image = Some(bytes);
        } else if extension == "cls" || (extension == "json" && !self.from_cls) {
            self.from_cls = extension == "cls";
            self.label = bytes.and_then(|b| parse_label(&extension, &b));
        }
        done
    }

    /// The sample being grouped, if any.
    fn finish(&mut self) -> Option<TarSample> {
        let key = self.key.take()?;
        let mut extensions = std::mem::take(&mut self.extensions);
        extensions.sort();
        self.first_extensions.get_or_insert(extensions);
        let image = self
            .image
            .take()
            .unwrap_or_else(|| Err(Error::Options("the sample has no image member".into())));
        let label = std::mem::replace(&mut self.label, Ok(None));
        self.from_cls = false;
        // A label member that is not a label fails its sample, as webdataset raises.
        let (image, label) = match label {
            Ok(label) => (image, label.unwrap_or(-1)),
            Err(e) => (Err(e), -1),
        };
        let sample = TarSample {
            image: image.map_err(|e| e.in_file(self.shard.join(&key))),
            key,
            label,
            position: self.position,
        };
        self.position += 1;
        Some(sample)
    }
}

/// A `.cls` member's integer (an error when it is not one), or a `.json` member's number or
/// `"label"` / `"cls"` field (none when it has neither; an error when it is not JSON).
fn parse_label(extension: &str, bytes: &[u8]) -> Result<Option<i64>> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let refused = |what: &str| {
        let shown: String = text.chars().take(40).collect();
        let why = format!("its .{extension} member is {what}: {shown:?}");
        Error::from(std::io::Error::new(std::io::ErrorKind::InvalidData, why))
    };
    if extension == "cls" {
        return text
            .parse()
            .map(Some)
            .map_err(|_| refused("not a class index"));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|_| refused("not JSON"))?;
    let label = |v: &serde_json::Value| v.as_i64();
    Ok(label(&value)
        .or_else(|| value.get("label").and_then(label))
        .or_else(|| value.get("cls").and_then(label)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// webdataset's `base_plus_ext`: `^((?:.*/|)[^.]+)[.]([^/]*)$`.
    #[test]
    fn keys_stop_at_the_first_dot_of_the_file_name() {
        assert_eq!(
            key_and_extension("a/b.c/d.seg.png"),
            Some(("a/b.c/d", "seg.png"))
        );
        assert_eq!(key_and_extension("000.jpg"), Some(("000", "jpg")));
        assert_eq!(key_and_extension("dir/noext"), None);
        assert_eq!(key_and_extension("dir/.hidden"), None);
    }

    /// Members' extensions count in any case (webdataset's image decoder matches them so): an
    /// upper-case image member is the sample's image, an upper-case label member its label.
    #[test]
    fn upper_case_member_extensions_are_read() {
        let path = std::env::temp_dir().join(format!("gpuprep-case-{}.tar", std::process::id()));
        let mut tar = tar::Builder::new(std::fs::File::create(&path).unwrap());
        for (name, bytes) in [
            ("000.JPG", &b"\xff\xd8 image"[..]),
            ("000.CLS", b"7"),
            ("001.Png", b"\x89PNG image"),
            ("001.JSON", b"{\"label\": 3}"),
        ] {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_cksum();
            tar.append_data(&mut header, name, bytes).unwrap();
        }
        tar.into_inner().unwrap();
        let mut samples = Vec::new();
        let file = std::fs::File::open(&path).unwrap();
        for_each_sample(file, &path, 1 << 20, |s| {
            samples.push(s.unwrap());
            ControlFlow::Continue(())
        });
        std::fs::remove_file(&path).unwrap();
        let read: Vec<(&str, &[u8], i64)> = samples
            .iter()
            .map(|s| (s.key.as_str(), s.image.as_deref().unwrap(), s.label))
            .collect();
        assert_eq!(
            read,
            [
                ("000", &b"\xff\xd8 image"[..], 7),
                ("001", &b"\x89PNG image"[..], 3)
            ]
        );
    }

    /// A shard that breaks off between a sample's image and its label fails that sample (it
    /// must not pass as unlabelled); the samples before it, whole, come as they are.
    #[test]
    fn a_sample_cut_before_its_label_fails() {
        let mut tar = tar::Builder::new(Vec::new());
        let mut label_header_at = 0;
        for (name, bytes) in [
            ("000.jpg", &b"\xff\xd8 a"[..]),
            ("000.cls", b"1"),
            ("001.jpg", b"\xff\xd8 b"),
            ("001.cls", b"2"),
            ("002.jpg", b"\xff\xd8 c"),
            ("002.cls", b"3"),
        ] {
            if name == "002.cls" {
                label_header_at = tar.get_ref().len();
            }
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_cksum();
            tar.append_data(&mut header, name, bytes).unwrap();
        }
        let mut bytes = tar.into_inner().unwrap();
        bytes.truncate(label_header_at + 100);
        let mut read = Vec::new();
        for_each_sample(bytes.as_slice(), Path::new("s.tar"), 1 << 20, |s| {
            read.push(s.map(|s| (s.key, s.image.is_ok(), s.label)));
            ControlFlow::Continue(())
        });
        let outcomes: Vec<_> = read.iter().map(|r| r.as_ref().ok().cloned()).collect();
        assert_eq!(
            outcomes,
            [
                Some(("000".to_string(), true, 1)),
                Some(("001".to_string(), true, 2)),
                Some(("002".to_string(), false, -1)),
                None,
            ]
        );
    }
}
