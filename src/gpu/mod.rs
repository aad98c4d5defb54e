//! The GPU backend: the pixel stages as WGSL compute shaders, run through wgpu on the host's
//! device. Each shader in `shaders/` mirrors a file of [`crate::reference`], and tests hold the
//! two bit-identical.
//!
//! Work goes in batches: images are entropy-decoded and prepared on CPU threads
//! ([`work`](self)), packed together, and each stage runs as one dispatch over the whole batch.

mod batch;
mod context;
mod dispatch;
mod entropy;
mod jobs;
mod packing;
mod pipeline;
mod staging;
mod stamps;
mod stream;
mod work;

pub use batch::Batch;
pub use context::{create_device, Gpu};
pub use pipeline::{GpuPipeline, GpuTimings};
pub use stream::{BatchStats, DeviceBatch, DeviceTensor, Streamed, DEFAULT_BATCH};

/// The compiled stages.
pub(crate) struct Stages {
    entropy: entropy::EntropyStages,
    idct: wgpu::ComputePipeline,
    idct_8x8: wgpu::ComputePipeline,
    color: wgpu::ComputePipeline,
    horizontal: wgpu::ComputePipeline,
    tensor: wgpu::ComputePipeline,
}

impl Stages {
    fn new(device: &wgpu::Device) -> Self {
        Self {
            entropy: entropy::EntropyStages::new(device),
            idct: stage(device, "idct", IDCT),
            idct_8x8: stage_entry(device, "idct", IDCT, "main_8x8"),
            color: stage(device, "color", include_str!("../../shaders/color.wgsl")),
            horizontal: stage(
                device,
                "resample_h",
                include_str!("../../shaders/resample_h.wgsl"),
            ),
            tensor: stage(device, "tensor", include_str!("../../shaders/tensor.wgsl")),
        }
    }
}

const IDCT: &str = include_str!("../../shaders/idct.wgsl");

/// A compute pipeline from one stage shader, compiled with shaders/jobs.wgsl before it (entry
/// point `main`, layout from the shader).
fn stage(device: &wgpu::Device, name: &str, source: &str) -> wgpu::ComputePipeline {
    stage_entry(device, name, source, "main")
}

/// [`stage`] with another entry point.
fn stage_entry(
    device: &wgpu::Device,
    name: &str,
    source: &str,
    entry_point: &str,
) -> wgpu::ComputePipeline {
    let source = format!("{}{source}", include_str!("../../shaders/jobs.wgsl"));
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(name),
        layout: None,
        module: &module,
        entry_point: Some(entry_point),
        compilation_options: Default::default(),
        cache: None,
    })
}
