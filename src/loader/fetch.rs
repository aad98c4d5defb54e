//! Opening a shard as a stream of bytes, wherever it is: a local file, a command's standard
//! output (`pipe:`), or an object over HTTP(S), S3 or Google Cloud Storage, fetched in ranges
//! as it is read (decoding starts while the shard is still arriving), its read-ahead bounded in
//! bytes.
//!
//! Remote objects go through the `object_store` crate, whose clients retry transient failures
//! (connection errors, 5xx and 429 answers, a body that breaks off: resumed by a range request
//! that must find the same object, by its ETag) with exponential backoff, a bounded number of
//! times, every wait under a timeout; S3 and GCS credentials come from their standard chains
//! (environment, web identity, an AWS profile's static keys (`aws_profile`), container and
//! instance metadata; `AWS_ENDPOINT_URL` for S3-compatible stores).

use super::aws_profile::{self, Profile};
use super::shard_url::ShardUrl;
use crate::error::{Error, Result};
use bytes::Bytes;
use futures::StreamExt;
use object_store::{ClientOptions, GetOptions, ObjectStore, ObjectStoreExt, RetryConfig};
use std::collections::HashMap;
use std::io::{self, Read};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How remote shards are fetched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FetchOptions {
    /// Retries of a request that failed transiently (or whose body broke off) before the
    /// shard fails.
    pub retries: u32,
    /// The longest wait for a connection or for the next bytes of an answer.
    pub timeout: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            retries: 10,
            timeout: Duration::from_secs(30),
        }
    }
}

/// A remote object is fetched in ranges of this many bytes, [`CHUNKS_AT_ONCE`] at a time, and
/// handed over in pieces of [`PIECE_BYTES`], at most [`PIECES_AHEAD`] of them waiting for the
/// reader: a shard in flight holds at most 4 × 4 + 8 = 24 MiB, whatever its size.
const CHUNK_BYTES: u64 = 4 << 20;
const CHUNKS_AT_ONCE: usize = 4;
const PIECE_BYTES: usize = 256 << 10;
const PIECES_AHEAD: usize = 32;

/// The shard's bytes as a stream, from its start. Remote objects start arriving at once, so a
/// reader opened ahead of its turn is fetched ahead.
pub fn open(shard: &ShardUrl, fetch: &FetchOptions) -> Result<Box<dyn Read + Send>> {
    let in_shard = |e: Error| e.in_file(shard.name());
    match shard {
        ShardUrl::Local(path) => Ok(Box::new(
            std::fs::File::open(path).map_err(|e| in_shard(e.into()))?,
        )),
        ShardUrl::Pipe(command) => Ok(Box::new(
            Pipe::spawn(command, fetch.timeout).map_err(in_shard)?,
        )),
        remote => Ok(Box::new(Remote::open(remote, fetch).map_err(in_shard)?)),
    }
}

/// A command's standard output, read by a thread of its own so that every wait for it has the
/// fetch's timeout (a command that writes nothing for that long is stopped, with an error); its
/// exit status is checked at the end (a command that failed is an error, not a short shard).
/// The command runs in a process group of its own, which is stopped whole when the reader is
/// dropped early (a pipeline's every process, not just the shell).
struct Pipe {
    child: Child,
    pieces: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
    timeout: Duration,
}

impl Pipe {
    fn spawn(command: &str, timeout: Duration) -> Result<Self> {
        if super::shard_url::pipes_refused() {
            return Err(Error::Options(format!(
                "pipe:{command}: pipe: sources run a command, and {} is set",
                super::shard_url::SECURE_SWITCH
            )));
        }
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut shell, 0);
        let mut child = shell.spawn()?;
        let mut stdout: ChildStdout = child.stdout.take().ok_or_else(|| {
            Error::Internal("a piped command's standard output was not kept".into())
        })?;
        let (tx, pieces) = std::sync::mpsc::sync_channel(PIECES_AHEAD);
        std::thread::spawn(move || loop {
            let mut piece = vec![0; PIECE_BYTES];
            match stdout.read(&mut piece) {
                Ok(0) => return,
                Ok(n) => {
                    piece.truncate(n);
                    if tx.send(Ok(piece)).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        });
        Ok(Self {
            child,
            pieces,
            current: Vec::new(),
            at: 0,
            timeout,
        })
    }

    /// Stops the command's whole process group.
    fn stop(&mut self) {
        #[cfg(unix)]
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The command's exit status once its output ended, waited for at most the timeout.
    fn ended(&mut self) -> io::Result<()> {
        let deadline = std::time::Instant::now() + self.timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            if std::time::Instant::now() >= deadline {
                self.stop();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the command closed its output but ran on for {:?}",
                        self.timeout
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("the command ended with {status}")))
        }
    }
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            match self.pieces.recv_timeout(self.timeout) {
                Ok(piece) => (self.current, self.at) = (piece?, 0),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return self.ended().map(|()| 0);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    self.stop();
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the command wrote nothing for {:?}", self.timeout),
                    ));
                }
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // Ended already when it was read to its end; else it is stopped, not left behind.
        match self.child.try_wait() {
            Ok(Some(_)) => {}
            _ => self.stop(),
        }
    }
}

/// An object being fetched by a task of the fetch runtime, its pieces handed over through a
/// bounded channel; dropping the reader stops the task.
struct Remote {
    pieces: tokio::sync::mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
    task: tokio::task::AbortHandle,
}

impl Remote {
    fn open(shard: &ShardUrl, fetch: &FetchOptions) -> Result<Self> {
        // First: it sets up the TLS clients' cryptography too.
        let runtime = runtime()?;
        let (store, path) = store_of(shard, fetch)?;
        let (tx, pieces) = tokio::sync::mpsc::channel(PIECES_AHEAD);
        let task = runtime.spawn(stream_object(store, path, tx));
        Ok(Self {
            pieces,
            current: Bytes::new(),
            task: task.abort_handle(),
        })
    }
}

impl Read for Remote {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.pieces.blocking_recv() {
                Some(piece) => self.current = piece?,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Fetches the object at `path` into `tx` in pieces, then ends (an error, after the client's
/// retries, as the last item); stops when the reader is gone. An object larger than a chunk is
/// fetched as [`CHUNKS_AT_ONCE`] ranges at once, each asking for the version the object had at
/// the start (its ETag), and handed over in order: one stream alone would bound the rate.
async fn stream_object(
    store: Arc<dyn ObjectStore>,
    path: object_store::path::Path,
    tx: tokio::sync::mpsc::Sender<io::Result<Bytes>>,
) {
    use object_store::Error as E;
    let meta = match store.head(&path).await {
        Ok(meta) => meta,
        // Missing or forbidden: said as it is.
        Err(e @ (E::NotFound { .. } | E::PermissionDenied { .. } | E::Unauthenticated { .. })) => {
            let _ = tx.send(Err(io_error(e))).await;
            return;
        }
        // A server that answers no HEAD: the object in one answer, as it streams.
        Err(_) => return stream_whole(store, path, tx).await,
    };
    let ranges = (0..meta.size)
        .step_by(CHUNK_BYTES as usize)
        .map(|start| start..(start + CHUNK_BYTES).min(meta.size));
    // Only a strong ETag names one version of the bytes (a weak one, as compressing proxies
    // give, would fail every range's precondition).
    let version = meta.e_tag.clone().filter(|tag| !tag.starts_with("W/"));
    // Each range a task of its own, so that all of them keep arriving while this one waits
    // for the reader.
    let chunks = futures::stream::iter(ranges)
        .map(|range| {
            let (store, path) = (Arc::clone(&store), path.clone());
            let options = GetOptions {
                range: Some(range.into()),
                if_match: version.clone(),
                ..GetOptions::default()
            };
            Chunk(tokio::spawn(async move {
                store.get_opts(&path, options).await?.bytes().await
            }))
        })
        .buffered(CHUNKS_AT_ONCE);
    let size = meta.size;
    let broke = |received, e: &io::Error| {
        if received == 0 {
            format!("its first {CHUNK_BYTES} bytes could not be had: {e}")
        } else {
            format!(
                "it broke off after {received} of its {size} bytes and was not resumed \
                 (retries ran out, or the object changed): {e}"
            )
        }
    };
    forward(chunks, &tx, broke).await;
}

/// The object in one streaming answer (for servers that answer no HEAD or range), handed
/// over as it arrives.
async fn stream_whole(
    store: Arc<dyn ObjectStore>,
    path: object_store::path::Path,
    tx: tokio::sync::mpsc::Sender<io::Result<Bytes>>,
) {
    match store.get(&path).await {
        Ok(result) => {
            let broke =
                |received, e: &io::Error| format!("it broke off after {received} bytes: {e}");
            forward(result.into_stream(), &tx, broke).await;
        }
        Err(e) => {
            let _ = tx.send(Err(io_error(e))).await;
        }
    }
}

/// `chunks` to the reader in pieces, until they end or the reader is gone; a chunk that fails
/// ends them with the error `broke(bytes handed over before it, its error)` describes.
async fn forward(
    chunks: impl futures::Stream<Item = object_store::Result<Bytes>>,
    tx: &tokio::sync::mpsc::Sender<io::Result<Bytes>>,
    broke: impl Fn(usize, &io::Error) -> String,
) {
    let mut chunks = std::pin::pin!(chunks);
    let mut received = 0;
    while let Some(chunk) = chunks.next().await {
        let mut chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                let e = io_error(e);
                let why = broke(received, &e);
                let _ = tx.send(Err(io::Error::new(e.kind(), why))).await;
                return;
            }
        };
        received += chunk.len();
        while !chunk.is_empty() {
            let piece = chunk.split_to(chunk.len().min(PIECE_BYTES));
            if tx.send(Ok(piece)).await.is_err() {
                return;
            }
        }
    }
}

/// A range being fetched by a task of its own, stopped when dropped (when the reader is gone).
struct Chunk(tokio::task::JoinHandle<object_store::Result<Bytes>>);

impl std::future::Future for Chunk {
    type Output = object_store::Result<Bytes>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(|joined| {
            joined.unwrap_or_else(|e| {
                Err(object_store::Error::Generic {
                    store: "fetch",
                    source: Box::new(e),
                })
            })
        })
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An object store's error as the I/O error a shard's reader gives: missing and forbidden
/// objects keep their kinds.
fn io_error(e: object_store::Error) -> io::Error {
    use object_store::Error as E;
    let (kind, why) = match &e {
        E::NotFound { path, .. } => (io::ErrorKind::NotFound, format!("{path}: not found")),
        E::PermissionDenied { path, .. } => (
            io::ErrorKind::PermissionDenied,
            format!("{path}: access denied (403)"),
        ),
        E::Unauthenticated { path, .. } => (
            io::ErrorKind::PermissionDenied,
            format!("{path}: not authenticated (401): check the credentials"),
        ),
        E::Precondition { path, .. } => (
            io::ErrorKind::Other,
            format!("{path}: the object changed while it was read (its ETag no longer matches)"),
        ),
        // Some stores pass a failed precondition on as a generic error with the status.
        _ if e.to_string().contains("412 Precondition Failed") => (
            io::ErrorKind::Other,
            "the object changed while it was read (its ETag no longer matches)".to_string(),
        ),
        _ => (io::ErrorKind::Other, e.to_string()),
    };
    // A server's error page can be long: its start says what it is.
    let full = e.to_string();
    let why = if why == full && full.chars().count() > 400 {
        full.chars().take(400).chain(['…']).collect()
    } else {
        why
    };
    io::Error::new(kind, why)
}

/// The runtime remote fetches run on: four threads of its own, started on the first fetch
/// (which also chooses the TLS clients' cryptography, before any client is made).
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            // The TLS clients' cryptography (once per process; another library's choice stands).
            #[expect(
                deprecated,
                reason = "ring builds with the plain C compiler that the wheel's zig build has; \
                          its key exchange is not post-quantum"
            )]
            let ring = rustls::crypto::ring::default_provider();
            let _ = ring.install_default();
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(4)
                .thread_name("gpuprep-fetch")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Internal(format!("the fetch runtime could not start: {e}")))
}

/// The store that holds a remote shard, and its path there. Stores are kept per bucket (or
/// HTTP origin) and options, so that shards of one place share their connections.
fn store_of(
    shard: &ShardUrl,
    fetch: &FetchOptions,
) -> Result<(Arc<dyn ObjectStore>, object_store::path::Path)> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let (place, key) = match shard {
        ShardUrl::Http(url) => http_origin(url)?,
        ShardUrl::S3 { bucket, key } => (format!("s3://{bucket}"), key.clone()),
        ShardUrl::Gs { bucket, key } => (format!("gs://{bucket}"), key.clone()),
        ShardUrl::Local(_) | ShardUrl::Pipe(_) => {
            return Err(Error::Internal(format!("{shard} is not a remote object")))
        }
    };
    // An HTTP URL's path is percent-encoded already; an object key is not.
    let path = match shard {
        ShardUrl::Http(_) => object_store::path::Path::from_url_path(&key),
        _ => object_store::path::Path::parse(&key),
    }
    .map_err(|e| Error::Options(format!("not an object's path: {e}")))?;
    let stores = STORES.get_or_init(Mutex::default);
    // The environment configures S3 and GCS clients (endpoint, credentials): a store is kept
    // for the environment it was made in.
    let environment: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| name.starts_with("AWS_") || name.starts_with("GOOGLE_"))
        .collect();
    // ... and, for S3, the AWS profile's settings.
    let profile = match shard {
        ShardUrl::S3 { .. } => {
            aws_profile::read().map_err(|why| Error::Options(format!("{shard}: {why}")))?
        }
        _ => Profile::default(),
    };
    let id = format!("{place} {fetch:?} {environment:?} {profile:?}");
    if let Some(store) = super::lock(stores).get(&id) {
        return Ok((Arc::clone(store), path));
    }
    let store = build_store(shard, &place, fetch, profile)
        .map_err(|e| Error::Options(format!("{shard}: {e}")))?;
    super::lock(stores).insert(id, Arc::clone(&store));
    Ok((store, path))
}

fn build_store(
    shard: &ShardUrl,
    place: &str,
    fetch: &FetchOptions,
    profile: Profile,
) -> object_store::Result<Arc<dyn ObjectStore>> {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
    use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
    use object_store::ClientConfigKey as Key;
    let retry = RetryConfig {
        max_retries: fetch.retries as usize,
        ..RetryConfig::default()
    };
    // Set key by key, so that what the environment configured (proxies, certificates, ...)
    // stays: a connection and each read wait at most the timeout; a range of 4 MiB, ten times
    // that.
    let wait = format!("{}ms", fetch.timeout.as_millis().max(1));
    let range = format!("{}ms", fetch.timeout.as_millis().max(1).saturating_mul(10));
    let timeouts = [
        (Key::ConnectTimeout, wait.clone()),
        (Key::ReadTimeout, wait),
        (Key::Timeout, range),
    ];
    Ok(match shard {
        ShardUrl::S3 { bucket, .. } => {
            let mut builder = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_retry(retry);
            for (key, value) in timeouts {
                builder = builder.with_config(AmazonS3ConfigKey::Client(key), value);
            }
            if let Some((id, secret, token)) = profile.keys {
                builder = builder
                    .with_access_key_id(id)
                    .with_secret_access_key(secret);
                if let Some(token) = token {
                    builder = builder.with_token(token);
                }
            }
            if let Some(region) = profile.region {
                builder = builder.with_region(region);
            }
            if let Some(endpoint) = &profile.endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            // An endpoint the user gave as http:// (an S3-compatible store on a private
            // network) is plain HTTP by choice; AWS itself is https.
            let endpoint = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
                .iter()
                .find_map(|name| std::env::var(name).ok())
                .or(profile.endpoint);
            if endpoint.is_some_and(|e| e.starts_with("http://")) {
                builder = builder.with_allow_http(true);
            }
            Arc::new(builder.build()?)
        }
        ShardUrl::Gs { bucket, .. } => {
            let mut builder = GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(bucket)
                .with_retry(retry);
            for (key, value) in timeouts {
                builder = builder.with_config(GoogleConfigKey::Client(key), value);
            }
            Arc::new(builder.build()?)
        }
        _ => {
            let mut client = ClientOptions::new().with_allow_http(place.starts_with("http://"));
            for (key, value) in timeouts {
                client = client.with_config(key, value);
            }
            Arc::new(
                object_store::http::HttpBuilder::new()
                    .with_url(place)
                    .with_client_options(client)
                    .with_retry(retry)
                    .build()?,
            )
        }
    })
}

/// An HTTP URL's origin (`scheme://host[:port]`) and the path after it. URLs with a query or
/// a fragment are refused: the store would send them as part of the path.
fn http_origin(url: &str) -> Result<(String, String)> {
    if url.contains(['?', '#']) {
        return Err(Error::Options(format!(
            "{url}: URLs with a query or a fragment are not fetched (give the object's plain URL)"
        )));
    }
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let Some(slash) = url[after_scheme..].find('/').map(|i| i + after_scheme) else {
        return Err(Error::Options(format!("{url}: the URL names no object")));
    };
    let key = url[slash + 1..].to_string();
    if key.is_empty() {
        return Err(Error::Options(format!("{url}: the URL names no object")));
    }
    Ok((url[..slash].to_string(), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls_split_into_origin_and_object() {
        assert_eq!(
            http_origin("http://127.0.0.1:8080/a/b-000.tar").unwrap(),
            ("http://127.0.0.1:8080".into(), "a/b-000.tar".into())
        );
        for refused in [
            "http://h",
            "http://h/",
            "http://h/x.tar?sig=1",
            "http://h/x.tar#f",
        ] {
            assert!(http_origin(refused).is_err(), "{refused}");
        }
    }

    /// A command's output is the shard; a command that fails is an error at its end, after
    /// what it wrote.
    #[test]
    fn pipes_read_the_output_and_check_the_status() {
        let read = |command: &str| {
            let mut bytes = Vec::new();
            let pipe = Pipe::spawn(command, Duration::from_secs(10)).unwrap();
            let result = { pipe }.read_to_end(&mut bytes);
            (bytes, result.map_err(|e| e.to_string()))
        };
        assert_eq!(read("printf abc"), (b"abc".to_vec(), Ok(3)));
        let (bytes, failed) = read("printf ab; exit 3");
        assert_eq!(bytes, b"ab");
        assert!(failed.unwrap_err().contains("exit status: 3"));
    }

    /// A command that stalls is stopped after the timeout, with what it wrote before.
    #[test]
    fn a_stalled_pipe_times_out_and_is_stopped() {
        let start = std::time::Instant::now();
        let mut pipe = Pipe::spawn("printf ab; sleep 30", Duration::from_millis(300)).unwrap();
        let mut bytes = Vec::new();
        let e = pipe.read_to_end(&mut bytes).unwrap_err();
        assert_eq!(
            (bytes.as_slice(), e.kind()),
            (&b"ab"[..], io::ErrorKind::TimedOut)
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert!(pipe.child.try_wait().unwrap().is_some(), "stopped");
    }
}
