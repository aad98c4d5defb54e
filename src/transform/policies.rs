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
}

impl Default for TrivialAugment {
    fn default() -> Self {
        Self {
            bins: 31,
            fill: [0; 3],
            interpolation: Filter::Nearest,
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
}

impl Default for RandAugment {
    fn default() -> Self {
        Self {
            num_ops: 2,
            magnitude: 9,
            bins: 31,
            fill: [0; 3],
            interpolation: Filter::Nearest,
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
}

impl Default for AutoAugment {
    fn default() -> Self {
        Self {
            policy: AutoAugmentPolicy::ImageNet,
            fill: [0; 3],
            interpolation: Filter::Nearest,
        }
    }
}
