//! SSE2 versions of the hottest CPU stages (x86-64 always has SSE2, so no run-time check).
//! Each is bit-identical to the scalar spec it names; tests hold them equal, and the scalar spec
//! stays what the shaders mirror.

pub mod color;
pub mod idct;
pub mod resample;
pub mod upsample;
