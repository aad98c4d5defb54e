//! The comment Pillow keeps in `im.info["comment"]` when it opens a file, which
//! `Image.save(f, "JPEG")` writes again as the JPEG's COM segment (it survives `convert` and
//! `resize`): a JPEG's last COM segment before its scan, a GIF's comment extensions of its first
//! frame (joined by newlines), a PNG's last text chunk keyed `comment` (tEXt and zTXt read as
//! Latin-1, iTXt as UTF-8, written as UTF-8), a JPEG 2000 codestream's first COM segment in its
//! main header. The other formats carry none.

use crate::formats;

/// Pillow's bound on a PNG text chunk's decompressed size (`ImageFile.SAFEBLOCK`); a larger
/// one makes Pillow refuse the file.
const MAX_TEXT_BYTES: usize = 1 << 20;

/// The bytes Pillow would write as the comment of a JPEG saved from the image in `data`;
/// `None` where it writes none.
pub fn carried(data: &[u8]) -> Option<Vec<u8>> {
    let comment = if data.starts_with(&[0xFF, 0xD8]) {
        formats::jpeg_comment(data)
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        gif(data)
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        png(data)
    } else {
        jpeg2000(data)
    };
    comment.filter(|c| !c.is_empty())
}

/// A GIF's comment extensions before its first image, as GifImagePlugin reads them.
fn gif(data: &[u8]) -> Option<Vec<u8>> {
    let flags = *data.get(10)?;
    let mut at = 13;
    if flags & 0x80 != 0 {
        at += 3 << ((flags & 7) + 1);
    }
    let mut comment: Option<Vec<u8>> = None;
    loop {
        match *data.get(at)? {
            b',' => return comment,
            // The trailer before any image: Pillow cannot open the file.
            b';' => return None,
            b'!' => {
                let label = *data.get(at + 1)?;
                at += 2;
                let mut text = Vec::new();
                loop {
                    let length = usize::from(*data.get(at)?);
                    at += 1;
                    if length == 0 {
                        break;
                    }
                    text.extend_from_slice(data.get(at..at + length)?);
                    at += length;
                }
                if label == 0xFE {
                    match comment.as_mut() {
                        Some(earlier) => {
                            earlier.push(b'\n');
                            earlier.extend(text);
                        }
                        None => comment = Some(text),
                    }
                }
            }
            // Pillow passes over any other byte.
            _ => at += 1,
        }
    }
}

/// A PNG's last text chunk keyed `comment`, before and after the image data, as
/// PngImagePlugin keeps it (an animated PNG's stop at its second frame).
fn png(data: &[u8]) -> Option<Vec<u8>> {
    let mut at = 8;
    let (mut comment, mut animated, mut after_image) = (None, false, false);
    while let Some(header) = data.get(at..at + 8) {
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = &header[4..8];
        let Some(body) = data.get(at + 8..at + 8 + length) else {
            break;
        };
        match kind {
            b"IEND" => break,
            b"IDAT" => after_image = true,
            b"acTL" => animated = body.get(..4).is_some_and(|n| n > &[0, 0, 0, 1][..]),
            b"fcTL" if animated && after_image => break,
            b"tEXt" | b"zTXt" | b"iTXt" => {
                if let Some(text) = text_chunk(kind, body) {
                    comment = Some(text);
                }
            }
            _ => {}
        }
        at += 12 + length;
    }
    comment.map(String::into_bytes)
}

/// The text of a PNG text chunk keyed `comment`, as Pillow decodes it; `None` for another key
/// or a chunk Pillow passes over.
fn text_chunk(kind: &[u8], body: &[u8]) -> Option<String> {
    let (key, value) = match body.iter().position(|&b| b == 0) {
        Some(nul) => (&body[..nul], &body[nul + 1..]),
        None => (body, &[][..]),
    };
    if key != b"comment" {
        return None;
    }
    let latin1 = |bytes: &[u8]| bytes.iter().map(|&b| char::from(b)).collect::<String>();
    match kind {
        b"tEXt" => Some(latin1(value)),
        b"zTXt" => {
            let (&method, compressed) = value.split_first().unwrap_or((&0, &[]));
            if method != 0 {
                return None;
            }
            // A stream zlib refuses is read as empty text.
            let text = inflate(compressed).unwrap_or_default();
            Some(latin1(&text))
        }
        _ => {
            let (&compressed, rest) = value.split_first()?;
            let (&method, rest) = rest.split_first()?;
            let mut fields = rest.splitn(3, |&b| b == 0);
            let (language, translated, text) = (fields.next()?, fields.next()?, fields.next()?);
            let text = match (compressed, method) {
                (0, _) => text.to_vec(),
                (_, 0) => inflate(text)?,
                _ => return None,
            };
            std::str::from_utf8(language).ok()?;
            std::str::from_utf8(translated).ok()?;
            String::from_utf8(text).ok()
        }
    }
}

/// A zlib stream's bytes, at most [`MAX_TEXT_BYTES`].
fn inflate(compressed: &[u8]) -> Option<Vec<u8>> {
    miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(compressed, MAX_TEXT_BYTES).ok()
}

/// A JPEG 2000 file's comment: its codestream's first COM segment after SIZ, before the first
/// tile (less its 2-byte registration), as Jpeg2KImagePlugin reads it. In a JP2 file, Pillow
/// looks only in a codestream box that follows the header box.
fn jpeg2000(data: &[u8]) -> Option<Vec<u8>> {
    let codestream = if data.starts_with(b"\xff\x4f\xff\x51") {
        0
    } else if data.starts_with(b"\x00\x00\x00\x0cjP  \r\n\x87\n") {
        let mut at = 12;
        loop {
            let header = data.get(at..at + 8)?;
            let (mut length, mut header_length) = (be32(header) as u64, 8);
            if length == 1 {
                length = u64::from_be_bytes(data.get(at + 8..at + 16)?.try_into().ok()?);
                header_length = 16;
            }
            if length < header_length {
                return None;
            }
            let end = at.checked_add(usize::try_from(length).ok()?)?;
            let header_box = &header[4..8] == b"jp2h";
            at = end;
            if header_box {
                break;
            }
        }
        if !data.get(at..at + 12)?.ends_with(b"jp2c\xff\x4f\xff\x51") {
            return None;
        }
        at + 8
    } else {
        return None;
    };
    let size_length = usize::from(be16(data, codestream + 4)?);
    let mut at = codestream + 4 + size_length;
    loop {
        let marker = *data.get(at + 1)?;
        if marker == 0x90 || marker == 0xD9 {
            return None;
        }
        let length = usize::from(be16(data, at + 2)?);
        if marker == 0x64 {
            let end = (at + 2 + length.max(2)).min(data.len());
            return Some(data.get(at + 4..end)?.get(2..).unwrap_or_default().to_vec());
        }
        at += 2 + length;
    }
}

/// The big-endian u16 at `at`, where `data` holds one.
fn be16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GIF of one 1×1 image behind `extensions` (label, sub-blocks).
    fn gif_with(extensions: &[(u8, &[&[u8]])]) -> Vec<u8> {
        let mut gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00".to_vec();
        for (label, blocks) in extensions {
            gif.extend([b'!', *label]);
            for block in *blocks {
                gif.push(block.len() as u8);
                gif.extend_from_slice(block);
            }
            gif.push(0);
        }
        gif.extend(b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00;");
        gif
    }

    #[test]
    fn a_gifs_comments_are_joined_by_newlines() {
        let gif = gif_with(&[
            (0xF9, &[b"\x00\x00\x00\x00"]),
            (0xFE, &[b"first ", b"part"]),
            (0xFE, &[b"second"]),
        ]);
        assert_eq!(carried(&gif).unwrap(), b"first part\nsecond");
        assert_eq!(carried(&gif_with(&[(0xF9, &[b"\x00\x00\x00\x00"])])), None);
        for end in 0..gif.len() {
            let _ = carried(&gif[..end]);
        }
    }

    fn chunk(kind: &[u8], body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        out.extend([0; 4]);
        out
    }

    #[test]
    fn a_pngs_last_comment_chunk_is_kept_as_utf8() {
        let compressed = miniz_oxide::deflate::compress_to_vec_zlib("zipped é".as_bytes(), 6);
        let mut z = b"comment\0\0".to_vec();
        z.extend(&compressed);
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend(chunk(b"tEXt", b"comment\0caf\xe9"));
        png.extend(chunk(b"tEXt", b"Title\0other"));
        png.extend(chunk(b"IDAT", b""));
        let latin1 = png.clone();
        png.extend(chunk(b"zTXt", &z));
        // tEXt is Latin-1: é (0xE9) is written as UTF-8.
        assert_eq!(carried(&latin1).unwrap(), "café".as_bytes());
        // zTXt after the image data replaces it; its bytes are Latin-1 too.
        assert_eq!(carried(&png).unwrap(), "zipped Ã©".as_bytes());
        png.extend(chunk(b"iTXt", "comment\0\0\0en\0\0naïve".as_bytes()));
        assert_eq!(carried(&png).unwrap(), "naïve".as_bytes());
        for end in 0..png.len() {
            let _ = carried(&png[..end]);
        }
    }

    #[test]
    fn a_jpeg_2000_codestreams_comment_loses_its_registration() {
        let mut j2k = b"\xff\x4f\xff\x51\x00\x04\x00\x00".to_vec();
        j2k.extend(b"\xff\x52\x00\x03\x00");
        j2k.extend(b"\xff\x64\x00\x08\x00\x01note");
        j2k.extend(b"\xff\x90\x00\x0a");
        assert_eq!(carried(&j2k).unwrap(), b"note");
        let mut jp2 = b"\x00\x00\x00\x0cjP  \r\n\x87\n".to_vec();
        jp2.extend(b"\x00\x00\x00\x0cftypjp2 ");
        jp2.extend(b"\x00\x00\x00\x09jp2h\x00");
        jp2.extend((8 + j2k.len() as u32).to_be_bytes());
        jp2.extend(b"jp2c");
        jp2.extend(&j2k);
        assert_eq!(carried(&jp2).unwrap(), b"note");
        // Cut anywhere, a file gives its comment or none, never a panic.
        for file in [&j2k, &jp2] {
            for end in 0..file.len() {
                let _ = carried(&file[..end]);
            }
        }
    }
}
