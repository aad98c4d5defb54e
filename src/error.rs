//! The one error type of the crate.

use std::path::PathBuf;

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
        }
    }
}

/// Everything that can go wrong turning one encoded image into pixels.
///
/// Errors concern one image: a batch reports them per image and goes on with the others.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bytes are not a JPEG file (no SOI marker). Use another decoder for them.
    #[error("not a JPEG file: starts with {0:02x?}")]
    NotJpeg(Vec<u8>),
    /// The bytes are no format gpuprep reads (JPEG, PNG, BMP, GIF, TIFF, WebP).
    #[error("not an image gpuprep reads (JPEG, PNG, BMP, GIF, TIFF, WebP): starts with {0:02x?}")]
    UnknownFormat(Vec<u8>),
    /// A non-JPEG image using a feature its decoder does not handle. Convert it first.
    #[error("unsupported {format} image: {reason}")]
    UnsupportedImage {
        /// The format.
        format: String,
        /// What is not supported.
        reason: String,
    },
    /// The file ends before the image data does. Re-fetch or drop the file.
    #[error("truncated JPEG: {0}")]
    Truncated(&'static str),
    /// The file breaks the JPEG format in a way no decoder can recover from. Drop the file.
    #[error("corrupt JPEG: {0}")]
    Corrupt(String),
    /// A valid JPEG that uses a feature gpuprep does not decode. Convert it first.
    #[error("unsupported JPEG: {0}")]
    Unsupported(Unsupported),
    /// The declared size exceeds [`crate::Limits`]: raise the limit if the file is trusted.
    #[error("image of {width}x{height} pixels exceeds the limit of {limit} pixels")]
    TooLarge {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// The limit in force.
        limit: u64,
    },
    /// The file has more scans than [`crate::Limits::max_scans`]: raise the limit if the file is
    /// trusted.
    #[error("more than {limit} scans (a progressive-JPEG CPU bomb?)")]
    TooManyScans {
        /// The limit in force.
        limit: usize,
    },
    /// Two inputs would write the same output file. Rename one or convert them separately.
    #[error("two inputs named {name:?} ({} and {}) would write the same output", first.display(), second.display())]
    OutputClash {
        /// The shared file name.
        name: String,
        /// The first input with that name.
        first: PathBuf,
        /// The second input with that name.
        second: PathBuf,
    },
    /// Options that do not fit together (for example normalising into u8). Change the options.
    #[error("invalid options: {0}")]
    Options(String),
    /// No GPU adapter is available; the message says how to get one.
    #[error("{0}")]
    NoGpu(String),
    /// The GPU failed (device lost, out of memory, validation).
    #[error("GPU error: {0}")]
    Gpu(String),
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// An error about the file at `path`.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file the error is about.
        path: PathBuf,
        /// What went wrong.
        source: Box<Error>,
    },
}

impl Error {
    /// Wraps the error with the file it is about.
    pub fn in_file(self, path: impl Into<PathBuf>) -> Self {
        Self::InFile {
            path: path.into(),
            source: Box::new(self),
        }
    }

    /// What the user can do about it, in a sentence (for the CLI; `None` where the message
    /// says it all).
    pub fn advice(&self) -> Option<&'static str> {
        Some(match self {
            Self::InFile { source, .. } => return source.advice(),
            Self::NotJpeg(_) | Self::UnknownFormat(_) => {
                "convert it to JPEG, PNG, BMP, GIF, TIFF or WebP, or leave it out"
            }
            Self::Truncated(_) => {
                "re-fetch the file, or decode what is there with --load-truncated \
                 (Limits::load_truncated), as Pillow's LOAD_TRUNCATED_IMAGES does"
            }
            Self::Corrupt(_) => "leave the file out, or re-encode it from a good copy",
            Self::Unsupported(_) => {
                "re-encode it as 8-bit baseline or progressive JPEG (Huffman coding)"
            }
            Self::UnsupportedImage { .. } => "convert it to a common variant (8-bit RGB PNG, say)",
            Self::TooLarge { .. } => {
                "raise --max-pixels (Limits::max_pixels) if the file is trusted"
            }
            Self::TooManyScans { .. } => {
                "raise --max-scans (Limits::max_scans) if the file is trusted"
            }
            Self::Gpu(_) => "retry with --backend cpu (the same bits), or check the GPU driver",
            _ => return None,
        })
    }

    pub(crate) fn corrupt(what: impl Into<String>) -> Self {
        Self::Corrupt(what.into())
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
