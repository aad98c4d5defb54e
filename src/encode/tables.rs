//! The tables a baseline JPEG is written with, as libjpeg-turbo sets them for `jpeg_set_quality`
//! and `jpeg_set_defaults`: the standard quantisation tables of ITU T.81 Annex K scaled for a
//! quality, and the standard Huffman tables (K.3) with the codes they give.

use crate::jpeg::ZIGZAG_TO_NATURAL;

/// Annex K's luminance quantisation table (K.1), in zigzag order as it is written.
const LUMINANCE: [u16; 64] = [
    16, 11, 12, 14, 12, 10, 16, 14, 13, 14, 18, 17, 16, 19, 24, 40, 26, 24, 22, 22, 24, 49, 35, 37,
    29, 40, 58, 51, 61, 60, 57, 51, 56, 55, 64, 72, 92, 78, 64, 68, 87, 69, 55, 56, 80, 109, 81,
    87, 95, 98, 103, 104, 103, 62, 77, 113, 121, 112, 100, 120, 92, 101, 103, 99,
];

/// Annex K's chrominance quantisation table (K.2), in zigzag order.
const CHROMINANCE: [u16; 64] = [
    17, 18, 18, 24, 21, 24, 47, 26, 26, 47, 99, 66, 56, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
];

/// The percentage the standard tables are scaled by for `quality` (1 to 100), as
/// `jpeg_quality_scaling` computes it.
fn scaling(quality: u8) -> u32 {
    let quality = u32::from(quality.clamp(1, 100));
    if quality < 50 {
        5000 / quality
    } else {
        200 - quality * 2
    }
}

/// Quantisation table `table` (0: luminance, 1: chrominance) for `quality`, in zigzag order, as
/// `jpeg_set_quality(cinfo, quality, TRUE)` makes it: each entry scaled and rounded, at least 1
/// and (baseline) at most 255.
pub fn quantisation(table: usize, quality: u8) -> [u16; 64] {
    let base = if table == 0 { &LUMINANCE } else { &CHROMINANCE };
    let scale = scaling(quality);
    base.map(|q| ((u32::from(q) * scale + 50) / 100).clamp(1, 255) as u16)
}

/// A zigzag-ordered table in natural (row-major) order.
pub fn natural(zigzag: &[u16; 64]) -> [u16; 64] {
    let mut natural = [0; 64];
    for (k, &value) in zigzag.iter().enumerate() {
        natural[ZIGZAG_TO_NATURAL[k]] = value;
    }
    natural
}

/// A Huffman table as it is written: how many codes of each length 1–16, and the symbols in
/// code order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HuffmanSpec {
    pub bits: [u8; 16],
    pub values: Vec<u8>,
}

/// A table's counts of codes of each length and its symbols, as Annex K lists them.
pub struct Standard {
    bits: [u8; 16],
    values: &'static [u8],
}

impl Standard {
    /// The table as it is written.
    pub fn spec(&self) -> HuffmanSpec {
        HuffmanSpec {
            bits: self.bits,
            values: self.values.to_vec(),
        }
    }
}

/// Annex K's DC and AC tables for luminance (index 0) and chrominance (1).
pub const DC: [Standard; 2] = [
    Standard {
        bits: [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
        values: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    },
    Standard {
        bits: [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
        values: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    },
];

/// See [`DC`].
pub const AC: [Standard; 2] = [
    Standard {
        bits: [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 125],
        values: &[
            1, 2, 3, 0, 4, 17, 5, 18, 33, 49, 65, 6, 19, 81, 97, 7, 34, 113, 20, 50, 129, 145, 161,
            8, 35, 66, 177, 193, 21, 82, 209, 240, 36, 51, 98, 114, 130, 9, 10, 22, 23, 24, 25, 26,
            37, 38, 39, 40, 41, 42, 52, 53, 54, 55, 56, 57, 58, 67, 68, 69, 70, 71, 72, 73, 74, 83,
            84, 85, 86, 87, 88, 89, 90, 99, 100, 101, 102, 103, 104, 105, 106, 115, 116, 117, 118,
            119, 120, 121, 122, 131, 132, 133, 134, 135, 136, 137, 138, 146, 147, 148, 149, 150,
            151, 152, 153, 154, 162, 163, 164, 165, 166, 167, 168, 169, 170, 178, 179, 180, 181,
            182, 183, 184, 185, 186, 194, 195, 196, 197, 198, 199, 200, 201, 202, 210, 211, 212,
            213, 214, 215, 216, 217, 218, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 241,
            242, 243, 244, 245, 246, 247, 248, 249, 250,
        ],
    },
    Standard {
        bits: [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 119],
        values: &[
            0, 1, 2, 3, 17, 4, 5, 33, 49, 6, 18, 65, 81, 7, 97, 113, 19, 34, 50, 129, 8, 20, 66,
            145, 161, 177, 193, 9, 35, 51, 82, 240, 21, 98, 114, 209, 10, 22, 36, 52, 225, 37, 241,
            23, 24, 25, 26, 38, 39, 40, 41, 42, 53, 54, 55, 56, 57, 58, 67, 68, 69, 70, 71, 72, 73,
            74, 83, 84, 85, 86, 87, 88, 89, 90, 99, 100, 101, 102, 103, 104, 105, 106, 115, 116,
            117, 118, 119, 120, 121, 122, 130, 131, 132, 133, 134, 135, 136, 137, 138, 146, 147,
            148, 149, 150, 151, 152, 153, 154, 162, 163, 164, 165, 166, 167, 168, 169, 170, 178,
            179, 180, 181, 182, 183, 184, 185, 186, 194, 195, 196, 197, 198, 199, 200, 201, 202,
            210, 211, 212, 213, 214, 215, 216, 217, 218, 226, 227, 228, 229, 230, 231, 232, 233,
            234, 242, 243, 244, 245, 246, 247, 248, 249, 250,
        ],
    },
];

/// The optimal table for symbols counted `frequencies` times (symbol 256 is the reserved
/// one), as libjpeg-turbo's `jpeg_gen_optimal_table` builds it (Annex K.2): Huffman's
/// procedure over the symbols that occur (of the two least frequent, ties going to the later
/// symbol), lengths past 16 bits folded back, the reserved symbol's code taken away from the
/// longest length, the symbols listed by code length, then by value.
pub fn optimal(frequencies: &[u64; 256]) -> HuffmanSpec {
    const MAX_LENGTH: usize = 32;
    // The symbols that occur, and their counts; 256 last, counted once.
    let mut symbols: Vec<usize> = (0..256).filter(|&s| frequencies[s] > 0).collect();
    symbols.push(256);
    let mut counts: Vec<u64> = symbols
        .iter()
        .map(|&s| if s == 256 { 1 } else { frequencies[s] })
        .collect();
    let n = symbols.len();
    let mut length = vec![0usize; n];
    let mut next = vec![usize::MAX; n];
    // A merged count stands above any real one.
    const MERGED: u64 = u64::MAX;
    loop {
        let (mut c1, mut c2) = (usize::MAX, usize::MAX);
        let (mut v1, mut v2) = (MERGED - 1, MERGED - 1);
        for (i, &count) in counts.iter().enumerate() {
            if count <= v2 {
                if count <= v1 {
                    (c2, v2) = (c1, v1);
                    (c1, v1) = (i, count);
                } else {
                    (c2, v2) = (i, count);
                }
            }
        }
        if c2 == usize::MAX {
            break;
        }
        counts[c1] += counts[c2];
        counts[c2] = MERGED;
        // Every symbol of each branch gets one bit longer; c2's branch joins c1's.
        let mut at = c1;
        length[at] += 1;
        while next[at] != usize::MAX {
            at = next[at];
            length[at] += 1;
        }
        next[at] = c2;
        let mut at = c2;
        length[at] += 1;
        while next[at] != usize::MAX {
            at = next[at];
            length[at] += 1;
        }
    }
    let mut bits = [0usize; MAX_LENGTH + 1];
    for &l in &length {
        bits[l.min(MAX_LENGTH)] += 1;
    }
    // Where a symbol must be placed: the symbols of shorter codes come first.
    let mut place = [0usize; MAX_LENGTH + 1];
    let mut before = 0;
    for l in 1..=MAX_LENGTH {
        place[l] = before;
        before += bits[l];
    }
    // Lengths past 16: two symbols of the longest length become one a bit shorter, and a
    // shorter code becomes the prefix of two.
    for l in (17..=MAX_LENGTH).rev() {
        while bits[l] > 0 {
            let mut j = l - 2;
            while bits[j] == 0 {
                j -= 1;
            }
            bits[l] -= 2;
            bits[l - 1] += 1;
            bits[j + 1] += 2;
            bits[j] -= 1;
        }
    }
    let mut longest = 16;
    while bits[longest] == 0 {
        longest -= 1;
    }
    bits[longest] -= 1;
    // The reserved symbol, of the fewest counts, is the last of the longest codes.
    let mut values = vec![0u8; n];
    for i in 0..n - 1 {
        let l = length[i].min(MAX_LENGTH);
        values[place[l]] = symbols[i] as u8;
        place[l] += 1;
    }
    values.truncate(n - 1);
    let mut spec_bits = [0u8; 16];
    for (l, b) in spec_bits.iter_mut().enumerate() {
        *b = bits[l + 1] as u8;
    }
    HuffmanSpec {
        bits: spec_bits,
        values,
    }
}

/// Each symbol's code and its length in bits (length 0: no code).
pub type Codes = [(u16, u8); 256];

/// The codes of `spec`, as `jpeg_make_c_derived_tbl` derives them: codes of each length
/// counted up in symbol order (Annex C).
pub fn codes(spec: &HuffmanSpec) -> Codes {
    let mut codes = [(0, 0); 256];
    let (mut code, mut k) = (0u16, 0);
    for (length, &count) in (1..=16u8).zip(&spec.bits) {
        for _ in 0..count {
            codes[usize::from(spec.values[k])] = (code, length);
            code += 1;
            k += 1;
        }
        code <<= 1;
    }
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quality_scales_the_tables_as_libjpeg_does() {
        assert_eq!(quantisation(0, 50), LUMINANCE);
        assert_eq!(quantisation(0, 100), [1; 64]);
        // Quality 1 scales by 50x, clamped to baseline's 255.
        assert_eq!(quantisation(1, 1), [255; 64]);
        // Quality 75: 16 * 50 / 100 = 8, 11 * 50 / 100 = 5.5, rounded up.
        assert_eq!(quantisation(0, 75)[..2], [8, 6]);
        assert_eq!(natural(&LUMINANCE)[..8], [16, 11, 10, 16, 24, 40, 51, 61]);
    }

    #[test]
    fn optimal_codes_are_at_most_16_bits_and_leave_all_ones_unused() {
        // Fibonacci counts: Huffman's procedure alone gives codes of up to 39 bits.
        let mut frequencies = [0u64; 256];
        let (mut a, mut b) = (1u64, 1u64);
        for f in frequencies.iter_mut().take(40) {
            *f = a;
            (a, b) = (b, a + b);
        }
        let spec = optimal(&frequencies);
        assert_eq!(spec.values.len(), 40);
        assert_eq!(spec.bits.iter().map(|&b| usize::from(b)).sum::<usize>(), 40);
        // Kraft's sum in units of 2^-16: a full code less the one reserved codeword.
        let kraft: u32 = (1..=16u32)
            .zip(&spec.bits)
            .map(|(l, &n)| u32::from(n) << (16 - l))
            .sum();
        let longest = 16 - spec.bits.iter().rev().take_while(|&&b| b == 0).count() as u32;
        assert_eq!(kraft, (1 << 16) - (1 << (16 - longest)));
        // The two most frequent symbols have the shortest codes (2 bits each: the reserved
        // symbol's count shapes the tree), in symbol order.
        assert_eq!((spec.bits[0], spec.bits[1]), (0, 2));
        assert_eq!(spec.values[..2], [38, 39]);
    }

    #[test]
    fn the_standard_codes_are_annex_k_s() {
        let dc = codes(&DC[0].spec());
        assert_eq!(dc[0], (0b00, 2));
        assert_eq!(dc[11], (0b1_1111_1110, 9));
        let ac = codes(&AC[0].spec());
        assert_eq!(ac[0x00], (0b1010, 4)); // EOB
        assert_eq!(ac[0xF0], (0b111_1111_1001, 11)); // ZRL
        assert_eq!(ac[0x01], (0b00, 2));
    }
}
