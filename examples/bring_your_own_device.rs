//! Embedding gpuprep next to your own wgpu code: the host makes the device, gpuprep borrows it,
//! the batch tensor stays on the GPU, and the host's own compute pass reads it (here: the mean
//! of each image's channels, checked against the CPU reference).
//!
//! `cargo run --release --example bring_your_own_device -- tests/data/photos/*.jpg`

use gpuprep::gpu::GpuPipeline;
use gpuprep::{wgpu, Limits, Transform};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The host application's own device (here: the default adapter, its real limits).
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;

    // gpuprep compiles its shaders once for that device and never makes one of its own.
    let pipeline = GpuPipeline::new(&device, &queue);
    let files: Vec<Vec<u8>> = std::env::args()
        .skip(1)
        .map(std::fs::read)
        .collect::<Result<_, _>>()?;
    let images: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let transform = Transform::exact(224, 224);
    let batch = pipeline.preprocess_batch(&images, &transform, &Limits::default())?;

    // `batch.buffer` is ready to bind as a storage buffer: N images of [3, 224, 224] f32.
    println!(
        "{} images on {}: {} bytes of {:?} {:?} tensors, {} bytes apart",
        images.len(),
        adapter.get_info().name,
        batch.buffer.size(),
        batch.dtype,
        batch.image_shape,
        batch.image_stride
    );
    for (i, outcome) in batch.outcomes.iter().enumerate() {
        if let Err(e) = outcome {
            println!("image {i} failed alone (slot zeroed): {e}");
        }
    }

    // The host's next pass binds the batch buffer as it is: no copy back to the CPU.
    let means = channel_means_on_gpu(&device, &queue, &batch)?;
    for (i, (image, outcome)) in images.iter().zip(&batch.outcomes).enumerate() {
        if outcome.is_err() {
            continue;
        }
        let reference = gpuprep::preprocess(image, &transform, &Limits::default())?;
        let gpuprep::TensorData::F32(values) = &reference.data else {
            unreachable!("the transform makes float32")
        };
        let plane = values.len() / 3;
        let expected: Vec<f32> = values
            .chunks(plane)
            .map(|c| c.iter().sum::<f32>() / plane as f32)
            .collect();
        println!(
            "image {i}: channel means on the GPU {:.5?}, from the CPU reference {:.5?}",
            &means[i * 3..i * 3 + 3],
            expected
        );
    }
    Ok(())
}

/// The host's own shader: one invocation per (image, channel) sums a [3, H, W] float32 plane.
const MEANS: &str = r"
@group(0) @binding(0) var<storage, read> tensors: array<f32>;
@group(0) @binding(1) var<storage, read_write> means: array<f32>;
// (floats per image, floats per plane, images)
@group(0) @binding(2) var<uniform> shape: vec4<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let image = id.x / 3u;
    let channel = id.x % 3u;
    if image >= shape.z {
        return;
    }
    let start = image * shape.x + channel * shape.y;
    var sum = 0.0;
    for (var i = 0u; i < shape.y; i++) {
        sum += tensors[start + i];
    }
    means[id.x] = sum / f32(shape.y);
}
";

/// Runs [`MEANS`] over `batch.buffer` and reads the means back.
fn channel_means_on_gpu(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    batch: &gpuprep::gpu::Batch,
) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    use wgpu::util::DeviceExt;
    let images = batch.outcomes.len() as u32;
    let plane = (batch.image_shape[1] * batch.image_shape[2]) as u32;
    let layout = [(batch.image_stride / 4) as u32, plane, images, 0];
    let layout = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("layout"),
        contents: bytemuck::cast_slice(&layout),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let bytes = u64::from(images) * 3 * 4;
    let means = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("means"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("means readback"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("means"),
        source: wgpu::ShaderSource::Wgsl(MEANS.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("means"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("means"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: batch.buffer.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: means.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: layout.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((images * 3).div_ceil(64), 1, 1);
    }
    encoder.copy_buffer_to_buffer(&means, 0, &readback, 0, bytes);
    queue.submit([encoder.finish()]);
    let (sender, receiver) = std::sync::mpsc::channel();
    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |r| drop(sender.send(r)));
    device.poll(wgpu::PollType::wait_indefinitely())?;
    receiver.recv()??;
    let values = bytemuck::cast_slice(&readback.slice(..).get_mapped_range()?).to_vec();
    Ok(values)
}
