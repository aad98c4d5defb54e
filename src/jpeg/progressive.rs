//! Progressive Huffman decoding: DC and AC, first and refinement scans (libjpeg's `jdphuff.c`).
//!
//! While a progressive image's scans are decoded, its blocks hold their coefficients in zigzag
//! order, the order in which a band's coefficients follow each other in the data: a refinement
//! scan then finds a block's non-zero coefficients in its band from one bit mask (see
//! [`AcRefine`]) instead of testing them one by one, which was most of the time of decoding a
//! progressive file. [`to_natural_order`] puts them in natural order once the scans are done.

use super::bits::BitReader;
use super::coefficients::Smoothing;
use super::compact::nonzero_mask;
use super::huffman::{extend, HuffmanTable};
use super::markers::{ScanHeader, ZIGZAG_TO_NATURAL};
use super::scan::BlockDecoder;
use crate::error::{Error, Result};

/// Puts `blocks` (64 coefficients each, zigzag order) in natural order.
pub(crate) fn to_natural_order(blocks: &mut [i16]) {
    #[cfg(target_arch = "x86_64")]
    if super::compact::has_avx512bw() {
        // SAFETY: the CPU has the features `to_natural_order_avx512` enables.
        #[allow(
            unsafe_code,
            reason = "calling an AVX-512 function; see the SAFETY note"
        )]
        return unsafe { to_natural_order_avx512(blocks) };
    }
    to_natural_order_scalar(blocks);
}

/// [`to_natural_order`] by its non-zero coefficients.
fn to_natural_order_scalar(blocks: &mut [i16]) {
    for block in blocks.chunks_exact_mut(64) {
        let block: &mut [i16; 64] = block.try_into().expect("64");
        // Zigzag and natural order agree on the first and last coefficients, and most blocks
        // have only a few others.
        let mut others = nonzero_mask(block) & !(1 | 1 << 63);
        if others == 0 {
            continue;
        }
        let zigzag = *block;
        block[1..63].fill(0);
        while others != 0 {
            let k = others.trailing_zeros() as usize;
            block[ZIGZAG_TO_NATURAL[k]] = zigzag[k];
            others &= others - 1;
        }
    }
}

/// Where natural-order coefficient `n` is in zigzag order: the lanes a block's natural order
/// takes from its zigzag order.
const NATURAL_TO_ZIGZAG: [i16; 64] = {
    let mut table = [0i16; 64];
    let mut k = 0;
    while k < 64 {
        table[ZIGZAG_TO_NATURAL[k]] = k as i16;
        k += 1;
    }
    table
};

/// [`to_natural_order`] as one permutation of a block's 64 lanes, two instructions: a
/// progressive image spent a tenth of its decoding moving coefficients one by one.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn to_natural_order_avx512(blocks: &mut [i16]) {
    use std::arch::x86_64::{__m512i, _mm512_permutex2var_epi16};
    let lanes: [__m512i; 2] = bytemuck::cast(NATURAL_TO_ZIGZAG);
    for block in blocks.chunks_exact_mut(64) {
        let block: &mut [i16; 64] = block.try_into().expect("64");
        let [low, high]: [__m512i; 2] = bytemuck::cast(*block);
        let natural = lanes.map(|lanes| _mm512_permutex2var_epi16(low, lanes, high));
        *block = bytemuck::cast(natural);
    }
}

/// Bits `from..=to` (`from` at most 64; an empty mask when `from > to`).
#[inline]
fn band(from: usize, to: usize) -> u64 {
    let up_from = if from >= 64 { 0 } else { !0u64 << from };
    let up_to = if to >= 63 { !0 } else { (1u64 << (to + 1)) - 1 };
    up_from & up_to
}

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
        let diff = self.tables[scan_comp].decode_dc_difference(reader);
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
            if let Some(fast) = self.table.decode_fast(reader) {
                k += fast.run();
                block[k.min(63)] = (fast.value() << self.al) as i16;
                k += 1;
                continue;
            }
            let symbol = self.table.decode(reader);
            let (run, size) = (u32::from(symbol >> 4), u32::from(symbol & 15));
            if size != 0 {
                k += run as usize;
                let value = extend(reader.get_bits(size), size);
                // A run past the band's end lands on the last coefficient, as in libjpeg (whose
                // natural-order table repeats 63 past its end).
                block[k.min(63)] = (value << self.al) as i16;
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
    /// Which of the CPU's bit and vector instructions decoding uses: refinement scans are most
    /// of a progressive file's decoding.
    pub path: RefinePath,
}

/// The instructions [`AcRefine`] decodes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RefinePath {
    /// One coefficient at a time.
    Scalar,
    /// BMI2's bit deposit (`pdep`) places a run of correction bits on their coefficients at
    /// once.
    Bmi2,
    /// Bit deposit, and a block's corrections applied as two masked vector operations at its
    /// end instead of one by one (a loop whose length is as good as random, so mispredicted).
    Avx512,
}

impl RefinePath {
    /// The fastest path this CPU has.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let bmi2 = std::arch::is_x86_feature_detected!("bmi2")
                && std::arch::is_x86_feature_detected!("popcnt");
            if bmi2 && super::compact::has_avx512bw() {
                return Self::Avx512;
            }
            if bmi2 {
                return Self::Bmi2;
            }
        }
        Self::Scalar
    }
}

impl<'t> AcRefine<'t> {
    /// Refinement of band `ss..=se` at bit `al`, with `table`.
    pub fn new(table: &'t HuffmanTable, ss: usize, se: usize, al: u32) -> Self {
        Self {
            table,
            ss,
            se,
            al,
            eob_run: 0,
            path: RefinePath::detect(),
        }
    }

    /// Reads the next correction bit of each coefficient of `known` (bits of coefficients
    /// already non-zero), in order, as libjpeg reads one for each non-zero coefficient it
    /// passes; returns the coefficients whose bit is set. The bits are taken up to 32 at a time
    /// where they are loaded, else one by one.
    #[inline(always)]
    fn correction_bits<const BMI2: bool>(reader: &mut BitReader, mut known: u64) -> u64 {
        let mut set = 0;
        let mut left = known.count_ones();
        while left > 0 {
            let mut n = left.min(32);
            let bits = match reader.get_loaded_bits(n) {
                Some(bits) => bits,
                None => {
                    n = 1;
                    u32::from(reader.get_bit())
                }
            };
            if BMI2 {
                // The first bit read is the lowest coefficient's: reversed, the bits deposit
                // on the `n` lowest known coefficients in order.
                let reversed = u64::from(bits.reverse_bits() >> (32 - n));
                set |= deposit::<BMI2>(reversed, known);
                known = without_lowest::<BMI2>(known, n);
            } else {
                for i in (0..n).rev() {
                    set |= (known & known.wrapping_neg()) * u64::from(bits >> i & 1);
                    known &= known - 1;
                }
            }
            left -= n;
        }
        set
    }

    /// [`BlockDecoder::decode_block`], with BMI2's bit deposit where `BMI2` and AVX-512 where
    /// `AVX512`.
    #[inline(always)]
    fn decode<const BMI2: bool, const AVX512: bool>(
        &mut self,
        reader: &mut BitReader,
        block: &mut [i16; 64],
    ) {
        // The band's coefficients not yet passed, as two masks: those already non-zero, which
        // take a correction bit when passed, and the zero ones, which runs count. Refining
        // keeps a coefficient non-zero, and a new value lands on a passed one.
        let nonzero = nonzero_mask(block);
        let in_band = band(self.ss, self.se);
        let (mut known, mut zeros) = (nonzero & in_band, !nonzero & in_band);
        // Each coefficient takes at most one correction bit a scan, read before any new value
        // of the block: the corrections can wait for the block's end.
        let mut corrections = 0;
        if self.eob_run == 0 {
            while known | zeros != 0 {
                let (symbol, positive) = self.table.decode_with_bit(reader);
                let (run, size) = (u32::from(symbol >> 4), symbol & 15);
                if size == 0 && run != 15 {
                    self.eob_run = (1 << run) + reader.get_bits(run) as u32;
                    break;
                }
                // Pass `run` zero coefficients and the non-zero ones among them, through the
                // zero after them (where a new value goes), or through the band's end when it
                // has no more zeros.
                let after_run = without_lowest::<BMI2>(zeros, run);
                let through = after_run ^ after_run.wrapping_sub(1);
                corrections |= Self::correction_bits::<BMI2>(reader, known & through);
                known &= !through;
                if size != 0 {
                    // The size of a newly non-zero coefficient is always 1; libjpeg only warns.
                    // Past the band's end, the last coefficient (libjpeg's padded table): a
                    // correction still pending there changes nothing, as ±p1 has bit p1.
                    let at = match after_run {
                        0 => (self.se + 1).min(63),
                        _ => after_run.trailing_zeros() as usize,
                    };
                    block[at] = if positive {
                        1 << self.al
                    } else {
                        -1 << self.al
                    };
                }
                zeros = after_run & after_run.wrapping_sub(1);
            }
        }
        if self.eob_run > 0 {
            // Inside an end-of-band run: only correction bits for the non-zero coefficients.
            corrections |= Self::correction_bits::<BMI2>(reader, known);
            self.eob_run -= 1;
        }
        let p1: i16 = 1 << self.al;
        #[cfg(target_arch = "x86_64")]
        if AVX512 {
            // SAFETY: `AVX512` is true only inside `decode_block_avx512`, which runs only where
            // the CPU has AVX-512 BW (`RefinePath::detect`).
            #[allow(unsafe_code, reason = "an AVX-512 function; see the SAFETY note")]
            return unsafe { correct_avx512(block, corrections, p1) };
        }
        correct(block, corrections, p1);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2,popcnt")]
    fn decode_block_bmi2(&mut self, reader: &mut BitReader, block: &mut [i16; 64]) {
        self.decode::<true, false>(reader, block);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2,popcnt,avx512f,avx512bw")]
    fn decode_block_avx512(&mut self, reader: &mut BitReader, block: &mut [i16; 64]) {
        self.decode::<true, true>(reader, block);
    }
}

impl BlockDecoder for AcRefine<'_> {
    fn decode_block(&mut self, reader: &mut BitReader, _: usize, block: &mut [i16; 64]) {
        #[cfg(target_arch = "x86_64")]
        #[allow(
            unsafe_code,
            reason = "calling BMI2 and AVX-512 functions; see the SAFETY notes"
        )]
        match self.path {
            // SAFETY: `RefinePath::detect` chooses this path only where the CPU has BMI2,
            // POPCNT and AVX-512 BW, the features `decode_block_avx512` enables.
            RefinePath::Avx512 => return unsafe { self.decode_block_avx512(reader, block) },
            // SAFETY: only where the CPU has BMI2 and POPCNT, which `decode_block_bmi2` enables.
            RefinePath::Bmi2 => return unsafe { self.decode_block_bmi2(reader, block) },
            RefinePath::Scalar => {}
        }
        self.decode::<false, false>(reader, block);
    }

    fn restart(&mut self) {
        self.eob_run = 0;
    }
}

/// Moves each coefficient of `corrections` that lacks bit `p1` by `p1` away from zero (libjpeg's
/// correction bit): a corrected coefficient is non-zero, so its sign is -1 or 1.
#[inline(always)]
fn correct(block: &mut [i16; 64], mut corrections: u64, p1: i16) {
    while corrections != 0 {
        let coef = &mut block[corrections.trailing_zeros() as usize];
        // Without branches: whether the bit is already there is as good as random.
        let add = i16::from(*coef & p1 == 0);
        let sign = (*coef >> 15) | 1;
        *coef = coef.wrapping_add((p1 * add).wrapping_mul(sign));
        corrections &= corrections - 1;
    }
}

/// [`correct`] as masked vector operations over the block's 64 lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn correct_avx512(block: &mut [i16; 64], corrections: u64, p1: i16) {
    use std::arch::x86_64::{__m512i, _mm512_set1_epi16};
    let [low, high]: [__m512i; 2] = bytemuck::cast(*block);
    let p1 = _mm512_set1_epi16(p1);
    let corrected = [
        correct_lanes(low, corrections as u32, p1),
        correct_lanes(high, (corrections >> 32) as u32, p1),
    ];
    *block = bytemuck::cast(corrected);
}

/// [`correct_avx512`] on 32 lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn correct_lanes(
    lanes: std::arch::x86_64::__m512i,
    corrections: u32,
    p1: std::arch::x86_64::__m512i,
) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::{
        _mm512_mask_add_epi16, _mm512_mask_sub_epi16, _mm512_mask_testn_epi16_mask,
        _mm512_movepi16_mask,
    };
    let lacking = _mm512_mask_testn_epi16_mask(corrections, lanes, p1);
    let negative = _mm512_movepi16_mask(lanes);
    let lanes = _mm512_mask_add_epi16(lanes, lacking & !negative, lanes, p1);
    _mm512_mask_sub_epi16(lanes, lacking & negative, lanes, p1)
}

/// The low bits of `bits` placed, in order, on the set bits of `mask`: BMI2's `pdep` where
/// `BMI2`, else bit by bit.
#[inline(always)]
fn deposit<const BMI2: bool>(bits: u64, mask: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if BMI2 {
        // SAFETY: `BMI2` is true only inside `AcRefine::decode_block_bmi2` and
        // `decode_block_avx512`, which run only where the CPU has BMI2.
        #[allow(unsafe_code, reason = "a BMI2 intrinsic; see the SAFETY note")]
        return unsafe { std::arch::x86_64::_pdep_u64(bits, mask) };
    }
    let (mut out, mut mask, mut bits) = (0, mask, bits);
    while mask != 0 && bits != 0 {
        out |= (bits & 1) * (mask & mask.wrapping_neg());
        bits >>= 1;
        mask &= mask - 1;
    }
    out
}

/// `mask` without its `n` lowest set bits.
#[inline(always)]
fn without_lowest<const BMI2: bool>(mut mask: u64, n: u32) -> u64 {
    if BMI2 {
        return deposit::<BMI2>(!0 << n, mask);
    }
    for _ in 0..n {
        mask &= mask.wrapping_sub(1);
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jpeg::bits::random;
    use crate::jpeg::huffman::standard_table;

    /// libjpeg's `decode_mcu_AC_refine` as written, one coefficient at a time over a block in
    /// natural order: what [`AcRefine`] must equal.
    struct Libjpeg<'t> {
        table: &'t HuffmanTable,
        ss: usize,
        se: usize,
        al: u32,
        eob_run: u32,
    }

    impl Libjpeg<'_> {
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

        fn decode_block(&mut self, reader: &mut BitReader, block: &mut [i16; 64]) {
            let mut k = self.ss;
            if self.eob_run == 0 {
                while k <= self.se {
                    let symbol = self.table.decode(reader);
                    let (mut run, size) = (i32::from(symbol >> 4), symbol & 15);
                    let mut new_value = 0i16;
                    if size != 0 {
                        new_value = if reader.get_bit() {
                            1 << self.al
                        } else {
                            -1 << self.al
                        };
                    } else if run != 15 {
                        self.eob_run = (1 << run) + reader.get_bits(run as u32) as u32;
                        break;
                    }
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
    }

    fn natural(zigzag: &[i16; 64]) -> [i16; 64] {
        let mut block = *zigzag;
        to_natural_order(&mut block);
        block
    }

    /// Both ways of reordering (the AVX-512 one where the CPU has it, and the scalar one)
    /// against the definition, on blocks sparse and dense.
    #[test]
    fn natural_order_is_the_zigzag_tables() {
        let mut state = 0x853C_49E6_748F_EA9Bu64;
        let blocks: Vec<i16> = (0..64 * 300)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let keep = (i / 64) % 4 == 0 || state.is_multiple_of(7);
                if keep {
                    (state >> 20) as i16
                } else {
                    0
                }
            })
            .collect();
        let mut expected = vec![0i16; blocks.len()];
        for (zigzag, natural) in blocks.chunks_exact(64).zip(expected.chunks_exact_mut(64)) {
            for k in 0..64 {
                natural[ZIGZAG_TO_NATURAL[k]] = zigzag[k];
            }
        }
        let (mut dispatched, mut scalar) = (blocks.clone(), blocks);
        to_natural_order(&mut dispatched);
        to_natural_order_scalar(&mut scalar);
        assert!(dispatched == expected);
        assert!(scalar == expected);
    }

    #[test]
    fn refinement_equals_libjpegs_loop_on_random_data() {
        refinement_equals_libjpegs_loop(RefinePath::Scalar);
    }

    /// The BMI2 path, on the CPUs that have it (every x86-64 CPU since 2013).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn refinement_with_bit_deposit_equals_libjpegs_loop_on_random_data() {
        assert_ne!(
            RefinePath::detect(),
            RefinePath::Scalar,
            "this CPU lacks BMI2"
        );
        refinement_equals_libjpegs_loop(RefinePath::Bmi2);
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (bits, mask) = (state >> 17, state.rotate_left(29) & state);
            assert_eq!(deposit::<false>(bits, mask), deposit::<true>(bits, mask));
        }
    }

    /// The AVX-512 path, on the CPUs that have it (Intel's servers since 2017, AMD's since
    /// 2022): the path the GPU machine's and CI's CPUs take.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn refinement_with_vector_corrections_equals_libjpegs_loop_on_random_data() {
        assert_eq!(
            RefinePath::detect(),
            RefinePath::Avx512,
            "this CPU lacks AVX-512 BW"
        );
        refinement_equals_libjpegs_loop(RefinePath::Avx512);
    }

    /// [`AcRefine`] on `path` against libjpeg's loop on random data and blocks.
    fn refinement_equals_libjpegs_loop(path: RefinePath) {
        let table = HuffmanTable::new(&standard_table(false, 0), false).expect("table");
        let mut next = random::xorshift(0x9E37_79B9_7F4A_7C15);
        for case in 0..2000 {
            let ss = 1 + (next() % 63) as usize;
            let se = ss + (next() % (64 - ss as u64)) as usize;
            let al = (next() % 4) as u32;
            // Some cases short of data.
            let data = random::entropy_bytes(&mut next, 300);
            // A quarter of the cases with nearly every coefficient known, where runs pass the
            // band's end.
            let sparse = case % 4 != 0;
            let mut zigzag = [0i16; 64];
            for coef in zigzag.iter_mut() {
                if (sparse && next().is_multiple_of(3)) || (!sparse && !next().is_multiple_of(8)) {
                    // Now and then with the bit being refined already set (a corrupt file's).
                    let refined = i16::from(next().is_multiple_of(8)) << al;
                    let magnitude = ((next() % 40) as i16 + 1) << (al + 1) | refined;
                    *coef = if next().is_multiple_of(2) {
                        magnitude
                    } else {
                        -magnitude
                    };
                }
            }
            let mut reference = natural(&zigzag);
            let (mut ours, mut theirs) = (
                AcRefine {
                    path,
                    ..AcRefine::new(&table, ss, se, al)
                },
                Libjpeg {
                    table: &table,
                    ss,
                    se,
                    al,
                    eob_run: 0,
                },
            );
            let (mut ours_reader, mut their_reader) =
                (BitReader::new(&data, 0), BitReader::new(&data, 0));
            for block in 0..40 {
                ours.decode_block(&mut ours_reader, 0, &mut zigzag);
                theirs.decode_block(&mut their_reader, &mut reference);
                let at = format!("case {case}, block {block} (Ss={ss} Se={se} Al={al})");
                assert_eq!(natural(&zigzag), reference, "{at}");
                assert_eq!(ours.eob_run, theirs.eob_run, "{at}");
                assert_eq!(ours_reader.position(), their_reader.position(), "{at}");
                assert_eq!(ours_reader.insufficient, their_reader.insufficient, "{at}");
                assert_eq!(ours_reader.get_bits(7), their_reader.get_bits(7), "{at}");
            }
        }
    }
}
