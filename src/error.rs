//! The one error type of the crate.

use std::path::PathBuf;
use std::sync::Arc;

/// A JPEG feature that gpuprep recognises but does not decode.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    /// Arithmetic entropy coding (SOF9–SOF11).
    ArithmeticCoding,
    /// Lossless JPEG (SOF3).
    Lossless,
    /// Hierarchical (differential) JPEG (SOF5–SOF7, SOF13–SOF15).
    Hierarchical,
    /// A sample precision other than 8 bits (12-bit and 16-bit JPEG).
    Precision(u8),
    /// A component count other than 1, 3 or 4 (Pillow opens no other).
    ComponentCount(u8),
    /// Image height given by a DNL marker after the first scan.
    DefineNumberOfLines,
    /// Sampling factors whose ratio to the largest is not an integer.
    FractionalSampling,
    /// A side longer than libjpeg's largest, 65500 pixels.
    Dimension(u32),
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ArithmeticCoding => write!(f, "arithmetic coding"),
            Self::Lossless => write!(f, "lossless JPEG"),
            Self::Hierarchical => write!(f, "hierarchical JPEG"),
            Self::Precision(p) => write!(f, "{p}-bit samples (only 8-bit is supported)"),
            Self::ComponentCount(n) => write!(f, "{n} colour components"),
            Self::DefineNumberOfLines => write!(f, "height defined by a DNL marker"),
            Self::FractionalSampling => write!(f, "fractional chroma sampling ratio"),
            Self::Dimension(n) => write!(f, "a side of {n} pixels (libjpeg decodes 65500 at most)"),
        }
    }
}

/// Everything that can go wrong turning one encoded image into pixels.
///
/// Errors concern one image: a batch reports them per image and goes on with the others. They
/// are cheap to clone, so that a failure of a whole GPU batch is each of its images' outcome.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The bytes are not a JPEG file (no SOI marker).
    #[error("not a JPEG file: starts with {0:02x?}")]
    NotJpeg(Vec<u8>),
    /// The file is empty.
    #[error("empty file")]
    EmptyFile,
    /// The bytes are no format gpuprep reads (the table `gpuprep::formats::FORMATS`).
    #[error("not an image gpuprep reads ({known}): starts with {start:02x?}")]
    UnknownFormat {
        /// The file's first bytes.
        start: Vec<u8>,
        /// The formats gpuprep reads, by name.
        known: String,
    },
    /// A non-JPEG image using a feature its decoder does not handle.
    #[error("unsupported {format} image: {reason}")]
    UnsupportedImage {
        /// The format.
        format: String,
        /// What is not supported.
        reason: String,
    },
    /// The file ends before the image data does.
    #[error("truncated JPEG: {0}")]
    Truncated(&'static str),
    /// The file breaks its format in a way no decoder can recover from.
    #[error("corrupt {format}: {reason}")]
    Corrupt {
        /// The format, by its name in `gpuprep::formats::FORMATS`.
        format: &'static str,
        /// What is broken.
        reason: String,
    },
    /// A valid JPEG that uses a feature gpuprep does not decode.
    #[error("unsupported JPEG: {0}")]
    Unsupported(Unsupported),
    /// The declared size exceeds [`crate::Limits::max_pixels`].
    #[error("image of {width}x{height} pixels exceeds the limit of {limit} pixels")]
    TooLarge {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// The limit in force.
        limit: u64,
    },
    /// What the transform makes of an image (its output, or an image on the way to it) would
    /// exceed [`crate::Limits::max_pixels`].
    #[error("the transform makes an image of {width}x{height} pixels, above the limit of {limit} pixels")]
    OutputTooLarge {
        /// Width of that image.
        width: u64,
        /// Height of that image.
        height: u64,
        /// The limit in force.
        limit: u64,
    },
    /// What a call would hold at once (a stacked batch, the batches made ahead) passes the
    /// memory gpuprep allows itself, checked before anything is allocated.
    #[error("{what} would take {bytes} bytes, above the limit of {limit} bytes")]
    MemoryTooLarge {
        /// What would be allocated, in words.
        what: String,
        /// Its size.
        bytes: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The file has more scans than [`crate::Limits::max_scans`].
    #[error("more than {limit} scans (a progressive-JPEG CPU bomb?)")]
    TooManyScans {
        /// The limit in force.
        limit: usize,
    },
    /// Options that do not fit together (for example normalising into u8).
    #[error("invalid options: {0}")]
    Options(String),
    /// No GPU adapter is available; the message says how to get one.
    #[error("{0}")]
    NoGpu(String),
    /// The GPU failed.
    #[error("GPU error: {0}")]
    Gpu(#[from] GpuError),
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(Arc<std::io::Error>),
    /// An output could not be written; nothing is left under its name.
    #[error("cannot write {}: {source}", path.display())]
    CannotWrite {
        /// The output.
        path: PathBuf,
        /// Why.
        source: Arc<std::io::Error>,
    },
    /// A loader keeping every batch full (`refill`) had more samples of an epoch fail than the
    /// spare samples it read to replace them.
    #[error(
        "more samples of this epoch failed than the batch of spare samples read to replace \
         them: the epoch's {batches} full batches could not be made (each batch's failed samples \
         say why)"
    )]
    TooManyFailed {
        /// The batches the epoch was to hand over.
        batches: usize,
    },
    /// The job was interrupted (Ctrl-C, SIGTERM) before it reached this input.
    #[error("not converted: the job was interrupted first")]
    Interrupted,
    /// gpuprep itself failed (a bug): a panic caught at the boundary of a call, with its
    /// message, so that a caller gets an error rather than an abort.
    #[error("internal error (a bug in gpuprep; please report it): {0}")]
    Internal(String),
    /// An error about the file at `path`.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file the error is about.
        path: PathBuf,
        /// What went wrong.
        source: Box<Error>,
    },
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::Io(Arc::new(e))
    }
}

impl Error {
    /// Wraps the error with the file it is about.
    pub fn in_file(self, path: impl Into<PathBuf>) -> Self {
        Self::InFile {
            path: path.into(),
            source: Box::new(self),
        }
    }

    /// A corrupt JPEG: `reason` says what is broken.
    pub(crate) fn corrupt(reason: impl Into<String>) -> Self {
        Self::corrupt_image("JPEG", reason)
    }

    /// A corrupt file of `format`.
    pub(crate) fn corrupt_image(format: &'static str, reason: impl Into<String>) -> Self {
        Self::Corrupt {
            format,
            reason: reason.into(),
        }
    }

    /// The error a caught panic stands for, with the panic's message.
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        Self::Internal(message)
    }

    /// The error's kind as the Python package names its exception (report.json's `kind`).
    pub fn kind_name(&self) -> &'static str {
        match self.kind() {
            Self::Truncated(_) => "TruncatedError",
            Self::Corrupt { .. } | Self::NotJpeg(_) | Self::EmptyFile => "CorruptError",
            Self::UnknownFormat { .. } | Self::UnsupportedImage { .. } | Self::Unsupported(_) => {
                "UnsupportedError"
            }
            Self::TooLarge { .. }
            | Self::OutputTooLarge { .. }
            | Self::TooManyScans { .. }
            | Self::MemoryTooLarge { .. } => "TooLargeError",
            Self::Options(_) => "OptionsError",
            Self::Gpu(GpuError::Handoff(_)) => "HandoffError",
            Self::NoGpu(_) | Self::Gpu(_) => "GpuError",
            Self::Interrupted => "Interrupted",
            Self::TooManyFailed { .. } => "GpuprepError",
            Self::Internal(_) => "GpuprepError",
            Self::Io(_) | Self::CannotWrite { .. } | Self::InFile { .. } => "ReadError",
        }
    }

    /// The error itself, past the files it is about.
    pub fn kind(&self) -> &Self {
        match self {
            Self::InFile { source, .. } => source.kind(),
            other => other,
        }
    }
}

/// The memory gpuprep allows itself for what one call holds at once: a stacked batch's array,
/// or a loader's batches made ahead. Sizes are checked against it before anything is allocated,
/// so that a mistaken size (`batch_size=10**9`, a resize to 100000×100000) is an error, not an
/// abort.
pub const MAX_HELD_BYTES: u64 = 32 << 30;

/// `Ok` when `bytes` of `what` fit in [`MAX_HELD_BYTES`].
pub(crate) fn check_held(what: impl FnOnce() -> String, bytes: u64) -> Result<()> {
    if bytes > MAX_HELD_BYTES {
        return Err(Error::MemoryTooLarge {
            what: what(),
            bytes,
            limit: MAX_HELD_BYTES,
        });
    }
    Ok(())
}

/// What went wrong on the GPU, as wgpu said it. Cheap to clone: a batch's failure is each of
/// its images' outcome.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    /// wgpu refused or failed gpuprep's work: a validation error, out of memory, or an internal
    /// error, with the device's own message.
    #[error("{0}")]
    Device(Arc<wgpu::Error>),
    /// The device could not be opened.
    #[error("cannot open the device: {0}")]
    Open(#[from] wgpu::RequestDeviceError),
    /// wgpu's GL backend made a context older than OpenGL 4.3 or OpenGL ES 3.1, for which naga
    /// writes no compute shader (wgpu asks EGL for OpenGL 3.3, and NVIDIA's headless EGL gives
    /// exactly that); wgpu itself would report the failure as a lost device.
    #[error(
        "cannot run compute shaders on this GL adapter: wgpu's GL backend opened OpenGL {version}, \
         and gpuprep's compute shaders need OpenGL 4.3 or OpenGL ES 3.1 or later; use the GPU's \
         Vulkan driver (WGPU_BACKEND=vulkan)"
    )]
    GlWithoutCompute {
        /// The context's version, as the driver reports it (`GL_VERSION`).
        version: String,
    },
    /// Waiting for submitted work failed.
    #[error("waiting for the GPU: {0}")]
    Wait(Arc<wgpu::PollError>),
    /// A buffer could not be mapped to read results back.
    #[error("cannot read the result back: {0}")]
    ReadBack(#[from] wgpu::BufferAsyncError),
    /// A mapped buffer's range could not be reached (writing the upload, reading results).
    #[error("cannot reach a mapped buffer: {0}")]
    MappedRange(#[from] wgpu::MapRangeError),
    /// An image needs larger buffers than the device can bind.
    #[error(
        "a {width}x{height} image needs larger GPU buffers than this device allows ({limit} bytes)"
    )]
    ImageTooLarge {
        /// Decoded width.
        width: u32,
        /// Decoded height.
        height: u32,
        /// The device's limit it passes (its largest binding, or its largest buffer), in bytes.
        limit: u64,
    },
    /// An image's colour steps would loop more than the device runs a shader's loops: Mesa's
    /// llvmpipe (lavapipe) ends every loop of an invocation once 65,535 iterations have run in
    /// all, which would leave the image's steps half done.
    #[error(
        "a {width}x{height} image's colour steps loop up to {iterations} times in a lane, more \
         than gpuprep gives Mesa's llvmpipe (lavapipe: {budget}), which ends a shader's loops \
         after 65,535 iterations in all; the CPU backend gives the same bits"
    )]
    LoopLimit {
        /// The output's width.
        width: u32,
        /// The output's height.
        height: u32,
        /// The iterations one lane of its colour stage would run, at most.
        iterations: u64,
        /// The most gpuprep gives this device.
        budget: u64,
    },
    /// A batch could not be handed over on the device (its buffer, exported memory, CUDA's
    /// import of it, a CUDA stream's wait for it): the hand-off layer's own error.
    #[error("cannot hand the batch over on the device: {0}")]
    Handoff(#[from] HandoffError),
    /// An image of the call was never run (a bug, should it happen).
    #[error("image {0} was never run")]
    NotRun(usize),
    /// The pipeline broke one of its own rules (a bug, should it happen).
    #[error("internal error: {0}")]
    Internal(&'static str),
}

impl From<wgpu::Error> for GpuError {
    fn from(e: wgpu::Error) -> Self {
        Self::Device(Arc::new(e))
    }
}

impl From<wgpu::PollError> for GpuError {
    fn from(e: wgpu::PollError) -> Self {
        Self::Wait(Arc::new(e))
    }
}

/// What went wrong handing batches over on the device: exporting gpuprep's Vulkan memory and
/// timeline semaphore, loading CUDA's driver and importing them into it, a consumer's stream
/// waiting on a batch. Its kinds are the failures' own, so that a caller can tell a machine
/// without CUDA or without the Vulkan extensions (take the host path) from a driver call that
/// failed on the way. Cheap to clone, as [`GpuError`] is.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoffError {
    /// CUDA's driver library could not be loaded (no NVIDIA driver on the machine).
    #[error("no CUDA driver library ({library}): {reason}")]
    NoCudaDriver {
        /// The library's file name.
        library: &'static str,
        /// The dynamic loader's message.
        reason: String,
    },
    /// The driver library lacks an entry point gpuprep binds (a driver older than the API it
    /// needs).
    #[error("the CUDA driver has no {symbol}: {reason}")]
    NoCudaSymbol {
        /// The entry point's name.
        symbol: &'static str,
        /// The dynamic loader's message.
        reason: String,
    },
    /// A CUDA driver call returned an error.
    #[error("{call} failed: {}", cuda_error(name.as_deref(), *code))]
    Cuda {
        /// The driver API function (`cuDeviceGet`, `cuImportExternalMemory`, ...).
        call: &'static str,
        /// Its `CUresult`.
        code: i32,
        /// The driver's name of that result (`CUDA_ERROR_INVALID_DEVICE`), where it knows it.
        name: Option<String>,
    },
    /// A CUDA device ordinal the driver API cannot take (past `int`'s range).
    #[error("no CUDA device {0}")]
    NoCudaDevice(u32),
    /// The CUDA device asked for is another GPU than the one gpuprep's device runs on.
    #[error(
        "CUDA device {device} is not the GPU gpuprep runs on (UUID {} against {})",
        hex(cuda_uuid),
        hex(vulkan_uuid)
    )]
    OtherGpu {
        /// The CUDA device's ordinal.
        device: u32,
        /// Its UUID, as CUDA reports it.
        cuda_uuid: [u8; 16],
        /// The UUID of gpuprep's device, as Vulkan reports it.
        vulkan_uuid: [u8; 16],
    },
    /// gpuprep's GPU device is not a Vulkan one, the only API whose memory gpuprep exports.
    #[error("the GPU device is not a Vulkan one: it cannot export memory")]
    NotVulkan,
    /// The Vulkan device lacks an extension the export needs.
    #[error("the Vulkan device offers no {extension}: it cannot export {exports}")]
    NoExtension {
        /// The extension's name.
        extension: &'static str,
        /// What it would export ("memory", "semaphores").
        exports: &'static str,
    },
    /// The Vulkan device has no timeline semaphores (a Vulkan 1.2 feature), which tell a
    /// consumer when a batch is written.
    #[error("the Vulkan device has no timeline semaphores")]
    NoTimelineSemaphores,
    /// No memory type of the Vulkan device is both device-local and usable by an exportable
    /// buffer.
    #[error("no device-local memory type for an exportable buffer")]
    NoMemoryType,
    /// A Vulkan call of the export failed.
    #[error("{call}{}: {message}", about.as_ref().map(|a| format!(" ({a})")).unwrap_or_default())]
    Vulkan {
        /// The Vulkan function (`vkAllocateMemory`, `vkGetMemoryFdKHR`, ...).
        call: &'static str,
        /// What it was called for (`exportable, 4096 bytes`), where that says more.
        about: Option<String>,
        /// Its `VkResult`.
        code: i32,
        /// That result in words.
        message: String,
    },
    /// The GPU did not reach a timeline value within the time waited for it.
    #[error("vkWaitSemaphores (value {value}): the GPU did not reach it within {waited:?}")]
    Timeout {
        /// The value waited for.
        value: u64,
        /// How long it was waited for.
        waited: std::time::Duration,
    },
    /// An exported buffer's or semaphore's file descriptor was already taken (a bug, should
    /// it happen: each is imported once).
    #[error("the {0} has no file descriptor")]
    NoFileDescriptor(&'static str),
    /// A CUDA stream was to wait on a batch, or let go of one, that is not in CUDA memory.
    #[error("the batch is not in CUDA memory")]
    NotInCuda,
}

/// A CUDA error as the driver names it, or its number where the driver does not know it.
fn cuda_error(name: Option<&str>, code: i32) -> String {
    match name {
        Some(name) => name.to_string(),
        None => format!("error {code}"),
    }
}

/// A UUID's 16 bytes as 32 hex digits.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind of hand-off failure reads as the string it replaced did, its fields in it.
    #[test]
    fn handoff_errors_say_what_failed() {
        let call = |name: Option<&str>, code| HandoffError::Cuda {
            call: "cuDeviceGet",
            code,
            name: name.map(str::to_string),
        };
        assert_eq!(
            call(Some("CUDA_ERROR_INVALID_DEVICE"), 101).to_string(),
            "cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE"
        );
        assert_eq!(
            call(None, 12345).to_string(),
            "cuDeviceGet failed: error 12345"
        );
        let mut vulkan_uuid = [0u8; 16];
        vulkan_uuid[15] = 0xab;
        let other = HandoffError::OtherGpu {
            device: 1,
            cuda_uuid: [0x01; 16],
            vulkan_uuid,
        };
        assert_eq!(
            other.to_string(),
            "CUDA device 1 is not the GPU gpuprep runs on (UUID \
             01010101010101010101010101010101 against 000000000000000000000000000000ab)"
        );
        let vulkan = |about: Option<&str>| HandoffError::Vulkan {
            call: "vkAllocateMemory",
            about: about.map(str::to_string),
            code: -2,
            message: "A device memory allocation has failed".into(),
        };
        assert_eq!(
            vulkan(Some("exportable, 4096 bytes")).to_string(),
            "vkAllocateMemory (exportable, 4096 bytes): A device memory allocation has failed"
        );
        assert_eq!(
            vulkan(None).to_string(),
            "vkAllocateMemory: A device memory allocation has failed"
        );
        let extension = HandoffError::NoExtension {
            extension: "VK_KHR_external_semaphore_fd",
            exports: "semaphores",
        };
        assert_eq!(
            extension.to_string(),
            "the Vulkan device offers no VK_KHR_external_semaphore_fd: it cannot export semaphores"
        );
        let timeout = HandoffError::Timeout {
            value: 7,
            waited: std::time::Duration::from_secs(10),
        };
        assert_eq!(
            timeout.to_string(),
            "vkWaitSemaphores (value 7): the GPU did not reach it within 10s"
        );
    }

    /// A hand-off failure reaches a caller as a GPU error carrying it, which the Python package
    /// raises as its own class.
    #[test]
    fn a_handoff_error_is_a_gpu_error_of_its_own_kind() {
        let error = Error::from(GpuError::from(HandoffError::NotInCuda));
        assert_eq!(
            error.to_string(),
            "GPU error: cannot hand the batch over on the device: the batch is not in CUDA memory"
        );
        assert_eq!(error.kind_name(), "HandoffError");
        assert!(matches!(
            error.kind(),
            Error::Gpu(GpuError::Handoff(HandoffError::NotInCuda))
        ));
        assert_eq!(Error::Gpu(GpuError::NotRun(0)).kind_name(), "GpuError");
    }
}
