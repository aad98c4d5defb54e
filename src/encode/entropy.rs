//! Huffman coding of quantised blocks as `jchuff.c` writes a sequential scan: each block's DC
//! as the difference from its component's last, then its AC coefficients in zigzag order as
//! runs of zeros and values (ZRL for sixteen zeros, EOB for the rest), into bytes where every
//! 0xFF is followed by a stuffed 0x00, the last byte padded with one bits.

use super::tables::Codes;
use crate::jpeg::ZIGZAG_TO_NATURAL;

/// Bits gathered into bytes, most significant first, 32 at a time (a word without a 0xFF byte,
/// nearly every one, is written whole).
#[derive(Default)]
pub struct BitWriter {
    pub bytes: Vec<u8>,
    /// Bits not yet written, the last `filled` of them (fewer than 32 between calls).
    buffer: u64,
    filled: u32,
}

impl BitWriter {
    /// The low `length` bits of `bits` (at most 32).
    #[inline(always)]
    pub fn put(&mut self, bits: u32, length: u8) {
        let length = u32::from(length);
        if length == 0 {
            return;
        }
        let mask = u64::MAX >> (64 - length);
        self.buffer = (self.buffer << length) | (u64::from(bits) & mask);
        self.filled += length;
        if self.filled >= 32 {
            self.filled -= 32;
            let word = ((self.buffer >> self.filled) as u32).to_be_bytes();
            if word.contains(&0xFF) {
                word.iter().for_each(|&byte| self.push(byte));
            } else {
                self.bytes.extend_from_slice(&word);
            }
        }
    }

    /// A byte, and a stuffed 0x00 after a 0xFF.
    fn push(&mut self, byte: u8) {
        self.bytes.push(byte);
        if byte == 0xFF {
            self.bytes.push(0);
        }
    }

    /// The bits written, the last byte filled with one bits (`flush_bits`).
    pub fn finish(mut self) -> Vec<u8> {
        let padding = (8 - self.filled % 8) % 8;
        self.buffer = (self.buffer << padding) | ((1 << padding) - 1);
        self.filled += padding;
        while self.filled > 0 {
            self.filled -= 8;
            self.push((self.buffer >> self.filled) as u8);
        }
        self.bytes
    }
}

/// A value's category (its bit length) and the bits written for it: the value itself, or for
/// a negative one its one's complement, in that many bits.
fn category(value: i32) -> (u8, u32) {
    let magnitude = value.unsigned_abs();
    let length = (32 - magnitude.leading_zeros()) as u8;
    let bits = if value < 0 { value - 1 } else { value } as u32;
    (length, bits & ((1u32 << length) - 1))
}

/// Which table codes a symbol.
#[derive(Clone, Copy)]
enum Table {
    Dc,
    Ac,
}

/// What takes a block's symbols: each symbol with its table and the bits that follow it (value,
/// length). A trait rather than a closure, so that `emit` can be inlined where it is called (a
/// call a symbol costs more than the coding).
trait Symbols {
    fn emit(&mut self, table: Table, symbol: usize, bits: u32, length: u8);
}

/// Hands `to` each symbol one block (natural order) is coded with, in order: the DC category
/// of its difference from `last_dc` (which becomes this block's), then each AC run/size, ZRL
/// (0xF0) for 16 zeros and EOB (0x00) past the last coefficient that is not zero.
#[inline(always)]
fn symbols(block: &[i16; 64], last_dc: &mut i32, to: &mut impl Symbols) {
    let value = i32::from(block[0]);
    let (length, bits) = category(value - *last_dc);
    *last_dc = value;
    to.emit(Table::Dc, usize::from(length), bits, length);
    // The AC coefficients that are not zero, one bit each in zigzag order: each symbol's run
    // is the gap to the next bit.
    let zigzag: [i16; 64] = std::array::from_fn(|k| block[ZIGZAG_TO_NATURAL[k]]);
    let mut nonzero = zigzag
        .iter()
        .enumerate()
        .skip(1)
        .fold(0u64, |mask, (k, &c)| mask | (u64::from(c != 0) << k));
    let mut last = 0;
    while nonzero != 0 {
        let k = nonzero.trailing_zeros() as usize;
        nonzero &= nonzero - 1;
        let mut run = k - last - 1;
        while run > 15 {
            to.emit(Table::Ac, 0xF0, 0, 0);
            run -= 16;
        }
        let (length, bits) = category(i32::from(zigzag[k]));
        to.emit(Table::Ac, (run << 4) | usize::from(length), bits, length);
        last = k;
    }
    if last < 63 {
        to.emit(Table::Ac, 0x00, 0, 0);
    }
}

/// The symbols written with a component's DC and AC codes.
struct Coder<'a> {
    out: &'a mut BitWriter,
    dc: &'a Codes,
    ac: &'a Codes,
}

impl Symbols for Coder<'_> {
    #[inline(always)]
    fn emit(&mut self, table: Table, symbol: usize, bits: u32, length: u8) {
        let codes = match table {
            Table::Dc => self.dc,
            Table::Ac => self.ac,
        };
        // A code (16 bits at most) and its value's bits (11 at most) in one.
        let (code, code_length) = codes[symbol];
        self.out
            .put((u32::from(code) << length) | bits, code_length + length);
    }
}

/// The symbols counted per table.
struct Counts<'a> {
    dc: &'a mut [u64; 256],
    ac: &'a mut [u64; 256],
}

impl Symbols for Counts<'_> {
    #[inline(always)]
    fn emit(&mut self, table: Table, symbol: usize, _: u32, _: u8) {
        match table {
            Table::Dc => self.dc[symbol] += 1,
            Table::Ac => self.ac[symbol] += 1,
        }
    }
}

/// Writes one block (natural order) with `dc` and `ac` codes (symbol → code, length), its DC
/// taken as the difference from `last_dc`, which becomes this block's.
pub fn encode_block(
    out: &mut BitWriter,
    block: &[i16; 64],
    last_dc: &mut i32,
    dc: &Codes,
    ac: &Codes,
) {
    symbols(block, last_dc, &mut Coder { out, dc, ac });
}

/// Counts the symbols [`encode_block`] would write for `block` into `dc` and `ac` (for
/// optimal tables), its DC taken as the difference from `last_dc`, which becomes this block's.
pub fn count_block(block: &[i16; 64], last_dc: &mut i32, dc: &mut [u64; 256], ac: &mut [u64; 256]) {
    symbols(block, last_dc, &mut Counts { dc, ac });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_in_their_category() {
        assert_eq!(category(0), (0, 0));
        assert_eq!(category(1), (1, 1));
        assert_eq!(category(-1), (1, 0));
        assert_eq!(category(-3), (2, 0b00));
        assert_eq!(category(5), (3, 0b101));
        assert_eq!(category(-5), (3, 0b010));
    }

    #[test]
    fn ff_is_stuffed_and_the_end_padded_with_ones() {
        let mut out = BitWriter::default();
        out.put(0xFF, 8);
        out.put(0b0, 1);
        assert_eq!(out.finish(), [0xFF, 0x00, 0x7F]);
    }
}
