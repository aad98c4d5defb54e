//! Every input format: JPEG through gpuprep's own decoder (coefficients for the GPU stages), and
//! PNG, BMP, GIF, TIFF, WebP and ICO (its largest image, as Pillow opens it) through the `image`
//! crate, converted to RGB pixels exactly as
//! Pillow's `convert('RGB')` converts them. The pixel path is the slower one on the GPU (the
//! pixels are uploaded, not coefficients), and every batch report counts its images.

use crate::error::{Error, Result};
use crate::jpeg::{self, CoefficientImage};
use crate::{Limits, RgbImage};
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};
use std::io::Cursor;

/// An input, decoded as far as its format allows.
pub enum Decoded {
    /// A JPEG's quantised coefficients: the GPU does the rest.
    Jpeg(CoefficientImage),
    /// Another format's pixels, as `Image.open(f).convert('RGB')` gives them.
    Pixels(Pixels),
}

/// The RGB pixels of a non-JPEG image, and its EXIF orientation (1 to 8; 1 when it has none).
pub struct Pixels {
    /// The pixels.
    pub rgb: RgbImage,
    /// What [`crate::Transform::exif_transpose`] would apply.
    pub orientation: u8,
}

/// File extensions of the formats gpuprep decodes (lower case): what a folder given to
/// `convert` contributes and which member of a WebDataset sample is its image.
pub const EXTENSIONS: [&str; 18] = [
    "jpg", "jpeg", "jpe", "jfif", "jif", "png", "bmp", "gif", "tif", "tiff", "webp", "ico", "jp2",
    "j2k", "jpc", "j2c", "jpf", "jpx",
];

/// The formats besides JPEG, by the name errors use.
pub const OTHER_FORMATS: [(ImageFormat, &str); 6] = [
    (ImageFormat::Png, "PNG"),
    (ImageFormat::Ico, "ICO"),
    (ImageFormat::Bmp, "BMP"),
    (ImageFormat::Gif, "GIF"),
    (ImageFormat::Tiff, "TIFF"),
    (ImageFormat::WebP, "WebP"),
];

/// Decodes `data` of any supported format, checking `limits` before the pixels are allocated.
pub fn decode(data: &[u8], limits: &Limits) -> Result<Decoded> {
    if data.is_empty() {
        return Err(Error::EmptyFile);
    }
    if data.starts_with(&[0xFF, 0xD8]) {
        return jpeg::decode_coefficients(data, limits).map(Decoded::Jpeg);
    }
    if JPEG_2000_SIGNATURES.iter().any(|s| data.starts_with(s)) {
        return decode_jpeg_2000(data, limits).map(Decoded::Pixels);
    }
    let format = image::guess_format(data).ok();
    let Some(&(format, name)) = OTHER_FORMATS.iter().find(|(f, _)| Some(*f) == format) else {
        return Err(Error::UnknownFormat(data.iter().take(4).copied().collect()));
    };
    decode_pixels(data, format, name, limits).map(Decoded::Pixels)
}

/// The JP2 file signature box and the bare codestream's SOC + SIZ markers.
const JPEG_2000_SIGNATURES: [&[u8]; 2] = [b"\x00\x00\x00\x0cjP  \r\n\x87\n", b"\xff\x4f\xff\x51"];

/// A JPEG 2000 file (JP2 or a bare codestream) through OpenJPEG, which Pillow decodes it with, and
/// to RGB as Pillow's `Jpeg2KDecode.c` unpacks 8-bit unsigned samples (copied; grey replicated;
/// alpha dropped). The header is read and the pixel limit checked before anything is decoded.
/// Other variants (subsampled, other precisions, sYCC, CMYK) are refused by name.
fn decode_jpeg_2000(data: &[u8], limits: &Limits) -> Result<Pixels> {
    const NAME: &str = "JPEG 2000";
    let unsupported = |reason: String| Error::UnsupportedImage {
        format: NAME.into(),
        reason,
    };
    let failed = |e: jpeg2k::error::Error| Error::corrupt(format!("{NAME}: {e}"));
    let file = jpeg2k::DumpImage::from_bytes(data).map_err(failed)?;
    let (width, height) = (file.img.orig_width(), file.img.orig_height());
    let components = file.img.num_components();
    if components > 4 {
        return Err(unsupported(format!("{components} components")));
    }
    if u64::from(width) * u64::from(height) > limits.max_pixels {
        return Err(Error::TooLarge {
            width,
            height,
            limit: limits.max_pixels,
        });
    }
    file.decode().map_err(failed)?;
    let planes = file.img.components();
    let color_space = file.img.color_space();
    if let Some(c) = planes.iter().find(|c| c.precision() != 8 || c.is_signed()) {
        let sign = if c.is_signed() { "signed" } else { "unsigned" };
        return Err(unsupported(format!("{sign} {}-bit samples", c.precision())));
    }
    if planes
        .iter()
        .any(|c| (c.width(), c.height()) != (width, height))
    {
        return Err(unsupported("subsampled components".into()));
    }
    let rgb_like = matches!(
        color_space,
        jpeg2k::ColorSpace::SRGB | jpeg2k::ColorSpace::Unspecified | jpeg2k::ColorSpace::Unknown
    );
    let colour = match planes.len() {
        1 | 2 => [0, 0, 0],
        3 | 4 if rgb_like => [0, 1, 2],
        n => return Err(unsupported(format!("{n} components in {color_space:?}"))),
    };
    let samples: [&[i32]; 3] = colour.map(|c| planes[c].data());
    let pixels = (width as usize) * (height as usize);
    let mut rgb = vec![0u8; pixels * 3];
    for (i, pixel) in rgb.chunks_exact_mut(3).enumerate() {
        for (out, plane) in pixel.iter_mut().zip(&samples) {
            // OpenJPEG clamps 8-bit unsigned samples to 0..=255 as it decodes them.
            *out = plane[i] as u8;
        }
    }
    Ok(Pixels {
        rgb: RgbImage {
            width: width as usize,
            height: height as usize,
            data: rgb,
        },
        orientation: 1,
    })
}

fn decode_pixels(data: &[u8], format: ImageFormat, name: &str, limits: &Limits) -> Result<Pixels> {
    let failed = |e: image::ImageError| match e {
        image::ImageError::Unsupported(e) => Error::UnsupportedImage {
            format: name.into(),
            reason: e.to_string(),
        },
        e => Error::corrupt(format!("{name}: {e}")),
    };
    let mut reader = ImageReader::with_format(Cursor::new(data), format);
    let mut bounds = image::Limits::default();
    // 16-bit RGBA is the widest the decoders produce: 8 bytes a pixel.
    bounds.max_alloc = Some(limits.max_pixels.saturating_mul(8).saturating_add(1 << 20));
    reader.limits(bounds);
    let mut decoder = reader.into_decoder().map_err(failed)?;
    let (width, height) = decoder.dimensions();
    if u64::from(width) * u64::from(height) > limits.max_pixels {
        return Err(Error::TooLarge {
            width,
            height,
            limit: limits.max_pixels,
        });
    }
    let orientation = decoder.orientation().map_or(1, |o| o.to_exif());
    let image = DynamicImage::from_decoder(decoder).map_err(failed)?;
    Ok(Pixels {
        rgb: pillow_rgb(image, name)?,
        orientation,
    })
}

/// Pillow's `convert('RGB')` of what the decoder gave: alpha dropped (never composited), grey
/// replicated, 16-bit samples cut to their high byte as Pillow's `;16B` unpackers do, except
/// 16-bit grey, which Pillow holds as `I;16` and clips to 255.
fn pillow_rgb(image: DynamicImage, name: &str) -> Result<RgbImage> {
    let (width, height) = (image.width() as usize, image.height() as usize);
    let data = match image {
        DynamicImage::ImageRgb8(rgb) => rgb.into_raw(),
        DynamicImage::ImageRgba8(rgba) => rgba.pixels().flat_map(|p| [p[0], p[1], p[2]]).collect(),
        DynamicImage::ImageLuma8(grey) => grey.pixels().flat_map(|p| [p[0]; 3]).collect(),
        DynamicImage::ImageLumaA8(grey) => grey.pixels().flat_map(|p| [p[0]; 3]).collect(),
        DynamicImage::ImageLuma16(grey) => grey
            .pixels()
            .flat_map(|p| [p[0].min(255) as u8; 3])
            .collect(),
        DynamicImage::ImageLumaA16(grey) => {
            grey.pixels().flat_map(|p| [(p[0] >> 8) as u8; 3]).collect()
        }
        DynamicImage::ImageRgb16(rgb) => rgb
            .pixels()
            .flat_map(|p| p.0.map(|v| (v >> 8) as u8))
            .collect(),
        DynamicImage::ImageRgba16(rgba) => rgba
            .pixels()
            .flat_map(|p| [p[0], p[1], p[2]].map(|v| (v >> 8) as u8))
            .collect(),
        other => {
            return Err(Error::UnsupportedImage {
                format: name.into(),
                reason: format!("{:?} samples", other.color()),
            })
        }
    };
    Ok(RgbImage {
        width,
        height,
        data,
    })
}
