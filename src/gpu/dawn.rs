//! Batches through every stage on Dawn, Chrome's WebGPU implementation, from the very commands
//! and buffers gpuprep gives wgpu: wgpu records its API trace (the packed uploads, each shader
//! with its override values, each bind group and dispatch, the copies to the read-back buffers),
//! tools/dawn/replay.mjs replays it on Dawn's Vulkan back end (Tint compiling the shaders), and
//! the tensors Dawn computes must be the CPU reference's, bit for bit.

use super::{GpuPipeline, StreamOptions};
use crate::plan::Sample;
use crate::tensor::{Tensor, TensorData};
use crate::transform::Resize;
use crate::{
    Backend, ColorJitter, ColorOp, ColorOps, ErasedValue, Filter, Limits, RandAugment,
    RandomErasing, Transform, TrivialAugment, COLOR_OPERATIONS,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The transforms replayed: together they use every entry point of every shader (the test
/// checks that Dawn dispatched each), and the last applies every colour operation.
fn transforms() -> Vec<Transform> {
    let draft = Transform {
        resize: Some(Resize::ShorterSide(40)),
        center_crop: Some((32, 32)),
        draft: true,
        ..Transform::imagenet_eval()
    };
    let training = Transform {
        color_jitter: Some(ColorJitter::new(0.4, 0.4, 0.4, 0.1)),
        grayscale: Some(0.3),
        trivial_augment: Some(TrivialAugment {
            interpolation: Filter::Bilinear,
            ..TrivialAugment::default()
        }),
        color_ops: ColorOps::default()
            .with(ColorOp::new("random_adjust_sharpness", Some(2.0), 0.5).unwrap())
            .with(ColorOp::new("random_equalize", None, 0.5).unwrap()),
        // Normal values drawn per element in the shader, up to three boxes an image.
        random_erasing: Some(RandomErasing {
            value: ErasedValue::NormalPerElement,
            count: (1, 3),
            ..RandomErasing::new(1.0)
        }),
        ..Transform::imagenet_train()
    };
    // Every colour operation applied, each single-operation transform with its example argument.
    let every_color_op = Transform {
        color_jitter: Some(ColorJitter::new(0.4, 0.4, 0.4, 0.1)),
        color_ops: COLOR_OPERATIONS
            .iter()
            .fold(ColorOps::default(), |ops, op| {
                let argument = op.argument.as_ref().map(|a| a.example);
                ops.with(ColorOp::new(op.method, argument, 1.0).unwrap())
            }),
        ..Transform::imagenet_eval()
    };
    // Four operations an image, their maps bicubic: maps after colour operations, in the
    // colour stage.
    let policy = Transform {
        rand_augment: Some(RandAugment {
            num_ops: 4,
            magnitude: 20,
            interpolation: Filter::Bicubic,
            ..RandAugment::default()
        }),
        random_erasing: Some(RandomErasing {
            value: ErasedValue::NormalPerChannel,
            ..RandomErasing::new(0.5)
        }),
        ..Transform::imagenet_train()
    };
    vec![
        Transform::imagenet_eval(),
        draft,
        training,
        every_color_op,
        policy,
    ]
}

/// Whether an image's augmentation mapped it (a magnitude above 0 maps): with the replayed
/// policies' bilinear and bicubic sampling, a remap in the colour stage, in doubles.
fn remaps(params: &crate::Params) -> bool {
    use crate::plan::AugmentOp::{Rotate, ShearX, ShearY, TranslateX, TranslateY};
    let ops = params.augment.as_deref().unwrap_or_default();
    ops.iter().any(|a| {
        [ShearX, ShearY, TranslateX, TranslateY, Rotate].contains(&a.op) && a.magnitude != 0.0
    })
}

/// The inputs: the bundled photos (single-scan JPEGs: Huffman decoding on the GPU), a
/// progressive JPEG (decoded on the CPU, its coefficients uploaded) and a PNG (its pixels).
fn inputs() -> Vec<Vec<u8>> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut files: Vec<PathBuf> = std::fs::read_dir(data.join("photos"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.push(data.join("conformance/jdec__mozilla__jpg-progressive.jpg"));
    files.push(data.join("formats/made__rgb.png"));
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// A tensor's bytes as a submission's output buffer holds them (little-endian words).
fn tensor_bytes(tensor: &Tensor) -> Vec<u8> {
    match &tensor.data {
        TensorData::F32(values) => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        _ => panic!("the replayed transforms make float32 tensors"),
    }
}

/// Splits each read-back range into the expected tensors it holds, in order (a submission's
/// tensors lie one after the other); a range that starts with no expected tensor must be stage
/// 0's status words, which are smaller than any tensor. Returns the tensors found.
fn tensors_found(readbacks: &[Vec<u8>], expected: &[Vec<u8>]) -> Vec<bool> {
    let smallest = expected.iter().map(Vec::len).min().unwrap();
    let mut found = vec![false; expected.len()];
    for (k, bytes) in readbacks.iter().enumerate() {
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let Some(i) =
                (0..expected.len()).find(|&i| !found[i] && rest.starts_with(&expected[i]))
            else {
                assert!(
                    at == 0 && bytes.len() < smallest,
                    "read-back {k}: {} bytes from byte {at} are no expected tensor",
                    bytes.len() - at
                );
                break;
            };
            found[i] = true;
            at += expected[i].len();
        }
    }
    found
}

#[test]
fn batches_through_every_stage_on_dawn_give_the_cpu_references_tensors() {
    let Some(adapter) = super::context::test_adapter() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("gpuprep-dawn-{}", std::process::id()));
    let (trace, out) = (dir.join("trace"), dir.join("out"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&trace).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    // WebGPU's default limits, which Dawn's device has too: the same bindings and batches.
    let descriptor = wgpu::DeviceDescriptor {
        required_limits: wgpu::Limits::default(),
        trace: wgpu::Trace::Directory(trace.clone()),
        ..Default::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).unwrap();
    let bytes = inputs();
    let images: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let limits = Limits::default();
    let (mut expected, mut remapped) = (Vec::new(), 0);
    {
        let pipeline = GpuPipeline::new(&device, &queue);
        for transform in transforms() {
            let options = StreamOptions::new(&transform, &limits, images.len());
            let streamed = pipeline.preprocess_many(&images, &options);
            for (i, (result, image)) in streamed.results.iter().zip(&images).enumerate() {
                let sample = Sample::Index(i as u64);
                let reference = Backend::Cpu
                    .preprocess_sample(image, &transform, &sample, &limits)
                    .unwrap();
                // wgpu's own run, the trace's, is the reference's too.
                assert!(*result.as_ref().unwrap() == reference, "image {i}");
                remapped += usize::from(remaps(&reference.params));
                expected.push(tensor_bytes(&reference));
            }
        }
    }
    assert!(remapped > 0, "no image remapped in the colour stage");
    // The trace is complete once the device is gone.
    drop(queue);
    drop(device);
    let lavapipe = std::env::var_os("GPUPREP_DAWN_LAVAPIPE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/dawn/lavapipe"));
    let run = Command::new("node")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/dawn"))
        .arg("replay.mjs")
        .args([&trace, &out])
        .env("VK_ICD_FILENAMES", lavapipe.join("lvp_icd.json"))
        .env("LD_LIBRARY_PATH", lavapipe.join("lib"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}): install Node.js"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the replay on Dawn failed (tools/dawn: npm ci, and lavapipe.sh for its Vulkan driver):\n\
         {stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let dispatched = report["dispatched"].as_object().unwrap();
    for entry_point in [
        "sync_first:sync_first",
        "sync:sync",
        "prefix_local:prefix_local",
        "prefix_groups:prefix_groups",
        "write:write",
        "idct:main",
        "idct:main_8x8",
        "color:main",
        "resample_h:main",
        "tensor:pixels_main",
        "adjust:main",
        "tensor:main",
    ] {
        assert!(
            dispatched.contains_key(entry_point),
            "{entry_point}: {report}"
        );
    }
    let readbacks: Vec<Vec<u8>> = report["readbacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| std::fs::read(out.join(r["file"].as_str().unwrap())).unwrap())
        .collect();
    let found = tensors_found(&readbacks, &expected);
    let missing: Vec<usize> = (0..found.len()).filter(|&i| !found[i]).collect();
    assert!(
        missing.is_empty(),
        "Dawn's tensors differ: {missing:?} of {}",
        found.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
