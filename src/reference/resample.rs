//! Pillow's two resampling passes on 8-bit images (`ImagingResampleHorizontal_8bpc` and
//! `ImagingResampleVertical_8bpc`, PARITY §3.4): integer taps, accumulator started at 2^21,
//! arithmetic shift by 22, clamp. One function per output sample, as the shaders compute it.

use crate::plan::{Taps, PRECISION_BITS};

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
#[cfg(test)]
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
#[cfg(test)]
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

/// The horizontal pass over input rows `row_offset .. row_offset + rows`: [`horizontal_at`]
/// for every sample, a row at a time with one accumulator per channel (the CPU path).
pub fn horizontal(input: &Image8, taps: &Taps, row_offset: usize, rows: usize) -> Image8 {
    match input.channels {
        3 => horizontal_n::<3>(input, taps, row_offset, rows),
        1 => horizontal_n::<1>(input, taps, row_offset, rows),
        4 => horizontal_n::<4>(input, taps, row_offset, rows),
        n => panic!("{n} channels"),
    }
}

/// [`horizontal`] for `N` channels, so that the channel loop unrolls.
fn horizontal_n<const N: usize>(
    input: &Image8,
    taps: &Taps,
    row_offset: usize,
    rows: usize,
) -> Image8 {
    let width = taps.bounds.len();
    let in_stride = input.width * N;
    let mut data = vec![0u8; width * rows * N];
    for (y, out_row) in data.chunks_exact_mut(width * N).enumerate() {
        let row = &input.data[(y + row_offset) * in_stride..][..in_stride];
        horizontal_row::<N>(row, taps, out_row);
    }
    Image8 {
        width,
        height: rows,
        channels: N,
        data,
    }
}

/// The horizontal pass over one row of `N`-channel pixels into `out` (`N` samples per tap set).
pub fn horizontal_row<const N: usize>(row: &[u8], taps: &Taps, out: &mut [u8]) {
    for (x, out) in out.chunks_exact_mut(N).enumerate() {
        let (start, len) = taps.bounds[x];
        let weights = &taps.weights[x * taps.window..][..len as usize];
        let pixels = row[start as usize * N..].chunks_exact(N);
        let mut acc = [1i32 << (PRECISION_BITS - 1); N];
        for (pixel, &weight) in pixels.zip(weights) {
            for c in 0..N {
                acc[c] = acc[c].wrapping_add(i32::from(pixel[c]).wrapping_mul(weight));
            }
        }
        for c in 0..N {
            out[c] = clip8(acc[c]);
        }
    }
}

/// The horizontal pass as the CPU path runs it: over RGB rows given as three planes, into
/// interleaved output; SSE2 where the CPU has it.
pub struct PlanarHorizontal<'a> {
    taps: &'a Taps,
    #[cfg(target_arch = "x86_64")]
    split: super::sse2::resample::SplitTaps,
}

impl<'a> PlanarHorizontal<'a> {
    /// The pass with `taps`.
    pub fn new(taps: &'a Taps) -> Self {
        Self {
            taps,
            #[cfg(target_arch = "x86_64")]
            split: super::sse2::resample::SplitTaps::new(taps),
        }
    }

    /// One row: `planes` are the R, G and B samples, `out` gets interleaved RGB.
    pub fn row(&self, planes: [&[u8]; 3], out: &mut [u8]) {
        #[cfg(target_arch = "x86_64")]
        super::sse2::resample::horizontal_planar_row(planes, self.taps, &self.split, out);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let interleaved: Vec<u8> = (0..planes[0].len())
                .flat_map(|x| planes.map(|p| p[x]))
                .collect();
            horizontal_row::<3>(&interleaved, self.taps, out);
        }
    }
}

/// The vertical pass: [`vertical_at`] for every sample, accumulating whole source rows.
pub fn vertical(input: &Image8, taps: &Taps) -> Image8 {
    let (height, channels) = (taps.bounds.len(), input.channels);
    let stride = input.width * channels;
    let mut data = vec![0u8; stride * height];
    let mut acc = vec![0i32; stride];
    for (y, out_row) in data.chunks_exact_mut(stride.max(1)).enumerate() {
        let (start, len) = taps.bounds[y];
        let weights = &taps.weights[y * taps.window..][..len as usize];
        acc.fill(1 << (PRECISION_BITS - 1));
        for (k, &weight) in weights.iter().enumerate() {
            let row = &input.data[(start as usize + k) * stride..][..stride];
            for (a, &p) in acc.iter_mut().zip(row) {
                *a = a.wrapping_add(i32::from(p).wrapping_mul(weight));
            }
        }
        for (o, &a) in out_row.iter_mut().zip(&acc) {
            *o = clip8(a);
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
pub fn resize(image: &Image8, plan: &crate::plan::ResizePlan) -> Image8 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ResizePlan;
    use crate::Filter;

    #[test]
    fn whole_passes_equal_the_per_sample_spec() {
        let (w, h) = (13, 11);
        let data: Vec<u8> = (0..w * h * 3)
            .map(|i: usize| (i.wrapping_mul(2_654_435_761) >> 9) as u8)
            .collect();
        let image = Image8 {
            width: w,
            height: h,
            channels: 3,
            data,
        };
        for filter in [
            Filter::Nearest,
            Filter::Box,
            Filter::Bilinear,
            Filter::Hamming,
            Filter::Bicubic,
            Filter::Lanczos,
        ] {
            for out in [(5, 4), (29, 17), (13, 3)] {
                let plan = ResizePlan::new(filter, (w, h), out);
                if let Some(taps) = &plan.horizontal {
                    let rows = horizontal(&image, taps, plan.first_row, plan.rows);
                    for (i, &v) in rows.data.iter().enumerate() {
                        let (c, x, y) = (i % 3, i / 3 % rows.width, i / 3 / rows.width);
                        assert_eq!(
                            v,
                            horizontal_at(&image, taps, plan.first_row, x, y, c),
                            "{filter:?} {out:?}"
                        );
                    }
                }
                if let Some(taps) = &plan.vertical {
                    let cols = vertical(&image, taps);
                    for (i, &v) in cols.data.iter().enumerate() {
                        let (c, x, y) = (i % 3, i / 3 % cols.width, i / 3 / cols.width);
                        assert_eq!(v, vertical_at(&image, taps, x, y, c), "{filter:?} {out:?}");
                    }
                }
            }
        }
    }
}
