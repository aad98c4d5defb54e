//! What a user of the command line can do about an error, in a sentence: the library's errors
//! state facts, the command line says what to do about them (once per kind, after the errors).

use gpuprep::{formats, Error, GpuError};
use std::sync::LazyLock;

/// The advice for a file of no format gpuprep reads, naming those it does.
static CONVERT_IT: LazyLock<String> =
    LazyLock::new(|| format!("convert it to {}, or leave it out", formats::names(" or ")));

/// The advice for `error`, if it needs any beyond its message.
pub fn advice(error: &Error) -> Option<&'static str> {
    Some(match error {
        Error::InFile { source, .. } => return advice(source),
        Error::EmptyFile => "re-fetch the file, or leave it out",
        Error::OutputTooLarge { .. } => {
            "ask for a smaller --resize or --crop, or raise --max-pixels"
        }
        Error::NotJpeg(_) | Error::UnknownFormat { .. } => CONVERT_IT.as_str(),
        Error::Truncated(_) => {
            "re-fetch the file, or decode what is there with --load-truncated, as Pillow's \
             LOAD_TRUNCATED_IMAGES does"
        }
        Error::Corrupt { .. } => "leave the file out, or re-encode it from a good copy",
        Error::Unsupported(_) => {
            "re-encode it as 8-bit baseline or progressive JPEG (Huffman coding)"
        }
        Error::UnsupportedImage { .. } => "convert it to a common variant (8-bit RGB PNG, say)",
        Error::TooLarge { .. } => "raise --max-pixels if the file is trusted",
        Error::TooManyScans { .. } => "raise --max-scans if the file is trusted",
        Error::Gpu(GpuError::ImageTooLarge { .. }) => {
            "convert it with --backend cpu (the same bits)"
        }
        Error::Gpu(_) => "retry with --backend cpu (the same bits), or check the GPU driver",
        _ => return None,
    })
}
