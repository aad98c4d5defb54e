//! The GPU backend: the pixel stages as WGSL compute shaders, run through wgpu on the host's
//! device. Each shader in `shaders/` mirrors a file of [`crate::reference`], and tests hold the
//! two bit-identical.

mod batch;
mod context;
mod decode;
mod dispatch;
mod params;
mod pipeline;
mod transform;

pub use batch::Batch;
pub use context::{create_device, Gpu};
pub use decode::GpuDecoder;
pub use pipeline::GpuPipeline;

/// A compute pipeline from one WGSL file (entry point `main`, layout from the shader).
fn compute_pipeline(device: &wgpu::Device, name: &str, source: &str) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(name),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    })
}
