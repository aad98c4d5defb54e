//! The GPU stages give exactly the CPU reference's pixels (and so Pillow's), on a real adapter:
//! lavapipe in CI, any Vulkan/Metal/DX12 GPU elsewhere.

mod common;

use gpuprep::gpu::{Batching, Gpu, GpuPipeline, StreamOptions};
use gpuprep::Limits;
use std::path::Path;

/// The bytes of `files`, paths under tests/data.
fn test_files(files: &[&str]) -> Vec<Vec<u8>> {
    let dir = common::manifest_dir().join("tests/data");
    files
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect()
}

/// The device to test on (see [`common::gpu`]).
fn gpu() -> Option<Gpu> {
    common::gpu()
}

/// Every file under `root` (but those tests/data holds too) that Pillow decodes and gpuprep
/// supports: GPU RGB == CPU RGB == Pillow's golden.
fn check_root(gpu: &Gpu, root: &Path) {
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let mut checked = 0;
    let mut failures = Vec::new();
    for golden in common::goldens().into_values() {
        let path = root.join(&golden.file);
        let Some((_, _, sha)) = &golden.rgb else {
            continue;
        };
        if !path.is_file() || common::checked_in_test_data(root, &golden.file) {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let Ok(coefficients) = gpuprep::jpeg::decode_coefficients(&bytes, &Limits::default())
        else {
            continue; // out of scope (arithmetic, lossless) or another format: tests elsewhere
        };
        let cpu = gpuprep::reference::decode_rgb(&coefficients).unwrap();
        let gpu_rgb = match pipeline.decode_rgb(&coefficients) {
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

/// The golden transforms of the files of `root` (but those tests/data holds too) that run on the
/// GPU: GPU tensor == Pillow. All of them, or, with `share` n > 1, a fixed nth (a diagonal): a
/// file's k-th golden is checked when k plus the file's place among the goldens' files is a
/// multiple of n, so that each file runs under an nth of the transforms and each transform on an
/// nth of the files.
/// (The shared corpus's own files are large photos: on a software adapter, all of their goldens
/// take longer than the rest of the tests together. The CPU reference is checked on all of them,
/// and GPUPREP_GPU_PARITY=all checks all of them here too.)
fn check_transforms(gpu: &Gpu, root: &Path, share: usize) {
    let share = match std::env::var("GPUPREP_GPU_PARITY").as_deref() {
        Ok("all") => 1,
        _ => share,
    };
    let pipeline = gpuprep::gpu::GpuPipeline::new(&gpu.device, &gpu.queue);
    let specs = common::transform_specs();
    let mut checked = 0;
    let mut failures = Vec::new();
    // Per transform, its files through the streaming loader: the path `convert` and `bench`
    // take, where single-scan JPEGs are decoded straight into the compact upload (the decode
    // test above takes the dense path).
    let mut by_transform: std::collections::BTreeMap<&str, Vec<&common::TransformGolden>> =
        Default::default();
    let goldens = common::transform_goldens();
    let files: std::collections::BTreeSet<&str> = goldens.iter().map(|g| g.file.as_str()).collect();
    let place: std::collections::HashMap<&str, usize> =
        files.into_iter().enumerate().map(|(i, f)| (f, i)).collect();
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    let mut duplicates: std::collections::HashMap<&str, bool> = Default::default();
    for golden in &goldens {
        let k = seen.entry(&golden.file).or_default();
        let in_share = (*k + place[golden.file.as_str()]).is_multiple_of(share);
        *k += 1;
        let path = root.join(&golden.file);
        // GPUPREP_SPECS=a,b checks only the specs whose names hold one of those words.
        let chosen = std::env::var("GPUPREP_SPECS").map_or(true, |words| {
            let name = golden.spec_and_sample().0;
            words.split(',').any(|w| name.contains(w))
        });
        let mut duplicate = || {
            *duplicates
                .entry(&golden.file)
                .or_insert_with(|| common::checked_in_test_data(root, &golden.file))
        };
        if in_share && chosen && path.is_file() && !duplicate() {
            by_transform
                .entry(golden.spec_and_sample().0)
                .or_default()
                .push(golden);
        }
    }
    for (name, goldens) in by_transform {
        let transform = &specs[name];
        let bytes: Vec<Vec<u8>> = goldens
            .iter()
            .map(|g| std::fs::read(root.join(&g.file)).unwrap())
            .collect();
        // Formats and files gpuprep refuses are counted by decode_parity.
        let (goldens, inputs): (Vec<_>, Vec<&[u8]>) = goldens
            .iter()
            .zip(&bytes)
            .filter(|(_, b)| gpuprep::formats::decode(b, &Limits::default()).is_ok())
            .map(|(g, b)| (*g, b.as_slice()))
            .unzip();
        // Each random sample as its golden names it, all of a spec's samples in one stream.
        let indices: Vec<u64> = goldens
            .iter()
            .map(|g| match g.spec_and_sample().1 {
                gpuprep::Sample::Index(i) => i,
                _ => unreachable!("goldens name sample indices"),
            })
            .collect();
        let streamed = pipeline.preprocess_many(
            &inputs,
            &StreamOptions {
                samples: gpuprep::Samples::Indices(&indices),
                ..StreamOptions::new(transform, &Limits::default(), 16)
            },
        );
        for (golden, result) in goldens.iter().zip(&streamed.results) {
            checked += 1;
            let params_match = |t: &gpuprep::Tensor| {
                golden
                    .params
                    .as_ref()
                    .is_none_or(|p| *p == common::params_json(&t.params))
            };
            match result {
                Ok(tensor)
                    if tensor.shape.to_vec() == golden.shape
                        && params_match(tensor)
                        && common::sha256_hex(&tensor.to_le_bytes()) == golden.sha256 => {}
                Ok(_) => failures.push(format!(
                    "{} {}: GPU tensor differs from Pillow + torchvision",
                    golden.file, golden.transform
                )),
                Err(e) => failures.push(format!("{} {}: {e}", golden.file, golden.transform)),
            }
        }
    }
    println!(
        "{}: {checked} GPU transforms (a 1/{share} share of the goldens), {} identical to \
         Pillow + torchvision",
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
        check_transforms(&gpu, &common::manifest_dir().join("tests/data"), 1);
    }
}

#[test]
fn gpu_transforms_equal_goldens_on_shared_corpus() {
    let (Some(gpu), Some(root)) = (gpu(), common::shared_corpus()) else {
        println!("shared corpus not found (or GPU-less run): only tests/data was checked");
        return;
    };
    check_transforms(&gpu, &root, 8);
}

#[test]
fn a_bad_image_fails_alone_in_a_gpu_batch() {
    let Some(gpu) = gpu() else { return };
    let pipeline = gpuprep::gpu::GpuPipeline::new(&gpu.device, &gpu.queue);
    let transform = common::transform_specs()["exact224_imagenet_f32"];
    let files = [
        "photos/mpl__grace_hopper.jpg",
        "malformed/jdec__derive-huffman-codes-overflow.jpg",
        "photos/sklearn__china.jpg",
    ];
    let bytes = test_files(&files);
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let batch = pipeline
        .preprocess_batch(&inputs, &transform, &Limits::default())
        .unwrap();
    assert!(batch.outcomes[0].is_ok() && batch.outcomes[2].is_ok());
    assert!(matches!(
        batch.outcomes[1],
        Err(gpuprep::Error::Corrupt { .. })
    ));
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
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let files = [
        "photos/mpl__grace_hopper.jpg",
        "conformance/jdec__mozilla__jpg-progressive.jpg",
        "malformed/pillow__hopper.png",
        "malformed/jdec__derive-huffman-codes-overflow.jpg",
        "photos/sklearn__china.jpg",
        "conformance/jdec__mozilla__jpg-gray.jpg",
    ];
    let bytes = test_files(&files);
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    // Resize(64) on the shorter side: every output has its own shape.
    let transform = gpuprep::Transform {
        resize: Some(gpuprep::Resize::ShorterSide(64)),
        ..Default::default()
    };
    let streamed = pipeline.preprocess_many(
        &inputs,
        &StreamOptions::new(&transform, &Limits::default(), 2),
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
            Err(expected) => assert_eq!(
                result.as_ref().map(|_| ()).unwrap_err().to_string(),
                expected.to_string(),
                "{}",
                files[i]
            ),
        }
    }
}

/// Seven test images of different sizes and formats (a PNG among JPEGs), two of them bad (corrupt,
/// truncated), and a transform that keeps each one's aspect.
fn mixed_inputs() -> (Vec<Vec<u8>>, gpuprep::Transform) {
    let files = [
        "photos/mpl__grace_hopper.jpg",
        "malformed/jdec__derive-huffman-codes-overflow.jpg",
        "conformance/jdec__mozilla__jpg-progressive.jpg",
        "malformed/pillow__hopper.png",
        "photos/sklearn__china.jpg",
        "malformed/jdec__afl__id_000961_sync_jpeg9_src_002802.jpg",
        "conformance/jdec__mozilla__jpg-gray.jpg",
    ];
    let bytes = test_files(&files);
    let transform = gpuprep::Transform {
        resize: Some(gpuprep::Resize::ShorterSide(64)),
        ..Default::default()
    };
    (bytes, transform)
}

/// `Batching::max_bytes` closes batches early: with a budget of one byte every image runs
/// alone, and the results are still the CPU reference's.
#[test]
fn batch_byte_limit_splits_batches() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let (bytes, transform) = mixed_inputs();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let limits = Limits::default();
    let run = |max_bytes| {
        let options = StreamOptions {
            batching: Batching {
                images: 64,
                max_bytes,
                ..Batching::default()
            },
            ..StreamOptions::new(&transform, &limits, 64)
        };
        pipeline.preprocess_many(&inputs, &options)
    };
    let tight = run(1);
    let roomy = run(Batching::default().max_bytes);
    assert!(
        tight.batches.iter().all(|b| b.images == 1),
        "one image per batch"
    );
    assert_eq!(tight.batches.len(), inputs.len());
    assert!(
        roomy.batches.len() < inputs.len(),
        "{} batches",
        roomy.batches.len()
    );
    for (i, input) in inputs.iter().enumerate() {
        let expected = gpuprep::preprocess(input, &transform, &Limits::default());
        for result in [&tight.results[i], &roomy.results[i]] {
            match (result, &expected) {
                (Ok(tensor), Ok(expected)) => assert!(tensor == expected, "image {i}"),
                (Err(e), Err(expected)) => assert_eq!(e.to_string(), expected.to_string()),
                _ => panic!("image {i}: {result:?} {expected:?}"),
            }
        }
    }
}

/// A batch without a single image for stage 0 (progressive files only) on a fresh pipeline,
/// whose pool has no larger arena to lend: its arenas still bind, and the tensors, full size
/// and draft, are the CPU reference's.
#[test]
fn batches_of_progressive_files_alone_are_the_reference() {
    let Some(gpu) = gpu() else { return };
    let files = [
        "conformance/jdec__mozilla__jpg-progressive.jpg",
        "conformance/jdec__progressive3.jpg",
    ];
    let bytes = test_files(&files);
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    for draft in [false, true] {
        let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
        let transform = gpuprep::Transform {
            draft,
            ..gpuprep::Transform::exact(32, 32)
        };
        let limits = Limits::default();
        let streamed =
            pipeline.preprocess_many(&inputs, &StreamOptions::new(&transform, &limits, 64));
        for (i, result) in streamed.results.iter().enumerate() {
            let expected = gpuprep::preprocess(inputs[i], &transform, &limits).unwrap();
            let tensor = result
                .as_ref()
                .unwrap_or_else(|e| panic!("{} (draft {draft}): {e}", files[i]));
            assert!(*tensor == expected, "{} (draft {draft})", files[i]);
        }
    }
}

/// Tensors kept on the device: every image lands exactly once, in some batch, either as a
/// tensor whose bytes on the GPU are the CPU reference's (copied back here, inside the consumer,
/// as a model on the device would read them) or as the reference's error.
#[test]
fn tensors_kept_on_the_device_are_the_reference() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let (bytes, _) = mixed_inputs();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let transform = gpuprep::Transform {
        resize: Some(gpuprep::Resize::ShorterSide(64)),
        ..gpuprep::Transform::tensor(gpuprep::Normalize::IMAGENET)
    };
    let limits = Limits::default();
    let mut seen = vec![0; inputs.len()];
    let mut tensors = 0;
    let call = std::time::Instant::now();
    let mut consuming = std::time::Duration::ZERO;
    let stats = pipeline.preprocess_on_device(
        &inputs,
        &StreamOptions::new(&transform, &limits, 2),
        |batch| {
            let consumer_start = std::time::Instant::now();
            tensors += check_device_batch(&gpu, &batch, &inputs, &transform, &mut seen);
            consuming += consumer_start.elapsed();
        },
    );
    let call = call.elapsed();
    assert_eq!(seen, vec![1; inputs.len()], "each image once");
    // Each batch's encoded bytes, and how long the consumer waited for it: never while it was
    // busy with a batch (its checks here take most of the call), and the first batch had to be
    // decoded and run first.
    let bytes_in: u64 = stats.iter().map(|s| s.bytes_in).sum();
    assert_eq!(bytes_in, inputs.iter().map(|b| b.len() as u64).sum::<u64>());
    let waited: std::time::Duration = stats.iter().map(|s| s.consumer_waited).sum();
    assert!(stats[0].consumer_waited > std::time::Duration::ZERO);
    assert!(
        waited + consuming <= call,
        "waited {waited:?} + consuming {consuming:?} > the call's {call:?}"
    );
    let decodable = inputs
        .iter()
        .filter(|b| gpuprep::preprocess(b, &transform, &limits).is_ok())
        .count();
    assert_eq!(tensors, decodable);
    assert!(decodable < inputs.len(), "some images fail");
    assert!(stats.len() >= 3, "{} batches", stats.len());
}

/// Checks one batch kept on the device against the CPU reference (its tensors' bytes, copied
/// back here as a model on the device would read them, and its failures), counting each of its
/// images in `seen`; returns how many tensors it had.
fn check_device_batch(
    gpu: &Gpu,
    batch: &gpuprep::gpu::DeviceBatch<'_>,
    inputs: &[&[u8]],
    transform: &gpuprep::Transform,
    seen: &mut [usize],
) -> usize {
    let limits = Limits::default();
    for (i, e) in &batch.failed {
        seen[*i] += 1;
        let expected = gpuprep::preprocess(inputs[*i], transform, &limits).unwrap_err();
        assert_eq!(e.to_string(), expected.to_string(), "image {i}");
    }
    let Some(buffer) = batch.buffer else {
        panic!("the GPU failed a batch")
    };
    let bytes = read_whole_buffer(gpu, buffer);
    for tensor in &batch.tensors {
        seen[tensor.index] += 1;
        let expected = gpuprep::preprocess(inputs[tensor.index], transform, &limits)
            .unwrap_or_else(|e| panic!("image {}: {e}", tensor.index));
        assert_eq!(tensor.shape, expected.shape, "image {}", tensor.index);
        let gpuprep::TensorData::F32(values) = &expected.data else {
            panic!("float32 expected")
        };
        let expected: &[u8] = bytemuck::cast_slice(values);
        let start = tensor.offset as usize;
        assert!(
            bytes[start..start + expected.len()] == *expected,
            "image {}",
            tensor.index
        );
    }
    batch.tensors.len()
}

/// Batches decoded while the GPU is behind go to it together, several to a submission (on
/// lavapipe the GPU is always behind): each is still handed over as a batch of its own, of
/// the batch size, and its tensors and failures are the reference's.
#[test]
fn batches_waiting_for_the_gpu_share_a_submission() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let (bytes, _) = mixed_inputs();
    let inputs: Vec<&[u8]> = bytes
        .iter()
        .cycle()
        .take(4 * bytes.len())
        .map(Vec::as_slice)
        .collect();
    let transform = gpuprep::Transform {
        resize: Some(gpuprep::Resize::ShorterSide(64)),
        ..gpuprep::Transform::tensor(gpuprep::Normalize::IMAGENET)
    };
    let limits = Limits::default();
    let options = StreamOptions {
        batching: Batching {
            submission_images: 12,
            ..Batching::of(3)
        },
        ..StreamOptions::new(&transform, &limits, 3)
    };
    let mut seen = vec![0; inputs.len()];
    let mut sizes = Vec::new();
    let stats = pipeline.preprocess_on_device(&inputs, &options, |batch| {
        sizes.push(batch.tensors.len() + batch.failed.len());
        check_device_batch(&gpu, &batch, &inputs, &transform, &mut seen);
    });
    assert_eq!(seen, vec![1; inputs.len()], "each image once");
    assert!(
        sizes.iter().all(|&n| (1..=3).contains(&n)),
        "batch sizes {sizes:?}"
    );
    let together: Vec<usize> = stats.iter().map(|s| s.submitted_with).collect();
    assert!(
        together.iter().all(|&k| (1..=4).contains(&k)),
        "{together:?}"
    );
    assert!(
        together.iter().any(|&k| k > 1),
        "no batches went together: {together:?}"
    );
    // Batches that went together follow each other and agree on how many they were.
    let mut at = 0;
    while at < stats.len() {
        let k = stats[at].submitted_with;
        assert!(
            stats[at..at + k].iter().all(|s| s.submitted_with == k),
            "{together:?}"
        );
        at += k;
    }
}

/// One pipeline serves several threads at once (it is `Send + Sync`), each getting exact results.
#[test]
fn one_pipeline_serves_concurrent_callers() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let (bytes, transform) = mixed_inputs();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let expected: Vec<_> = inputs
        .iter()
        .map(|input| gpuprep::preprocess(input, &transform, &Limits::default()).ok())
        .collect();
    std::thread::scope(|scope| {
        let callers: Vec<_> = (0..4)
            .map(|caller| {
                let (pipeline, inputs, transform) = (&pipeline, &inputs, &transform);
                scope.spawn(move || {
                    // Each caller its own order, so that batches differ between them.
                    let mut order: Vec<usize> = (0..inputs.len()).collect();
                    order.rotate_left(caller);
                    let mine: Vec<&[u8]> = order.iter().map(|&i| inputs[i]).collect();
                    let limits = Limits::default();
                    let streamed =
                        pipeline.preprocess_many(&mine, &StreamOptions::new(transform, &limits, 2));
                    (order, streamed.results)
                })
            })
            .collect();
        for caller in callers {
            let (order, results) = caller.join().expect("no panic");
            for (result, i) in results.iter().zip(order) {
                assert!(result.as_ref().ok() == expected[i].as_ref(), "image {i}");
            }
        }
    });
}

/// A lost device (here destroyed on purpose) fails every image with a `Gpu` error: no panic in
/// a wgpu callback, no hang, and the pipeline object stays usable for reporting.
#[test]
fn a_lost_device_is_an_error_for_every_image() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let (bytes, transform) = mixed_inputs();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    gpu.device.destroy();
    let streamed = pipeline.preprocess_many(
        &inputs,
        &StreamOptions::new(&transform, &Limits::default(), 2),
    );
    for (i, (result, input)) in streamed.results.iter().zip(&inputs).enumerate() {
        let on_cpu = gpuprep::preprocess(input, &transform, &Limits::default());
        match (result, on_cpu) {
            (Err(gpuprep::Error::Gpu(message)), Ok(_)) => println!("image {i}: {message}"),
            (Err(e), Err(on_cpu)) => assert_eq!(e.to_string(), on_cpu.to_string()),
            (other, _) => panic!("image {i}: {:?}", other.as_ref().map(|t| t.shape)),
        }
    }
}

/// A device that binds little (256 KiB per storage binding): images too large for it fail alone
/// with an error saying so, the others stay exact.
#[test]
fn images_larger_than_the_device_binds_fail_alone() {
    use gpuprep::wgpu;
    if gpu().is_none() {
        return;
    }
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default())).unwrap();
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: 256 << 10,
        ..adapter.limits()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: limits,
        ..Default::default()
    }))
    .unwrap();
    let pipeline = GpuPipeline::new(&device, &queue);
    let (bytes, transform) = mixed_inputs();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let streamed = pipeline.preprocess_many(
        &inputs,
        &StreamOptions::new(&transform, &Limits::default(), 64),
    );
    let (mut exact, mut refused) = (0, 0);
    for (i, (result, input)) in streamed.results.iter().zip(&inputs).enumerate() {
        let expected = gpuprep::preprocess(input, &transform, &Limits::default());
        match (result, expected) {
            (Ok(tensor), Ok(expected)) => {
                assert!(tensor == &expected, "image {i}");
                exact += 1;
            }
            (Err(gpuprep::Error::Gpu(gpuprep::GpuError::ImageTooLarge { .. })), Ok(_)) => {
                refused += 1;
            }
            (Err(_), Err(_)) => {}
            (result, _) => panic!("image {i}: {:?}", result.as_ref().map(|t| t.shape)),
        }
    }
    assert!(exact > 0 && refused > 0, "{exact} exact, {refused} refused");
}

/// Files cut short and read with `load_truncated`: stage 0 decodes their Huffman data on the GPU
/// until it runs out, gives up on them, and the loader redoes them in place from the CPU
/// decoder; whole files go through stage 0 beside them. Every tensor is the CPU reference's,
/// read back and kept on the device.
#[test]
fn images_stage_0_gives_up_on_are_redone_exactly() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let dir = common::manifest_dir().join("tests/data/photos");
    let mut bytes = Vec::new();
    for name in [
        "mpl__grace_hopper.jpg",
        "sklearn__china.jpg",
        "exifsamples__kodak-dc240.jpg",
    ] {
        let whole = std::fs::read(dir.join(name)).unwrap();
        bytes.push(whole[..whole.len() / 2].to_vec());
        bytes.push(whole[..whole.len() * 9 / 10].to_vec());
        bytes.push(whole);
    }
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let limits = Limits {
        load_truncated: true,
        ..Limits::default()
    };
    let transform = gpuprep::Transform::exact(96, 80);
    let streamed = pipeline.preprocess_many(&inputs, &StreamOptions::new(&transform, &limits, 4));
    let timings = streamed.batches.iter().map(|b| &b.gpu_timings);
    let on_gpu: usize = timings.clone().map(|t| t.huffman_on_gpu).sum();
    let redone: usize = timings.map(|t| t.redone_on_cpu).sum();
    assert_eq!(on_gpu, inputs.len(), "every file went to stage 0");
    assert_eq!(redone, 6, "the cut files were given up and redone");
    let mut kept: Vec<Option<Vec<u8>>> = vec![None; inputs.len()];
    pipeline.preprocess_on_device(
        &inputs,
        &StreamOptions::new(&transform, &limits, 4),
        |batch| {
            let bytes = read_whole_buffer(&gpu, batch.buffer.expect("the batch ran"));
            for tensor in &batch.tensors {
                // float32 elements.
                let len = tensor.shape.iter().product::<usize>() * 4;
                let start = tensor.offset as usize;
                kept[tensor.index] = Some(bytes[start..start + len].to_vec());
            }
        },
    );
    for (i, input) in inputs.iter().enumerate() {
        let expected = gpuprep::preprocess(input, &transform, &limits).unwrap();
        let tensor = streamed.results[i].as_ref().unwrap();
        assert!(tensor == &expected, "image {i}, read back");
        let gpuprep::TensorData::F32(values) = &expected.data else {
            panic!("float32 expected")
        };
        assert!(
            kept[i].as_deref() == Some(bytemuck::cast_slice(values)),
            "image {i}, kept on the device"
        );
    }
}

/// All of `buffer`, copied back from the device.
fn read_whole_buffer(gpu: &Gpu, buffer: &wgpu::Buffer) -> Vec<u8> {
    let readback = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, buffer.size());
    gpu.queue.submit([encoder.finish()]);
    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    gpu.device
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    let bytes = readback.slice(..).get_mapped_range().unwrap().to_vec();
    bytes
}

/// GaussianBlur's GPU sums on large outputs: a 280x280 crop with a 31x31 kernel (near the most a
/// lane of the colour stage may loop on Mesa's llvmpipe, whose shaders stop looping after 65,535
/// iterations in all) is the CPU reference's, bit for bit; a 600x512 one is too, and on llvmpipe
/// refused by name (`GpuError::LoopLimit`), never left half blurred.
#[test]
fn large_blurs_are_exact_or_refused_by_name() {
    let Some(gpu) = gpu() else { return };
    let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
    let bytes = test_files(&["photos/mpl__grace_hopper.jpg"]);
    let llvmpipe = gpu.info.driver == "llvmpipe" || gpu.info.name.starts_with("llvmpipe");
    for (crop, fits) in [((280, 280), true), ((600, 512), !llvmpipe)] {
        let transform = gpuprep::Transform {
            center_crop: Some(crop),
            gaussian_blur: Some(gpuprep::GaussianBlur {
                sigma: (3.0, 3.0),
                ..gpuprep::GaussianBlur::new(31)
            }),
            ..gpuprep::Transform::default()
        };
        let batch = pipeline
            .preprocess_batch(&[bytes[0].as_slice()], &transform, &Limits::default())
            .unwrap();
        if !fits {
            match &batch.outcomes[0] {
                Err(gpuprep::Error::Gpu(gpuprep::GpuError::LoopLimit { iterations, .. })) => {
                    assert!(*iterations > 60_000)
                }
                other => panic!("{crop:?}: not refused for llvmpipe's loops: {other:?}"),
            }
            continue;
        }
        let tensors = batch.read_back(&gpu.device, &gpu.queue).unwrap();
        let reference = gpuprep::preprocess(&bytes[0], &transform, &Limits::default()).unwrap();
        let (gpu_bytes, cpu_bytes) = (
            tensors[0].as_ref().unwrap().to_le_bytes(),
            reference.to_le_bytes(),
        );
        let differ = gpu_bytes
            .iter()
            .zip(&cpu_bytes)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differ, 0, "{crop:?} on {}", gpu.info.name);
    }
}
