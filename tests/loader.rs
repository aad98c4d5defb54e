//! The training loader: torch's DistributedSampler split, torchvision's ImageFolder order and
//! labels, WebDataset shards written by the webdataset package, and batches equal to the images
//! preprocessed one by one, on the CPU and on the GPU.

mod common;

use gpuprep::loader::order::Split;
use gpuprep::loader::{Batch, Loader, LoaderOptions, ShardUrl, Source, WaitedFor};
use gpuprep::{Backend, Limits, Sample, Tensor, TensorData, Transform};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// torch 2.11's `DistributedSampler(range(n), num_replicas=w, rank=r, shuffle=False,
/// drop_last=d)` lists, recorded by tools/distributed_sampler.py: 96 cases, every rank.
#[test]
fn splits_equal_distributed_samplers_recorded_lists() {
    let text = std::fs::read_to_string(
        common::manifest_dir().join("tests/goldens/distributed_sampler.json"),
    )
    .unwrap();
    let goldens: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = goldens["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 96);
    for case in cases {
        let n = case["n"].as_u64().unwrap() as usize;
        let world_size = case["world_size"].as_u64().unwrap() as usize;
        let drop_last = case["drop_last"].as_bool().unwrap();
        for (rank, expected) in case["ranks"].as_array().unwrap().iter().enumerate() {
            let expected: Vec<u64> = expected
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let split = Split {
                shuffle: false,
                seed: 0,
                rank,
                world_size,
                drop_last,
            };
            assert_eq!(split.indices(n, 0), expected, "{case}");
            assert_eq!(split.per_rank(n), expected.len());
        }
    }
}

/// A fresh folder under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = common::manifest_dir()
        .join("target/loader-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn photo(name: &str) -> PathBuf {
    common::manifest_dir().join("tests/data/photos").join(name)
}

fn put(root: &Path, at: &str, from: &Path) {
    let to = root.join(at);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// torchvision's ImageFolder: classes in sorted order, files with an image extension in
/// `sorted(os.walk(class))` order (a class's own files, then its subfolders'), other files and
/// loose files in the root left out.
#[test]
fn image_folder_orders_and_labels_as_torchvision() {
    let root = scratch("image-folder-order");
    let hopper = photo("mpl__grace_hopper.jpg");
    for at in [
        "b_class/z.jpg",
        "b_class/A.JPG",
        "b_class/notes.txt",
        "b_class/sub/c.png",
        "a_class/x.jpeg",
        "loose.jpg",
    ] {
        put(&root, at, &hopper);
    }
    let (items, classes) = gpuprep::loader::dataset::image_folder(&root).unwrap();
    assert_eq!(classes, ["a_class", "b_class"]);
    let listed: Vec<(String, i64)> = items
        .iter()
        .map(|i| {
            let rel = i.path.strip_prefix(&root).unwrap();
            (rel.to_string_lossy().into_owned(), i.label)
        })
        .collect();
    let expected = [
        ("a_class/x.jpeg", 0),
        ("b_class/A.JPG", 1),
        ("b_class/z.jpg", 1),
        ("b_class/sub/c.png", 1),
    ];
    assert_eq!(listed, expected.map(|(p, l)| (p.to_string(), l)).to_vec());
}

/// An ImageFolder tree of the test photos, three classes.
fn photo_tree(name: &str) -> (PathBuf, usize) {
    let root = scratch(name);
    let photos: Vec<PathBuf> = std::fs::read_dir(common::manifest_dir().join("tests/data/photos"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let mut n = 0;
    for (i, path) in photos.iter().enumerate() {
        for copy in 0..2 {
            let class = ["cat", "dog", "emu"][(i + copy) % 3];
            put(&root, &format!("{class}/{copy}-{i}.jpg"), path);
            n += 1;
        }
    }
    (root, n)
}

fn train() -> Transform {
    Transform {
        color_jitter: Some(gpuprep::ColorJitter::new(0.4, 0.4, 0.4, 0.0)),
        grayscale: Some(0.2),
        ..Transform::imagenet_train()
    }
}

/// Image `k` of a batch as a tensor.
fn image(batch: &Batch, k: usize) -> Tensor {
    let [_, a, b, c] = batch.shape;
    let per = a * b * c;
    let TensorData::F32(data) = &*batch.data else {
        panic!("f32 asked for")
    };
    Tensor {
        shape: [a, b, c],
        data: TensorData::F32(data[k * per..(k + 1) * per].to_vec()),
        params: batch.params[k].clone(),
    }
}

/// Every batch's images equal the CPU backend's for the same sample, epoch and seed; labels
/// follow the folders; two ranks cover each sample exactly once an epoch; epochs differ.
fn check_loader(backend: impl Fn() -> Backend, what: &str) {
    // A tree of its own: the tests run side by side.
    let (root, n) = photo_tree(&format!("photos-{what}"));
    let (items, _) = gpuprep::loader::dataset::image_folder(&root).unwrap();
    let transform = train();
    let mut seen = Vec::new();
    let mut orders = Vec::new();
    for epoch in 0..2 {
        let mut all = Vec::new();
        for rank in 0..2 {
            let options = LoaderOptions {
                split: Split {
                    shuffle: true,
                    seed: 17,
                    rank,
                    world_size: 2,
                    drop_last: false,
                },
                ..LoaderOptions::new(4)
            };
            let source = Source::ImageFolder(root.clone());
            let limits = Limits::default();
            let loader = Loader::new(source, &transform, backend(), &limits, options).unwrap();
            assert_eq!(loader.len(), n.div_ceil(2).div_ceil(4));
            let mut batches = 0;
            let mut running = loader.epoch(epoch);
            for batch in running.by_ref() {
                let batch = batch.unwrap();
                batches += 1;
                assert!(batch.failed.is_empty(), "{:?}", batch.failed);
                for (k, &index) in batch.indices.iter().enumerate() {
                    let item = &items[index as usize];
                    assert_eq!(batch.labels[k], item.label);
                    let bytes = std::fs::read(&item.path).unwrap();
                    let one = Transform {
                        seed: 17,
                        epoch,
                        ..transform
                    };
                    let expected = Backend::Cpu
                        .preprocess_sample(&bytes, &one, &Sample::Index(index), &limits)
                        .unwrap();
                    assert!(
                        image(&batch, k) == expected,
                        "{what}: sample {index}, epoch {epoch}"
                    );
                    seen.push(batch.params[k].clone());
                }
                all.extend_from_slice(&batch.indices);
            }
            assert_eq!(batches, loader.len());
            // A GPU stream waits for the feeder's first samples and for its last submission
            // at least; the CPU backend has no stream.
            let stats = running.stats();
            let stream = stats.stream;
            if what == "gpu" {
                assert!(stream[WaitedFor::Samples] > Duration::ZERO, "{stream:?}");
                assert!(stream[WaitedFor::Gpu] > Duration::ZERO, "{stream:?}");
                // Each submission carries at least one image; the stream's first batches are
                // small (and it submits what is decoded), so there can be more of them than
                // the loader's batches.
                assert!((1..=stats.images).contains(&stats.submissions), "{stats:?}");
                assert!(stats.packing > std::time::Duration::ZERO, "{stats:?}");
                assert!(stats.landing > std::time::Duration::ZERO, "{stats:?}");
            } else {
                assert_eq!(stream, Default::default());
                assert_eq!((stats.submissions, stats.landing), (0, Default::default()));
            }
        }
        orders.push(all.clone());
        all.sort_unstable();
        assert_eq!(
            all,
            (0..n as u64).collect::<Vec<_>>(),
            "{what}: each sample once"
        );
    }
    assert_ne!(orders[0], orders[1], "a new order each epoch");
    let crops: std::collections::HashSet<_> = seen.iter().map(|p| p.crop).collect();
    assert!(crops.len() > n, "each sample and epoch its own crop");
}

#[test]
fn cpu_loader_batches_equal_single_images() {
    check_loader(|| Backend::Cpu, "cpu");
}

#[test]
fn gpu_loader_batches_equal_the_cpu_backends() {
    if common::gpu().is_none() {
        return;
    }
    check_loader(|| Backend::gpu().unwrap(), "gpu");
}

/// Shards written by webdataset's TarWriter read back in order, with their labels (`.cls` and
/// `.json`); the corrupt image fails alone, on both backends.
#[test]
fn webdataset_shards_read_back_in_order_with_labels() {
    check_webdataset(Backend::Cpu, "cpu");
    if common::gpu().is_some() {
        check_webdataset(Backend::gpu().unwrap(), "gpu");
    }
}

fn check_webdataset(backend: Backend, what: &str) {
    let dir = common::manifest_dir().join("tests/data/webdataset");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let shards = vec![dir.join("shard-000000.tar"), dir.join("shard-000001.tar")];
    let transform = Transform {
        resize: Some(gpuprep::Resize::Exact {
            width: 24,
            height: 16,
        }),
        ..Transform::default()
    };
    let options = LoaderOptions {
        split: Split::single(false, 0),
        ..LoaderOptions::new(3)
    };
    let loader = Loader::new(
        Source::local_shards(shards),
        &transform,
        backend,
        &Limits::default(),
        options,
    )
    .unwrap();
    let mut got = Vec::new();
    let mut failed = Vec::new();
    for batch in loader.epoch(0) {
        let batch = batch.unwrap();
        assert_eq!(batch.shape[1..], [16, 24, 3]);
        got.extend(
            batch
                .indices
                .iter()
                .zip(&batch.labels)
                .map(|(&i, &l)| (i, l)),
        );
        failed.extend(batch.failed.into_iter().map(|(i, e)| (i, e.to_string())));
    }
    let samples = expected["samples"].as_array().unwrap();
    let mut position = [0u64; 2];
    let mut want = Vec::new();
    let mut want_failed = Vec::new();
    for s in samples {
        let shard = s["shard"].as_u64().unwrap() as usize;
        let index = (shard as u64) << 32 | position[shard];
        position[shard] += 1;
        match s["image"].as_str() {
            Some(_) => want.push((index, s["label"].as_i64().unwrap())),
            None => want_failed.push(index),
        }
    }
    assert_eq!(got, want, "{what}");
    assert_eq!(
        failed.iter().map(|f| f.0).collect::<Vec<_>>(),
        want_failed,
        "{what}"
    );
    assert!(
        failed[0].1.contains("sample1002"),
        "{what}: {}",
        failed[0].1
    );
}

/// With shuffling, shards and the buffer reorder an epoch, each sample still once.
#[test]
fn shuffled_shards_keep_every_sample_once() {
    let dir = common::manifest_dir().join("tests/data/webdataset");
    let shards = vec![dir.join("shard-000000.tar"), dir.join("shard-000001.tar")];
    let transform = Transform {
        center_crop: Some((8, 8)),
        ..Transform::default()
    };
    let options = LoaderOptions {
        split: Split::single(true, 5),
        shuffle_buffer: 4,
        ..LoaderOptions::new(2)
    };
    let loader = Loader::new(
        Source::local_shards(shards),
        &transform,
        Backend::Cpu,
        &Limits::default(),
        options,
    )
    .unwrap();
    let mut indices: Vec<u64> = loader
        .epoch(0)
        .flat_map(|b| {
            let b = b.unwrap();
            let failed: Vec<u64> = b.failed.iter().map(|f| f.0).collect();
            b.indices.into_iter().chain(failed)
        })
        .collect();
    let in_order: Vec<u64> = (0..5).chain((0..4).map(|p| 1 << 32 | p)).collect();
    assert_ne!(indices, in_order);
    indices.sort_unstable();
    assert_eq!(indices, in_order);
}

#[test]
fn a_loader_needs_one_output_size() {
    let e = Loader::new(
        Source::Files(vec![photo("mpl__grace_hopper.jpg")]),
        &Transform::default(),
        Backend::Cpu,
        &Limits::default(),
        LoaderOptions::new(2),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("one output size"), "{e}");
}

/// A stacked batch holds, in input order, exactly the tensors the images give one by one; the
/// images that fail (a truncated file, bytes that are no image) leave no slot behind.
fn check_stacked(backend: &Backend, what: &str) {
    let photos: Vec<Vec<u8>> = [
        "mpl__grace_hopper.jpg",
        "sklearn__china.jpg",
        "mate__FreshFlower.jpg",
    ]
    .iter()
    .map(|name| std::fs::read(photo(name)).unwrap())
    .collect();
    let truncated = photos[1][..photos[1].len() / 3].to_vec();
    let images: Vec<&[u8]> = vec![&photos[0], b"no image", &photos[1], &truncated, &photos[2]];
    let indices = [7, 8, 9, 10, 11];
    let transform = train();
    let limits = Limits::default();
    let samples = gpuprep::Samples::Indices(&indices);
    let stacked = backend
        .preprocess_stacked(&images, &transform, samples, &limits)
        .unwrap();
    assert_eq!(stacked.count(), 3, "{what}");
    let mut k = 0;
    for (i, outcome) in stacked.outcomes.iter().enumerate() {
        let one = Backend::Cpu.preprocess_sample(
            images[i],
            &transform,
            &Sample::Index(indices[i]),
            &limits,
        );
        match (outcome, one) {
            (Ok(params), Ok(expected)) => {
                let per: usize = stacked.shape.iter().product();
                let TensorData::F32(data) = &stacked.data else {
                    panic!("f32 asked for")
                };
                assert!(
                    data[k * per..(k + 1) * per] == *expected_f32(&expected),
                    "{what}: image {i}"
                );
                assert_eq!(*params, expected.params, "{what}: image {i}");
                k += 1;
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}: image {i}"),
            (a, b) => panic!("{what}: image {i}: stacked {a:?}, alone {b:?}"),
        }
    }
    let TensorData::F32(data) = &stacked.data else {
        panic!("f32 asked for")
    };
    assert_eq!(
        data.len(),
        3 * stacked.shape.iter().product::<usize>(),
        "{what}"
    );
}

fn expected_f32(tensor: &Tensor) -> &[f32] {
    match &tensor.data {
        TensorData::F32(v) => v,
        _ => panic!("f32 asked for"),
    }
}

#[test]
fn stacked_batches_close_up_failed_images() {
    check_stacked(&Backend::Cpu, "cpu");
    if common::gpu().is_some() {
        check_stacked(&Backend::gpu().unwrap(), "gpu");
    }
}

/// On the GPU a batch lands in an array of the loader's: one held keeps its elements while later
/// epochs run, and ones dropped are what later batches land in. The stream runs one epoch
/// ahead of the consumer at most, so however many epochs follow, the arrays made stay within
/// the held batches' and two epochs' worth.
#[test]
fn gpu_batches_held_keep_their_arrays_and_dropped_ones_are_reused() {
    if common::gpu().is_none() {
        return;
    }
    let (root, n) = photo_tree("photos-arrays");
    let (items, _) = gpuprep::loader::dataset::image_folder(&root).unwrap();
    let options = LoaderOptions::new(2);
    let source = Source::ImageFolder(root);
    let limits = Limits::default();
    let loader = Loader::new(source, &train(), Backend::gpu().unwrap(), &limits, options).unwrap();
    assert_eq!(loader.memory(), gpuprep::loader::HostMemory::Pageable);
    let held: Vec<Batch> = loader.epoch(0).map(|b| b.unwrap()).collect();
    assert_eq!(held.len(), n / 2);
    let copies: Vec<TensorData> = held.iter().map(|b| (*b.data).clone()).collect();
    // Each batch held needs its own array; the stream may have begun the next epoch too.
    let made = loader.arrays_made();
    assert!((held.len()..=2 * held.len()).contains(&made), "{made}");
    let one = Transform {
        seed: 0,
        epoch: 1,
        ..train()
    };
    for batch in loader.epoch(1) {
        let batch = batch.unwrap();
        for (k, &index) in batch.indices.iter().enumerate() {
            let bytes = std::fs::read(&items[index as usize].path).unwrap();
            let sample = Sample::Index(index);
            let expected = Backend::Cpu.preprocess_sample(&bytes, &one, &sample, &limits);
            assert!(image(&batch, k) == expected.unwrap(), "sample {index}");
        }
    }
    for (batch, copy) in held.iter().zip(&copies) {
        assert!(*batch.data == *copy, "a held batch is left as it was");
    }
    drop(held);
    for epoch in 2..12 {
        for batch in loader.epoch(epoch) {
            batch.unwrap();
        }
    }
    // Without reuse, each of the ten epochs would have made n / 2 arrays more.
    let made = loader.arrays_made();
    assert!(made <= 3 * (n / 2), "{made} arrays for {n} images");
}

/// Batches of `batch_size`, shuffled from `seed`, on one process.
fn shuffled(seed: u64, batch_size: usize) -> LoaderOptions {
    LoaderOptions {
        split: Split {
            shuffle: true,
            seed,
            rank: 0,
            world_size: 1,
            drop_last: false,
        },
        ..LoaderOptions::new(batch_size)
    }
}

/// The batches of `loader`'s epoch `epoch`, each as (indices, its bytes) however it was handed
/// over: a host array's bytes, or a device buffer's read back.
fn epoch_bytes(loader: &Loader, epoch: u64) -> Vec<(Vec<u64>, Vec<u8>)> {
    loader
        .epoch(epoch)
        .map(|batch| {
            let batch = batch.unwrap();
            let bytes = match &batch.device {
                Some(array) => array.to_host().unwrap(),
                None => batch.data.as_bytes().to_vec(),
            };
            (batch.indices.clone(), bytes)
        })
        .collect()
}

/// Handed over on the device, a step's tensors are copied GPU to GPU into one buffer of the
/// loader's: its bytes are the host path's bytes (failed samples closed up the same way); a
/// batch held keeps its buffer while later epochs run, and dropped ones are what later batches
/// land in. Where CUDA is asked for and cannot be had (CI's machines), the batches come in host
/// memory, the same bits, and the loader says why.
#[cfg(target_os = "linux")]
#[test]
fn device_batches_equal_host_batches_and_keep_the_rings_rules() {
    use gpuprep::loader::{HandedOver, Handoff};
    if common::gpu().is_none() {
        return;
    }
    let (root, n) = photo_tree("photos-device");
    // A sample that fails: its batch closes up on the device as on the host.
    std::fs::write(root.join("cat/zz-broken.jpg"), b"no image").unwrap();
    let limits = Limits::default();
    let make = |handoff| {
        let options = LoaderOptions {
            handoff,
            ..shuffled(3, 3)
        };
        let source = Source::ImageFolder(root.clone());
        Loader::new(source, &train(), Backend::gpu().unwrap(), &limits, options).unwrap()
    };
    let host = make(Handoff::Host);
    let device = make(Handoff::Device);
    assert_eq!(device.handed_over(), HandedOver::Device);
    let expected = epoch_bytes(&host, 0);
    assert_eq!(expected.iter().map(|(i, _)| i.len()).sum::<usize>(), n);
    assert!(
        epoch_bytes(&device, 0) == expected,
        "device batches are the host's bits"
    );

    let held: Vec<Batch> = device.epoch(1).map(|b| b.unwrap()).collect();
    let held_steps = held.len();
    assert!(held
        .iter()
        .all(|b| b.device.is_some() && b.data.as_bytes().is_empty()));
    let copies: Vec<Vec<u8>> = held
        .iter()
        .map(|b| b.device.as_ref().unwrap().to_host().unwrap())
        .collect();
    assert!(epoch_bytes(&device, 2) == epoch_bytes(&host, 2));
    for (batch, copy) in held.iter().zip(&copies) {
        let now = batch.device.as_ref().unwrap().to_host().unwrap();
        assert!(now == *copy, "a held batch is left as it was");
    }
    drop(held);
    for epoch in 3..12 {
        epoch_bytes(&device, epoch);
    }
    // The held batches', two epochs' worth (the stream runs one ahead) and a buffer a batch
    // with a failed sample closes up into; without reuse, each of nine epochs would have made
    // as many as the held batches again.
    let made = device.arrays_made();
    let steps = held_steps;
    assert!(
        made <= 3 * steps + 2,
        "{made} buffers, {steps} steps an epoch"
    );
    // An epoch dropped after its first batch winds its stream down (joined on drop) before the
    // next epoch's stream submits on the device: the next epoch is still the host's bits.
    let first = device.epoch(6).next().unwrap().unwrap();
    drop(first);
    assert!(epoch_bytes(&device, 7) == epoch_bytes(&host, 7));
    // A batch may outlive its loader: its buffer stays until it is dropped.
    let kept = device.epoch(0).next().unwrap().unwrap();
    drop(device);
    let bytes = kept.device.as_ref().unwrap().to_host().unwrap();
    assert!(
        bytes == expected[0].1,
        "a batch outliving its loader keeps its bits"
    );
    drop(kept);

    let cuda = make(Handoff::Cuda(0));
    match cuda.handed_over() {
        HandedOver::Cuda { device } => {
            assert_eq!(device, 0);
            let batch = cuda.epoch(0).next().unwrap().unwrap();
            assert!(batch.device.as_ref().unwrap().cuda_pointer().is_some());
        }
        HandedOver::HostBecause(why) => {
            assert!(
                matches!(why, gpuprep::loader::HostReason::Handoff(_)),
                "{why}"
            );
            println!("CUDA hand-off not available here: {why}");
        }
        other => panic!("asked for CUDA, handed over in {other}"),
    }
    assert!(
        epoch_bytes(&cuda, 0) == expected,
        "the CUDA path's bits are the host path's"
    );
}

/// A GPU loader's stream runs on from an epoch iterated to its end into the epoch expected
/// next: the next one, or the same again once an epoch was asked for twice in a row. Whatever
/// the order epochs are asked for in, and however early one is left, each epoch's batches are
/// the CPU backend's for that epoch.
#[test]
fn a_gpu_stream_running_on_between_epochs_keeps_each_epochs_batches() {
    if common::gpu().is_none() {
        return;
    }
    let (root, n) = photo_tree("photos-running-on");
    let limits = Limits::default();
    let make = |backend| {
        let source = Source::ImageFolder(root.clone());
        Loader::new(source, &train(), backend, &limits, shuffled(5, 5)).unwrap()
    };
    let (gpu, cpu) = (make(Backend::gpu().unwrap()), make(Backend::Cpu));
    // In sequence, then the same epoch three times, then back to an earlier one and on.
    for epoch in [0, 1, 2, 3, 3, 3, 1, 2] {
        let expected = epoch_bytes(&cpu, epoch);
        // Every sample in the batches: none failed.
        assert_eq!(expected.iter().map(|(i, _)| i.len()).sum::<usize>(), n);
        assert!(epoch_bytes(&gpu, epoch) == expected, "epoch {epoch}");
    }
    // An epoch left after its first batch, then the one it would have run on into.
    let first = gpu.epoch(4).next().unwrap().unwrap();
    assert!(first.data.as_bytes() == epoch_bytes(&cpu, 4)[0].1.as_slice());
    drop(first);
    assert!(epoch_bytes(&gpu, 5) == epoch_bytes(&cpu, 5), "epoch 5");
    assert_ne!(epoch_bytes(&cpu, 5), epoch_bytes(&cpu, 6), "epochs differ");
}

/// A tar file at `path` holding `members` (name, bytes) in order, written with the tar crate.
fn write_tar(path: &Path, members: impl IntoIterator<Item = (String, Vec<u8>)>) {
    let mut tar = tar::Builder::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes.as_slice())
            .unwrap();
    }
    tar.finish().unwrap();
}

/// WebDataset shards of `sizes` samples each: sample `k` of shard `s` is a test photo (by
/// turns) with its `.cls` label `s`.
fn shards_of(name: &str, sizes: &[usize]) -> Vec<PathBuf> {
    let dir = scratch(name);
    let photos: Vec<Vec<u8>> = ["mpl__grace_hopper.jpg", "exifsamples__kodak-dc240.jpg"]
        .iter()
        .map(|p| std::fs::read(photo(p)).unwrap())
        .collect();
    sizes
        .iter()
        .enumerate()
        .map(|(s, &n)| {
            let path = dir.join(format!("shard-{s:06}.tar"));
            let members = (0..n).flat_map(|k| {
                [
                    (format!("s{s}k{k:04}.jpg"), photos[k % 2].clone()),
                    (format!("s{s}k{k:04}.cls"), s.to_string().into_bytes()),
                ]
            });
            write_tar(&path, members);
            path
        })
        .collect()
}

fn small() -> Transform {
    Transform {
        center_crop: Some((8, 8)),
        ..Transform::default()
    }
}

/// Shards go to ranks whole, yet every rank makes the same number of batches, `len()`, in
/// every epoch, shuffled or not, with and without `drop_last` (a DDP job's collectives would
/// otherwise wait for ever): a rank short of samples reads its shards again, one with more
/// stops at the count every rank reads.
#[test]
fn every_rank_makes_the_same_batches_over_uneven_shards() {
    let shards = shards_of("uneven-shards", &[10, 10, 10, 3, 7]);
    for world_size in [2, 3, 4] {
        for (shuffle, drop_last) in [(false, false), (false, true), (true, false), (true, true)] {
            let loaders: Vec<Loader> = (0..world_size)
                .map(|rank| {
                    let options = LoaderOptions {
                        split: Split {
                            shuffle,
                            seed: 3,
                            rank,
                            world_size,
                            drop_last,
                        },
                        shuffle_buffer: 4,
                        ..LoaderOptions::new(4)
                    };
                    let source = Source::local_shards(shards.clone());
                    Loader::new(source, &small(), Backend::Cpu, &Limits::default(), options)
                        .unwrap()
                })
                .collect();
            let per_rank = Split {
                shuffle,
                seed: 3,
                rank: 0,
                world_size,
                drop_last,
            }
            .per_rank(40);
            for epoch in 0..3 {
                let mut seen = std::collections::BTreeSet::new();
                for loader in &loaders {
                    let batches: Vec<Batch> = loader.epoch(epoch).map(Result::unwrap).collect();
                    let what = format!("world {world_size}, {shuffle}/{drop_last}, {epoch}");
                    assert_eq!(loader.samples_per_epoch(), per_rank, "{what}");
                    assert_eq!(batches.len(), loader.len(), "{what}");
                    let samples: usize = batches.iter().map(|b| b.indices.len()).sum();
                    let full = if drop_last {
                        per_rank / 4 * 4
                    } else {
                        per_rank
                    };
                    assert_eq!(samples, full, "{what}");
                    assert!(batches.iter().all(|b| b.failed.is_empty()), "{what}");
                    for batch in &batches {
                        for (&index, &label) in batch.indices.iter().zip(&batch.labels) {
                            assert_eq!(label as u64, index >> 32, "{what}");
                            seen.insert(index);
                        }
                    }
                }
                // Ranks short of samples repeat their own; without shuffling, the samples left
                // unread by ranks with more are said up front, the same every epoch (drop_last
                // drops each rank's short last batch besides).
                match loaders[0].unread_per_epoch() {
                    Some(unread) if drop_last => assert!(seen.len() <= 40 - unread),
                    Some(unread) => assert_eq!(seen.len(), 40 - unread, "world {world_size}"),
                    None => assert!(shuffle),
                }
                assert_eq!(loaders[0].unread_per_epoch().is_none(), shuffle);
            }
        }
    }
}

/// A source that cannot be read, or a split that leaves a rank without data, is an error when
/// the loader is made, not an empty epoch.
#[test]
fn sources_that_cannot_be_read_are_refused_up_front() {
    let make = |source: Source, world_size: usize| {
        let options = LoaderOptions {
            split: Split {
                shuffle: false,
                seed: 0,
                rank: 0,
                world_size,
                drop_last: false,
            },
            ..LoaderOptions::new(2)
        };
        Loader::new(source, &small(), Backend::Cpu, &Limits::default(), options)
    };
    let shards = shards_of("few-shards", &[3, 3]);
    let refused = |r: gpuprep::Result<Loader>| r.err().expect("refused").to_string();
    let e = refused(make(Source::local_shards(shards.clone()), 4));
    assert!(
        e.contains("2 shard(s) cannot be split between 4 ranks"),
        "{e}"
    );
    let missing = shards[0].with_file_name("shard-999999.tar");
    let e = refused(make(Source::local_shards(vec![missing]), 1));
    assert!(e.contains("shard-999999.tar"), "{e}");
    let e = refused(make(Source::Files(vec![photo("no-such-photo.jpg")]), 1));
    assert!(e.contains("no-such-photo.jpg"), "{e}");
    let e = refused(make(Source::Files(Vec::new()), 1));
    assert!(e.contains("at least one"), "{e}");
    let root = scratch("no-such-root").join("absent");
    let e = refused(make(Source::ImageFolder(root), 1));
    assert!(e.contains("absent"), "{e}");
    assert_eq!(make(Source::local_shards(shards), 2).unwrap().len(), 2);
    // An empty shard could leave a rank without samples in some epoch.
    let with_empty = shards_of("empty-shard", &[3, 0, 3]);
    let e = refused(make(Source::local_shards(with_empty), 1));
    assert!(
        e.contains("shard-000001.tar: the shard holds no sample"),
        "{e}"
    );
}

/// More failures in an epoch than the spare samples make up for end a topped-up epoch with an
/// error rather than short.
#[test]
fn an_epoch_whose_failures_outrun_the_spare_samples_ends_with_an_error() {
    let root = scratch("too-many-failed");
    for k in 0..6 {
        put(
            &root,
            &format!("a/good-{k}.jpg"),
            &photo("mpl__grace_hopper.jpg"),
        );
        std::fs::create_dir_all(root.join("b")).unwrap();
        std::fs::write(root.join(format!("b/bad-{k}.jpg")), b"\xff\xd8 not a JPEG").unwrap();
    }
    let options = LoaderOptions {
        split: Split {
            shuffle: false,
            seed: 0,
            rank: 0,
            world_size: 1,
            drop_last: true,
        },
        refill: true,
        ..LoaderOptions::new(4)
    };
    let source = Source::ImageFolder(root);
    let loader = Loader::new(source, &small(), Backend::Cpu, &Limits::default(), options).unwrap();
    assert_eq!(loader.len(), 3);
    let outcomes: Vec<_> = loader.epoch(0).collect();
    // 6 good samples and the 4 spare ones (the first 4, good): two full batches, then the error.
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes[..2]
        .iter()
        .all(|b| b.as_ref().unwrap().shape[0] == 4));
    let e = outcomes[2].as_ref().expect_err("short").to_string();
    assert!(e.contains("more samples of this epoch failed"), "{e}");
}

/// torchvision's ImageFolder raises for a class folder without an image; so does the loader.
#[test]
fn an_empty_class_folder_is_refused_as_torchvision_refuses_it() {
    let (root, _) = photo_tree("empty-class");
    std::fs::create_dir_all(root.join("yak")).unwrap();
    std::fs::write(root.join("yak/notes.txt"), "no image").unwrap();
    let e = gpuprep::loader::dataset::image_folder(&root)
        .expect_err("refused")
        .to_string();
    assert!(e.contains("found no valid file for the classes yak"), "{e}");
}

/// Sizes that would allocate without bound are refused before anything is allocated: a batch
/// of 10⁹ images, prefetch past its bound, an output of 100000×100000; the same transform is
/// refused by every entry point with the same message.
#[test]
fn sizes_past_their_bounds_are_errors_not_aborts() {
    let make = |batch_size: usize, prefetch: usize, transform: &Transform| {
        let options = LoaderOptions {
            prefetch,
            ..LoaderOptions::new(batch_size)
        };
        let source = Source::Files(vec![photo("mpl__grace_hopper.jpg")]);
        Loader::new(source, transform, Backend::Cpu, &Limits::default(), options)
            .err()
            .expect("refused")
    };
    let e = make(1_000_000_000, 2, &Transform::imagenet_train());
    assert!(matches!(e, gpuprep::Error::MemoryTooLarge { .. }), "{e}");
    let e = make(4, 1_000_000, &small());
    assert!(e.to_string().contains("prefetch"), "{e}");
    let huge = Transform {
        resize: Some(gpuprep::Resize::Exact {
            width: 100_000,
            height: 100_000,
        }),
        ..Transform::default()
    };
    assert!(matches!(
        make(1, 2, &huge),
        gpuprep::Error::OutputTooLarge { .. }
    ));
    let bytes = std::fs::read(photo("mpl__grace_hopper.jpg")).unwrap();
    let stacked = Backend::Cpu.preprocess_stacked(
        &[&bytes],
        &huge,
        gpuprep::Samples::Positions,
        &Limits::default(),
    );
    assert!(matches!(
        stacked,
        Err(gpuprep::Error::OutputTooLarge { .. })
    ));
    let flipped = Transform {
        horizontal_flip: Some(-1.0),
        ..small()
    };
    let from_loader = make(1, 2, &flipped).to_string();
    let stacked = Backend::Cpu
        .preprocess_stacked(
            &[&bytes],
            &flipped,
            gpuprep::Samples::Positions,
            &Limits::default(),
        )
        .expect_err("refused")
        .to_string();
    assert_eq!(from_loader, stacked);
    assert!(
        stacked.contains("horizontal_flip's probability"),
        "{stacked}"
    );
}

/// With `refill` (Python's errors="skip" with drop_last) every batch is full though samples fail
/// (a corrupt file, a truncated one, a file gone after the loader was made): a short batch takes
/// the last samples of the next, the epoch reads spare samples for the last, and the same
/// number of batches comes on both backends, every tensor the one its sample gives alone.
#[test]
fn refilled_batches_are_full_and_each_tensor_is_its_samples() {
    check_refill(|| Backend::Cpu, "cpu");
    if common::gpu().is_some() {
        check_refill(|| Backend::gpu().unwrap(), "gpu");
    }
}

fn check_refill(backend: impl Fn() -> Backend, what: &str) {
    let (root, _) = photo_tree(&format!("refill-{what}"));
    let corrupt = common::manifest_dir().join("tests/data/malformed");
    let bad: Vec<PathBuf> = std::fs::read_dir(&corrupt)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jpg"))
        .take(2)
        .collect();
    put(&root, "cat/zz-corrupt.jpg", &bad[0]);
    put(&root, "dog/zz-corrupt.jpg", &bad[1]);
    put(&root, "emu/zz-gone.jpg", &photo("mpl__grace_hopper.jpg"));
    let (items, _) = gpuprep::loader::dataset::image_folder(&root).unwrap();
    let transform = train();
    let options = LoaderOptions {
        split: Split {
            shuffle: true,
            seed: 5,
            rank: 0,
            world_size: 1,
            drop_last: true,
        },
        refill: true,
        ..LoaderOptions::new(4)
    };
    let source = Source::ImageFolder(root.clone());
    let limits = Limits::default();
    let loader = Loader::new(source, &transform, backend(), &limits, options).unwrap();
    std::fs::remove_file(root.join("emu/zz-gone.jpg")).unwrap();
    assert_eq!(loader.len(), items.len() / 4);
    for epoch in 0..2 {
        let mut failed = 0;
        let mut batches = 0;
        for batch in loader.epoch(epoch) {
            let batch = batch.unwrap();
            batches += 1;
            assert_eq!(batch.shape[0], 4, "{what}: every batch full");
            failed += batch.failed.len();
            for (k, &index) in batch.indices.iter().enumerate() {
                let item = &items[index as usize];
                assert_eq!(batch.labels[k], item.label);
                let one = Transform {
                    seed: 5,
                    epoch,
                    ..transform
                };
                let bytes = std::fs::read(&item.path).unwrap();
                let alone = Backend::Cpu
                    .preprocess_sample(&bytes, &one, &Sample::Index(index), &limits)
                    .unwrap();
                assert!(image(&batch, k) == alone, "{what}: sample {index}");
            }
        }
        assert_eq!(batches, loader.len(), "{what}, epoch {epoch}");
        assert!(failed > 0, "{what}: the failures are reported");
    }
}

/// A shard sample's image is its member of a format gpuprep decodes, exactly: GIF, JPEG 2000 and
/// ICO members are images (each the tensor its bytes give alone), a `.ppm` one (which gpuprep
/// does not decode) is no image, and its sample fails saying so.
#[test]
fn shard_members_are_images_exactly_when_gpuprep_decodes_them() {
    let dir = scratch("member-formats");
    let formats = common::manifest_dir().join("tests/data/formats");
    let members = [
        (
            "a.gif",
            std::fs::read(formats.join("made__first.gif")).unwrap(),
        ),
        (
            "b.jp2",
            std::fs::read(formats.join("made__rgb.jp2")).unwrap(),
        ),
        (
            "c.j2k",
            std::fs::read(formats.join("made__rgb_irreversible.j2k")).unwrap(),
        ),
        (
            "d.ico",
            std::fs::read(formats.join("made__rgb_bmp.ico")).unwrap(),
        ),
        ("e.ppm", b"P6\n1 1\n255\n\x00\x00\x00".to_vec()),
    ];
    let shard = dir.join("shard.tar");
    write_tar(
        &shard,
        members.iter().map(|(n, b)| (n.to_string(), b.clone())),
    );
    let options = LoaderOptions::new(5);
    let loader = Loader::new(
        Source::local_shards(vec![shard]),
        &small(),
        Backend::Cpu,
        &Limits::default(),
        options,
    )
    .unwrap();
    let batch = loader.epoch(0).next().unwrap().unwrap();
    assert_eq!(batch.indices, [0, 1, 2, 3]);
    for (k, (_, bytes)) in members[..4].iter().enumerate() {
        let alone = Backend::Cpu
            .preprocess_sample(
                bytes,
                &small(),
                &Sample::Index(k as u64),
                &Limits::default(),
            )
            .unwrap();
        let [_, a, b, c] = batch.shape;
        let slot = a * b * c;
        assert_eq!(
            &batch.data.as_bytes()[k * slot..(k + 1) * slot],
            alone.data.as_bytes()
        );
    }
    let (index, error) = &batch.failed[0];
    assert_eq!(*index, 4);
    assert!(error.to_string().contains("no image member"), "{error}");
}

/// A run resumed after `k` batches (`epoch_from`) yields, bit for bit, the batches an
/// uninterrupted epoch yields after its `k`-th (tensors, labels, indices, random parameters),
/// then the next epoch as ever: files and an ImageFolder tree (rank 1 of 2), and shuffled shards
/// through a shuffle buffer, both ranks of uneven shards, on both backends (on the GPU the
/// shards, whose replay is the subtle one; each backend's batches are held to the other's in
/// the tests above).
#[test]
fn a_resumed_epoch_gives_the_uninterrupted_batches() {
    let (root, _) = photo_tree("photos-resume");
    let files: Vec<PathBuf> = std::fs::read_dir(common::manifest_dir().join("tests/data/photos"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let files = [files.clone(), files].concat();
    let shards = shards_of("shards-resume", &[5, 3, 6, 4, 2]);
    let sources = [
        ("files", Source::Files(files)),
        ("folder", Source::ImageFolder(root)),
        ("shards", Source::local_shards(shards)),
    ];
    let on_gpu = common::gpu().is_some();
    for (what, source) in sources {
        let mut backends: Vec<(&str, MakeBackend)> = vec![("cpu", || Backend::Cpu)];
        if on_gpu && what == "shards" {
            backends.push(("gpu", || Backend::gpu().unwrap()));
        }
        let ranks = if what == "shards" { 0..2 } else { 1..2 };
        for &(backend_name, backend) in &backends {
            for rank in ranks.clone() {
                let options = LoaderOptions {
                    split: Split {
                        rank,
                        world_size: 2,
                        ..shuffled(11, 2).split
                    },
                    shuffle_buffer: 4,
                    ..shuffled(11, 2)
                };
                let make = || {
                    Loader::new(
                        source.clone(),
                        &train(),
                        backend(),
                        &Limits::default(),
                        options,
                    )
                    .unwrap()
                };
                let whole = batches_of(make().epoch(3));
                let next = batches_of(make().epoch(4));
                assert!(whole.len() >= 3, "{what}");
                for k in [1, whole.len() - 1, whole.len()] {
                    let resumed = make();
                    let after = batches_of(resumed.epoch_from(3, k).unwrap());
                    let at = format!("{what}, {backend_name}, rank {rank}, after {k} batches");
                    assert!(after == whole[k..], "{at}");
                    assert!(batches_of(resumed.epoch(4)) == next, "{at}: the next epoch");
                }
                let past = make().epoch_from(3, whole.len() + 1).err().unwrap();
                assert!(past.to_string().contains("past the end"), "{past}");
            }
        }
    }
}

/// A resumed epoch does not read the shards whose samples all came before the step it resumes
/// at, yet gives the uninterrupted run's batches (their order and the shuffle buffer replayed
/// from the counts alone). Each shard is a `pipe:` source that logs its number as it is read.
#[test]
fn a_resumed_epoch_reads_no_shard_it_has_finished() {
    const SIZES: [usize; 6] = [4, 3, 5, 4, 3, 4];
    let shards = shards_of("shards-finished", &SIZES);
    let log = shards[0].with_file_name("read.log");
    let urls = shards
        .iter()
        .enumerate()
        .map(|(n, path)| {
            let command = format!("echo {n} >> {} && cat {}", log.display(), path.display());
            ShardUrl::Pipe(command)
        })
        .collect();
    let source = Source::Shards(urls);
    let options = LoaderOptions {
        shuffle_buffer: 3,
        ..shuffled(5, 3)
    };
    let make = || {
        Loader::new(
            source.clone(),
            &train(),
            Backend::Cpu,
            &Limits::default(),
            options,
        )
    };
    let whole = batches_of(make().unwrap().epoch(2));
    let mut checked = 0;
    for k in 1..whole.len() {
        let given: Vec<u64> = whole[..k].iter().flat_map(|b| b.1.clone()).collect();
        let finished =
            |n: usize| (0..SIZES[n] as u64).all(|p| given.contains(&((n as u64) << 32 | p)));
        let mut unfinished: Vec<usize> = (0..SIZES.len()).filter(|&n| !finished(n)).collect();
        let resumed = make().unwrap();
        std::fs::write(&log, "").unwrap();
        let after = batches_of(resumed.epoch_from(2, k).unwrap());
        drop(resumed);
        assert!(after == whole[k..], "after {k} batches");
        // On the CPU the loader reads one epoch at a time: the log is this epoch's reads.
        let text = std::fs::read_to_string(&log).unwrap();
        let mut read: Vec<usize> = text.lines().map(|l| l.parse().unwrap()).collect();
        read.sort();
        unfinished.sort();
        assert_eq!(
            read, unfinished,
            "after {k} batches: the shards read ({text:?})"
        );
        checked += usize::from(unfinished.len() < SIZES.len());
    }
    assert!(
        checked >= 3,
        "only {checked} resumptions had a finished shard"
    );
}

type MakeBackend = fn() -> Backend;

/// Each batch of an epoch: (step, indices, labels, parameters' JSON, tensor bytes).
type Made = (usize, Vec<u64>, Vec<i64>, String, Vec<u8>);

fn batches_of(epoch: gpuprep::loader::Epoch) -> Vec<Made> {
    epoch
        .map(|batch| {
            let b = batch.unwrap();
            assert!(b.failed.is_empty(), "{:?}", b.failed);
            let params: Vec<serde_json::Value> = b.params.iter().map(common::params_json).collect();
            let bytes = b.data.as_bytes().to_vec();
            (
                b.stats.step,
                b.indices,
                b.labels,
                serde_json::to_string(&params).unwrap(),
                bytes,
            )
        })
        .collect()
}

/// Resampled shards (webdataset's `resampled=True`): every rank, even with fewer shards than
/// ranks, makes `len()` batches a epoch, drawn from all the shards by its own stream (another
/// per rank and per epoch, the same again for the same seed).
#[test]
fn resampled_shards_give_every_rank_its_batches_from_all_shards() {
    let shards = shards_of("shards-resampled", &[4, 3, 5]);
    let read = |rank: usize, epoch: u64| -> Vec<u64> {
        let options = LoaderOptions {
            split: Split {
                rank,
                world_size: 4,
                ..shuffled(3, 2).split
            },
            resampled: true,
            ..shuffled(3, 2)
        };
        let source = Source::local_shards(shards.clone());
        let loader =
            Loader::new(source, &small(), Backend::Cpu, &Limits::default(), options).unwrap();
        assert_eq!((loader.len(), loader.unread_per_epoch()), (2, None));
        let batches: Vec<Batch> = loader.epoch(epoch).map(|b| b.unwrap()).collect();
        assert_eq!(batches.len(), 2);
        batches.into_iter().flat_map(|b| b.indices).collect()
    };
    let drawn: Vec<Vec<u64>> = (0..4).map(|rank| read(rank, 0)).collect();
    assert!(drawn.iter().all(|d| d.len() == 3), "{drawn:?}");
    assert_eq!(read(2, 0), drawn[2], "repeatable");
    assert_ne!(drawn[0], drawn[1], "a stream per rank");
    assert_ne!(read(0, 1), drawn[0], "a stream per epoch");
    let shards_read: std::collections::BTreeSet<u64> = (0..8)
        .flat_map(|epoch| read(epoch as usize % 4, epoch))
        .map(|index| index >> 32)
        .collect();
    assert_eq!(shards_read.len(), 3, "every shard drawn somewhere");
}
