//! Embedding gpuprep next to your own wgpu code: the host makes the device, gpuprep borrows it,
//! and the batch tensor stays on the GPU for the host's next pass.
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
    let pipeline = GpuPipeline::new(&device);
    let files: Vec<Vec<u8>> = std::env::args()
        .skip(1)
        .map(std::fs::read)
        .collect::<Result<_, _>>()?;
    let images: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let batch = pipeline.preprocess_batch(
        &device,
        &queue,
        &images,
        &Transform::exact(224, 224),
        &Limits::default(),
    )?;

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
    Ok(())
}
