//! Where a WebDataset shard is, written as webdataset writes it: a local path or `file:` URL,
//! `http(s)://`, `s3://` and `gs://` objects, or `pipe:CMD` (a command's standard output); and
//! lists of them written as patterns (`train-{000000..000127}.tar`, lists joined by `::`).

use crate::error::{Error, Result};
use std::fmt;
use std::path::PathBuf;

/// One shard's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardUrl {
    /// A file on this machine (a plain path, or a `file:` URL).
    Local(PathBuf),
    /// An object served over HTTP or HTTPS.
    Http(String),
    /// An object of an S3 bucket (or of an S3-compatible store: `AWS_ENDPOINT_URL`).
    S3 {
        /// The bucket.
        bucket: String,
        /// The object's key.
        key: String,
    },
    /// An object of a Google Cloud Storage bucket.
    Gs {
        /// The bucket.
        bucket: String,
        /// The object's name.
        key: String,
    },
    /// The standard output of a shell command (webdataset's `pipe:`).
    Pipe(String),
}

/// The environment switch that refuses `pipe:` sources, for loaders whose source strings come
/// from users who must not run commands (webdataset's `WDS_SECURE`).
pub const SECURE_SWITCH: &str = "GPUPREP_SECURE";

/// Whether [`SECURE_SWITCH`] is set (to anything but empty or `0`).
pub fn pipes_refused() -> bool {
    std::env::var_os(SECURE_SWITCH).is_some_and(|v| !v.is_empty() && v != "0")
}

impl ShardUrl {
    /// One address: its scheme read, nothing opened. An unknown scheme is an error by name
    /// (not a local path that would not be found).
    pub fn parse(text: &str) -> Result<Self> {
        let refused = |why: &str| Err(Error::Options(format!("{text}: {why}")));
        if let Some(command) = text.strip_prefix("pipe:") {
            if pipes_refused() {
                return refused(&format!(
                    "pipe: sources run a command, and {SECURE_SWITCH} is set"
                ));
            }
            if command.trim().is_empty() {
                return refused("a pipe: source needs a command");
            }
            return Ok(Self::Pipe(command.to_string()));
        }
        if let Some(path) = strip_prefix_ignore_case(text, "file:") {
            // file:///a/b, file:/a/b and file:a/b are the path after the scheme.
            // file://HOST/PATH names this machine's file (`localhost`, or no host).
            let path = match path.strip_prefix("//") {
                Some(rest) => rest.find('/').map_or(rest, |slash| &rest[slash..]),
                None => path,
            };
            return Ok(Self::Local(PathBuf::from(path)));
        }
        // Only `scheme://` is a URL: any other name is a path (colons and all).
        let Some((scheme, rest)) = text.split_once("://").filter(|(s, _)| is_scheme(s)) else {
            return Ok(Self::Local(PathBuf::from(text)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "http" | "https" => Ok(Self::Http(text.to_string())),
            "s3" | "gs" => {
                let Some((bucket, key)) = rest
                    .split_once('/')
                    .filter(|(b, k)| !b.is_empty() && !k.is_empty())
                else {
                    return refused(&format!("a {scheme}:// URL is {scheme}://BUCKET/KEY"));
                };
                let (bucket, key) = (bucket.to_string(), key.to_string());
                Ok(if scheme.eq_ignore_ascii_case("s3") {
                    Self::S3 { bucket, key }
                } else {
                    Self::Gs { bucket, key }
                })
            }
            other => refused(&format!(
                "{other}: URLs are not read (shards are local paths, file:, http://, https://, \
                 s3://, gs:// or pipe:)"
            )),
        }
    }

    /// The addresses a pattern names, in order: webdataset's `::` lists, each part
    /// brace-expanded (see [`expand_braces`]).
    pub fn expand(pattern: &str) -> Result<Vec<Self>> {
        pattern
            .split("::")
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(expand_braces)
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .map(|url| Self::parse(&url))
            .collect()
    }

    /// Whether it is a file on this machine.
    pub fn is_local(&self) -> bool {
        matches!(self, Self::Local(_))
    }

    /// The address as errors name it (a path for a local shard).
    pub fn name(&self) -> PathBuf {
        match self {
            Self::Local(path) => path.clone(),
            other => PathBuf::from(other.to_string()),
        }
    }
}

impl fmt::Display for ShardUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(path) => write!(f, "{}", path.display()),
            Self::Http(url) => write!(f, "{url}"),
            Self::S3 { bucket, key } => write!(f, "s3://{bucket}/{key}"),
            Self::Gs { bucket, key } => write!(f, "gs://{bucket}/{key}"),
            Self::Pipe(command) => write!(f, "pipe:{command}"),
        }
    }
}

/// Whether `text` is a URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// A pattern names at most this many shards (a typo such as `{0..999999999}` is an error, not
/// an allocation of its names).
pub const MAX_NAMES: usize = 1 << 20;

/// A brace pattern's names, as braceexpand 0.1.7 (which webdataset uses) gives them, in order:
/// `{000..009}` (zero-padded to the wider end when either end is written with a leading zero),
/// `{0..10..5}`, `{9..0}`, `{-1..1}`, `{a..e}` and `{a..e..2}` (over A–Z then a–z), `{a,b}`,
/// nested braces; a name named twice comes twice; braces that hold neither a range nor a comma
/// stay as they are. Unbalanced braces, and patterns of more than [`MAX_NAMES`] names, are
/// errors. (braceexpand's backslash escapes are not read: no shard name needs a brace.)
pub fn expand_braces(pattern: &str) -> Result<Vec<String>> {
    let mut depth = 0i64;
    for c in pattern.chars() {
        depth += match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        };
        if depth < 0 {
            break;
        }
    }
    if depth != 0 {
        return Err(Error::Options(format!("{pattern}: unbalanced braces")));
    }
    expand(pattern).ok_or_else(|| {
        Error::Options(format!(
            "{pattern}: the pattern names more than {MAX_NAMES} shards"
        ))
    })
}

/// The first brace pair from the left, outermost first (as braceexpand reads them), then the
/// rest of the pattern; `None` past [`MAX_NAMES`] names.
fn expand(pattern: &str) -> Option<Vec<String>> {
    let Some(open) = pattern.find('{') else {
        return Some(vec![pattern.to_string()]);
    };
    let (head, after) = (&pattern[..open], &pattern[open + 1..]);
    let pair = matching_close(after).map(|close| (&after[..close], &after[close + 1..]));
    let choices = match pair {
        Some((body, tail)) => {
            let parts = top_level_parts(body);
            let choices = if parts.len() > 1 {
                let mut all = Vec::new();
                for part in parts {
                    all.extend(expand(part)?);
                }
                Some(all)
            } else {
                match range(body) {
                    Some(Some(numbers)) => Some(numbers),
                    // Too many names.
                    Some(None) => return None,
                    None => None,
                }
            };
            choices.map(|c| (c, tail))
        }
        None => None,
    };
    let Some((choices, tail)) = choices else {
        // Not a pattern: the brace is a character of the name.
        let rest = expand(after)?;
        return Some(rest.into_iter().map(|r| format!("{head}{{{r}")).collect());
    };
    let tails = expand(tail)?;
    if choices.len().saturating_mul(tails.len()) > MAX_NAMES {
        return None;
    }
    Some(
        choices
            .iter()
            .flat_map(|c| tails.iter().map(move |t| format!("{head}{c}{t}")))
            .collect(),
    )
}

/// Where the brace that opened before `text` closes.
fn matching_close(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `body` split at its commas outside nested braces.
fn top_level_parts(body: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
}

/// braceexpand's ranges: `a..b[..step]` of integers, padded as it pads them, or of letters
/// over its alphabet A–Z then a–z. `Some(None)`: a range of more than [`MAX_NAMES`]; `None`:
/// not a range.
fn range(body: &str) -> Option<Option<Vec<String>>> {
    let mut ends = body.split("..");
    let (low, high, step) = (ends.next()?, ends.next()?, ends.next());
    if ends.next().is_some() {
        return None;
    }
    // The step: digits, perhaps after a minus (its sign does not count), 0 meaning 1.
    let step = match step {
        Some(s) => {
            let digits = s.strip_prefix('-').unwrap_or(s);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse::<u64>().map_or(u64::MAX, |s| s.max(1))
        }
        None => 1,
    };
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let letter = |s: &str| {
        (s.len() == 1)
            .then(|| ALPHABET.iter().position(|&c| c == s.as_bytes()[0]))
            .flatten()
    };
    if let (Some(a), Some(b)) = (letter(low), letter(high)) {
        let steps = stepped(a as i128, b as i128, step);
        return Some(Some(
            steps
                .map(|i| char::from(ALPHABET[i as usize]).to_string())
                .collect(),
        ));
    }
    let number = |s: &str| {
        let digits = s.strip_prefix('-').unwrap_or(s);
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i128>().ok())
            .flatten()
    };
    let (a, b) = (number(low)?, number(high)?);
    let count = a.abs_diff(b) / u128::from(step) + 1;
    if count > MAX_NAMES as u128 {
        return Some(None);
    }
    let zero_led = |e: &str| {
        let digits = e.strip_prefix('-').unwrap_or(e);
        digits.len() > 1 && digits.starts_with('0')
    };
    let width = if zero_led(low) || zero_led(high) {
        low.len().max(high.len())
    } else {
        0
    };
    let numbers = stepped(a, b, step);
    Some(Some(numbers.map(|n| format!("{n:0width$}")).collect()))
}

/// From `a` to `b` (either way) by `step`, `b` included where a step lands on it (the caller
/// bounds the count).
fn stepped(a: i128, b: i128, step: u64) -> impl Iterator<Item = i128> {
    let count = a.abs_diff(b) / u128::from(step) + 1;
    let step = if a <= b {
        i128::from(step)
    } else {
        -i128::from(step)
    };
    (0..count).map(move |i| a + i as i128 * step)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names braceexpand 0.1.7 gives for these patterns (as webdataset's `expand_urls` calls it).
    #[test]
    fn patterns_expand_as_braceexpand_expands_them() {
        let cases: [(&str, &[&str]); 22] = [
            (
                "s-{000..003}.tar",
                &["s-000.tar", "s-001.tar", "s-002.tar", "s-003.tar"],
            ),
            (
                "s-{8..11}.tar",
                &["s-8.tar", "s-9.tar", "s-10.tar", "s-11.tar"],
            ),
            ("{3..1}", &["3", "2", "1"]),
            ("{09..10}", &["09", "10"]),
            ("{a,b}-{0..1}", &["a-0", "a-1", "b-0", "b-1"]),
            ("{x{1..2},y}", &["x1", "x2", "y"]),
            ("{a,a}", &["a", "a"]),
            ("{}{x}", &["{}{x}"]),
            ("{x{1,2}}", &["{x1}", "{x2}"]),
            ("plain.tar", &["plain.tar"]),
            ("{0..10..5}", &["0", "5", "10"]),
            ("{10..0..-5}", &["10", "5", "0"]),
            ("{a..c}", &["a", "b", "c"]),
            ("{1..3}{a,b}", &["1a", "1b", "2a", "2b", "3a", "3b"]),
            ("{1..1}", &["1"]),
            ("{-1..1}", &["-1", "0", "1"]),
            ("{-01..1}", &["-01", "000", "001"]),
            ("{a..e..2}", &["a", "c", "e"]),
            ("{Z..a}", &["Z", "a"]),
            ("{5..1..2}", &["5", "3", "1"]),
            ("{1..3..0}", &["1", "2", "3"]),
            ("{1..3..+1}", &["{1..3..+1}"]),
        ];
        for (pattern, names) in cases {
            assert_eq!(expand_braces(pattern).unwrap(), names, "{pattern}");
        }
        for refused in [
            "a{b",
            "a}b",
            "{a}}",
            "{0..999999999}",
            "{0..18446744073709551615}",
        ] {
            assert!(expand_braces(refused).is_err(), "{refused}");
        }
        assert_eq!(
            expand_braces("{0..1023}{0..1023}").unwrap().len(),
            MAX_NAMES
        );
    }

    #[test]
    fn schemes_are_read_and_unknown_ones_refused() {
        let parse = |t| ShardUrl::parse(t).unwrap();
        assert_eq!(parse("a/b.tar"), ShardUrl::Local("a/b.tar".into()));
        assert_eq!(parse("file:///a/b.tar"), ShardUrl::Local("/a/b.tar".into()));
        assert_eq!(parse("file:a/b.tar"), ShardUrl::Local("a/b.tar".into()));
        assert_eq!(
            parse("file://localhost/a/b.tar"),
            ShardUrl::Local("/a/b.tar".into())
        );
        assert_eq!(parse("C:/x.tar"), ShardUrl::Local("C:/x.tar".into()));
        assert_eq!(parse("a:b.tar"), ShardUrl::Local("a:b.tar".into()));
        assert_eq!(
            parse("https://h/x.tar"),
            ShardUrl::Http("https://h/x.tar".into())
        );
        let s3 = parse("s3://bucket/train/x.tar");
        assert_eq!(
            s3,
            ShardUrl::S3 {
                bucket: "bucket".into(),
                key: "train/x.tar".into()
            }
        );
        assert_eq!(s3.to_string(), "s3://bucket/train/x.tar");
        assert!(matches!(parse("gs://b/k.tar"), ShardUrl::Gs { .. }));
        assert_eq!(parse("pipe:cat x.tar"), ShardUrl::Pipe("cat x.tar".into()));
        for refused in ["ftp://h/x.tar", "s3://bucket", "s3:///key", "pipe: "] {
            let e = ShardUrl::parse(refused).unwrap_err().to_string();
            assert!(e.contains(refused), "{e}");
        }
        let listed = ShardUrl::expand("a-{0..1}.tar :: http://h/b-{2..3}.tar").unwrap();
        let names: Vec<String> = listed.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["a-0.tar", "a-1.tar", "http://h/b-2.tar", "http://h/b-3.tar"]
        );
    }
}
