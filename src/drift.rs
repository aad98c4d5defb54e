//! How far one output is from another, in grey levels: the measure of "exact" that users check.
//!
//! A grey level is one step of the 8-bit image the tensor came from: a uint8 difference as it is,
//! a float difference × 255 (× the channel's `Normalize` std, which the tensor was divided by).

use crate::transform::{ChannelOrder, DType, Layout};
use crate::{Tensor, TensorData, Transform};

/// The drift of one channel, summed over any number of images.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ChannelDrift {
    /// Largest difference, in grey levels.
    pub max: f64,
    /// Sum of the differences, in grey levels.
    pub sum: f64,
    /// Values that differ at all.
    pub differing: u64,
    /// Values compared.
    pub count: u64,
}

impl ChannelDrift {
    /// Mean difference, in grey levels.
    pub fn mean(&self) -> f64 {
        self.sum / self.count.max(1) as f64
    }

    /// Share of the values that differ, 0 to 1.
    pub fn share_differing(&self) -> f64 {
        self.differing as f64 / self.count.max(1) as f64
    }

    fn add(&mut self, grey_levels: f64) {
        self.max = self.max.max(grey_levels);
        self.sum += grey_levels;
        self.differing += u64::from(grey_levels != 0.0);
        self.count += 1;
    }

    fn merge(&mut self, other: &Self) {
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.differing += other.differing;
        self.count += other.count;
    }
}

/// Lower edges of the histogram bins, in grey levels: exact, below one grey level, then
/// doubling widths up to 16 and above.
pub const BIN_EDGES: [f64; 7] = [0.0, f64::MIN_POSITIVE, 1.0, 2.0, 4.0, 8.0, 16.0];

/// Drift per output channel (in the tensor's channel order), and how the differences spread.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drift {
    /// One entry per channel, in output order.
    pub channels: [ChannelDrift; 3],
    /// How many values fall in each bin of [`BIN_EDGES`], all channels together.
    pub histogram: [u64; BIN_EDGES.len()],
}

/// Two tensors that cannot be compared value for value: their shapes or element types differ.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "shapes differ: {actual_shape:?} {actual_dtype:?} against {expected_shape:?} {expected_dtype:?}"
)]
pub struct ShapesDiffer {
    /// The shape of the tensor measured.
    pub actual_shape: [usize; 3],
    /// Its element type.
    pub actual_dtype: DType,
    /// The shape of the tensor it is measured against.
    pub expected_shape: [usize; 3],
    /// Its element type.
    pub expected_dtype: DType,
}

impl Drift {
    /// The drift of `actual` from `expected`, two outputs of `transform`; an error when their
    /// shapes or element types differ.
    pub fn between(
        actual: &Tensor,
        expected: &Tensor,
        transform: &Transform,
    ) -> Result<Self, ShapesDiffer> {
        let mut drift = Self::default();
        for_each_difference(actual, expected, transform, |channel, _, grey_levels| {
            drift.channels[channel].add(grey_levels);
            // A float difference of whole grey levels comes back a hair short after the
            // division by std; it still counts as whole.
            let binned = if grey_levels > 0.0 {
                grey_levels + 1e-4
            } else {
                0.0
            };
            let bin = BIN_EDGES.iter().rposition(|&edge| binned >= edge);
            drift.histogram[bin.unwrap_or(0)] += 1;
        })?;
        Ok(drift)
    }

    /// Adds another image's drift (for totals over a set).
    pub fn merge(&mut self, other: &Self) {
        for (mine, theirs) in self.channels.iter_mut().zip(&other.channels) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.histogram.iter_mut().zip(&other.histogram) {
            *mine += theirs;
        }
    }

    /// All channels together.
    pub fn total(&self) -> ChannelDrift {
        let mut total = ChannelDrift::default();
        for channel in &self.channels {
            total.merge(channel);
        }
        total
    }
}

/// The largest difference at each pixel over its channels, in grey levels, row by row: what a
/// heat map shows. Returns (width, height, values).
pub fn per_pixel(
    actual: &Tensor,
    expected: &Tensor,
    transform: &Transform,
) -> Result<(usize, usize, Vec<f64>), ShapesDiffer> {
    let (height, width) = pixel_dims(expected, transform);
    let mut map = vec![0f64; width * height];
    for_each_difference(actual, expected, transform, |_, pixel, grey_levels| {
        map[pixel] = map[pixel].max(grey_levels)
    })?;
    Ok((width, height, map))
}

/// (height, width) of a tensor of `transform`.
fn pixel_dims(tensor: &Tensor, transform: &Transform) -> (usize, usize) {
    match transform.layout {
        Layout::Hwc => (tensor.shape[0], tensor.shape[1]),
        Layout::Chw => (tensor.shape[1], tensor.shape[2]),
    }
}

/// Calls `visit(channel, pixel, grey levels)` for every value of the two tensors.
fn for_each_difference(
    actual: &Tensor,
    expected: &Tensor,
    transform: &Transform,
    mut visit: impl FnMut(usize, usize, f64),
) -> Result<(), ShapesDiffer> {
    if actual.shape != expected.shape || actual.dtype() != expected.dtype() {
        return Err(ShapesDiffer {
            actual_shape: actual.shape,
            actual_dtype: actual.dtype(),
            expected_shape: expected.shape,
            expected_dtype: expected.dtype(),
        });
    }
    let scale = grey_levels_per_unit(transform);
    let (height, width) = pixel_dims(expected, transform);
    let pixels = height * width;
    let place = |i: usize| match transform.layout {
        Layout::Hwc => (i % 3, i / 3),
        Layout::Chw => (i / pixels.max(1), i % pixels.max(1)),
    };
    let mut each = |i: usize, difference: f64| {
        let (channel, pixel) = place(i);
        visit(channel, pixel, difference * scale[channel]);
    };
    match (&actual.data, &expected.data) {
        (TensorData::U8(a), TensorData::U8(b)) => a
            .iter()
            .zip(b)
            .enumerate()
            .for_each(|(i, (&x, &y))| each(i, f64::from(x.abs_diff(y)))),
        (TensorData::F32(a), TensorData::F32(b)) => a
            .iter()
            .zip(b)
            .enumerate()
            .for_each(|(i, (x, y))| each(i, f64::from(x - y).abs())),
        (TensorData::F16(a), TensorData::F16(b)) => a
            .iter()
            .zip(b)
            .enumerate()
            .for_each(|(i, (x, y))| each(i, (x.to_f64() - y.to_f64()).abs())),
        _ => unreachable!("element types compared above"),
    }
    Ok(())
}

/// Grey levels per unit of each output channel.
fn grey_levels_per_unit(transform: &Transform) -> [f64; 3] {
    if transform.dtype == DType::U8 {
        return [1.0; 3];
    }
    let std = transform
        .normalize
        .map_or([1.0; 3], |n| n.std.map(f64::from));
    let rgb = std.map(|s| 255.0 * s);
    match transform.channel_order {
        ChannelOrder::Rgb => rgb,
        ChannelOrder::Bgr => [rgb[2], rgb[1], rgb[0]],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::Normalize;

    #[test]
    fn differences_are_in_grey_levels_per_channel() {
        let transform = Transform::tensor(Normalize::IMAGENET);
        let shape = [3, 1, 2];
        let expected = Tensor {
            shape,
            data: TensorData::F32(vec![0.0; 6]),
            params: Default::default(),
        };
        // One grey level in R at pixel 1, two in B at pixel 0.
        let mut values = vec![0.0f32; 6];
        values[1] = 1.0 / (255.0 * 0.229);
        values[4] = -2.0 / (255.0 * 0.225);
        let actual = Tensor {
            shape,
            data: TensorData::F32(values),
            params: Default::default(),
        };
        let drift = Drift::between(&actual, &expected, &transform).unwrap();
        assert!((drift.channels[0].max - 1.0).abs() < 1e-4);
        assert_eq!(
            drift.channels[1],
            ChannelDrift {
                count: 2,
                ..Default::default()
            }
        );
        assert!((drift.channels[2].max - 2.0).abs() < 1e-4);
        assert_eq!(drift.total().differing, 2);
        assert_eq!(drift.histogram, [4, 0, 1, 1, 0, 0, 0]);
        let (w, h, map) = per_pixel(&actual, &expected, &transform).unwrap();
        assert_eq!((w, h), (2, 1));
        assert!((map[0] - 2.0).abs() < 1e-4 && (map[1] - 1.0).abs() < 1e-4);
    }

    #[test]
    fn different_shapes_are_an_error() {
        let a = Tensor {
            shape: [1, 1, 3],
            data: TensorData::U8(vec![0; 3]),
            params: Default::default(),
        };
        let b = Tensor {
            shape: [1, 2, 3],
            data: TensorData::U8(vec![0; 6]),
            params: Default::default(),
        };
        let error = Drift::between(&a, &b, &Transform::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "shapes differ: [1, 1, 3] U8 against [1, 2, 3] U8"
        );
    }
}
