//! `RandomErasing`: torchvision's (`value` a number per channel or `'random'`) and timm's
//! (modes `const`, `rand` and `pixel`, `min_count`/`max_count` boxes) on the output tensor.

use super::{DType, InvalidTransform};

/// The most boxes one image may have erased (timm's `max_count`): the GPU reads each image's
/// boxes from a list of this length at most.
pub const MAX_ERASED_BOXES: u32 = 16;

/// torchvision `RandomErasing(p, scale, ratio, value)` or timm's `RandomErasing` on the output
/// tensor: with probability `p`, `count` random boxes of it are set to `value`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomErasing {
    /// Probability of erasing.
    pub p: f64,
    /// Bounds of the boxes' share of the image's area (shared by the `count` boxes, as timm
    /// divides it); torchvision's default (0.02, 0.33).
    pub scale: (f64, f64),
    /// Bounds of a box's aspect ratio (height / width); default (0.3, 3.3).
    pub ratio: (f64, f64),
    /// What the boxes are set to.
    pub value: ErasedValue,
    /// How many boxes an image that is erased gets, drawn uniformly from this inclusive range
    /// (timm's `min_count`, `max_count`); torchvision's one box is (1, 1).
    pub count: (u32, u32),
}

/// What `RandomErasing` writes into a box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ErasedValue {
    /// One value per output channel, in the tensor's element type (torchvision's number or
    /// sequence, timm's `'const'` zeros).
    Constant([f32; 3]),
    /// A standard normal value per channel, one draw a box (timm's `'rand'`).
    NormalPerChannel,
    /// A standard normal value per element of the box (torchvision's `value='random'`, timm's
    /// `'pixel'`).
    NormalPerElement,
}

impl RandomErasing {
    /// torchvision's defaults with probability `p`: one box of zeros.
    pub fn new(p: f64) -> Self {
        Self {
            p,
            scale: (0.02, 0.33),
            ratio: (0.3, 3.3),
            value: ErasedValue::Constant([0.0; 3]),
            count: (1, 1),
        }
    }

    /// Whether the boxes hold drawn normal values rather than the transform's constants.
    pub fn is_noise(&self) -> bool {
        !matches!(self.value, ErasedValue::Constant(_))
    }

    /// Whether the boxes hold a normal value per element (the GPU then reads the noise's
    /// table).
    pub fn draws_per_element(&self) -> bool {
        self.value == ErasedValue::NormalPerElement
    }

    /// Refuses ranges torchvision refuses, counts beyond [`MAX_ERASED_BOXES`], and values an
    /// output of `dtype` cannot hold (normal values in a uint8 tensor: timm's `normal_` refuses
    /// an integer tensor, and torchvision casts negative values in a way that depends on the
    /// platform).
    pub(crate) fn validate(&self, dtype: DType) -> Result<(), InvalidTransform> {
        let invalid = |why: String| Err(InvalidTransform(why));
        let (s0, s1) = self.scale;
        let (r0, r1) = self.ratio;
        let constant = match self.value {
            ErasedValue::Constant(value) => Some(value),
            _ => None,
        };
        if !(0.0 <= s0 && s0 <= s1 && s1 <= 1.0 && r0 > 0.0 && r0 <= r1 && r1.is_finite())
            || constant.is_some_and(|value| value.iter().any(|v| !v.is_finite()))
        {
            return invalid(format!(
                "random_erasing needs 0 <= scale.0 <= scale.1 <= 1, 0 < ratio.0 <= ratio.1 and \
                 finite values, got scale {:?}, ratio {:?}, value {:?}",
                self.scale, self.ratio, self.value
            ));
        }
        let (low, high) = self.count;
        if !(1 <= low && low <= high && high <= MAX_ERASED_BOXES) {
            return invalid(format!(
                "random_erasing's count (timm's min_count, max_count) must be 1 <= min <= max <= \
                 {MAX_ERASED_BOXES}, got {low}..={high}"
            ));
        }
        if dtype == DType::U8 {
            match constant {
                None => {
                    return invalid(
                        "random_erasing's normal values need a float32 or float16 output \
                         (ToTensor or ConvertImageDtype before it; --normalize or --dtype f32 on \
                         the command line): timm's normal_ refuses a uint8 tensor, and \
                         torchvision casts negative values into one in a way that depends on the \
                         platform"
                            .into(),
                    )
                }
                Some(value)
                    if value
                        .iter()
                        .any(|v| v.fract() != 0.0 || !(0.0..=255.0).contains(v)) =>
                {
                    return invalid(
                        "random_erasing's values must be integers 0..=255 for u8 outputs".into(),
                    )
                }
                Some(_) => {}
            }
        }
        if !(0.0..=1.0).contains(&self.p) {
            return invalid(format!(
                "random_erasing's probability must lie in [0, 1], got {}",
                self.p
            ));
        }
        Ok(())
    }
}
