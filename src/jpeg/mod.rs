//! JPEG entropy decoding on the CPU: bytes in, [`CoefficientImage`] out.
//!
//! Everything after this (IDCT, upsampling, colour, resize) is a pixel stage: see
//! [`crate::reference`] for the CPU reference of each.

mod bits;
mod coefficients;
pub(crate) mod compact;
mod exif;
mod huffman;
mod markers;
#[cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "the CPU mirror of stage 0's passes runs in the tests that hold the shader to \
                  it; the library calls only `decode_sequential`, for what the GPU gives up on"
    )
)]
pub(crate) mod parallel;
mod progressive;
mod scan;
pub(crate) mod segment;
mod sequential;
mod smoothing;

pub use coefficients::{CoefficientImage, ColorSpace, Component, Smoothing};
pub(crate) use markers::ZIGZAG_TO_NATURAL;

use crate::error::{Error, Result, Unsupported};
use bits::{find_marker, BitReader};
use huffman::{HuffmanSpec, HuffmanTable};
use markers::{Frame, Process, ScanHeader};

/// Safety limits checked before anything is allocated, and how lenient to be with files that end
/// early. `Default` matches Pillow's defaults (its decompression-bomb error threshold, truncated
/// files refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted `width * height`. Default: 178,956,970 (Pillow raises
    /// `DecompressionBombError` above this).
    pub max_pixels: u64,
    /// Most scans accepted in one file. Every scan walks a component's blocks, so a progressive
    /// file of thousands of tiny scans is a CPU bomb; real files use fewer than 100. Default: 1000.
    pub max_scans: usize,
    /// Decode a file that ends early as far as it goes, like Pillow with
    /// `ImageFile.LOAD_TRUNCATED_IMAGES = True`: the data gets an end-of-image marker where it
    /// stops, so blocks past it are mid-grey, exactly as Pillow gives them. Other corruption
    /// stays an error. Default: off (a typed [`Error::Truncated`], as Pillow raises `OSError`).
    pub load_truncated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_pixels: 2 * (1024 * 1024 * 1024 / 4 / 3),
            max_scans: 1000,
            load_truncated: false,
        }
    }
}

impl Limits {
    /// These limits without the pixel limit: for planning work on an image that already passed
    /// it (decoding it again at its own size, or redoing it with the transform it was checked
    /// with), which makes nothing larger.
    pub(crate) fn without_pixel_limit(self) -> Self {
        Self {
            max_pixels: u64::MAX,
            ..self
        }
    }
}

/// Entropy-decodes a JPEG file into its quantised DCT coefficients.
pub fn decode_coefficients(data: &[u8], limits: &Limits) -> Result<CoefficientImage> {
    decode(data, limits, Target::Dense).map(|(image, _)| image)
}

/// Entropy-decodes a JPEG file for the GPU: a single-scan sequential image (most photos) comes
/// with its coefficients in compact form, written as they are decoded, and its components'
/// dense `blocks` left empty; any other image comes dense, with `None`.
#[cfg(test)]
pub(crate) fn decode_compact(
    data: &[u8],
    limits: &Limits,
) -> Result<(CoefficientImage, Option<Vec<compact::CompactPlane>>)> {
    let (image, coefficients) = decode(data, limits, Target::Compact)?;
    match coefficients {
        Coefficients::Compact(planes) => Ok((image, Some(planes))),
        _ => Ok((image, None)),
    }
}

/// Entropy-decodes a JPEG file for the GPU's stages: a single-scan sequential image (most
/// photos) comes with its coefficients in compact form, written as they are decoded, and its
/// components' dense `blocks` left empty ([`Coefficients::Compact`]); any other image comes
/// dense.
pub(crate) fn decode_compact_or_dense(
    data: &[u8],
    limits: &Limits,
) -> Result<(CoefficientImage, Coefficients)> {
    decode(data, limits, Target::Compact)
}

/// Reads a JPEG file for the GPU's own Huffman decoding: a single-scan sequential image (whose
/// restart markers, if any, are where libjpeg expects them) comes as its entropy-coded segment,
/// not decoded at all; others as [`decode_compact_or_dense`] gives them. The components' dense
/// `blocks` are empty unless [`Coefficients::Dense`].
pub(crate) fn decode_for_gpu(
    data: &[u8],
    limits: &Limits,
) -> Result<(CoefficientImage, Coefficients)> {
    decode(data, limits, Target::Segment)
}

/// Where an image's coefficients are, besides its dense blocks.
pub(crate) enum Coefficients {
    /// In the components' dense `blocks`.
    Dense,
    /// Compact, one plane per component.
    Compact(Vec<compact::CompactPlane>),
    /// Still entropy-coded.
    Segment(segment::EntropySegment),
}

/// How far to decode a single-scan sequential image.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Dense,
    Compact,
    Segment,
}

fn decode(
    data: &[u8],
    limits: &Limits,
    target: Target,
) -> Result<(CoefficientImage, Coefficients)> {
    if !data.starts_with(&[0xFF, markers::SOI]) {
        return Err(Error::NotJpeg(data.iter().take(4).copied().collect()));
    }
    let mut decoder = Decoder::new(data, *limits, target);
    match decoder.run() {
        // Pillow reads the headers up to the first scan itself and refuses a file that ends
        // there; past it, it hands libjpeg an end-of-image marker where the file runs out.
        Err(Error::Truncated(_)) if limits.load_truncated && decoder.reached_scan_data => {
            let ended = [data, &[0xFF, markers::EOI]].concat();
            Decoder::new(&ended, *limits, target).run()
        }
        result => result,
    }
}

/// Length of the marker segment at `pos` (its 2-byte length field included), checked to fit.
fn segment_length(data: &[u8], pos: usize) -> Result<usize> {
    let len = match data.get(pos..pos + 2) {
        Some(&[a, b]) => usize::from(u16::from_be_bytes([a, b])),
        _ => return Err(Error::Truncated("file ends inside a marker segment")),
    };
    if len < 2 {
        return Err(Error::corrupt("marker segment length below 2"));
    }
    if pos + len > data.len() {
        return Err(Error::Truncated("file ends inside a marker segment"));
    }
    Ok(len)
}

/// Decoder state between markers.
struct Decoder<'a> {
    data: &'a [u8],
    limits: Limits,
    frame: Option<Frame>,
    quant: [Option<[u16; 64]>; 4],
    dc_specs: [Option<HuffmanSpec>; 4],
    ac_specs: [Option<HuffmanSpec>; 4],
    restart_interval: u16,
    saw_jfif: bool,
    adobe_transform: Option<u8>,
    image: Option<CoefficientImage>,
    /// Components whose quantisation table was latched at their first scan.
    quant_latched: Vec<bool>,
    coef_bits: Option<progressive::CoefficientBits>,
    /// Whether the first scan holds the whole image (libjpeg's `!has_multiple_scans`).
    single_scan: Option<bool>,
    /// Where the latest progressive scan last had data (libjpeg's `last_good_iMCU_row`).
    last_good_imcu_row: usize,
    /// Scans seen so far.
    scans: usize,
    /// A whole scan header was read, so what follows is entropy-coded data.
    reached_scan_data: bool,
    /// The first EXIF segment's orientation tag (`Some(None)`: an EXIF segment without one).
    exif_orientation: Option<Option<u32>>,
    /// `tiff:Orientation` of the last XMP packet.
    xmp_orientation: Option<u32>,
    /// How far to decode a single-scan sequential image.
    target: Target,
    /// Where such an image's coefficients go instead of dense blocks.
    compact: Option<compact::CompactStore>,
    /// Such an image's entropy-coded segment, when it is left to the GPU.
    segment: Option<segment::EntropySegment>,
}

impl<'a> Decoder<'a> {
    fn new(data: &'a [u8], limits: Limits, target: Target) -> Self {
        Self {
            data,
            limits,
            frame: None,
            quant: [None; 4],
            dc_specs: Default::default(),
            ac_specs: Default::default(),
            restart_interval: 0,
            saw_jfif: false,
            adobe_transform: None,
            image: None,
            quant_latched: Vec::new(),
            coef_bits: None,
            single_scan: None,
            last_good_imcu_row: 0,
            scans: 0,
            reached_scan_data: false,
            exif_orientation: None,
            xmp_orientation: None,
            target,
            compact: None,
            segment: None,
        }
    }

    /// Walks the markers after SOI to the end of the image.
    fn run(&mut self) -> Result<(CoefficientImage, Coefficients)> {
        let image = self.walk()?;
        if let Some(segment) = self.segment.take() {
            return Ok((image, Coefficients::Segment(segment)));
        }
        Ok(match self.compact.take() {
            Some(store) => {
                let planes = store
                    .planes
                    .into_iter()
                    .map(compact::CompactBuilder::finish);
                (image, Coefficients::Compact(planes.collect()))
            }
            None => (image, Coefficients::Dense),
        })
    }

    fn walk(&mut self) -> Result<CoefficientImage> {
        let mut next = find_marker(self.data, 2);
        loop {
            let Some((marker, pos)) = next else {
                return Err(Error::Truncated("no end-of-image marker"));
            };
            next = match marker {
                markers::EOI => return self.finish(),
                markers::SOS => {
                    let next = self.scan(pos)?;
                    if self.single_scan == Some(true) {
                        // libjpeg outputs a single-scan image as it decodes; what follows the
                        // scan (even a missing EOI or a truncated segment) never reaches Pillow.
                        return self.finish();
                    }
                    next
                }
                _ => {
                    self.segment(marker, pos)?;
                    let end = pos + segment_length(self.data, pos)?;
                    find_marker(self.data, end)
                }
            };
        }
    }

    /// Handles every marker but SOS and EOI; `pos` is just past the marker code.
    fn segment(&mut self, marker: u8, pos: usize) -> Result<()> {
        let parameterless = matches!(marker, 0x01 | 0xD0..=0xD7);
        if parameterless {
            return Ok(());
        }
        let len = segment_length(self.data, pos)?;
        let body = &self.data[pos + 2..pos + len];
        match marker {
            markers::SOI => Err(Error::corrupt("second start-of-image marker")),
            markers::DQT => markers::parse_dqt(body, &mut self.quant),
            markers::DHT => markers::parse_dht(body, &mut self.dc_specs, &mut self.ac_specs),
            markers::DRI => {
                self.restart_interval = markers::parse_dri(body)?;
                Ok(())
            }
            0xE0 => {
                self.saw_jfif |= markers::is_jfif(body);
                Ok(())
            }
            0xEE => {
                if let Some(transform) = markers::adobe_transform(body) {
                    self.adobe_transform = Some(transform);
                }
                Ok(())
            }
            // Pillow reads the metadata itself, only up to the first scan.
            0xE1 if !self.reached_scan_data => {
                if self.exif_orientation.is_none() {
                    self.exif_orientation = Some(exif::exif_orientation(body));
                }
                if let Some(orientation) = exif::xmp_orientation(body) {
                    self.xmp_orientation = Some(orientation);
                } else if body.starts_with(b"http://ns.adobe.com/xap/1.0/\0") {
                    self.xmp_orientation = None; // a later XMP packet replaces an earlier one
                }
                Ok(())
            }
            // APP1..APP15 other than APP14, COM, DAC, DNL: nothing that changes the pixels.
            0xE1..=0xEF | 0xFE | 0xCC | 0xDC => Ok(()),
            _ => self.frame_header(marker, body),
        }
    }

    fn frame_header(&mut self, marker: u8, body: &[u8]) -> Result<()> {
        let Some(process) = markers::sof_process(marker) else {
            return Err(Error::corrupt(format!("unknown marker 0xFF{marker:02X}")));
        };
        let process = process?;
        if self.frame.is_some() {
            return Err(Error::corrupt("more than one frame header"));
        }
        let frame = markers::parse_frame(process, body)?;
        // The pixel limit first, as Pillow checks it when the file is opened (its
        // DecompressionBombError), then libjpeg's largest dimension.
        let pixels = u64::from(frame.width) * u64::from(frame.height);
        if pixels > self.limits.max_pixels {
            return Err(Error::TooLarge {
                width: frame.width,
                height: frame.height,
                limit: self.limits.max_pixels,
            });
        }
        if frame.width.max(frame.height) > markers::MAX_DIMENSION {
            return Err(Error::Unsupported(Unsupported::Dimension(
                frame.width.max(frame.height),
            )));
        }
        self.frame = Some(frame);
        Ok(())
    }

    /// Decodes the scan whose SOS segment starts at `pos`; returns the marker after it.
    fn scan(&mut self, pos: usize) -> Result<Option<(u8, usize)>> {
        self.scans += 1;
        if self.scans > self.limits.max_scans {
            return Err(Error::TooManyScans {
                limit: self.limits.max_scans,
            });
        }
        let len = segment_length(self.data, pos)?;
        self.reached_scan_data = true;
        let frame = self
            .frame
            .as_ref()
            .ok_or_else(|| Error::corrupt("scan before frame header"))?;
        let scan = markers::parse_scan(&self.data[pos + 2..pos + len], frame)?;
        if self.image.is_none() {
            self.single_scan = Some(
                frame.process == Process::Sequential
                    && scan.components.len() == frame.components.len(),
            );
            self.start_image()?;
        }
        self.latch_quant_tables(&scan)?;
        let mut reader = BitReader::new(self.data, pos + len);
        let restart_interval = usize::from(self.restart_interval);
        let image = self.image.as_mut().expect("started above");
        let frame = self.frame.as_ref().expect("checked above");
        match frame.process {
            Process::Sequential => {
                let tables = build_tables(&scan, &self.dc_specs, &self.ac_specs)?;
                let gpu_decodes = self.target == Target::Segment && self.single_scan == Some(true);
                if gpu_decodes {
                    let start = pos + len;
                    let data = self.data;
                    if let Some(segment) =
                        entropy_segment(image, &scan, &tables, data, start, restart_interval)
                    {
                        self.segment = Some(segment);
                        self.compact = None;
                        return Ok(None);
                    }
                }
                let mut decoder = sequential::SequentialDecoder {
                    tables: tables.iter().map(|(dc, ac)| (dc, ac)).collect(),
                    dc_pred: vec![0; scan.components.len()],
                };
                let end = match self.compact.as_mut() {
                    Some(store) => scan::decode_scan_into(
                        &scan::ScanGeometry::new(image, &scan),
                        store,
                        &mut reader,
                        restart_interval,
                        &mut decoder,
                    )?,
                    None => scan::decode_scan(
                        image,
                        &scan,
                        &mut reader,
                        restart_interval,
                        &mut decoder,
                    )?,
                };
                Ok(end.next_marker)
            }
            Process::Progressive => {
                progressive::validate(&scan)?;
                let coef_bits = self.coef_bits.as_mut().expect("set for progressive images");
                coef_bits.update(&scan);
                let end = decode_progressive_scan(
                    image,
                    &scan,
                    &mut reader,
                    restart_interval,
                    &self.dc_specs,
                    &self.ac_specs,
                )?;
                self.last_good_imcu_row = end.last_good_imcu_row;
                Ok(end.next_marker)
            }
        }
    }

    /// At the first scan: decides the colour space and allocates the coefficients.
    fn start_image(&mut self) -> Result<()> {
        let frame = self.frame.as_ref().expect("checked by caller");
        let color_space = self.color_space(frame);
        // Motion-JPEG omits the standard tables; libjpeg installs them in empty slots 0 and 1.
        for slot in 0..2 {
            self.dc_specs[slot].get_or_insert_with(|| huffman::standard_table(true, slot));
            self.ac_specs[slot].get_or_insert_with(|| huffman::standard_table(false, slot));
        }
        let bytes = CoefficientImage::storage_bytes(frame);
        // Coefficients take 2 bytes per sample; allow for padding to whole MCUs and 4 channels.
        if bytes > self.limits.max_pixels.saturating_mul(2 * 4 * 4) {
            return Err(Error::TooLarge {
                width: frame.width,
                height: frame.height,
                limit: self.limits.max_pixels,
            });
        }
        self.quant_latched = vec![false; frame.components.len()];
        if frame.process == Process::Progressive {
            self.coef_bits = Some(progressive::CoefficientBits::new(frame.components.len()));
        }
        let compact = self.target != Target::Dense && self.single_scan == Some(true);
        let mut image = CoefficientImage::for_frame(frame, color_space, !compact);
        if compact {
            self.compact = Some(compact_store(&image, self.data.len()));
        }
        // Pillow's getexif(): the EXIF tag, or else the XMP one; exif_transpose knows 1 to 8.
        let orientation = self.exif_orientation.flatten().or(self.xmp_orientation);
        image.orientation = orientation
            .and_then(|o| u8::try_from(o).ok())
            .filter(|o| (1..=8).contains(o))
            .unwrap_or(1);
        self.image = Some(image);
        Ok(())
    }

    /// libjpeg's guess of the colour space from markers and component ids (PARITY §1.2).
    fn color_space(&self, frame: &Frame) -> ColorSpace {
        let ids: Vec<u8> = frame.components.iter().map(|c| c.id).collect();
        match ids.len() {
            1 => ColorSpace::Grayscale,
            3 if self.saw_jfif => ColorSpace::YCbCr,
            3 => match self.adobe_transform {
                Some(0) => ColorSpace::Rgb,
                Some(_) => ColorSpace::YCbCr,
                None if ids == b"RGB" => ColorSpace::Rgb,
                None => ColorSpace::YCbCr,
            },
            _ => match self.adobe_transform {
                None | Some(0) => ColorSpace::Cmyk,
                Some(_) => ColorSpace::Ycck,
            },
        }
    }

    /// Copies each component's quantisation table at its first scan, as libjpeg does.
    fn latch_quant_tables(&mut self, scan: &ScanHeader) -> Result<()> {
        let frame = self.frame.as_ref().expect("checked by caller");
        let image = self.image.as_mut().expect("started by caller");
        for sc in &scan.components {
            if self.quant_latched[sc.index] {
                continue;
            }
            let slot = frame.components[sc.index].quant_slot;
            image.components[sc.index].quant = self.quant[usize::from(slot)]
                .ok_or_else(|| Error::corrupt(format!("quantisation table {slot} not defined")))?;
            self.quant_latched[sc.index] = true;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<CoefficientImage> {
        // A component that no scan coded keeps zero coefficients and a zero quantisation table,
        // and so decodes as mid-grey, as in libjpeg.
        let mut image = self
            .image
            .take()
            .ok_or_else(|| Error::corrupt("no image data before end-of-image marker"))?;
        if let Some(bits) = &self.coef_bits {
            // The progressive decoders keep zigzag order (see progressive.rs).
            for component in &mut image.components {
                progressive::to_natural_order(&mut component.blocks);
            }
            if self.quant_latched.iter().all(|&latched| latched) {
                let quant: Vec<[u16; 64]> = image.components.iter().map(|c| c.quant).collect();
                image.smoothing = bits.smoothing(&quant, self.last_good_imcu_row);
            }
        }
        Ok(image)
    }
}

/// The order in which a single-scan image's one scan meets component `ci`'s blocks (MCU order
/// when interleaved): its compact table's order, and its entropy segment's.
pub(crate) fn single_scan_order(image: &CoefficientImage, ci: usize) -> compact::BlockOrder {
    let c = &image.components[ci];
    if image.components.len() == 1 {
        compact::BlockOrder::row_major(c.width_in_blocks, c.height_in_blocks)
    } else {
        compact::BlockOrder {
            mcu_w: c.h,
            mcu_h: c.v,
            mcus_per_row: image.mcus_x(),
            blocks: c.blocks_w * c.blocks_h,
        }
    }
}

/// Empty compact planes for a single-scan image: its blocks in the order its one scan meets them
/// (MCU order when interleaved), with room for about as many entries as `data_bytes`.
fn compact_store(image: &CoefficientImage, data_bytes: usize) -> compact::CompactStore {
    let total_blocks: usize = image
        .components
        .iter()
        .map(|c| c.blocks_w * c.blocks_h)
        .sum();
    let planes = image
        .components
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let order = single_scan_order(image, ci);
            let share = data_bytes * c.blocks_w * c.blocks_h / total_blocks.max(1);
            compact::CompactBuilder::new(order, share)
        })
        .collect();
    compact::CompactStore::new(planes)
}

/// A single-scan image's entropy-coded segment for the GPU, in restart intervals of
/// `restart_interval` MCUs (0: none), unless its MCU is larger than libjpeg allows, its data ends
/// without a marker or a restart marker is not the one expected (the CPU decoder then does what
/// libjpeg would).
fn entropy_segment(
    image: &CoefficientImage,
    scan: &ScanHeader,
    tables: &[(HuffmanTable, HuffmanTable)],
    data: &[u8],
    start: usize,
    restart_interval: usize,
) -> Option<segment::EntropySegment> {
    let interleaved = scan.components.len() > 1;
    let mut blocks = Vec::new();
    for (scan_comp, sc) in scan.components.iter().enumerate() {
        let c = &image.components[sc.index];
        let per_mcu = if interleaved { c.h * c.v } else { 1 };
        blocks.extend((0..per_mcu).map(|slot| segment::McuBlock {
            scan_comp,
            comp: sc.index,
            slot,
            per_mcu,
        }));
    }
    if blocks.len() > segment::MAX_BLOCKS_IN_MCU {
        return None;
    }
    let mcus = if interleaved {
        image.mcus_x() * image.mcus_y()
    } else {
        let c = &image.components[scan.components[0].index];
        c.width_in_blocks * c.height_in_blocks
    };
    let (words, intervals) = segment::EntropySegment::unstuff(data, start, mcus, restart_interval)?;
    // Bit positions are 32-bit on the GPU.
    if words.len() as u64 * 32 >= u64::from(u32::MAX / 2) {
        return None;
    }
    let mut table_words = Vec::with_capacity(2 * tables.len() * segment::TABLE_WORDS);
    for (dc, ac) in tables {
        segment::push_table_words(dc, &mut table_words);
        segment::push_table_words(ac, &mut table_words);
    }
    Some(segment::EntropySegment {
        words,
        intervals,
        tables: table_words,
        blocks,
        mcus,
    })
}

/// The DC and AC decoding tables of each scan component.
fn build_tables(
    scan: &ScanHeader,
    dc_specs: &[Option<HuffmanSpec>; 4],
    ac_specs: &[Option<HuffmanSpec>; 4],
) -> Result<Vec<(HuffmanTable, HuffmanTable)>> {
    scan.components
        .iter()
        .map(|sc| {
            Ok((
                table(dc_specs, sc.dc_slot, true)?,
                table(ac_specs, sc.ac_slot, false)?,
            ))
        })
        .collect()
}

fn table(specs: &[Option<HuffmanSpec>; 4], slot: usize, is_dc: bool) -> Result<HuffmanTable> {
    let spec = specs
        .get(slot)
        .and_then(Option::as_ref)
        .ok_or_else(|| Error::corrupt(format!("Huffman table {slot} not defined")))?;
    HuffmanTable::new(spec, is_dc)
}

/// Decodes one progressive scan with the decoder its Ss and Ah call for.
fn decode_progressive_scan(
    image: &mut CoefficientImage,
    scan: &ScanHeader,
    reader: &mut BitReader,
    restart_interval: usize,
    dc_specs: &[Option<HuffmanSpec>; 4],
    ac_specs: &[Option<HuffmanSpec>; 4],
) -> Result<scan::ScanEnd> {
    let al = u32::from(scan.al);
    let (ss, se) = (usize::from(scan.ss), usize::from(scan.se));
    if ss == 0 && scan.ah == 0 {
        let tables = scan
            .components
            .iter()
            .map(|sc| table(dc_specs, sc.dc_slot, true))
            .collect::<Result<Vec<_>>>()?;
        let mut decoder = progressive::DcFirst {
            tables: tables.iter().collect(),
            dc_pred: vec![0; scan.components.len()],
            al,
            overflow: false,
        };
        let end = scan::decode_scan(image, scan, reader, restart_interval, &mut decoder)?;
        if decoder.overflow {
            return Err(Error::corrupt("DC coefficient out of range"));
        }
        Ok(end)
    } else if ss == 0 {
        let mut decoder = progressive::DcRefine { al };
        scan::decode_scan(image, scan, reader, restart_interval, &mut decoder)
    } else {
        let table = table(ac_specs, scan.components[0].ac_slot, false)?;
        if scan.ah == 0 {
            let mut decoder = progressive::AcFirst {
                table: &table,
                ss,
                se,
                al,
                eob_run: 0,
            };
            scan::decode_scan(image, scan, reader, restart_interval, &mut decoder)
        } else {
            let mut decoder = progressive::AcRefine::new(&table, ss, se, al);
            scan::decode_scan(image, scan, reader, restart_interval, &mut decoder)
        }
    }
}
