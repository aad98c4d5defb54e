//! Pillow's two resampling passes on 8-bit images (`ImagingResampleHorizontal_8bpc` and
//! `ImagingResampleVertical_8bpc`, PARITY §3.4): integer taps, accumulator started at 2^21,
//! arithmetic shift by 22, clamp. One function per output sample, as the shaders compute it.

use crate::resample::{Taps, PRECISION_BITS};

/// An interleaved 8-bit image with `channels` samples per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image8 {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Samples per pixel.
    pub channels: usize,
    /// `height * width * channels` samples, row-major.
    pub data: Vec<u8>,
}

/// Rounds and clamps a Q22 accumulator (Pillow's `clip8`).
#[inline]
fn clip8(acc: i32) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

/// One output sample of the horizontal pass: row `y`, output column `x`, channel `c`, reading
/// input row `y + row_offset`.
#[inline]
pub fn horizontal_at(
    input: &Image8,
    taps: &Taps,
    row_offset: usize,
    x: usize,
    y: usize,
    c: usize,
) -> u8 {
    let (start, len) = taps.bounds[x];
    let weights = &taps.weights[x * taps.window..][..len as usize];
    let row = &input.data[(y + row_offset) * input.width * input.channels..];
    let mut acc: i32 = 1 << (PRECISION_BITS - 1);
    for (k, &weight) in weights.iter().enumerate() {
        let sample = i32::from(row[(start as usize + k) * input.channels + c]);
        acc = acc.wrapping_add(sample.wrapping_mul(weight));
    }
    clip8(acc)
}

/// One output sample of the vertical pass: output row `y`, column `x`, channel `c`.
#[inline]
pub fn vertical_at(input: &Image8, taps: &Taps, x: usize, y: usize, c: usize) -> u8 {
    let (start, len) = taps.bounds[y];
    let weights = &taps.weights[y * taps.window..][..len as usize];
    let stride = input.width * input.channels;
    let mut acc: i32 = 1 << (PRECISION_BITS - 1);
    for (k, &weight) in weights.iter().enumerate() {
        let sample = i32::from(input.data[(start as usize + k) * stride + x * input.channels + c]);
        acc = acc.wrapping_add(sample.wrapping_mul(weight));
    }
    clip8(acc)
}

/// The horizontal pass over input rows `row_offset .. row_offset + rows`.
pub fn horizontal(input: &Image8, taps: &Taps, row_offset: usize, rows: usize) -> Image8 {
    let (width, channels) = (taps.bounds.len(), input.channels);
    let mut data = Vec::with_capacity(width * rows * channels);
    for y in 0..rows {
        for x in 0..width {
            data.extend((0..channels).map(|c| horizontal_at(input, taps, row_offset, x, y, c)));
        }
    }
    Image8 {
        width,
        height: rows,
        channels,
        data,
    }
}

/// The vertical pass.
pub fn vertical(input: &Image8, taps: &Taps) -> Image8 {
    let (height, channels) = (taps.bounds.len(), input.channels);
    let mut data = Vec::with_capacity(input.width * height * channels);
    for y in 0..height {
        for x in 0..input.width {
            data.extend((0..channels).map(|c| vertical_at(input, taps, x, y, c)));
        }
    }
    Image8 {
        width: input.width,
        height,
        channels,
        data,
    }
}

/// Resizes `image` as the plan says: horizontal pass first into an 8-bit intermediate, then the
/// vertical pass; a pass that is not needed is skipped.
pub fn resize(image: &Image8, plan: &crate::resample::ResizePlan) -> Image8 {
    let intermediate = plan
        .horizontal
        .as_ref()
        .map(|taps| horizontal(image, taps, plan.first_row, plan.rows));
    let source = intermediate.as_ref().unwrap_or(image);
    match &plan.vertical {
        Some(taps) => vertical(source, taps),
        None => source.clone(),
    }
}
