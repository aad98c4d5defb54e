//! torchvision's `RandomAffine` (`crate::plan::Rotation` makes its map; `crate::plan::augment`
//! draws its parameters).

use super::{Filter, InvalidTransform};

/// A range (low, high).
pub type Range = (f64, f64);

/// torchvision `RandomAffine(degrees, translate, scale, shear, interpolation, fill, center)` of
/// the cropped, flipped image, by default before the colour adjustments: per sample an angle, a
/// translation, a scale and a shear drawn as its `get_params` draws them, then one affine map about
/// the centre (`F.affine` on a PIL image: `Image.transform` with torchvision's inverse matrix).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomAffine {
    /// The angle's range in degrees, counter-clockwise: torchvision's `(-d, d)` for a number `d`.
    pub degrees: (f64, f64),
    /// The largest shifts as fractions of the width and of the height, each in [0, 1]; none: no
    /// translation.
    pub translate: Option<(f64, f64)>,
    /// The scale's range, positive; none: 1.
    pub scale: Option<(f64, f64)>,
    /// The x shear's range in degrees and, where torchvision is given four values, the y
    /// shear's; none: no shear.
    pub shear: Option<(Range, Option<Range>)>,
    /// `Filter::Nearest` (torchvision's default), `Filter::Bilinear` or `Filter::Bicubic`.
    pub interpolation: Filter,
    /// The RGB value of the pixels no source pixel maps to; default black.
    pub fill: [u8; 3],
    /// The centre (x, y) in pixels from the image's top-left corner; none: the image's centre.
    pub center: Option<(f64, f64)>,
    /// `transforms.v2.RandomAffine`: its inverse matrix in v2's arithmetic, the same operations
    /// in another order, whose doubles can differ from v1's in the last bit (and so, now and
    /// then, a pixel); default false, v1's (`transforms.RandomAffine`).
    pub v2: bool,
    /// The probability that the map applies at all (`RandomApply`'s around it); 1 without one.
    /// Where it does not, the draw is the identity's (angle 0, no shift, scale 1, no shear).
    pub p: f64,
}

impl RandomAffine {
    /// `RandomAffine(degrees)`: an angle in (-`degrees`, `degrees`), nothing else, nearest
    /// neighbour, black fill.
    pub fn new(degrees: f64) -> Self {
        Self {
            degrees: (-degrees, degrees),
            translate: None,
            scale: None,
            shear: None,
            interpolation: Filter::Nearest,
            fill: [0; 3],
            center: None,
            v2: false,
            p: 1.0,
        }
    }

    /// Checks the arguments as torchvision's constructor does (and that every number is finite).
    pub(crate) fn check(&self) -> Result<(), InvalidTransform> {
        let range = |(low, high): (f64, f64)| low.is_finite() && high.is_finite() && low <= high;
        let refused = |what: String| Err(InvalidTransform(format!("random_affine {what}")));
        if !range(self.degrees) {
            return refused(format!(
                "needs finite degrees with low <= high, got {:?}",
                self.degrees
            ));
        }
        if let Some((x, y)) = self
            .translate
            .filter(|&(x, y)| !((0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y)))
        {
            return refused(format!(
                "translations are fractions in [0, 1], got ({x}, {y})"
            ));
        }
        if let Some(s) = self.scale.filter(|&s| !(range(s) && s.0 > 0.0)) {
            return refused(format!(
                "needs a scale range of positive numbers, low <= high, got {s:?}"
            ));
        }
        if let Some((x, y)) = self.shear {
            if !range(x) || y.is_some_and(|y| !range(y)) {
                return refused(format!(
                    "needs finite shear ranges with low <= high, got {:?}",
                    self.shear
                ));
            }
        }
        if let Some(c) = self
            .center
            .filter(|c| !(c.0.is_finite() && c.1.is_finite()))
        {
            return refused(format!("needs a finite centre, got {c:?}"));
        }
        Ok(())
    }
}
