//! Marker segments: what SOF, SOS, DQT, DHT, DRI, APP0 and APP14 say.
//!
//! Checks follow libjpeg's `jdmarker.c`, so that a file is refused exactly when it must be.

use super::huffman::HuffmanSpec;
use crate::error::{Error, Result, Unsupported};

/// Start of image.
pub(crate) const SOI: u8 = 0xD8;
/// End of image.
pub(crate) const EOI: u8 = 0xD9;
/// Start of scan.
pub(crate) const SOS: u8 = 0xDA;
/// Define quantisation tables.
pub(crate) const DQT: u8 = 0xDB;
/// Define Huffman tables.
pub(crate) const DHT: u8 = 0xC4;
/// Define restart interval.
pub(crate) const DRI: u8 = 0xDD;
/// First restart marker (RST0); RST0..RST7 are consecutive.
pub(crate) const RST0: u8 = 0xD0;

/// The coding process a SOF marker announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Process {
    /// SOF0 and SOF1: sequential DCT, Huffman coding.
    Sequential,
    /// SOF2: progressive DCT, Huffman coding.
    Progressive,
}

/// One component as the frame header declares it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameComponent {
    pub id: u8,
    pub h: u8,
    pub v: u8,
    pub quant_slot: u8,
}

/// The frame header (SOF).
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    pub process: Process,
    pub width: u32,
    pub height: u32,
    pub components: Vec<FrameComponent>,
}

/// Classifies a SOFn marker: the process it starts, or why it is not decoded.
pub(crate) fn sof_process(marker: u8) -> Option<Result<Process>> {
    let unsupported = |what| Some(Err(Error::Unsupported(what)));
    match marker {
        0xC0 | 0xC1 => Some(Ok(Process::Sequential)),
        0xC2 => Some(Ok(Process::Progressive)),
        0xC3 => unsupported(Unsupported::Lossless),
        0xC5..=0xC7 => unsupported(Unsupported::Hierarchical),
        0xC9..=0xCB => unsupported(Unsupported::ArithmeticCoding),
        0xCD..=0xCF => unsupported(Unsupported::ArithmeticCoding),
        _ => None,
    }
}

/// Largest dimension libjpeg accepts.
pub(crate) const MAX_DIMENSION: u32 = 65500;

/// Parses a SOF segment body (after the length field).
pub(crate) fn parse_frame(process: Process, body: &[u8]) -> Result<Frame> {
    let [precision, h0, h1, w0, w1, count, ref specs @ ..] = *body else {
        return Err(Error::corrupt("SOF segment too short"));
    };
    if precision != 8 {
        return Err(Error::Unsupported(Unsupported::Precision(precision)));
    }
    if !matches!(count, 1 | 3 | 4) {
        return Err(Error::Unsupported(Unsupported::ComponentCount(count)));
    }
    if specs.len() != 3 * usize::from(count) {
        return Err(Error::corrupt(
            "SOF segment length does not match its components",
        ));
    }
    let height = u32::from(u16::from_be_bytes([h0, h1]));
    let width = u32::from(u16::from_be_bytes([w0, w1]));
    if height == 0 {
        return Err(Error::Unsupported(Unsupported::DefineNumberOfLines));
    }
    if width == 0 {
        return Err(Error::corrupt("image width is 0"));
    }
    let components = specs
        .chunks_exact(3)
        .map(|c| FrameComponent {
            id: c[0],
            h: c[1] >> 4,
            v: c[1] & 15,
            quant_slot: c[2],
        })
        .collect::<Vec<_>>();
    if components
        .iter()
        .any(|c| !(1..=4).contains(&c.h) || !(1..=4).contains(&c.v))
    {
        return Err(Error::corrupt("sampling factor outside 1..4"));
    }
    if components.iter().any(|c| c.quant_slot > 3) {
        return Err(Error::corrupt("quantisation table index above 3"));
    }
    Ok(Frame {
        process,
        width,
        height,
        components,
    })
}

/// One component of a scan: its index in the frame and its Huffman table slots.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanComponent {
    pub index: usize,
    pub dc_slot: usize,
    pub ac_slot: usize,
}

/// The scan header (SOS).
#[derive(Clone, Debug)]
pub(crate) struct ScanHeader {
    pub components: Vec<ScanComponent>,
    /// Spectral selection start and end (zigzag indices).
    pub ss: u8,
    pub se: u8,
    /// Successive approximation: previous and current point transform.
    pub ah: u8,
    pub al: u8,
}

/// Parses a SOS segment body against the frame's components.
pub(crate) fn parse_scan(body: &[u8], frame: &Frame) -> Result<ScanHeader> {
    let Some((&count, rest)) = body.split_first() else {
        return Err(Error::corrupt("SOS segment too short"));
    };
    let count = usize::from(count);
    if !(1..=4).contains(&count) || rest.len() != 2 * count + 3 {
        return Err(Error::corrupt("bad SOS segment length"));
    }
    let mut components: Vec<ScanComponent> = Vec::with_capacity(count);
    for spec in rest[..2 * count].chunks_exact(2) {
        let index = frame
            .components
            .iter()
            .position(|c| c.id == spec[0])
            .filter(|i| components.iter().all(|s| s.index != *i))
            .ok_or_else(|| Error::corrupt(format!("scan names unknown component {}", spec[0])))?;
        // Slots are checked when a table is used: progressive scans use only one of the two.
        let (dc_slot, ac_slot) = (usize::from(spec[1] >> 4), usize::from(spec[1] & 15));
        components.push(ScanComponent {
            index,
            dc_slot,
            ac_slot,
        });
    }
    let [ss, se, a] = rest[2 * count..] else {
        unreachable!("length checked above")
    };
    Ok(ScanHeader {
        components,
        ss,
        se,
        ah: a >> 4,
        al: a & 15,
    })
}

/// Parses a DQT body into the four table slots (natural order).
pub(crate) fn parse_dqt(mut body: &[u8], slots: &mut [Option<[u16; 64]>; 4]) -> Result<()> {
    while let Some((&pq_tq, rest)) = body.split_first() {
        let (wide, slot) = (pq_tq >> 4 != 0, usize::from(pq_tq & 15));
        if slot > 3 {
            return Err(Error::corrupt("quantisation table index above 3"));
        }
        let size = if wide { 128 } else { 64 };
        let values = rest
            .get(..size)
            .ok_or_else(|| Error::corrupt("DQT segment too short"))?;
        let mut table = [0u16; 64];
        for (k, &natural) in ZIGZAG_TO_NATURAL[..64].iter().enumerate() {
            table[natural] = if wide {
                u16::from_be_bytes([values[2 * k], values[2 * k + 1]])
            } else {
                u16::from(values[k])
            };
        }
        slots[slot] = Some(table);
        body = &rest[size..];
    }
    Ok(())
}

/// Parses a DHT body into the DC and AC table slots.
pub(crate) fn parse_dht(
    mut body: &[u8],
    dc: &mut [Option<HuffmanSpec>; 4],
    ac: &mut [Option<HuffmanSpec>; 4],
) -> Result<()> {
    while !body.is_empty() {
        let short = || Error::corrupt("DHT segment too short");
        let (class_slot, rest) = body.split_first().ok_or_else(short)?;
        let counts: [u8; 16] = rest.get(..16).ok_or_else(short)?.try_into().expect("16");
        let total: usize = counts.iter().map(|&c| usize::from(c)).sum();
        if total > 256 {
            return Err(Error::corrupt("bad Huffman table"));
        }
        let symbols = rest.get(16..16 + total).ok_or_else(short)?.to_vec();
        let slot = usize::from(class_slot & 15);
        let target = match class_slot >> 4 {
            0 if slot < 4 => &mut dc[slot],
            1 if slot < 4 => &mut ac[slot],
            _ => return Err(Error::corrupt("bad Huffman table index")),
        };
        *target = Some(HuffmanSpec { counts, symbols });
        body = &rest[16 + total..];
    }
    Ok(())
}

/// Parses a DRI body: the restart interval in MCUs (0: none).
pub(crate) fn parse_dri(body: &[u8]) -> Result<u16> {
    match *body {
        [a, b] => Ok(u16::from_be_bytes([a, b])),
        _ => Err(Error::corrupt("bad DRI segment length")),
    }
}

/// True for an APP0 body that starts a JFIF header (libjpeg reads at least 14 bytes).
pub(crate) fn is_jfif(body: &[u8]) -> bool {
    body.len() >= 14 && body.starts_with(b"JFIF\0")
}

/// The colour transform flag of an Adobe APP14 body, if it is one (libjpeg needs 12 bytes).
pub(crate) fn adobe_transform(body: &[u8]) -> Option<u8> {
    (body.len() >= 12 && body.starts_with(b"Adobe")).then(|| body[11])
}

/// Natural (row-major) index of each zigzag position; entries past 63 absorb the overrun of a
/// corrupt run length, as libjpeg's `jpeg_natural_order` does.
pub(crate) const ZIGZAG_TO_NATURAL: [usize; 80] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_is_a_permutation() {
        let mut seen = [false; 64];
        for &n in &ZIGZAG_TO_NATURAL[..64] {
            assert!(!seen[n]);
            seen[n] = true;
        }
    }

    #[test]
    fn frame_rejects_12_bit_by_name() {
        let body = [12, 0, 8, 0, 8, 1, 1, 0x11, 0];
        let err = parse_frame(Process::Sequential, &body).unwrap_err();
        assert!(
            matches!(err, Error::Unsupported(Unsupported::Precision(12))),
            "{err}"
        );
    }
}
