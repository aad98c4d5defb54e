//! JPEG encoding, byte for byte as Pillow's `Image.save(f, "JPEG", quality=Q, subsampling=S)`
//! writes a baseline file through libjpeg-turbo, on the CPU: colour conversion, downsampling,
//! forward DCT and quantisation in `forward`, Huffman coding in `entropy`, the tables in
//! `tables`.
//!
//! What libjpeg-turbo writes for Pillow's defaults: SOI; a JFIF APP0 (version 1.01, no units,
//! density 1×1); one DQT a table (luminance, then chrominance); SOF0; one DHT a table (DC and AC
//! of luminance, then of chrominance); SOS; the scan; EOI. A component's blocks past the image
//! hold its edge samples repeated (columns before downsampling, rows after, as libjpeg-turbo
//! pads); an MCU's blocks past its component's blocks are "dummy" blocks holding only the DC of
//! the block before them.

mod entropy;
mod forward;
mod tables;

use crate::error::{Error, Result};
use entropy::BitWriter;
use forward::Plane;

/// How chroma is subsampled, as Pillow's `subsampling` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subsampling {
    /// 4:4:4 (`subsampling=0`): chroma at full resolution.
    Full,
    /// 4:2:2 (`subsampling=1`): chroma halved across.
    Half,
    /// 4:2:0 (`subsampling=2`, Pillow's default): chroma halved across and down.
    Quarter,
}

impl Subsampling {
    /// Its name as Pillow's `subsampling=` takes it ("4:2:0").
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "4:4:4",
            Self::Half => "4:2:2",
            Self::Quarter => "4:2:0",
        }
    }

    /// Luma's sampling factors (across, down); chroma's are 1 × 1.
    fn luma_factors(self) -> (usize, usize) {
        match self {
            Self::Full => (1, 1),
            Self::Half => (2, 1),
            Self::Quarter => (2, 2),
        }
    }
}

/// What the encoder writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JpegOptions {
    /// 1 (smallest) to 100, as Pillow's `quality`.
    pub quality: u8,
    /// Chroma subsampling, as Pillow's `subsampling` sets the first component's sampling
    /// factors (a grey image's one component too); `None`, as Pillow without it: libjpeg's
    /// defaults, 4:2:0 for colour and 1×1 for grey.
    pub subsampling: Option<Subsampling>,
    /// Huffman tables made for the image (Pillow's `optimize=True`), not Annex K's.
    pub optimize: bool,
}

impl Default for JpegOptions {
    /// Pillow's defaults: quality 75, libjpeg's sampling.
    fn default() -> Self {
        Self {
            quality: 75,
            subsampling: None,
            optimize: false,
        }
    }
}

/// Pixels to encode, rows top to bottom.
#[derive(Clone, Copy, Debug)]
pub struct Pixels<'a> {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// 3: RGB, interleaved (H×W×3); 1: grey (H×W, Pillow's mode "L").
    pub channels: usize,
    /// `height * width * channels` bytes.
    pub data: &'a [u8],
}

/// libjpeg's largest side.
const MAX_SIDE: usize = 65_500;

/// One component of a frame, as both backends' forward stages read it: where its samples come
/// from and which of its blocks hold image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComponentLayout {
    /// 0: Y (or grey), 1: Cb, 2: Cr.
    pub index: usize,
    /// Its sampling factor across in the frame.
    pub h: usize,
    /// ... and down.
    pub v: usize,
    /// Its quantisation and Huffman tables: 0 luma, 1 chroma.
    pub table: usize,
    /// Its downsampling across: the frame's largest factor over its own.
    pub down_h: usize,
    /// ... and down.
    pub down_v: usize,
    /// Downsampled rows of its row groups; the rows below, to whole MCUs, repeat the last.
    pub rows: usize,
    /// Its blocks that hold image across; an MCU's blocks past them are dummies.
    pub across: usize,
    /// ... and down.
    pub down: usize,
}

/// The frame of an image to encode: its size and its components' layouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// 3: RGB, 1: grey.
    pub channels: usize,
    /// Its components, Y (or grey) first.
    pub components: Vec<ComponentLayout>,
}

impl Frame {
    /// The frame of `pixels` with `subsampling` (checked: sizes, channels, bytes).
    pub fn of(pixels: &Pixels, subsampling: Option<Subsampling>) -> Result<Self> {
        let Pixels {
            width,
            height,
            channels,
            data,
        } = *pixels;
        if channels != 1 && channels != 3 {
            return Err(Error::Options(format!(
                "a JPEG is encoded from grey (1 channel) or RGB (3) pixels, got {channels} \
                 channels"
            )));
        }
        if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
            return Err(Error::Options(format!(
                "a JPEG is 1 to {MAX_SIDE} pixels a side, got {width}×{height}"
            )));
        }
        if data.len() != width * height * channels {
            return Err(Error::Options(format!(
                "{width}×{height}×{channels} pixels are {} bytes, got {}",
                width * height * channels,
                data.len()
            )));
        }
        let (h_max, v_max) = match (subsampling, channels) {
            (Some(subsampling), _) => subsampling.luma_factors(),
            (None, 1) => (1, 1),
            (None, _) => (2, 2),
        };
        // As libjpeg-turbo pads: columns (repeated) to each component's blocks before
        // downsampling, rows to a whole row group (v_max rows) before it and, downsampled, to
        // whole MCU rows.
        let group_rows = height.div_ceil(v_max) * v_max;
        let components = (0..channels)
            .map(|index| {
                let (h, v) = if index == 0 { (h_max, v_max) } else { (1, 1) };
                ComponentLayout {
                    index,
                    h,
                    v,
                    table: index.min(1),
                    down_h: h_max / h,
                    down_v: v_max / v,
                    rows: group_rows / (v_max / v),
                    across: (width * h).div_ceil(h_max * 8),
                    down: (height * v).div_ceil(v_max * 8),
                }
            })
            .collect();
        Ok(Self {
            width,
            height,
            channels,
            components,
        })
    }

    /// The largest sampling factors (across, down): an MCU's size in blocks of luma.
    fn max_factors(&self) -> (usize, usize) {
        let h = self.components.iter().map(|c| c.h).max().unwrap_or(1);
        let v = self.components.iter().map(|c| c.v).max().unwrap_or(1);
        (h, v)
    }
}

/// An image through the forward stages: each component's quantised blocks that hold image,
/// row after row (natural order within a block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coefficients {
    pub(crate) frame: Frame,
    /// The quality whose tables quantised them.
    pub(crate) quality: u8,
    /// Each component's blocks.
    pub(crate) blocks: Vec<Vec<[i16; 64]>>,
}

impl Coefficients {
    /// The bytes its blocks take.
    pub fn bytes(&self) -> usize {
        self.blocks.iter().map(|c| c.len() * 128).sum()
    }

    /// The image's frame.
    pub fn frame(&self) -> &Frame {
        &self.frame
    }
}

/// Each table's divisors (its entries times 8, the DCT's scale) in natural order, for
/// `quality`: luma's, then chroma's.
pub fn divisors(quality: u8) -> Result<[[u32; 64]; 2]> {
    Ok(quantisers(quality)?.map(|d| d.divisor))
}

/// Each table's quantiser for `quality`: luma's, then chroma's.
fn quantisers(quality: u8) -> Result<[forward::Divisors; 2]> {
    check_quality(quality)?;
    Ok([0, 1].map(|t| forward::Divisors::new(&tables::natural(&tables::quantisation(t, quality)))))
}

fn check_quality(quality: u8) -> Result<()> {
    if (1..=100).contains(&quality) {
        Ok(())
    } else {
        Err(Error::Options(format!(
            "quality is 1 to 100, got {quality}"
        )))
    }
}

/// The JPEG file of `pixels`, byte for byte Pillow's (with libjpeg-turbo) for these options.
pub fn encode(pixels: Pixels, options: &JpegOptions) -> Result<Vec<u8>> {
    encode_commented(pixels, options, None)
}

/// [`encode`] with a comment (a COM segment after the JFIF one), as Pillow writes its
/// `comment=` or the comment of the image it opened (`im.info["comment"]`, which `save`
/// carries over): at most 65,533 bytes.
pub fn encode_commented(
    pixels: Pixels,
    options: &JpegOptions,
    comment: Option<&[u8]>,
) -> Result<Vec<u8>> {
    let coefficients = forward_stages(&pixels, options)?;
    write(&coefficients, options, comment)
}

/// The forward stages on the CPU (the GPU's shaders/forward.wgsl computes the same): colour
/// conversion, edges repeated, downsampling, DCT and quantisation of each component's blocks,
/// for `options`' quality and subsampling.
pub fn forward_stages(pixels: &Pixels, options: &JpegOptions) -> Result<Coefficients> {
    let frame = Frame::of(pixels, options.subsampling)?;
    let quality = options.quality;
    let quantisers = quantisers(quality)?;
    let planes = colour_planes(pixels);
    let blocks = frame
        .components
        .iter()
        .zip(planes)
        .map(|(c, plane)| {
            let columns = c.across * 8 * c.down_h;
            let group_rows = c.rows * c.down_v;
            let plane = plane
                .expanded(columns, group_rows)
                .downsampled(c.down_h, c.down_v);
            let width = plane.width;
            let plane = plane.expanded(width, c.down * 8);
            forward::quantised_blocks(&plane, c.across, c.down, &quantisers[c.table])
        })
        .collect();
    Ok(Coefficients {
        frame,
        quality,
        blocks,
    })
}

/// The image's components at full size: Y, Cb, Cr of RGB pixels; the grey plane of grey ones.
fn colour_planes(pixels: &Pixels) -> Vec<Plane> {
    let Pixels {
        width,
        height,
        channels,
        data,
    } = *pixels;
    let plane = |samples| Plane {
        width,
        height,
        samples,
    };
    if channels == 1 {
        return vec![plane(data.to_vec())];
    }
    let [mut y, mut cb, mut cr] = [(); 3].map(|()| vec![0; width * height]);
    forward::ycc_planes(data, &mut y, &mut cb, &mut cr);
    vec![plane(y), plane(cb), plane(cr)]
}

/// The JPEG file of an image's quantised blocks: its markers, tables and entropy-coded scan
/// (`options` as the blocks were made with; its `optimize` chooses the Huffman tables).
pub fn write(
    coefficients: &Coefficients,
    options: &JpegOptions,
    comment: Option<&[u8]>,
) -> Result<Vec<u8>> {
    if options.quality != coefficients.quality {
        return Err(Error::Options(format!(
            "blocks quantised at quality {} cannot be written as quality {}",
            coefficients.quality, options.quality
        )));
    }
    let frame = &coefficients.frame;
    let tables: Vec<[u16; 64]> = (0..frame.components.len().min(2))
        .map(|t| tables::quantisation(t, options.quality))
        .collect();
    let mut out = Vec::new();
    out.extend_from_slice(&[0xFF, 0xD8]);
    segment(
        &mut out,
        0xE0,
        b"JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00",
    );
    if let Some(comment) = comment.filter(|c| !c.is_empty()) {
        if comment.len() > 65_533 {
            return Err(Error::Options(format!(
                "a JPEG comment is at most 65533 bytes, got {}",
                comment.len()
            )));
        }
        segment(&mut out, 0xFE, comment);
    }
    for (t, table) in tables.iter().enumerate() {
        let mut body = vec![t as u8];
        body.extend(table.iter().map(|&q| q as u8));
        segment(&mut out, 0xDB, &body);
    }
    let mut sof = vec![8];
    sof.extend_from_slice(&(frame.height as u16).to_be_bytes());
    sof.extend_from_slice(&(frame.width as u16).to_be_bytes());
    sof.push(frame.components.len() as u8);
    for c in &frame.components {
        sof.extend_from_slice(&[c.index as u8 + 1, (c.h << 4 | c.v) as u8, c.table as u8]);
    }
    segment(&mut out, 0xC0, &sof);
    let blocks = scan_blocks(coefficients);
    let huffman = huffman_tables(frame, &blocks, tables.len(), options.optimize);
    for (t, (dc, ac)) in huffman.iter().enumerate() {
        for (class, spec) in [(0x00, dc), (0x10, ac)] {
            let mut body = vec![class | t as u8];
            body.extend_from_slice(&spec.bits);
            body.extend_from_slice(&spec.values);
            segment(&mut out, 0xC4, &body);
        }
    }
    let mut scan = vec![frame.components.len() as u8];
    for c in &frame.components {
        scan.extend_from_slice(&[c.index as u8 + 1, (c.table << 4 | c.table) as u8]);
    }
    scan.extend_from_slice(&[0, 63, 0]);
    segment(&mut out, 0xDA, &scan);
    out.extend(entropy_coded(frame, &blocks, &huffman));
    out.extend_from_slice(&[0xFF, 0xD9]);
    Ok(out)
}

/// A marker segment: the marker, its length, its body.
fn segment(out: &mut Vec<u8>, marker: u8, body: &[u8]) {
    out.extend_from_slice(&[0xFF, marker]);
    out.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(body);
}

/// The scan's blocks in order, each with its component: MCU after MCU (each component's blocks
/// of it in turn, rows of blocks top to bottom), one block an MCU where the frame has a single
/// component.
fn scan_blocks(coefficients: &Coefficients) -> Vec<(usize, [i16; 64])> {
    let frame = &coefficients.frame;
    if let [blocks] = coefficients.blocks.as_slice() {
        return blocks.iter().map(|&b| (0, b)).collect();
    }
    let (h_max, v_max) = frame.max_factors();
    let (mcus_across, mcus_down) = (
        frame.width.div_ceil(h_max * 8),
        frame.height.div_ceil(v_max * 8),
    );
    let mut out = Vec::new();
    for my in 0..mcus_down {
        for mx in 0..mcus_across {
            for (c, blocks) in frame.components.iter().zip(&coefficients.blocks) {
                let mut previous_dc = 0;
                for y in 0..c.v {
                    for x in 0..c.h {
                        let (bx, by) = (mx * c.h + x, my * c.v + y);
                        // Past the component's blocks, a dummy repeats the DC before it: of
                        // the block to its left, or (a row of them at the bottom) of the MCU's
                        // last block above.
                        let block = if bx >= c.across || by >= c.down {
                            dummy(previous_dc)
                        } else {
                            blocks[by * c.across + bx]
                        };
                        previous_dc = block[0];
                        out.push((c.index, block));
                    }
                }
            }
        }
    }
    out
}

/// Each table's DC and AC Huffman tables: Annex K's, or (`optimize`) the optimal ones for the
/// symbols `blocks` will be written with, as libjpeg-turbo's statistics pass counts them.
fn huffman_tables(
    frame: &Frame,
    blocks: &[(usize, [i16; 64])],
    tables: usize,
    optimize: bool,
) -> Vec<(tables::HuffmanSpec, tables::HuffmanSpec)> {
    if !optimize {
        return (0..tables)
            .map(|t| (tables::DC[t].spec(), tables::AC[t].spec()))
            .collect();
    }
    let mut counts = vec![([0u64; 256], [0u64; 256]); tables];
    let mut last_dc = vec![0; frame.components.len()];
    for (c, block) in blocks {
        let (dc, ac) = &mut counts[frame.components[*c].table];
        entropy::count_block(block, &mut last_dc[*c], dc, ac);
    }
    counts
        .iter()
        .map(|(dc, ac)| (tables::optimal(dc), tables::optimal(ac)))
        .collect()
}

/// The scan's bytes: `blocks` coded with each component's table of `huffman`.
fn entropy_coded(
    frame: &Frame,
    blocks: &[(usize, [i16; 64])],
    huffman: &[(tables::HuffmanSpec, tables::HuffmanSpec)],
) -> Vec<u8> {
    let codes: Vec<(tables::Codes, tables::Codes)> = huffman
        .iter()
        .map(|(dc, ac)| (tables::codes(dc), tables::codes(ac)))
        .collect();
    let mut out = BitWriter::default();
    let mut last_dc = vec![0; frame.components.len()];
    for (c, block) in blocks {
        let (dc, ac) = &codes[frame.components[*c].table];
        entropy::encode_block(&mut out, block, &mut last_dc[*c], dc, ac);
    }
    out.finish()
}

/// A block of zeros but its DC.
fn dummy(dc: i16) -> [i16; 64] {
    let mut block = [0; 64];
    block[0] = dc;
    block
}
