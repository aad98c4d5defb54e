//! Walking the MCUs of one scan, with restart markers handled as libjpeg handles them.

use super::bits::BitReader;
use super::coefficients::{CoefficientImage, Component};
use super::markers::{ScanHeader, RST0};
use crate::error::{Error, Result};

/// Decodes the blocks of one kind of scan (sequential, or one of the progressive passes).
pub(crate) trait BlockDecoder {
    /// Decodes one block of scan component `scan_comp` into `block` (natural order).
    fn decode_block(&mut self, reader: &mut BitReader, scan_comp: usize, block: &mut [i16; 64]);
    /// Forgets DC predictions and end-of-band runs, as every restart marker requires.
    fn restart(&mut self);
}

/// Where a scan's decoded blocks go: dense blocks (a [`Component`] slice), or the compact form
/// (see [`super::compact`]).
pub(crate) trait BlockStore<D> {
    /// Decodes, with `decoder`, the block `at`, of scan component `scan_comp`.
    fn decode(&mut self, decoder: &mut D, reader: &mut BitReader, scan_comp: usize, at: BlockAt);
}

/// Which block a scan decodes next.
#[derive(Clone, Copy)]
pub(crate) struct BlockAt {
    /// Its frame component.
    pub comp: usize,
    /// Its column and row among the component's blocks.
    pub bx: usize,
    pub by: usize,
    /// How many of the component's blocks the scan meets before it (counting those it skips
    /// for lack of data): its place in the compact form's table.
    pub in_scan: usize,
}

impl<D: BlockDecoder> BlockStore<D> for [Component] {
    #[inline]
    fn decode(&mut self, decoder: &mut D, reader: &mut BitReader, scan_comp: usize, at: BlockAt) {
        let comp = &mut self[at.comp];
        let start = (at.by * comp.blocks_w + at.bx) * 64;
        let block = (&mut comp.blocks[start..start + 64])
            .try_into()
            .expect("64");
        decoder.decode_block(reader, scan_comp, block);
    }
}

/// What walking a scan needs to know of the image: its MCU grid and its scan components.
pub(crate) struct ScanGeometry {
    mcus_x: usize,
    mcus_y: usize,
    /// Per scan component: frame component index, sampling factors, blocks with image data.
    components: Vec<ScanComponent>,
}

struct ScanComponent {
    index: usize,
    h: usize,
    v: usize,
    width_in_blocks: usize,
    height_in_blocks: usize,
}

impl ScanGeometry {
    pub fn new(image: &CoefficientImage, scan: &ScanHeader) -> Self {
        Self {
            mcus_x: image.mcus_x(),
            mcus_y: image.mcus_y(),
            components: scan
                .components
                .iter()
                .map(|sc| {
                    let c = &image.components[sc.index];
                    ScanComponent {
                        index: sc.index,
                        h: c.h,
                        v: c.v,
                        width_in_blocks: c.width_in_blocks,
                        height_in_blocks: c.height_in_blocks,
                    }
                })
                .collect(),
        }
    }
}

/// Decodes every MCU of `scan` from `reader` into `image`'s dense blocks.
///
/// Returns the marker that follows the scan and the position just past it, or `None` when the
/// data ends without one.
pub(crate) fn decode_scan<D: BlockDecoder>(
    image: &mut CoefficientImage,
    scan: &ScanHeader,
    reader: &mut BitReader,
    restart_interval: usize,
    decoder: &mut D,
) -> Result<ScanEnd> {
    let geometry = ScanGeometry::new(image, scan);
    let blocks: &mut [Component] = &mut image.components;
    decode_scan_into(&geometry, blocks, reader, restart_interval, decoder)
}

/// Decodes every MCU of a scan laid out as `geometry` from `reader` into `store`; returns as
/// [`decode_scan`] does.
pub(crate) fn decode_scan_into<D: BlockDecoder>(
    geometry: &ScanGeometry,
    store: &mut (impl BlockStore<D> + ?Sized),
    reader: &mut BitReader,
    restart_interval: usize,
    decoder: &mut D,
) -> Result<ScanEnd> {
    let mut restarts = Restarts {
        interval: restart_interval,
        to_go: restart_interval,
        next_number: 0,
        last_good_imcu_row: 0,
    };
    if geometry.components.len() == 1 {
        decode_single_component(geometry, store, reader, &mut restarts, decoder)?;
    } else {
        decode_interleaved(geometry, store, reader, &mut restarts, decoder)?;
    }
    // Pillow's libjpeg reads ahead and suspends at the end of the file, which Pillow reports as
    // a truncated image even when the last bits were not needed.
    if reader.hit_eof {
        return Err(Error::Truncated("image data ends early"));
    }
    Ok(ScanEnd {
        next_marker: reader.next_marker().map(|code| (code, reader.position())),
        last_good_imcu_row: restarts.last_good_imcu_row,
    })
}

/// Where a scan ended.
pub(crate) struct ScanEnd {
    /// The marker after the scan and the position just past it; `None` at the end of the data.
    pub next_marker: Option<(u8, usize)>,
    /// The last iMCU row at which an MCU started with data left (libjpeg's
    /// `last_good_iMCU_row`), which block smoothing consults.
    pub last_good_imcu_row: usize,
}

/// A non-interleaved scan: each MCU is one block, over the component's real blocks only.
fn decode_single_component<D: BlockDecoder>(
    geometry: &ScanGeometry,
    store: &mut (impl BlockStore<D> + ?Sized),
    reader: &mut BitReader,
    restarts: &mut Restarts,
    decoder: &mut D,
) -> Result<()> {
    let comp = &geometry.components[0];
    for by in 0..comp.height_in_blocks {
        for bx in 0..comp.width_in_blocks {
            restarts.before_mcu(reader, decoder, by / comp.v)?;
            if !reader.insufficient {
                let in_scan = by * comp.width_in_blocks + bx;
                let at = BlockAt {
                    comp: comp.index,
                    bx,
                    by,
                    in_scan,
                };
                store.decode(decoder, reader, 0, at);
            }
        }
    }
    Ok(())
}

/// An interleaved scan: each MCU holds h×v blocks of every component in the scan.
fn decode_interleaved<D: BlockDecoder>(
    geometry: &ScanGeometry,
    store: &mut (impl BlockStore<D> + ?Sized),
    reader: &mut BitReader,
    restarts: &mut Restarts,
    decoder: &mut D,
) -> Result<()> {
    for my in 0..geometry.mcus_y {
        for mx in 0..geometry.mcus_x {
            restarts.before_mcu(reader, decoder, my)?;
            if reader.insufficient {
                continue;
            }
            let mcu = my * geometry.mcus_x + mx;
            for (scan_comp, comp) in geometry.components.iter().enumerate() {
                for y in 0..comp.v {
                    for x in 0..comp.h {
                        let at = BlockAt {
                            comp: comp.index,
                            bx: mx * comp.h + x,
                            by: my * comp.v + y,
                            in_scan: (mcu * comp.v + y) * comp.h + x,
                        };
                        store.decode(decoder, reader, scan_comp, at);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Restart-interval bookkeeping (libjpeg's `restarts_to_go` and `next_restart_num`).
struct Restarts {
    interval: usize,
    to_go: usize,
    next_number: u8,
    last_good_imcu_row: usize,
}

impl Restarts {
    /// Processes a restart marker when one is due before the next MCU, in iMCU row `imcu_row`.
    fn before_mcu(
        &mut self,
        reader: &mut BitReader,
        decoder: &mut impl BlockDecoder,
        imcu_row: usize,
    ) -> Result<()> {
        if !reader.insufficient {
            self.last_good_imcu_row = imcu_row;
        }
        if self.interval == 0 {
            return Ok(());
        }
        if self.to_go == 0 {
            self.process_restart(reader)?;
            decoder.restart();
        }
        self.to_go -= 1;
        Ok(())
    }

    fn process_restart(&mut self, reader: &mut BitReader) -> Result<()> {
        reader.discard_buffered_bits();
        let marker = reader
            .next_marker()
            .ok_or(Error::Truncated("image data ends before a restart marker"))?;
        if marker == RST0 + self.next_number {
            reader.clear_marker();
        } else {
            resync_to_restart(reader, self.next_number)?;
        }
        self.next_number = (self.next_number + 1) & 7;
        self.to_go = self.interval;
        // Data resumes after a good restart marker; a marker left unread keeps it exhausted.
        if reader.marker.is_none() {
            reader.insufficient = false;
        }
        Ok(())
    }
}

/// libjpeg's `jpeg_resync_to_restart`: what to do when the marker found is not the RST expected.
fn resync_to_restart(reader: &mut BitReader, expected: u8) -> Result<()> {
    let near = |marker: u8, offsets: [u8; 2]| {
        offsets
            .iter()
            .any(|&d| marker == RST0 + (expected.wrapping_add(d) & 7))
    };
    loop {
        let marker = reader.marker.expect("a marker stopped the reader");
        let is_restart = (RST0..RST0 + 8).contains(&marker);
        if marker >= 0xC0 && (!is_restart || near(marker, [1, 2])) {
            // A valid non-restart marker, or one of the next two restarts: leave it unread, so
            // that the segments until it decode as empty.
            return Ok(());
        }
        if marker < 0xC0 || near(marker, [7, 6]) {
            // An invalid marker, or an earlier restart: skip to the next marker and decide again.
            reader.clear_marker();
            reader
                .next_marker()
                .ok_or(Error::Truncated("image data ends before a restart marker"))?;
            continue;
        }
        // The expected restart, or one too far away: discard it and read on.
        reader.clear_marker();
        return Ok(());
    }
}
