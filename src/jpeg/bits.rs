//! Bit reader over entropy-coded data, straight from the byte slice.
//!
//! Follows libjpeg's `jpeg_fill_bit_buffer` semantics, because corrupt files must decode as Pillow
//! decodes them: `FF 00` is a data byte `FF`, runs of `FF` fill bytes are skipped, and a marker
//! stops the reader. Past a marker (or the end of the file) the reader yields zero bits and
//! records that the decoder asked for more data than there was (`insufficient`).

/// Reads bits MSB-first from one entropy-coded segment.
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte of `data` to load into `buf`.
    pos: usize,
    /// Loaded bits, left-aligned; the bits below `bits` are zero.
    buf: u64,
    /// How many real bits `buf` holds.
    bits: u32,
    /// The marker that stopped the reader, with `pos` just past it (libjpeg's `unread_marker`).
    pub marker: Option<u8>,
    /// The data ended without a marker.
    pub hit_eof: bool,
    /// The decoder consumed bits past the marker or the end of the data.
    pub insufficient: bool,
}

impl<'a> BitReader<'a> {
    /// A reader starting at `pos` of `data`.
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Self {
            data,
            pos,
            buf: 0,
            bits: 0,
            marker: None,
            hit_eof: false,
            insufficient: false,
        }
    }

    /// Byte position just past what was read (past the marker if one stopped the reader).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Loads bytes until at least 57 bits are buffered, or a marker or the end stops it.
    #[inline]
    fn refill(&mut self) {
        if self.marker.is_some() {
            return;
        }
        if let Some(word) = self.data.get(self.pos..self.pos + 8) {
            let word = u64::from_be_bytes(word.try_into().expect("8 bytes"));
            if !has_ff_byte(word) {
                let take = (63 - self.bits) / 8;
                let kept = word & !(u64::MAX >> (8 * take));
                self.buf |= kept >> self.bits;
                self.bits += 8 * take;
                self.pos += take as usize;
                return;
            }
        }
        self.refill_slow();
    }

    fn refill_slow(&mut self) {
        while self.bits <= 56 && self.marker.is_none() && !self.hit_eof {
            let Some(byte) = self.next_data_byte() else {
                return;
            };
            self.buf |= u64::from(byte) << (56 - self.bits);
            self.bits += 8;
        }
    }

    /// The next data byte, un-stuffing `FF 00`; `None` at a marker or the end.
    fn next_data_byte(&mut self) -> Option<u8> {
        let Some(&byte) = self.data.get(self.pos) else {
            self.hit_eof = true;
            return None;
        };
        self.pos += 1;
        if byte != 0xFF {
            return Some(byte);
        }
        // Fill bytes: any run of FF is one FF.
        while self.data.get(self.pos) == Some(&0xFF) {
            self.pos += 1;
        }
        match self.data.get(self.pos) {
            None => {
                self.hit_eof = true;
                None
            }
            Some(0) => {
                self.pos += 1;
                Some(0xFF)
            }
            Some(&code) => {
                self.pos += 1;
                self.marker = Some(code);
                None
            }
        }
    }

    /// Makes at least `n` (≤ 32) bits peekable; past the data they read as zeros.
    #[inline]
    pub fn ensure(&mut self, n: u32) {
        if self.bits < n {
            self.refill();
        }
    }

    /// The next `n` bits (1 ≤ n ≤ 32) without consuming them; call `ensure(n)` first.
    #[inline]
    pub fn peek(&self, n: u32) -> u32 {
        (self.buf >> (64 - n)) as u32
    }

    /// Drops `n` (≤ 32) bits; call `ensure(n)` first.
    #[inline]
    pub fn consume(&mut self, n: u32) {
        if n > self.bits {
            self.insufficient = true;
            self.bits = 0;
            self.buf = 0;
        } else {
            self.buf <<= n;
            self.bits -= n;
        }
    }

    /// Reads `n` (0 ≤ n ≤ 16) bits as an unsigned number.
    #[inline]
    pub fn get_bits(&mut self, n: u32) -> i32 {
        if n == 0 {
            return 0;
        }
        self.ensure(n);
        let value = self.peek(n);
        self.consume(n);
        value as i32
    }

    /// The next `n` (1 ≤ n ≤ 32) bits when they are already loaded: what `n` calls of
    /// [`Self::get_bit`] would read, with no refill between them (a refill may read on to the end
    /// of the data, which decides whether a file counts as truncated); `None` otherwise.
    #[inline]
    pub fn get_loaded_bits(&mut self, n: u32) -> Option<u32> {
        (self.bits >= n).then(|| {
            let value = self.peek(n);
            self.consume(n);
            value
        })
    }

    /// Reads one bit.
    #[inline]
    pub fn get_bit(&mut self) -> bool {
        self.get_bits(1) != 0
    }

    /// Throws away the buffered bits, as libjpeg does at a restart marker.
    pub fn discard_buffered_bits(&mut self) {
        self.buf = 0;
        self.bits = 0;
    }

    /// Finds the next marker from the current byte position, skipping anything that is not one
    /// (libjpeg's `next_marker`). Returns `None` at the end of the data.
    pub fn next_marker(&mut self) -> Option<u8> {
        if let Some(code) = self.marker {
            return Some(code);
        }
        let (code, end) = find_marker(self.data, self.pos)?;
        self.pos = end;
        self.marker = Some(code);
        Some(code)
    }

    /// Forgets the marker that stopped the reader, so that it reads on after it.
    pub fn clear_marker(&mut self) {
        self.marker = None;
    }
}

/// Finds the first marker at or after `pos`: returns its code and the position just past it.
/// Bytes that are not markers (`FF 00` included) are skipped, as libjpeg's `next_marker` does.
pub(crate) fn find_marker(data: &[u8], mut pos: usize) -> Option<(u8, usize)> {
    loop {
        pos += data.get(pos..)?.iter().position(|&b| b == 0xFF)?;
        while data.get(pos) == Some(&0xFF) {
            pos += 1;
        }
        let code = *data.get(pos)?;
        pos += 1;
        if code != 0 {
            return Some((code, pos));
        }
    }
}

/// True when some byte of `word` is `0xFF`.
#[inline]
fn has_ff_byte(word: u64) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let inverted = !word;
    inverted.wrapping_sub(LOW) & !inverted & HIGH != 0
}

/// Random test data, the same on every run.
#[cfg(test)]
pub(crate) mod random {
    /// A xorshift64 generator starting from `state`.
    pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// 1 to `max_len` random bytes of entropy-coded data, a few of them FF (stuffed bytes or
    /// markers).
    pub(crate) fn entropy_bytes(next: &mut impl FnMut() -> u64, max_len: u64) -> Vec<u8> {
        let len = 1 + next() % max_len;
        (0..len)
            .map(|_| match next() % 64 {
                0 => 0xFF,
                _ => next() as u8,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstuffs_ff00_and_stops_at_markers() {
        let data = [0xAB, 0xFF, 0x00, 0x12, 0xFF, 0xFF, 0xD0, 0x34];
        let mut r = BitReader::new(&data, 0);
        assert_eq!(r.get_bits(8), 0xAB);
        assert_eq!(r.get_bits(8), 0xFF);
        assert_eq!(r.get_bits(8), 0x12);
        assert!(!r.insufficient);
        assert_eq!(r.get_bits(8), 0);
        assert!(r.insufficient);
        assert_eq!(r.marker, Some(0xD0));
        assert_eq!(r.position(), 7);
    }

    #[test]
    fn fast_refill_matches_slow_path() {
        let data: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
        let mut r = BitReader::new(&data, 0);
        for (i, &expected) in data.iter().enumerate() {
            assert_eq!(r.get_bits(8), i32::from(expected), "byte {i}");
        }
    }

    #[test]
    fn ff_detection() {
        assert!(has_ff_byte(0x00FF_0000_0000_0000));
        assert!(has_ff_byte(0x0000_0000_0000_00FF));
        assert!(!has_ff_byte(0xFEFE_FEFE_7F80_0001));
    }

    #[test]
    fn find_marker_skips_stuffed_bytes() {
        assert_eq!(
            find_marker(&[1, 0xFF, 0, 2, 0xFF, 0xFF, 0xD9], 0),
            Some((0xD9, 7))
        );
        assert_eq!(find_marker(&[1, 2, 0xFF], 0), None);
    }
}
