//! Pillow's whole-image colour operations, each with the argument it is given: the steps of the
//! colour stage, which `ColorJitter`, `TrivialAugmentWide`, `RandomGrayscale` and the
//! single-operation transforms ([`super::COLOR_OPERATIONS`]) all draw from, and which both
//! backends run in order (src/reference/adjust.rs, shaders/adjust.wgsl).

/// One of Pillow's colour operations with its argument (the float32 value Pillow is given).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Adjustment {
    /// `ImageEnhance.Brightness(img).enhance(factor)`.
    Brightness(f32),
    /// `ImageEnhance.Contrast(img).enhance(factor)`.
    Contrast(f32),
    /// `ImageEnhance.Color(img).enhance(factor)`.
    Saturation(f32),
    /// torchvision's `adjust_hue(img, factor)`.
    Hue(f32),
    /// `ImageEnhance.Sharpness(img).enhance(factor)`: blended with the image smoothed by
    /// `ImageFilter.SMOOTH`.
    Sharpness(f32),
    /// `ImageOps.posterize(img, bits)`: each value's low `8 - bits` bits cleared.
    Posterize(u8),
    /// `ImageOps.solarize(img, threshold)`: the values from this one (the first at or above the
    /// threshold; 256 for none) inverted. From 0 it is `ImageOps.invert`.
    Solarize(u16),
    /// timm's `solarize_add(img, add)`: `add` added to the values below 128, clipped at 255.
    SolarizeAdd(u8),
    /// `ImageOps.autocontrast(img)`: each channel's range stretched to 0..=255.
    AutoContrast,
    /// `ImageOps.equalize(img)`: each channel's histogram equalised.
    Equalize,
    /// `img.convert('L').convert('RGB')` (`RandomGrayscale`): three equal channels of the luma.
    Grayscale,
    /// `img.filter(ImageFilter.GaussianBlur(radius))` (timm's `GaussianBlurRand`): Pillow's
    /// box blurs of the radius (`crate::plan::BoxBlur`), not torchvision's `GaussianBlur`.
    PillowGaussianBlur(f32),
}

impl Adjustment {
    /// `ImageOps.solarize(img, threshold)`: it inverts the values `i >= threshold`, so the first
    /// of them (256 for none, 0 for all).
    pub fn solarize(threshold: f64) -> Self {
        Self::Solarize(
            (0..256u16)
                .find(|&i| f64::from(i) >= threshold)
                .unwrap_or(256),
        )
    }

    /// The adjustment's name: torchvision's (`ColorJitter`'s parameters, `_functional_pil`'s
    /// functions), or Pillow's filter's.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Brightness(_) => "brightness",
            Self::Contrast(_) => "contrast",
            Self::Saturation(_) => "saturation",
            Self::Hue(_) => "hue",
            Self::Sharpness(_) => "sharpness",
            Self::Posterize(_) => "posterize",
            Self::Solarize(_) => "solarize",
            Self::SolarizeAdd(_) => "solarize_add",
            Self::AutoContrast => "autocontrast",
            Self::Equalize => "equalize",
            Self::Grayscale => "grayscale",
            Self::PillowGaussianBlur(_) => "pillow_gaussian_blur",
        }
    }

    /// The factor (the value, for posterize and solarize; the blur's radius; 0 for the others
    /// without one).
    pub fn factor(&self) -> f32 {
        match *self {
            Self::Brightness(f)
            | Self::Contrast(f)
            | Self::Saturation(f)
            | Self::Hue(f)
            | Self::Sharpness(f)
            | Self::PillowGaussianBlur(f) => f,
            Self::Posterize(bits) => f32::from(bits),
            Self::Solarize(from) => f32::from(from),
            Self::SolarizeAdd(add) => f32::from(add),
            Self::AutoContrast | Self::Equalize | Self::Grayscale => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solarize_inverts_from_the_first_value_at_or_above_the_threshold() {
        assert_eq!(Adjustment::solarize(255.0), Adjustment::Solarize(255));
        assert_eq!(Adjustment::solarize(246.5), Adjustment::Solarize(247));
        assert_eq!(Adjustment::solarize(0.0), Adjustment::Solarize(0));
        assert_eq!(Adjustment::solarize(-3.0), Adjustment::Solarize(0));
        assert_eq!(Adjustment::solarize(300.0), Adjustment::Solarize(256));
    }
}
