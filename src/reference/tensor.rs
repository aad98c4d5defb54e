//! The last stage: centre crop (with torchvision's zero padding), `ToTensor` + `Normalize`
//! through a 3×256 float32 table, layout, dtype and channel order (PARITY §4–5).

use super::resample::Image8;
use crate::tensor::{Tensor, TensorData};
use crate::transform::{ChannelOrder, DType, Layout, Transform};

/// Python's `round(d / 2.0)` for an integer `d ≥ 0`: halves go to the even neighbour.
pub fn half_round_even(d: usize) -> usize {
    let k = d / 2;
    if d % 2 == 1 && k % 2 == 1 {
        k + 1
    } else {
        k
    }
}

/// Where a `CenterCrop` of `crop` samples takes its first sample in an axis of `size` samples:
/// negative when the axis is zero-padded first (torchvision pads (crop − size) // 2 before).
pub fn crop_offset(size: usize, crop: usize) -> isize {
    if crop > size {
        -(((crop - size) / 2) as isize)
    } else {
        half_round_even(size - crop) as isize
    }
}

/// The value table: for each RGB channel and 8-bit sample, the output value as float32,
/// computed in torchvision's order (v / 255, − mean, / std), so every backend gets the same bits.
pub fn value_table(transform: &Transform) -> [[f32; 256]; 3] {
    std::array::from_fn(|c| {
        std::array::from_fn(|v| {
            let t = v as f32 / 255.0;
            match transform.normalize {
                Some(n) => (t - n.mean[c]) / n.std[c],
                None => t,
            }
        })
    })
}

/// Input channel of output channel `c`.
fn source_channel(order: ChannelOrder, c: usize) -> usize {
    match order {
        ChannelOrder::Rgb => c,
        ChannelOrder::Bgr => 2 - c,
    }
}

/// The sample of `image` under output position (`x`, `y`), channel `c` (RGB order), after the
/// centre crop; zero in the padding.
#[inline]
pub fn cropped_sample(image: &Image8, crop: (usize, usize), x: usize, y: usize, c: usize) -> u8 {
    let sx = crop_offset(image.width, crop.0) + x as isize;
    let sy = crop_offset(image.height, crop.1) + y as isize;
    if sx < 0 || sy < 0 || sx >= image.width as isize || sy >= image.height as isize {
        return 0;
    }
    image.data[(sy as usize * image.width + sx as usize) * image.channels + c]
}

/// Crops `image` to `crop` (or keeps its size) and turns it into the output tensor.
pub fn to_tensor(image: &Image8, transform: &Transform) -> Tensor {
    let crop = transform.center_crop.unwrap_or((image.width, image.height));
    let (w, h) = crop;
    let table = value_table(transform);
    let shape = transform.output_shape(image.width, image.height);
    let sample = |i: usize| {
        let (c, y, x) = match transform.layout {
            Layout::Hwc => (i % 3, i / 3 / w, i / 3 % w),
            Layout::Chw => (i / (w * h), i / w % h, i % w),
        };
        let src = source_channel(transform.channel_order, c);
        (src, cropped_sample(image, crop, x, y, src))
    };
    let n = w * h * 3;
    let data = match transform.dtype {
        DType::U8 => TensorData::U8((0..n).map(|i| sample(i).1).collect()),
        DType::F32 => TensorData::F32(
            (0..n)
                .map(|i| {
                    let (c, v) = sample(i);
                    table[c][usize::from(v)]
                })
                .collect(),
        ),
        DType::F16 => TensorData::F16(
            (0..n)
                .map(|i| {
                    let (c, v) = sample(i);
                    half::f16::from_f32(table[c][usize::from(v)])
                })
                .collect(),
        ),
    };
    Tensor { shape, data }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crop_offsets_round_half_to_even() {
        assert_eq!(crop_offset(341, 224), 58); // 117 / 2 = 58.5 → 58
        assert_eq!(crop_offset(259, 224), 18); // 35 / 2 = 17.5 → 18
        assert_eq!(crop_offset(200, 224), -12);
        assert_eq!(crop_offset(201, 224), -11);
    }

    #[test]
    fn imagenet_table_matches_torchvision_order() {
        let table = value_table(&Transform::imagenet_eval());
        let expected = ((255.0f32 / 255.0) - 0.485f32) / 0.229f32;
        assert_eq!(table[0][255].to_bits(), expected.to_bits());
    }
}
