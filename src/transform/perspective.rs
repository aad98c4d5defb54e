//! torchvision's `RandomPerspective` (`crate::plan::Rotation::perspective` makes its map;
//! `crate::plan::augment` draws its corners and solves for its coefficients).

use super::{Filter, InvalidTransform};

/// torchvision `RandomPerspective(distortion_scale, p, interpolation, fill)` of the image after
/// its rotation or augmentation policy, by default before the colour adjustments: in a share `p` of
/// the samples, each corner moved inwards by a random number of pixels, at most `distortion_scale`
/// of half the side, and the image mapped so that the corners land there (`F.perspective` on a
/// PIL image: `Image.transform(size, PERSPECTIVE, coefficients, interpolation,
/// fillcolor=fill)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomPerspective {
    /// How far the corners may move, as a share of half the width and height, in [0, 1].
    pub distortion_scale: f64,
    /// The probability that the image is mapped at all; torchvision's default 0.5.
    pub p: f64,
    /// `Filter::Bilinear` (torchvision's default), `Filter::Nearest` or `Filter::Bicubic`.
    pub interpolation: Filter,
    /// The RGB value of the pixels no source pixel maps to; default black.
    pub fill: [u8; 3],
}

impl RandomPerspective {
    /// `RandomPerspective(distortion_scale, p)`: bilinear, black fill.
    pub fn new(distortion_scale: f64, p: f64) -> Self {
        Self {
            distortion_scale,
            p,
            interpolation: Filter::Bilinear,
            fill: [0; 3],
        }
    }

    /// Checks the arguments as torchvision's constructor and `get_params` need them.
    pub(crate) fn check(&self) -> Result<(), InvalidTransform> {
        if !(0.0..=1.0).contains(&self.distortion_scale) {
            return Err(InvalidTransform(format!(
                "random_perspective's distortion_scale must lie in [0, 1] (transforms.v2's bounds), got {}",
                self.distortion_scale
            )));
        }
        if !(0.0..=1.0).contains(&self.p) {
            return Err(InvalidTransform(format!(
                "random_perspective's probability must lie in [0, 1], got {}",
                self.p
            )));
        }
        Ok(())
    }
}
