//! What the user asks for between the decoded image and the tensor, in torchvision's terms.
//!
//! A [`Transform`] is applied as torchvision applies it to a PIL image: optional draft decoding
//! (Pillow's `Image.draft`), `Resize` or `RandomResizedCrop`, `CenterCrop`, the random flips,
//! `ColorJitter`, `RandomGrayscale` and the single-operation transforms
//! ([`COLOR_OPERATIONS`]), then `ToTensor` + `Normalize`, with the output layout,
//! dtype and channel order chosen here (PARITY §3–5). Random operations draw each sample's
//! parameters from `seed`, `epoch` and the sample's index (see [`crate::plan::random`]), or take
//! them as given ([`crate::Sample`]).

mod adjustment;
mod affine;
mod blur;
mod color_ops;
mod erasing;
mod operations;
mod order;
mod padding;
mod perspective;
mod policies;
mod random_resize;
mod validate;
mod wire;
mod wire_geometry;
mod wire_timm;
mod wire_values;

pub use adjustment::Adjustment;
pub use affine::RandomAffine;
pub use blur::{GaussianBlur, MAX_KERNEL};
pub use color_ops::{ColorOp, ColorOpArgument, ColorOperation, ColorOps, COLOR_OPERATIONS};
pub use erasing::{ErasedValue, RandomErasing, MAX_ERASED_BOXES};
pub use operations::{Operation, OPERATIONS, SETTINGS};
pub use order::{OrderEntry, StepOrder};
pub use padding::{Pad, PaddingMode, RandomCrop};
pub use perspective::RandomPerspective;
pub use policies::{
    AutoAugment, AutoAugmentPolicy, RandAugment, TimmAugMix, TimmAutoAugment,
    TimmAutoAugmentPolicy, TimmRandAugment, TrivialAugment, MAX_AUGMENT_OPS, MAX_MIXED_STEPS,
};
pub use random_resize::{RandomResize, RandomShortestSize, MAX_SHORTEST_SIZES};

/// Pillow's resampling filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// Nearest neighbour. Pillow's `Image.NEAREST`, which it runs as an affine scale
    /// (`ImagingScaleAffine`), not as a convolution: see [`crate::plan::Taps::nearest`].
    Nearest,
    /// Box (area average for integer ratios). Pillow's `Image.BOX`.
    Box,
    /// Triangle, antialiased when downscaling. Pillow's `Image.BILINEAR`, torchvision's default.
    Bilinear,
    /// Hamming-windowed sinc. Pillow's `Image.HAMMING`.
    Hamming,
    /// Keys cubic with a = −0.5. Pillow's `Image.BICUBIC`.
    Bicubic,
    /// Lanczos-3. Pillow's `Image.LANCZOS`.
    Lanczos,
}

impl Filter {
    /// Every filter, by [`Filter::name`].
    pub const ALL: [Self; 6] = [
        Self::Nearest,
        Self::Box,
        Self::Bilinear,
        Self::Hamming,
        Self::Bicubic,
        Self::Lanczos,
    ];

    /// Pillow's name of the filter, in lower case (`"bilinear"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Nearest => "nearest",
            Self::Box => "box",
            Self::Bilinear => "bilinear",
            Self::Hamming => "hamming",
            Self::Bicubic => "bicubic",
            Self::Lanczos => "lanczos",
        }
    }

    /// The filter of [`Filter::name`] `name`, in any case.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }
}

/// How to resize before cropping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resize {
    /// To exactly `width`×`height` (`img.resize((w, h))`, the seed article's pipeline).
    Exact {
        /// Output width.
        width: usize,
        /// Output height.
        height: usize,
    },
    /// torchvision `Resize(n)`: the shorter side becomes `n`, the longer
    /// `floor(n * long / short)`; an image already that size is left untouched.
    ShorterSide(usize),
    /// torchvision `Resize(size, max_size=max_size)`: as `ShorterSide(size)`, unless the longer
    /// side would then pass `max_size`: then it becomes `max_size`, and the shorter
    /// `floor(max_size * size / long)` of that longer side.
    ShorterSideAtMost {
        /// The shorter side's length.
        size: usize,
        /// The most the longer side may have.
        max_size: usize,
    },
    /// timm's `ResizeKeepRatio((height, width), longest)` as its eval transforms make it (no
    /// random scale or aspect): both sides divided by one ratio, the smaller of `height / h` and
    /// `width / w` (the larger with `longest`), each `round(side / ratio)` in doubles, half to
    /// even, as Python rounds.
    KeepRatio {
        /// The target width.
        width: usize,
        /// The target height.
        height: usize,
        /// timm's `longest=1.0` (the whole image fits the target); `false` its `0.0` (the
        /// target fits inside the image).
        longest: bool,
    },
}

impl Resize {
    /// The size an image of `width`×`height` is resized to.
    pub fn target(self, width: usize, height: usize) -> (usize, usize) {
        let (n, max_size) = match self {
            Self::Exact { width, height } => return (width, height),
            Self::KeepRatio {
                width: target_w,
                height: target_h,
                longest,
            } => return keep_ratio((width, height), (target_w, target_h), longest),
            Self::ShorterSide(n) => (n, None),
            Self::ShorterSideAtMost { size, max_size } => (size, Some(max_size)),
        };
        let (short, long) = (width.min(height), width.max(height));
        // int(n * long / short) on Python floats; exact integer floor for these sizes.
        let (mut new_short, mut new_long) = (n, n * long / short.max(1));
        if let Some(max_size) = max_size.filter(|&m| new_long > m) {
            (new_short, new_long) = (max_size * new_short / new_long, max_size);
        }
        if width <= height {
            (new_short, new_long)
        } else {
            (new_long, new_short)
        }
    }
}

/// timm's `ResizeKeepRatio.get_params` without its random factors: `ratio = max(rh, rw) *
/// longest + min(rh, rw) * (1 - longest)` (with `longest` 0 or 1, exactly the smaller or the
/// larger), then each side `round(side / ratio)`.
fn keep_ratio(size: (usize, usize), target: (usize, usize), longest: bool) -> (usize, usize) {
    let ratio_h = size.1 as f64 / target.1 as f64;
    let ratio_w = size.0 as f64 / target.0 as f64;
    let ratio = if longest {
        ratio_h.max(ratio_w)
    } else {
        ratio_h.min(ratio_w)
    };
    let side = |s: usize| (s as f64 / ratio).round_ties_even() as usize;
    (side(size.0), side(size.1))
}

/// torchvision `RandomResizedCrop(size, scale, ratio)`: a box of random area and aspect cut out
/// of the (oriented) image, then resized to `size` with the transform's filter, as
/// `F.resized_crop` does on a PIL image (`img.crop(box).resize(size)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomResizedCrop {
    /// Output (width, height).
    pub size: (usize, usize),
    /// Bounds of the box's area as a share of the image's; torchvision's default (0.08, 1.0).
    pub scale: (f64, f64),
    /// Bounds of the box's aspect ratio (width / height); default (3/4, 4/3).
    pub ratio: (f64, f64),
    /// Two filters to draw one of per sample (timm's `interpolation='random'`: bilinear or
    /// bicubic); `None` resizes with the transform's filter.
    pub filters: Option<[Filter; 2]>,
}

impl RandomResizedCrop {
    /// torchvision's defaults for a square output of `size`.
    pub fn new(size: usize) -> Self {
        Self {
            size: (size, size),
            scale: (0.08, 1.0),
            ratio: (3.0 / 4.0, 4.0 / 3.0),
            filters: None,
        }
    }
}

/// torchvision `ColorJitter(brightness, contrast, saturation, hue)` as ranges of factors (what
/// its `_check_input` makes of the arguments); `None` leaves that adjustment out. The four run
/// in a random order per sample; with `p` below 1, only in that share of the samples (the jitter
/// inside `RandomApply([ColorJitter(...)], p)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColorJitter {
    /// Brightness factor range, e.g. (0.6, 1.4) for `brightness=0.4`.
    pub brightness: Option<(f32, f32)>,
    /// Contrast factor range.
    pub contrast: Option<(f32, f32)>,
    /// Saturation factor range.
    pub saturation: Option<(f32, f32)>,
    /// Hue shift range, within [−0.5, 0.5].
    pub hue: Option<(f32, f32)>,
    /// The probability that the jitter applies at all (`RandomApply`'s); 1 without one.
    pub p: f64,
}

impl Default for ColorJitter {
    fn default() -> Self {
        Self {
            brightness: None,
            contrast: None,
            saturation: None,
            hue: None,
            p: 1.0,
        }
    }
}

impl ColorJitter {
    /// As `ColorJitter(brightness, contrast, saturation, hue)` with single numbers: factors in
    /// [max(0, 1 − v), 1 + v] and hue in [−h, h]; zero leaves the adjustment out.
    pub fn new(brightness: f64, contrast: f64, saturation: f64, hue: f64) -> Self {
        let factor = |v: f64| (v != 0.0).then(|| ((1.0 - v).max(0.0) as f32, (1.0 + v) as f32));
        Self {
            brightness: factor(brightness),
            contrast: factor(contrast),
            saturation: factor(saturation),
            hue: (hue != 0.0).then(|| (-hue as f32, hue as f32)),
            p: 1.0,
        }
    }
}

/// torchvision `RandomRotation(degrees, interpolation, expand=False, center, fill)` of the
/// cropped, flipped image, by default before the colour adjustments: an angle drawn uniformly from
/// `degrees`, Pillow's `Image.rotate` about `center` (the image's centre by default), `fill` where
/// no pixel maps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomRotation {
    /// The angle's range in degrees, counter-clockwise: torchvision's `(-d, d)` for a number
    /// `d`.
    pub degrees: (f64, f64),
    /// The RGB value of the pixels no source pixel maps to; default black.
    pub fill: [u8; 3],
    /// How the rotation samples the image: `Filter::Nearest` (torchvision's default),
    /// `Filter::Bilinear` or `Filter::Bicubic`.
    pub interpolation: Filter,
    /// The point (x, y) the image turns about, in pixels of the image as the rotation finds it;
    /// none for its centre.
    pub center: Option<(f64, f64)>,
    /// The probability that the rotation applies at all (`RandomApply`'s around it); 1 without
    /// one. Where it does not, the angle drawn is 0 (Pillow's copy of the image).
    pub p: f64,
}

impl RandomRotation {
    /// `RandomRotation(degrees)`: an angle in (-`degrees`, `degrees`), nearest neighbour, black
    /// fill.
    pub fn new(degrees: f64) -> Self {
        Self {
            degrees: (-degrees, degrees),
            fill: [0; 3],
            interpolation: Filter::Nearest,
            center: None,
            p: 1.0,
        }
    }
}

impl Filter {
    /// Whether Pillow's affine transforms (`Image.transform`, `Image.rotate`) sample with it:
    /// nearest, bilinear and bicubic.
    pub fn maps(self) -> bool {
        matches!(self, Self::Nearest | Self::Bilinear | Self::Bicubic)
    }
}

/// torchvision `Normalize(mean, std)` after `ToTensor()`, per RGB channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalize {
    /// Channel means, as float32 (torch rounds the Python floats to float32).
    pub mean: [f32; 3],
    /// Channel standard deviations, as float32.
    pub std: [f32; 3],
}

impl Normalize {
    /// ImageNet statistics: mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225).
    pub const IMAGENET: Self = Self {
        mean: [0.485, 0.456, 0.406],
        std: [0.229, 0.224, 0.225],
    };

    /// From Python-style float values: rounded to f64 first, then to f32, as
    /// `torch.as_tensor(values, dtype=torch.float32)` does.
    pub fn from_f64(mean: [f64; 3], std: [f64; 3]) -> Self {
        Self {
            mean: mean.map(|m| m as f32),
            std: std.map(|s| s as f32),
        }
    }
}

/// Memory layout of one output image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Height, width, channels (NumPy / PIL order).
    Hwc,
    /// Channels, height, width (PyTorch order).
    Chw,
}

/// Element type of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// The 8-bit samples themselves (no `ToTensor`, no normalisation).
    U8,
    /// float32: `ToTensor()` (v / 255), then `Normalize` if set.
    F32,
    /// float16: the float32 value rounded to nearest even, as `tensor.half()` does.
    F16,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::U8 => 1,
            Self::F16 => 2,
            Self::F32 => 4,
        }
    }
}

/// Order of the output channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelOrder {
    /// Red, green, blue.
    Rgb,
    /// Blue, green, red; `Normalize` statistics still name R, G, B in that order.
    Bgr,
}

/// The whole recipe from decoded image to tensor. `Default` is the decoded image itself:
/// uint8 H×W×3 RGB, equal to `np.asarray(Image.open(f).convert('RGB'))`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Resize step; default none.
    pub resize: Option<Resize>,
    /// `CenterCrop((height, width))` as (width, height), zero-padding a smaller image; default
    /// none.
    pub center_crop: Option<(usize, usize)>,
    /// timm's `CenterCropOrPad(size, fill)`: the centre crop pads a smaller image with this
    /// fill ((crop − size) // 2 before, the rest after), where torchvision's `CenterCrop` pads
    /// with zeros; default none (zeros).
    pub center_crop_fill: Option<[u8; 3]>,
    /// `Pad` of the resized image, before a crop; default none.
    pub pad: Option<Pad>,
    /// `RandomCrop` in place of `center_crop`; default none.
    pub random_crop: Option<RandomCrop>,
    /// Resampling filter; default bilinear (torchvision's).
    pub filter: Filter,
    /// Decode with Pillow's `draft('RGB', size)` towards the resize target computed from the
    /// file's own size (libjpeg DCT scaling: faster, different pixels); default off.
    pub draft: bool,
    /// `Normalize` after `ToTensor`; default none. Needs a float dtype.
    pub normalize: Option<Normalize>,
    /// Output layout; default HWC.
    pub layout: Layout,
    /// Output element type; default u8.
    pub dtype: DType,
    /// Output channel order; default RGB.
    pub channel_order: ChannelOrder,
    /// Turn the image upright by its EXIF orientation first, as `ImageOps.exif_transpose`
    /// does; default off, because `Image.open` and torchvision leave it as stored.
    pub exif_transpose: bool,
    /// A float tensor's values as `transforms.v2.ToDtype(torch.float32, scale=True)` makes them,
    /// float32(v) × float32(1 / 255), in place of `ToTensor`'s v / 255 (the two differ in the
    /// last bit for some v); default off.
    pub reciprocal_scale: bool,
    /// `RandomResizedCrop` in place of `resize`; default none.
    pub random_resized_crop: Option<RandomResizedCrop>,
    /// v2 `RandomResize` in place of `resize`; default none.
    pub random_resize: Option<RandomResize>,
    /// v2 `RandomShortestSize` in place of `resize`; default none.
    pub random_shortest_size: Option<RandomShortestSize>,
    /// `RandomHorizontalFlip(p)`; default none.
    pub horizontal_flip: Option<f64>,
    /// `RandomVerticalFlip(p)`; default none.
    pub vertical_flip: Option<f64>,
    /// `ColorJitter`; default none.
    pub color_jitter: Option<ColorJitter>,
    /// `RandomGrayscale(p)` (three equal channels); default none.
    pub grayscale: Option<f64>,
    /// `RandomRotation` by default after the flips, before `ColorJitter`; default none.
    pub random_rotation: Option<RandomRotation>,
    /// `RandomAffine` in the same place (not with `RandomRotation` or an augmentation policy);
    /// default none.
    pub random_affine: Option<RandomAffine>,
    /// `TrivialAugmentWide` by default after the flips, before `ColorJitter` (not with
    /// `RandomRotation`); default none.
    pub trivial_augment: Option<TrivialAugment>,
    /// `RandAugment` in the same place (not with `RandomRotation` or another augmentation
    /// policy); default none.
    pub rand_augment: Option<RandAugment>,
    /// `AutoAugment` in the same place (not with `RandomRotation` or another augmentation
    /// policy); default none.
    pub auto_augment: Option<AutoAugment>,
    /// timm's `RandAugment` (`rand-...` strings) in the same place (not with `RandomRotation` or
    /// another augmentation policy); default none.
    pub timm_rand_augment: Option<TimmRandAugment>,
    /// timm's `AutoAugment` (`original`, `v0`... strings) in the same place (not with
    /// `RandomRotation` or another augmentation policy); default none.
    pub timm_auto_augment: Option<TimmAutoAugment>,
    /// timm's `AugMix` (`augmix-...` strings) in the same place (not with `RandomRotation` or
    /// another augmentation policy); default none.
    pub timm_aug_mix: Option<TimmAugMix>,
    /// `RandomPerspective` by default after the rotation or augmentation policy, before
    /// `ColorJitter`; default none.
    pub random_perspective: Option<RandomPerspective>,
    /// torchvision's single-operation transforms (`RandomInvert`, `RandomPosterize`, ...), after
    /// `RandomGrayscale`, in their order; default none.
    pub color_ops: ColorOps,
    /// `GaussianBlur` by default after the colour operations, before the tensor conversion; default
    /// none.
    pub gaussian_blur: Option<GaussianBlur>,
    /// The order of the steps above that keep the image's size (the rotation or policy,
    /// `RandomPerspective`, `ColorJitter`, `RandomGrayscale`, the single-operation transforms,
    /// `GaussianBlur`), as a torchvision Compose lists them; default torchvision's usual order.
    pub order: StepOrder,
    /// `RandomErasing` of the output tensor, last; default none.
    pub random_erasing: Option<RandomErasing>,
    /// The seed the random operations' parameters are drawn from; default 0.
    pub seed: u64,
    /// The epoch they are drawn for; default 0.
    pub epoch: u64,
}

impl Default for Transform {
    fn default() -> Self {
        Self {
            resize: None,
            center_crop: None,
            center_crop_fill: None,
            pad: None,
            random_crop: None,
            filter: Filter::Bilinear,
            draft: false,
            normalize: None,
            layout: Layout::Hwc,
            dtype: DType::U8,
            channel_order: ChannelOrder::Rgb,
            exif_transpose: false,
            reciprocal_scale: false,
            random_resized_crop: None,
            random_resize: None,
            random_shortest_size: None,
            horizontal_flip: None,
            vertical_flip: None,
            color_jitter: None,
            grayscale: None,
            random_rotation: None,
            random_affine: None,
            trivial_augment: None,
            rand_augment: None,
            auto_augment: None,
            timm_rand_augment: None,
            timm_auto_augment: None,
            timm_aug_mix: None,
            random_perspective: None,
            color_ops: ColorOps::default(),
            gaussian_blur: None,
            order: StepOrder::default(),
            random_erasing: None,
            seed: 0,
            epoch: 0,
        }
    }
}

impl Transform {
    /// torchvision's ImageNet evaluation: `Resize(256)`, `CenterCrop(224)`, `ToTensor()`,
    /// `Normalize(IMAGENET)`, float32 C×H×W.
    pub fn imagenet_eval() -> Self {
        Self {
            resize: Some(Resize::ShorterSide(256)),
            center_crop: Some((224, 224)),
            ..Self::tensor(Normalize::IMAGENET)
        }
    }

    /// timm's evaluation transform: `Resize(floor(size / crop_pct))` with bicubic filtering,
    /// `CenterCrop(size)`, ImageNet normalisation (timm's default `crop_pct` is 0.875).
    pub fn timm_eval(size: usize, crop_pct: f64) -> Self {
        Self {
            resize: Some(Resize::ShorterSide(
                (size as f64 / crop_pct).floor() as usize
            )),
            center_crop: Some((size, size)),
            filter: Filter::Bicubic,
            ..Self::tensor(Normalize::IMAGENET)
        }
    }

    /// Resize to exactly `width`×`height` (bilinear), ImageNet-normalised float32 C×H×W: the
    /// seed article's pipeline.
    pub fn exact(width: usize, height: usize) -> Self {
        Self {
            resize: Some(Resize::Exact { width, height }),
            ..Self::tensor(Normalize::IMAGENET)
        }
    }

    /// torchvision's ImageNet training preset (`ClassificationPresetTrain`'s defaults):
    /// `RandomResizedCrop(224)` bilinear, `RandomHorizontalFlip(0.5)`, `ToTensor()`,
    /// `Normalize(IMAGENET)`, float32 C×H×W.
    pub fn imagenet_train() -> Self {
        Self {
            random_resized_crop: Some(RandomResizedCrop::new(224)),
            horizontal_flip: Some(0.5),
            ..Self::tensor(Normalize::IMAGENET)
        }
    }

    /// timm's training transform as its train.py makes it by default (`create_transform(224,
    /// is_training=True, interpolation='random')`: train.py's `--train-interpolation random`;
    /// create_transform's own default is bilinear):
    /// `RandomResizedCropAndInterpolation(224, interpolation='random')` (bilinear or bicubic per
    /// sample), `RandomHorizontalFlip(0.5)`, `ColorJitter(0.4, 0.4, 0.4)`, `ToTensor()`,
    /// `Normalize(IMAGENET)`, float32 C×H×W.
    pub fn timm_train() -> Self {
        Self {
            random_resized_crop: Some(RandomResizedCrop {
                filters: Some([Filter::Bilinear, Filter::Bicubic]),
                ..RandomResizedCrop::new(224)
            }),
            horizontal_flip: Some(0.5),
            color_jitter: Some(ColorJitter::new(0.4, 0.4, 0.4, 0.0)),
            ..Self::tensor(Normalize::IMAGENET)
        }
    }

    /// Whether any operation draws random parameters.
    pub fn is_random(&self) -> bool {
        self.random_resized_crop.is_some()
            || self.random_resize.is_some()
            || self.random_shortest_size.is_some()
            || self.horizontal_flip.is_some()
            || self.vertical_flip.is_some()
            || self.color_jitter.is_some()
            || self.grayscale.is_some()
            || self.random_rotation.is_some()
            || self.random_affine.is_some()
            || self.trivial_augment.is_some()
            || self.rand_augment.is_some()
            || self.auto_augment.is_some()
            || self.timm_rand_augment.is_some()
            || self.timm_auto_augment.is_some()
            || self.timm_aug_mix.is_some()
            || self.random_perspective.is_some()
            || !self.color_ops.is_empty()
            || self.gaussian_blur.is_some()
            || self.random_erasing.is_some()
            || self.random_crop.is_some()
    }

    /// No geometry change; `ToTensor` + `normalize`, float32 C×H×W.
    pub fn tensor(normalize: Normalize) -> Self {
        Self {
            normalize: Some(normalize),
            layout: Layout::Chw,
            dtype: DType::F32,
            ..Self::default()
        }
    }

    /// The output (width, height) when it does not depend on the image: a crop or an exact
    /// resize fixes it.
    pub fn fixed_output_size(&self) -> Option<(usize, usize)> {
        if let Some(crop) = self.center_crop.or(self.random_crop.map(|c| c.size)) {
            return Some(crop);
        }
        let [left, top, right, bottom] = self.pad.map_or([0; 4], |p| p.padding);
        let (width, height) = match (self.resize, self.random_resized_crop) {
            (Some(Resize::Exact { width, height }), _) => (width, height),
            (_, Some(crop)) => crop.size,
            _ => return None,
        };
        // Saturating: an unvalidated transform's padding may be anything.
        Some((
            width.saturating_add(left).saturating_add(right),
            height.saturating_add(top).saturating_add(bottom),
        ))
    }

    /// Every output's dimensions in the transform's layout, when they do not depend on the
    /// image (see [`Self::fixed_output_size`]).
    pub fn fixed_output_shape(&self) -> Option<[usize; 3]> {
        let (width, height) = self.fixed_output_size()?;
        Some(match self.layout {
            Layout::Hwc => [height, width, 3],
            Layout::Chw => [3, height, width],
        })
    }

    /// Checks that the options fit together.
    pub fn validate(&self) -> Result<(), InvalidTransform> {
        if self.exif_transpose && self.draft {
            return Err(InvalidTransform(
                "draft decoding and EXIF transposition do not combine yet".into(),
            ));
        }
        if self.normalize.is_some() && self.dtype == DType::U8 {
            return Err(InvalidTransform(
                "normalisation needs a float dtype (f32 or f16)".into(),
            ));
        }
        if let Some(n) = self.normalize {
            // torchvision's Normalize refuses a zero std (it would divide by zero).
            if n.std.iter().any(|&s| s == 0.0 || !s.is_finite()) {
                return Err(InvalidTransform(format!(
                    "normalize's std must be finite and non-zero, got {:?}",
                    n.std
                )));
            }
            if n.mean.iter().any(|m| !m.is_finite()) {
                return Err(InvalidTransform(format!(
                    "normalize's mean must be finite, got {:?}",
                    n.mean
                )));
            }
        }
        self.validate_random()?;
        self.validate_order()?;
        let zero = |(w, h): (usize, usize)| w == 0 || h == 0;
        if self.center_crop.is_some_and(zero)
            || matches!(self.resize, Some(Resize::Exact { width, height }) if zero((width, height)))
            || matches!(self.resize, Some(Resize::KeepRatio { width, height, .. }) if zero((width, height)))
            || matches!(self.resize, Some(Resize::ShorterSide(0)))
            || matches!(self.resize, Some(Resize::ShorterSideAtMost { size: 0, .. }))
            || self.random_resized_crop.is_some_and(|c| zero(c.size))
            || self.random_crop.is_some_and(|c| zero(c.size))
        {
            return Err(InvalidTransform("sizes must be at least 1".into()));
        }
        if self.center_crop_fill.is_some() && self.center_crop.is_none() {
            return Err(InvalidTransform(
                "center_crop_fill needs a center_crop to pad for".into(),
            ));
        }
        if self.random_crop.is_some() {
            let other = [
                ("center_crop", self.center_crop.is_some()),
                ("random_resized_crop", self.random_resized_crop.is_some()),
            ];
            if let Some((name, _)) = other.iter().find(|c| c.1) {
                return Err(InvalidTransform(format!(
                    "random_crop and {name} are not offered together (one crop of the resized \
                     image)"
                )));
            }
        }

        if let Some(Resize::ShorterSideAtMost { size, max_size }) = self.resize {
            if max_size <= size {
                return Err(InvalidTransform(format!(
                    "resize's max_size must be greater than its size, got max_size {max_size} \
                     for size {size}"
                )));
            }
        }
        // A side past this passes any pixel limit, and its arithmetic would overflow.
        let paddings = [
            self.pad.map(|p| p.padding),
            self.random_crop.map(|c| c.padding),
        ];
        let sides = [
            paddings.iter().flatten().flatten().copied().max(),
            self.random_crop.map(|c| c.size.0.max(c.size.1)),
            self.center_crop.map(|(w, h)| w.max(h)),
            self.random_resized_crop.map(|c| c.size.0.max(c.size.1)),
            self.resize.map(|r| match r {
                Resize::ShorterSide(n) => n,
                Resize::ShorterSideAtMost { max_size, .. } => max_size,
                Resize::Exact { width, height } | Resize::KeepRatio { width, height, .. } => {
                    width.max(height)
                }
            }),
        ];
        if let Some(side) = sides.into_iter().flatten().find(|&s| s > MAX_SIDE) {
            return Err(InvalidTransform(format!(
                "sizes must be at most {MAX_SIDE} pixels, got {side}"
            )));
        }
        Ok(())
    }
}

/// Options of a [`Transform`] that do not fit together, as [`Transform::validate`] finds them:
/// the message names the option and what it needs. Every entry point refuses them as
/// `Error::Options`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidTransform(pub(crate) String);

/// The longest side a transform may ask for.
pub const MAX_SIDE: usize = (1 << 31) - 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorter_side_follows_torchvision() {
        assert_eq!(Resize::ShorterSide(256).target(500, 375), (341, 256));
        assert_eq!(Resize::ShorterSide(256).target(375, 500), (256, 341));
    }

    /// timm's ResizeKeepRatio: the smaller ratio (the larger with `longest`), each side
    /// rounded half to even (Python's round).
    #[test]
    fn keep_ratio_divides_both_sides_by_one_ratio() {
        let keep = |width, height, longest| Resize::KeepRatio {
            width,
            height,
            longest,
        };
        // 640 / 320 = 2 < 480 / 192 = 2.5: 640 / 2, 480 / 2.
        assert_eq!(keep(320, 192, false).target(640, 480), (320, 240));
        assert_eq!(keep(320, 192, true).target(640, 480), (256, 192));
        // 500 / 292 and 375 / 256: 375 / (375 / 256) = 256, 500 / (375 / 256) = 341.33.
        assert_eq!(keep(292, 256, false).target(500, 375), (341, 256));
        // Halves: 5 / (10 / 4) = 2, 15 / 2.5 = 6 (half to even), 25 / 2.5 = 10.
        assert_eq!(keep(4, 4, false).target(10, 15), (4, 6));
        assert_eq!(keep(4, 4, true).target(10, 25), (2, 4));
        assert!(Transform {
            resize: Some(keep(0, 4, false)),
            ..Transform::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn timm_eval_resizes_to_size_over_crop_pct() {
        assert_eq!(
            Transform::timm_eval(224, 0.875).resize,
            Some(Resize::ShorterSide(256))
        );
    }

    #[test]
    fn normalize_refuses_a_zero_or_non_finite_std_and_mean() {
        let with = |mean: [f32; 3], std: [f32; 3]| Transform {
            normalize: Some(Normalize { mean, std }),
            ..Transform::imagenet_eval()
        };
        assert!(with([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]).validate().is_err());
        assert!(with([0.5; 3], [0.2, f32::NAN, 0.2]).validate().is_err());
        assert!(with([0.5; 3], [f32::INFINITY; 3]).validate().is_err());
        assert!(with([f32::NAN; 3], [0.2; 3]).validate().is_err());
        assert!(with([1.0, 2.0, 3.0], [0.5, 0.25, 2.0]).validate().is_ok());
    }

    #[test]
    fn u8_cannot_be_normalised() {
        let t = Transform {
            normalize: Some(Normalize::IMAGENET),
            ..Transform::default()
        };
        assert!(t.validate().is_err());
        assert!(Transform::imagenet_eval().validate().is_ok());
    }

    #[test]
    fn a_rotation_needs_a_finite_centre() {
        let about = |center| Transform {
            random_rotation: Some(RandomRotation {
                center,
                ..RandomRotation::new(10.0)
            }),
            ..Transform::default()
        };
        let why = about(Some((f64::NAN, 3.0))).validate().unwrap_err();
        assert!(why.to_string().contains("finite centre"), "{why}");
        assert!(about(Some((-1e9, 3.5))).validate().is_ok());
    }
    /// One crop of the resized image, one rotation or augmentation policy.
    #[test]
    fn crops_and_policies_that_do_not_combine_are_refused_by_name() {
        let refused = |t: Transform, words: &str| {
            let why = t.validate().unwrap_err().to_string();
            assert!(why.contains(words), "{why}");
        };
        let random_crop = Some(RandomCrop::new((8, 8)));
        refused(
            Transform {
                center_crop: Some((8, 8)),
                random_crop,
                ..Transform::default()
            },
            "random_crop and center_crop",
        );
        refused(
            Transform {
                random_resized_crop: Some(RandomResizedCrop::new(8)),
                random_crop,
                ..Transform::default()
            },
            "random_crop and random_resized_crop",
        );
        refused(
            Transform {
                trivial_augment: Some(TrivialAugment::default()),
                auto_augment: Some(AutoAugment::default()),
                ..Transform::default()
            },
            "trivial_augment and auto_augment are not offered together",
        );
        let huge = Pad {
            padding: [MAX_SIDE + 1, 0, 0, 0],
            fill: [0; 3],
            mode: PaddingMode::Edge,
        };
        refused(
            Transform {
                pad: Some(huge),
                ..Transform::default()
            },
            "at most",
        );
    }
}
