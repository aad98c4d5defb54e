//! The compact coefficient form the GPU uploads (shaders/idct.wgsl reads it): per component, a
//! table of one word per block plus one, then a stream of 16-bit entries, one per non-zero
//! coefficient.
//!
//! - Table word: `start << 1 | wide`, where `start` is the block's first half-word in the
//!   stream, so that block b's entries lie between its start and block b + 1's.
//! - Entry: `index << 10 | value`, the natural-order index and the value in 10 bits two's
//!   complement; in a `wide` block (a value outside −512..=511), two half-words: the index, then
//!   the value.
//! - The stream packs two half-words per word, the lower first.
//!
//! Blocks lie in the table in the order the entropy decoder met them ([`BlockOrder`]), so that a
//! single-scan image's entries can be written as its blocks are decoded, with no dense
//! coefficients in between.

use super::bits::BitReader;
use super::scan::{BlockAt, BlockStore};
use super::sequential::SequentialDecoder;

/// The order of a component's blocks in its table: MCUs of `mcu_w`×`mcu_h` blocks, row-major
/// with `mcus_per_row` per row, each MCU's blocks row-major. A 1×1 MCU is plain row-major order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockOrder {
    /// Blocks per MCU, across.
    pub mcu_w: usize,
    /// Blocks per MCU, down.
    pub mcu_h: usize,
    /// MCUs per row.
    pub mcus_per_row: usize,
    /// Blocks in the table.
    pub blocks: usize,
}

impl BlockOrder {
    /// Plain row-major order over `width`×`height` blocks.
    pub fn row_major(width: usize, height: usize) -> Self {
        Self {
            mcu_w: 1,
            mcu_h: 1,
            mcus_per_row: width,
            blocks: width * height,
        }
    }

    /// Where block (`bx`, `by`) is in the table. shaders/idct.wgsl's `table_index` mirrors it.
    #[inline]
    pub fn position(&self, bx: usize, by: usize) -> usize {
        let mcu = (by / self.mcu_h) * self.mcus_per_row + bx / self.mcu_w;
        mcu * self.mcu_w * self.mcu_h + (by % self.mcu_h) * self.mcu_w + bx % self.mcu_w
    }
}

/// One component's coefficients in compact form: the words to upload, and their block order.
#[derive(Clone, Debug)]
pub(crate) struct CompactPlane {
    /// The table, then the entry stream.
    pub words: Vec<u32>,
    /// The order of the table's blocks.
    pub order: BlockOrder,
}

/// Builds a [`CompactPlane`] one block at a time, in table order; blocks never pushed (skipped
/// by a decoder that ran out of data) have no entries, so decode as zero.
pub(crate) struct CompactBuilder {
    order: BlockOrder,
    table: Vec<u32>,
    /// The entries: its first `used` half-words; past them, room that
    /// [`Self::push_dense`] writes into before it knows how many entries a block has.
    stream: Vec<u16>,
    used: usize,
}

impl CompactBuilder {
    /// An empty plane of `order`'s blocks, with room for `entries_hint` entries.
    pub fn new(order: BlockOrder, entries_hint: usize) -> Self {
        Self {
            order,
            table: Vec::with_capacity(order.blocks + 1),
            stream: Vec::with_capacity(entries_hint),
            used: 0,
        }
    }

    /// Adds the block at table position `position` (see [`BlockOrder::position`]): its
    /// non-zero coefficients as `index << 16 | value` (see
    /// [`SequentialDecoder::decode_entries`]), and whether a value is outside −512..=511.
    /// Positions must increase.
    #[inline]
    pub fn push(&mut self, position: usize, entries: &[u32], wide: bool) {
        debug_assert!(position >= self.table.len(), "blocks out of table order");
        self.fill_to(position);
        self.table.push((self.used as u32) << 1 | u32::from(wide));
        self.stream.truncate(self.used);
        if wide {
            let pairs = entries.iter().flat_map(|&e| [(e >> 16) as u16, e as u16]);
            self.stream.extend(pairs);
        } else {
            let narrow = entries
                .iter()
                .map(|&e| ((e >> 6) as u16 & 0xfc00) | (e as u16 & 0x3ff));
            self.stream.extend(narrow);
        }
        self.used = self.stream.len();
    }

    /// Adds the next block in table order from its dense coefficients (natural order): what
    /// [`Self::push`] does with the block's entries, without gathering them first.
    #[inline]
    pub fn push_dense(&mut self, block: &[i16; 64]) {
        // A value outside −512..=511 has bits set above the ten its offset by 512 needs; a fold
        // over all 64 (zeros pass) vectorises where `any` would not.
        let high = block
            .iter()
            .fold(0, |high, &v| high | (v.wrapping_add(512) as u16 & !0x3ff));
        let wide = high != 0;
        self.table.push((self.used as u32) << 1 | u32::from(wide));
        // Room for the most a block takes, written in place: pushing entry by entry re-reads
        // the stream's length and capacity from memory every time.
        if self.stream.len() < self.used + 128 {
            let room = (self.used + 128).max(2 * self.stream.len());
            self.stream.resize(room, 0);
        }
        let out: &mut [u16; 128] = (&mut self.stream[self.used..self.used + 128])
            .try_into()
            .expect("128");
        self.used += block_entries(block, wide, out);
    }

    /// Gives every block before table position `position` not pushed yet no entries.
    fn fill_to(&mut self, position: usize) {
        let empty = (self.used as u32) << 1;
        while self.table.len() < position {
            self.table.push(empty);
        }
    }

    /// The finished plane.
    pub fn finish(mut self) -> CompactPlane {
        self.fill_to(self.order.blocks);
        self.stream.truncate(self.used);
        let mut words = self.table;
        words.push((self.stream.len() as u32) << 1);
        let start = words.len();
        words.resize(start + self.stream.len().div_ceil(2), 0);
        // Two half-words per word, the lower first: the stream's own memory order on the
        // little-endian machines wgpu runs on.
        bytemuck::cast_slice_mut::<u32, u16>(&mut words[start..])[..self.stream.len()]
            .copy_from_slice(&self.stream);
        CompactPlane {
            words,
            order: self.order,
        }
    }
}

/// A single-scan sequential image's planes, written as its blocks are decoded.
pub(crate) struct CompactStore {
    pub planes: Vec<CompactBuilder>,
    entries: [u32; 64],
}

impl CompactStore {
    pub fn new(planes: Vec<CompactBuilder>) -> Self {
        Self {
            planes,
            entries: [0; 64],
        }
    }
}

impl BlockStore<SequentialDecoder<'_>> for CompactStore {
    /// The table is in the scan's order, so a block's place in it is its place in the scan.
    #[inline]
    fn decode(
        &mut self,
        decoder: &mut SequentialDecoder<'_>,
        reader: &mut BitReader,
        scan_comp: usize,
        at: BlockAt,
    ) {
        let plane = &mut self.planes[at.comp];
        debug_assert_eq!(at.in_scan, plane.order.position(at.bx, at.by));
        let (count, wide) = decoder.decode_entries(reader, scan_comp, &mut self.entries);
        plane.push(at.in_scan, &self.entries[..count], wide);
    }
}

/// Compacts dense blocks, in row-major order over `blocks_w`×`blocks_h` of `block(bx, by)`.
pub(crate) fn compact_dense<'b>(
    blocks_w: usize,
    blocks_h: usize,
    block: impl Fn(usize, usize) -> std::borrow::Cow<'b, [i16; 64]>,
) -> CompactPlane {
    let mut builder = CompactBuilder::new(
        BlockOrder::row_major(blocks_w, blocks_h),
        blocks_w * blocks_h * 12,
    );
    for by in 0..blocks_h {
        for bx in 0..blocks_w {
            builder.push_dense(&block(bx, by));
        }
    }
    builder.finish()
}

/// Bit i set where `block[i]` is not zero.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code, reason = "calling an SSE2 function; see the SAFETY note")]
pub(crate) fn nonzero_mask(block: &[i16; 64]) -> u64 {
    // SAFETY: x86-64 always has SSE2.
    unsafe { nonzero_mask_sse2(block) }
}

/// [`nonzero_mask`] sixteen lanes at a time: every dense block of a progressive image goes
/// through it, and compacting one took a fifth less time than with 64-bit bit tricks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn nonzero_mask_sse2(block: &[i16; 64]) -> u64 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi16, _mm_movemask_epi8, _mm_packs_epi16, _mm_setzero_si128,
    };
    let rows: [std::arch::x86_64::__m128i; 8] = bytemuck::cast(*block);
    let zero = _mm_setzero_si128();
    (0..4).fold(0, |mask, pair| {
        // Sixteen lanes at a time: all ones where zero, packed to bytes, one bit each.
        let zeros = _mm_packs_epi16(
            _mm_cmpeq_epi16(rows[2 * pair], zero),
            _mm_cmpeq_epi16(rows[2 * pair + 1], zero),
        );
        let zero_bits = _mm_movemask_epi8(zeros) as u64;
        mask | ((!zero_bits & 0xffff) << (16 * pair))
    })
}

/// Bit i set where `block[i]` is not zero.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn nonzero_mask(block: &[i16; 64]) -> u64 {
    block
        .iter()
        .enumerate()
        .fold(0, |mask, (i, &v)| mask | (u64::from(v != 0) << i))
}

/// Writes `block`'s entries into `out` (two half-words each when `wide`), in index order;
/// returns how many half-words it wrote.
fn block_entries(block: &[i16; 64], wide: bool, out: &mut [u16; 128]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if !wide && has_compress() {
        // SAFETY: the CPU has the features `narrow_entries_avx512` enables.
        #[allow(
            unsafe_code,
            reason = "calling an AVX-512 function; see the SAFETY note"
        )]
        return unsafe { narrow_entries_avx512(block, out) };
    }
    entries_scalar(block, wide, out)
}

/// [`block_entries`] one non-zero coefficient at a time.
fn entries_scalar(block: &[i16; 64], wide: bool, out: &mut [u16; 128]) -> usize {
    let mut mask = nonzero_mask(block);
    let mut n = 0;
    // At most 64 entries: the masks of `n` only spare the bounds checks.
    if wide {
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            out[(2 * n) & 127] = i as u16;
            out[(2 * n + 1) & 127] = block[i] as u16;
            n += 1;
        }
        2 * n
    } else {
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            out[n & 63] = (i as u16) << 10 | (block[i] as u16 & 0x3ff);
            n += 1;
        }
        n
    }
}

/// Whether the CPU has AVX-512's 16-bit lanes (AVX-512F and BW).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx512bw() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

/// Whether the CPU compresses 16-bit lanes (AVX-512 VBMI2), which [`narrow_entries_avx512`]
/// needs.
#[cfg(target_arch = "x86_64")]
fn has_compress() -> bool {
    has_avx512bw() && std::arch::is_x86_feature_detected!("avx512vbmi2")
}

/// A narrow block's entries, 32 coefficients at a time: every lane's entry is built, and the
/// non-zero lanes' are compressed together. Progressive images spend about a tenth of their
/// CPU time compacting blocks otherwise.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2")]
fn narrow_entries_avx512(block: &[i16; 64], out: &mut [u16; 128]) -> usize {
    use std::arch::x86_64::{
        __m512i, _mm512_and_si512, _mm512_maskz_compress_epi16, _mm512_or_si512, _mm512_set1_epi16,
        _mm512_test_epi16_mask,
    };
    let halves: [__m512i; 2] = bytemuck::cast(*block);
    let mut n = 0;
    for (h, values) in halves.into_iter().enumerate() {
        let indices: [u16; 32] = std::array::from_fn(|i| ((32 * h + i) as u16) << 10);
        let entries = _mm512_or_si512(
            bytemuck::cast(indices),
            _mm512_and_si512(values, _mm512_set1_epi16(0x3ff)),
        );
        let nonzero = _mm512_test_epi16_mask(values, values);
        let packed: [u16; 32] = bytemuck::cast(_mm512_maskz_compress_epi16(nonzero, entries));
        // n <= 32 here, so the 32 lanes fit; those past the entries are overwritten or unused.
        out[n..n + 32].copy_from_slice(&packed);
        n += nonzero.count_ones() as usize;
    }
    n
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Block (`bx`, `by`) of `plane`, expanded as shaders/idct.wgsl's `load_block` does.
    pub(crate) fn expand(plane: &CompactPlane, bx: usize, by: usize) -> [i16; 64] {
        let words = &plane.words;
        let b = plane.order.position(bx, by);
        let stream = plane.order.blocks + 1;
        let half = |p: usize| (words[stream + p / 2] >> (16 * (p % 2))) as u16;
        let (first, end) = (words[b], (words[b + 1] >> 1) as usize);
        let mut block = [0i16; 64];
        let mut p = (first >> 1) as usize;
        while p < end {
            if first & 1 == 0 {
                let entry = half(p);
                block[usize::from(entry >> 10)] = ((entry << 6) as i16) >> 6;
                p += 1;
            } else {
                block[usize::from(half(p) & 63)] = half(p + 1) as i16;
                p += 2;
            }
        }
        block
    }

    fn random_blocks(n: usize) -> Vec<[i16; 64]> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..n)
            .map(|b| {
                std::array::from_fn(|i| match next() % 16 {
                    0 if b % 3 == 0 => next() as i16,
                    0..=2 => (next() % 1024) as i16 - 512,
                    3 => -1,
                    _ if i == 0 => 511,
                    _ => 0,
                })
            })
            .collect()
    }

    #[test]
    fn entries_expand_back_to_the_blocks() {
        let (w, h) = (40, 50);
        let blocks = random_blocks(w * h);
        let plane = compact_dense(w, h, |bx, by| {
            std::borrow::Cow::Borrowed(&blocks[by * w + bx])
        });
        for (b, block) in blocks.iter().enumerate() {
            assert_eq!(&expand(&plane, b % w, b / w), block, "block {b}");
        }
        // One half-word per entry, two in wide blocks.
        let halves: usize = blocks
            .iter()
            .map(|b| {
                let nonzero = b.iter().filter(|&&c| c != 0).count();
                let wide = b.iter().any(|c| !(-512..=511).contains(c));
                nonzero * if wide { 2 } else { 1 }
            })
            .sum();
        assert_eq!(plane.words.len(), blocks.len() + 1 + halves.div_ceil(2));
    }

    /// Blocks pushed in MCU order, some skipped (left zero), expand back where they belong.
    #[test]
    fn mcu_ordered_planes_expand_back_to_the_blocks() {
        let (mcu_w, mcu_h, mcus_x, mcus_y) = (2, 2, 7, 5);
        let (w, h) = (mcu_w * mcus_x, mcu_h * mcus_y);
        let order = BlockOrder {
            mcu_w,
            mcu_h,
            mcus_per_row: mcus_x,
            blocks: w * h,
        };
        let blocks = random_blocks(w * h);
        let skipped = |bx: usize, by: usize| (bx / mcu_w + by / mcu_h) % 5 == 3 || by >= h - 2;
        let mut builder = CompactBuilder::new(order, 0);
        for my in 0..mcus_y {
            for mx in 0..mcus_x {
                for y in 0..mcu_h {
                    for x in 0..mcu_w {
                        let (bx, by) = (mx * mcu_w + x, my * mcu_h + y);
                        if skipped(bx, by) {
                            continue;
                        }
                        let block = &blocks[by * w + bx];
                        // Entries in any order, as a decoder meets them.
                        let entries: Vec<u32> = (0..64u32)
                            .rev()
                            .filter(|&i| block[i as usize] != 0)
                            .map(|i| i << 16 | u32::from(block[i as usize] as u16))
                            .collect();
                        let wide = block.iter().any(|v| !(-512..=511).contains(v));
                        builder.push(order.position(bx, by), &entries, wide);
                    }
                }
            }
        }
        let plane = builder.finish();
        for by in 0..h {
            for bx in 0..w {
                let expected = if skipped(bx, by) {
                    [0; 64]
                } else {
                    blocks[by * w + bx]
                };
                assert_eq!(expand(&plane, bx, by), expected, "block ({bx}, {by})");
            }
        }
    }

    /// Every JPEG under `dir` (recursively).
    /// Every JPEG under tests/data, in path order.
    pub(crate) fn test_jpegs() -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        jpegs(std::path::Path::new(root), &mut files);
        files.sort();
        files
    }

    fn jpegs(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                jpegs(&path, found);
            } else if std::fs::read(&path).unwrap().starts_with(&[0xFF, 0xD8]) {
                found.push(path);
            }
        }
    }

    /// The compact planes written while decoding hold exactly the dense decoder's coefficients,
    /// on every test file, whole and cut short (decoded with `load_truncated`, so that the
    /// blocks after the cut are never pushed).
    #[test]
    fn decoding_into_compact_planes_gives_the_dense_coefficients() {
        let files = test_jpegs();
        let limits = crate::Limits {
            load_truncated: true,
            ..crate::Limits::default()
        };
        let (mut compact, mut dense_only) = (0, 0);
        for path in &files {
            let whole = std::fs::read(path).unwrap();
            for cut in [whole.len(), whole.len() * 2 / 3, whole.len() / 3] {
                let data = &whole[..cut];
                let name = format!("{} cut at {cut}", path.display());
                let dense = crate::jpeg::decode_coefficients(data, &limits);
                let planes = crate::jpeg::decode_compact(data, &limits);
                let (dense, (image, planes)) = match (dense, planes) {
                    (Ok(d), Ok(c)) => (d, c),
                    (Err(a), Err(b)) => {
                        assert_eq!(a.to_string(), b.to_string(), "{name}");
                        continue;
                    }
                    (a, b) => panic!("{name}: {:?} vs {:?}", a.err(), b.err()),
                };
                let Some(planes) = planes else {
                    for (a, b) in image.components.iter().zip(&dense.components) {
                        assert_eq!(a.blocks, b.blocks, "{name}");
                    }
                    dense_only += 1;
                    continue;
                };
                compact += 1;
                for (ci, (plane, comp)) in planes.iter().zip(&dense.components).enumerate() {
                    assert!(image.components[ci].blocks.is_empty(), "{name}");
                    for by in 0..comp.height_in_blocks {
                        for bx in 0..comp.width_in_blocks {
                            let block = expand(plane, bx, by);
                            assert_eq!(&block, comp.block(bx, by), "{name}: ({ci}, {bx}, {by})");
                        }
                    }
                }
            }
        }
        // Most test files are single-scan sequential; the others come dense.
        assert!(
            compact > 200 && dense_only > 100,
            "{compact} compact, {dense_only} dense"
        );
    }

    /// The AVX-512 entries are the scalar ones, on every narrow block (where the CPU has the
    /// instructions: it says when it has not).
    #[test]
    fn compressed_entries_are_the_scalar_ones() {
        #[cfg(target_arch = "x86_64")]
        {
            if !has_compress() {
                println!("no AVX-512 VBMI2 on this CPU: the compressed entries are NOT tested");
                return;
            }
            let narrow = random_blocks(3000)
                .into_iter()
                .filter(|b| b.iter().all(|v| (-512..=511).contains(v)));
            let mut tested = 0;
            for (case, block) in narrow.enumerate() {
                let (mut scalar, mut compressed) = ([0u16; 128], [0u16; 128]);
                let n = entries_scalar(&block, false, &mut scalar);
                // SAFETY: the CPU has the features it enables (checked above).
                #[allow(
                    unsafe_code,
                    reason = "calling an AVX-512 function; see the SAFETY note"
                )]
                let m = unsafe { narrow_entries_avx512(&block, &mut compressed) };
                assert_eq!(m, n, "case {case}");
                assert_eq!(compressed[..m], scalar[..n], "case {case}");
                tested += 1;
            }
            assert!(tested > 1000, "{tested} narrow blocks");
        }
    }

    #[test]
    fn nonzero_mask_marks_exactly_the_nonzero_coefficients() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for case in 0..10_000 {
            let block: [i16; 64] = std::array::from_fn(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mostly zeros, some extremes.
                match state % 8 {
                    0 => i16::MIN,
                    1 => -1,
                    2 => (state >> 32) as i16,
                    3 => i16::MAX,
                    _ => 0,
                }
            });
            let expected = (0..64).fold(0u64, |m, i| m | u64::from(block[i] != 0) << i);
            assert_eq!(nonzero_mask(&block), expected, "case {case}");
        }
    }
}
