//! The host's own GPU work on one batch overlapping gpuprep's work on the next, on one wgpu
//! device. `GpuPipeline::preprocess_on_device` hands each batch's tensors, still on the GPU, to
//! a callback; the host submits its compute pass there and returns without waiting, so gpuprep
//! goes on decoding, packing and submitting the next batches while the GPU runs the host's pass.
//! wgpu keeps one queue's submissions in order, so the host's pass reads the batch before any
//! later batch reuses its buffer, and the next batch's shaders run after the host's pass: what
//! overlaps is the host's GPU time with gpuprep's CPU time.
//!
//! Prints three timings over the same images: gpuprep alone; the host's pass waited for in the
//! callback (one after the other); and the host's pass submitted without waiting (overlapped).
//!
//! `cargo run --release --example overlap_host_pass -- [--work N] [--batch N] FILES...`

use gpuprep::gpu::{Batching, DeviceBatch, GpuPipeline, StreamOptions};
use gpuprep::{wgpu, Limits, Samples, Transform};
use std::time::Instant;

/// A stand-in for a model's forward pass: `work` dependent multiply-adds per element, its
/// result written to `out` (so the compiler cannot drop it).
const HOST_PASS: &str = r"
@group(0) @binding(0) var<storage, read> tensors: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
// (elements, work)
@group(0) @binding(2) var<uniform> shape: vec4<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
    let stride = n.x * 256u;
    for (var i = id.x; i < shape.x; i += stride) {
        var acc = tensors[i];
        for (var k = 0u; k < shape.y; k++) {
            acc = acc * 0.999 + 0.001;
        }
        out[i] = acc;
    }
}
";

struct HostPass {
    pipeline: wgpu::ComputePipeline,
    out: wgpu::Buffer,
    work: u32,
}

impl HostPass {
    fn new(device: &wgpu::Device, elements: u64, work: u32) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("host pass"),
            source: wgpu::ShaderSource::Wgsl(HOST_PASS.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("host pass"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let out = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("host output"),
            size: elements * 4,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        Self {
            pipeline,
            out,
            work,
        }
    }

    /// Submits the pass over `batch`'s tensors; returns without waiting.
    fn submit(&self, device: &wgpu::Device, queue: &wgpu::Queue, batch: &DeviceBatch) {
        use wgpu::util::DeviceExt;
        let Some(buffer) = batch.buffer else {
            return;
        };
        let end = batch
            .tensors
            .iter()
            .map(|t| t.offset / 4 + t.shape.iter().product::<usize>() as u64);
        let elements = end.max().unwrap_or(0).min(self.out.size() / 4) as u32;
        let shape = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("host shape"),
            contents: bytemuck::cast_slice(&[elements, self.work, 0, 0]),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("host pass"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: buffer.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: self.out.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: shape.as_entire_binding(),
                },
            ],
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(4096, 1, 1);
        }
        queue.submit([encoder.finish()]);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut option = |name: &str, default: u32| -> Result<u32, Box<dyn std::error::Error>> {
        match args.iter().position(|a| a == name) {
            Some(i) if i + 1 < args.len() => {
                let value = args.remove(i + 1).parse()?;
                args.remove(i);
                Ok(value)
            }
            _ => Ok(default),
        }
    };
    let work = option("--work", 256)?;
    let batch = option("--batch", 64)? as usize;
    let files: Vec<Vec<u8>> = args.iter().map(std::fs::read).collect::<Result<_, _>>()?;
    let images: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();

    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;
    let pipeline = GpuPipeline::new(&device, &queue);
    let transform = Transform::imagenet_train();
    let limits = Limits::default();
    let options = StreamOptions {
        transform: &transform,
        limits: &limits,
        batching: Batching::of(batch),
        samples: Samples::Positions,
    };
    let elements = batch as u64 * 3 * 224 * 224;
    let host = HostPass::new(&device, elements, work);
    let wait = |device: &wgpu::Device| device.poll(wgpu::PollType::wait_indefinitely());

    // Warm up (shaders, pools), then each way three times; the best of each.
    let run = |mode: &str| -> Result<f64, Box<dyn std::error::Error>> {
        let start = Instant::now();
        pipeline.preprocess_on_device(&images, &options, |b| match mode {
            "alone" => {}
            "serial" => {
                host.submit(&device, &queue, &b);
                let _ = wait(&device);
            }
            _ => host.submit(&device, &queue, &b),
        });
        wait(&device)?;
        Ok(start.elapsed().as_secs_f64())
    };
    run("overlapped")?;
    let best = |mode: &str| -> Result<f64, Box<dyn std::error::Error>> {
        let times = [run(mode)?, run(mode)?, run(mode)?];
        Ok(times.into_iter().fold(f64::INFINITY, f64::min))
    };
    let alone = best("alone")?;
    let serial = best("serial")?;
    let overlapped = best("overlapped")?;
    let host_time = (serial - alone).max(0.0);
    let hidden = if host_time > 0.0 {
        ((serial - overlapped) / host_time).clamp(0.0, 1.0)
    } else {
        0.0
    };
    println!(
        "{} images, batch {batch}, host pass {work} multiply-adds per element, on {}",
        images.len(),
        adapter.get_info().name
    );
    println!(
        "gpuprep alone {:.1} ms; host pass waited for {:.1} ms; host pass overlapped {:.1} ms: \
         {:.0}% of the host's {:.1} ms hidden",
        alone * 1e3,
        serial * 1e3,
        overlapped * 1e3,
        hidden * 100.0,
        host_time * 1e3
    );
    Ok(())
}
