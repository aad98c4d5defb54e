//! A shard index: a dataset's shards with the samples each holds, in webdataset's `wids` JSON
//! format (`{"wids_version": 1, "shardlist": [{"url": ..., "nsamples": ...}, ...]}`), so that
//! a loader splits the shards between ranks from one small file instead of reading every shard
//! through to count it. `gpuprep index` writes one.

use super::fetch::{self, FetchOptions};
use super::shard_url::ShardUrl;
use crate::error::{Error, Result};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;

/// A WebDataset shard and the samples it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Where it is.
    pub url: ShardUrl,
    /// Its samples (key groups).
    pub samples: u64,
}

/// The largest index read, in bytes (about 800,000 shards).
pub const MAX_INDEX_BYTES: u64 = 64 << 20;

/// The most samples a shard may hold: a sample's index keeps its position in 32 bits.
pub const MAX_SHARD_SAMPLES: u64 = u32::MAX as u64;

/// The shards `index` lists, each with its count, in the index's order. A shard's `url` that
/// is relative is read from the index's folder, as wids reads it, or from its `base` where it
/// has one (as `widsindex update --base` writes it; itself read from the index's folder); other
/// fields (`filesize`, `md5sum`, `name`) are not needed and not read. An index of
/// sub-datasets (`datasets`) is refused by name, and so is a `pipe:` shard in an index that is
/// not a local file: whoever serves the index would choose the command.
pub fn read(index: &ShardUrl, fetch: &FetchOptions) -> Result<Vec<Shard>> {
    let mut text = Vec::new();
    fetch::open(index, fetch)?
        .take(MAX_INDEX_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| Error::from(e).in_file(index.name()))?;
    if text.len() as u64 > MAX_INDEX_BYTES {
        return Err(refused(
            index,
            &format!("a shard index is at most {} MiB", MAX_INDEX_BYTES >> 20),
        ));
    }
    let desc: Value = serde_json::from_slice(&text)
        .map_err(|e| refused(index, &format!("not a JSON shard index: {e}")))?;
    parse(&desc, &index.to_string())
        .map_err(|why| refused(index, &why))?
        .into_iter()
        .map(|(address, samples)| {
            let url = ShardUrl::parse(&address).map_err(|e| refused(index, &e.to_string()))?;
            if matches!(url, ShardUrl::Pipe(_)) && !index.is_local() {
                let why = format!("{url}: a pipe: shard in an index that is not a local file");
                return Err(refused(index, &why));
            }
            Ok(Shard { url, samples })
        })
        .collect()
}

fn refused(index: &ShardUrl, why: &str) -> Error {
    Error::Options(format!("{index}: {why}"))
}

/// The (address, samples) of each shard `desc` lists, addresses merged with the index's at
/// `index`; why not, where it is no index gpuprep reads.
fn parse(desc: &Value, index: &str) -> std::result::Result<Vec<(String, u64)>, String> {
    const FORMAT: &str = "a shard index is webdataset's wids format, {\"wids_version\": 1, \
                          \"shardlist\": [{\"url\": ..., \"nsamples\": ...}, ...]}";
    let Some(desc) = desc.as_object() else {
        return Err(FORMAT.into());
    };
    match desc.get("wids_version") {
        Some(v) if v.as_u64() == Some(1) => {}
        Some(other) => return Err(format!("wids_version {other} is not read (1 is)")),
        None => return Err(format!("no wids_version: {FORMAT}")),
    }
    if desc.get("datasets").is_some() {
        return Err(
            "an index of sub-datasets (\"datasets\") is not read: list every shard in \
                    its \"shardlist\""
                .into(),
        );
    }
    let Some(list) = desc.get("shardlist").and_then(Value::as_array) else {
        return Err(format!("no shardlist: {FORMAT}"));
    };
    if list.is_empty() {
        return Err("the shardlist is empty".into());
    }
    let folder = folder_of(index);
    let base = match desc.get("base") {
        None | Some(Value::Null) => folder,
        Some(Value::String(base)) => merge(&folder, base),
        Some(other) => return Err(format!("base is an address, got {other}")),
    };
    list.iter()
        .enumerate()
        .map(|(i, shard)| {
            let Some(url) = shard.get("url").and_then(Value::as_str) else {
                return Err(format!("shard {i} of the shardlist has no \"url\""));
            };
            let Some(samples) = shard.get("nsamples").and_then(Value::as_u64) else {
                return Err(format!("{url}: \"nsamples\" is a count of samples"));
            };
            if samples > MAX_SHARD_SAMPLES {
                return Err(format!(
                    "{url}: \"nsamples\" is {samples}, and a shard holds at most \
                     {MAX_SHARD_SAMPLES} samples"
                ));
            }
            Ok((merge(&base, url), samples))
        })
        .collect()
}

/// The folder an address is in: a URL without its last path segment, or a path's parent.
fn folder_of(address: &str) -> String {
    let (origin, path) = split_origin(address);
    match path.rfind('/') {
        Some(slash) => format!("{origin}{}", &path[..slash]),
        None if origin.is_empty() => ".".into(),
        None => origin.into(),
    }
}

/// `url` read from `base` (a folder), as wids' `urlmerge` reads it: an address with a scheme
/// stands as it is, an absolute path takes only `base`'s scheme and host, and a relative one
/// is joined to `base`'s path (`.` and `..` resolved).
fn merge(base: &str, url: &str) -> String {
    let lower = url.to_ascii_lowercase();
    let has_scheme =
        url.contains("://") || lower.starts_with("pipe:") || lower.starts_with("file:");
    if has_scheme {
        return url.into();
    }
    let (origin, path) = split_origin(base);
    if url.starts_with('/') {
        return format!("{origin}{}", normalise(url));
    }
    format!("{origin}{}", normalise(&format!("{path}/{url}")))
}

/// (`scheme://host`, the rest) of a URL; ("", the path) of a path.
fn split_origin(address: &str) -> (&str, &str) {
    match address.find("://") {
        Some(at) => {
            let after = at + 3;
            let path_at = address[after..]
                .find('/')
                .map_or(address.len(), |p| after + p);
            address.split_at(path_at)
        }
        None => ("", address),
    }
}

/// A path with its `.` segments dropped and each `..` taking the segment before it (kept
/// where there is none, as `os.path.normpath` keeps a relative path's leading `..`).
fn normalise(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." if kept.last().is_some_and(|s| *s != "..") => {
                kept.pop();
            }
            ".." if absolute => {}
            other => kept.push(other),
        }
    }
    let joined = kept.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The index (wids JSON) of `shards` with their counts, to be written at `index`: each shard
/// in the index's folder or below it is written relative to it (so the folder can move, or be
/// served whole), any other local one as an absolute path, and the rest as they were given.
pub fn write(index: &ShardUrl, shards: &[Shard]) -> String {
    let folder = format!("{}/", folder_of(&absolute(index)));
    let shardlist: Vec<Value> = shards
        .iter()
        .map(|shard| {
            let address = absolute(&shard.url);
            let url = address
                .strip_prefix(&folder)
                .map_or_else(|| address.clone(), str::to_string);
            serde_json::json!({"url": url, "nsamples": shard.samples})
        })
        .collect();
    let desc = serde_json::json!({
        "__kind__": "wids-shard-index-v1",
        "wids_version": 1,
        "shardlist": shardlist,
    });
    // Pretty, as wids writes it: an index is read by people too.
    let mut text = serde_json::to_string_pretty(&desc).unwrap_or_default();
    text.push('\n');
    text
}

/// Counts the samples of each shard at `urls` (as a loader counts them) and writes their index
/// at `path` (its folder made where missing) whole or not at all. A shard that holds no sample is an error (a loader refuses
/// it). Returns the shards and their counts.
pub fn save(path: &Path, urls: &[ShardUrl], fetch: &FetchOptions) -> Result<Vec<Shard>> {
    let counts = super::webdataset::count_shards(urls, fetch)?;
    let shards: Vec<Shard> = urls
        .iter()
        .zip(counts)
        .map(|(url, samples)| Shard {
            url: url.clone(),
            samples,
        })
        .collect();
    if let Some(empty) = shards.iter().find(|s| s.samples == 0) {
        return Err(Error::Options(format!(
            "{}: the shard holds no sample (a loader refuses such a shard)",
            empty.url
        )));
    }
    let text = write(&ShardUrl::Local(path.to_path_buf()), &shards);
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|e| crate::convert::cannot_write(folder, e))?;
    }
    crate::convert::write_whole(path, |to| to.write_all(text.as_bytes()))?;
    Ok(shards)
}

/// The address as an index compares it: a local path made absolute (lexically) and
/// normalised, any other as it is written.
fn absolute(url: &ShardUrl) -> String {
    match url {
        ShardUrl::Local(path) => {
            let full = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            normalise(&full.to_string_lossy())
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(json: &str, at: &str) -> std::result::Result<Vec<(String, u64)>, String> {
        parse(&serde_json::from_str(json).unwrap(), at)
    }

    #[test]
    fn shards_are_read_where_wids_reads_them() {
        let list = r#"{"wids_version": 1, "shardlist": [
            {"url": "a.tar", "nsamples": 3}, {"url": "sub/../b.tar", "nsamples": 4},
            {"url": "/abs/c.tar", "nsamples": 5}, {"url": "s3://other/d.tar", "nsamples": 6}]}"#;
        let urls = |at| -> Vec<String> {
            parsed(list, at)
                .unwrap()
                .into_iter()
                .map(|(u, _)| u)
                .collect()
        };
        assert_eq!(
            urls("http://host:8080/data/train.json"),
            [
                "http://host:8080/data/a.tar",
                "http://host:8080/data/b.tar",
                "http://host:8080/abs/c.tar",
                "s3://other/d.tar"
            ]
        );
        assert_eq!(
            urls("s3://bucket/train.json"),
            [
                "s3://bucket/a.tar",
                "s3://bucket/b.tar",
                "s3://bucket/abs/c.tar",
                "s3://other/d.tar"
            ]
        );
        assert_eq!(
            urls("index.json"),
            ["a.tar", "b.tar", "/abs/c.tar", "s3://other/d.tar"]
        );
        assert_eq!(
            urls("/data/x/index.json"),
            [
                "/data/x/a.tar",
                "/data/x/b.tar",
                "/abs/c.tar",
                "s3://other/d.tar"
            ]
        );
        let counts: Vec<u64> = parsed(list, "i.json")
            .unwrap()
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(counts, [3, 4, 5, 6]);
        // A base, itself relative to the index.
        let based = r#"{"wids_version": 1, "base": "../shards", "shardlist": [{"url": "a.tar", "nsamples": 1}]}"#;
        assert_eq!(
            parsed(based, "https://h/meta/i.json").unwrap(),
            [("https://h/shards/a.tar".to_string(), 1)]
        );
        assert_eq!(
            parsed(based, "meta/i.json").unwrap(),
            [("shards/a.tar".to_string(), 1)]
        );
    }

    #[test]
    fn what_is_no_index_is_refused_by_name() {
        let refusal = |json: &str| parsed(json, "i.json").unwrap_err();
        assert!(refusal("[]").contains("wids format"));
        assert!(refusal(r#"{"shardlist": []}"#).contains("no wids_version"));
        assert!(refusal(r#"{"wids_version": 2, "shardlist": []}"#).contains("wids_version 2"));
        assert!(refusal(r#"{"wids_version": 1}"#).contains("no shardlist"));
        assert!(refusal(r#"{"wids_version": 1, "shardlist": []}"#).contains("empty"));
        assert!(
            refusal(r#"{"wids_version": 1, "shardlist": [{"nsamples": 1}]}"#)
                .contains("shard 0 of the shardlist has no \"url\"")
        );
        assert!(
            refusal(r#"{"wids_version": 1, "shardlist": [{"url": "a.tar", "nsamples": -1}]}"#)
                .contains("a.tar: \"nsamples\" is a count")
        );
        assert!(refusal(
            r#"{"wids_version": 1, "datasets": [{"source_url": "x.json"}], "shardlist": []}"#
        )
        .contains("sub-datasets"));
        assert!(refusal(
            r#"{"wids_version": 1, "shardlist": [{"url": "a.tar", "nsamples": 4294967296}]}"#
        )
        .contains("a.tar: \"nsamples\" is 4294967296, and a shard holds at most 4294967295"));
        let schemes =
            r#"{"wids_version": 1, "shardlist": [{"url": "FILE:/x/a.tar", "nsamples": 1}]}"#;
        assert_eq!(
            parsed(schemes, "https://h/i.json").unwrap()[0].0,
            "FILE:/x/a.tar"
        );
    }

    #[test]
    fn a_written_index_reads_back_to_its_shards() {
        let shard = |url: &str, samples| Shard {
            url: ShardUrl::parse(url).unwrap(),
            samples,
        };
        let shards = [
            shard("/data/train/shard-0.tar", 64),
            shard("/data/train/more/shard-1.tar", 7),
            shard("/elsewhere/shard-2.tar", 1),
            shard("https://host/shard-3.tar", 2),
        ];
        let at = ShardUrl::parse("/data/train/index.json").unwrap();
        let text = write(&at, &shards);
        assert!(text.contains("\"url\": \"shard-0.tar\""), "{text}");
        assert!(text.contains("\"url\": \"more/shard-1.tar\""), "{text}");
        let back = parse(&serde_json::from_str(&text).unwrap(), &at.to_string()).unwrap();
        let expected: Vec<(String, u64)> = shards
            .iter()
            .map(|s| (s.url.to_string(), s.samples))
            .collect();
        assert_eq!(back, expected);
        // Relative paths outside the index's folder are written whole.
        let here = std::env::current_dir().unwrap();
        let outside = [shard("shards/a.tar", 3)];
        let text = write(&ShardUrl::parse("meta/train.json").unwrap(), &outside);
        let back = parse(&serde_json::from_str(&text).unwrap(), "meta/train.json").unwrap();
        assert_eq!(back[0].0, here.join("shards/a.tar").to_string_lossy());
        // Beside a remote index, shards below its folder are relative to it.
        let remote = ShardUrl::parse("https://host/index.json").unwrap();
        assert!(write(&remote, &shards).contains("\"url\": \"shard-3.tar\""));
    }
}
