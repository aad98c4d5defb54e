//! Decoded images.

/// An 8-bit RGB image, rows top to bottom, pixels interleaved (H×W×3), like
/// `np.asarray(pil_image.convert('RGB'))`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `height * width * 3` bytes.
    pub data: Vec<u8>,
}
