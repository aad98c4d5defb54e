//! Progressive Huffman decoding: DC and AC, first and refinement scans (libjpeg's `jdphuff.c`).

use super::bits::BitReader;
use super::coefficients::Smoothing;
use super::huffman::{extend, HuffmanTable};
use super::markers::{ScanHeader, ZIGZAG_TO_NATURAL};
use super::scan::BlockDecoder;
use crate::error::{Error, Result};

/// Checks a progressive scan's parameters as libjpeg's `start_pass_phuff_decoder` does.
pub(crate) fn validate(scan: &ScanHeader) -> Result<()> {
    let bad = if scan.ss == 0 {
        scan.se != 0
    } else {
        scan.ss > scan.se || scan.se > 63 || scan.components.len() != 1
    };
    if bad || (scan.ah != 0 && scan.al + 1 != scan.ah) || scan.al > 13 {
        return Err(Error::corrupt(format!(
            "invalid progressive scan (Ss={} Se={} Ah={} Al={})",
            scan.ss, scan.se, scan.ah, scan.al
        )));
    }
    Ok(())
}

/// Successive-approximation state of each coefficient of each component: the point transform
/// of the last scan that coded it, or -1 while none has (libjpeg's `coef_bits`), plus what
/// libjpeg needs of it to decide on block smoothing.
pub(crate) struct CoefficientBits {
    current: Vec<[i8; 64]>,
    /// The first 10 entries as they were before the component's latest scan.
    previous: Vec<[i8; SMOOTHING_COEFS]>,
    scans: usize,
}

/// Coefficients block smoothing looks at: DC and the first 9 AC in zigzag order.
pub(crate) const SMOOTHING_COEFS: usize = 10;

impl CoefficientBits {
    /// No coefficient of `components` components coded yet.
    pub fn new(components: usize) -> Self {
        Self {
            current: vec![[-1; 64]; components],
            previous: vec![[0; SMOOTHING_COEFS]; components],
            scans: 0,
        }
    }

    /// Records what `scan` codes (libjpeg's `start_pass_phuff_decoder`).
    pub fn update(&mut self, scan: &ScanHeader) {
        self.scans += 1;
        let (ss, se) = (usize::from(scan.ss), usize::from(scan.se));
        for sc in &scan.components {
            let (current, previous) = (&mut self.current[sc.index], &mut self.previous[sc.index]);
            // libjpeg saves Ss.min(1)..=Se.max(9); only the first 10 matter for smoothing.
            for k in ss.min(1)..SMOOTHING_COEFS {
                previous[k] = if self.scans > 1 { current[k] } else { 0 };
            }
            current[ss..=se].fill(scan.al as i8);
        }
    }

    /// libjpeg's `smoothing_ok`: the coefficient bits to smooth with, when smoothing applies.
    pub fn smoothing(&self, quant: &[[u16; 64]], last_good_imcu_row: usize) -> Option<Smoothing> {
        // Natural-order positions of the DC and the first 9 AC coefficients.
        const POSITIONS: [usize; SMOOTHING_COEFS] = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24];
        if quant.iter().any(|q| POSITIONS.iter().any(|&p| q[p] == 0)) {
            return None;
        }
        if self.current.iter().any(|bits| bits[0] < 0) {
            return None;
        }
        let current: Vec<[i8; SMOOTHING_COEFS]> = self
            .current
            .iter()
            .map(|bits| bits[..SMOOTHING_COEFS].try_into().expect("10"))
            .collect();
        let useful = current.iter().any(|bits| bits[1..].iter().any(|&b| b != 0));
        let previous = self
            .previous
            .iter()
            .map(|&bits| {
                if self.scans > 1 {
                    bits
                } else {
                    [-1; SMOOTHING_COEFS]
                }
            })
            .collect();
        useful.then_some(Smoothing {
            current,
            previous,
            last_good_imcu_row,
        })
    }
}

/// First DC scan: DC difference, shifted left by Al.
pub(crate) struct DcFirst<'t> {
    pub tables: Vec<&'t HuffmanTable>,
    pub dc_pred: Vec<i32>,
    pub al: u32,
    /// Set when a DC value overflows, which libjpeg treats as a fatal error.
    pub overflow: bool,
}

impl BlockDecoder for DcFirst<'_> {
    fn decode_block(&mut self, reader: &mut BitReader, scan_comp: usize, block: &mut [i16; 64]) {
        let size = u32::from(self.tables[scan_comp].decode(reader));
        let diff = extend(reader.get_bits(size), size);
        let Some(dc) = self.dc_pred[scan_comp].checked_add(diff) else {
            self.overflow = true;
            return;
        };
        self.dc_pred[scan_comp] = dc;
        block[0] = (dc << self.al) as i16;
    }

    fn restart(&mut self) {
        self.dc_pred.fill(0);
    }
}

/// DC refinement: one more bit of each DC coefficient.
pub(crate) struct DcRefine {
    pub al: u32,
}

impl BlockDecoder for DcRefine {
    fn decode_block(&mut self, reader: &mut BitReader, _: usize, block: &mut [i16; 64]) {
        if reader.get_bit() {
            block[0] |= 1 << self.al;
        }
    }

    fn restart(&mut self) {}
}

/// First AC scan of a band Ss..=Se, with end-of-band runs.
pub(crate) struct AcFirst<'t> {
    pub table: &'t HuffmanTable,
    pub ss: usize,
    pub se: usize,
    pub al: u32,
    pub eob_run: u32,
}

impl BlockDecoder for AcFirst<'_> {
    fn decode_block(&mut self, reader: &mut BitReader, _: usize, block: &mut [i16; 64]) {
        if self.eob_run > 0 {
            self.eob_run -= 1;
            return;
        }
        let mut k = self.ss;
        while k <= self.se {
            let symbol = self.table.decode(reader);
            let (run, size) = (u32::from(symbol >> 4), u32::from(symbol & 15));
            if size != 0 {
                k += run as usize;
                let value = extend(reader.get_bits(size), size);
                block[ZIGZAG_TO_NATURAL[k]] = (value << self.al) as i16;
            } else if run == 15 {
                k += 15;
            } else {
                self.eob_run = (1 << run) + reader.get_bits(run) as u32 - 1;
                break;
            }
            k += 1;
        }
    }

    fn restart(&mut self) {
        self.eob_run = 0;
    }
}

/// AC refinement: correction bits for known coefficients, and newly non-zero ones of ±1<<Al.
pub(crate) struct AcRefine<'t> {
    pub table: &'t HuffmanTable,
    pub ss: usize,
    pub se: usize,
    pub al: u32,
    pub eob_run: u32,
}

impl AcRefine<'_> {
    /// Adds the next correction bit to a coefficient already known to be non-zero.
    #[inline]
    fn refine(&self, reader: &mut BitReader, coef: &mut i16) {
        let p1: i16 = 1 << self.al;
        if reader.get_bit() && *coef & p1 == 0 {
            *coef = if *coef >= 0 {
                coef.wrapping_add(p1)
            } else {
                coef.wrapping_sub(p1)
            };
        }
    }
}

impl BlockDecoder for AcRefine<'_> {
    fn decode_block(&mut self, reader: &mut BitReader, _: usize, block: &mut [i16; 64]) {
        let mut k = self.ss;
        if self.eob_run == 0 {
            while k <= self.se {
                let symbol = self.table.decode(reader);
                let (mut run, size) = (i32::from(symbol >> 4), symbol & 15);
                let mut new_value = 0i16;
                if size != 0 {
                    // The size of a newly non-zero coefficient is always 1; libjpeg only warns.
                    new_value = if reader.get_bit() {
                        1 << self.al
                    } else {
                        -1 << self.al
                    };
                } else if run != 15 {
                    self.eob_run = (1 << run) + reader.get_bits(run as u32) as u32;
                    break;
                }
                // Skip already-non-zero coefficients (refining them) and `run` zero ones.
                while k <= self.se {
                    let coef = &mut block[ZIGZAG_TO_NATURAL[k]];
                    if *coef != 0 {
                        self.refine(reader, coef);
                    } else {
                        run -= 1;
                        if run < 0 {
                            break;
                        }
                    }
                    k += 1;
                }
                if new_value != 0 {
                    block[ZIGZAG_TO_NATURAL[k]] = new_value;
                }
                k += 1;
            }
        }
        if self.eob_run > 0 {
            // Inside an end-of-band run: only correction bits for the non-zero coefficients.
            while k <= self.se {
                let coef = &mut block[ZIGZAG_TO_NATURAL[k]];
                if *coef != 0 {
                    self.refine(reader, coef);
                }
                k += 1;
            }
            self.eob_run -= 1;
        }
    }

    fn restart(&mut self) {
        self.eob_run = 0;
    }
}
