//! Sequential (baseline and extended) Huffman decoding of blocks (libjpeg's `jdhuff.c`).

use super::bits::BitReader;
use super::huffman::{extend, HuffmanTable};
use super::markers::ZIGZAG_TO_NATURAL;
use super::scan::BlockDecoder;

/// Decodes whole blocks: a DC difference, then run-length coded AC coefficients.
pub(crate) struct SequentialDecoder<'t> {
    /// DC and AC table of each scan component.
    pub tables: Vec<(&'t HuffmanTable, &'t HuffmanTable)>,
    /// DC prediction of each scan component.
    pub dc_pred: Vec<i32>,
}

impl BlockDecoder for SequentialDecoder<'_> {
    #[inline]
    fn decode_block(&mut self, reader: &mut BitReader, scan_comp: usize, block: &mut [i16; 64]) {
        let (dc_table, ac_table) = self.tables[scan_comp];
        *block = [0; 64];
        let size = u32::from(dc_table.decode(reader));
        let diff = extend(reader.get_bits(size), size);
        // libjpeg keeps the prediction in an int and stores it truncated to 16 bits.
        let dc = self.dc_pred[scan_comp].wrapping_add(diff);
        self.dc_pred[scan_comp] = dc;
        block[0] = dc as i16;
        let mut k = 1;
        while k < 64 {
            let symbol = ac_table.decode(reader);
            let (run, size) = (usize::from(symbol >> 4), u32::from(symbol & 15));
            if size != 0 {
                k += run;
                let value = extend(reader.get_bits(size), size);
                block[ZIGZAG_TO_NATURAL[k]] = value as i16;
                k += 1;
            } else if run == 15 {
                k += 16;
            } else {
                break;
            }
        }
    }

    fn restart(&mut self) {
        self.dc_pred.fill(0);
    }
}
