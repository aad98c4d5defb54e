//! The orientation a JPEG's metadata records, read the way Pillow's `getexif()` reads it for
//! `ImageOps.exif_transpose`: tag 0x0112 of the first EXIF segment's IFD0, or else
//! `tiff:Orientation` in the XMP packet. Nothing else of the metadata changes pixels.

/// The orientation of tag 0x0112 in an APP1 `Exif\0\0` segment, when it holds one integer
/// (SHORT, LONG, SSHORT or SLONG with a count of 1; Pillow decodes other types to values that
/// are no orientation).
pub(crate) fn exif_orientation(body: &[u8]) -> Option<u32> {
    let tiff = body.strip_prefix(b"Exif\0\0")?;
    let big_endian = match tiff.get(..4)? {
        b"MM\0*" => true,
        b"II*\0" => false,
        _ => return None,
    };
    let u16_at = |at: usize| -> Option<u32> {
        let b: [u8; 2] = tiff.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(u32::from(if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }))
    };
    let u32_at = |at: usize| -> Option<u32> {
        let b: [u8; 4] = tiff.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let ifd = usize::try_from(u32_at(4)?).ok()?;
    let entries = u16_at(ifd)? as usize;
    (0..entries).find_map(|e| {
        let at = ifd + 2 + 12 * e;
        if u16_at(at)? != 0x0112 || u32_at(at + 4)? != 1 {
            return None;
        }
        match u16_at(at + 2)? {
            3 | 8 => u16_at(at + 8),
            4 | 9 => u32_at(at + 8),
            _ => None,
        }
    })
}

/// The digit of `tiff:Orientation="N"` or `tiff:Orientation>N` in an APP1 XMP segment (the
/// first place that matches, as Python's `re.search` finds it).
pub(crate) fn xmp_orientation(body: &[u8]) -> Option<u32> {
    const KEY: &[u8] = b"tiff:Orientation";
    let packet = body.strip_prefix(b"http://ns.adobe.com/xap/1.0/\0")?;
    (0..packet.len())
        .filter(|&i| packet[i..].starts_with(KEY))
        .find_map(|i| match packet[i + KEY.len()..] {
            [b'=', b'"', digit, ..] | [b'>', digit, ..] if digit.is_ascii_digit() => {
                Some(u32::from(digit - b'0'))
            }
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exif(big_endian: bool, tag_type: u16, count: u32, value: u32) -> Vec<u8> {
        let u16b = |v: u16| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u32b = |v: u32| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut b = b"Exif\0\0".to_vec();
        b.extend_from_slice(if big_endian { b"MM\0*" } else { b"II*\0" });
        b.extend_from_slice(&u32b(8));
        b.extend_from_slice(&u16b(2));
        // An unrelated tag first, then the orientation.
        b.extend_from_slice(&u16b(0x010F));
        b.extend_from_slice(&u16b(2));
        b.extend_from_slice(&u32b(4));
        b.extend_from_slice(b"abc\0");
        b.extend_from_slice(&u16b(0x0112));
        b.extend_from_slice(&u16b(tag_type));
        b.extend_from_slice(&u32b(count));
        let mut field = [0u8; 4];
        if matches!(tag_type, 3 | 8) {
            field[..2].copy_from_slice(&u16b(value as u16));
        } else {
            field = u32b(value);
        }
        b.extend_from_slice(&field);
        b
    }

    #[test]
    fn orientation_is_read_in_both_byte_orders_and_integer_types() {
        for big_endian in [false, true] {
            assert_eq!(exif_orientation(&exif(big_endian, 3, 1, 6)), Some(6));
            assert_eq!(exif_orientation(&exif(big_endian, 4, 1, 8)), Some(8));
            assert_eq!(exif_orientation(&exif(big_endian, 3, 2, 6)), None);
            assert_eq!(exif_orientation(&exif(big_endian, 2, 1, 6)), None);
        }
        let cut = exif(false, 3, 1, 6);
        for len in 0..cut.len() - 4 {
            assert_eq!(exif_orientation(&cut[..len]), None, "{len}");
        }
    }

    #[test]
    fn xmp_orientation_is_an_attribute_or_an_element() {
        let xmp = |s: &str| [&b"http://ns.adobe.com/xap/1.0/\0"[..], s.as_bytes()].concat();
        assert_eq!(
            xmp_orientation(&xmp("<x tiff:Orientation=\"3\"/>")),
            Some(3)
        );
        assert_eq!(
            xmp_orientation(&xmp("<tiff:Orientation>7</tiff:Orientation>")),
            Some(7)
        );
        assert_eq!(xmp_orientation(&xmp("<x tiff:Orientation=\"\"/>")), None);
        assert_eq!(xmp_orientation(b"<x tiff:Orientation=\"3\"/>"), None);
    }
}
