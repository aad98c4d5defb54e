//! One sample's random parameters: drawn with torchvision's distributions from the
//! counter-based streams of [`super::random`], or given by the caller (for instance drawn with
//! torchvision's own `get_params` and the torch generator).

use super::random::{area_and_aspect, Op, SampleKey, Stream};
use crate::error::{Error, Result};
use crate::transform::Filter;
use crate::transform::{
    Adjustment, ColorJitter, RandomAffine, RandomResizedCrop, Transform, MAX_AUGMENT_OPS, MAX_SIDE,
};
use std::collections::BTreeMap;

/// Where one image's random parameters come from.
#[allow(
    clippy::large_enum_variant,
    reason = "one is made per image, beside its decoded pixels: the given parameters' size is \
              nothing beside those, and a box would only cost callers an allocation"
)]
#[derive(Clone, Debug, PartialEq)]
pub enum Sample {
    /// Drawn for this sample index, with the transform's seed and epoch.
    Index(u64),
    /// Drawn for this sample index in this epoch, with the transform's seed: a loader's stream
    /// that runs on from one epoch into the next makes images of both.
    InEpoch {
        /// The epoch the sample is drawn for.
        epoch: u64,
        /// The sample index.
        index: u64,
    },
    /// Given: every random operation of the transform must have its parameter.
    Given(Params),
}

impl Default for Sample {
    fn default() -> Self {
        Self::Index(0)
    }
}

/// Which sample each image of a call is.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Samples<'a> {
    /// Image `i` of the call is sample `i`.
    #[default]
    Positions,
    /// Image `i` is sample `indices[i]` (a loader's dataset indices).
    Indices(&'a [u64]),
    /// Image `i` has the parameters `given[i]`.
    Given(&'a [Params]),
}

impl Samples<'_> {
    /// Image `i`'s sample (sample `i` past the end of a list).
    pub fn of(&self, i: usize) -> Sample {
        match self {
            Self::Positions => Sample::Index(i as u64),
            Self::Indices(indices) => Sample::Index(indices.get(i).copied().unwrap_or(i as u64)),
            Self::Given(given) => given
                .get(i)
                .map_or(Sample::Index(i as u64), |p| Sample::Given(p.clone())),
        }
    }
}

/// A box of the oriented image, as torchvision's `get_params` returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CropBox {
    /// First row.
    pub top: usize,
    /// First column.
    pub left: usize,
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
}

/// The parameters of every random operation of a transform for one sample; `None` for the
/// operations it does not have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    /// `RandomResize`'s shorter side, or the size `RandomShortestSize` drew.
    pub resize: Option<usize>,
    /// `RandomResizedCrop`'s box.
    pub crop: Option<CropBox>,
    /// `RandomResizedCrop`'s filter, when it draws one.
    pub interpolation: Option<Filter>,
    /// `RandomCrop`'s box of the resized, padded image.
    pub random_crop: Option<CropBox>,
    /// Whether `RandomHorizontalFlip` flips.
    pub horizontal_flip: Option<bool>,
    /// Whether `RandomVerticalFlip` flips.
    pub vertical_flip: Option<bool>,
    /// `ColorJitter`'s adjustments, in the order they run.
    pub color: Option<Vec<Adjustment>>,
    /// Whether `RandomGrayscale` turns the image grey.
    pub grayscale: Option<bool>,
    /// `RandomRotation`'s angle in degrees (a float32 value, as torch draws it).
    pub rotation: Option<f64>,
    /// `RandomAffine`'s draw.
    pub affine: Option<AffineParams>,
    /// The augmentation policy's operations (`TrivialAugmentWide`'s one, `RandAugment`'s
    /// `num_ops`, the `AutoAugment` sub-policy's that apply), in the order they run.
    pub augment: Option<Vec<super::Augment>>,
    /// timm's `AugMix`'s weights, blend factor and chains.
    pub aug_mix: Option<super::AugMix>,
    /// `RandomPerspective`'s eight coefficients, as `Image.transform` takes them (`Some(None)`:
    /// the transform has it, and it did not apply).
    pub perspective: Option<Option<[f64; 8]>>,
    /// Whether each single-operation transform applies, by its method's name.
    pub color_ops: Option<BTreeMap<&'static str, bool>>,
    /// `GaussianBlur`'s kernels (`Some(None)`: the transform has it inside `RandomApply`, and
    /// it did not apply).
    pub blur: Option<Option<super::Blur>>,
    /// `RandomErasing`'s boxes of the output, in the order they are written (`Some` of none:
    /// the transform has it, and it did not erase).
    pub erase: Option<Vec<super::Erasure>>,
    /// The steps that keep the image's size as this sample runs them, where the transform's
    /// order has a `RandomOrder` or `RandomChoice`: a step it did not choose is left out, and
    /// has no parameters here.
    pub steps: Option<Vec<&'static str>>,
}

impl Params {
    /// The parameters of `transform`'s random operations for `sample`, on an image of
    /// (`width`, `height`) as oriented. Given parameters are checked against the transform and
    /// the image: those that do not fit are `Error::Options`.
    pub fn of(transform: &Transform, sample: &Sample, size: (usize, usize)) -> Result<Self> {
        let (epoch, index) = match sample {
            Sample::Index(index) => (transform.epoch, *index),
            Sample::InEpoch { epoch, index } => (*epoch, *index),
            Sample::Given(params) => return params.check(transform, size).map(|()| params.clone()),
        };
        let seed = transform.seed;
        Ok(Self::draw(
            transform,
            SampleKey { seed, epoch, index },
            size,
        ))
    }

    /// Draws the parameters for `key`, each operation from its own stream. `RandomErasing`'s
    /// box is drawn on the output's size, which the crop or resize fixes.
    pub(crate) fn draw(transform: &Transform, key: SampleKey, size: (usize, usize)) -> Self {
        let coin = |p: Option<f64>, op| p.map(|p| Stream::new(key, op).uniform() < p);
        // The resize's size first: the crops, boxes and maps after it are drawn on what it makes.
        let resize = draw_resize(transform, &mut Stream::new(key, Op::RandomResize));
        let transform = &transform.resolved(resize, size);
        // Then the steps it runs: one that a RandomChoice did not choose draws nothing.
        let steps = transform
            .order
            .is_random()
            .then(|| super::steps::drawn(&transform.order, &mut Stream::new(key, Op::Steps)));
        let transform = &steps.as_ref().map_or(*transform, |s| transform.running(s));
        Self {
            steps,
            resize,
            crop: transform
                .random_resized_crop
                .map(|c| crop_box(&c, size, &mut Stream::new(key, Op::Crop))),
            interpolation: transform
                .random_resized_crop
                .and_then(|c| c.filters)
                .map(|f| f[Stream::new(key, Op::Interpolation).below(2) as usize]),
            random_crop: transform.random_crop.map(|c| {
                let padded = super::padded_size(transform, size);
                random_crop_box(c.size, padded, &mut Stream::new(key, Op::RandomCrop))
            }),
            horizontal_flip: coin(transform.horizontal_flip, Op::HorizontalFlip),
            vertical_flip: coin(transform.vertical_flip, Op::VerticalFlip),
            // RandomApply's coin first; a jitter that does not apply adjusts nothing.
            color: transform.color_jitter.map(|j| {
                if j.p < 1.0 && Stream::new(key, Op::ColorJitterApply).uniform() >= j.p {
                    return Vec::new();
                }
                adjustments(&j, &mut Stream::new(key, Op::ColorJitter))
            }),
            grayscale: coin(transform.grayscale, Op::Grayscale),
            // RandomApply's coin first; a map that does not apply draws the identity.
            affine: transform.random_affine.map(|a| {
                if a.p < 1.0 && Stream::new(key, Op::AffineApply).uniform() >= a.p {
                    return AffineParams::IDENTITY;
                }
                let output = super::output_size(transform, size);
                affine_params(&a, output, &mut Stream::new(key, Op::Affine))
            }),
            rotation: transform.random_rotation.map(|r| {
                if r.p < 1.0 && Stream::new(key, Op::RotationApply).uniform() >= r.p {
                    return 0.0;
                }
                let (low, high) = (r.degrees.0 as f32, r.degrees.1 as f32);
                f64::from(Stream::new(key, Op::Rotation).uniform_f32(low, high))
            }),
            augment: draw_augment(transform, super::output_size(transform, size), key),
            aug_mix: transform.timm_aug_mix.map(|m| {
                let output = super::output_size(transform, size);
                let s = &mut Stream::new(key, Op::TimmAugMix);
                super::timm_augment::draw_aug_mix(&m, output, s)
            }),
            perspective: transform.random_perspective.map(|p| {
                if Stream::new(key, Op::PerspectiveApply).uniform() >= p.p {
                    return None;
                }
                let output = super::output_size(transform, size);
                let s = &mut Stream::new(key, Op::Perspective);
                super::perspective::drawn(p.distortion_scale, output, s)
            }),
            color_ops: (!transform.color_ops.is_empty()).then(|| {
                let operations = transform.color_ops.iter().map(|o| (o.operation(), o.p()));
                operations
                    .map(|(o, p)| (o.method, Stream::numbered(key, o.stream).uniform() < p))
                    .collect()
            }),
            blur: transform.gaussian_blur.map(|b| {
                if b.p < 1.0 && Stream::new(key, Op::GaussianBlurApply).uniform() >= b.p {
                    return None;
                }
                let (low, high) = (b.sigma.0 as f32, b.sigma.1 as f32);
                let sigma = Stream::new(key, Op::GaussianBlur).uniform_f32(low, high);
                Some(super::Blur::drawn(b.kernel_size, sigma, b.v2))
            }),
            erase: transform.random_erasing.map(|e| {
                let output = super::output_size(transform, size);
                super::erasing::erase_boxes(&e, output, &mut Stream::new(key, Op::Erase))
            }),
        }
    }

    /// Checks given parameters: one for each random operation of `transform` and none for
    /// another, a crop box inside the image, factors as `ColorJitter` allows.
    fn check(&self, transform: &Transform, (width, height): (usize, usize)) -> Result<()> {
        let random_resize =
            transform.random_resize.is_some() || transform.random_shortest_size.is_some();
        if random_resize != self.resize.is_some() {
            let why = if self.resize.is_some() {
                "have `resize`, which the transform does not draw"
            } else {
                "lack `resize`, which the transform draws"
            };
            return Err(Error::Options(format!("the given parameters {why}")));
        }
        if let Some(size) = self.resize {
            let draws = transform.random_resize.map(|r| r.draws(size));
            if !draws
                .or(transform.random_shortest_size.map(|s| s.draws(size)))
                .unwrap_or(true)
            {
                return Err(Error::Options(format!(
                    "the given resize {size} is not a size the transform draws"
                )));
            }
        }
        let transform = &transform.resolved(self.resize, (width, height));
        let transform = &super::steps::check(transform, self.steps.as_deref())?;
        let pairs = [
            (
                "crop",
                transform.random_resized_crop.is_some(),
                self.crop.is_some(),
            ),
            (
                "random_crop",
                transform.random_crop.is_some(),
                self.random_crop.is_some(),
            ),
            (
                "horizontal_flip",
                transform.horizontal_flip.is_some(),
                self.horizontal_flip.is_some(),
            ),
            (
                "vertical_flip",
                transform.vertical_flip.is_some(),
                self.vertical_flip.is_some(),
            ),
            (
                "color",
                transform.color_jitter.is_some(),
                self.color.is_some(),
            ),
            (
                "grayscale",
                transform.grayscale.is_some(),
                self.grayscale.is_some(),
            ),
            (
                "rotation",
                transform.random_rotation.is_some(),
                self.rotation.is_some(),
            ),
            (
                "affine",
                transform.random_affine.is_some(),
                self.affine.is_some(),
            ),
            ("augment", augments(transform), self.augment.is_some()),
            (
                "aug_mix",
                transform.timm_aug_mix.is_some(),
                self.aug_mix.is_some(),
            ),
            (
                "perspective",
                transform.random_perspective.is_some(),
                self.perspective.is_some(),
            ),
            (
                "blur",
                transform.gaussian_blur.is_some(),
                self.blur.is_some(),
            ),
            (
                "erase",
                transform.random_erasing.is_some(),
                self.erase.is_some(),
            ),
        ];
        let declared: Vec<&str> = transform
            .color_ops
            .iter()
            .map(|o| o.operation().method)
            .collect();
        let given: Vec<&str> = self.color_ops.iter().flatten().map(|(&m, _)| m).collect();
        if self.color_ops.is_some() == declared.is_empty()
            || declared.iter().any(|m| !given.contains(m))
            || given.len() != declared.len()
        {
            return Err(Error::Options(format!(
                "the given parameters' `color_ops` name {given:?}, and the transform has \
                 {declared:?}"
            )));
        }
        for (name, wanted, given) in pairs {
            if wanted != given {
                let why = match (wanted, self.steps.is_some()) {
                    (true, _) => format!("lack `{name}`, which the transform draws"),
                    (false, false) => format!("have `{name}`, which the transform does not draw"),
                    (false, true) => format!(
                        "have `{name}`, which the transform does not draw or the given `steps` \
                         leave out"
                    ),
                };
                return Err(Error::Options(format!("the given parameters {why}")));
            }
        }
        if let Some(b) = self.crop {
            if b.width == 0
                || b.height == 0
                || b.left + b.width > width
                || b.top + b.height > height
            {
                return Err(Error::Options(format!(
                    "the crop box {b:?} does not lie inside the {width}x{height} image"
                )));
            }
        }
        if let (Some(b), Some(c)) = (self.random_crop, transform.random_crop) {
            let (w, h) = super::padded_size(transform, (width, height));
            if (b.width, b.height) != c.size || b.left + b.width > w || b.top + b.height > h {
                return Err(Error::Options(format!(
                    "the random crop {b:?} is not a box of {}x{} inside the {w}x{h} padded image",
                    c.size.0, c.size.1
                )));
            }
        }
        if let (Some(boxes), Some(erasing)) = (&self.erase, &transform.random_erasing) {
            let output = super::output_size(transform, (width, height));
            if let Some(why) = super::erasing::misfit(boxes, erasing, output) {
                return Err(Error::Options(why));
            }
        }
        if let Some(a) = self.affine.filter(|a| !a.fits()) {
            return Err(Error::Options(format!(
                "the affine parameters {a:?} are not finite numbers with a positive scale and \
                 shifts within {MAX_SIDE} pixels"
            )));
        }
        if let (Some(Some(b)), Some(g)) = (self.blur, transform.gaussian_blur) {
            // Weights in [0, 1], as torch's normalised kernels are: then no product or sum of
            // the blur leaves float32's range (shaders/float.wgsl needs that).
            let fits = |w: &f32| (0.0..=1.0).contains(w);
            let (kx, ky) = b.kernel_size;
            if b.kernel_size != g.kernel_size
                || !b.kernel_x[..kx].iter().chain(&b.kernel_y[..ky]).all(fits)
            {
                return Err(Error::Options(format!(
                    "the given blur's kernels ({kx} and {ky} weights) are not the transform's \
                     {:?} of weights in [0, 1]",
                    g.kernel_size
                )));
            }
        }
        if let Some(c) = self.perspective.flatten() {
            let map = super::Rotation::perspective(c, [0; 3], Filter::Bilinear);
            if !map.in_double_range() {
                return Err(Error::Options(format!(
                    "the perspective's coefficients {c:?} are not each zero or of a magnitude \
                     in [2^-500, 2^30]"
                )));
            }
        }
        if let Some(angle) = self.rotation.filter(|a| !a.is_finite()) {
            return Err(Error::Options(format!(
                "the rotation's angle {angle} is not a finite number"
            )));
        }
        let augment = self.augment.as_deref().unwrap_or_default();
        if transform.timm_auto_augment.is_some() && augment.len() > 2 {
            return Err(Error::Options(format!(
                "{} operations given for timm's AutoAugment, whose sub-policies have two",
                augment.len()
            )));
        }
        if augment.len() > MAX_AUGMENT_OPS as usize {
            return Err(Error::Options(format!(
                "{} augmentation operations for one image, more than the {MAX_AUGMENT_OPS} a \
                 transform applies",
                augment.len()
            )));
        }
        if let Some(a) = augment.iter().find(|a| !a.op.allows(a.magnitude)) {
            return Err(Error::Options(format!(
                "the {} magnitude {} lies outside the augmentation space's bins",
                a.op.name(),
                a.magnitude
            )));
        }
        if let (Some(mix), Some(m)) = (&self.aug_mix, transform.timm_aug_mix) {
            check_aug_mix(mix, &m)?;
        }
        if let (Some(jitter), Some(color)) = (transform.color_jitter, &self.color) {
            check_jitter_order(&jitter, color)?;
        }
        for a in self.color.iter().flatten() {
            let f = a.factor();
            let fits = match a {
                Adjustment::Hue(_) => (-0.5..=0.5).contains(&f),
                _ => f.is_finite() && f >= 0.0,
            };
            if !fits {
                return Err(Error::Options(format!(
                    "{} factor {f} is out of range",
                    a.name()
                )));
            }
        }
        Ok(())
    }
}

/// `RandomResize`'s shorter side (uniform in its range, as `torch.randint`) or the size
/// `RandomShortestSize` draws (one of its sizes, uniformly).
fn draw_resize(transform: &Transform, s: &mut Stream) -> Option<usize> {
    if let Some(r) = transform.random_resize {
        return Some(r.min_size + s.below((r.max_size - r.min_size) as u64) as usize);
    }
    let sizes = transform.random_shortest_size?;
    Some(sizes.sizes()[s.below(sizes.sizes().len() as u64) as usize])
}

/// Whether `transform` has an augmentation policy (`TrivialAugmentWide`, `RandAugment`,
/// `AutoAugment`).
fn augments(transform: &Transform) -> bool {
    transform.trivial_augment.is_some()
        || transform.rand_augment.is_some()
        || transform.auto_augment.is_some()
        || transform.timm_rand_augment.is_some()
        || transform.timm_auto_augment.is_some()
}

/// The augmentation policy's draws for `key`, on the image of `size` it sees.
fn draw_augment(
    transform: &Transform,
    size: (usize, usize),
    key: SampleKey,
) -> Option<Vec<super::Augment>> {
    use super::Augment;
    if let Some(t) = transform.trivial_augment {
        let s = &mut Stream::new(key, Op::TrivialAugment);
        return Some(vec![Augment::draw_trivial(&t, s)]);
    }
    if let Some(r) = transform.rand_augment {
        return Some(Augment::draw_rand(
            &r,
            size,
            &mut Stream::new(key, Op::RandAugment),
        ));
    }
    if let Some(r) = transform.timm_rand_augment {
        let s = &mut Stream::new(key, Op::TimmRandAugment);
        return Some(super::timm_augment::draw(&r, size, s));
    }
    if let Some(a) = transform.timm_auto_augment {
        let s = &mut Stream::new(key, Op::TimmAutoAugment);
        return Some(super::timm_augment::draw_auto(&a, size, s));
    }
    let a = transform.auto_augment?;
    Some(Augment::draw_auto(
        &a,
        size,
        &mut Stream::new(key, Op::AutoAugment),
    ))
}

/// Given `AugMix` draws: a weight and a chain for each of the transform's chains, each chain as
/// long as its depth allows, weights and blend factor finite and in [0, 1] (numpy's clip of the
/// sum then bounds every value), operations within their spaces.
fn check_aug_mix(mix: &super::AugMix, m: &crate::transform::TimmAugMix) -> Result<()> {
    let width = m.width as usize;
    let depths = m.depth.map_or(1..=3, |d| d..=d);
    if mix.weights.len() != width || mix.chains.len() != width {
        return Err(Error::Options(format!(
            "the given aug_mix has {} weights and {} chains, and the transform mixes {width}",
            mix.weights.len(),
            mix.chains.len()
        )));
    }
    // timm's chains always run their depth (every operation applies): a given chain as long.
    if let Some(chain) = mix
        .chains
        .iter()
        .find(|c| !depths.contains(&(c.len() as u32)))
    {
        return Err(Error::Options(format!(
            "a given aug_mix chain of {} operations, and the transform's run {depths:?}",
            chain.len()
        )));
    }
    let unit = |v: &f32| (0.0..=1.0).contains(v);
    if !mix.weights.iter().all(unit) || !unit(&mix.blend) {
        return Err(Error::Options(format!(
            "the given aug_mix's weights {:?} and blend {} lie in [0, 1]",
            mix.weights, mix.blend
        )));
    }
    if let Some(a) = mix
        .chains
        .iter()
        .flatten()
        .find(|a| !a.op.allows(a.magnitude))
    {
        return Err(Error::Options(format!(
            "the {} magnitude {} lies outside the augmentation space's bins",
            a.op.name(),
            a.magnitude
        )));
    }
    let chained = || mix.chains.iter().flatten();
    if let Some(a) = chained().find(|a| !super::timm_augment::mixes(a)) {
        return Err(Error::Options(format!(
            "a given aug_mix chain has {}{}: AugMix runs its thirteen operations, timm's \
             shears, translations and rotations each with the `interpolation` it drew",
            a.op.name(),
            if a.filter.is_some() {
                " with an interpolation"
            } else {
                ""
            }
        )));
    }
    if let Some(filter) = m.interpolation {
        if let Some(a) = chained().find(|a| a.filter.is_some_and(|f| f != filter)) {
            return Err(Error::Options(format!(
                "a given aug_mix chain's {} samples with {}, and the transform's with {}",
                a.op.name(),
                a.filter.map_or("", |f| f.name()),
                filter.name()
            )));
        }
    }
    Ok(())
}

/// Given `ColorJitter` adjustments: each at most once, and only those the jitter draws (as
/// many as it has), so that an image's colour steps stay within what its transform makes.
fn check_jitter_order(jitter: &ColorJitter, color: &[Adjustment]) -> Result<()> {
    let drawn = [
        ("brightness", jitter.brightness.is_some()),
        ("contrast", jitter.contrast.is_some()),
        ("saturation", jitter.saturation.is_some()),
        ("hue", jitter.hue.is_some()),
    ];
    for (i, a) in color.iter().enumerate() {
        if !drawn.contains(&(a.name(), true)) {
            return Err(Error::Options(format!(
                "the given colour adjustments have {}, which the transform's ColorJitter does \
                 not draw",
                a.name()
            )));
        }
        if color[..i].iter().any(|b| b.name() == a.name()) {
            return Err(Error::Options(format!(
                "the given colour adjustments have {} twice",
                a.name()
            )));
        }
    }
    Ok(())
}

/// `RandomCrop.get_params`: a box of `(tw, th)` at a uniform place of the padded image of
/// `(width, height)`, the whole image when they are equal (the plan refuses a crop larger than
/// the image, as torchvision does; the box drawn for one lies at 0).
fn random_crop_box(
    (tw, th): (usize, usize),
    (width, height): (usize, usize),
    s: &mut Stream,
) -> CropBox {
    // torch.randint(0, n - t + 1): a place of the n - t + 1 there are.
    let mut place = |n: usize, t: usize| s.below(n.saturating_sub(t) as u64 + 1) as usize;
    let (top, left) = if (width, height) == (tw, th) {
        (0, 0)
    } else {
        let top = place(height, th);
        (top, place(width, tw))
    };
    CropBox {
        top,
        left,
        height: th,
        width: tw,
    }
}

/// torchvision's `RandomResizedCrop.get_params`: ten tries at a box of random area and aspect
/// ratio (log-uniform) that fits, then the centre crop clamped to the ratio bounds. Python's
/// `round` (half to even) makes the sides.
fn crop_box(crop: &RandomResizedCrop, (width, height): (usize, usize), s: &mut Stream) -> CropBox {
    let area = (width * height) as f64;
    for _ in 0..10 {
        let (target_area, aspect) = area_and_aspect(area, crop.scale, crop.ratio, s);
        let w = (target_area * aspect).sqrt().round_ties_even() as usize;
        let h = (target_area / aspect).sqrt().round_ties_even() as usize;
        if 0 < w && w <= width && 0 < h && h <= height {
            let top = s.below((height - h + 1) as u64) as usize;
            let left = s.below((width - w + 1) as u64) as usize;
            return CropBox {
                top,
                left,
                height: h,
                width: w,
            };
        }
    }
    let in_ratio = width as f64 / height as f64;
    let (w, h) = if in_ratio < crop.ratio.0 {
        (
            width,
            (width as f64 / crop.ratio.0).round_ties_even() as usize,
        )
    } else if in_ratio > crop.ratio.1 {
        (
            (height as f64 * crop.ratio.1).round_ties_even() as usize,
            height,
        )
    } else {
        (width, height)
    };
    CropBox {
        top: (height - h) / 2,
        left: (width - w) / 2,
        height: h,
        width: w,
    }
}

/// torchvision's `ColorJitter.get_params`: a random order of the four adjustments, then each
/// present factor uniform in its range (float32).
fn adjustments(jitter: &ColorJitter, s: &mut Stream) -> Vec<Adjustment> {
    let order = s.permutation::<4>();
    let mut factor = |range: Option<(f32, f32)>| range.map(|(low, high)| s.uniform_f32(low, high));
    let drawn = [
        factor(jitter.brightness).map(Adjustment::Brightness),
        factor(jitter.contrast).map(Adjustment::Contrast),
        factor(jitter.saturation).map(Adjustment::Saturation),
        factor(jitter.hue).map(Adjustment::Hue),
    ];
    order.iter().filter_map(|&i| drawn[i]).collect()
}

/// `RandomAffine.get_params`' draw for one image: the arguments torchvision gives `F.affine`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AffineParams {
    /// The angle in degrees, counter-clockwise (a float32 value, as torch draws it).
    pub angle: f64,
    /// Whole pixels right and down.
    pub translate: (i64, i64),
    /// The scale (a float32 value; 1 without a scale range).
    pub scale: f64,
    /// The x and y shears in degrees (float32 values; 0 where not drawn).
    pub shear: (f64, f64),
}

impl AffineParams {
    /// The draw of no map: what a `RandomAffine` inside `RandomApply` that does not apply
    /// computes (torchvision returns the image as it is; Pillow's map of this draw is a copy).
    pub const IDENTITY: Self = Self {
        angle: 0.0,
        translate: (0, 0),
        scale: 1.0,
        shear: (0.0, 0.0),
    };

    /// Whether a given draw is one the map can be made of.
    fn fits(&self) -> bool {
        let shift = |t: i64| t.unsigned_abs() <= MAX_SIDE as u64;
        [self.angle, self.scale, self.shear.0, self.shear.1]
            .iter()
            .all(|v| v.is_finite())
            && self.scale > 0.0
            && shift(self.translate.0)
            && shift(self.translate.1)
    }
}

/// `RandomAffine.get_params` on an image of `width`×`height`, each number a float32 uniform
/// draw as torch's `torch.empty(1).uniform_(low, high)`: the angle; the shifts (where it has a
/// translation: within the fractions of the width and height, rounded half to even as Python's
/// `round`); the scale; the x shear, then the y shear where it has one.
fn affine_params(
    a: &RandomAffine,
    (width, height): (usize, usize),
    s: &mut Stream,
) -> AffineParams {
    let mut uniform = |(low, high): (f64, f64)| f64::from(s.uniform_f32(low as f32, high as f32));
    let angle = uniform(a.degrees);
    let translate = a.translate.map_or((0, 0), |(fx, fy)| {
        let (dx, dy) = (fx * width as f64, fy * height as f64);
        let tx = uniform((-dx, dx)).round_ties_even() as i64;
        let ty = uniform((-dy, dy)).round_ties_even() as i64;
        (tx, ty)
    });
    let scale = a.scale.map_or(1.0, &mut uniform);
    let shear = a.shear.map_or((0.0, 0.0), |(x, y)| {
        let x = uniform(x);
        (x, y.map_or(0.0, &mut uniform))
    });
    AffineParams {
        angle,
        translate,
        scale,
        shear,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Given AugMix chains hold AugMix's own operations, geometric ones with the filter they
    /// drew (the transform's, where it fixes one); timm's AutoAugment gets two operations at most.
    #[test]
    fn given_timm_draws_are_held_to_what_timm_draws() {
        use crate::plan::{AugMix, Augment, AugmentOp};
        use crate::transform::{TimmAugMix, TimmAutoAugment};
        let m = TimmAugMix {
            interpolation: Some(Filter::Bicubic),
            ..TimmAugMix::default()
        };
        let with = |op, filter| Augment {
            filter,
            ..Augment::new(op, 0.0)
        };
        let mix = |chain: Vec<Augment>| AugMix {
            weights: vec![0.5, 0.25, 0.25],
            blend: 0.5,
            chains: vec![chain.clone(), chain.clone(), chain],
        };
        let fine = mix(vec![with(AugmentOp::TimmShearX, Some(Filter::Bicubic))]);
        assert!(check_aug_mix(&fine, &m).is_ok());
        for (bad, why) in [
            (
                mix(vec![with(AugmentOp::Invert, None)]),
                "thirteen operations",
            ),
            (
                mix(vec![with(AugmentOp::ShearX, None)]),
                "thirteen operations",
            ),
            (
                mix(vec![with(AugmentOp::TimmShearX, None)]),
                "thirteen operations",
            ),
            (
                mix(vec![with(AugmentOp::TimmShearX, Some(Filter::Bilinear))]),
                "samples with bilinear",
            ),
        ] {
            let e = check_aug_mix(&bad, &m).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        let t = Transform {
            timm_auto_augment: Some(TimmAutoAugment::default()),
            ..Transform::default()
        };
        let three = Params {
            augment: Some(vec![with(AugmentOp::Equalize, None); 3]),
            ..Params::default()
        };
        let e = three.check(&t, (8, 8)).unwrap_err().to_string();
        assert!(e.contains("sub-policies have two"), "{e}");
    }

    fn key(index: u64) -> SampleKey {
        SampleKey {
            seed: 3,
            epoch: 1,
            index,
        }
    }

    #[test]
    fn crop_boxes_lie_inside_and_respect_the_bounds() {
        let crop = RandomResizedCrop::new(224);
        for (index, size) in [(500, 375), (64, 2000), (1, 1), (3000, 40)]
            .iter()
            .cycle()
            .take(400)
            .enumerate()
        {
            let b = crop_box(&crop, *size, &mut Stream::new(key(index as u64), Op::Crop));
            assert!(b.width >= 1 && b.height >= 1);
            assert!(
                b.left + b.width <= size.0 && b.top + b.height <= size.1,
                "{b:?} {size:?}"
            );
        }
    }

    /// A 64 × 2000 image: no random box of ratio ≥ 3/4 fits often, and the fallback is the
    /// ratio-clamped centre crop, 64 × round(64 / 0.75) = 64 × 85.
    #[test]
    fn the_fallback_is_the_clamped_centre_crop() {
        let crop = RandomResizedCrop {
            scale: (0.9, 1.0),
            ..RandomResizedCrop::new(224)
        };
        let b = crop_box(&crop, (64, 2000), &mut Stream::new(key(0), Op::Crop));
        assert_eq!(
            b,
            CropBox {
                top: (2000 - 85) / 2,
                left: 0,
                height: 85,
                width: 64
            }
        );
    }

    #[test]
    fn draws_depend_on_the_key_alone() {
        let transform = Transform {
            color_jitter: Some(ColorJitter::new(0.4, 0.4, 0.4, 0.1)),
            ..Transform::imagenet_train()
        };
        let a = Params::draw(&transform, key(9), (640, 480));
        assert_eq!(a, Params::draw(&transform, key(9), (640, 480)));
        assert_ne!(a, Params::draw(&transform, key(10), (640, 480)));
        let color = a.color.unwrap();
        assert_eq!(color.len(), 4);
        assert!(a.vertical_flip.is_none() && a.grayscale.is_none());
        // Adding an operation leaves the others' draws alone.
        let more = Transform {
            grayscale: Some(0.2),
            ..transform
        };
        let b = Params::draw(&more, key(9), (640, 480));
        assert_eq!((b.crop, b.horizontal_flip), (a.crop, a.horizontal_flip));
    }

    #[test]
    fn given_parameters_must_match_the_transform_and_the_image() {
        let transform = Transform::imagenet_train();
        let good = Params {
            crop: Some(CropBox {
                top: 0,
                left: 10,
                height: 100,
                width: 90,
            }),
            horizontal_flip: Some(true),
            ..Params::default()
        };
        let given = |p: &Params| Params::of(&transform, &Sample::Given(p.clone()), (100, 100));
        assert_eq!(given(&good).unwrap(), good);
        let refused = |p: &Params| match given(p) {
            Err(Error::Options(why)) => why,
            other => panic!("not refused as options: {other:?}"),
        };
        let outside = Params {
            crop: Some(CropBox {
                left: 11,
                ..good.crop.unwrap()
            }),
            ..good.clone()
        };
        assert!(refused(&outside).contains("inside"));
        let lacking = Params {
            horizontal_flip: None,
            ..good.clone()
        };
        assert!(refused(&lacking).contains("horizontal_flip"));
        let extra = Params {
            grayscale: Some(false),
            ..good.clone()
        };
        assert!(refused(&extra).contains("grayscale"));
        // Colour adjustments: only those the jitter draws, each once.
        let jittered = Transform {
            color_jitter: Some(ColorJitter::new(0.4, 0.0, 0.0, 0.0)),
            ..transform
        };
        let with_color = |color: Vec<Adjustment>| {
            let p = Params {
                color: Some(color),
                ..good.clone()
            };
            Params::of(&jittered, &Sample::Given(p), (100, 100))
        };
        assert!(with_color(vec![Adjustment::Brightness(1.2)]).is_ok());
        let twice = with_color(vec![Adjustment::Brightness(1.2); 13]).unwrap_err();
        assert!(twice.to_string().contains("brightness twice"), "{twice}");
        let undrawn = with_color(vec![Adjustment::Contrast(1.2)]).unwrap_err();
        assert!(undrawn.to_string().contains("does not draw"), "{undrawn}");
        // A given blur: the transform's kernel sides, weights in [0, 1] (a built one too).
        let blurred = Transform {
            gaussian_blur: Some(crate::GaussianBlur::new(3)),
            ..transform
        };
        let with_blur = |x: &[f32], y: &[f32]| {
            let p = Params {
                blur: Some(super::super::Blur::given(x, y)),
                ..good.clone()
            };
            Params::of(&blurred, &Sample::Given(p), (100, 100))
        };
        assert!(with_blur(&[0.25, 0.5, 0.25], &[0.0, 1.0, 0.0]).is_ok());
        for (x, y) in [
            (&[0.25, 0.5, 0.25][..], &[1.0][..]),
            (&[0.25, 2.0, 0.25], &[0.0, 1.0, 0.0]),
            (&[0.25, -0.5, 0.25], &[0.0, 1.0, 0.0]),
            (&[0.25, f32::NAN, 0.25], &[0.0, 1.0, 0.0]),
        ] {
            let why = with_blur(x, y).unwrap_err().to_string();
            assert!(why.contains("weights in [0, 1]"), "{x:?} {y:?}: {why}");
        }
        let mut wide = super::super::Blur::given(&[1.0], &[1.0]).unwrap();
        wide.kernel_size = (40, 1);
        let p = Params {
            blur: Some(Some(wide)),
            ..good.clone()
        };
        assert!(Params::of(&blurred, &Sample::Given(p), (100, 100)).is_err());
    }

    /// A given random crop must be the transform's size and lie inside the padded image; a
    /// given augmentation has at most as many operations as a transform applies.
    #[test]
    fn given_crops_and_augmentations_are_held_to_the_transform() {
        let transform = Transform {
            random_crop: Some(crate::RandomCrop {
                padding: [4; 4],
                ..crate::RandomCrop::new((32, 32))
            }),
            rand_augment: Some(crate::RandAugment::default()),
            ..Transform::default()
        };
        let good = Params {
            random_crop: Some(CropBox {
                top: 8,
                left: 0,
                height: 32,
                width: 32,
            }),
            augment: Some(Vec::new()),
            ..Params::default()
        };
        let given = |p: &Params| Params::of(&transform, &Sample::Given(p.clone()), (32, 32));
        assert_eq!(given(&good).unwrap(), good);
        let box_of = |top, width| Params {
            random_crop: Some(CropBox {
                top,
                left: 0,
                height: 32,
                width,
            }),
            ..good.clone()
        };
        // The padded image is 40x40: a box from row 9 passes its bottom; one 31 wide is not
        // the crop's.
        for p in [box_of(9, 32), box_of(0, 31)] {
            assert!(given(&p).unwrap_err().to_string().contains("random crop"));
        }
        let identity = super::super::Augment::new(super::super::AugmentOp::Identity, 0.0);
        let five = Params {
            augment: Some(vec![identity; 5]),
            ..good.clone()
        };
        assert!(given(&five)
            .unwrap_err()
            .to_string()
            .contains("5 augmentation"));
    }
}
