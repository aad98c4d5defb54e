//! The coefficient image: what entropy decoding yields, and what crosses from CPU to GPU.

use super::markers::Frame;
use std::borrow::Cow;
use std::cell::RefCell;

/// How the decoded components map to RGB (libjpeg's `jpeg_color_space` guess, PARITY §1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorSpace {
    /// One component: R = G = B = Y.
    Grayscale,
    /// Three components, converted with the JFIF YCbCr matrix.
    YCbCr,
    /// Three components stored as RGB (Adobe transform 0, or component ids 'R', 'G', 'B').
    Rgb,
    /// Four components of (Adobe-inverted) CMYK.
    Cmyk,
    /// Four components: YCbCr-coded CMY, plus K.
    Ycck,
}

/// One colour component: its geometry, its quantised DCT blocks and its quantisation table.
#[derive(Clone, Debug)]
pub struct Component {
    /// Horizontal sampling factor (1..=4).
    pub h: usize,
    /// Vertical sampling factor (1..=4).
    pub v: usize,
    /// Samples per row of this component: `ceil(width * h / max_h)`.
    pub downsampled_width: usize,
    /// Rows of this component: `ceil(height * v / max_v)`.
    pub downsampled_height: usize,
    /// Blocks per row that hold image data: `ceil(downsampled_width / 8)`.
    pub width_in_blocks: usize,
    /// Block rows that hold image data: `ceil(downsampled_height / 8)`.
    pub height_in_blocks: usize,
    /// Blocks per row in `blocks` (padded to whole MCUs).
    pub blocks_w: usize,
    /// Block rows in `blocks` (padded to whole MCUs).
    pub blocks_h: usize,
    /// Quantisation table in natural order, as latched at the component's first scan.
    pub quant: [u16; 64],
    /// Quantised coefficients, 64 per block in natural (row-major) order, blocks row-major.
    pub blocks: Vec<i16>,
}

impl Component {
    /// The 64 coefficients of block (`bx`, `by`).
    pub fn block(&self, bx: usize, by: usize) -> &[i16; 64] {
        let start = (by * self.blocks_w + bx) * 64;
        self.blocks[start..start + 64].try_into().expect("64")
    }
}

/// A decoded JPEG before the inverse DCT: everything the pixel stages need, and nothing more.
#[derive(Clone, Debug)]
pub struct CoefficientImage {
    /// Image width in pixels.
    pub width: usize,
    /// Image height in pixels.
    pub height: usize,
    /// Largest horizontal sampling factor.
    pub max_h: usize,
    /// Largest vertical sampling factor.
    pub max_v: usize,
    /// How components map to RGB.
    pub color_space: ColorSpace,
    /// Components in frame order.
    pub components: Vec<Component>,
    /// Present when libjpeg would apply block smoothing: a progressive image whose refinement
    /// scans are incomplete.
    pub smoothing: Option<Smoothing>,
    /// The EXIF orientation (1 to 8; 1 when absent or not one of those), which
    /// [`crate::Transform::exif_transpose`] applies as `ImageOps.exif_transpose` does.
    pub orientation: u8,
}

/// What libjpeg's block smoothing (`decompress_smooth_data`) needs beyond the coefficients.
#[derive(Clone, Debug)]
pub struct Smoothing {
    /// Per component, the point transform still missing from the DC and the first 9 AC
    /// coefficients (zigzag order): 0 when exact, -1 when never coded.
    pub current: Vec<[i8; 10]>,
    /// The same before each component's latest scan, used for rows that scan did not reach.
    pub previous: Vec<[i8; 10]>,
    /// The last iMCU row the final scan decoded from real data.
    pub last_good_imcu_row: usize,
}

impl CoefficientImage {
    /// Allocates zeroed coefficient storage for `frame` (the caller checked the size limits);
    /// without `dense`, the components' `blocks` stay empty (their coefficients go elsewhere).
    pub(crate) fn for_frame(frame: &Frame, color_space: ColorSpace, dense: bool) -> Self {
        let width = frame.width as usize;
        let height = frame.height as usize;
        let max_h = usize::from(frame.components.iter().map(|c| c.h).max().unwrap_or(1));
        let max_v = usize::from(frame.components.iter().map(|c| c.v).max().unwrap_or(1));
        let mcus_x = width.div_ceil(8 * max_h);
        let mcus_y = height.div_ceil(8 * max_v);
        let components = frame
            .components
            .iter()
            .map(|c| {
                let (h, v) = (usize::from(c.h), usize::from(c.v));
                let downsampled_width = (width * h).div_ceil(max_h);
                let downsampled_height = (height * v).div_ceil(max_v);
                let (blocks_w, blocks_h) = (mcus_x * h, mcus_y * v);
                Component {
                    h,
                    v,
                    downsampled_width,
                    downsampled_height,
                    width_in_blocks: downsampled_width.div_ceil(8),
                    height_in_blocks: downsampled_height.div_ceil(8),
                    blocks_w,
                    blocks_h,
                    quant: [0; 64],
                    blocks: if dense {
                        zeroed_blocks(blocks_w * blocks_h * 64)
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect();
        Self {
            width,
            height,
            max_h,
            max_v,
            color_space,
            components,
            smoothing: None,
            orientation: 1,
        }
    }

    /// Block (`bx`, `by`) of component `ci` as the IDCT takes it: block-smoothed where
    /// libjpeg smooths (progressive images whose refinement scans are incomplete), else as
    /// decoded. Both backends' IDCTs read their blocks through this.
    pub fn block_for_idct(&self, ci: usize, bx: usize, by: usize) -> Cow<'_, [i16; 64]> {
        match &self.smoothing {
            Some(s) => Cow::Owned(super::smoothing::smoothed_block(self, s, ci, bx, by)),
            None => Cow::Borrowed(self.components[ci].block(bx, by)),
        }
    }

    /// MCUs per row of an interleaved scan.
    pub fn mcus_x(&self) -> usize {
        self.width.div_ceil(8 * self.max_h)
    }

    /// MCU rows of an interleaved scan.
    pub fn mcus_y(&self) -> usize {
        self.height.div_ceil(8 * self.max_v)
    }

    /// Gives the components' coefficient storage back to this thread for the next image it
    /// decodes (see [`zeroed_blocks`]). The thread keeps the largest buffers that stay within
    /// its budget, so that images of mixed sizes leave what the largest needs.
    pub(crate) fn recycle(self) {
        SPARE_BLOCKS.with_borrow_mut(|spare| {
            let given = self.components.into_iter().map(|c| c.blocks);
            spare.extend(given.filter(|b| b.capacity() > 0));
            spare.sort_unstable_by_key(|b| std::cmp::Reverse(b.capacity()));
            let mut kept = 0;
            spare.retain(|b| {
                let keep = kept + b.capacity() <= SPARE_COEFFICIENTS;
                kept += if keep { b.capacity() } else { 0 };
                keep
            });
            spare.truncate(SPARE_BLOCK_BUFFERS);
        });
    }

    /// Bytes of coefficient storage a frame needs, to check limits before allocating.
    pub(crate) fn storage_bytes(frame: &Frame) -> u64 {
        let max_h = u64::from(frame.components.iter().map(|c| c.h).max().unwrap_or(1));
        let max_v = u64::from(frame.components.iter().map(|c| c.v).max().unwrap_or(1));
        let mcus_x = u64::from(frame.width).div_ceil(8 * max_h);
        let mcus_y = u64::from(frame.height).div_ceil(8 * max_v);
        let blocks: u64 = frame
            .components
            .iter()
            .map(|c| mcus_x * u64::from(c.h) * mcus_y * u64::from(c.v))
            .sum();
        blocks * 64 * 2
    }
}

/// How many coefficient buffers a thread keeps for reuse, and how many coefficients they may
/// hold in all (48 MiB: the components of a 16-megapixel 4:2:0 photo). They stay with the
/// thread between calls. A large progressive photo's dense coefficients are tens of megabytes,
/// and fresh ones cost a page fault every 4 KiB: one 4000×3000 photo prepared for the GPU over
/// and over on one core took 81-87 ms with fresh buffers, 60-62 ms with kept ones.
const SPARE_BLOCK_BUFFERS: usize = 8;
const SPARE_COEFFICIENTS: usize = 24 << 20;

thread_local! {
    /// Coefficient buffers of images this thread decoded and is done with.
    static SPARE_BLOCKS: RefCell<Vec<Vec<i16>>> = const { RefCell::new(Vec::new()) };
}

/// `len` zeroed coefficients, in a buffer [`CoefficientImage::recycle`] gave back where one is
/// large enough: a fresh one comes from the allocator as pages the kernel must fault in and
/// zero one by one (see [`SPARE_COEFFICIENTS`]).
fn zeroed_blocks(len: usize) -> Vec<i16> {
    let reused = SPARE_BLOCKS.with_borrow_mut(|spare| {
        // The smallest that fits, so that a large one stays for a large component.
        let (at, _) = (spare.iter().enumerate())
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())?;
        Some(spare.swap_remove(at))
    });
    match reused {
        Some(mut blocks) => {
            blocks.clear();
            blocks.resize(len, 0);
            blocks
        }
        None => vec![0; len],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An image whose components hold `buffers`.
    fn image_of(buffers: Vec<Vec<i16>>) -> CoefficientImage {
        let component = |blocks: Vec<i16>| Component {
            h: 1,
            v: 1,
            downsampled_width: 8,
            downsampled_height: 8,
            width_in_blocks: 1,
            height_in_blocks: 1,
            blocks_w: 1,
            blocks_h: 1,
            quant: [0; 64],
            blocks,
        };
        CoefficientImage {
            width: 8,
            height: 8,
            max_h: 1,
            max_v: 1,
            color_space: ColorSpace::Grayscale,
            components: buffers.into_iter().map(component).collect(),
            smoothing: None,
            orientation: 1,
        }
    }

    /// An image whose components hold `lens` coefficients, all 7.
    fn dirty_image(lens: &[usize]) -> CoefficientImage {
        image_of(lens.iter().map(|&len| vec![7; len]).collect())
    }

    /// A buffer given back comes out again zeroed, at the length asked for, for a component it
    /// fits; one too small for it is not used.
    #[test]
    fn recycled_blocks_come_back_zeroed() {
        let image = dirty_image(&[64 * 10, 64 * 3]);
        let pointers: Vec<*const i16> =
            image.components.iter().map(|c| c.blocks.as_ptr()).collect();
        image.recycle();
        let small = zeroed_blocks(64 * 2);
        assert_eq!(small.as_ptr(), pointers[1], "the smallest buffer that fits");
        assert!(small.len() == 128 && small.iter().all(|&c| c == 0));
        let large = zeroed_blocks(64 * 20);
        assert!(
            !pointers.contains(&large.as_ptr()),
            "neither is large enough"
        );
        assert!(large.len() == 64 * 20 && large.iter().all(|&c| c == 0));
        let reused = zeroed_blocks(64 * 10);
        assert_eq!(reused.as_ptr(), pointers[0]);
        assert!(reused.len() == 640 && reused.iter().all(|&c| c == 0));
    }

    /// The capacities of this thread's spare buffers, largest first.
    fn spare_capacities() -> Vec<usize> {
        SPARE_BLOCKS.with_borrow(|spare| spare.iter().map(Vec::capacity).collect())
    }

    /// A 12-megapixel 4:2:0 photo's three buffers come back for the next one; past the budget,
    /// the largest buffers that fit are the ones kept; one larger than the budget is not kept,
    /// nor more than [`SPARE_BLOCK_BUFFERS`].
    #[test]
    fn the_largest_buffers_are_kept_within_the_budget() {
        let photo = [4000 * 3000, 2000 * 1500, 2000 * 1500];
        let image = dirty_image(&photo);
        let mut pointers: Vec<*const i16> =
            image.components.iter().map(|c| c.blocks.as_ptr()).collect();
        image.recycle();
        let again: Vec<Vec<i16>> = photo.iter().map(|&len| zeroed_blocks(len)).collect();
        assert!(again.iter().all(|blocks| blocks.iter().all(|&c| c == 0)));
        // The two chroma buffers are the same size: either may come back for either.
        let mut reused: Vec<*const i16> = again.iter().map(|b| b.as_ptr()).collect();
        pointers.sort();
        reused.sort();
        assert_eq!(reused, pointers);
        let mut buffers = again;
        buffers.push(vec![0; 4000 * 3000]);
        image_of(buffers).recycle();
        assert_eq!(
            spare_capacities(),
            [4000 * 3000; 2],
            "the two largest fill the budget"
        );
        image_of(vec![vec![0; SPARE_COEFFICIENTS + 1]]).recycle();
        assert_eq!(
            spare_capacities(),
            [4000 * 3000; 2],
            "one past the budget alone"
        );
        let _ = (zeroed_blocks(4000 * 3000), zeroed_blocks(4000 * 3000));
        let near_budget = SPARE_COEFFICIENTS - 10;
        image_of(vec![vec![0; near_budget], vec![0; 20], vec![0; 5]]).recycle();
        assert_eq!(
            spare_capacities(),
            [near_budget, 5],
            "a smaller one after one skipped"
        );
        let _ = (zeroed_blocks(4000 * 3000), zeroed_blocks(4000 * 3000));
        dirty_image(&[64; 10]).recycle();
        assert_eq!(spare_capacities(), [64; SPARE_BLOCK_BUFFERS]);
    }
}
