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
    let shape = transform.output_shape(image.width, image.height);
    let samples = cropped_samples(image, crop, transform);
    let table = value_table(transform);
    let data = match transform.dtype {
        DType::U8 => TensorData::U8(samples),
        DType::F32 => TensorData::F32(through_table(&samples, transform, &table)),
        DType::F16 => {
            let table = table.map(|channel| channel.map(half::f16::from_f32));
            TensorData::F16(through_table(&samples, transform, &table))
        }
    };
    Tensor { shape, data }
}

/// The 8-bit samples of the output, in its layout and channel order: [`cropped_sample`] for
/// every element, a row at a time.
fn cropped_samples(image: &Image8, (w, h): (usize, usize), transform: &Transform) -> Vec<u8> {
    let (ox, oy) = (crop_offset(image.width, w), crop_offset(image.height, h));
    let sources: [usize; 3] = std::array::from_fn(|c| source_channel(transform.channel_order, c));
    let mut out = vec![0u8; w * h * 3];
    // Output columns x0..x1 lie on the image; the others are padding.
    let x0 = (-ox).clamp(0, w as isize) as usize;
    let x1 = (image.width as isize - ox).clamp(x0 as isize, w as isize) as usize;
    let row_len = image.width * image.channels;
    for y in 0..h {
        let sy = oy + y as isize;
        if sy < 0 || sy >= image.height as isize {
            continue;
        }
        let row = &image.data[sy as usize * row_len..][..row_len];
        for x in x0..x1 {
            let pixel = &row[(ox + x as isize) as usize * image.channels..];
            for (c, &src) in sources.iter().enumerate() {
                let at = match transform.layout {
                    Layout::Hwc => (y * w + x) * 3 + c,
                    Layout::Chw => (c * h + y) * w + x,
                };
                out[at] = pixel[src];
            }
        }
    }
    out
}

/// Maps each output sample through its channel's value table (indexed by source channel).
fn through_table<T: Copy>(samples: &[u8], transform: &Transform, table: &[[T; 256]; 3]) -> Vec<T> {
    let tables: [&[T; 256]; 3] =
        std::array::from_fn(|c| &table[source_channel(transform.channel_order, c)]);
    let mut out = Vec::with_capacity(samples.len());
    match transform.layout {
        Layout::Chw => {
            let plane = samples.len() / 3;
            for (c, table) in tables.iter().enumerate() {
                let channel = &samples[c * plane..][..plane];
                out.extend(channel.iter().map(|&v| table[usize::from(v)]));
            }
        }
        Layout::Hwc => {
            for pixel in samples.chunks_exact(3) {
                out.extend((0..3).map(|c| tables[c][usize::from(pixel[c])]));
            }
        }
    }
    out
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
    fn whole_tensor_equals_the_per_sample_spec() {
        let image = Image8 {
            width: 7,
            height: 5,
            channels: 3,
            data: (0..105).map(|i| (i * 29 % 256) as u8).collect(),
        };
        for crop in [
            None,
            Some((3, 3)),
            Some((4, 2)),
            Some((10, 8)),
            Some((9, 3)),
        ] {
            for layout in [Layout::Hwc, Layout::Chw] {
                for channel_order in [ChannelOrder::Rgb, ChannelOrder::Bgr] {
                    let transform = Transform {
                        center_crop: crop,
                        layout,
                        channel_order,
                        dtype: DType::F32,
                        ..Transform::tensor(crate::transform::Normalize::IMAGENET)
                    };
                    let (w, h) = crop.unwrap_or((7, 5));
                    let table = value_table(&transform);
                    let TensorData::F32(values) = to_tensor(&image, &transform).data else {
                        panic!("f32 asked for");
                    };
                    for y in 0..h {
                        for x in 0..w {
                            for c in 0..3 {
                                let src = source_channel(channel_order, c);
                                let at = match layout {
                                    Layout::Hwc => (y * w + x) * 3 + c,
                                    Layout::Chw => (c * h + y) * w + x,
                                };
                                let v = cropped_sample(&image, (w, h), x, y, src);
                                assert_eq!(
                                    values[at].to_bits(),
                                    table[src][usize::from(v)].to_bits()
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn imagenet_table_matches_torchvision_order() {
        let table = value_table(&Transform::imagenet_eval());
        let expected = ((255.0f32 / 255.0) - 0.485f32) / 0.229f32;
        assert_eq!(table[0][255].to_bits(), expected.to_bits());
    }
}
