//! The plan of one image: every size, offset and table that turns its header and a
//! [`Transform`] into a tensor, computed once, before any pixel stage runs (as libjpeg's
//! `jpeg_calc_output_dimensions` computes its sizes once).
//!
//! Both backends read an [`ImagePlan`]; neither derives geometry of its own. This layer imports
//! no wgpu and nothing from [`crate::reference`] or [`crate::gpu`] (a test in tests/layers.rs
//! holds it to that), so that the CPU reference stays an independent oracle of the GPU's
//! arithmetic rather than a source of its numbers.
//!
//! The plan follows the order in which Pillow and torchvision work on a PIL image:
//!
//! 1. decoding at scale 1/`draft_denominator` (`scaling`: per component, the IDCT size and the
//!    upsampling libjpeg picks);
//! 2. the EXIF orientation, when the transform asks for it;
//! 3. the region `Resize` sees: the whole image, or `RandomResizedCrop`'s box (`augment`: each
//!    sample's random parameters, drawn from `random`'s counter-based streams or given);
//! 4. `Resize` (`resize`: Pillow's tap tables), skipped when the size does not change;
//! 5. `CenterCrop`, the flips, `RandomRotation` (`rotate`: Pillow's fixed-point map) or an
//!    augmentation policy (`auto_augment`: `TrivialAugmentWide`, `RandAugment` or
//!    `AutoAugment`, its draws as such maps and colour operations, with `levels`' tables),
//!    `ColorJitter` and `RandomGrayscale`, and the tensor (`output`: crop offsets, flips, the
//!    maps and colour adjustments in order, shape, element type, value table).
//!
//! A new transform option goes here once (a field of the plan that both backends read), then
//! into each backend's arithmetic: src/reference/ for the CPU, shaders/ and src/gpu/work.rs for
//! the GPU.

pub(crate) mod augment;
pub(crate) mod auto_augment;
pub(crate) mod blur;
pub(crate) mod erasing;
pub(crate) mod hsv;
pub(crate) mod levels;
pub(crate) mod output;
pub(crate) mod padding;
pub(crate) mod perspective;
pub(crate) mod random;
pub(crate) mod resize;
pub(crate) mod rotate;
pub(crate) mod scaling;
pub(crate) mod steps;
pub(crate) mod timm_augment;
mod wire;

use crate::error::{Error, Result};
use crate::jpeg::{CoefficientImage, Limits};
pub use crate::transform::Adjustment;
use crate::Transform;
pub use augment::{AffineParams, CropBox, Params, Sample, Samples};
pub use auto_augment::{Augment, AugmentOp};
pub use blur::{Blur, BoxBlur};
pub use erasing::{Erased, Erasure, Fill, Noise};
pub use output::{Crop, OutputPlan, Step, MAX_REMAPS, MAX_STEPS};
pub use padding::Padding;
pub use resize::{ResizePlan, Taps, PRECISION_BITS};
pub use rotate::Rotation;
pub use scaling::{ComponentScaling, Upsampling, UpsamplingAxis};
pub use timm_augment::AugMix;
pub use wire::{params_from_json, params_json};

/// Everything about one image's way through the pixel stages that does not depend on its
/// pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct ImagePlan {
    /// The DCT scaling of draft decoding: 1, 2, 4 or 8 (1 for non-JPEG images and without
    /// draft).
    pub draft_denominator: usize,
    /// Per JPEG component: its IDCT size, real samples and upsampling (empty for pixels).
    pub components: Vec<ComponentScaling>,
    /// (width, height) as decoded, before orientation.
    pub decoded: (usize, usize),
    /// The EXIF orientation applied (1: as stored).
    pub orientation: u8,
    /// (width, height) after orientation.
    pub oriented: (usize, usize),
    /// The part of the oriented image `Resize` sees: all of it, or `RandomResizedCrop`'s box
    /// (Pillow's `crop`, so the filter never reaches outside it).
    pub region: CropBox,
    /// Pillow's resize from the region to the resize target; `None` when the size stays (then
    /// torchvision returns the image untouched).
    pub resize: Option<ResizePlan>,
    /// (width, height) after the resize.
    pub resized: (usize, usize),
    /// The centre crop, flips, colour adjustments and the tensor.
    pub output: OutputPlan,
    /// The random operations' parameters for this image (all `None` without any).
    pub params: Params,
}

impl ImagePlan {
    /// The plan for a JPEG with this header (its coefficients are not read) as `sample` of
    /// `transform`, refused when what the transform makes of it passes `limits` (see
    /// [`ImagePlan::check`]).
    pub fn for_jpeg(
        image: &CoefficientImage,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Self> {
        transform.validate()?;
        let denominator = draft_denominator(transform, image.width, image.height);
        let components = (0..image.components.len())
            .map(|ci| scaling::component_scaling(image, ci, denominator))
            .collect::<Result<Vec<_>>>()?;
        let decoded = scaling::scaled_size(image, denominator);
        Self::after_decoding(
            denominator,
            components,
            decoded,
            image.orientation,
            transform,
            (sample, limits),
        )?
        .check(limits)
    }

    /// The plan for an image decoded to `width`×`height` RGB pixels (a non-JPEG input, or a
    /// decoded image given to [`crate::reference::apply_transform`]) whose metadata records
    /// `orientation`, as `sample` of `transform`, refused when what the transform makes of it
    /// passes `limits`.
    pub fn for_pixels(
        (width, height): (usize, usize),
        orientation: u8,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Self> {
        transform.validate()?;
        let size = (width, height);
        Self::after_decoding(
            1,
            Vec::new(),
            size,
            orientation,
            transform,
            (sample, limits),
        )?
        .check(limits)
    }

    /// The plan, unless an image it makes (the horizontal pass's output, the resized image or
    /// the output) has more pixels than `limits.max_pixels`: the decompression-bomb limit that
    /// guards the input guards what the transform makes of it too, so that `CenterCrop(999999)`
    /// is refused rather than asking for terabytes.
    pub fn check(self, limits: &Limits) -> Result<Self> {
        let crop = self.output.crop;
        let horizontal = self
            .resize
            .as_ref()
            .filter(|r| r.horizontal.is_some())
            .map_or((0, 0), |r| (self.resized.0, r.rows));
        let padded = padding::padded_size(&self.output.padding, self.resized);
        for (width, height) in [horizontal, self.resized, padded, (crop.width, crop.height)] {
            if width as u64 * height as u64 > limits.max_pixels {
                return Err(Error::OutputTooLarge {
                    width: width as u64,
                    height: height as u64,
                    limit: limits.max_pixels,
                });
            }
        }
        let maps = self.output.rotation.is_some()
            || self
                .output
                .steps
                .iter()
                .any(|s| matches!(s, Step::Remap(_)));
        if maps && crop.width.max(crop.height) > rotate::MAX_ROTATED_SIDE {
            return Err(Error::Options(format!(
                "rotations, shears and translations map images of at most {} pixels a side \
                 (Pillow's fixed-point affine map), not {}x{}",
                rotate::MAX_ROTATED_SIDE,
                crop.width,
                crop.height
            )));
        }
        let every_map = self
            .output
            .rotation
            .iter()
            .chain(self.output.steps.iter().filter_map(|s| match s {
                Step::Remap(map) => Some(map),
                _ => None,
            }));
        let size = (crop.width, crop.height);
        if let Some(map) = every_map.clone().find(|m| !m.walks_in_fixed_point(size)) {
            return Err(Error::Options(format!(
                "a nearest-neighbour affine map {:?} of a {}x{} image puts a corner 32768 pixels \
                 or more away, where Pillow walks it in doubles instead of fixed point (its \
                 `check_fixed` fallback), which gpuprep does not offer; bilinear and bicubic \
                 sampling have no such limit",
                map.matrix, crop.width, crop.height
            )));
        }
        if let Some(map) = every_map.into_iter().find(|m| !m.in_double_range()) {
            let (what, range) = match map.perspective {
                Some(_) => ("a perspective map's coefficients", "2^-500 to 2^30"),
                None => ("an affine map's matrix", "2^-960 to 2^60"),
            };
            return Err(Error::Options(format!(
                "{what} {:?} (then {:?}) has an entry too small or too large for exact {} \
                 sampling (zero or magnitudes {range})",
                map.matrix,
                map.perspective,
                map.filter.name()
            )));
        }
        let mut blend_factors = self.output.steps.iter().filter_map(|s| match s {
            Step::BlendChain(f) | Step::BlendLastChain(f) => Some(*f),
            _ => None,
        });
        if let Some(f) = blend_factors.find(|f| !f.is_finite()) {
            return Err(Error::Options(format!(
                "timm's blended AugMix makes a blend factor of {f} of this image's weights (a \
                 chain's weight divided by the blend the later chains left, which a tiny alpha \
                 can make 0): Pillow's blend of it is undefined"
            )));
        }
        let blurs = self.output.steps.iter().filter_map(|s| match s {
            Step::Blur(blur) => Some(blur.kernel_size),
            _ => None,
        });
        if let Some((kx, ky)) = blurs
            .into_iter()
            .find(|&(kx, ky)| kx / 2 >= crop.width || ky / 2 >= crop.height)
        {
            return Err(Error::Options(format!(
                "GaussianBlur's {kx}x{ky} kernel reflects more of this {}x{} image than it has \
                 (torch's reflect padding refuses a pad as long as the side)",
                crop.width, crop.height
            )));
        }
        let remaps = self
            .output
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Remap(_)));
        if self.output.steps.len() > MAX_STEPS || remaps.count() > MAX_REMAPS {
            return Err(Error::Options(format!(
                "{} steps for one image, more than the {MAX_STEPS} (of them {MAX_REMAPS} maps) a \
                 transform makes",
                self.output.steps.len()
            )));
        }
        // The contrast adjustment's mean is summed in 32 bits on the GPU.
        if !self.output.steps.is_empty() && (crop.width * crop.height) as u64 > MAX_ADJUSTED_PIXELS
        {
            return Err(Error::OutputTooLarge {
                width: crop.width as u64,
                height: crop.height as u64,
                limit: MAX_ADJUSTED_PIXELS,
            });
        }
        Ok(self)
    }

    fn after_decoding(
        draft_denominator: usize,
        components: Vec<ComponentScaling>,
        decoded: (usize, usize),
        stored_orientation: u8,
        transform: &Transform,
        (sample, limits): (&Sample, &Limits),
    ) -> Result<Self> {
        let orientation = if transform.exif_transpose {
            stored_orientation
        } else {
            1
        };
        let oriented = oriented_size(decoded, orientation);
        let params = Params::of(transform, sample, oriented)?;
        // A random resize, drawn, is a fixed one for this image.
        let transform = &transform.resolved(params.resize, oriented);
        let region = params.crop.unwrap_or(CropBox {
            top: 0,
            left: 0,
            height: oriented.1,
            width: oriented.0,
        });
        let seen = (region.width, region.height);
        let resized = match (transform.random_resized_crop, transform.resize) {
            (Some(crop), _) => crop.size,
            (None, Some(resize)) => resize.target(seen.0, seen.1),
            (None, None) => seen,
        };
        if resized.0 == 0 || resized.1 == 0 {
            return Err(Error::Options(format!(
                "the resize makes a {}x{} image of this {}x{} one (its max_size leaves the \
                 shorter side nothing): Pillow refuses an empty size",
                resized.0, resized.1, seen.0, seen.1
            )));
        }
        // The resize's tables are sized by its output: held to the pixel limit before they are
        // made (`check` holds the rest of the plan to it).
        for (width, height) in [resized, (resized.0, seen.1)] {
            if (width as u64).saturating_mul(height as u64) > limits.max_pixels {
                return Err(Error::OutputTooLarge {
                    width: width as u64,
                    height: height as u64,
                    limit: limits.max_pixels,
                });
            }
        }
        if let Some(crop) = transform.random_crop {
            let padded = padding::padded_size(&padding::paddings(transform, resized), resized);
            if crop.size.0 > padded.0 || crop.size.1 > padded.1 {
                return Err(Error::Options(format!(
                    "RandomCrop's {}x{} is larger than this image resized and padded, {}x{} \
                     (torchvision refuses it too; pad_if_needed pads it)",
                    crop.size.0, crop.size.1, padded.0, padded.1
                )));
            }
        }
        let filter = params.interpolation.unwrap_or(transform.filter);
        let resize = (resized != seen).then(|| ResizePlan::new(filter, seen, resized));
        Ok(Self {
            draft_denominator,
            components,
            decoded,
            orientation,
            oriented,
            region,
            resize,
            resized,
            output: OutputPlan::new(resized, transform, &params),
            params,
        })
    }
}

/// The output (width, height) of `transform` for an image of `oriented` size: what
/// `RandomErasing` draws its box on.
pub(crate) fn output_size(transform: &Transform, oriented: (usize, usize)) -> (usize, usize) {
    if let Some(crop) = transform
        .center_crop
        .or(transform.random_crop.map(|c| c.size))
    {
        return crop;
    }
    padded_size(transform, oriented)
}

/// (width, height) of an image of `oriented` size resized and padded: what a crop takes from.
pub(crate) fn padded_size(transform: &Transform, oriented: (usize, usize)) -> (usize, usize) {
    let resized = match (transform.random_resized_crop, transform.resize) {
        (Some(crop), _) => crop.size,
        (None, Some(resize)) => resize.target(oriented.0, oriented.1),
        (None, None) => oriented,
    };
    padding::padded_size(&padding::paddings(transform, resized), resized)
}

/// Most output pixels of an image with colour adjustments: their sum over the image must fit
/// 32 bits (255 · 2²⁴ < 2³²).
pub const MAX_ADJUSTED_PIXELS: u64 = 1 << 24;

/// The DCT scaling draft decoding picks for a `width`×`height` JPEG: 1, 2, 4 or 8, as Pillow's
/// `draft('RGB', target)` does (the largest of 8, 4, 2, 1 not above
/// `min(width // target_w, height // target_h)`). 1 when draft is off or nothing is resized.
pub fn draft_denominator(transform: &Transform, width: usize, height: usize) -> usize {
    let Some(resize) = transform.resize.filter(|_| transform.draft) else {
        return 1;
    };
    let (tw, th) = resize.target(width, height);
    let scale = (width / tw.max(1)).min(height / th.max(1));
    [8, 4, 2].into_iter().find(|&s| scale >= s).unwrap_or(1)
}

/// (width, height) of an image after EXIF `orientation`: 5 to 8 swap them.
pub fn oriented_size((width, height): (usize, usize), orientation: u8) -> (usize, usize) {
    if (5..=8).contains(&orientation) {
        (height, width)
    } else {
        (width, height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::Resize;

    const LIMITS: Limits = Limits {
        max_pixels: 1 << 20,
        max_scans: 1000,
        load_truncated: false,
    };

    /// Outputs, resized images and the horizontal pass's rows count against the pixel limit.
    #[test]
    fn what_the_transform_makes_is_held_to_the_pixel_limit() {
        let sized = |resize, center_crop| Transform {
            resize,
            center_crop,
            ..Transform::default()
        };
        let refused = |t: Transform, size| {
            matches!(
                ImagePlan::for_pixels(size, 1, &t, &Sample::default(), &LIMITS),
                Err(Error::OutputTooLarge { .. })
            )
        };
        assert!(refused(sized(None, Some((999_999, 999_999))), (64, 64)));
        let huge = Resize::Exact {
            width: 100_000,
            height: 100_000,
        };
        assert!(refused(sized(Some(huge), Some((8, 8))), (64, 64)));
        // A tall thin image whose shorter side grows to 512: the longer one is 512 * 4096.
        assert!(refused(
            sized(Some(Resize::ShorterSide(512)), None),
            (1, 4096)
        ));
        // Widening a short image: the horizontal pass makes 2048 x 1024 rows first.
        let wide = Resize::Exact {
            width: 2048,
            height: 8,
        };
        assert!(refused(sized(Some(wide), None), (16, 1024)));
        assert!(!refused(sized(Some(wide), None), (16, 256)));
        assert!(!refused(Transform::imagenet_eval(), (1024, 1024)));
    }

    #[test]
    fn eval_plan_resizes_the_shorter_side_then_crops_the_centre() {
        let plan = ImagePlan::for_pixels(
            (500, 375),
            1,
            &Transform::imagenet_eval(),
            &Sample::default(),
            &LIMITS,
        )
        .unwrap();
        assert_eq!(plan.resized, (341, 256));
        assert_eq!(
            plan.output.crop,
            Crop {
                width: 224,
                height: 224,
                x: 58,
                y: 16
            }
        );
        assert_eq!(plan.output.shape, [3, 224, 224]);
    }

    #[test]
    fn orientation_applies_only_when_asked_and_swaps_sides_before_the_resize() {
        let transform = Transform {
            resize: Some(Resize::ShorterSide(100)),
            ..Transform::default()
        };
        let as_stored =
            ImagePlan::for_pixels((400, 200), 6, &transform, &Sample::default(), &LIMITS).unwrap();
        assert_eq!((as_stored.orientation, as_stored.resized), (1, (200, 100)));
        let upright = ImagePlan::for_pixels(
            (400, 200),
            6,
            &Transform {
                exif_transpose: true,
                ..transform
            },
            &Sample::default(),
            &LIMITS,
        )
        .unwrap();
        assert_eq!(upright.oriented, (200, 400));
        assert_eq!(upright.resized, (100, 200));
    }

    /// `Resize(n, max_size=m)`: the longer side at most `m`, the shorter cut to match, as
    /// torchvision's `_compute_resized_output_size`; a thin image it leaves no shorter side is
    /// refused, as Pillow refuses it.
    #[test]
    fn max_size_caps_the_longer_side() {
        let capped = Resize::ShorterSideAtMost {
            size: 256,
            max_size: 300,
        };
        assert_eq!(capped.target(500, 375), (300, 225)); // 341 > 300: int(300 * 256 / 341)
        assert_eq!(capped.target(375, 500), (225, 300));
        assert_eq!(capped.target(400, 380), (269, 256)); // 269 <= 300: as Resize(256)
        let transform = Transform {
            resize: Some(capped),
            ..Transform::default()
        };
        let plan = ImagePlan::for_pixels((1, 1000), 1, &transform, &Sample::default(), &LIMITS);
        assert!(
            matches!(&plan, Err(Error::Options(why)) if why.contains("0x300")),
            "{plan:?}"
        );
    }

    #[test]
    fn an_unchanged_size_plans_no_resize() {
        let transform = Transform {
            resize: Some(Resize::ShorterSide(256)),
            ..Transform::default()
        };
        let plan =
            |size| ImagePlan::for_pixels(size, 1, &transform, &Sample::default(), &LIMITS).unwrap();
        assert!(plan((256, 300)).resize.is_none());
        assert!(plan((257, 300)).resize.is_some());
    }
}
