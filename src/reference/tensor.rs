//! The last stage: the padding, the centre or random crop, the flips, `ToTensor` + `Normalize`
//! through the plan's value table, layout, dtype and channel order (PARITY §4–5), as
//! shaders/tensor.wgsl computes it;
//! with a rotation or colour adjustments, the cropped image goes through [`super::rotate`] and
//! [`super::adjust`] first. The geometry
//! and the table come from [`crate::plan::OutputPlan`].

use super::resample::Image8;
use crate::plan::{Crop, OutputPlan, Params, Step};
use crate::tensor::{Tensor, TensorData};
use crate::transform::{DType, Layout};
/// The sample of `image` under output position (`x`, `y`), channel `c` (RGB order), after
/// `crop`; zero in the padding.
#[cfg(test)]
#[inline]
pub fn cropped_sample(image: &Image8, crop: &Crop, x: usize, y: usize, c: usize) -> u8 {
    let sx = crop.x + x as isize;
    let sy = crop.y + y as isize;
    if sx < 0 || sy < 0 || sx >= image.width as isize || sy >= image.height as isize {
        return 0;
    }
    image.data[(sy as usize * image.width + sx as usize) * image.channels + c]
}

/// The image column and row under output position (`x`, `y`): the flips, then the crop.
#[cfg(test)]
#[inline]
pub fn source_position(plan: &OutputPlan, x: usize, y: usize) -> (isize, isize) {
    let x = if plan.horizontal_flip {
        plan.crop.width - 1 - x
    } else {
        x
    };
    let y = if plan.vertical_flip {
        plan.crop.height - 1 - y
    } else {
        y
    };
    (plan.crop.x + x as isize, plan.crop.y + y as isize)
}

/// Crops and flips the resized `image` as `plan` says, adjusts its colours, and turns it into
/// the output tensor (its `params` left empty for the caller).
pub fn to_tensor(image: &Image8, plan: &OutputPlan) -> Tensor {
    if !plan.padding.is_empty() {
        // Padded first, as torchvision pads the PIL image before it crops it.
        let unpadded = OutputPlan {
            padding: Vec::new(),
            ..plan.clone()
        };
        return to_tensor(&super::pad::pad(image, &plan.padding), &unpadded);
    }
    if plan.rotation.is_some() || !plan.steps.is_empty() {
        // Rotated and adjusted as an RGB image of the output's size, which then goes out as
        // it is.
        let mut rgb = Image8 {
            width: plan.crop.width,
            height: plan.crop.height,
            channels: 3,
            data: cropped_samples(image, &rgb_plan(plan)),
        };
        if let Some(rotation) = &plan.rotation {
            rgb = super::rotate::rotate(&rgb, rotation);
        }
        let (mut mixing, mut blending) = (None, None);
        for step in &plan.steps {
            match step {
                Step::Remap(map) => rgb = super::rotate::rotate(&rgb, map),
                Step::Adjust(adjustment) => super::adjust::adjust(&mut rgb, adjustment),
                Step::Blur(blur) => rgb = super::blur::blur(&rgb, blur),
                Step::KeepForMix => mixing = Some(super::mix::Mixing::keep(&rgb)),
                Step::AddToMix(weight) => {
                    if let Some(mixing) = &mut mixing {
                        mixing.add(&mut rgb, *weight);
                    }
                }
                Step::BlendMix(factor) => {
                    if let Some(mixing) = &mixing {
                        mixing.blend(&mut rgb, *factor);
                    }
                }
                Step::KeepForBlends => blending = Some(super::mix::Blending::keep(&rgb)),
                Step::BlendChain(factor) => {
                    if let Some(blending) = &mut blending {
                        blending.chain(&mut rgb, *factor);
                    }
                }
                Step::BlendLastChain(factor) => {
                    if let Some(blending) = &blending {
                        blending.last(&mut rgb, *factor);
                    }
                }
            }
        }
        let whole = OutputPlan {
            crop: Crop {
                x: 0,
                y: 0,
                ..plan.crop
            },
            horizontal_flip: false,
            vertical_flip: false,
            rotation: None,
            steps: Vec::new(),
            ..plan.clone()
        };
        return to_tensor(&rgb, &whole);
    }
    let mut tensor = to_tensor_unerased(image, plan);
    for erased in &plan.erase {
        erase(&mut tensor, plan.layout, erased);
    }
    tensor
}

/// `F.erase(tensor, top, left, height, width, v)`: the box set to its values (rounded to f16,
/// or the integer for u8).
fn erase(tensor: &mut Tensor, layout: Layout, erased: &crate::plan::Erased) {
    let b = erased.region;
    let [h, w] = match layout {
        Layout::Hwc => [tensor.shape[0], tensor.shape[1]],
        Layout::Chw => [tensor.shape[1], tensor.shape[2]],
    };
    let at = |c: usize, y: usize, x: usize| match layout {
        Layout::Hwc => (y * w + x) * 3 + c,
        Layout::Chw => (c * h + y) * w + x,
    };
    for c in 0..3 {
        for y in b.top..b.top + b.height {
            for x in b.left..b.left + b.width {
                let i = at(c, y, x);
                let value = erased.value(c, y - b.top, x - b.left);
                match &mut tensor.data {
                    TensorData::U8(v) => v[i] = value as u8,
                    TensorData::F32(v) => v[i] = value,
                    TensorData::F16(v) => v[i] = half::f16::from_f32(value),
                }
            }
        }
    }
}

/// [`to_tensor`] without the colour adjustments and the erasing.
fn to_tensor_unerased(image: &Image8, plan: &OutputPlan) -> Tensor {
    let samples = cropped_samples(image, plan);
    let table = plan.value_table();
    let data = match plan.dtype {
        DType::U8 => TensorData::U8(samples),
        DType::F32 => TensorData::F32(through_table(&samples, plan, &table)),
        DType::F16 => {
            let table = table.map(|channel| channel.map(half::f16::from_f32));
            TensorData::F16(through_table(&samples, plan, &table))
        }
    };
    Tensor {
        shape: plan.shape,
        data,
        params: Params::default(),
    }
}

/// `plan` writing H×W×3 RGB samples: the cropped, flipped image the adjustments work on.
fn rgb_plan(plan: &OutputPlan) -> OutputPlan {
    OutputPlan {
        layout: crate::transform::Layout::Hwc,
        channel_order: crate::transform::ChannelOrder::Rgb,
        shape: [plan.crop.height, plan.crop.width, 3],
        ..plan.clone()
    }
}

/// The 8-bit samples of the output, in its layout and channel order: [`cropped_sample`] at
/// [`source_position`] for every element, a row at a time.
fn cropped_samples(image: &Image8, plan: &OutputPlan) -> Vec<u8> {
    let Crop {
        width: w,
        height: h,
        x: ox,
        y: oy,
    } = plan.crop;
    let sources: [usize; 3] = std::array::from_fn(|c| plan.source_channel(c));
    let mut out = vec![0u8; w * h * 3];
    // Output columns x0..x1 lie on the image; the others are padding.
    let x0 = (-ox).clamp(0, w as isize) as usize;
    let x1 = (image.width as isize - ox).clamp(x0 as isize, w as isize) as usize;
    let row_len = image.width * image.channels;
    // Walked in the crop's own order; the flips pick where each sample lands.
    for y in 0..h {
        let sy = oy + y as isize;
        if sy < 0 || sy >= image.height as isize {
            continue;
        }
        let row = &image.data[sy as usize * row_len..][..row_len];
        let y = if plan.vertical_flip { h - 1 - y } else { y };
        for x in x0..x1 {
            let pixel = &row[(ox + x as isize) as usize * image.channels..];
            let x = if plan.horizontal_flip { w - 1 - x } else { x };
            for (c, &src) in sources.iter().enumerate() {
                let at = match plan.layout {
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
fn through_table<T: Copy>(samples: &[u8], plan: &OutputPlan, table: &[[T; 256]; 3]) -> Vec<T> {
    let tables: [&[T; 256]; 3] = std::array::from_fn(|c| &table[plan.source_channel(c)]);
    let mut out = Vec::with_capacity(samples.len());
    match plan.layout {
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
    use crate::transform::{ChannelOrder, Transform};

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
                    let flips = Params {
                        horizontal_flip: Some(crop.is_some()),
                        vertical_flip: Some(layout == Layout::Chw),
                        ..Params::default()
                    };
                    let plan = OutputPlan::new((7, 5), &transform, &flips);
                    let (w, h) = crop.unwrap_or((7, 5));
                    let table = plan.value_table();
                    let TensorData::F32(values) = to_tensor(&image, &plan).data else {
                        panic!("f32 asked for");
                    };
                    for y in 0..h {
                        for x in 0..w {
                            for c in 0..3 {
                                let src = plan.source_channel(c);
                                let at = match layout {
                                    Layout::Hwc => (y * w + x) * 3 + c,
                                    Layout::Chw => (c * h + y) * w + x,
                                };
                                let (sx, sy) = source_position(&plan, x, y);
                                let at_source = Crop {
                                    x: sx,
                                    y: sy,
                                    ..plan.crop
                                };
                                let v = cropped_sample(&image, &at_source, 0, 0, src);
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
}
