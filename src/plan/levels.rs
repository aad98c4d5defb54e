//! The value tables of Pillow's `ImageOps` operations that `TrivialAugmentWide` and the
//! single-operation transforms use (`posterize`, `solarize`, `autocontrast`, `equalize`): integer
//! operations but for `autocontrast`'s stretch, which Python computes in double precision. Both
//! backends build the tables from each channel's histogram; the GPU, without doubles, computes
//! the stretch in integers and subtracts the one it is off by where [`autocontrast_fixes`] says.

/// `ImageOps.posterize`'s table entry: the low `8 - bits` bits cleared.
pub fn posterize(v: u8, bits: u8) -> u8 {
    v & (0xFFu32 << (8 - bits.min(8))) as u8
}

/// timm's `solarize_add` table entry (its threshold is always 128): `add` added below 128,
/// clipped at 255.
pub fn solarize_add(v: u8, add: u8) -> u8 {
    if v < 128 {
        v.saturating_add(add)
    } else {
        v
    }
}

/// `ImageOps.solarize`'s table entry: values from `from` on inverted.
pub fn solarize(v: u8, from: u16) -> u8 {
    if u16::from(v) >= from {
        255 - v
    } else {
        v
    }
}

/// `ImageOps.autocontrast(img)`'s table for a channel whose lowest and highest values are `lo`
/// and `hi`: `int(ix * scale + offset)` clipped, with `scale = 255.0 / (hi - lo)` and
/// `offset = -lo * scale` in double precision; the identity where `hi <= lo`.
pub fn autocontrast_table(lo: u8, hi: u8) -> [u8; 256] {
    if hi <= lo {
        return std::array::from_fn(|i| i as u8);
    }
    let scale = 255.0 / f64::from(hi - lo);
    let offset = -f64::from(lo) * scale;
    // `int()` truncates toward zero, as `as` does; the clip follows.
    std::array::from_fn(|ix| ((ix as f64 * scale + offset) as i64).clamp(0, 255) as u8)
}

/// The stretch in integers, as the GPU computes it: `floor(255 (ix - lo) / (hi - lo))`
/// clipped; it exceeds [`autocontrast_table`] by one where the exact quotient is an integer that
/// the double arithmetic lands just below, and nowhere else (a test checks every `lo`, `hi`,
/// `ix`).
pub fn autocontrast_exact(ix: u8, lo: u8, hi: u8) -> u8 {
    if hi <= lo {
        return ix;
    }
    if ix <= lo {
        return 0;
    }
    let quotient = 255 * u32::from(ix - lo) / u32::from(hi - lo);
    quotient.min(255) as u8
}

/// Words of [`autocontrast_fixes`]: 256 bits for every (`lo`, `hi`).
pub const AUTOCONTRAST_FIX_WORDS: usize = 256 * 256 * 8;

/// Bit `ix % 32` of word `(lo · 256 + hi) · 8 + ix / 32` is set where [`autocontrast_exact`]
/// exceeds [`autocontrast_table`] by one (12,094 entries of the 8.4 million).
pub fn autocontrast_fixes() -> Vec<u32> {
    let mut words = vec![0u32; AUTOCONTRAST_FIX_WORDS];
    for lo in 0..=255u8 {
        for hi in (lo..=255).skip(1) {
            let table = autocontrast_table(lo, hi);
            for (ix, &v) in table.iter().enumerate() {
                if autocontrast_exact(ix as u8, lo, hi) != v {
                    words[(usize::from(lo) * 256 + usize::from(hi)) * 8 + ix / 32] |=
                        1 << (ix % 32);
                }
            }
        }
    }
    words
}

/// `ImageOps.equalize(img)`'s table for a channel's histogram: with `step` the count of all
/// values but the highest present one, divided by 255, entry `i` is `(step / 2 + count below i)
/// / step`, clipped to 255 by `Image.point`; the identity where one value or none is present, or
/// the step is 0.
pub fn equalize_table(histogram: &[u32; 256]) -> [u8; 256] {
    let present = histogram.iter().filter(|&&n| n > 0).count();
    let last = histogram
        .iter()
        .rev()
        .find(|&&n| n > 0)
        .copied()
        .unwrap_or(0);
    let total: u64 = histogram.iter().map(|&n| u64::from(n)).sum();
    let step = (total - u64::from(last)) / 255;
    if present <= 1 || step == 0 {
        return std::array::from_fn(|i| i as u8);
    }
    let mut n = step / 2;
    std::array::from_fn(|i| {
        let v = (n / step).min(255) as u8;
        n += u64::from(histogram[i]);
        v
    })
}

/// The lowest and highest value present in a channel's histogram (`autocontrast`'s `lo`, `hi`;
/// (255, 0) where none is).
pub fn extremes(histogram: &[u32; 256]) -> (u8, u8) {
    let lo = histogram.iter().position(|&n| n > 0).unwrap_or(255);
    let hi = histogram.iter().rposition(|&n| n > 0).unwrap_or(0);
    (lo as u8, hi as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integer_stretch_is_off_by_the_fixes_alone() {
        let fixes = autocontrast_fixes();
        let mut fixed = 0;
        for lo in 0..=255u8 {
            for hi in 0..=255u8 {
                let table = autocontrast_table(lo, hi);
                for ix in 0..=255u8 {
                    let word =
                        fixes[(usize::from(lo) * 256 + usize::from(hi)) * 8 + ix as usize / 32];
                    let fix = (word >> (ix % 32)) & 1;
                    fixed += fix;
                    assert_eq!(
                        u32::from(autocontrast_exact(ix, lo, hi)) - fix,
                        u32::from(table[ix as usize]),
                        "lo {lo} hi {hi} ix {ix}"
                    );
                }
            }
        }
        assert_eq!(fixed, 12_094);
    }

    #[test]
    fn tables_follow_imageops() {
        assert_eq!(posterize(0xFF, 2), 0xC0);
        assert_eq!(posterize(0x7F, 8), 0x7F);
        assert_eq!(solarize(10, 11), 10);
        assert_eq!(solarize(11, 11), 244);
        // hi = lo + 1: everything at or above hi white.
        let t = autocontrast_table(10, 11);
        assert_eq!((t[9], t[10], t[11], t[200]), (0, 0, 255, 255));
        let mut h = [0u32; 256];
        h[3] = 1000;
        assert_eq!(equalize_table(&h)[3], 3);
        h[200] = 1000;
        // step = 1000 / 255 = 3; below 3: 1 / 3 = 0; from 4 on: (1 + 1000) / 3 = 333 → 255.
        let t = equalize_table(&h);
        assert_eq!((t[3], t[4], t[200]), (0, 255, 255));
    }
}
