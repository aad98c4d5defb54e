//! `Pad` and `RandomCrop`'s padding of the resized image, as torchvision's `F.pad` does it on a
//! PIL image: each pad a border of the image so far (`ImageOps.expand` with the fill, or
//! `np.pad`'s edge, reflect and symmetric modes), one after another. Every mode maps a position
//! of the padded image to one of the image it pads, or to the fill, an axis at a time, so both
//! backends read the resized image through [`Padding::source`] level by level rather than
//! making the padded image (`np.pad` with a border wider than the image mirrors again, which
//! this reproduces: its result is the periodic extension of the mirrored image).

use crate::transform::{PaddingMode, Transform};

/// One `F.pad`: the border added around an image of `inner` (width, height).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Padding {
    /// Columns added on the left.
    pub left: usize,
    /// Rows added on top.
    pub top: usize,
    /// (width, height) of the image it pads.
    pub inner: (usize, usize),
    /// (width, height) after it.
    pub outer: (usize, usize),
    /// How the border is filled.
    pub mode: PaddingMode,
    /// The RGB value of the border in the constant mode.
    pub fill: [u8; 3],
}

impl Padding {
    /// Where position (`x`, `y`) of the padded image comes from: a position of the image it
    /// pads, or `None` where the constant mode's fill shows.
    pub fn source(&self, x: isize, y: isize) -> Option<(isize, isize)> {
        let (x, y) = (x - self.left as isize, y - self.top as isize);
        let (w, h) = (self.inner.0 as isize, self.inner.1 as isize);
        if (0..w).contains(&x) && (0..h).contains(&y) {
            return Some((x, y));
        }
        if self.mode == PaddingMode::Constant {
            return None;
        }
        Some((mirror(x, w, self.mode), mirror(y, h, self.mode)))
    }
}

/// `np.pad`'s position of index `i` of an axis of `n` samples, outside or in: the edge sample
/// repeated, or the mirrored image's periodic extension (period 2(n - 1) without the edge
/// sample repeated, 2n with it).
pub fn mirror(i: isize, n: isize, mode: PaddingMode) -> isize {
    match mode {
        PaddingMode::Constant | PaddingMode::Edge => i.clamp(0, n - 1),
        // One sample mirrors to itself (numpy pads it as its edge).
        PaddingMode::Reflect if n == 1 => 0,
        PaddingMode::Reflect => {
            let i = i.rem_euclid(2 * (n - 1));
            if i < n {
                i
            } else {
                2 * (n - 1) - i
            }
        }
        PaddingMode::Symmetric => {
            let i = i.rem_euclid(2 * n);
            if i < n {
                i
            } else {
                2 * n - 1 - i
            }
        }
    }
}

/// The pads `transform` makes of a resized image of `size`, in order: `Pad`'s, `RandomCrop`'s
/// `padding`, then what `pad_if_needed` adds on both sides of a side shorter than the crop
/// (torchvision pads the width, then the height: one pad of both, as the two pad different
/// axes), or what timm's `CenterCropOrPad` adds to a side shorter than the centre crop. Pads of
/// nothing are left out.
pub fn paddings(transform: &Transform, size: (usize, usize)) -> Vec<Padding> {
    let mut pads = Vec::new();
    let mut size = size;
    let mut add = |[left, top, right, bottom]: [usize; 4], mode, fill| {
        if left + top + right + bottom == 0 {
            return size;
        }
        let outer = (size.0 + left + right, size.1 + top + bottom);
        pads.push(Padding {
            left,
            top,
            inner: size,
            outer,
            mode,
            fill,
        });
        size = outer;
        size
    };
    if let Some(p) = transform.pad {
        add(p.padding, p.mode, p.fill);
    }
    if let Some(c) = transform.random_crop {
        let (w, h) = add(c.padding, c.mode, c.fill);
        if c.pad_if_needed {
            let dx = c.size.0.saturating_sub(w);
            let dy = c.size.1.saturating_sub(h);
            add([dx, dy, dx, dy], c.mode, c.fill);
        }
    }
    // timm's CenterCropOrPad: a side shorter than the crop padded to it, (crop − side) // 2
    // before; the crop then takes that side whole.
    if let (Some((cw, ch)), Some(fill)) = (transform.center_crop, transform.center_crop_fill) {
        // (A pad of nothing adds no pad: it gives the size so far.)
        let (w, h) = add([0; 4], PaddingMode::Constant, fill);
        let (dx, dy) = (cw.saturating_sub(w), ch.saturating_sub(h));
        add(
            [dx / 2, dy / 2, dx - dx / 2, dy - dy / 2],
            PaddingMode::Constant,
            fill,
        );
    }
    pads
}

/// (width, height) of a resized image of `size` after `paddings`.
pub fn padded_size(paddings: &[Padding], size: (usize, usize)) -> (usize, usize) {
    paddings.last().map_or(size, |p| p.outer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's own output, written out: borders wider than the image mirror again.
    #[test]
    fn mirrors_are_numpys() {
        // np.pad(np.arange(3), (5, 5), mode) for each mode.
        let cases = [
            (PaddingMode::Edge, [0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2]),
            (
                PaddingMode::Reflect,
                [1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1],
            ),
            (
                PaddingMode::Symmetric,
                [1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1],
            ),
        ];
        for (mode, expected) in cases {
            let got: Vec<isize> = (-5..8).map(|i| mirror(i, 3, mode)).collect();
            assert_eq!(got, expected, "{mode:?}");
        }
        // np.pad(np.arange(1), (2, 2), 'reflect'): the one sample everywhere.
        assert!((-2..3).all(|i| mirror(i, 1, PaddingMode::Reflect) == 0));
    }

    #[test]
    fn pads_follow_torchvisions_order() {
        let transform = Transform {
            pad: Some(crate::Pad {
                padding: [1, 2, 3, 4],
                fill: [9; 3],
                mode: PaddingMode::Constant,
            }),
            random_crop: Some(crate::RandomCrop {
                padding: [4; 4],
                pad_if_needed: true,
                mode: PaddingMode::Reflect,
                ..crate::RandomCrop::new((40, 20))
            }),
            ..Transform::default()
        };
        let pads = paddings(&transform, (10, 6));
        let outers: Vec<_> = pads.iter().map(|p| p.outer).collect();
        // 10x6 + Pad = 14x12; + 4 a side = 22x20; the width lacks 18 of 40: 18 more a side.
        assert_eq!(outers, [(14, 12), (22, 20), (58, 20)]);
        assert_eq!((pads[2].left, pads[2].top), (18, 0));
        assert_eq!(padded_size(&pads, (10, 6)), (58, 20));
        // The constant pad's border is its fill; the reflect pads mirror.
        assert_eq!(pads[0].source(0, 0), None);
        assert_eq!(pads[0].source(1, 2), Some((0, 0)));
        assert_eq!(pads[1].source(3, 0), Some((1, 4)));
    }
}
