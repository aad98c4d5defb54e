//! gpuprep turns encoded images (JPEG first; every format of [`formats::FORMATS`]) into the tensors
//! vision models eat, with exactly the numbers Pillow + torchvision give.
//!
//! Decoding is split where the work changes nature: entropy decoding ([`jpeg`]) is serial per
//! image and runs on CPU threads; everything after it is per-pixel and is written as stages whose
//! CPU reference lives in [`mod@reference`] and whose WGSL shaders run on any GPU wgpu reaches
//! ([`gpu`]). Both read each image's [`ImagePlan`] ([`plan`]: every size, tap and table, computed
//! once from its header and the [`Transform`]), and [`Backend`] picks one; both give the same
//! bits. docs/ARCHITECTURE.md in the repository has the layers and the rule between them.
//!
//! ```
//! use gpuprep::{Backend, Limits, Transform};
//!
//! let bytes = std::fs::read("tests/data/photos/mpl__grace_hopper.jpg")?;
//! // Pillow's pixels: np.asarray(Image.open(f).convert('RGB')).
//! let rgb = gpuprep::decode_rgb(&bytes, &Limits::default())?;
//! assert_eq!((rgb.width, rgb.height), (512, 600));
//! // torchvision's Resize(256) + CenterCrop(224) + ToTensor() + Normalize(ImageNet), float32.
//! let backend = Backend::gpu().unwrap_or(Backend::Cpu);
//! let tensor = backend.preprocess(&bytes, &Transform::imagenet_eval(), &Limits::default())?;
//! assert_eq!(tensor.shape, [3, 224, 224]);
//! assert_eq!(tensor, gpuprep::preprocess(&bytes, &Transform::imagenet_eval(), &Limits::default())?);
//! # Ok::<(), gpuprep::Error>(())
//! ```

mod backend;
mod comment;
pub mod convert;
mod cuda;
pub mod drift;
pub mod encode;
mod error;
pub mod formats;
pub mod gpu;
mod image;
pub mod jpeg;
pub mod loader;
pub mod npy;
pub mod plan;
pub mod reference;
pub mod shard;
mod tensor;
mod transform;

pub use backend::{Backend, GpuBackend};
pub use error::{Error, GpuError, HandoffError, Result, Unsupported};
pub use image::RgbImage;
pub use jpeg::Limits;
pub use plan::{CropBox, ImagePlan, Params, Sample, Samples};
pub use tensor::{Stacked, Tensor, TensorData};
pub use transform::Adjustment;
pub use transform::{
    AutoAugment, AutoAugmentPolicy, ChannelOrder, ColorJitter, ColorOp, ColorOpArgument,
    ColorOperation, ColorOps, DType, ErasedValue, Filter, GaussianBlur, InvalidTransform, Layout,
    Normalize, Operation, OrderEntry, Pad, PaddingMode, RandAugment, RandomAffine, RandomCrop,
    RandomErasing, RandomPerspective, RandomResize, RandomResizedCrop, RandomRotation,
    RandomShortestSize, Resize, StepOrder, TimmAugMix, TimmAutoAugment, TimmAutoAugmentPolicy,
    TimmRandAugment, Transform, TrivialAugment, COLOR_OPERATIONS, MAX_AUGMENT_OPS,
    MAX_ERASED_BOXES, MAX_KERNEL, MAX_MIXED_STEPS, MAX_SHORTEST_SIZES, OPERATIONS, SETTINGS,
};

/// Here rather than in either module: the transform vocabulary and the errors name nothing of
/// the crate above them (tests/layers.rs), so what joins the two lives above both.
impl From<InvalidTransform> for Error {
    fn from(e: InvalidTransform) -> Self {
        Self::Options(e.0)
    }
}
pub use wgpu;

/// Decodes an image (of any format of [`formats::FORMATS`]) to RGB on the CPU, bit-identical to
/// Pillow's `np.asarray(Image.open(f).convert('RGB'))`.
pub fn decode_rgb(data: &[u8], limits: &Limits) -> Result<RgbImage> {
    match formats::decode(data, limits)? {
        formats::Decoded::Jpeg(coefficients) => reference::decode_rgb(&coefficients),
        formats::Decoded::Pixels(pixels) => Ok(pixels.rgb),
    }
}

/// Decodes an image and applies `transform` on the CPU: the tensor torchvision would give for
/// the Pillow image, bit for bit.
pub fn preprocess(data: &[u8], transform: &Transform, limits: &Limits) -> Result<Tensor> {
    Backend::Cpu.preprocess(data, transform, limits)
}

/// Decoding threads a process takes by default: `RAYON_NUM_THREADS` where it is set, else its
/// share of the cores when several ranks of one job share the machine (torchrun's
/// `LOCAL_WORLD_SIZE`), else every core.
pub fn default_threads() -> usize {
    let set = |name: &str| std::env::var(name).ok()?.trim().parse::<usize>().ok();
    if let Some(threads) = set("RAYON_NUM_THREADS").filter(|&n| n > 0) {
        return threads;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ranks = set("LOCAL_WORLD_SIZE").filter(|&n| n > 0).unwrap_or(1);
    (cores / ranks).max(1)
}

/// Sizes the decoding threads (rayon's global pool) once per process: `threads`, or
/// [`default_threads`]. Returns how many there are, which is what an earlier call (or rayon's
/// first use) chose when the pool was already running.
pub fn init_threads(threads: Option<usize>) -> usize {
    let wanted = threads.filter(|&n| n > 0).unwrap_or_else(default_threads);
    let _already_running = rayon::ThreadPoolBuilder::new()
        .num_threads(wanted)
        .build_global();
    rayon::current_num_threads()
}

/// The pipeline objects are made once and shared by every thread of a host application; this
/// stops compiling if one of them ever loses `Send + Sync`.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<gpu::GpuPipeline>();
    shared::<Backend>();
    shared::<gpu::Batch>();
};
