//! torchvision's augmentation policies, `TrivialAugmentWide`, `RandAugment` and `AutoAugment`
//! (`crate::plan::auto_augment` draws and applies their operations).

use super::Filter;

/// torchvision `TrivialAugmentWide(num_magnitude_bins, interpolation, fill)` of the
/// cropped, flipped image, before `ColorJitter`: one operation a sample, drawn with its magnitude
/// (`crate::plan::auto_augment`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrivialAugment {
    /// The magnitudes' bins; torchvision's default 31.
    pub bins: u32,
    /// The RGB value of the pixels no source pixel maps to in the shears, translations and
    /// rotations; default black.
    pub fill: [u8; 3],
    /// How the shears, translations and rotations sample the image: `Filter::Nearest`
    /// (torchvision's default), `Filter::Bilinear` or `Filter::Bicubic`.
    pub interpolation: Filter,
    /// transforms.v2's policy: its Solarize threshold `255.0 * linspace(1.0, 0.0)[bin]` in
    /// doubles, where v1's bins hold `linspace(255.0, 0.0)` (the two differ for some bins: at
    /// bin 20 of 31, v2's is 85.0000025 and inverts from 86, v1's 85.0 from 85); default false,
    /// v1's.
    pub v2: bool,
}

impl Default for TrivialAugment {
    fn default() -> Self {
        Self {
            bins: 31,
            fill: [0; 3],
            interpolation: Filter::Nearest,
            v2: false,
        }
    }
}

/// The most operations one image's augmentation applies in a row (`RandAugment`'s `num_ops`):
/// the GPU's colour job has room for as many steps.
pub const MAX_AUGMENT_OPS: u32 = 4;

/// torchvision `RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation, fill)`
/// of the cropped, flipped image, before `ColorJitter`: `num_ops` operations a sample, each drawn
/// from its augmentation space and applied in turn at the one magnitude (`crate::plan::auto_augment`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandAugment {
    /// Operations applied one after another; torchvision's default 2.
    pub num_ops: u32,
    /// The bin of every operation's magnitude; default 9.
    pub magnitude: u32,
    /// The magnitudes' bins; default 31.
    pub bins: u32,
    /// The RGB value of the pixels no source pixel maps to; default black.
    pub fill: [u8; 3],
    /// How the shears, translations and rotations sample the image: `Filter::Nearest`
    /// (torchvision's default), `Filter::Bilinear` or `Filter::Bicubic`.
    pub interpolation: Filter,
    /// transforms.v2's policy: its Solarize threshold `255.0 * linspace(1.0, 0.0)[bin]` in
    /// doubles, where v1's bins hold `linspace(255.0, 0.0)` (the two differ for some bins: at
    /// bin 20 of 31, v2's is 85.0000025 and inverts from 86, v1's 85.0 from 85); default false,
    /// v1's.
    pub v2: bool,
}

impl Default for RandAugment {
    fn default() -> Self {
        Self {
            num_ops: 2,
            magnitude: 9,
            bins: 31,
            fill: [0; 3],
            interpolation: Filter::Nearest,
            v2: false,
        }
    }
}

/// The datasets torchvision's `AutoAugmentPolicy` learned its policies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoAugmentPolicy {
    /// `AutoAugmentPolicy.IMAGENET`.
    ImageNet,
    /// `AutoAugmentPolicy.CIFAR10`.
    Cifar10,
    /// `AutoAugmentPolicy.SVHN`.
    Svhn,
}

impl AutoAugmentPolicy {
    /// Every policy.
    pub const ALL: [Self; 3] = [Self::ImageNet, Self::Cifar10, Self::Svhn];

    /// torchvision's value of the policy (`AutoAugmentPolicy(name)`).
    pub fn name(self) -> &'static str {
        match self {
            Self::ImageNet => "imagenet",
            Self::Cifar10 => "cifar10",
            Self::Svhn => "svhn",
        }
    }

    /// The policy torchvision's value `name` names.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// torchvision `AutoAugment(policy, interpolation, fill)` of the cropped, flipped image,
/// before `ColorJitter`: one of the policy's 25 sub-policies a sample, each of its two operations
/// applied with its probability at its magnitude (`crate::plan::auto_augment`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoAugment {
    /// The policy; torchvision's default ImageNet's.
    pub policy: AutoAugmentPolicy,
    /// The RGB value of the pixels no source pixel maps to; default black.
    pub fill: [u8; 3],
    /// How the shears, translations and rotations sample the image: `Filter::Nearest`
    /// (torchvision's default), `Filter::Bilinear` or `Filter::Bicubic`.
    pub interpolation: Filter,
    /// transforms.v2's policy: its Solarize threshold `255.0 * linspace(1.0, 0.0)[bin]` in
    /// doubles, where v1's bins hold `linspace(255.0, 0.0)` (the two differ for some bins: at
    /// bin 20 of 31, v2's is 85.0000025 and inverts from 86, v1's 85.0 from 85); default false,
    /// v1's.
    pub v2: bool,
}

impl Default for AutoAugment {
    fn default() -> Self {
        Self {
            policy: AutoAugmentPolicy::ImageNet,
            fill: [0; 3],
            interpolation: Filter::Nearest,
            v2: false,
        }
    }
}

/// timm's `rand_augment_transform(config_str, hparams)` (timm/data/auto_augment.py) of the
/// cropped, flipped image, in `RandAugment`'s place: `num_ops` of timm's fifteen operations a
/// sample (drawn with replacement), each applied with probability `prob` at a magnitude drawn
/// about `magnitude` (`crate::plan::timm_augment`). timm's own operation set and level rules, not
/// torchvision's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimmRandAugment {
    /// Operations drawn a sample (`n`); default 2.
    pub num_ops: u32,
    /// The magnitude (`m`), on timm's scale of 0 to 10; default 10.
    pub magnitude: f64,
    /// The standard deviation of the magnitude's noise (`mstd`): 0 for none, infinity (timm's
    /// `mstd` above 100) for a uniform magnitude in 0 to `magnitude`; default 0.
    pub magnitude_std: f64,
    /// The most the magnitude may be once drawn (`mmax`); default (`None`) 10.
    pub magnitude_max: Option<f64>,
    /// Each drawn operation's probability of applying (`p`); default 0.5.
    pub prob: f64,
    /// timm's "increasing" operation set (`inc1`), in which every operation grows stronger with
    /// the magnitude; default false.
    pub increasing: bool,
    /// The largest translation, a share of the side (hparams' `translate_pct`); default 0.45.
    pub translate_pct: f64,
    /// The fill of the shears, translations and rotations (hparams' `img_mean`; create_transform
    /// passes the normalisation's mean in 0..=255); default timm's (128, 128, 128).
    pub fill: [u8; 3],
    /// Their sampling (hparams' `interpolation`); `None`, timm's default, draws bilinear or
    /// bicubic for each operation.
    pub interpolation: Option<Filter>,
}

impl Default for TimmRandAugment {
    fn default() -> Self {
        Self {
            num_ops: 2,
            magnitude: 10.0,
            magnitude_std: 0.0,
            magnitude_max: None,
            prob: 0.5,
            increasing: false,
            translate_pct: 0.45,
            fill: [128; 3],
            interpolation: None,
        }
    }
}

impl TimmRandAugment {
    /// timm's configuration string, `rand-m9-n2-mstd0.5-mmax10-inc1-p0.5` (sections in any
    /// order after `rand`, each optional), over the defaults; the weighted and custom operation
    /// sets (`t...`) are refused by name.
    pub fn parse(config: &str) -> Result<Self, String> {
        let mut sections = config.split('-');
        if sections.next() != Some("rand") {
            return Err(format!(
                "a timm RandAugment string starts with `rand-`, got {config:?}"
            ));
        }
        let mut r = Self::default();
        // timm keeps the first mstd and mmax (hparams.setdefault), the last of the others.
        let (mut std_given, mut max_given) = (false, false);
        for section in sections {
            if section.starts_with('t') {
                return Err(format!(
                    "timm's RandAugment operation set {section:?} is not supported by gpuprep \
                     (its default and `inc1` sets are)"
                ));
            }
            // timm splits at the first digit: the key before it, the number from it.
            let Some(at) = section.find(|c: char| c.is_ascii_digit()) else {
                continue; // timm skips a section without a number
            };
            let (key, value) = section.split_at(at);
            let number = value
                .parse::<f64>()
                .map_err(|_| format!("{key}{value}: {value:?} is not a number"))?;
            let integer = || -> Result<u32, String> {
                value
                    .parse::<u32>()
                    .map_err(|_| format!("{key}{value}: timm takes an integer here"))
            };
            match key {
                "m" => r.magnitude = f64::from(integer()?),
                "n" => r.num_ops = integer()?,
                "mstd" if !std_given => {
                    std_given = true;
                    r.magnitude_std = if number > 100.0 {
                        f64::INFINITY
                    } else {
                        number
                    }
                }
                "mmax" if !max_given => {
                    max_given = true;
                    r.magnitude_max = Some(f64::from(integer()?))
                }
                "mstd" | "mmax" => {}
                // timm's `bool(int(val))`, the last one counting.
                "inc" => r.increasing = integer()? != 0,
                "p" => r.prob = number,
                _ => return Err(format!("unknown timm RandAugment section {section:?}")),
            }
        }
        Ok(r)
    }

    /// timm's upper bound of a drawn magnitude: `magnitude_max or 10`.
    pub fn upper_bound(&self) -> f64 {
        self.magnitude_max.filter(|&m| m != 0.0).unwrap_or(10.0)
    }
}

impl TimmRandAugment {
    /// A timm `RandAugment` gpuprep computes: at most [`MAX_AUGMENT_OPS`] operations, finite
    /// magnitudes (the noise may be infinite: uniform), a probability, a translation share within
    /// Pillow's fixed-point reach.
    pub fn check(&self) -> Result<(), super::InvalidTransform> {
        let r = self;
        if r.num_ops > MAX_AUGMENT_OPS {
            return Err(super::InvalidTransform(format!(
                "timm_rand_augment applies at most {MAX_AUGMENT_OPS} operations an image, not {}",
                r.num_ops
            )));
        }
        let upper = r.upper_bound();
        let fits = |v: f64, top: f64| (0.0..=top).contains(&v);
        let refused = |what: &str, value: f64| {
            Err(super::InvalidTransform(format!(
                "timm_rand_augment's {what}, got {value}"
            )))
        };
        if !fits(r.magnitude, f64::MAX) {
            return refused("magnitude is a finite number of at least 0", r.magnitude);
        }
        if !fits(upper, 30.0) {
            return refused("magnitude_max is 0 to 30 (30: a shear of 0.9)", upper);
        }
        if r.magnitude_std.is_nan() || r.magnitude_std < 0.0 {
            return refused("magnitude_std is at least 0", r.magnitude_std);
        }
        // timm applies an operation of probability 1 or more always.
        if !fits(r.prob, f64::MAX) {
            return refused("probability is a finite number of at least 0", r.prob);
        }
        if !fits(r.translate_pct, 1.0) {
            return refused("translate_pct is 0 to 1", r.translate_pct);
        }
        Ok(())
    }
}

/// timm's AutoAugment policies (timm/data/auto_augment.py's `auto_augment_policy`): sub-policies
/// of timm's operations, each with a probability and a magnitude.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimmAutoAugmentPolicy {
    /// `original`: the AutoAugment paper's ImageNet policy.
    Original,
    /// `originalr`: as `original`, posterizing with the research form (more bits dropped as the
    /// magnitude grows).
    OriginalR,
    /// `v0`: the ImageNet policy of TPU EfficientNet.
    V0,
    /// `v0r`: as `v0`, posterizing with the research form.
    V0R,
    /// `3a`: DeiT III's three-augment, one of solarize (from 128), grey (`Desaturate`) and
    /// Pillow's Gaussian blur of a radius drawn in 0.1 to 2 (`GaussianBlurRand`).
    ThreeA,
}

impl TimmAutoAugmentPolicy {
    /// Every policy.
    pub const ALL: [Self; 5] = [
        Self::Original,
        Self::OriginalR,
        Self::V0,
        Self::V0R,
        Self::ThreeA,
    ];

    /// timm's name of the policy.
    pub fn name(self) -> &'static str {
        match self {
            Self::Original => "original",
            Self::OriginalR => "originalr",
            Self::V0 => "v0",
            Self::V0R => "v0r",
            Self::ThreeA => "3a",
        }
    }

    /// The policy timm's name `name` names.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// timm's `auto_augment_transform(config_str, hparams)` (timm/data/auto_augment.py) of the
/// cropped, flipped image, in `RandAugment`'s place: one of the policy's sub-policies a sample,
/// each of its operations applied with its probability at a magnitude drawn about its own
/// (`crate::plan::timm_augment`). timm's own operations and level rules, not torchvision's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimmAutoAugment {
    /// The policy; timm's default `v0`.
    pub policy: TimmAutoAugmentPolicy,
    /// The standard deviation of the magnitudes' noise (`mstd`): 0 for none, infinity (given
    /// in timm's hparams) for a uniform magnitude in 0 to the operation's; default 0.
    pub magnitude_std: f64,
    /// The largest translation, a share of the side (hparams' `translate_pct`); default 0.45.
    pub translate_pct: f64,
    /// The fill of the shears, translations and rotations (hparams' `img_mean`; create_transform
    /// passes the normalisation's mean in 0..=255); default timm's (128, 128, 128).
    pub fill: [u8; 3],
    /// Their sampling (hparams' `interpolation`); `None`, timm's default, draws bilinear or
    /// bicubic for each operation.
    pub interpolation: Option<Filter>,
}

impl Default for TimmAutoAugment {
    fn default() -> Self {
        Self {
            policy: TimmAutoAugmentPolicy::V0,
            magnitude_std: 0.0,
            translate_pct: 0.45,
            fill: [128; 3],
            interpolation: None,
        }
    }
}

impl TimmAutoAugment {
    /// timm's configuration string, `original-mstd0.5` (the policy's name, then optional
    /// sections, of which timm knows `mstd`), over the defaults.
    pub fn parse(config: &str) -> Result<Self, String> {
        let mut sections = config.split('-');
        let name = sections.next().unwrap_or("");
        let policy = match TimmAutoAugmentPolicy::named(name) {
            Some(policy) => policy,
            None => {
                return Err(format!(
                    "a timm AutoAugment string starts with original, originalr, v0, v0r or 3a, \
                     got {config:?}"
                ))
            }
        };
        let mut a = Self {
            policy,
            ..Self::default()
        };
        let mut std_given = false;
        for section in sections {
            // timm splits at the first digit and skips a section without one.
            let Some(at) = section.find(|c: char| c.is_ascii_digit()) else {
                continue;
            };
            let (key, value) = section.split_at(at);
            if key != "mstd" {
                return Err(format!(
                    "unknown timm AutoAugment section {section:?} (timm knows mstd)"
                ));
            }
            let number = value
                .parse::<f64>()
                .map_err(|_| format!("{key}{value}: {value:?} is not a number"))?;
            // timm keeps the first (hparams.setdefault), as a Gaussian's deviation however
            // large (its RandAugment strings alone read one above 100 as uniform).
            if !std_given {
                std_given = true;
                a.magnitude_std = number;
            }
        }
        Ok(a)
    }

    /// A timm `AutoAugment` gpuprep computes: a noise of at least 0, a translation share within
    /// Pillow's fixed-point reach.
    pub fn check(&self) -> Result<(), super::InvalidTransform> {
        if self.magnitude_std.is_nan() || self.magnitude_std < 0.0 {
            return Err(super::InvalidTransform(format!(
                "timm_auto_augment's magnitude_std is at least 0, got {}",
                self.magnitude_std
            )));
        }
        if !(0.0..=1.0).contains(&self.translate_pct) {
            return Err(super::InvalidTransform(format!(
                "timm_auto_augment's translate_pct is 0 to 1, got {}",
                self.translate_pct
            )));
        }
        Ok(())
    }
}

/// The most steps one image's [`TimmAugMix`] takes: keeping the image, each chain's operations
/// and its sum into the mix, and the final blend (timm's default three chains of up to three
/// operations take 14; blended, one step fewer).
pub const MAX_MIXED_STEPS: u32 = 14;

/// timm's `augment_and_mix_transform(config_str, hparams)` (timm/data/auto_augment.py's
/// `AugMixAugment`) of the cropped, flipped image, in `RandAugment`'s place: mixing weights from
/// a Dirichlet and a blend factor from a Beta distribution; `width` chains of `depth` (or 1 to 3)
/// of timm's AugMix operations, each run on the image; their weighted sum in float32 (numpy's),
/// clipped and truncated to uint8, then `Image.blend` of the image with it; or, `blended`, each
/// chain's image blended in turn into the image by weights made of those
/// (`crate::plan::timm_augment`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimmAugMix {
    /// The operations' magnitude (severity, `m`); default 3.
    pub magnitude: f64,
    /// The chains (`w`); default 3.
    pub width: u32,
    /// Operations a chain (`d`); `None` (timm's -1, default) draws 1 to 3 for each chain.
    pub depth: Option<u32>,
    /// The Dirichlet's and the Beta's parameter (`a`); default 1.
    pub alpha: f64,
    /// The standard deviation of the magnitude's noise (`mstd`): 0 for none; default infinity,
    /// timm's for AugMix: a uniform magnitude in 0 to `magnitude`.
    pub magnitude_std: f64,
    /// The largest translation, a share of the side (hparams' `translate_pct`; create_transform
    /// passes 0.3 for AugMix); default 0.45.
    pub translate_pct: f64,
    /// The fill of the shears, translations and rotations (hparams' `img_mean`); default timm's
    /// (128, 128, 128).
    pub fill: [u8; 3],
    /// Their sampling (hparams' `interpolation`); `None`, timm's default, draws bilinear or
    /// bicubic for each operation.
    pub interpolation: Option<Filter>,
    /// timm's blended form (`b1`): `_apply_blended`'s one `Image.blend` per chain, by the
    /// weights `_calc_blended_weights` makes of the mix's in float32, not the float32 sum;
    /// default false.
    pub blended: bool,
}

impl Default for TimmAugMix {
    fn default() -> Self {
        Self {
            magnitude: 3.0,
            width: 3,
            depth: None,
            alpha: 1.0,
            magnitude_std: f64::INFINITY,
            translate_pct: 0.45,
            fill: [128; 3],
            interpolation: None,
            blended: false,
        }
    }
}

impl TimmAugMix {
    /// timm's configuration string, `augmix-m5-w4-d2-a0.5-mstd0.5-b1` (sections in any order
    /// after `augmix`, each optional), over the defaults: `b1` is the blended form, `b0` not.
    pub fn parse(config: &str) -> Result<Self, String> {
        let mut sections = config.split('-');
        if sections.next() != Some("augmix") {
            return Err(format!(
                "a timm AugMix string starts with `augmix-`, got {config:?}"
            ));
        }
        let mut a = Self::default();
        let mut std_given = false;
        for section in sections {
            // timm splits at the first digit and skips a section without one.
            let Some(at) = section.find(|c: char| c.is_ascii_digit()) else {
                continue;
            };
            let (key, value) = section.split_at(at);
            let number = || {
                value
                    .parse::<f64>()
                    .map_err(|_| format!("{key}{value}: {value:?} is not a number"))
            };
            let integer = || {
                value
                    .parse::<u32>()
                    .map_err(|_| format!("{key}{value}: timm takes an integer here"))
            };
            match key {
                "m" => a.magnitude = f64::from(integer()?),
                "w" => a.width = integer()?,
                "d" => a.depth = Some(integer()?).filter(|&d| d > 0),
                "a" => a.alpha = number()?,
                // timm's `bool(int(val))`, the last one counting.
                "b" => a.blended = integer()? != 0,
                // timm keeps the first (hparams.setdefault).
                "mstd" if !std_given => {
                    std_given = true;
                    a.magnitude_std = number()?;
                }
                "mstd" => {}
                _ => return Err(format!("unknown timm AugMix section {section:?}")),
            }
        }
        Ok(a)
    }

    /// The most operations one chain runs.
    pub fn max_depth(&self) -> u32 {
        self.depth.unwrap_or(3)
    }

    /// A timm `AugMix` gpuprep computes: chains whose steps fit [`MAX_MIXED_STEPS`], a positive
    /// alpha, a magnitude and noise of at least 0, a translation share within Pillow's
    /// fixed-point reach.
    pub fn check(&self) -> Result<(), super::InvalidTransform> {
        let refused = |what: String| Err(super::InvalidTransform(format!("timm_aug_mix's {what}")));
        if self.width == 0 {
            return refused("width is at least 1 (no chains blends the image with black)".into());
        }
        // Keeping the image, each chain's operations and its sum, and the blend of the sum (the
        // blended form, one step fewer, is held to the same bound, which sizes the GPU's record
        // of maps).
        let steps = u64::from(self.width) * (u64::from(self.max_depth()) + 1) + 2;
        if steps > u64::from(MAX_MIXED_STEPS) {
            return refused(format!(
                "chains take at most {MAX_MIXED_STEPS} steps (width x (depth + 1) + 2: three \
                 chains of up to three operations), got width {} and depth {}",
                self.width,
                self.max_depth()
            ));
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return refused(format!(
                "alpha is a finite number above 0, got {}",
                self.alpha
            ));
        }
        if !(self.magnitude.is_finite() && self.magnitude >= 0.0) {
            return refused(format!(
                "magnitude is a finite number of at least 0, got {}",
                self.magnitude
            ));
        }
        if self.magnitude_std.is_nan() || self.magnitude_std < 0.0 {
            return refused(format!(
                "magnitude_std is at least 0, got {}",
                self.magnitude_std
            ));
        }
        if !(0.0..=1.0).contains(&self.translate_pct) {
            return refused(format!(
                "translate_pct is 0 to 1, got {}",
                self.translate_pct
            ));
        }
        Ok(())
    }
}
