//! The GPU backend: the pixel stages as WGSL compute shaders, run through wgpu on the host's
//! device. Each shader in `shaders/` mirrors a file of [`crate::reference`], and tests hold the
//! two bit-identical.

mod context;
mod decode;
mod params;

pub use context::{create_device, Gpu};
pub use decode::GpuDecoder;
