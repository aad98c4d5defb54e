//! The GPU stages give exactly the CPU reference's pixels (and so Pillow's), on a real adapter:
//! lavapipe in CI, any Vulkan/Metal/DX12 GPU elsewhere.

mod common;

use gpuprep::gpu::{create_device, Gpu, GpuPipeline};
use gpuprep::Limits;
use std::path::Path;

/// The device to test on. No adapter fails the test with the fix, unless `GPUPREP_NO_GPU=1`
/// explicitly marks the run GPU-less, which is then said out loud.
fn gpu() -> Option<Gpu> {
    if std::env::var("GPUPREP_NO_GPU").is_ok_and(|v| v == "1") {
        println!("GPUPREP_NO_GPU=1: GPU tests NOT run");
        return None;
    }
    match create_device() {
        Ok(gpu) => {
            println!(
                "adapter: {} ({:?}, {})",
                gpu.info.name, gpu.info.backend, gpu.info.driver_info
            );
            Some(gpu)
        }
        Err(e) => panic!("{e}"),
    }
}

/// Every file under `root` that Pillow decodes and gpuprep supports: GPU RGB == CPU RGB ==
/// Pillow's golden.
fn check_root(gpu: &Gpu, root: &Path) {
    let pipeline = GpuPipeline::new(&gpu.device);
    let mut checked = 0;
    let mut failures = Vec::new();
    for golden in common::goldens().into_values() {
        let path = root.join(&golden.file);
        let Some((_, _, sha)) = &golden.rgb else {
            continue;
        };
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let Ok(coefficients) = gpuprep::jpeg::decode_coefficients(&bytes, &Limits::default())
        else {
            continue; // out of scope (arithmetic, lossless) or another format: tests elsewhere
        };
        let cpu = gpuprep::reference::decode_rgb(&coefficients).unwrap();
        let gpu_rgb = match pipeline.decode_rgb(&gpu.device, &gpu.queue, &coefficients) {
            Ok(rgb) => rgb,
            Err(e) => {
                failures.push(format!("{}: {e}", golden.file));
                continue;
            }
        };
        checked += 1;
        if gpu_rgb != cpu {
            let first = gpu_rgb.data.iter().zip(&cpu.data).position(|(g, c)| g != c);
            failures.push(format!(
                "{}: GPU differs from the CPU reference at byte {first:?}",
                golden.file
            ));
        } else if common::sha256_hex(&gpu_rgb.data) != *sha {
            failures.push(format!(
                "{}: GPU equals the CPU but not Pillow",
                golden.file
            ));
        }
    }
    println!(
        "{}: {checked} images, GPU == CPU reference == Pillow for {}",
        root.display(),
        checked - failures.len()
    );
    assert!(checked > 0, "no image checked under {}", root.display());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn gpu_decode_equals_reference_on_test_data() {
    if let Some(gpu) = gpu() {
        check_root(&gpu, &common::manifest_dir().join("tests/data"));
    }
}

#[test]
fn gpu_decode_equals_reference_on_shared_corpus() {
    let (Some(gpu), Some(root)) = (gpu(), common::shared_corpus()) else {
        println!("shared corpus not found (or GPU-less run): only tests/data was checked");
        return;
    };
    check_root(&gpu, &root);
}

/// Every golden transform that runs on the GPU, for every file of `root`: GPU tensor == Pillow.
fn check_transforms(gpu: &Gpu, root: &Path) {
    let pipeline = gpuprep::gpu::GpuPipeline::new(&gpu.device);
    let specs = common::transform_specs();
    let mut checked = 0;
    let mut failures = Vec::new();
    for golden in common::transform_goldens() {
        let transform = &specs[&golden.transform];
        let path = root.join(&golden.file);
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let coefficients = gpuprep::jpeg::decode_coefficients(&bytes, &Limits::default()).unwrap();
        checked += 1;
        match pipeline.preprocess(&gpu.device, &gpu.queue, &coefficients, transform) {
            Ok(tensor)
                if tensor.shape.to_vec() == golden.shape
                    && common::sha256_hex(&tensor.to_le_bytes()) == golden.sha256 => {}
            Ok(_) => failures.push(format!(
                "{} {}: GPU tensor differs from Pillow + torchvision",
                golden.file, golden.transform
            )),
            Err(e) => failures.push(format!("{} {}: {e}", golden.file, golden.transform)),
        }
    }
    println!(
        "{}: {checked} GPU transforms, {} identical to Pillow + torchvision",
        root.display(),
        checked - failures.len()
    );
    assert!(checked > 0);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn gpu_transforms_equal_goldens_on_test_data() {
    if let Some(gpu) = gpu() {
        check_transforms(&gpu, &common::manifest_dir().join("tests/data"));
    }
}

#[test]
fn gpu_transforms_equal_goldens_on_shared_corpus() {
    let (Some(gpu), Some(root)) = (gpu(), common::shared_corpus()) else {
        println!("shared corpus not found (or GPU-less run): only tests/data was checked");
        return;
    };
    check_transforms(&gpu, &root);
}

#[test]
fn a_bad_image_fails_alone_in_a_gpu_batch() {
    let Some(gpu) = gpu() else { return };
    let pipeline = gpuprep::gpu::GpuPipeline::new(&gpu.device);
    let transform = common::transform_specs()["exact224_imagenet_f32"];
    let files = [
        "photos/mpl__grace_hopper.jpg",
        "malformed/pillow__hopper.png",
        "photos/sklearn__china.jpg",
    ];
    let bytes: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(common::manifest_dir().join("tests/data").join(f)).unwrap())
        .collect();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let batch = pipeline
        .preprocess_batch(
            &gpu.device,
            &gpu.queue,
            &inputs,
            &transform,
            &Limits::default(),
        )
        .unwrap();
    assert!(batch.outcomes[0].is_ok() && batch.outcomes[2].is_ok());
    assert!(matches!(batch.outcomes[1], Err(gpuprep::Error::NotJpeg(_))));
    let tensors = batch.read_back(&gpu.device, &gpu.queue).unwrap();
    let goldens = common::transform_goldens();
    for (i, file) in [(0, files[0]), (2, files[2])] {
        let golden = goldens
            .iter()
            .find(|g| g.file == file && g.transform == "exact224_imagenet_f32")
            .unwrap();
        assert_eq!(
            common::sha256_hex(&tensors[i].as_ref().unwrap().to_le_bytes()),
            golden.sha256,
            "{file}"
        );
    }
    assert!(tensors[1].is_none());
}

/// The streaming call: images of different sizes and a bad one, more of them than a batch holds,
/// come back in input order, each equal to the CPU reference, the bad one failing alone.
#[test]
fn streamed_images_keep_their_order_and_fail_alone() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device);
    let files = [
        "photos/mpl__grace_hopper.jpg",
        "conformance/jdec__mozilla__jpg-progressive.jpg",
        "malformed/pillow__hopper.png",
        "photos/sklearn__china.jpg",
        "conformance/jdec__mozilla__jpg-gray.jpg",
    ];
    let bytes: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(common::manifest_dir().join("tests/data").join(f)).unwrap())
        .collect();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    // Resize(64) on the shorter side: every output has its own shape.
    let transform = gpuprep::Transform {
        resize: Some(gpuprep::transform::Resize::ShorterSide(64)),
        ..Default::default()
    };
    let streamed = pipeline.preprocess_many(
        &gpu.device,
        &gpu.queue,
        &inputs,
        &transform,
        &Limits::default(),
        2,
    );
    assert_eq!(streamed.results.len(), files.len());
    assert!(
        streamed.batches.len() >= 2,
        "{} batches",
        streamed.batches.len()
    );
    for (i, (result, bytes)) in streamed.results.iter().zip(&inputs).enumerate() {
        match gpuprep::preprocess(bytes, &transform, &Limits::default()) {
            Ok(expected) => assert!(result.as_ref().ok() == Some(&expected), "{}", files[i]),
            Err(_) => assert!(
                matches!(result, Err(gpuprep::Error::NotJpeg(_))),
                "{}",
                files[i]
            ),
        }
    }
}
