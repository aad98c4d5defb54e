//! Every input format, in one table ([`FORMATS`]): JPEG through gpuprep's own decoder
//! (coefficients for the GPU stages); JPEG 2000 through OpenJPEG; PNG, BMP, GIF, TIFF, WebP and
//! ICO (its largest image, as Pillow opens it) through the `image` crate; all but JPEG converted
//! to RGB pixels exactly as Pillow's `convert('RGB')` converts them. The pixel path is the slower one on the GPU (the
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

/// One input format gpuprep reads: its name in messages, its file extensions, and its decoder,
/// which also says how a file of it is recognised from its first bytes.
pub struct Format {
    /// Its name in errors and messages (`"PNG"`).
    pub name: &'static str,
    /// Its file extensions, in lower case: what a folder given to `convert` contributes and
    /// which member of a WebDataset sample is its image.
    pub extensions: &'static [&'static str],
    decoder: Decoder,
}

/// Who decodes a format.
enum Decoder {
    /// gpuprep's own decoder, to coefficients for the GPU stages.
    Jpeg,
    /// OpenJPEG, as Pillow decodes it.
    Jpeg2000,
    /// The `image` crate.
    Image(ImageFormat),
}

/// Every format gpuprep reads, the one table the decoders, the extension lists, the messages
/// and the command line's help read. A new format is a row here and its decoder.
pub const FORMATS: [Format; 8] = [
    Format {
        name: "JPEG",
        extensions: &["jpg", "jpeg", "jpe", "jfif", "jif"],
        decoder: Decoder::Jpeg,
    },
    Format {
        name: "PNG",
        extensions: &["png"],
        decoder: Decoder::Image(ImageFormat::Png),
    },
    Format {
        name: "BMP",
        extensions: &["bmp"],
        decoder: Decoder::Image(ImageFormat::Bmp),
    },
    Format {
        name: "GIF",
        extensions: &["gif"],
        decoder: Decoder::Image(ImageFormat::Gif),
    },
    Format {
        name: "TIFF",
        extensions: &["tif", "tiff"],
        decoder: Decoder::Image(ImageFormat::Tiff),
    },
    Format {
        name: "WebP",
        extensions: &["webp"],
        decoder: Decoder::Image(ImageFormat::WebP),
    },
    Format {
        name: "ICO",
        extensions: &["ico"],
        decoder: Decoder::Image(ImageFormat::Ico),
    },
    Format {
        name: "JPEG 2000",
        extensions: &["jp2", "j2k", "jpc", "j2c", "jpf", "jpx"],
        decoder: Decoder::Jpeg2000,
    },
];

/// JPEG, the format the GPU decodes from its coefficients.
pub const JPEG: &Format = &FORMATS[0];

impl Format {
    /// Whether `data` starts as a file of this format: JPEG's SOI marker, JPEG 2000's JP2
    /// signature box or bare codestream, the `image` crate's guess for the others.
    pub fn sniffs(&self, data: &[u8]) -> bool {
        match self.decoder {
            Decoder::Jpeg => data.starts_with(&[0xFF, 0xD8]),
            Decoder::Jpeg2000 => JPEG_2000_SIGNATURES.iter().any(|s| data.starts_with(s)),
            Decoder::Image(format) => image::guess_format(data).is_ok_and(|f| f == format),
        }
    }
}

/// The format `data` is a file of, if gpuprep reads it.
pub fn sniff(data: &[u8]) -> Option<&'static Format> {
    FORMATS.iter().find(|format| format.sniffs(data))
}

/// Every format's extensions, in the table's order.
pub fn extensions() -> impl Iterator<Item = &'static str> {
    FORMATS
        .iter()
        .flat_map(|format| format.extensions.iter().copied())
}

/// Whether `extension` (any case) is one of a format gpuprep reads.
pub fn is_image_extension(extension: &str) -> bool {
    extensions().any(|e| e.eq_ignore_ascii_case(extension))
}

/// The formats' names, joined by `", "`, the last by `last` (`"JPEG, PNG, …, ICO or JPEG 2000"`
/// for `" or "`).
pub fn names(last: &str) -> String {
    let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
    match names.split_last() {
        Some((final_name, others)) if !others.is_empty() => {
            format!("{}{last}{final_name}", others.join(", "))
        }
        _ => names.concat(),
    }
}

/// The comment Pillow reads from a JPEG (`im.info["comment"]`: its last COM segment before
/// the image data), which `Image.save` writes again; `None` for a file without one.
pub fn jpeg_comment(data: &[u8]) -> Option<Vec<u8>> {
    let mut comment = None;
    for (marker, body) in jpeg_segments(data) {
        match marker {
            0xFE => comment = Some(body.to_vec()),
            0xDA => break,
            _ => {}
        }
    }
    comment
}

/// A JPEG's marker segments (marker, body) up to and with the first scan's header, found as
/// Pillow's JPEG parser finds them: bytes other than 0xFF skipped, 0xFF fill and escaped
/// 0xFF00 passed over, the standalone markers (TEM, RSTn) taken without a length.
fn jpeg_segments(data: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut at = if data.starts_with(&[0xFF, 0xD8]) {
        2
    } else {
        data.len()
    };
    std::iter::from_fn(move || {
        let marker = loop {
            let (&first, &marker) = (data.get(at)?, data.get(at + 1)?);
            match (first, marker) {
                // Junk, or 0xFF fill before a marker: one byte on.
                (0x00..=0xFE, _) | (0xFF, 0xFF) => at += 1,
                // An escaped 0xFF, a standalone marker (TEM, RSTn, SOI, EOI): no length.
                (0xFF, 0x00 | 0x01 | 0xD0..=0xD9) => at += 2,
                _ => break marker,
            }
        };
        let length = usize::from(u16::from_be_bytes([*data.get(at + 2)?, *data.get(at + 3)?]));
        let body = data.get(at + 4..at + 2 + length.max(2))?;
        at = if marker == 0xDA {
            data.len()
        } else {
            at + 2 + length
        };
        Some((marker, body))
    })
}

/// The width and height an image's header gives (as stored, before any EXIF orientation):
/// a JPEG's frame header, or what the `image` crate reads of another format's; `None` where
/// neither says.
pub fn dimensions(data: &[u8]) -> Option<(usize, usize)> {
    if data.starts_with(&[0xFF, 0xD8]) {
        let is_frame = |m: u8| matches!(m, 0xC0..=0xCF) && !matches!(m, 0xC4 | 0xC8 | 0xCC);
        let (_, body) = jpeg_segments(data).find(|&(marker, _)| is_frame(marker))?;
        let side = |i: usize| usize::from(u16::from_be_bytes([body[i], body[i + 1]]));
        return (body.len() >= 5).then(|| (side(3), side(1)));
    }
    let reader = image::ImageReader::new(std::io::Cursor::new(data))
        .with_guessed_format()
        .ok()?;
    let (width, height) = reader.into_dimensions().ok()?;
    Some((width as usize, height as usize))
}

/// Decodes `data` of any supported format, checking `limits` before the pixels are allocated.
pub fn decode(data: &[u8], limits: &Limits) -> Result<Decoded> {
    if data.is_empty() {
        return Err(Error::EmptyFile);
    }
    let Some(format) = sniff(data) else {
        return Err(Error::UnknownFormat {
            start: data.iter().take(4).copied().collect(),
            known: names(", "),
        });
    };
    match format.decoder {
        Decoder::Jpeg => jpeg::decode_coefficients(data, limits).map(Decoded::Jpeg),
        Decoder::Jpeg2000 => decode_jpeg_2000(data, limits).map(Decoded::Pixels),
        Decoder::Image(image_format) => {
            decode_pixels(data, image_format, format.name, limits).map(Decoded::Pixels)
        }
    }
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
    let failed = |e: jpeg2k::error::Error| Error::corrupt_image(NAME, e.to_string());
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

fn decode_pixels(
    data: &[u8],
    format: ImageFormat,
    name: &'static str,
    limits: &Limits,
) -> Result<Pixels> {
    let failed = |e: image::ImageError| match e {
        image::ImageError::Unsupported(e) => Error::UnsupportedImage {
            format: name.into(),
            reason: e.to_string(),
        },
        e => Error::corrupt_image(name, e.to_string()),
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

#[cfg(test)]
mod tests {
    #[test]
    fn comments_are_found_as_pillow_finds_them() {
        let com = |text: &[u8]| {
            let mut segment = vec![0xFF, 0xFE];
            segment.extend_from_slice(&((text.len() + 2) as u16).to_be_bytes());
            segment.extend_from_slice(text);
            segment
        };
        let jfif = [0xFF, 0xE0, 0x00, 0x04, 0x4A, 0x46];
        let between: [&[u8]; 5] = [
            &[],
            &[0x00, 0x12, 0x34],
            &[0xFF, 0x00],
            &[0xFF, 0xFF, 0xFF],
            &[0xFF, 0xD0],
        ];
        for junk in between {
            let mut file = vec![0xFF, 0xD8];
            file.extend_from_slice(&jfif);
            file.extend_from_slice(junk);
            file.extend(com(b"first"));
            file.extend(com(b"last"));
            file.extend_from_slice(&[0xFF, 0xDA, 0x00, 0x02]);
            file.extend(com(b"in the data"));
            assert_eq!(
                jpeg_comment(&file).as_deref(),
                Some(&b"last"[..]),
                "{junk:?}"
            );
        }
        assert_eq!(jpeg_comment(&[0xFF, 0xD8, 0xFF, 0xD9]), None);
    }

    use super::*;

    /// Each file of tests/data/formats/ (and a JPEG photo) is sniffed as the format its
    /// extension names, by the one table; every format of the table is met.
    #[test]
    fn each_file_is_sniffed_as_the_format_of_its_extension() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut files: Vec<_> = std::fs::read_dir(root.join("formats"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.push(root.join("photos/mpl__grace_hopper.jpg"));
        let mut met = std::collections::BTreeSet::new();
        for path in files {
            let extension = path.extension().unwrap().to_str().unwrap().to_lowercase();
            let by_extension = FORMATS
                .iter()
                .find(|f| f.extensions.contains(&extension.as_str()))
                .unwrap_or_else(|| panic!("{}: no format has this extension", path.display()));
            let data = std::fs::read(&path).unwrap();
            let sniffed = sniff(&data).map(|f| f.name);
            assert_eq!(sniffed, Some(by_extension.name), "{}", path.display());
            met.insert(by_extension.name);
        }
        assert_eq!(met.len(), FORMATS.len(), "formats without a file: {met:?}");
    }

    #[test]
    fn the_names_and_extensions_come_from_the_table() {
        assert_eq!(
            names(" or "),
            "JPEG, PNG, BMP, GIF, TIFF, WebP, ICO or JPEG 2000"
        );
        assert!(is_image_extension("JPG") && is_image_extension("j2k"));
        assert!(!is_image_extension("ppm") && !is_image_extension(""));
        let unknown = decode(b"P6\n1 1\n255\n\0\0\0", &Limits::default()).err();
        assert_eq!(
            unknown.map(|e| e.to_string()).as_deref(),
            Some(
                "not an image gpuprep reads (JPEG, PNG, BMP, GIF, TIFF, WebP, ICO, JPEG 2000): \
                 starts with [50, 36, 0a, 31]"
            )
        );
        let corrupt = decode(b"\x89PNG\r\n\x1a\n broken", &Limits::default()).err();
        let message = corrupt.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.starts_with("corrupt PNG: "), "{message}");
    }
}
