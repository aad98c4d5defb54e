//! The compiled stages: one compute pipeline per shader entry point, each compiled with
//! shaders/jobs.wgsl (the job lookup) and the shared functions it calls before it
//! ([`stage_source`]).

use super::entropy::EntropyStages;
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
        }
    }
}

/// The stage shaders of shaders/: each file, the shared functions it calls, its own source.
pub(super) const STAGE_SHADERS: [(&str, &str, &str); 6] = [
    (
        "entropy.wgsl",
        "",
        include_str!("../../shaders/entropy.wgsl"),
    ),
    ("idct.wgsl", "", include_str!("../../shaders/idct.wgsl")),
    ("color.wgsl", "", include_str!("../../shaders/color.wgsl")),
    (
        "resample_h.wgsl",
        "",
        include_str!("../../shaders/resample_h.wgsl"),
    ),
    ("tensor.wgsl", "", include_str!("../../shaders/tensor.wgsl")),
    (
        "adjust.wgsl",
        super::double::SOURCE,
        include_str!("../../shaders/adjust.wgsl"),
    ),
];

/// What the stage shader `file` is compiled from: shaders/jobs.wgsl's job lookup, the shared
/// functions it calls, then the shader.
pub(super) fn stage_source(file: &str) -> String {
    let (_, shared, own) = STAGE_SHADERS
        .iter()
        .find(|(name, _, _)| *name == file)
        .unwrap_or_else(|| panic!("{file} is no stage shader"));
    format!("{}{shared}{own}", include_str!("../../shaders/jobs.wgsl"))
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
