//! How each JPEG component is decoded at scale 1/`denominator` (libjpeg's DCT scaling, which
//! Pillow's `draft()` asks for; 1 is the normal decode) and brought to full resolution
//! (libjpeg's `jpeg_core_output_dimensions` and `_jinit_upsampler` choices, PARITY §2a-3).

use crate::error::{Error, Result, Unsupported};
use crate::jpeg::CoefficientImage;

/// How one component is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComponentScaling {
    /// Samples per block side from the IDCT: 8, 4, 2 or 1.
    pub idct_size: usize,
    /// Real samples per row after the IDCT.
    pub downsampled_width: usize,
    /// Real rows after the IDCT.
    pub downsampled_height: usize,
    /// How the samples reach the output size.
    pub upsampling: Upsampling,
}

/// How one component is brought to full resolution (libjpeg's `_jinit_upsampler` choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upsampling {
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

/// One axis of an upsampling filter. Output sample `i` reads source sample `i / repeat`; a fancy
/// axis weighs it 3 to 1 against its nearer neighbour (`i / 2 - 1` for an even `i`, `i / 2 + 1`
/// for an odd one), libjpeg's triangle filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpsamplingAxis {
    /// Output samples per source sample.
    pub repeat: usize,
    /// Whether the triangle filter blends in the neighbour.
    pub fancy: bool,
}

impl Upsampling {
    /// The method as two separable axes, horizontal then vertical: every one of libjpeg's
    /// filters is a weighted sum of at most 2×2 source samples, which is how both backends
    /// compute a sample, one formula for all methods. A repeat is 1, 2, 3 or 4 (a ratio of
    /// sampling factors, which are at most 4), which the shader relies on.
    pub fn axes(self) -> [UpsamplingAxis; 2] {
        let axis = |repeat, fancy| UpsamplingAxis { repeat, fancy };
        match self {
            Self::Full => [axis(1, false), axis(1, false)],
            Self::H2V1Fancy => [axis(2, true), axis(1, false)],
            Self::H1V2Fancy => [axis(1, false), axis(2, true)],
            Self::H2V2Fancy => [axis(2, true), axis(2, true)],
            Self::Box { h, v } => [axis(h, false), axis(v, false)],
        }
    }

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

/// Component `ci` of `image` at scale 1/`denominator`.
pub fn component_scaling(
    image: &CoefficientImage,
    ci: usize,
    denominator: usize,
) -> Result<ComponentScaling> {
    let comp = &image.components[ci];
    let (max_h, max_v) = (image.max_h, image.max_v);
    let min_size = 8 / denominator;
    // Chroma gets a larger IDCT instead of upsampling where the ratios allow.
    let mut idct_size = min_size;
    while idct_size < 8
        && (max_h * min_size).is_multiple_of(comp.h * idct_size * 2)
        && (max_v * min_size).is_multiple_of(comp.v * idct_size * 2)
    {
        idct_size *= 2;
    }
    let downsampled_width = (image.width * comp.h * idct_size).div_ceil(max_h * 8);
    let downsampled_height = (image.height * comp.v * idct_size).div_ceil(max_v * 8);
    let groups_in = (comp.h * idct_size / min_size, comp.v * idct_size / min_size);
    let upsampling =
        Upsampling::choose(groups_in, (max_h, max_v), downsampled_width, min_size > 1)?;
    Ok(ComponentScaling {
        idct_size,
        downsampled_width,
        downsampled_height,
        upsampling,
    })
}

/// Output size at scale 1/`denominator`: `ceil(size / denominator)`.
pub fn scaled_size(image: &CoefficientImage, denominator: usize) -> (usize, usize) {
    (
        image.width.div_ceil(denominator),
        image.height.div_ceil(denominator),
    )
}
