//! A single-scan sequential image's entropy-coded data as the GPU decodes it (shaders/entropy.wgsl,
//! whose CPU mirror is [`super::parallel`]): the data un-stuffed into big-endian words, the
//! Huffman tables as lookup words, and the MCU's blocks.
//!
//! Preparing this costs the CPU one pass of copying over the data, instead of Huffman decoding it.

use super::huffman::HuffmanTable;

/// Words per Huffman table: the 9-bit lookup (512), the largest code of each length (18), the
/// symbol offset of each length (18), and the symbols (256, one a word).
pub(crate) const TABLE_WORDS: usize = 512 + 18 + 18 + 256;

/// Most blocks in one MCU (libjpeg's `D_MAX_BLOCKS_IN_MCU`).
pub(crate) const MAX_BLOCKS_IN_MCU: usize = 10;

/// One block of the MCU, packed as `scan_comp | comp << 4 | slot << 8 | per_mcu << 16`: its scan
/// component (which tables decode it), its frame component, its place among that component's
/// blocks in the MCU, and how many blocks of that component an MCU holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct McuBlock {
    pub scan_comp: usize,
    pub comp: usize,
    pub slot: usize,
    pub per_mcu: usize,
}

impl McuBlock {
    /// The word the shader reads.
    pub fn word(&self) -> u32 {
        (self.scan_comp | self.comp << 4 | self.slot << 8 | self.per_mcu << 16) as u32
    }

    /// Where block `mcu` of this kind lies in its component's table (see
    /// [`super::compact::BlockOrder`]).
    pub fn in_component(&self, mcu: usize) -> usize {
        mcu * self.per_mcu + self.slot
    }
}

/// The entropy-coded data of one single-scan sequential image without restart markers.
#[derive(Clone, Debug)]
pub(crate) struct EntropySegment {
    /// The data bytes up to the marker that ends them, `FF 00` un-stuffed, four to a word with
    /// the first byte highest, zero-padded to an even number of words.
    pub words: Vec<u32>,
    /// How many bits of `words` are data: past them, a decoder reads zeros and has run out.
    pub bit_len: u64,
    /// The tables, [`TABLE_WORDS`] each: scan component c's DC table is table 2c, its AC
    /// table 2c + 1.
    pub tables: Vec<u32>,
    /// The blocks of one MCU, in decoding order.
    pub blocks: Vec<McuBlock>,
    /// MCUs in the scan.
    pub mcus: usize,
}

impl EntropySegment {
    /// Blocks in the scan.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "stage 0's CPU mirror counts with it, in tests")
    )]
    pub fn total_blocks(&self) -> usize {
        self.mcus * self.blocks.len()
    }

    /// Whether a decoder that guessed the wrong block of the MCU always falls back into step:
    /// whether the MCU's blocks, read as the tables that decode them, repeat only once a
    /// whole MCU. Where they repeat sooner (say, three components sharing one pair of
    /// tables), a wrong guess decodes the very same bits as the right one forever.
    pub fn corrects_wrong_blocks(&self) -> bool {
        let table = |t: usize| &self.tables[t * TABLE_WORDS..(t + 1) * TABLE_WORDS];
        let decodes_alike = |a: &McuBlock, b: &McuBlock| {
            table(2 * a.scan_comp) == table(2 * b.scan_comp)
                && table(2 * a.scan_comp + 1) == table(2 * b.scan_comp + 1)
        };
        let n = self.blocks.len();
        (1..n)
            .filter(|shift| n.is_multiple_of(*shift))
            .all(|shift| {
                !(0..n).all(|b| decodes_alike(&self.blocks[b], &self.blocks[(b + shift) % n]))
            })
    }

    /// Un-stuffs the data from `start` of `data` up to the next marker, as the CPU decoder's
    /// bit reader reads it. `None` when the data ends without a marker (the CPU decoder reports that as a
    /// truncated file).
    pub fn unstuff(data: &[u8], start: usize) -> Option<(Vec<u32>, u64)> {
        let rest = data.get(start..)?;
        // Un-stuffing only drops bytes: room for all of them, in whole words and an even number
        // of them, so that the tables after them in the upload start 8-byte aligned (as mapped
        // ranges must). The bytes go straight into the words' memory, in their order.
        let mut words = vec![0u32; rest.len().next_multiple_of(8) / 4];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        let (mut pos, mut len) = (0, 0);
        loop {
            // Most runs are long (an FF is one byte in 256): found and copied in bulk.
            let run = memchr::memchr(0xFF, &rest[pos..])?;
            bytes[len..len + run].copy_from_slice(&rest[pos..pos + run]);
            (pos, len) = (pos + run, len + run);
            // As BitReader::next_data_byte: a run of FF is one FF; FF 00 is a data byte FF.
            while rest.get(pos) == Some(&0xFF) {
                pos += 1;
            }
            match rest.get(pos)? {
                0 => {
                    bytes[len] = 0xFF;
                    (pos, len) = (pos + 1, len + 1);
                }
                _ => break,
            }
        }
        words.truncate(len.next_multiple_of(8) / 4);
        // The bit reader reads each word's bytes first to last: big-endian words.
        for word in &mut words {
            *word = u32::from_be(*word);
        }
        Some((words, len as u64 * 8))
    }
}

/// Appends `table` as the [`TABLE_WORDS`] words the shader reads, part by part (each a loop
/// that vectorises).
pub(crate) fn push_table_words(table: &HuffmanTable, words: &mut Vec<u32>) {
    let parts = table.parts();
    words.reserve(TABLE_WORDS);
    words.extend(parts.lookup.iter().map(|&e| u32::from(e)));
    words.extend(parts.max_code.iter().map(|&c| c as u32));
    words.extend(parts.value_offset.iter().map(|&o| o as u32));
    words.extend(parts.symbols.iter().map(|&s| u32::from(s)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jpeg::bits::BitReader;

    #[test]
    fn unstuffing_reads_what_the_bit_reader_reads() {
        let data = [
            1, 2, 0xFF, 0x00, 3, 0xFF, 0xFF, 0x00, 4, 5, 0xFF, 0xFF, 0xD9, 7,
        ];
        let (words, bit_len) = EntropySegment::unstuff(&data, 0).expect("ends at a marker");
        assert_eq!(bit_len, 7 * 8);
        assert_eq!(words, vec![0x0102_FF03, 0xFF04_0500]);
        let mut reader = BitReader::new(&data, 0);
        for word in &words {
            for byte in word.to_be_bytes() {
                assert_eq!(reader.get_bits(8), i32::from(byte));
            }
        }
        assert!(
            reader.insufficient,
            "the reader ran out where the segment does"
        );
        let (words, _) = EntropySegment::unstuff(&[1, 0xFF, 0xD9], 0).expect("ends at a marker");
        assert_eq!(words, vec![0x0100_0000, 0], "an even number of words");
    }

    #[test]
    fn data_without_a_marker_is_not_a_segment() {
        assert!(EntropySegment::unstuff(&[1, 2, 3], 0).is_none());
        assert!(EntropySegment::unstuff(&[1, 2, 0xFF], 0).is_none());
        assert!(EntropySegment::unstuff(&[1, 0xFF, 0x00], 0).is_none());
    }
}
