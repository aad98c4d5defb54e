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

impl SequentialDecoder<'_> {
    /// Decodes one block, handing each coefficient it codes to `put(natural index, value)`:
    /// the DC value (zero included), then the non-zero AC values in zigzag order. A corrupt
    /// block may put index 63 more than once; the last value stands, as in libjpeg.
    #[inline(always)]
    fn decode_with(
        &mut self,
        reader: &mut BitReader,
        scan_comp: usize,
        mut put: impl FnMut(usize, i16),
    ) {
        let (dc_table, ac_table) = self.tables[scan_comp];
        let diff = dc_table.decode_dc_difference(reader);
        // libjpeg keeps the prediction in an int and stores it truncated to 16 bits.
        let dc = self.dc_pred[scan_comp].wrapping_add(diff);
        self.dc_pred[scan_comp] = dc;
        put(0, dc as i16);
        let mut k = 1;
        while k < 64 {
            if let Some(fast) = ac_table.decode_fast(reader) {
                k += fast.run();
                put(ZIGZAG_TO_NATURAL[k], fast.value() as i16);
                k += 1;
                continue;
            }
            let symbol = ac_table.decode(reader);
            let (run, size) = (usize::from(symbol >> 4), u32::from(symbol & 15));
            if size != 0 {
                k += run;
                let value = extend(reader.get_bits(size), size);
                put(ZIGZAG_TO_NATURAL[k], value as i16);
                k += 1;
            } else if run == 15 {
                k += 16;
            } else {
                break;
            }
        }
    }

    /// Decodes one block into `entries` as the compact form wants it: one `index << 16 | value`
    /// per non-zero coefficient (natural index, value as 16 bits), in decoding order. Returns
    /// how many, and whether a value is outside −512..=511.
    #[inline]
    pub fn decode_entries(
        &mut self,
        reader: &mut BitReader,
        scan_comp: usize,
        entries: &mut [u32; 64],
    ) -> (usize, bool) {
        let (mut count, mut wide) = (0, false);
        self.decode_with(reader, scan_comp, |i, value| {
            // Only the DC can be zero. At most 64 coefficients are coded: the DC, and AC
            // positions that strictly increase from 1 to at most 63 (a corrupt block may
            // repeat 63; the later entry wins when expanded, as the later write does here).
            if value != 0 && count < 64 {
                entries[count] = (i as u32) << 16 | u32::from(value as u16);
                count += 1;
                wide |= !(-512..=511).contains(&value);
            }
        });
        (count, wide)
    }
}

impl BlockDecoder for SequentialDecoder<'_> {
    #[inline]
    fn decode_block(&mut self, reader: &mut BitReader, scan_comp: usize, block: &mut [i16; 64]) {
        *block = [0; 64];
        self.decode_with(reader, scan_comp, |i, value| block[i] = value);
    }

    fn restart(&mut self) {
        self.dc_pred.fill(0);
    }
}
