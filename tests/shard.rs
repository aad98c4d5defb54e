//! `gpuprep shard`, the offline job: an ImageFolder tree resized and re-encoded into WebDataset
//! shards whose JPEGs are, byte for byte, what Pillow's
//! `Image.open(f).convert("RGB").resize(size, BILINEAR).save(buf, "JPEG", quality=Q)` writes
//! (checked with the pinned Pillow, run here), with the classes; the loader reads them back;
//! a job run again (after a SIGKILL or a SIGINT too) keeps the complete shards and writes the
//! rest to the same bytes, on either backend; a broken input is left out and named, the others
//! written.

mod common;

use gpuprep::loader::{Loader, LoaderOptions, Source};
use gpuprep::{Backend, Limits, Transform};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An ImageFolder tree of the bundled photos (three a class) and a broken JPEG in the second.
fn tree(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("gpuprep-shard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let photos = common::manifest_dir().join("tests/data/photos");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&photos)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for (i, photo) in names.iter().enumerate() {
        let class = root.join("tree").join(["cat", "dog"][i / 3]);
        std::fs::create_dir_all(&class).unwrap();
        std::fs::copy(photo, class.join(photo.file_name().unwrap())).unwrap();
    }
    root
}

fn shard(root: &Path, out: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpuprep"))
        .current_dir(root)
        .args([
            "shard",
            "tree",
            "--out",
            out,
            "--resize",
            "64",
            "--quality",
            "90",
        ])
        .args(["--shard-samples", "4", "--quiet"])
        .args(extra)
        .output()
        .unwrap()
}

fn summary(output: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|_| panic!("{stdout}{}", String::from_utf8_lossy(&output.stderr)))
}

/// Each shard's members: (name, bytes).
fn members(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|m| {
            let mut m = m.unwrap();
            let name = m.path().unwrap().to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut m, &mut bytes).unwrap();
            (name, bytes)
        })
        .collect()
}

/// Pillow's JPEG of each sample's source (read from its JSON), written beside it as
/// `KEY.pillow.jpg`: the job a team's Python script would have run.
fn pillow_files(root: &Path, shards: &[PathBuf]) -> PathBuf {
    let expected = root.join("pillow");
    std::fs::create_dir_all(&expected).unwrap();
    let script = r#"
import io, json, sys, tarfile
from PIL import Image
out = sys.argv[1]
for shard in sys.argv[2:]:
    with tarfile.open(shard) as t:
        for m in t.getmembers():
            if not m.name.endswith(".json"):
                continue
            meta = json.loads(t.extractfile(m).read())
            im = Image.open(meta["source"]).convert("RGB")
            w, h = im.size
            size = (64, int(64 * h / w)) if w <= h else (int(64 * w / h), 64)
            buf = io.BytesIO()
            im.resize(size, Image.BILINEAR).save(buf, "JPEG", quality=90)
            open(f"{out}/{m.name[:-5]}.pillow.jpg", "wb").write(buf.getvalue())
"#;
    let python = std::env::var("GPUPREP_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(python)
        .current_dir(root)
        .args(["-c", script])
        .arg(&expected)
        .args(shards)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    expected
}

#[test]
fn shards_hold_pillows_jpegs_and_the_classes() {
    let root = tree("pillow");
    let output = shard(
        &root,
        "out/train-%06d.tar",
        &["--backend", "cpu", "--index", "index/train.json"],
    );
    assert!(output.status.success(), "{output:?}");
    let line = summary(&output);
    assert_eq!(
        (line["samples"].as_u64(), line["failed"].as_u64()),
        (Some(6), Some(0))
    );
    let seconds = |stage: &str| line["seconds"][stage].as_f64().unwrap_or(-1.0);
    assert!(
        seconds("decoding") > 0.0 && seconds("encoding") > 0.0,
        "{line}"
    );
    for stage in ["reading", "forward", "writing", "waiting"] {
        assert!(seconds(stage) >= 0.0, "{stage}: {line}");
    }
    let shards: Vec<PathBuf> = (0..2)
        .map(|n| root.join(format!("out/train-{n:06}.tar")))
        .collect();
    let expected = pillow_files(&root, &shards);
    let mut keys = Vec::new();
    for shard in &shards {
        let members = members(shard);
        for (name, bytes) in &members {
            let Some(key) = name.strip_suffix(".jpg") else {
                continue;
            };
            let pillow = std::fs::read(expected.join(format!("{key}.pillow.jpg"))).unwrap();
            assert!(*bytes == pillow, "{name}: not Pillow's bytes");
            keys.push(key.to_string());
        }
        // Four samples a shard, three members each.
        assert!(members.len() <= 12);
    }
    assert_eq!(keys, (0..6).map(|n| format!("{n:09}")).collect::<Vec<_>>());
    // The loader reads them back, classes and all.
    let options = LoaderOptions::new(6);
    let transform = Transform {
        resize: Some(gpuprep::Resize::Exact {
            width: 8,
            height: 8,
        }),
        ..Transform::default()
    };
    // Read from the shards, and from the index the job wrote (its folder made), each shard
    // with its count.
    let index = root.join("index/train.json");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    let counts: Vec<u64> = written["shardlist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["nsamples"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [4, 2]);
    let index = gpuprep::loader::ShardUrl::Local(index);
    for source in [
        Source::local_shards(shards.clone()),
        Source::ShardIndex(index),
    ] {
        let loader = Loader::new(
            source,
            &transform,
            Backend::Cpu,
            &Limits::default(),
            options,
        )
        .unwrap();
        let batch = loader.epoch(0).next().unwrap().unwrap();
        assert_eq!(batch.labels, [0, 0, 0, 1, 1, 1]);
        assert!(batch.failed.is_empty());
    }
}

#[test]
fn a_job_run_again_writes_the_rest_to_the_same_bytes() {
    let root = tree("resume");
    let bytes = |n: usize| std::fs::read(root.join(format!("out/train-{n:06}.tar"))).unwrap();
    assert!(shard(&root, "out/train-%06d.tar", &["--backend", "cpu"])
        .status
        .success());
    let whole = [bytes(0), bytes(1)];
    // As if killed while writing the second shard: it is gone, the first stays.
    std::fs::remove_file(root.join("out/train-000001.tar")).unwrap();
    let again = shard(&root, "out/train-%06d.tar", &["--backend", "cpu"]);
    let line = summary(&again);
    assert_eq!(
        (line["kept"].as_u64(), line["samples"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(bytes(1) == whole[1], "the rewritten shard differs");
    // Other inputs under those shards are refused by name: a new first image would shift
    // every sample after it.
    let first = root.join("tree/cat/000-first.jpg");
    std::fs::copy(root.join("tree/dog/sklearn__china.jpg"), &first).unwrap();
    std::fs::remove_file(root.join("out/train-000001.tar")).unwrap();
    let shifted = shard(&root, "out/train-%06d.tar", &["--backend", "cpu"]);
    let stderr = String::from_utf8_lossy(&shifted.stderr);
    assert!(
        !shifted.status.success() && stderr.contains("the inputs changed"),
        "{stderr}"
    );
    std::fs::remove_file(&first).unwrap();
    assert!(shard(&root, "out/train-%06d.tar", &["--backend", "cpu"])
        .status
        .success());
    assert!(bytes(1) == whole[1], "the rewritten shard differs");
    // Other settings over those shards are refused by name.
    let other = shard(
        &root,
        "out/train-%06d.tar",
        &["--backend", "cpu", "--optimize"],
    );
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        !other.status.success() && stderr.contains("written with other settings"),
        "{stderr}"
    );
    if common::gpu().is_some() {
        // The GPU backend, its encoder's forward stages on CPU threads and on the GPU.
        for (forward_stages, on_the_gpu) in [("cpu", false), ("gpu", true)] {
            let out = format!("gpu-{forward_stages}");
            let on_gpu = shard(
                &root,
                &format!("{out}/train-%06d.tar"),
                &["--backend", "gpu", "--forward-stages", forward_stages],
            );
            assert!(on_gpu.status.success(), "{on_gpu:?}");
            let forward = summary(&on_gpu)["seconds"]["forward"].as_f64().unwrap();
            assert_eq!(forward > 0.0, on_the_gpu, "{on_gpu:?}");
            for (n, cpu) in whole.iter().enumerate() {
                let gpu = std::fs::read(root.join(format!("{out}/train-{n:06}.tar"))).unwrap();
                assert!(gpu == *cpu, "{out}, shard {n}: the GPU's differs");
            }
        }
    }
}

#[test]
fn a_broken_input_is_named_and_the_others_written() {
    let root = tree("broken");
    // Sorted first of its class: sample 3, in the middle of the first shard.
    let broken = root.join("tree/dog/a-broken.jpg");
    let photo = common::manifest_dir().join("tests/data/photos/mpl__grace_hopper.jpg");
    let mut bytes = std::fs::read(photo).unwrap();
    bytes.truncate(600);
    std::fs::write(&broken, bytes).unwrap();
    let output = shard(&root, "out/train-%06d.tar", &["--backend", "cpu"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failed: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(failed["what"], "failed");
    assert_eq!(failed["sample"], 3);
    assert!(
        failed["source"].as_str().unwrap().ends_with("a-broken.jpg"),
        "{failed}"
    );
    assert_eq!(summary(&output)["samples"], 6);
    if common::gpu().is_some() {
        // On the GPU, the broken input fails in the GPU's stream, alone: the same shards.
        for forward_stages in ["cpu", "gpu"] {
            let out = format!("gpu-{forward_stages}");
            let pattern = format!("{out}/train-%06d.tar");
            let extra = ["--backend", "gpu", "--forward-stages", forward_stages];
            let on_gpu = shard(&root, &pattern, &extra);
            assert_eq!(on_gpu.status.code(), Some(1), "{on_gpu:?}");
            let stdout = String::from_utf8_lossy(&on_gpu.stdout);
            let failed: serde_json::Value =
                serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
            assert_eq!(failed["sample"], 3, "{failed}");
            for n in 0..2 {
                let name = format!("train-{n:06}.tar");
                let cpu = std::fs::read(root.join("out").join(&name)).unwrap();
                let gpu = std::fs::read(root.join(&out).join(&name)).unwrap();
                assert!(gpu == cpu, "{out}, shard {n}: the GPU's differs");
            }
        }
    }
    // Run again, the input that failed is not in the kept shards: it fails again, by name.
    let again = shard(&root, "out/train-%06d.tar", &["--backend", "cpu"]);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    let stdout = String::from_utf8_lossy(&again.stdout);
    let failed: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(failed["sample"], 3);
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("left out of the kept shards"),
        "{failed}"
    );
    assert_eq!(summary(&again)["kept"], 2);
    // A tar that this job did not write is not taken for one of its shards.
    let foreign = root.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    let mut tar = tar::Builder::new(std::fs::File::create(foreign.join("t-0.tar")).unwrap());
    let mut header = tar::Header::new_gnu();
    header.set_size(5);
    header.set_cksum();
    tar.append_data(&mut header, "notes.txt", &b"notes"[..])
        .unwrap();
    tar.finish().unwrap();
    let over = shard(&root, "foreign/t-%d.tar", &["--backend", "cpu"]);
    let stderr = String::from_utf8_lossy(&over.stderr);
    assert!(
        over.status.code() == Some(2) && stderr.contains("not a shard of this job"),
        "{stderr}"
    );
    // No temporary file is left.
    let left: Vec<String> = std::fs::read_dir(root.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| n.ends_with(".tar")), "{left:?}");
}

#[test]
fn a_labels_file_gives_the_classes_and_every_image_needs_one() {
    let root = tree("labels");
    // Class names (numbered in sorted order) by path below the folder given or by file name,
    // after a header; the ImageFolder tree's folders are ignored once a labels file is given.
    let mut names: Vec<String> = Vec::new();
    for class in ["cat", "dog"] {
        for entry in std::fs::read_dir(root.join("tree").join(class)).unwrap() {
            names.push(format!(
                "{class}/{}",
                entry.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    names.sort();
    let mut csv = String::from("file,species\n");
    for (i, name) in names.iter().enumerate() {
        let (key, species) = if i % 2 == 0 {
            (name.as_str(), "zebra")
        } else {
            (name.rsplit('/').next().unwrap(), "aardvark")
        };
        csv.push_str(&format!("{key},{species}\n"));
    }
    // As a spreadsheet saves it: a byte-order mark first.
    std::fs::write(root.join("labels.csv"), format!("\u{feff}{csv}")).unwrap();
    let output = shard(
        &root,
        "out/train-%06d.tar",
        &["--backend", "cpu", "--recursive", "--labels", "labels.csv"],
    );
    assert!(output.status.success(), "{output:?}");
    let mut seen = Vec::new();
    for n in 0..2 {
        let members = members(&root.join(format!("out/train-{n:06}.tar")));
        for (name, bytes) in &members {
            if let Some(key) = name.strip_suffix(".cls") {
                let json = &members
                    .iter()
                    .find(|(m, _)| *m == format!("{key}.json"))
                    .unwrap()
                    .1;
                let json: serde_json::Value = serde_json::from_slice(json).unwrap();
                let source = json["source"].as_str().unwrap().to_string();
                let class = json["class"].as_str().unwrap().to_string();
                seen.push((source, String::from_utf8(bytes.clone()).unwrap(), class));
                assert_eq!(json["settings"]["labelled"], true);
            }
        }
    }
    assert_eq!(seen.len(), names.len());
    for (i, name) in names.iter().enumerate() {
        let (index, class) = if i % 2 == 0 {
            ("1", "zebra")
        } else {
            ("0", "aardvark")
        };
        let sample = seen
            .iter()
            .find(|(source, _, _)| source.ends_with(name.as_str()));
        let (_, got_index, got_class) = sample.unwrap_or_else(|| panic!("{name}: {seen:?}"));
        assert_eq!(
            (got_index.as_str(), got_class.as_str()),
            (index, class),
            "{name}"
        );
    }
    // Run again with other labels: the shards are not kept as if they held them.
    std::fs::write(root.join("labels.csv"), csv.replace("zebra", "yak")).unwrap();
    let relabelled = shard(
        &root,
        "out/train-%06d.tar",
        &["--backend", "cpu", "--recursive", "--labels", "labels.csv"],
    );
    let stderr = String::from_utf8_lossy(&relabelled.stderr);
    assert!(
        relabelled.status.code() == Some(2) && stderr.contains("the labels changed"),
        "{stderr}"
    );
    // An image without a label is an error naming it, before anything is written.
    let short: String = csv
        .lines()
        .take(names.len())
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(root.join("short.json"), "{\"x.jpg\": 3}").unwrap();
    std::fs::write(root.join("short.csv"), short).unwrap();
    let missing = shard(
        &root,
        "missing/train-%06d.tar",
        &["--backend", "cpu", "--recursive", "--labels", "short.csv"],
    );
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        missing.status.code() == Some(2)
            && stderr.contains("short.csv: no label for")
            && stderr.contains(names.last().unwrap().rsplit('/').next().unwrap()),
        "{stderr}"
    );
    let none = shard(
        &root,
        "missing/train-%06d.tar",
        &["--backend", "cpu", "--recursive", "--labels", "short.json"],
    );
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(stderr.contains("and 5 other inputs"), "{stderr}");
    assert!(!root.join("missing").exists());
}

#[test]
fn labels_files_that_would_mislabel_are_refused_by_name() {
    let root = tree("badlabels");
    let mut names: Vec<String> = Vec::new();
    for class in ["cat", "dog"] {
        for entry in std::fs::read_dir(root.join("tree").join(class)).unwrap() {
            names.push(format!(
                "{class}/{}",
                entry.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    names.sort();
    let run = |csv: &str| {
        std::fs::write(root.join("labels.csv"), csv).unwrap();
        let output = shard(
            &root,
            "out/train-%06d.tar",
            &["--backend", "cpu", "--recursive", "--labels", "labels.csv"],
        );
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let rows = |label: &dyn Fn(usize) -> String| -> String {
        let lines = names.iter().enumerate();
        lines.map(|(i, n)| format!("{n},{}\n", label(i))).collect()
    };
    // One label that is not an index among indices would renumber every class.
    let mixed = rows(&|i| if i == 2 { "3.0".into() } else { i.to_string() });
    assert!(run(&mixed).contains("all class indices or all class names"));
    // A name labelled twice, differently.
    let twice = format!("{}{},9\n", rows(&|i| i.to_string()), names[0]);
    assert!(run(&twice).contains(&format!("{} is labelled twice, 0 and 9", names[0])));
    // A comma in an unquoted name leaves three fields.
    let comma = format!("{}a,b.jpg,3\n", rows(&|i| i.to_string()));
    assert!(run(&comma).contains("a row is `name,label`"));
    // A file name that names images in two folders.
    let first = &names[0];
    let file_name = first.rsplit('/').next().unwrap();
    let other = if first.starts_with("cat/") {
        "dog"
    } else {
        "cat"
    };
    std::fs::copy(
        root.join("tree").join(first),
        root.join("tree").join(other).join(file_name),
    )
    .unwrap();
    let by_file_name: String = names
        .iter()
        .map(|n| format!("\"{}\",1\n", n.rsplit('/').next().unwrap()))
        .collect();
    assert!(run(&by_file_name).contains(&format!("{file_name} names 2 inputs")));
    assert!(!root.join("out").exists());
}

/// A 24×18 RGB PNG carrying `text` in a chunk of `kind` ("tEXt", "zTXt" or "iTXt") keyed
/// `comment`, written by the png crate.
fn png_with_comment(path: &Path, kind: &str, text: &str) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut encoder = png::Encoder::new(file, 24, 18);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let (keyword, text) = ("comment".to_string(), text.to_string());
    match kind {
        "tEXt" => encoder.add_text_chunk(keyword, text),
        "zTXt" => encoder.add_ztxt_chunk(keyword, text),
        _ => encoder.add_itxt_chunk(keyword, text),
    }
    .unwrap();
    let pixels: Vec<u8> = (0..24 * 18 * 3).map(|i| (i * 7 % 251) as u8).collect();
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(&pixels).unwrap();
}

#[test]
fn comments_carried_from_gif_png_and_jpeg_2000_are_pillows() {
    let root = std::env::temp_dir().join(format!("gpuprep-shard-comments-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let class = root.join("tree/all");
    std::fs::create_dir_all(&class).unwrap();
    let formats = common::manifest_dir().join("tests/data/formats");
    let carrying = [
        "made__animated.gif",
        "made__first.gif",
        "made__l_irreversible.jp2",
        "made__rgb.jp2",
        "made__rgb_irreversible.j2k",
        "made__rgba.jp2",
    ];
    for name in carrying {
        std::fs::copy(formats.join(name), class.join(name)).unwrap();
    }
    png_with_comment(&class.join("text.png"), "tEXt", "café");
    png_with_comment(&class.join("zipped.png"), "zTXt", "zippé");
    png_with_comment(&class.join("international.png"), "iTXt", "naïve ✓");
    // Every format found (ImageFolder's extensions leave GIF and JPEG 2000 out).
    let output = shard(
        &root,
        "out/train-%06d.tar",
        &["--backend", "cpu", "--recursive"],
    );
    assert!(output.status.success(), "{output:?}");
    let shards: Vec<PathBuf> = (0..3)
        .map(|n| root.join(format!("out/train-{n:06}.tar")))
        .collect();
    let expected = pillow_files(&root, &shards);
    let mut compared = 0;
    for shard in &shards {
        for (name, bytes) in members(shard) {
            if let Some(key) = name.strip_suffix(".jpg") {
                let pillow = std::fs::read(expected.join(format!("{key}.pillow.jpg"))).unwrap();
                // Each carries a COM segment, and the whole file is Pillow's.
                assert!(bytes.windows(2).any(|w| w == [0xFF, 0xFE]), "{name}");
                assert!(bytes == pillow, "{name} differs from Pillow's");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 9);
}

/// A tree of `copies` copies of the bundled photos, in one folder (unlabelled).
fn many(name: &str, copies: usize) -> PathBuf {
    let root = std::env::temp_dir().join(format!("gpuprep-shard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let folder = root.join("tree");
    std::fs::create_dir_all(&folder).unwrap();
    let photos = common::manifest_dir().join("tests/data/photos");
    for entry in std::fs::read_dir(&photos).unwrap() {
        let photo = entry.unwrap().path();
        for k in 0..copies {
            let name = format!("{k:03}-{}", photo.file_name().unwrap().to_string_lossy());
            std::fs::copy(&photo, folder.join(name)).unwrap();
        }
    }
    root
}

/// The job over `root`'s tree into `OUT/train-%06d.tar`, one sample a shard, on the CPU.
fn one_a_shard(root: &Path, out: &str) -> Command {
    let mut job = Command::new(env!("CARGO_BIN_EXE_gpuprep"));
    job.current_dir(root)
        .args(["shard", "tree", "--out", &format!("{out}/train-%06d.tar")])
        .args([
            "--resize",
            "64",
            "--shard-samples",
            "1",
            "--backend",
            "cpu",
            "--quiet",
        ]);
    job
}

/// The job started in `root` into `out/`, one sample a shard, stopped by `stop` once its
/// third shard is complete; returns its exit status and the shards it had then.
fn stopped_job(root: &Path, stop: impl FnOnce(&mut std::process::Child)) -> (Option<i32>, usize) {
    let mut job = one_a_shard(root, "out")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let third = root.join("out/train-000002.tar");
    let started = std::time::Instant::now();
    while !third.exists() {
        assert!(
            started.elapsed().as_secs() < 60,
            "no third shard in a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    stop(&mut job);
    let status = job.wait().unwrap();
    let shards = (0..)
        .take_while(|n| root.join(format!("out/train-{n:06}.tar")).exists())
        .count();
    (status.code(), shards)
}

#[test]
fn a_killed_or_interrupted_job_resumes_to_the_same_bytes() {
    let root = many("killed", 20);
    let inputs = 6 * 20;
    let whole = |out: &str| -> Vec<Vec<u8>> {
        (0..inputs)
            .map(|n| std::fs::read(root.join(format!("{out}/train-{n:06}.tar"))).unwrap())
            .collect()
    };
    let uninterrupted = one_a_shard(&root, "whole").output().unwrap();
    assert!(uninterrupted.status.success(), "{uninterrupted:?}");
    let expected = whole("whole");
    let temporary = |root: &Path| -> Vec<String> {
        std::fs::read_dir(root.join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.ends_with(".tar"))
            .collect()
    };
    let resume = |shards: usize| {
        let again = one_a_shard(&root, "out").output().unwrap();
        assert!(again.status.success(), "{again:?}");
        assert_eq!(summary(&again)["kept"].as_u64(), Some(shards as u64));
        assert!(whole("out") == expected, "the resumed shards differ");
        assert_eq!(temporary(&root), Vec::<String>::new());
    };
    // Killed outright (SIGKILL): it may leave its shard under way under a temporary name,
    // which the run again removes.
    let (status, shards) = stopped_job(&root, |job| job.kill().unwrap());
    assert_eq!(status, None, "killed by a signal");
    assert!((3..inputs).contains(&shards), "{shards} shards");
    resume(shards);
    // Interrupted (SIGINT, as Ctrl-C): it stops, keeps its complete shards, leaves no
    // temporary file and exits 130.
    std::fs::remove_dir_all(root.join("out")).unwrap();
    let (status, shards) = stopped_job(&root, |job| {
        let pid = job.id().to_string();
        assert!(Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success());
    });
    assert_eq!(status, Some(130));
    assert!((3..inputs).contains(&shards), "{shards} shards");
    assert_eq!(temporary(&root), Vec::<String>::new());
    resume(shards);
}

#[test]
fn cut_shards_missing_inputs_and_misplaced_indexes_are_handled_by_name() {
    let root = tree("cut");
    let path = |n: usize| root.join(format!("out/train-{n:06}.tar"));
    assert!(shard(&root, "out/train-%06d.tar", &["--backend", "cpu"])
        .status
        .success());
    let whole = [0, 1].map(|n| std::fs::read(path(n)).unwrap());
    // A shard cut short since is not kept: it and the ones after it are written again.
    std::fs::write(path(0), &whole[0][..whole[0].len() - 1536]).unwrap();
    let again = shard(&root, "out/train-%06d.tar", &["--backend", "cpu"]);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(summary(&again)["kept"], 0);
    assert!([0, 1].map(|n| std::fs::read(path(n)).unwrap()) == whole);
    // A missing input is a usage error naming it, before any work.
    let missing = Command::new(env!("CARGO_BIN_EXE_gpuprep"))
        .current_dir(&root)
        .args([
            "shard",
            "tree",
            "nowhere",
            "--out",
            "m/t-%d.tar",
            "--resize",
            "64",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        missing.status.code() == Some(2) && stderr.contains("nowhere: no such file or folder"),
        "{stderr}"
    );
    // An index where a shard or an input goes is refused before any work.
    for index in ["i/t-0.tar", "tree/cat/exifsamples__fujifilm-mx1700.jpg"] {
        let refused = shard(&root, "i/t-%d.tar", &["--backend", "cpu", "--index", index]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            refused.status.code() == Some(2) && stderr.contains("--index"),
            "{index}: {stderr}"
        );
    }
    assert!(!root.join("i").exists());
    // With stdout closed early (`| head`), a job whose input failed still exits 1.
    std::fs::write(root.join("tree/dog/a-broken.jpg"), b"\xff\xd8\xff").unwrap();
    let mut job = Command::new(env!("CARGO_BIN_EXE_gpuprep"))
        .current_dir(&root)
        .args([
            "shard",
            "tree",
            "--out",
            "h/t-%d.tar",
            "--resize",
            "64",
            "--quiet",
        ])
        .args(["--backend", "cpu"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(job.stdout.take());
    assert_eq!(job.wait().unwrap().code(), Some(1));
}
