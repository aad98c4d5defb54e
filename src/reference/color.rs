//! Colour conversion to RGB: libjpeg's YCbCr and YCCK conversion (`jdcolor.c`) and Pillow's
//! CMYK handling (`Unpack.c` "CMYK;I", `Convert.c` `cmyk2rgb`), PARITY §1.3 and §2c.

/// libjpeg's `FIX(x)` with 16 fractional bits.
const FIX_1_40200: i32 = 91881;
const FIX_1_77200: i32 = 116130;
const FIX_0_71414: i32 = 46802;
const FIX_0_34414: i32 = 22554;
const ONE_HALF: i32 = 1 << 15;

#[inline]
fn clamp8(x: i32) -> u8 {
    x.clamp(0, 255) as u8
}

/// YCbCr → RGB. R and B round their own chroma term; G rounds once, on the sum of both.
#[inline]
pub fn ycc_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    let (y, cb, cr) = (i32::from(y), i32::from(cb) - 128, i32::from(cr) - 128);
    let cr_r = (FIX_1_40200 * cr + ONE_HALF) >> 16;
    let cb_b = (FIX_1_77200 * cb + ONE_HALF) >> 16;
    let g_term = (-FIX_0_34414 * cb + ONE_HALF - FIX_0_71414 * cr) >> 16;
    [clamp8(y + cr_r), clamp8(y + g_term), clamp8(y + cb_b)]
}

/// libjpeg's per-chroma-value tables (`build_ycc_rgb_table`): the same terms as
/// [`ycc_to_rgb`] computes, looked up instead (the CPU path).
pub struct YccTables {
    cr_r: [i32; 256],
    cb_b: [i32; 256],
    cb_g: [i32; 256],
    cr_g: [i32; 256],
}

impl YccTables {
    /// The tables, built at compile time.
    pub const BUILT: Self = {
        let mut t = Self {
            cr_r: [0; 256],
            cb_b: [0; 256],
            cb_g: [0; 256],
            cr_g: [0; 256],
        };
        let mut i = 0;
        while i < 256 {
            let x = i as i32 - 128;
            t.cr_r[i] = (FIX_1_40200 * x + ONE_HALF) >> 16;
            t.cb_b[i] = (FIX_1_77200 * x + ONE_HALF) >> 16;
            t.cb_g[i] = -FIX_0_34414 * x + ONE_HALF;
            t.cr_g[i] = -FIX_0_71414 * x;
            i += 1;
        }
        t
    };

    /// [`ycc_to_rgb`] by table.
    #[inline]
    pub fn to_rgb(&self, y: u8, cb: u8, cr: u8) -> [u8; 3] {
        let (y, cb, cr) = (i32::from(y), usize::from(cb), usize::from(cr));
        let g = (self.cb_g[cb] + self.cr_g[cr]) >> 16;
        [
            clamp8(y + self.cr_r[cr]),
            clamp8(y + g),
            clamp8(y + self.cb_b[cb]),
        ]
    }
}

/// Pillow's `MULDIV255(a, b)`: a·b/255 rounded, without a division.
#[inline]
fn muldiv255(a: i32, b: i32) -> i32 {
    let t = a * b + 128;
    ((t >> 8) + t) >> 8
}

/// CMYK as libjpeg outputs it → RGB as Pillow converts it. Pillow reads the bytes as inverted
/// ("CMYK;I"), then applies `cmyk2rgb`; with the inversion folded in, the ink is 255 − byte.
#[inline]
pub fn cmyk_to_rgb(c: u8, m: u8, y: u8, k: u8) -> [u8; 3] {
    let nk = i32::from(k);
    [c, m, y].map(|ink| clamp8(nk - muldiv255(255 - i32::from(ink), nk)))
}

/// YCCK → RGB: libjpeg turns YCC into inverted RGB (C = 255 − R, …), keeping K; then as CMYK.
#[inline]
pub fn ycck_to_rgb(y: u8, cb: u8, cr: u8, k: u8) -> [u8; 3] {
    let [r, g, b] = ycc_to_rgb(y, cb, cr);
    cmyk_to_rgb(255 - r, 255 - g, 255 - b, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_equal_the_formulas() {
        for y in [0u8, 17, 128, 255] {
            for cb in 0..=255u8 {
                for cr in (0..=255u8).step_by(3) {
                    assert_eq!(YccTables::BUILT.to_rgb(y, cb, cr), ycc_to_rgb(y, cb, cr));
                }
            }
        }
    }

    #[test]
    fn grey_stays_grey() {
        assert_eq!(ycc_to_rgb(77, 128, 128), [77, 77, 77]);
    }

    #[test]
    fn g_rounds_once() {
        // cb = cr = 0 (−128): G term = (22554·128 + 32768 + 46802·128) >> 16 = 135.
        assert_eq!(ycc_to_rgb(0, 0, 0), [0, 135, 0]);
    }

    #[test]
    fn cmyk_without_ink_is_white() {
        // libjpeg bytes 255 are "no ink" in Adobe's inverted CMYK.
        assert_eq!(cmyk_to_rgb(255, 255, 255, 255), [255, 255, 255]);
        assert_eq!(cmyk_to_rgb(255, 255, 255, 0), [0, 0, 0]);
    }
}
