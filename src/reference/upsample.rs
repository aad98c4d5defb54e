//! Chroma upsampling with libjpeg's "fancy" filters and their box fallbacks (`jdsample.c`,
//! PARITY §2b). One function per output sample, as the shader computes it.

use crate::error::{Error, Result, Unsupported};

/// How one component is brought to full resolution (libjpeg's `_jinit_upsampler` choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Already full size.
    Full,
    /// Triangle filter across columns (4:2:2).
    H2V1Fancy,
    /// Triangle filter across rows (4:4:0).
    H1V2Fancy,
    /// Two-dimensional triangle filter (4:2:0), rounded once.
    H2V2Fancy,
    /// Replication of each sample `h`×`v` times.
    Box {
        /// Horizontal repeat.
        h: usize,
        /// Vertical repeat.
        v: usize,
    },
}

impl Method {
    /// Picks the method for a component whose IDCT output is `h_in`×`v_in` sample groups per
    /// `max_h`×`max_v` output groups (its sampling factors, unless draft scaling enlarged its
    /// IDCT), with `downsampled_width` samples per row. `fancy` is libjpeg's
    /// `do_fancy_upsampling`, which draft 1/8 turns off.
    pub fn choose(
        (h_in, v_in): (usize, usize),
        (max_h, max_v): (usize, usize),
        downsampled_width: usize,
        fancy: bool,
    ) -> Result<Self> {
        let fancy_width = fancy && downsampled_width > 2;
        Ok(match (max_h / h_in, max_v / v_in) {
            _ if max_h % h_in != 0 || max_v % v_in != 0 => {
                return Err(Error::Unsupported(Unsupported::FractionalSampling))
            }
            (1, 1) => Self::Full,
            (2, 1) if fancy_width => Self::H2V1Fancy,
            (1, 2) if fancy => Self::H1V2Fancy,
            (2, 2) if fancy_width => Self::H2V2Fancy,
            (h, v) => Self::Box { h, v },
        })
    }
}

/// A component's decoded samples: `width`×`height` real samples in rows of `stride` bytes.
pub struct Plane<'a> {
    /// Samples, row-major.
    pub samples: &'a [u8],
    /// Bytes per row.
    pub stride: usize,
    /// Real samples per row (the downsampled width); later ones are padding, never read.
    pub width: usize,
    /// Real rows (the downsampled height).
    pub height: usize,
}

impl Plane<'_> {
    /// Sample at (x, y) with both indices clamped to the real samples.
    #[inline]
    fn at(&self, x: isize, y: isize) -> i32 {
        let x = x.clamp(0, self.width as isize - 1) as usize;
        let y = y.clamp(0, self.height as isize - 1) as usize;
        i32::from(self.samples[y * self.stride + x])
    }
}

/// The full-resolution sample at (`x`, `y`).
#[inline]
pub fn upsample_at(plane: &Plane, method: Method, x: usize, y: usize) -> u8 {
    let (i, j) = ((x / 2) as isize, (y / 2) as isize);
    let out = match method {
        Method::Full => plane.at(x as isize, y as isize),
        Method::H2V1Fancy => {
            let y = y as isize;
            if x % 2 == 0 {
                (3 * plane.at(i, y) + plane.at(i - 1, y) + 1) >> 2
            } else {
                (3 * plane.at(i, y) + plane.at(i + 1, y) + 2) >> 2
            }
        }
        Method::H1V2Fancy => {
            let x = x as isize;
            if y % 2 == 0 {
                (3 * plane.at(x, j) + plane.at(x, j - 1) + 1) >> 2
            } else {
                (3 * plane.at(x, j) + plane.at(x, j + 1) + 2) >> 2
            }
        }
        Method::H2V2Fancy => {
            // Column sums over this row and its nearer neighbour row, kept unrounded.
            let near = if y % 2 == 0 { j - 1 } else { j + 1 };
            let column_sum = |i| 3 * plane.at(i, j) + plane.at(i, near);
            if x % 2 == 0 {
                (3 * column_sum(i) + column_sum(i - 1) + 8) >> 4
            } else {
                (3 * column_sum(i) + column_sum(i + 1) + 7) >> 4
            }
        }
        Method::Box { h, v } => plane.at((x / h) as isize, (y / v) as isize),
    };
    out as u8
}

/// Upsamples a whole plane to `width`×`height` samples.
pub fn upsample(plane: &Plane, method: Method, width: usize, height: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(width * height);
    for y in 0..height {
        out.extend((0..width).map(|x| upsample_at(plane, method, x, y)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_follow_libjpeg() {
        let choose = |max, width, fancy| Method::choose((1, 1), max, width, fancy).unwrap();
        assert_eq!(choose((2, 2), 8, true), Method::H2V2Fancy);
        assert_eq!(choose((2, 2), 2, true), Method::Box { h: 2, v: 2 });
        assert_eq!(choose((2, 1), 8, true), Method::H2V1Fancy);
        assert_eq!(choose((1, 2), 1, true), Method::H1V2Fancy);
        assert_eq!(choose((1, 2), 8, false), Method::Box { h: 1, v: 2 });
        assert_eq!(choose((4, 1), 8, true), Method::Box { h: 4, v: 1 });
        assert!(Method::choose((2, 1), (3, 1), 8, true).is_err());
    }

    #[test]
    fn h2v2_rounds_once() {
        let samples = [10u8, 20, 30, 40];
        let plane = Plane {
            samples: &samples,
            stride: 2,
            width: 2,
            height: 2,
        };
        // Output row 3 (odd) pairs chroma row 1 with row 2, clamped to 1: S = [120, 160], and
        // column 1 (odd) gives (3*120 + 160 + 7) >> 4 = 32.
        assert_eq!(upsample_at(&plane, Method::H2V2Fancy, 1, 3), 32);
        // Output row 1 pairs chroma rows 0 and 1: S = [60, 100]; (180 + 100 + 7) >> 4 = 17.
        assert_eq!(upsample_at(&plane, Method::H2V2Fancy, 1, 1), 17);
    }
}
