//! Huffman tables: DHT contents, the standard tables MJPEG omits, and fast decoding.

use super::bits::BitReader;
use crate::error::{Error, Result};

/// Codes up to this many bits are decoded with one table lookup.
const LOOKUP_BITS: u32 = 9;

/// A Huffman table as a DHT segment defines it.
#[derive(Clone, Debug)]
pub(crate) struct HuffmanSpec {
    /// Number of codes of each length 1..=16.
    pub counts: [u8; 16],
    /// Symbols in code order.
    pub symbols: Vec<u8>,
}

/// A table ready for decoding (libjpeg's `d_derived_tbl`).
pub(crate) struct HuffmanTable {
    /// For each `LOOKUP_BITS`-bit prefix: `length << 8 | symbol`, or 0 when the code is longer.
    lookup: [u16; 1 << LOOKUP_BITS],
    /// For each `LOOKUP_BITS`-bit prefix that holds a whole code of a value and the value's
    /// bits: see [`Fast`]; 0 for the others (longer codes, and AC codes of runs without a
    /// value).
    fast: [u32; 1 << LOOKUP_BITS],
    /// Largest code of each length (index 1..=16), -1 when there is none; index 17 is a sentinel.
    max_code: [i32; 18],
    /// Index of the first symbol of each length minus the first code of that length.
    value_offset: [i32; 18],
    symbols: [u8; 256],
}

impl HuffmanTable {
    /// Builds the decoding table, rejecting what libjpeg rejects (`jpeg_make_d_derived_tbl`).
    pub fn new(spec: &HuffmanSpec, is_dc: bool) -> Result<Self> {
        let bad = || Error::corrupt("bad Huffman table");
        let mut sizes = Vec::with_capacity(256);
        for (len, &count) in (1..=16u8).zip(&spec.counts) {
            sizes.extend(std::iter::repeat_n(len, usize::from(count)));
        }
        if sizes.len() > 256 || sizes.len() > spec.symbols.len() {
            return Err(bad());
        }
        if is_dc && spec.symbols[..sizes.len()].iter().any(|&s| s > 15) {
            return Err(bad());
        }
        let mut table = Self {
            lookup: [0; 1 << LOOKUP_BITS],
            fast: [0; 1 << LOOKUP_BITS],
            max_code: [-1; 18],
            value_offset: [0; 18],
            symbols: [0; 256],
        };
        table.symbols[..sizes.len()].copy_from_slice(&spec.symbols[..sizes.len()]);
        let mut code: i32 = 0;
        let mut index = 0usize;
        for len in 1..=16u32 {
            let count = usize::from(spec.counts[len as usize - 1]);
            if count > 0 {
                table.value_offset[len as usize] = index as i32 - code;
                for _ in 0..count {
                    if code >= 1 << len {
                        return Err(bad());
                    }
                    table.fill_lookup(code as u32, len, table.symbols[index], is_dc);
                    code += 1;
                    index += 1;
                }
                table.max_code[len as usize] = code - 1;
            }
            // No code may be all ones, so the next code must still fit in `len` bits.
            if code >= 1 << len {
                return Err(bad());
            }
            code <<= 1;
        }
        table.max_code[17] = i32::MAX;
        Ok(table)
    }

    fn fill_lookup(&mut self, code: u32, len: u32, symbol: u8, is_dc: bool) {
        if len > LOOKUP_BITS {
            return;
        }
        let shift = LOOKUP_BITS - len;
        let first = (code << shift) as usize;
        let entry = (len as u16) << 8 | u16::from(symbol);
        self.lookup[first..first + (1 << shift)].fill(entry);
        // A DC symbol is a size; an AC one a run and a size, the run alone when the size is 0.
        let (run, size) = match is_dc {
            true => (0, u32::from(symbol)),
            false => (u32::from(symbol >> 4), u32::from(symbol & 15)),
        };
        if (is_dc || size != 0) && len + size <= LOOKUP_BITS {
            for prefix in first..first + (1 << shift) {
                let bits = (prefix as u32 >> (shift - size)) & ((1 << size) - 1);
                let value = extend(bits as i32, size);
                self.fast[prefix] = Fast::entry(len + size, run, value);
            }
        }
    }

    /// Decodes one coefficient whose code and value bits the next `LOOKUP_BITS` bits hold, in
    /// one lookup (libjpeg-turbo's fast AC path); `None`, having read nothing, otherwise.
    #[inline(always)]
    pub fn decode_fast(&self, reader: &mut BitReader) -> Option<Fast> {
        reader.ensure(17);
        let fast = Fast(self.fast[reader.peek(LOOKUP_BITS) as usize]);
        // Past the data the value bits read as zeros, as a separate read would: the refill
        // before the lookup loaded all there was.
        (fast.0 != 0).then(|| {
            reader.consume(fast.0 & 0x1F);
            fast
        })
    }

    /// Decodes one symbol. A code that matches nothing decodes as 0 after 17 bits, as in libjpeg.
    #[inline]
    pub fn decode(&self, reader: &mut BitReader) -> u8 {
        reader.ensure(17);
        let entry = self.lookup[reader.peek(LOOKUP_BITS) as usize];
        if entry != 0 {
            reader.consume(u32::from(entry >> 8));
            return entry as u8;
        }
        self.decode_long(reader)
    }

    /// Decodes a DC difference: the code of its size, then that many bits, extended; in one
    /// lookup where both fit.
    #[inline(always)]
    pub fn decode_dc_difference(&self, reader: &mut BitReader) -> i32 {
        match self.decode_fast(reader) {
            Some(fast) => fast.value(),
            None => {
                let size = u32::from(self.decode(reader));
                extend(reader.get_bits(size), size)
            }
        }
    }

    /// Decodes one symbol and, when its size (low four bits) is not zero, the bit after its
    /// code, in one step where the lookup finds the code: an AC refinement's new coefficient
    /// and its sign.
    #[inline(always)]
    pub fn decode_with_bit(&self, reader: &mut BitReader) -> (u8, bool) {
        reader.ensure(17);
        let peeked = reader.peek(LOOKUP_BITS + 1);
        let entry = self.lookup[(peeked >> 1) as usize];
        if entry != 0 {
            let (len, symbol) = (u32::from(entry >> 8), entry as u8);
            // Past the data both read as zeros, as two reads would: the refill before the
            // lookup loaded all there was.
            reader.consume(len + u32::from(symbol & 15 != 0));
            return (symbol, peeked >> (LOOKUP_BITS - len) & 1 != 0);
        }
        let symbol = self.decode_long(reader);
        (symbol, symbol & 15 != 0 && reader.get_bit())
    }

    #[cold]
    fn decode_long(&self, reader: &mut BitReader) -> u8 {
        let mut len = LOOKUP_BITS + 1;
        let mut code = reader.peek(len) as i32;
        while code > self.max_code[len as usize] {
            len += 1;
            code = reader.peek(len) as i32;
        }
        reader.consume(len);
        if len > 16 {
            return 0;
        }
        self.symbols[((code + self.value_offset[len as usize]) & 0xFF) as usize]
    }
}

/// A coefficient decoded in one lookup: `value << 16 | run << 8 | bits`, with the bits its code
/// and value took (never 0).
#[derive(Clone, Copy)]
pub(crate) struct Fast(u32);

impl Fast {
    fn entry(bits: u32, run: u32, value: i32) -> u32 {
        (value as u32) << 16 | run << 8 | bits
    }

    /// How many zero coefficients come before it (0 for a DC value).
    #[inline(always)]
    pub fn run(self) -> usize {
        (self.0 >> 8 & 15) as usize
    }

    /// Its value (a DC difference, for a DC table).
    #[inline(always)]
    pub fn value(self) -> i32 {
        (self.0 as i32) >> 16
    }
}

/// A [`HuffmanTable`]'s arrays, for the GPU's copy of it.
pub(crate) struct TableParts<'t> {
    pub lookup: &'t [u16; 1 << LOOKUP_BITS],
    pub max_code: &'t [i32; 18],
    pub value_offset: &'t [i32; 18],
    pub symbols: &'t [u8; 256],
}

impl HuffmanTable {
    /// The table's arrays as they are.
    pub fn parts(&self) -> TableParts<'_> {
        TableParts {
            lookup: &self.lookup,
            max_code: &self.max_code,
            value_offset: &self.value_offset,
            symbols: &self.symbols,
        }
    }
}

/// Sign-extends the `size`-bit magnitude category value `bits` (JPEG's EXTEND procedure).
#[inline]
pub(crate) fn extend(bits: i32, size: u32) -> i32 {
    if size == 0 {
        0
    } else if bits < 1 << (size - 1) {
        bits - (1 << size) + 1
    } else {
        bits
    }
}

/// The JPEG standard's example tables (Annex K.3), which libjpeg installs in slots 0 and 1 when a
/// file (typically a Motion-JPEG frame) defines none there.
pub(crate) fn standard_table(is_dc: bool, slot: usize) -> HuffmanSpec {
    let (counts, symbols): ([u8; 16], &[u8]) = match (is_dc, slot) {
        (true, 0) => (
            [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        ),
        (true, _) => (
            [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        ),
        (false, 0) => (
            [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d],
            &AC_LUMINANCE_SYMBOLS,
        ),
        (false, _) => (
            [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77],
            &AC_CHROMINANCE_SYMBOLS,
        ),
    };
    HuffmanSpec {
        counts,
        symbols: symbols.to_vec(),
    }
}

#[rustfmt::skip]
const AC_LUMINANCE_SYMBOLS: [u8; 162] = [
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
    0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
    0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
    0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
    0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
    0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
    0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];

#[rustfmt::skip]
const AC_CHROMINANCE_SYMBOLS: [u8; 162] = [
    0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
    0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
    0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
    0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
    0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
    0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
    0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
    0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
    0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jpeg::bits::random;

    #[test]
    fn standard_tables_are_valid() {
        for is_dc in [true, false] {
            for slot in [0, 1] {
                let spec = standard_table(is_dc, slot);
                let total: usize = spec.counts.iter().map(|&c| usize::from(c)).sum();
                assert_eq!(total, spec.symbols.len());
                HuffmanTable::new(&spec, is_dc).expect("valid table");
            }
        }
    }

    #[test]
    fn all_ones_code_is_rejected() {
        let spec = HuffmanSpec {
            counts: [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            symbols: vec![0, 1],
        };
        assert!(HuffmanTable::new(&spec, true).is_err());
    }

    /// Reads the next value the slow way: the code, then its value bits.
    fn decode_slowly(table: &HuffmanTable, is_dc: bool, reader: &mut BitReader) -> (usize, i32) {
        let symbol = table.decode(reader);
        let (run, size) = match is_dc {
            true => (0, u32::from(symbol)),
            false => (usize::from(symbol >> 4), u32::from(symbol & 15)),
        };
        (run, extend(reader.get_bits(size), size))
    }

    /// The one-lookup path reads what the code and then the value bits read, on every table
    /// kind, over random data with markers and data that runs out; and it takes many of them
    /// (random bits often begin long codes, which it leaves to the slow path).
    #[test]
    fn fast_values_are_the_code_then_the_bits() {
        let mut next = random::xorshift(0x9E37_79B9_7F4A_7C15);
        for (is_dc, slot) in [(true, 0), (true, 1), (false, 0), (false, 1)] {
            let table = HuffmanTable::new(&standard_table(is_dc, slot), is_dc).expect("table");
            let (mut fast_reads, mut reads) = (0, 0);
            for case in 0..500 {
                let data = random::entropy_bytes(&mut next, 200);
                let (mut fast, mut slow) = (BitReader::new(&data, 0), BitReader::new(&data, 0));
                for read in 0..100 {
                    let at = format!("dc {is_dc} slot {slot} case {case} read {read}");
                    reads += 1;
                    match table.decode_fast(&mut fast) {
                        Some(value) => {
                            fast_reads += 1;
                            let expected = decode_slowly(&table, is_dc, &mut slow);
                            assert_eq!((value.run(), value.value()), expected, "{at}");
                        }
                        None => {
                            // Nothing read: the slow path decodes from the same place.
                            let expected = decode_slowly(&table, is_dc, &mut slow);
                            assert_eq!(decode_slowly(&table, is_dc, &mut fast), expected, "{at}");
                        }
                    }
                    assert_eq!(fast.position(), slow.position(), "{at}");
                    assert_eq!(fast.insufficient, slow.insufficient, "{at}");
                    assert_eq!(fast.get_bits(3), slow.get_bits(3), "{at}");
                }
            }
            assert!(
                fast_reads * 10 > reads,
                "{fast_reads} of {reads} reads fast"
            );
        }
    }

    #[test]
    fn extend_matches_the_standard() {
        assert_eq!(extend(0, 1), -1);
        assert_eq!(extend(1, 1), 1);
        assert_eq!(extend(0b011, 3), -4);
        assert_eq!(extend(0b100, 3), 4);
    }
}
