//! A single-scan sequential image's entropy-coded data as the GPU decodes it (shaders/entropy.wgsl,
//! whose CPU mirror is [`super::parallel`]): the data un-stuffed into big-endian words, restart
//! interval by restart interval, the Huffman tables as lookup words, and the MCU's blocks.
//!
//! Preparing this costs the CPU one pass of copying over the data, instead of Huffman decoding it.
//! Each restart interval is decoded on its own (its DC predictions start at zero), so a scan
//! with restart markers is many independent jobs; one whose markers are not the ones libjpeg
//! expects where it expects them is left to the CPU decoder, which resynchronises as libjpeg
//! does.

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

/// The entropy-coded data of one single-scan sequential image.
#[derive(Clone, Debug)]
pub(crate) struct EntropySegment {
    /// Each restart interval's data bytes up to the marker that ends them, `FF 00` un-stuffed,
    /// four to a word with the first byte highest, each interval starting a word; zero-padded
    /// to an even number of words.
    pub words: Vec<u32>,
    /// The restart intervals, in order: one for a scan without restart markers.
    pub intervals: Vec<Interval>,
    /// The tables, [`TABLE_WORDS`] each: scan component c's DC table is table 2c, its AC
    /// table 2c + 1.
    pub tables: Vec<u32>,
    /// The blocks of one MCU, in decoding order.
    pub blocks: Vec<McuBlock>,
    /// MCUs in the scan.
    pub mcus: usize,
}

/// One restart interval of an [`EntropySegment`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interval {
    /// Its data: `words` words of the segment's from `first_word`.
    pub first_word: usize,
    pub words: usize,
    /// How many bits of them are data: past them, a decoder reads zeros and has run out.
    pub bit_len: u64,
    /// The MCUs before it in the scan, and its own.
    pub first_mcu: usize,
    pub mcus: usize,
}

/// One interval with its segment's tables: what one decoder decodes from its start.
#[derive(Clone, Copy)]
pub(crate) struct IntervalData<'a> {
    pub words: &'a [u32],
    pub bit_len: u64,
    pub tables: &'a [u32],
    pub blocks: &'a [McuBlock],
    /// The MCUs before it in the scan, and its own.
    pub first_mcu: usize,
    pub mcus: usize,
}

impl IntervalData<'_> {
    /// Blocks in the interval.
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
}

impl EntropySegment {
    /// Interval `i`'s data.
    pub fn interval(&self, i: usize) -> IntervalData<'_> {
        let interval = &self.intervals[i];
        IntervalData {
            words: &self.words[interval.first_word..][..interval.words],
            bit_len: interval.bit_len,
            tables: &self.tables,
            blocks: &self.blocks,
            first_mcu: interval.first_mcu,
            mcus: interval.mcus,
        }
    }

    /// Un-stuffs the data from `start` of `data` as the CPU decoder's bit reader reads it: the
    /// scan's `mcus` MCUs in restart intervals of `restart_mcus` (0: no restart markers), each
    /// up to the marker that ends it. `None` when a marker other than the restart marker libjpeg
    /// expects ends an interval (the CPU decoder then resynchronises), or when the data ends
    /// without a marker (the CPU decoder reports a truncated file).
    pub fn unstuff(
        data: &[u8],
        start: usize,
        mcus: usize,
        restart_mcus: usize,
    ) -> Option<(Vec<u32>, Vec<Interval>)> {
        let rest = data.get(start..)?;
        let per_interval = if restart_mcus == 0 {
            mcus
        } else {
            restart_mcus
        };
        let count = mcus.div_ceil(per_interval.max(1)).max(1);
        let mut out = Unstuffed::with_room(rest.len());
        let mut intervals = Vec::new();
        let mut pos = 0;
        for n in 0..count {
            let first_byte = out.len;
            let (marker, after) = out.append_to_marker(rest, pos)?;
            let expected_restart = 0xD0 + (n % 8) as u8;
            if n + 1 < count && marker != expected_restart {
                return None;
            }
            let first_mcu = n * per_interval;
            intervals.push(Interval {
                first_word: first_byte / 4,
                words: (out.len - first_byte).div_ceil(4),
                bit_len: (out.len - first_byte) as u64 * 8,
                first_mcu,
                mcus: per_interval.min(mcus - first_mcu),
            });
            // The next interval starts a word.
            out.len = out.len.next_multiple_of(4);
            pos = after;
        }
        Some((out.into_words(), intervals))
    }
}

/// Un-stuffed bytes, written straight into the words' memory in their order.
struct Unstuffed {
    words: Vec<u32>,
    /// Bytes written.
    len: usize,
}

impl Unstuffed {
    /// Un-stuffing only drops bytes, so `bytes` of input fit (restart intervals' word padding
    /// makes room as it needs).
    fn with_room(bytes: usize) -> Self {
        Self {
            words: vec![0; bytes.next_multiple_of(8) / 4],
            len: 0,
        }
    }

    /// Room for `more` bytes after those written; zero-filled, as a reader past the data reads.
    fn room(&mut self, more: usize) -> &mut [u8] {
        let need = (self.len + more).next_multiple_of(8) / 4;
        if need > self.words.len() {
            self.words.resize(need.max(self.words.len() * 5 / 4), 0);
        }
        let len = self.len;
        &mut bytemuck::cast_slice_mut::<u32, u8>(&mut self.words)[len..len + more]
    }

    /// Appends the data of `rest` from `pos` up to the next marker; returns the marker's code
    /// and the position after it (`None`: the data ends first).
    fn append_to_marker(&mut self, rest: &[u8], mut pos: usize) -> Option<(u8, usize)> {
        loop {
            // Most runs are long (an FF is one byte in 256): found and copied in bulk.
            let run = memchr::memchr(0xFF, &rest[pos..])?;
            self.room(run).copy_from_slice(&rest[pos..pos + run]);
            (pos, self.len) = (pos + run, self.len + run);
            // As BitReader::next_data_byte: a run of FF is one FF; FF 00 is a data byte FF.
            while rest.get(pos) == Some(&0xFF) {
                pos += 1;
            }
            match *rest.get(pos)? {
                0 => {
                    self.room(1)[0] = 0xFF;
                    (pos, self.len) = (pos + 1, self.len + 1);
                }
                marker => return Some((marker, pos + 1)),
            }
        }
    }

    /// The words, an even number of them so that the tables after them in the upload start
    /// 8-byte aligned (as mapped ranges must), each read first byte to last: big-endian.
    fn into_words(mut self) -> Vec<u32> {
        self.words.truncate(self.len.next_multiple_of(8) / 4);
        for word in &mut self.words {
            *word = u32::from_be(*word);
        }
        self.words
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
        let (words, intervals) = EntropySegment::unstuff(&data, 0, 1, 0).expect("ends at a marker");
        assert_eq!(intervals[0].bit_len, 7 * 8);
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
        let (words, _) =
            EntropySegment::unstuff(&[1, 0xFF, 0xD9], 0, 1, 0).expect("ends at a marker");
        assert_eq!(words, vec![0x0100_0000, 0], "an even number of words");
    }

    #[test]
    fn data_without_a_marker_is_not_a_segment() {
        assert!(EntropySegment::unstuff(&[1, 2, 3], 0, 1, 0).is_none());
        assert!(EntropySegment::unstuff(&[1, 2, 0xFF], 0, 1, 0).is_none());
        assert!(EntropySegment::unstuff(&[1, 0xFF, 0x00], 0, 1, 0).is_none());
    }

    #[test]
    fn restart_intervals_start_words_and_need_the_expected_markers() {
        // Five MCUs in intervals of two: RST0, RST1, then any marker ends the last.
        let data = [
            1, 2, 3, 0xFF, 0xD0, 4, 0xFF, 0x00, 0xFF, 0xD1, 5, 6, 7, 8, 9, 0xFF, 0xD9,
        ];
        let (words, intervals) =
            EntropySegment::unstuff(&data, 0, 5, 2).expect("markers as expected");
        assert_eq!(
            words,
            vec![0x0102_0300, 0x04FF_0000, 0x0506_0708, 0x0900_0000]
        );
        let spans: Vec<_> = intervals
            .iter()
            .map(|i| (i.first_word, i.words, i.bit_len, i.first_mcu, i.mcus))
            .collect();
        assert_eq!(
            spans,
            [(0, 1, 24, 0, 2), (1, 1, 16, 2, 2), (2, 2, 40, 4, 1)]
        );
        // A marker out of sequence, a missing one, or another marker between intervals: the
        // CPU decoder's resynchronisation decides.
        for bad in [
            [1, 0xFF, 0xD1, 2, 0xFF, 0xD1, 3, 0xFF, 0xD9],
            [1, 0xFF, 0xD0, 2, 0xFF, 0xD9, 3, 0xFF, 0xD9],
            [1, 0xFF, 0xD0, 2, 0xFF, 0xE1, 3, 0xFF, 0xD9],
        ] {
            assert!(EntropySegment::unstuff(&bad, 0, 5, 2).is_none(), "{bad:?}");
        }
    }
}
