//! Shards read where they live, from real servers on loopback (tests/common/servers.rs): every
//! URL form gives the batches the same shards give from local disk, bit for bit; faults (a
//! missing or forbidden object, a connection cut mid-shard, a server that stalls, an object that
//! changes while it is read, a truncated shard) are retried, then fail the rest of their shard
//! alone, by name, within bounded time.

mod common;
#[path = "common/servers.rs"]
mod servers;

use gpuprep::loader::{FetchOptions, Loader, LoaderOptions, ShardUrl, Source};
use gpuprep::{Backend, Limits, Transform};
use servers::{servers, Fault, Proxy, Servers, BUCKET};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SHARDS: usize = 4;

/// Four shards of the bundled photos (six samples each, labelled by place), written once into
/// nginx's root and the S3 bucket; their local paths.
fn shards() -> &'static Vec<PathBuf> {
    static SHARDS_WRITTEN: OnceLock<Vec<PathBuf>> = OnceLock::new();
    SHARDS_WRITTEN.get_or_init(|| {
        let servers = servers();
        let photos_dir = common::manifest_dir().join("tests/data/photos");
        let mut photos: Vec<PathBuf> = std::fs::read_dir(&photos_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        photos.sort();
        (0..SHARDS)
            .map(|s| {
                let name = format!("train-{s:06}.tar");
                let mut tar = tar::Builder::new(Vec::new());
                for (i, photo) in photos.iter().enumerate() {
                    let key = format!("s{s}-{i:03}");
                    let label = (s * 10 + i).to_string();
                    let members: [(&str, Vec<u8>); 2] = [
                        ("jpg", std::fs::read(photo).unwrap()),
                        ("cls", label.into_bytes()),
                    ];
                    for (extension, bytes) in members {
                        let mut header = tar::Header::new_gnu();
                        header.set_size(bytes.len() as u64);
                        header.set_mode(0o644);
                        header.set_cksum();
                        let path = format!("{key}.{extension}");
                        tar.append_data(&mut header, path, bytes.as_slice())
                            .unwrap();
                    }
                }
                let bytes = tar.into_inner().unwrap();
                std::fs::write(servers.bucket().join(&name), &bytes).unwrap();
                let local = servers.www().join(&name);
                std::fs::write(&local, &bytes).unwrap();
                local
            })
            .collect()
    })
}

fn transform() -> Transform {
    Transform {
        resize: Some(gpuprep::Resize::Exact {
            width: 24,
            height: 16,
        }),
        ..Transform::default()
    }
}

/// One epoch's samples: (index, label, the image's tensor bytes) of those that converted, and
/// (index, error) of those that failed.
type Read = (Vec<(u64, i64, Vec<u8>)>, Vec<(u64, String)>);

fn epoch(source: Source, fetch: FetchOptions, backend: Backend) -> Read {
    let loader = loader(source, fetch, backend).unwrap();
    read(&loader)
}

fn loader(source: Source, fetch: FetchOptions, backend: Backend) -> gpuprep::Result<Loader> {
    let options = LoaderOptions {
        split: gpuprep::loader::order::Split::single(true, 7),
        shuffle_buffer: 5,
        fetch,
        ..LoaderOptions::new(4)
    };
    Loader::new(source, &transform(), backend, &Limits::default(), options)
}

fn read(loader: &Loader) -> Read {
    let (mut samples, mut failed) = (Vec::new(), Vec::new());
    for batch in loader.epoch(0) {
        let batch = batch.unwrap();
        let bytes = batch.data.as_bytes();
        let per_image = bytes.len() / batch.shape[0].max(1);
        for (i, (&index, &label)) in batch.indices.iter().zip(&batch.labels).enumerate() {
            let image = bytes[i * per_image..(i + 1) * per_image].to_vec();
            samples.push((index, label, image));
        }
        failed.extend(batch.failed.into_iter().map(|(i, e)| (i, e.to_string())));
    }
    (samples, failed)
}

fn urls(pattern: &str) -> Source {
    Source::Shards(ShardUrl::expand(pattern).unwrap())
}

fn local() -> Read {
    epoch(
        Source::local_shards(shards().clone()),
        FetchOptions::default(),
        Backend::Cpu,
    )
}

/// Every URL form reads the local shards' batches, bit for bit.
#[test]
fn every_url_form_gives_the_local_batches() {
    let local_dir = shards()[0].parent().unwrap().display().to_string();
    let servers: &Servers = servers();
    let want = local();
    assert_eq!(want.0.len(), SHARDS * 6);
    assert!(want.1.is_empty(), "{:?}", want.1);
    let last = SHARDS - 1;
    let sources = [
        servers.http(&format!("train-{{000000..{last:06}}}.tar")),
        format!(
            "{}::{}",
            servers.http("train-{000000..000001}.tar"),
            servers.http(&format!("train-{{000002..{last:06}}}.tar"))
        ),
        format!("s3://{BUCKET}/train-{{000000..{last:06}}}.tar"),
        // GCS's XML paths (/BUCKET/KEY) on nginx: its root holds the shards under www/.
        format!("gs://www/train-{{000000..{last:06}}}.tar"),
        format!("pipe:cat {local_dir}/train-{{000000..{last:06}}}.tar"),
        format!("file://{local_dir}/train-{{000000..{last:06}}}.tar"),
    ];
    std::fs::create_dir_all(servers.www().join("www")).unwrap();
    for shard in shards() {
        let copy = servers.www().join("www").join(shard.file_name().unwrap());
        if !copy.exists() {
            std::fs::copy(shard, copy).unwrap();
        }
    }
    for source in sources {
        let got = epoch(urls(&source), FetchOptions::default(), Backend::Cpu);
        assert!(got == want, "{source}: not the local batches ({:?})", got.1);
    }
    if common::gpu().is_some() {
        let on_gpu = |source| epoch(source, FetchOptions::default(), Backend::gpu().unwrap());
        let http = servers.http(&format!("train-{{000000..{last:06}}}.tar"));
        assert!(
            on_gpu(urls(&http)) == on_gpu(Source::local_shards(shards().clone())),
            "GPU: HTTP shards are not the local batches"
        );
    }
}

/// A missing, forbidden or unsigned object is refused when the loader is made, by name.
#[test]
fn missing_and_forbidden_objects_are_refused_by_name() {
    let servers = servers();
    shards();
    let refused = |source: &str| {
        let e = loader(urls(source), FetchOptions::default(), Backend::Cpu)
            .err()
            .unwrap_or_else(|| panic!("{source}: read"));
        e.to_string()
    };
    let missing = servers.http("train-000009.tar");
    let e = refused(&missing);
    assert!(e.contains(&missing) && e.contains("not found"), "{e}");
    let forbidden = servers.http("forbidden/train-000000.tar");
    let e = refused(&forbidden);
    assert!(e.contains(&forbidden) && e.contains("403"), "{e}");
    let e = refused(&format!("s3://{BUCKET}/train-000009.tar"));
    assert!(
        e.contains("s3://training/train-000009.tar") && e.contains("not found"),
        "{e}"
    );
    let e = refused("pipe:exit 7");
    assert!(
        e.contains("pipe:exit 7") && e.contains("exit status: 7"),
        "{e}"
    );
}

/// The loader made through a fault proxy in front of nginx (counting its shards through it),
/// then the fault set for an epoch: what it read, and the answers the proxy cut.
fn through(proxy: &Proxy, fetch: FetchOptions, fault: Fault) -> (Read, usize) {
    shards();
    let pattern = format!(
        "http://127.0.0.1:{}/train-{{000000..000003}}.tar",
        proxy.port
    );
    let loader = loader(urls(&pattern), fetch, Backend::Cpu).unwrap();
    let before = proxy.cuts();
    proxy.set(fault);
    let got = read(&loader);
    proxy.set(Fault::None);
    (got, proxy.cuts() - before)
}

/// Connections cut mid-shard are resumed where they broke off: the epoch is the local one.
#[test]
fn connections_cut_mid_shard_are_resumed() {
    let proxy = Proxy::new(servers().http_port);
    let cut = Fault::Cut {
        bytes: 150_000,
        times: 3,
    };
    let (got, cuts) = through(&proxy, FetchOptions::default(), cut);
    // (A connection is cut only where an answer passed through it: how many depends on the
    // client's pool of connections.)
    assert!(cuts >= 1, "no answer was cut");
    assert!(got == local(), "{:?}", got.1);
    let slow = Fault::Delay(Duration::from_millis(2));
    assert!(through(&proxy, FetchOptions::default(), slow).0 == local());
}

/// A shard whose every connection is cut fails after its retries: each of its samples not
/// handed over fails, naming it, in the places the local epoch has them.
#[test]
fn a_shard_that_keeps_breaking_fails_alone_after_its_retries() {
    let proxy = Proxy::new(servers().http_port);
    let fetch = FetchOptions {
        retries: 2,
        timeout: Duration::from_secs(5),
    };
    let start = Instant::now();
    let ((samples, failed), _) = through(&proxy, fetch, Fault::CutAlways { bytes: 150_000 });
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    assert!(!failed.is_empty());
    for (index, e) in &failed {
        let shard = (index >> 32) as usize;
        assert!(e.contains(&format!("train-{shard:06}.tar")), "{e}");
    }
    // The samples that came are the local ones, and with the failures they are the local
    // epoch's samples in its order: a failed shard's rest fails sample by sample.
    let want = local();
    for sample in &samples {
        assert!(
            want.0.contains(sample),
            "sample {} is not the local one",
            sample.0
        );
    }
    assert_eq!(in_order(&samples, &failed), in_order(&want.0, &[]));
}

/// The indices of an epoch's samples and failures, in epoch order.
fn in_order(samples: &[(u64, i64, Vec<u8>)], failed: &[(u64, String)]) -> Vec<u64> {
    let mut all: Vec<u64> = samples
        .iter()
        .map(|s| s.0)
        .chain(failed.iter().map(|f| f.0))
        .collect();
    let order = |i: &u64| local_order().iter().position(|l| l == i);
    all.sort_by_key(order);
    all
}

fn local_order() -> &'static Vec<u64> {
    static ORDER: OnceLock<Vec<u64>> = OnceLock::new();
    ORDER.get_or_init(|| local().0.iter().map(|s| s.0).collect())
}

/// A server that takes requests and never answers: each wait times out, the retries run out,
/// and the epoch ends with the failures, promptly.
#[test]
fn a_stalled_server_times_out_instead_of_hanging() {
    let proxy = Proxy::new(servers().http_port);
    let fetch = FetchOptions {
        retries: 1,
        timeout: Duration::from_millis(500),
    };
    let start = Instant::now();
    let ((samples, failed), _) = through(&proxy, fetch, Fault::Stall);
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert!(samples.is_empty());
    assert_eq!(failed.len(), SHARDS * 6, "{failed:?}");
}

/// An object replaced while it is read (another length, another ETag) is not stitched
/// together from two versions: the rest of the shard fails, by name.
#[test]
fn an_object_that_changes_while_read_fails_instead_of_mixing_versions() {
    let servers = servers();
    let original = shards()[3].clone();
    let changing = servers.www().join("changing.tar");
    std::fs::copy(&original, &changing).unwrap();
    let proxy = Proxy::new(servers.http_port);
    let source = format!("http://127.0.0.1:{}/changing.tar", proxy.port);
    let fetch = FetchOptions::default();
    let loader = loader(urls(&source), fetch, Backend::Cpu).unwrap();
    let mut other = std::fs::read(&shards()[0]).unwrap();
    other.truncate(300_000);
    proxy.set(Fault::CutAndReplace {
        bytes: 150_000,
        path: changing.clone(),
        with: other,
    });
    let (samples, failed) = read(&loader);
    assert_eq!(proxy.cuts(), 1);
    // Whatever came is the original's (a range is handed over whole); the rest fail, each by
    // name.
    assert_eq!(samples.len() + failed.len(), 6, "{failed:?}");
    assert!(!failed.is_empty());
    let original = local();
    assert!(samples
        .iter()
        .all(|s| original.0.iter().any(|o| o.2 == s.2)));
    for (_, e) in &failed {
        assert!(
            e.contains("changing.tar") && e.contains("the object changed"),
            "{e}"
        );
    }
}

/// A shard served truncated in the middle of a member: the samples before it come, then one
/// failure for the rest.
#[test]
fn a_truncated_shard_fails_its_rest() {
    let servers = servers();
    let mut bytes = std::fs::read(&shards()[1]).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(servers.www().join("truncated.tar"), &bytes).unwrap();
    let (samples, failed) = epoch(
        urls(&servers.http("truncated.tar")),
        FetchOptions::default(),
        Backend::Cpu,
    );
    // The member it ends in fails, and (counted as the reader gives it) one more for the break.
    assert_eq!((samples.len(), failed.len()), (2, 2), "{failed:?}");
    for (_, e) in &failed {
        assert!(
            e.contains("truncated.tar") && e.contains("the shard ends inside s1-002.jpg"),
            "{e}"
        );
    }
}

/// `gpuprep bench --loader` takes shards' URLs, patterns and all, and reads every sample.
#[test]
fn the_cli_benchmarks_the_loader_on_urls() {
    let servers = servers();
    shards();
    let source = servers.http("train-{000000..000003}.tar");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpuprep"))
        .args([
            "bench",
            "--loader",
            "--backend",
            "cpu",
            "--repeat",
            "1",
            "--batch",
            "4",
        ])
        .args(["--resize", "16x24", "--quiet", &source])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        (line["images"].as_u64(), line["ok"].as_u64()),
        (Some(24), Some(24)),
        "{line}"
    );
}

/// `gpuprep index` over the local shards, the index put beside them in nginx's root and in the
/// S3 bucket: from the index (local, over HTTP or S3), a loader reads the local batches, its
/// shards found relative to the index.
#[test]
fn a_shard_index_gives_the_local_batches() {
    let servers = servers();
    let want = local();
    let index = servers.www().join("train.json");
    let pattern = format!("{}/train-{{000000..000003}}.tar", servers.www().display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpuprep"))
        .args(["index", &pattern, "--out"])
        .arg(&index)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        (line["shards"].as_u64(), line["samples"].as_u64()),
        (Some(4), Some(24))
    );
    let text = std::fs::read_to_string(&index).unwrap();
    assert!(text.contains("\"url\": \"train-000000.tar\""), "{text}");
    std::fs::copy(&index, servers.bucket().join("train.json")).unwrap();
    for at in [
        index.display().to_string(),
        servers.http("train.json"),
        format!("s3://{BUCKET}/train.json"),
    ] {
        let source = Source::ShardIndex(ShardUrl::parse(&at).unwrap());
        let got = epoch(source, FetchOptions::default(), Backend::Cpu);
        assert!(got == want, "{at}: not the local batches ({:?})", got.1);
    }
}

/// An index written by hand: the loader is made from it alone (shards that are not there fail
/// only as the epoch reads them, each sample by name), and a shard that holds other than its
/// count fails by name where the count is passed or not reached.
#[test]
fn a_loader_made_from_an_index_reads_no_shard_until_its_epoch() {
    let servers = servers();
    shards();
    let write_index = |name: &str, entries: &[(&str, u64)]| -> Source {
        let list: Vec<serde_json::Value> = entries
            .iter()
            .map(|(url, n)| serde_json::json!({"url": url, "nsamples": n}))
            .collect();
        let desc = serde_json::json!({"wids_version": 1, "shardlist": list});
        std::fs::write(servers.www().join(name), desc.to_string()).unwrap();
        Source::ShardIndex(ShardUrl::parse(&servers.http(name)).unwrap())
    };
    // A command in an index served from elsewhere is refused: its server would choose it.
    let commands = write_index("commands.json", &[("pipe:cat train-000000.tar", 6)]);
    let e = loader(commands, FetchOptions::default(), Backend::Cpu)
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("commands.json")
            && e.to_string()
                .contains("a pipe: shard in an index that is not a local file"),
        "{e}"
    );
    let ghosts = write_index("ghosts.json", &[("ghost-0.tar", 3), ("ghost-1.tar", 2)]);
    let made = Instant::now();
    let loader = loader(ghosts, FetchOptions::default(), Backend::Cpu).unwrap();
    assert!(made.elapsed() < Duration::from_secs(5));
    let (samples, failed) = read(&loader);
    assert_eq!((samples.len(), failed.len()), (0, 5));
    for (_, e) in &failed {
        assert!(e.contains("ghost-") && e.contains("not found"), "{e}");
    }
    // Unshuffled, so that each failure stands where its shard is read.
    let in_order = |source| {
        let options = LoaderOptions {
            split: gpuprep::loader::order::Split::single(false, 0),
            shuffle_buffer: 0,
            ..LoaderOptions::new(4)
        };
        let loader = Loader::new(
            source,
            &transform(),
            Backend::Cpu,
            &Limits::default(),
            options,
        );
        read(&loader.unwrap())
    };
    let rest = [("train-000002.tar", 6), ("train-000003.tar", 6)];
    let over = write_index(
        "over.json",
        &[
            &[("train-000000.tar", 7), ("train-000001.tar", 6)],
            &rest[..],
        ]
        .concat(),
    );
    let (samples, failed) = in_order(over);
    assert_eq!((samples.len(), failed.len()), (24, 1), "{failed:?}");
    assert_eq!(failed[0].0, 6);
    assert!(
        failed[0].1.contains("train-000000.tar")
            && failed[0].1.contains("holds only 6 of the 7 samples"),
        "{}",
        failed[0].1
    );
    let under = write_index(
        "under.json",
        &[
            &[("train-000000.tar", 5), ("train-000001.tar", 6)],
            &rest[..],
        ]
        .concat(),
    );
    let (samples, failed) = in_order(under);
    assert_eq!((samples.len(), failed.len()), (22, 1), "{failed:?}");
    // The shard gives its five counted entries: its fifth sample fails in its place.
    assert_eq!(failed[0].0, 4);
    assert!(
        failed[0].1.contains("train-000000.tar")
            && failed[0].1.contains("holds more than the 5 samples"),
        "{}",
        failed[0].1
    );
}

/// With no AWS settings in the environment, an AWS profile (`AWS_PROFILE`, from the shared
/// credentials and config files) gives the keys, the region and the endpoint; a profile that
/// is not there, or that needs a flow gpuprep does not run, is refused by name.
#[test]
fn an_aws_profile_gives_the_keys_and_the_endpoint() {
    let servers = servers();
    shards();
    let folder = servers.root.join("aws");
    std::fs::create_dir_all(&folder).unwrap();
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap();
    let key = std::env::var("AWS_ACCESS_KEY_ID").unwrap();
    let secret = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap();
    std::fs::write(
        folder.join("credentials"),
        format!("[training]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n"),
    )
    .unwrap();
    std::fs::write(
        folder.join("config"),
        format!(
            "[profile training]\nregion = us-east-1\ns3 =\n  endpoint_url = {endpoint}\n\n\
             [profile sso]\nsso_session = corp\n"
        ),
    )
    .unwrap();
    let bench = |profile: &str| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_gpuprep"));
        for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("AWS_")) {
            command.env_remove(name);
        }
        command
            .env("AWS_PROFILE", profile)
            .env("AWS_SHARED_CREDENTIALS_FILE", folder.join("credentials"))
            .env("AWS_CONFIG_FILE", folder.join("config"))
            .args(["bench", "--loader", "--backend", "cpu", "--repeat", "1"])
            .args(["--batch", "4", "--resize", "16x24", "--quiet"])
            .arg(format!("s3://{BUCKET}/train-{{000000..000003}}.tar"))
            .output()
            .unwrap()
    };
    let out = bench("training");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["ok"].as_u64(), Some(24), "{line}");
    for (profile, why) in [
        ("nowhere", "the AWS profile nowhere is in neither"),
        (
            "sso",
            "the AWS profile sso gets its credentials through sso_session",
        ),
    ] {
        let out = bench(profile);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(why), "{stderr}");
        assert!(
            stderr.contains("s3://training/train-000000.tar"),
            "{stderr}"
        );
    }
}
