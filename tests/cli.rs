//! The `gpuprep convert` contract: one `.npy` per input equal to Pillow's RGB, a report.json in
//! input order, a non-zero exit when any input failed, and refusal of clashing names up front.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn gpuprep() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gpuprep"))
}

fn data(rel: &str) -> PathBuf {
    common::manifest_dir().join("tests/data").join(rel)
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = common::manifest_dir().join("target/cli-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Parses a uint8 `.npy` written by gpuprep: (shape, data).
fn read_u8_npy(path: &Path) -> (Vec<usize>, Vec<u8>) {
    read_npy(path, "|u1")
}

/// Parses a `.npy` written by gpuprep, checking its type string: (shape, data bytes).
fn read_npy(path: &Path, descr: &str) -> (Vec<usize>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(header.contains(&format!("'descr': '{descr}'")), "{header}");
    let shape = header.split('(').nth(1).unwrap().split(')').next().unwrap();
    let shape = shape
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    (shape, bytes[10 + header_len..].to_vec())
}

#[test]
fn convert_writes_pillow_identical_arrays_and_a_report() {
    let out = fresh_dir("convert");
    let inputs = [
        "photos/mpl__grace_hopper.jpg",
        "malformed/jdec__derive-huffman-codes-overflow.jpg",
        "conformance/jdec__mozilla__jpg-progressive.jpg",
    ];
    let output = gpuprep()
        .arg("convert")
        .args(inputs.map(data))
        .arg("--out")
        .arg(&out)
        .args(["--backend", "cpu"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "one input is corrupt");
    // The error names the file; what to do follows, once per kind of error.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("jdec__derive-huffman-codes-overflow.jpg: corrupt JPEG")
            && stderr.contains("what to do (1 file): leave the file out"),
        "{stderr}"
    );

    let goldens = common::goldens();
    for rel in [inputs[0], inputs[2]] {
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let (shape, pixels) = read_u8_npy(&out.join(format!("{name}.npy")));
        let (w, h, sha) = goldens[rel].rgb.clone().unwrap();
        assert_eq!(shape, vec![h, w, 3]);
        assert_eq!(
            common::sha256_hex(&pixels),
            sha,
            "{rel} differs from Pillow"
        );
    }
    assert!(!out
        .join("jdec__derive-huffman-codes-overflow.jpg.npy")
        .exists());

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    // How the outputs were made comes first, for tracing them.
    assert_eq!(report["gpuprep"], env!("CARGO_PKG_VERSION"));
    assert_eq!(report["backend"], "cpu");
    assert_eq!(report["transform"]["dtype"], "u8");
    assert_eq!(report["limits"]["max_pixels"], 178956970);
    let entries = report["images"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    for (entry, (rel, ok)) in
        entries
            .iter()
            .zip([(inputs[0], true), (inputs[1], false), (inputs[2], true)])
    {
        assert!(entry["file"].as_str().unwrap().ends_with(rel), "{entry}");
        assert_eq!(entry["ok"], ok, "{entry}");
    }
    let error = entries[1]["error"].as_str().unwrap();
    assert!(
        error.contains("jdec__derive-huffman-codes-overflow.jpg") && error.contains("corrupt"),
        "{error}"
    );
    // Its kind, as the Python package names its exception.
    assert_eq!(entries[1]["kind"], "CorruptError");
    assert_eq!(report["interrupted"], false);
}

#[test]
fn directories_expand_in_name_order() {
    let out = fresh_dir("dir");
    let status = gpuprep()
        .args(["convert", "--out"])
        .arg(&out)
        .arg(data("photos"))
        .status()
        .unwrap();
    assert!(status.success());
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let files: Vec<String> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    assert_eq!(files.len(), 6);
}

#[test]
fn clashing_names_are_refused_before_any_work() {
    let out = fresh_dir("clash");
    let a = data("photos/mpl__grace_hopper.jpg");
    let copy_dir = fresh_dir("clash-input");
    std::fs::create_dir_all(&copy_dir).unwrap();
    let b = copy_dir.join("mpl__grace_hopper.jpg");
    std::fs::copy(&a, &b).unwrap();
    let output = gpuprep()
        .arg("convert")
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("same output"));
    assert!(!out.exists(), "nothing may be written");
}

#[test]
fn stacked_output_holds_the_good_images_in_order() {
    let out = fresh_dir("stacked").join("batch.npy");
    let inputs = [
        "photos/mpl__grace_hopper.jpg",
        "malformed/jdec__derive-huffman-codes-overflow.jpg",
        "conformance/jdec__mozilla__jpg-progressive.jpg",
    ];
    let status = gpuprep()
        .arg("convert")
        .args(inputs.map(data))
        .arg("--out")
        .arg(&out)
        .args([
            "--resize",
            "224x224",
            "--normalize",
            "imagenet",
            "--backend",
            "gpu",
        ])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "one input is corrupt");
    let (shape, bytes) = read_npy(&out, "<f4");
    assert_eq!(shape, vec![2, 3, 224, 224]);
    let image_bytes = bytes.len() / 2;
    let goldens = common::transform_goldens();
    for (i, rel) in [inputs[0], inputs[2]].into_iter().enumerate() {
        let golden = goldens
            .iter()
            .find(|g| g.file == rel && g.transform == "exact224_imagenet_f32")
            .expect("golden");
        let slice = &bytes[i * image_bytes..(i + 1) * image_bytes];
        assert_eq!(common::sha256_hex(slice), golden.sha256, "{rel}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("report.json")).unwrap())
            .unwrap();
    let indices: Vec<serde_json::Value> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["index"].clone())
        .collect();
    assert_eq!(indices, vec![0.into(), serde_json::Value::Null, 1.into()]);
}

#[test]
fn stacking_without_a_fixed_size_is_refused() {
    let out = fresh_dir("unstackable").join("batch.npy");
    let output = gpuprep()
        .arg("convert")
        .arg(data("photos"))
        .arg("--out")
        .arg(&out)
        .args(["--resize", "short:256"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("one output size"));
}

/// `gpuprep bench` prints one JSON object per line, each with a `what` key, and the throughput
/// lines carry the figures the benchmarks quote; a file that fails is counted, not fatal.
/// `bench` prints its figures as JSON lines; throughput counts only the images that converted,
/// and a pass in which any image failed is said loudly and fails the run.
#[test]
fn bench_prints_json_lines() {
    let output = gpuprep()
        .arg("bench")
        .arg(data("photos/mpl__grace_hopper.jpg"))
        .arg(data("photos/sklearn__china.jpg"))
        .arg(data("malformed/pillow__hopper.png"))
        .arg(data("malformed/jdec__derive-huffman-codes-overflow.jpg"))
        .args([
            "--backend",
            "cpu",
            "--resize",
            "32x32",
            "--repeat",
            "1",
            "--batch",
            "2",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 of 4 images failed") && stderr.contains("derive-huffman-codes-overflow"),
        "{stderr}"
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let line = |what: &str| {
        lines
            .iter()
            .find(|l| l["what"] == what)
            .unwrap_or_else(|| panic!("no {what} line in {lines:?}"))
    };
    let pipeline = line("pipeline");
    assert_eq!(pipeline["images"], 4);
    assert_eq!(pipeline["ok"], 3);
    assert_eq!(pipeline["failed"], 1);
    for key in ["img_s", "img_s_median", "mb_s", "p50_ms", "p95_ms"] {
        assert!(pipeline[key].as_f64().unwrap() > 0.0, "{key}: {pipeline}");
    }
    assert!(line("entropy_only")["img_s"].as_f64().unwrap() > 0.0);
    line("stages");
    line("upload");
}

/// `--quiet` prints nothing on success; without it, stderr that is not a terminal gets the
/// summary but never the progress line (no carriage returns in logs).
#[test]
fn quiet_is_silent_and_logs_get_no_progress_line() {
    let run = |quiet: bool| {
        let mut command = gpuprep();
        command
            .arg("convert")
            .arg(data("photos/mpl__grace_hopper.jpg"))
            .arg("--out")
            .arg(fresh_dir(if quiet { "quiet" } else { "not-quiet" }))
            .args(["--backend", "cpu", "--resize", "16x16"]);
        if quiet {
            command.arg("--quiet");
        }
        command.output().unwrap()
    };
    let quiet = run(true);
    assert!(quiet.status.success());
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    let logged = run(false);
    assert!(logged.status.success());
    let stderr = String::from_utf8_lossy(&logged.stderr);
    assert!(stderr.contains("converted 1 of 1 images"), "{stderr}");
    assert!(!stderr.contains('\r'), "{stderr:?}");
}

/// Runs `gpuprep parity` on the test photos with Pillow beside it (`python` overrides the
/// interpreter), returning the exit code, the JSON report and the pictures folder.
fn parity(name: &str, python: Option<&Path>) -> (i32, serde_json::Value, PathBuf) {
    let out = fresh_dir(name);
    let json = out.join("report.json");
    let pictures = out.join("pictures");
    let mut command = gpuprep();
    command.args(["parity", "--pillow", "--preset", "imagenet-eval", "--quiet"]);
    command.arg(data("photos")).arg("--json").arg(&json);
    command.arg("--diff-dir").arg(&pictures);
    if let Some(python) = python {
        command.env("GPUPREP_PYTHON", python);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("parity over 6 files: "), "{stdout}");
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (output.status.code().unwrap(), report, pictures)
}

#[test]
fn parity_finds_gpu_cpu_and_pillow_identical() {
    let (code, report, pictures) = parity("parity-identical", None);
    assert_eq!(code, 0, "{report:#}");
    let comparisons = report["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 3, "GPU-CPU, GPU-Pillow, CPU-Pillow");
    for c in comparisons {
        assert_eq!(c["identical"], true, "{c:#}");
        assert_eq!(c["files"], 6);
        assert_eq!(c["total"]["count"], 6 * 3 * 224 * 224);
    }
    assert!(report["pillow"]
        .as_str()
        .unwrap()
        .starts_with("Pillow 12.0.0"));
    let written: Vec<_> = std::fs::read_dir(&pictures).unwrap().collect();
    assert_eq!(written.len(), 1, "only histogram.png when nothing differs");
    assert!(pictures.join("histogram.png").is_file());
}

/// A "Pillow" whose outputs are nudged (its real outputs, then +0.05 on a block of the red
/// plane): parity must notice, measure it in grey levels and draw it.
#[test]
fn parity_measures_and_draws_differences() {
    let dir = fresh_dir("parity-nudged-python");
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("python");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\npython3 \"$@\" || exit 1\npython3 -c \"\nimport glob, sys, numpy as np\n\
         for f in glob.glob(sys.argv[1] + '/*.npy'):\n    a = np.load(f)\n    \
         a[0, 20:60, 30:120] += np.float32(0.05)\n    np.save(f, a)\n\" \"$4\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let (code, report, pictures) = parity("parity-nudged", Some(&wrapper));
    assert_eq!(code, 1, "differences exit with 1");
    let comparisons = report["comparisons"].as_array().unwrap();
    assert_eq!(comparisons[0]["identical"], true, "GPU vs CPU stays exact");
    for c in &comparisons[1..] {
        // 0.05 × 255 × 0.229 grey levels in R, on 40 × 90 of 224 × 224 pixels of every file.
        let max = c["channels"][0]["max"].as_f64().unwrap();
        assert!((max - 0.05 * 255.0 * 0.229).abs() < 1e-3, "{max}");
        assert_eq!(c["channels"][1]["max"], 0.0);
        let differing = c["total"]["share_differing"].as_f64().unwrap() * (3.0 * 224.0 * 224.0);
        assert!((differing - 3600.0).abs() < 1e-6, "{differing}");
        assert_eq!(c["differing_files"].as_array().unwrap().len(), 6);
    }
    for entry in std::fs::read_dir(data("photos")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        for pair in ["gpu-vs-pillow", "cpu-vs-pillow"] {
            let png = pictures.join(format!("{name}.{pair}.png"));
            assert!(
                std::fs::read(&png).unwrap().starts_with(b"\x89PNG"),
                "{png:?}"
            );
        }
    }
}

/// A folder of every other format converts like JPEGs do (each array equal to the library's CPU
/// reference, itself tested against Pillow), and on the GPU the bench counts the images that
/// took the pixel path.
#[test]
fn other_formats_convert_and_the_pixel_path_is_counted() {
    let out = fresh_dir("formats");
    let status = gpuprep()
        .args(["convert", "--quiet", "--resize", "40x30", "--out"])
        .arg(&out)
        .arg(data("formats"))
        .arg(data("photos/mpl__grace_hopper.jpg"))
        .status()
        .unwrap();
    assert!(status.success());
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let entries = report["images"].as_array().unwrap();
    assert_eq!(entries.len(), 34);
    let transform = gpuprep::Transform {
        resize: Some(gpuprep::Resize::Exact {
            width: 40,
            height: 30,
        }),
        ..Default::default()
    };
    for entry in entries {
        let input = PathBuf::from(entry["file"].as_str().unwrap());
        let name = input.file_name().unwrap().to_str().unwrap();
        let (shape, pixels) = read_u8_npy(&out.join(format!("{name}.npy")));
        let expected = gpuprep::preprocess(
            &std::fs::read(&input).unwrap(),
            &transform,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(shape, [30, 40, 3], "{name}");
        assert_eq!(gpuprep::TensorData::U8(pixels), expected.data, "{name}");
    }
    let output = gpuprep()
        .args([
            "bench",
            "--backend",
            "gpu",
            "--repeat",
            "1",
            "--resize",
            "40x30",
        ])
        .arg(data("formats"))
        .arg(data("photos/mpl__grace_hopper.jpg"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .collect();
    let pipeline = lines.iter().find(|l| l["what"] == "pipeline").unwrap();
    assert_eq!(pipeline["ok"], 34);
    assert_eq!(pipeline["pixel_path_images"], 33);
    // The streaming loader's batches, each on its timeline: gathered, submitted, landed.
    let batches: Vec<_> = lines.iter().filter(|l| l["what"] == "batch").collect();
    let images: u64 = batches.iter().map(|b| b["images"].as_u64().unwrap()).sum();
    assert_eq!(images, 34);
    let bytes_in: u64 = batches
        .iter()
        .map(|b| b["bytes_in"].as_u64().unwrap())
        .sum();
    let inputs = [data("formats"), data("photos/mpl__grace_hopper.jpg")];
    let files = gpuprep::convert::expand_inputs(&inputs).unwrap();
    let total: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert_eq!(bytes_in, total);
    for batch in batches {
        let at = |key: &str| batch[key].as_f64().unwrap();
        assert!(
            0.0 < at("gathered_at_ms")
                && at("gathered_at_ms") <= at("submitted_at_ms")
                && at("submitted_at_ms") <= at("landed_at_ms"),
            "{batch}"
        );
    }
}

/// `bench --loader --keep-on-gpu` times the loader handing its batches over in buffers of the
/// GPU: every file of each epoch converted; for a mean epoch, what its stream waited for (the
/// GPU at least), its submissions (at least one image each), its packing time and the time its
/// copies into the batches' buffers took (landing); on the CPU backend it is refused.
#[test]
fn bench_times_the_loader_keeping_its_batches_on_the_gpu() {
    let run = |backend: &str| {
        gpuprep()
            .args([
                "bench",
                "--loader",
                "--keep-on-gpu",
                "-q",
                "--backend",
                backend,
            ])
            .args(["--batch", "2", "--repeat", "2", "--resize", "40x30"])
            .arg(data("photos"))
            .output()
            .unwrap()
    };
    let output = run("gpu");
    assert!(output.status.success(), "{output:?}");
    let line: serde_json::Value =
        serde_json::from_str(String::from_utf8(output.stdout).unwrap().trim()).unwrap();
    assert_eq!(line["what"], "loader");
    assert_eq!(line["ok"], 6);
    assert_eq!(line["failed"], 0);
    assert_eq!(line["tensors"], "buffers of gpuprep's GPU device");
    assert!(
        line["stream_waited_ms"]["gpu"].as_f64().unwrap() > 0.0,
        "{line}"
    );
    // A mean epoch's: the stream's first batches are small and it submits what is decoded, so
    // the count depends on timing: between one and six in all (an epoch's six images), and the
    // second epoch may have been made while the first ended.
    let submissions = line["submissions"].as_f64().unwrap();
    assert!((0.5..=6.0).contains(&submissions), "{line}");
    assert!(line["packing_ms"].as_f64().unwrap() > 0.0, "{line}");
    assert!(line["landing_ms"].as_f64().unwrap() > 0.0, "{line}");
    let refused = run("cpu");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--keep-on-gpu needs the GPU"));
}

/// Options that would write -inf or NaN, or allocate terabytes, are refused: a zero or NaN std
/// at once (as torchvision's Normalize refuses it), an output above the pixel limit per image,
/// with its file named, before anything is allocated.
#[test]
fn impossible_outputs_are_refused_not_attempted() {
    for normalize in ["mean=1,2,3:std=0,0,0", "mean=0.5,0.5,0.5:std=0.2,NaN,0.2"] {
        let output = gpuprep()
            .arg("convert")
            .arg(data("photos/mpl__grace_hopper.jpg"))
            .arg("--out")
            .arg(fresh_dir("zero-std"))
            .args(["--backend", "cpu", "--normalize", normalize])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{normalize}: {stderr}");
        assert!(
            stderr.contains("std must be finite and non-zero"),
            "{stderr}"
        );
    }
    for (option, value) in [("--crop", "999999"), ("--resize", "100000x100000")] {
        for backend in ["cpu", "gpu"] {
            let output = gpuprep()
                .arg("convert")
                .arg(data("photos/mpl__grace_hopper.jpg"))
                .arg("--out")
                .arg(fresh_dir("huge-output"))
                .args(["--backend", backend, option, value])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{option} {value}: {stderr}");
            assert!(
                stderr.contains("mpl__grace_hopper.jpg: the transform makes an image of")
                    && stderr.contains("above the limit of 178956970 pixels")
                    && !stderr.contains("panicked"),
                "{option} {value} on {backend}: {stderr}"
            );
            // What to do, in the command line's own terms (no Rust items).
            assert!(
                stderr.contains("what to do (1 file): ask for a smaller --resize or --crop, or raise --max-pixels")
                    && !stderr.contains("Limits::"),
                "{stderr}"
            );
        }
    }
}

/// A reader that goes away (`gpuprep bench … | head -3`) ends the program quietly.
#[test]
fn a_closed_stdout_ends_quietly() {
    for args in [
        vec!["info"],
        vec![
            "bench",
            "--backend",
            "cpu",
            "--repeat",
            "1",
            "--resize",
            "8x8",
        ],
    ] {
        let mut command = gpuprep();
        command.args(&args);
        if args[0] == "bench" {
            command.arg(data("photos/mpl__grace_hopper.jpg"));
        }
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reading end closes before the program writes a line.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// What `--out` names is checked before any work, and errors about it name `--out` and the
/// problem; nothing is made of `-` or a `.npz`.
#[test]
fn out_errors_name_out_and_the_problem() {
    let base = fresh_dir("out-errors");
    std::fs::create_dir_all(base.join("folder.npy")).unwrap();
    std::fs::write(base.join("afile"), b"not a folder").unwrap();
    let cases = [
        (base.join("afile"), "is a file, not a folder"),
        (base.join("folder.npy"), "is a folder, not a .npy file"),
        (PathBuf::from("-"), "not written to standard output"),
        (base.join("x.npz"), ".npz is not written"),
    ];
    for (out, problem) in cases {
        let output = gpuprep()
            .arg("convert")
            .arg(data("photos/mpl__grace_hopper.jpg"))
            .arg("--out")
            .arg(&out)
            .args(["--backend", "cpu"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}: {stderr}", out.display());
        assert!(
            stderr.contains(&format!("error: --out {}: ", out.display()))
                && stderr.contains(problem),
            "{stderr}"
        );
    }
    assert!(!Path::new("-").exists(), "no folder named -");
    assert!(!base.join("x.npz").exists());
}

/// Outputs are whole or absent: an output that cannot be written is named in its image's
/// report and leaves nothing behind, and a re-run in which an image now fails removes that
/// image's array from the earlier run, so the folder holds only what the report accounts for.
#[test]
fn outputs_are_whole_or_absent() {
    let base = fresh_dir("whole-outputs");
    let inputs = base.join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let good = std::fs::read(data("photos/mpl__grace_hopper.jpg")).unwrap();
    std::fs::write(inputs.join("a.jpg"), &good).unwrap();
    std::fs::write(inputs.join("b.jpg"), &good).unwrap();
    let out = base.join("out");
    let convert = || {
        gpuprep()
            .arg("convert")
            .arg(&inputs)
            .arg("--out")
            .arg(&out)
            .args(["--backend", "cpu", "--resize", "16x16"])
            .output()
            .unwrap()
    };
    assert!(convert().status.success());
    assert!(out.join("b.jpg.npy").is_file());
    // b.jpg turns corrupt, and a.jpg's output cannot be written (a folder holds its name).
    std::fs::write(inputs.join("b.jpg"), &good[..good.len() / 3]).unwrap();
    std::fs::remove_file(out.join("a.jpg.npy")).unwrap();
    std::fs::create_dir(out.join("a.jpg.npy")).unwrap();
    let output = convert();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot write {}", out.join("a.jpg.npy").display())),
        "{stderr}"
    );
    assert!(
        !out.join("b.jpg.npy").exists(),
        "the earlier run's array is gone"
    );
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.iter().all(|name| !name.contains(".partial")),
        "{left:?}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["images"][0]["ok"], false);
    assert_eq!(report["images"][1]["ok"], false);
}

/// One image has one output size, so it stacks without a fixed size.
#[test]
fn one_image_stacks_without_a_fixed_size() {
    let out = fresh_dir("one-stacked").join("one.npy");
    let output = gpuprep()
        .arg("convert")
        .arg(data("photos/mpl__grace_hopper.jpg"))
        .arg("--out")
        .arg(&out)
        .args(["--backend", "cpu"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let (shape, _) = read_u8_npy(&out);
    assert_eq!(shape, [1, 600, 512, 3]);
}

/// The options in torchvision's terms: `--resize N` is Resize(N), the dtypes have torchvision's
/// names too; settings that mean nothing are refused, and one that does nothing is noted.
#[test]
fn options_speak_torchvision_and_refuse_nonsense() {
    let photo = data("photos/mpl__grace_hopper.jpg");
    let out = fresh_dir("torchvision-terms").join("one.npy");
    let output = gpuprep()
        .arg("convert")
        .arg(&photo)
        .arg("--out")
        .arg(&out)
        .args([
            "--backend",
            "cpu",
            "--resize",
            "224",
            "--dtype",
            "float32",
            "--threads",
            "1",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // 512x600: the shorter side becomes 224, the longer int(224 * 600 / 512) = 262.
    let (shape, _) = read_npy(&out, "<f4");
    assert_eq!(shape, [1, 3, 262, 224]);
    for args in [
        vec!["convert", "--max-pixels", "0"],
        vec!["convert", "--max-scans", "0"],
        vec!["convert", "--threads", "0"],
        vec!["bench", "--batch", "0"],
        vec!["bench", "--repeat", "0"],
    ] {
        let mut command = gpuprep();
        command.args(&args).arg(&photo);
        if args[0] == "convert" {
            command.arg("--out").arg(fresh_dir("refused"));
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
    let output = gpuprep()
        .args([
            "bench",
            "-q",
            "--backend",
            "cpu",
            "--repeat",
            "1",
            "--draft",
        ])
        .arg(&photo)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        output.stderr.is_empty(),
        "-q: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = gpuprep()
        .args(["bench", "--backend", "cpu", "--repeat", "1", "--draft"])
        .arg(&photo)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--draft does nothing without --resize"),
        "{stderr}"
    );
}

/// `--backend auto` takes a hardware GPU, and the CPU backend (same bits, faster) over a
/// software adapter such as lavapipe, saying why; `--backend gpu` takes what it is given;
/// `--adapter` names one, and a name that matches nothing lists what there is.
#[test]
fn auto_prefers_the_cpu_to_a_software_adapter_and_adapters_can_be_named() {
    let info = gpuprep().arg("info").output().unwrap();
    assert!(info.status.success(), "{info:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&info.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let adapters: Vec<_> = lines.iter().filter(|l| l["what"] == "adapter").collect();
    assert!(!adapters.is_empty(), "the GPU tests need an adapter");
    // Each adapter says whether a device opens on it (one that is listed may not open).
    assert!(
        adapters.iter().all(|a| a["opens"].is_boolean()),
        "{adapters:?}"
    );
    assert!(adapters.iter().any(|a| a["opens"] == true), "{adapters:?}");
    let software_only = adapters.iter().all(|a| a["device_type"] == "Cpu");
    let auto = lines.iter().find(|l| l["what"] == "auto").unwrap();
    let backend_of = |args: &[&str]| {
        let out = fresh_dir("auto-backend");
        let output = gpuprep()
            .arg("convert")
            .arg(data("photos/mpl__grace_hopper.jpg"))
            .arg("--out")
            .arg(&out)
            .args(["--resize", "16x16"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{args:?}: {stderr}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        (report["backend"].as_str().unwrap().to_string(), stderr)
    };
    let (auto_backend, stderr) = backend_of(&[]);
    assert_eq!(auto_backend, auto["backend"].as_str().unwrap());
    if software_only {
        assert_eq!(auto_backend, "cpu");
        assert!(
            stderr.contains("the GPU adapter is a software one"),
            "{stderr}"
        );
    } else {
        assert!(auto_backend.starts_with("gpu: "), "{auto_backend}");
    }
    let name = adapters[0]["name"].as_str().unwrap();
    let (named, _) = backend_of(&["--backend", "gpu", "--adapter", name]);
    assert!(named.starts_with(&format!("gpu: {name}")), "{named}");
    let output = gpuprep()
        .arg("convert")
        .arg(data("photos/mpl__grace_hopper.jpg"))
        .arg("--out")
        .arg(fresh_dir("no-such-adapter"))
        .args(["--backend", "gpu", "--adapter", "no such adapter"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no GPU adapter's name contains \"no such adapter\"")
            && stderr.contains(name),
        "{stderr}"
    );
}

/// Pillow's refusals, as `parity --pillow` reports them, name the file rather than a Python
/// object (`<_io.BytesIO object at 0x...>`).
#[test]
fn pillow_refusals_name_the_file() {
    let dir = fresh_dir("pillow-refusal");
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.jpg");
    std::fs::write(&garbage, b"not an image at all").unwrap();
    let python = std::env::var("GPUPREP_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(python)
        .arg(common::manifest_dir().join("tools/pillow_reference.py"))
        .arg("{}")
        .arg(&dir)
        .arg(&garbage)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let error = std::fs::read_to_string(dir.join("0.err")).unwrap();
    assert!(error.starts_with("UnidentifiedImageError"), "{error}");
    assert!(error.contains(&garbage.display().to_string()), "{error}");
    assert!(!error.contains("BytesIO"), "{error}");
}

/// A file name that is not UTF-8 round-trips through report.json: the bytes are there as hex.
#[cfg(unix)]
#[test]
fn non_utf8_names_round_trip_in_the_report() {
    use std::os::unix::ffi::OsStrExt;
    let base = fresh_dir("non-utf8");
    let inputs = base.join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"lat1-\xe9.jpg");
    let input = inputs.join(name);
    std::fs::copy(data("photos/mpl__grace_hopper.jpg"), &input).unwrap();
    let out = base.join("out");
    let output = gpuprep()
        .arg("convert")
        .arg(&inputs)
        .arg("--out")
        .arg(&out)
        .args(["--backend", "cpu", "--resize", "8x8"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let entry = &report["images"][0];
    let unhex = |key: &str| -> Vec<u8> {
        let hex = entry[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key}: {entry}"));
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    assert_eq!(unhex("file_hex"), input.as_os_str().as_bytes());
    let output_path = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&unhex("output_hex")));
    assert!(output_path.is_file(), "{}", output_path.display());
}

/// An ImageFolder tree: without --recursive only a folder's own files are taken (and a folder
/// without any is noted); with it, every class folder's files in sorted path order, each output
/// mirroring its path, so that the same file name in two classes does not clash. No image at
/// all is an error, not "converted 0 of 0".
#[test]
fn recursive_folders_mirror_their_paths() {
    let base = fresh_dir("image-folder");
    let root = base.join("train");
    for class in ["cat", "dog"] {
        std::fs::create_dir_all(root.join(class)).unwrap();
        std::fs::copy(
            data("photos/mpl__grace_hopper.jpg"),
            root.join(class).join("0001.jpg"),
        )
        .unwrap();
    }
    let convert = |args: &[&str], out: &Path| {
        gpuprep()
            .arg("convert")
            .arg(&root)
            .arg("--out")
            .arg(out)
            .args(["--backend", "cpu", "--resize", "8x8"])
            .args(args)
            .output()
            .unwrap()
    };
    let flat = convert(&[], &base.join("flat"));
    let stderr = String::from_utf8_lossy(&flat.stderr);
    assert_eq!(flat.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("holds no image (folders below it are searched with --recursive)")
            && stderr.contains("no image among the inputs"),
        "{stderr}"
    );
    let out = base.join("deep");
    let deep = convert(&["--recursive"], &out);
    assert!(deep.status.success(), "{deep:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let files: Vec<&str> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["file"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = ["cat", "dog"]
        .map(|c| root.join(c).join("0001.jpg").display().to_string())
        .to_vec();
    assert_eq!(files, expected);
    for class in ["cat", "dog"] {
        assert!(out.join(class).join("0001.jpg.npy").is_file(), "{class}");
    }
    let help = gpuprep().args(["convert", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("directly inside them only unless --recursive"),
        "{help}"
    );
    assert!(help.contains("[default: 178956970]"), "{help}");
}

/// Converts tests/data/photos on the CPU backend with `flags` (into a fresh folder `name`), checks
/// that `parity --pillow` with the same flags finds GPU, CPU and Pillow identical on all six files,
/// and returns the report's image entries.
/// `gpuprep convert` of the bundled photos on the CPU with `flags` into a fresh folder: the
/// folder and its report.json.
fn converted(name: &str, flags: &[&str]) -> (PathBuf, serde_json::Value) {
    let out = fresh_dir(name);
    let output = gpuprep()
        .arg("convert")
        .arg(data("photos"))
        .arg("--out")
        .arg(&out)
        .args(["--backend", "cpu"])
        .args(flags)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    (out, report)
}

fn converted_and_replayed(name: &str, flags: &[&str]) -> Vec<serde_json::Value> {
    let (out, report) = converted(name, flags);
    let images = report["images"].as_array().unwrap().clone();
    assert_eq!(images.len(), 6);
    let json = out.join("parity.json");
    let parity = gpuprep()
        .args(["parity", "--pillow", "--quiet"])
        .args(flags)
        .arg(data("photos"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&parity.stdout);
    assert!(parity.status.success(), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let comparisons = report["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 3, "GPU-CPU, GPU-Pillow, CPU-Pillow");
    for c in comparisons {
        assert_eq!(c["identical"], true, "{c:#}");
        assert_eq!(c["files"], 6);
    }
    images
}

/// `--resize keep:WxH` (timm's ResizeKeepRatio) and `keep-longest:WxH` reach the reference as
/// its `keep_ratio` spec, and `--crop-fill` (timm's CenterCropOrPad) as its `crop_fill`: GPU,
/// CPU and Pillow agree, the output the crop's size.
#[test]
fn keep_ratio_resizes_are_replayed_through_pillow() {
    for (resize, crop, fill) in [
        ("keep:73x58", "64x51", "0"),
        ("keep-longest:80x45", "70x40", "0"),
        ("keep-longest:73x73", "64x64", "124,116,104"),
    ] {
        let flags = ["--resize", resize, "--crop", crop, "--crop-fill", fill];
        let (w, h) = crop.split_once('x').unwrap();
        for image in converted_and_replayed("keep_ratio", &flags) {
            assert_eq!(
                image["shape"],
                serde_json::json!([h.parse::<u64>().unwrap(), w.parse::<u64>().unwrap(), 3]),
                "{image}"
            );
        }
    }
}

/// `--random-rotation` reaches the report's parameters (each angle a float32 value inside the
/// range) and `parity --pillow` replays it through Pillow's `rotate`, bicubic, and nearest about
/// a point of its own: GPU, CPU and Pillow agree.
#[test]
fn random_rotations_are_recorded_and_replayed_through_pillow() {
    let flags = [
        "--random-resized-crop",
        "64",
        "--hflip",
        "0.5",
        "--random-rotation",
        "30:10,20,30:bicubic",
        "--color-jitter",
        "0.4,0.4,0.4",
        "--seed",
        "3",
    ];
    for image in converted_and_replayed("rotation", &flags) {
        let angle = image["params"]["rotation"].as_f64().unwrap();
        assert!((-30.0..=30.0).contains(&angle), "{image}");
        assert_eq!(f64::from(angle as f32), angle, "a float32 value: {image}");
    }
    // About a point near a corner, nearest-neighbour (the fixed-point walk).
    let about_a_point = [
        "--resize",
        "48x40",
        "--random-rotation",
        "90:center=4.5,36:7,8,9",
        "--seed",
        "4",
    ];
    converted_and_replayed("rotation-center", &about_a_point);
}

/// `--random-affine` records each image's angle, shifts, scale and shears, and `parity --pillow`
/// replays them through Pillow's `transform`: bilinear with everything drawn, and nearest with
/// only shifts and a scale (Pillow's scaling walk).
#[test]
fn random_affine_is_recorded_and_replayed_through_pillow() {
    let full = [
        "--random-resized-crop",
        "56",
        "--random-affine",
        "20:translate=0.1,0.2:scale=0.8,1.2:shear=-5,5,-3,3:7,8,9:bilinear",
        "--seed",
        "15",
    ];
    for image in converted_and_replayed("affine", &full) {
        let a = &image["params"]["affine"];
        assert!(a["angle"].as_f64().unwrap().abs() <= 20.0, "{image}");
        assert!(a["translate"][0].as_i64().unwrap().abs() <= 6, "{image}");
        assert!(
            (0.8..=1.2).contains(&a["scale"].as_f64().unwrap()),
            "{image}"
        );
    }
    let scaling = [
        "--crop",
        "48",
        "--random-affine",
        "0:translate=0.1,0.1:scale=0.7,1.3",
        "--seed",
        "16",
    ];
    converted_and_replayed("affine-scaling", &scaling);
}

/// `--random-perspective` records each image's coefficients (or null where it did not apply),
/// and `parity --pillow` replays them through Pillow's perspective transform: bilinear (the
/// default) after a rotation, and nearest with a fill.
#[test]
fn random_perspective_is_recorded_and_replayed_through_pillow() {
    let bilinear = [
        "--random-resized-crop",
        "56",
        "--random-rotation",
        "10:bilinear",
        "--random-perspective",
        "0.6,0.7",
        "--seed",
        "18",
    ];
    let images = converted_and_replayed("perspective", &bilinear);
    let mapped = images
        .iter()
        .filter(|i| !i["params"]["perspective"].is_null());
    for image in mapped.clone() {
        let coefficients = image["params"]["perspective"].as_array().unwrap();
        assert_eq!(coefficients.len(), 8, "{image}");
    }
    assert!(mapped.count() > 0, "no image drew a perspective");
    let nearest = [
        "--crop",
        "48",
        "--random-perspective",
        "1,1:7,8,9:nearest",
        "--seed",
        "19",
    ];
    converted_and_replayed("perspective-nearest", &nearest);
}

/// `--order` runs the steps that keep the image's size as a Compose lists them: the report
/// records the order, `parity --pillow` replays it (GPU, CPU and Pillow agree), the outputs
/// differ from the usual order's, and an order that leaves a step out, names one the transform
/// lacks or names a resize is refused by name.
#[test]
fn order_runs_the_steps_as_given_and_is_replayed_through_pillow() {
    let steps = [
        "--random-resized-crop",
        "48",
        "--random-rotation",
        "25",
        "--color-jitter",
        "0.5,0.5,0.5,0.2",
        "--random-equalize",
        "0.7",
        "--seed",
        "31",
    ];
    let ordered = [
        &steps[..],
        &["--order", "random-equalize,color-jitter,random-rotation"],
    ]
    .concat();
    converted_and_replayed("order", &ordered);
    let report = |flags: &[&str], name: &str| {
        let (out, report) = converted(name, flags);
        let mut arrays: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "npy"))
            .collect();
        arrays.sort();
        assert_eq!(arrays.len(), 6);
        let bytes: Vec<Vec<u8>> = arrays.iter().map(|p| std::fs::read(p).unwrap()).collect();
        (report["transform"]["order"].clone(), bytes)
    };
    let (recorded, reordered) = report(&ordered, "order-report");
    assert_eq!(
        recorded,
        serde_json::json!(["random_equalize", "color_jitter", "random_rotation"])
    );
    let (usual_order, usual) = report(&steps, "order-usual");
    assert!(usual_order.is_null());
    assert_ne!(reordered, usual, "the order changed nothing");
    for (order, words) in [
        (
            "color-jitter,random-rotation",
            "it lacks random_equalize (RandomEqualize, --random-equalize)",
        ),
        (
            "random-equalize,color-jitter,random-rotation,grayscale",
            "grayscale (RandomGrayscale, --grayscale), which",
        ),
        ("resize", "\"resize\" is not a step it places"),
        ("shuffle", "--shuffle is not a flag of an operation"),
    ] {
        refused_order(&steps, order, words);
    }
}

/// `parity --pillow` with `flags` and `--order order` fails, saying `words`.
fn refused_order(flags: &[&str], order: &str, words: &str) {
    let output = gpuprep()
        .args(["parity", "--pillow", "--quiet"])
        .args(flags)
        .args(["--order", order])
        .arg(data("photos"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains(words),
        "{order}: {stderr}"
    );
}

/// `--order` with `random-choice(...)` and `random-order(...)`: each image runs the steps it
/// drew (recorded as `steps`, a step not chosen without parameters), GPU == CPU == Pillow
/// replaying them; a malformed group is refused by name.
#[test]
fn random_choice_and_random_order_are_drawn_recorded_and_replayed_through_pillow() {
    let steps = [
        "--random-resized-crop",
        "48",
        "--random-rotation",
        "25",
        "--gaussian-blur",
        "5,0.1,2.0",
        "--color-jitter",
        "0.4,0.4,0.4",
        "--grayscale",
        "0.3",
        "--random-invert",
        "0.5",
        "--seed",
        "32",
        "--order",
    ];
    let order = "random-choice(random-rotation:3+gaussian-blur),\
                 random-order(color-jitter+grayscale+random-invert)";
    let images = converted_and_replayed("grouped-order", &[&steps[..], &[order]].concat());
    let drawn: Vec<Vec<&str>> = images
        .iter()
        .map(|image| {
            let params = &image["params"];
            let steps: Vec<&str> = params["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            let rotated = steps[0] == "random_rotation";
            assert_eq!(params.get("rotation").is_some(), rotated, "{params}");
            assert_eq!(params.get("blur").is_some(), !rotated, "{params}");
            steps
        })
        .collect();
    let orders: std::collections::BTreeSet<_> = drawn.iter().map(|s| &s[1..]).collect();
    assert!(orders.len() >= 3, "{drawn:?}");
    let (_, report) = converted("grouped-order-report", &[&steps[..], &[order]].concat());
    assert_eq!(
        report["transform"]["order"],
        serde_json::json!([
            {"random_choice": ["random_rotation", "gaussian_blur"], "p": [3.0, 1.0]},
            {"random_order": ["color_jitter", "grayscale", "random_invert"]}
        ])
    );
    for (order, words) in [
        (
            "random-choice(random-rotation:x+gaussian-blur),color-jitter,grayscale,random-invert",
            "not a weight: \"x\"",
        ),
        (
            "random-order(random-rotation+gaussian-blur,color-jitter,grayscale,random-invert",
            "unbalanced",
        ),
        (
            "random-order(random-rotation+random-order(gaussian-blur)),color-jitter",
            "nested",
        ),
        (
            "random-choice(random-rotation:0+gaussian-blur:0),color-jitter,grayscale,random-invert",
            "RandomChoice's p",
        ),
    ] {
        refused_order(&steps[..steps.len() - 1], order, words);
    }
}

/// `--gaussian-blur` records each image's kernels (torchvision's, of the sigma drawn), and
/// `parity --pillow` replays them through the reference's torch arithmetic: GPU, CPU and the
/// reference agree, inside `RandomApply` too.
#[test]
fn gaussian_blur_is_recorded_and_replayed_through_pillow() {
    let flags = [
        "--resize",
        "40x32",
        "--color-jitter",
        "0.4,0.4,0.4",
        "--gaussian-blur",
        "9x5,0.5,3",
        "--gaussian-blur-p",
        "0.6",
        "--seed",
        "17",
    ];
    let images = converted_and_replayed("blur", &flags);
    let blurred = images.iter().filter(|i| !i["params"]["blur"].is_null());
    for image in blurred.clone() {
        let kernel_x = image["params"]["blur"]["kernel_x"].as_array().unwrap();
        let sum: f64 = kernel_x.iter().map(|w| w.as_f64().unwrap()).sum();
        assert!(kernel_x.len() == 9 && (sum - 1.0).abs() < 1e-6, "{image}");
    }
    assert!(blurred.count() > 0);
    // transforms.v2's (`:v2`): the same sigmas drawn, its own kernels recorded and replayed (v2's
    // kernel is v1's Gaussian rounded otherwise: at 9 taps nearly every sigma's differs).
    let v2_flags = flags.map(|f| if f == "9x5,0.5,3" { "9x5,0.5,3:v2" } else { f });
    let v2_images = converted_and_replayed("blur_v2", &v2_flags);
    let kernels = |i: &serde_json::Value| i["params"]["blur"]["kernel_x"].clone();
    let pairs = images.iter().zip(&v2_images);
    assert!(pairs
        .clone()
        .all(|(a, b)| kernels(a).is_null() == kernels(b).is_null()));
    assert!(pairs
        .filter(|(a, _)| !kernels(a).is_null())
        .any(|(a, b)| kernels(a) != kernels(b)));
}

/// `--trivial-augment` reaches the report's parameters (an operation of torchvision's space and
/// its magnitude each) and `parity --pillow` replays them through Pillow's `ImageOps`,
/// `ImageEnhance` and `transform`: GPU, CPU and Pillow agree.
#[test]
fn trivial_augment_is_recorded_and_replayed_through_pillow() {
    let flags = [
        "--random-resized-crop",
        "48",
        "--trivial-augment",
        "31:40:bilinear",
        "--seed",
        "11",
    ];
    for image in converted_and_replayed("trivial", &flags) {
        let augment = image["params"]["augment"].as_array().unwrap();
        assert_eq!(augment.len(), 1, "{image}");
        let op = augment[0]["op"].as_str().unwrap();
        assert!(gpuprep::plan::AugmentOp::from_name(op).is_some(), "{image}");
        assert!(
            augment[0]["magnitude"].as_f64().unwrap().is_finite(),
            "{image}"
        );
    }
}

/// `--pad` and `--random-crop` (with `--pad-if-needed`) record each image's box of the padded
/// image, and `parity --pillow` replays them through `ImageOps.expand` and `np.pad`.
#[test]
fn pads_and_random_crops_are_recorded_and_replayed_through_pillow() {
    let flags = [
        "--resize",
        "40x30",
        "--pad",
        "3,0:edge",
        "--random-crop",
        "48x40:2:reflect",
        "--pad-if-needed",
        "--seed",
        "14",
    ];
    for image in converted_and_replayed("random-crop", &flags) {
        let b = &image["params"]["random_crop"];
        assert_eq!(
            (b["width"].as_u64(), b["height"].as_u64()),
            (Some(48), Some(40))
        );
    }
}

/// A stacked .npy of random crops with padding: one shape, the crop's (not the padded image's),
/// on either backend.
#[test]
fn random_crops_with_padding_stack_at_the_crops_size() {
    for backend in ["cpu", "gpu"] {
        let out = fresh_dir(&format!("stacked-random-crop-{backend}")).join("batch.npy");
        let status = gpuprep()
            .arg("convert")
            .arg(data("photos"))
            .arg("--out")
            .arg(&out)
            .args([
                "--resize",
                "32x32",
                "--random-crop",
                "32:4",
                "--pad",
                "2:edge",
            ])
            .args(["--backend", backend, "-q"])
            .status()
            .unwrap();
        assert!(status.success(), "{backend}");
        let (shape, _) = read_npy(&out, "|u1");
        assert_eq!(shape, vec![6, 32, 32, 3], "{backend}");
    }
}

/// `--rand-augment` and `--auto-augment` record each image's operations in the order they ran,
/// and `parity --pillow` replays them through Pillow (bilinear and bicubic maps, the fill and
/// interpolation given in either order): GPU, CPU and Pillow agree.
#[test]
fn rand_augment_and_auto_augment_are_recorded_and_replayed_through_pillow() {
    let rand = [
        "--random-resized-crop",
        "48",
        "--rand-augment",
        "3,20:bilinear:40,50,60",
        "--seed",
        "12",
    ];
    for image in converted_and_replayed("rand-augment", &rand) {
        let augment = image["params"]["augment"].as_array().unwrap();
        assert_eq!(augment.len(), 3, "{image}");
    }
    let auto = [
        "--crop",
        "48",
        "--auto-augment",
        "svhn:bicubic",
        "--seed",
        "13",
    ];
    for image in converted_and_replayed("auto-augment", &auto) {
        let augment = image["params"]["augment"].as_array().unwrap();
        assert!(augment.len() <= 2, "{image}");
    }
}

/// `--timm-rand-augment` records timm's operations (each geometric one with the filter it drew)
/// and `parity --pillow` replays them through Pillow: GPU, CPU and Pillow agree, over every
/// operation of timm's increasing set.
#[test]
fn timms_rand_augment_is_recorded_and_replayed_through_pillow() {
    let mut seen = std::collections::BTreeSet::new();
    for (config, seed) in [
        ("rand-m9-n4-mstd0.5-p1.0-inc1:124,116,104", "21"),
        ("rand-m9-n4-mstd0.5-p1.0-inc1:124,116,104", "22"),
        ("rand-m7-n4-mstd101-p1.0:bilinear", "23"),
    ] {
        let args = [
            "--random-resized-crop",
            "48",
            "--timm-rand-augment",
            config,
            "--seed",
            seed,
        ];
        for image in converted_and_replayed(&format!("timm-rand-augment-{seed}"), &args) {
            for op in image["params"]["augment"].as_array().unwrap() {
                seen.insert(op["op"].as_str().unwrap().to_string());
            }
        }
    }
    assert!(seen.len() >= 12, "{seen:?}");
}

/// `--timm-auto-augment` records the operations of the sub-policy drawn that apply (each
/// geometric one with the filter it drew) and `parity --pillow` replays them through Pillow:
/// GPU, CPU and Pillow agree, over each of timm's five policies ('3a' with Pillow's Gaussian
/// blur).
#[test]
fn timms_auto_augment_is_recorded_and_replayed_through_pillow() {
    let mut seen = std::collections::BTreeSet::new();
    for (config, seed) in [
        ("original:124,116,104", "41"),
        ("originalr-mstd0.5:bicubic", "42"),
        ("v0:124,116,104", "43"),
        ("v0r-mstd2:0,0,0:bilinear", "44"),
        ("3a:124,116,104", "45"),
        ("3a-mstd3", "46"),
    ] {
        let args = [
            "--random-resized-crop",
            "48",
            "--timm-auto-augment",
            config,
            "--seed",
            seed,
        ];
        for image in converted_and_replayed(&format!("timm-auto-augment-{seed}"), &args) {
            let augment = image["params"]["augment"].as_array().unwrap();
            assert!(augment.len() <= 2, "{image}");
            for op in augment {
                seen.insert(op["op"].as_str().unwrap().to_string());
            }
        }
    }
    assert!(seen.len() >= 6, "{seen:?}");
    assert!(seen.contains("TimmGaussianBlur"), "{seen:?}");
}

/// `--timm-aug-mix` records each image's weights, blend factor and chains, and `parity --pillow`
/// replays them through Pillow and numpy (timm's float32 sum, or its blended weights and one
/// blend a chain): GPU, CPU and Pillow agree.
#[test]
fn timms_aug_mix_is_recorded_and_replayed_through_pillow() {
    let mut chains = 0;
    for (config, seed) in [
        ("augmix-m3-w3:124,116,104:translate=0.3", "51"),
        ("augmix-m9-w2-d3-a0.5-mstd0.5:translate=0.3:bicubic", "52"),
        ("augmix-m3-w3-b1:124,116,104:translate=0.3", "53"),
    ] {
        let args = [
            "--random-resized-crop",
            "48",
            "--timm-aug-mix",
            config,
            "--seed",
            seed,
        ];
        for image in converted_and_replayed(&format!("timm-aug-mix-{seed}"), &args) {
            let mix = &image["params"]["aug_mix"];
            assert_eq!(
                mix["weights"].as_array().unwrap().len(),
                mix["chains"].as_array().unwrap().len()
            );
            chains += mix["chains"].as_array().unwrap().len();
        }
    }
    assert!(chains >= 15, "{chains}");
}

/// `--random-erasing P:random` with `--random-erasing-count` records each box with its noise key
/// and `parity --pillow` replays them (the noise drawn again in numpy): GPU, CPU and Pillow agree;
/// `:channel` likewise, one value per channel and box.
#[test]
fn random_erasing_of_normal_values_is_recorded_and_replayed_through_pillow() {
    let mut counts = std::collections::BTreeSet::new();
    for (value, seed) in [("1:random", "31"), ("0.9:channel", "32")] {
        let args = [
            "--random-resized-crop",
            "40",
            "--normalize",
            "imagenet",
            "--random-erasing",
            value,
            "--random-erasing-count",
            "1,3",
            "--seed",
            seed,
        ];
        for image in converted_and_replayed(&format!("erasing-{seed}"), &args) {
            let boxes = image["params"]["erase"].as_array().unwrap();
            assert!(boxes.iter().all(|b| b["noise"].is_u64()), "{image}");
            counts.insert(boxes.len());
        }
    }
    assert!(counts.len() >= 2, "{counts:?}");
}

/// SIGINT or SIGTERM stops a convert job at its next chunk: it keeps the rows it finished (a
/// whole .npy of them), leaves no temporary file, writes the report (which says it was
/// interrupted and names every input it did not reach) and exits 130; a later run removes the
/// temporary files a killed run left.
#[test]
fn an_interrupted_convert_keeps_what_it_finished_and_leaves_no_temporary_file() {
    let out = fresh_dir("interrupted");
    std::fs::create_dir_all(&out).unwrap();
    let stack = out.join("stack.npy");
    // A temporary file of a process of this machine that is gone (pids stay below 2^22 on
    // Linux), and one that is not this job's to remove.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let stale = out.join(format!("stack.npy.partial-{}-4194999", host.trim()));
    std::fs::write(&stale, b"left by a killed run").unwrap();
    let not_ours = out.join(format!("notes.txt.partial-{}-4194999", host.trim()));
    std::fs::write(&not_ours, b"another tool's").unwrap();
    let photo = data("photos/sklearn__china.jpg");
    for signal in ["INT", "TERM"] {
        let mut child = gpuprep()
            .arg("convert")
            .args(std::iter::repeat_n(&photo, 4000))
            .args([
                "--resize",
                "64x64",
                "--backend",
                "cpu",
                "--threads",
                "1",
                "--out",
            ])
            .arg(&stack)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Once the first chunks (16, 32, …) are written, well before the last.
        let started = std::time::Instant::now();
        let written = |name: &std::ffi::OsStr| {
            let name = name.to_string_lossy();
            name.starts_with("stack.npy.partial-") && !name.ends_with("-4194999")
        };
        while !std::fs::read_dir(&out).unwrap().flatten().any(|e| {
            written(&e.file_name()) && e.metadata().is_ok_and(|m| m.len() > 48 * 64 * 64 * 3)
        }) {
            assert!(
                started.elapsed().as_secs() < 60,
                "no row written in a minute"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let killed = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "SIG{signal}");
        let left: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("stack.") && name.contains(".partial-"))
            .collect();
        assert!(left.is_empty(), "SIG{signal}: {left:?}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("stack.report.json")).unwrap())
                .unwrap();
        assert_eq!(report["interrupted"], true);
        let images = report["images"].as_array().unwrap();
        assert_eq!(images.len(), 4000);
        let done = images.iter().take_while(|e| e["ok"] == true).count();
        assert!(done > 0 && done < 4000, "SIG{signal}: {done} done");
        assert!(images[done..]
            .iter()
            .all(|e| e["ok"] == false && e["kind"] == "Interrupted"));
        let (shape, data) = read_u8_npy(&stack);
        assert_eq!(shape, [done, 64, 64, 3], "SIG{signal}");
        assert_eq!(data.len(), done * 64 * 64 * 3);
    }
    assert!(!stale.exists(), "the stale temporary file was removed");
    assert!(not_ours.exists(), "another output's file stays");
}

/// The single-operation transforms' flags: a negative threshold or factor is a value, not a
/// flag; an integer argument must be written as one (Pillow's posterize takes no float).
#[test]
fn single_operation_flags_take_negative_values_and_whole_bits() {
    let dir = fresh_dir("single-operation-flags");
    let convert = |flags: &[&str]| {
        gpuprep()
            .args(["convert", "--backend", "cpu", "-q", "--out"])
            .arg(&dir)
            .arg(data("photos/mpl__grace_hopper.jpg"))
            .args(flags)
            .output()
            .unwrap()
    };
    let out = convert(&[
        "--random-solarize",
        "-1",
        "--random-adjust-sharpness",
        "-1.5,1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let ops = &report["transform"]["color_ops"];
    assert_eq!(
        (
            ops[0]["threshold"].as_f64(),
            ops[1]["sharpness_factor"].as_f64()
        ),
        (Some(-1.0), Some(-1.5))
    );
    for bits in ["3.0", "3e0"] {
        let out = convert(&["--random-posterize", bits]);
        assert_eq!(out.status.code(), Some(2), "{bits}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("random_posterize's bits must be an integer"),
            "{stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every operation a transform holds has its declared flag in `convert` and `bench`, and the
/// flag sets it: `convert` with it alone records the operation in report.json, which reads back
/// as a transform. The command line is checked against the one table of operations.
#[test]
fn every_declared_operation_has_its_flag_and_the_flag_sets_it() {
    for command in ["convert", "bench"] {
        let out = gpuprep().args([command, "--help"]).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        for operation in gpuprep::OPERATIONS {
            let flag = format!("{} <", operation.flag);
            assert!(help.contains(&flag), "{command} has no {flag}>");
        }
    }
    let value = |flag: &str| -> String {
        let single = gpuprep::COLOR_OPERATIONS.iter().find(|o| o.flag == flag);
        if let Some(operation) = single {
            // The declared example of the argument, if it has one.
            return operation
                .argument
                .map_or("0.5".into(), |a| format!("{},0.5", a.example));
        }
        match flag {
            "--resize" | "--random-resized-crop" | "--crop" => "16",
            "--hflip" | "--vflip" | "--grayscale" | "--random-erasing" => "0.5",
            "--random-rotation" => "10",
            "--random-affine" => "10:scale=0.9,1.1",
            "--random-perspective" => "0.5,0.5",
            "--gaussian-blur" => "7",
            "--trivial-augment" => "31",
            "--rand-augment" => "2,9",
            "--pad" => "2,4:reflect",
            "--random-crop" => "12:4",
            "--auto-augment" => "imagenet",
            "--timm-rand-augment" => "rand-m9-mstd0.5-inc1",
            "--timm-auto-augment" => "original-mstd0.5",
            "--timm-aug-mix" => "augmix-m3-w3",
            "--random-resize" => "16,24",
            "--random-shortest-size" => "16,20:30",
            "--color-jitter" => "0.4,0.4,0.4",
            "--normalize" => "imagenet",
            other => panic!("no value to try {other} with"),
        }
        .into()
    };
    for operation in gpuprep::OPERATIONS {
        let dir = fresh_dir(&format!("operation-{}", operation.field));
        let out = gpuprep()
            .args(["convert", "--backend", "cpu", "-q", "--out"])
            .arg(&dir)
            .arg(data("photos/mpl__grace_hopper.jpg"))
            .args([operation.flag, &value(operation.flag)])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            operation.flag,
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
        let recorded = &report["transform"];
        assert!(
            !recorded[operation.field].is_null(),
            "{}: {recorded}",
            operation.flag
        );
        if operation.field == "color_ops" {
            assert_eq!(recorded["color_ops"][0]["op"], operation.method);
        }
        let transform = gpuprep::Transform::from_json(recorded).unwrap();
        assert_eq!(transform.to_json(), *recorded);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
