//! The compiled stages: one compute pipeline per shader entry point, each compiled with
//! shaders/jobs.wgsl (the job lookup) and the shared functions it calls before it
//! (`super::shaders::stage_source`).

use super::entropy::EntropyStages;
use super::shaders::stage_source;
use crate::plan::PRECISION_BITS;

/// The compiled stages.
pub(crate) struct Stages {
    pub entropy: EntropyStages,
    pub idct: wgpu::ComputePipeline,
    pub idct_8x8: wgpu::ComputePipeline,
    pub color: wgpu::ComputePipeline,
    pub horizontal: wgpu::ComputePipeline,
    pub tensor: wgpu::ComputePipeline,
    /// Stage 4 writing pixels for stage 5 (tensor.wgsl's `pixels_main`).
    pub pixels: wgpu::ComputePipeline,
    pub adjust: wgpu::ComputePipeline,
    /// JPEG's forward stages (`super::forward`).
    pub forward: wgpu::ComputePipeline,
}

impl Stages {
    pub fn new(device: &wgpu::Device) -> Self {
        Self {
            entropy: EntropyStages::new(device),
            idct: stage(device, "idct.wgsl"),
            idct_8x8: stage_entry(device, "idct.wgsl", "main_8x8", &[]),
            color: stage(device, "color.wgsl"),
            horizontal: stage_entry(device, "resample_h.wgsl", "main", TAPS),
            tensor: stage_entry(device, "tensor.wgsl", "main", TAPS),
            pixels: stage_entry(device, "tensor.wgsl", "pixels_main", TAPS),
            adjust: stage(device, "adjust.wgsl"),
            forward: stage(device, "forward.wgsl"),
        }
    }
}

/// The overrides of the resampling shaders: the taps' fixed-point precision.
pub(super) const TAPS: &[(&str, f64)] = &[("PRECISION_BITS", PRECISION_BITS as f64)];

/// A compute pipeline from the stage shader `file` (entry point `main`, layout from the
/// shader).
fn stage(device: &wgpu::Device, file: &str) -> wgpu::ComputePipeline {
    stage_entry(device, file, "main", &[])
}

/// [`stage`] with another entry point, and values for the shader's `override` constants.
fn stage_entry(
    device: &wgpu::Device,
    file: &str,
    entry_point: &str,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    let name = file.trim_end_matches(".wgsl");
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(stage_source(file).into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(name),
        layout: None,
        module: &module,
        entry_point: Some(entry_point),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            ..Default::default()
        },
        cache: None,
    })
}
