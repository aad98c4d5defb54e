//! The GPU backend: the pixel stages as WGSL compute shaders, run through wgpu on the host's
//! device. Each shader in `shaders/` has its CPU mirror (the IDCT, colour, resampling and
//! tensor stages in [`crate::reference`]; stage 0's Huffman decoding in `jpeg::parallel`), and
//! tests hold the two bit-identical.
//!
//! One batch, in order of the modules that handle it:
//!
//! - `work`: one image prepared on a CPU thread, from its [`crate::ImagePlan`]: compact
//!   coefficients (or the entropy-coded segment stage 0 decodes), tap tables and the job
//!   records of every stage (`jobs`);
//! - `packing`: images packed together, as numbers only (arena offsets, each stage's job
//!   table, the upload's layout), within the device's binding window (`bindings`);
//! - `record`: a packing recorded with wgpu (upload through `staging`, stage 0 by `entropy`,
//!   then one dispatch per stage of `stages`, arenas from `dispatch`'s pool);
//! - `pipeline`: submitting, reading back, and redoing on the CPU what stage 0 gives up on;
//!   `batch` and `stream` are the calls built on it (a GPU-resident batch; the stream, which
//!   takes images from a `Source`, plans each submission in `submission` and hands it to a
//!   `Landing` of `landing` once run, its costs in `stats`), `stamps` times stages on the GPU's
//!   clock, `context` opens a device, `external` exports memory and semaphores for CUDA,
//!   `submit` makes every submission one at a time.
//!
//! Beside the decoding stages, `forward` runs JPEG's forward stages (shaders/forward.wgsl) for
//! the offline job's encoder, whose CPU mirror is `encode::forward_stages`.

mod batch;
mod bindings;
mod context;
#[cfg(test)]
mod dawn;
mod dispatch;
mod double;
mod entropy;
#[cfg(target_os = "linux")]
pub mod external;
mod float;
mod forward;
mod jobs;
mod landing;
mod packing;
mod pipeline;
mod record;
mod shaders;
mod stages;
mod staging;
mod stamps;
mod stats;
mod stream;
mod submission;
mod submit;
#[cfg(test)]
mod translations;
mod work;

pub use batch::Batch;
pub use context::{
    adapter_uuid, adapters, create_device, create_device_on, find_adapter, open_device, Gpu,
};
pub(crate) use dispatch::read_buffer;
pub(crate) use landing::{copy_into_slots, Flight, Landing};
pub use landing::{DeviceBatch, DeviceTensor, Streamed};
pub(crate) use pipeline::Placed;
pub use pipeline::{GpuPipeline, GpuTimings};
pub use stats::BatchStats;
pub(crate) use stream::{Arrival, Arriving, Source, IN_FLIGHT};
pub use stream::{Batching, StreamOptions, DEFAULT_BATCH, DEFAULT_SUBMISSION};
pub(crate) use submit::{submit, submitting};
