//! The stage shaders' sources, as they are compiled: shaders/jobs.wgsl (the job lookup), the
//! shared functions a stage calls (shaders/double.wgsl, shaders/float.wgsl), then its own.

use super::{double, float};

/// The stage shaders of shaders/: each file, the shared functions it calls, its own source.
pub(super) const STAGE_SHADERS: [(&str, &[&str], &str); 7] = [
    (
        "entropy.wgsl",
        &[],
        include_str!("../../shaders/entropy.wgsl"),
    ),
    ("idct.wgsl", &[], include_str!("../../shaders/idct.wgsl")),
    ("color.wgsl", &[], include_str!("../../shaders/color.wgsl")),
    (
        "resample_h.wgsl",
        &[],
        include_str!("../../shaders/resample_h.wgsl"),
    ),
    (
        "tensor.wgsl",
        &[],
        include_str!("../../shaders/tensor.wgsl"),
    ),
    (
        "forward.wgsl",
        &[],
        include_str!("../../shaders/forward.wgsl"),
    ),
    (
        "adjust.wgsl",
        &[double::SOURCE, float::SOURCE],
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
    format!(
        "{}{}{own}",
        include_str!("../../shaders/jobs.wgsl"),
        shared.concat()
    )
}
