//! One image's share of a GPU batch, prepared on a CPU thread: its compact coefficients, tap
//! tables and the job records of every stage, with offsets relative to the image's own start in
//! each arena (the batch adds its bases when it packs images together).

use super::jobs::{
    word_count, AdjustJob, ColorJob, HorizontalJob, IdctJob, PlaneGeometry, PlaneUpsampling,
    TensorJob, ADD_TO_MIX, AUTOCONTRAST, BICUBIC, BILINEAR, BLEND_CHAIN, BLEND_LAST_CHAIN,
    BLEND_MIX, BLUR, BOX_BLUR, BRIGHTNESS, CONTRAST, EQUALIZE, GRAYSCALE, HUE, KEEP_FOR_BLENDS,
    KEEP_FOR_MIX, KIND_BITS, MAX_KERNEL, NEAREST, NEAREST_POINT, PAD_CONSTANT, PAD_EDGE,
    PAD_REFLECT, PAD_SYMMETRIC, POSTERIZE, REMAP, REMAP_WORDS, SATURATION, SCALE, SHARPNESS,
    SOLARIZE, SOLARIZE_ADD,
};
use crate::error::Result;
use crate::formats::{Decoded, Pixels};
use crate::jpeg::compact::{compact_dense, CompactPlane};
use crate::jpeg::segment::EntropySegment;
use crate::jpeg::{single_scan_order, CoefficientImage, ColorSpace, Component};
use crate::plan::output::element_bytes;
use crate::plan::{
    Adjustment, BoxBlur, Erased, Fill, ImagePlan, OutputPlan, Params, Rotation, Sample, Step, Taps,
    Upsampling,
};
use crate::transform::{DType, Filter, Layout, PaddingMode};
use crate::{Limits, RgbImage, Transform};
use std::sync::Arc;

/// Stage 1 for one component.
pub(crate) struct PlaneWork {
    /// Offsets relative to this plane's coefficients and to the image's first sample word.
    pub job: IdctJob,
    /// The compact coefficients (see [`crate::jpeg::compact`]).
    pub coefs: Vec<u32>,
    /// Shader invocations.
    pub invocations: u32,
}

/// Stage 3's horizontal pass for one image.
pub(crate) struct HorizontalWork {
    /// Offsets relative to the image's source, output and taps.
    pub job: HorizontalJob,
    /// (start, count) pairs, then weights.
    pub taps: Vec<u32>,
    /// Output words (one RGBX word per pixel).
    pub result_words: u64,
}

/// Stage 4 for one image.
pub(crate) struct TensorWork {
    /// Offsets relative to the image's source and taps; `first_word` and `out_base` zero.
    pub job: TensorJob,
    /// Vertical (start, count) pairs, then weights (empty without a vertical pass).
    pub taps: Vec<u32>,
    /// The erased boxes' records, then given values (see [`erasure_words`]).
    pub erasures: Vec<u32>,
    /// Whether the transform draws noise per element, so that the packing holds its table.
    pub reads_noise: bool,
    /// Output words.
    pub words: u64,
    /// Output dimensions in the transform's layout.
    pub shape: [usize; 3],
    /// With colour adjustments: `job` writes the cropped, flipped pixels (RGBX, a word each)
    /// instead, stage 5 adjusts them, and this reads them into the tensor.
    pub adjusted: Option<Adjusted>,
}

/// The colour-adjustment path of one image's stage 4.
pub(crate) struct Adjusted {
    /// Stage 5's job, `pixels_base` relative to the image's pixels.
    pub job: AdjustJob,
    /// The tensor from the adjusted pixels (`source_base` relative to them).
    pub tensor: TensorJob,
}

/// Everything the GPU needs for one image.
pub(crate) struct ImageWork {
    pub planes: Vec<PlaneWork>,
    /// A non-JPEG image's pixels as sample planes, uploaded as they are (empty for JPEG).
    pub raw_samples: Vec<u32>,
    /// Sample words of all planes together.
    pub sample_words: u64,
    pub color: ColorJob,
    /// Decoded RGBX words (width × height).
    pub rgbx_words: u64,
    pub horizontal: Option<HorizontalWork>,
    pub tensor: TensorWork,
    /// The coefficients as dense 16-bit blocks would take (the upload the compact form avoids).
    pub dense_coefficient_bytes: u64,
    /// A JPEG whose Huffman decoding is left to the GPU (stage 0): its entropy-coded segment;
    /// its planes' coefficients are then dense in the decoded arena.
    pub entropy: Option<Arc<SegmentImage>>,
    /// The random parameters of the image's plan.
    pub params: Params,
}

/// A single-scan JPEG left entropy-coded for the GPU, kept until its batch is done: should the
/// GPU give up on it, the CPU decodes it from this.
pub(crate) struct SegmentImage {
    /// The image, without coefficients.
    pub image: CoefficientImage,
    pub segment: EntropySegment,
    /// The random parameters its plan drew, to redo it with.
    pub params: Params,
}

impl SegmentImage {
    /// The image with its coefficients decoded on the CPU, as the CPU decoder gives them.
    pub fn decoded_on_cpu(&self) -> CoefficientImage {
        let planes = crate::jpeg::parallel::decode_sequential(&self.segment);
        let mut image = self.image.clone();
        for (ci, plane) in planes.iter().enumerate() {
            let order = single_scan_order(&image, ci);
            let comp = &mut image.components[ci];
            comp.blocks = vec![0; comp.blocks_w * comp.blocks_h * 64];
            for by in 0..comp.blocks_h {
                for bx in 0..comp.blocks_w {
                    let from = order.position(bx, by) * 64;
                    if from < plane.len() {
                        let to = (by * comp.blocks_w + bx) * 64;
                        comp.blocks[to..to + 64].copy_from_slice(&plane[from..from + 64]);
                    }
                }
            }
        }
        image
    }
}

impl ImageWork {
    /// Prepares `image` as `sample` of `transform`, what it makes held to `limits`.
    pub fn new(
        image: &CoefficientImage,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Self> {
        let planes = (0..image.components.len())
            .map(|ci| compact_coefficients(image, ci))
            .collect();
        Self::with_planes(image, planes, transform, sample, limits)
    }

    /// Prepares `image`, whose coefficients are already compact (one plane per component), as
    /// `sample` of `transform`.
    pub fn with_planes(
        image: &CoefficientImage,
        coefficients: Vec<CompactPlane>,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Self> {
        let plan = ImagePlan::for_jpeg(image, transform, sample, limits)?;
        let mut planes = Vec::with_capacity(image.components.len());
        let mut geometry = [PlaneGeometry::default(); 4];
        let mut axes = [PlaneUpsampling::default(); 4];
        let mut sample_words = 0u64;
        let scalings = plan.components.iter();
        for (((ci, comp), plane), scaling) in image
            .components
            .iter()
            .enumerate()
            .zip(coefficients)
            .zip(scalings)
        {
            let size = scaling.idct_size;
            // Small blocks are done a few at a time so that each invocation writes whole words.
            let per_invocation = (4 / size).max(1);
            let words_per_group = (size * per_invocation / 4).max(1);
            let row_words = comp.blocks_w.div_ceil(per_invocation) * words_per_group;
            let job = IdctJob {
                blocks_w: comp.blocks_w as u32,
                width_in_blocks: comp.width_in_blocks as u32,
                height_in_blocks: comp.height_in_blocks as u32,
                sample_row_words: row_words as u32,
                idct_size: size as u32,
                blocks_per_invocation: per_invocation as u32,
                coef_base: 0,
                sample_base: sample_words as u32,
                table_mcu_w: plane.order.mcu_w as u32,
                table_mcu_h: plane.order.mcu_h as u32,
                table_mcus_per_row: plane.order.mcus_per_row as u32,
                table_blocks: plane.order.blocks as u32,
                dense: 0,
                padding: [0; 3],
                quant: comp.quant.map(|q| i32::from(q as i16)),
            };
            geometry[ci] = PlaneGeometry {
                base: sample_words as u32,
                stride: (row_words * 4) as u32,
                width: scaling.downsampled_width as u32,
                height: scaling.downsampled_height as u32,
            };
            axes[ci] = upsampling_job(scaling.upsampling);
            sample_words += (row_words * comp.blocks_h * size) as u64;
            planes.push(PlaneWork {
                job,
                coefs: plane.words,
                invocations: idct_invocations(size, per_invocation, comp) as u32,
            });
        }
        let (width, height) = plan.decoded;
        let color = ColorJob {
            width: width as u32,
            height: height as u32,
            rgbx_base: 0,
            color_space: color_space_index(image.color_space),
            planes: geometry,
            axes,
            // The colour stage stores the image oriented: every later stage sees it upright.
            orientation: u32::from(plan.orientation),
            padding: [0; 3],
        };
        let (horizontal, tensor) = resize_and_tensor(&plan, transform);
        let dense_coefficient_bytes = image
            .components
            .iter()
            .map(|c| (c.width_in_blocks * c.height_in_blocks * 64 * 2) as u64)
            .sum();
        Ok(Self {
            dense_coefficient_bytes,
            planes,
            raw_samples: Vec::new(),
            entropy: None,
            sample_words,
            color,
            rgbx_words: (width * height) as u64,
            horizontal,
            tensor,
            params: plan.params,
        })
    }

    /// Prepares `image`, whose coefficients stage 0 is to decode from `segment`, as `sample` of
    /// `transform`.
    pub fn from_segment(
        image: CoefficientImage,
        segment: EntropySegment,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Self> {
        let planes = (0..image.components.len())
            .map(|ci| CompactPlane {
                words: Vec::new(),
                order: single_scan_order(&image, ci),
            })
            .collect();
        let mut work = Self::with_planes(&image, planes, transform, sample, limits)?;
        for plane in &mut work.planes {
            plane.job.dense = 1;
        }
        let params = work.params.clone();
        work.entropy = Some(Arc::new(SegmentImage {
            image,
            segment,
            params,
        }));
        Ok(work)
    }

    /// Prepares a non-JPEG image for `transform`: its pixels go up as R, G and B sample planes
    /// (rows padded to whole words) that the colour stage reads as an RGB image at full
    /// resolution, so that it also orients them; no IDCT.
    pub fn from_pixels(
        pixels: &Pixels,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Self> {
        let RgbImage {
            width,
            height,
            ref data,
        } = pixels.rgb;
        // Refused before anything is allocated for it.
        let size = (width, height);
        let plan = ImagePlan::for_pixels(size, pixels.orientation, transform, sample, limits)?;
        let row_words = width.div_ceil(4);
        let plane_words = row_words * height;
        let mut raw_samples = vec![0u32; 3 * plane_words];
        for (i, rgb) in data.chunks_exact(3).enumerate() {
            let (x, y) = (i % width, i / width);
            for (c, &sample) in rgb.iter().enumerate() {
                let word = c * plane_words + y * row_words + x / 4;
                raw_samples[word] |= u32::from(sample) << (8 * (x % 4));
            }
        }
        let mut planes = [PlaneGeometry::default(); 4];
        let mut axes = [PlaneUpsampling::default(); 4];
        for c in 0..3 {
            planes[c] = PlaneGeometry {
                base: (c * plane_words) as u32,
                stride: (row_words * 4) as u32,
                width: width as u32,
                height: height as u32,
            };
            axes[c] = upsampling_job(Upsampling::Full);
        }
        let color = ColorJob {
            width: width as u32,
            height: height as u32,
            rgbx_base: 0,
            color_space: color_space_index(ColorSpace::Rgb),
            planes,
            axes,
            orientation: u32::from(plan.orientation),
            padding: [0; 3],
        };
        let (horizontal, tensor) = resize_and_tensor(&plan, transform);
        Ok(Self {
            dense_coefficient_bytes: 0,
            entropy: None,
            planes: Vec::new(),
            sample_words: raw_samples.len() as u64,
            raw_samples,
            color,
            rgbx_words: (width * height) as u64,
            horizontal,
            tensor,
            params: plan.params,
        })
    }

    /// Prepares any decoded input as `sample` of `transform`, what it makes held to `limits`.
    pub fn prepare(
        decoded: &Decoded,
        transform: &Transform,
        sample: &Sample,
        limits: &Limits,
    ) -> Result<Self> {
        match decoded {
            Decoded::Jpeg(image) => Self::new(image, transform, sample, limits),
            Decoded::Pixels(pixels) => Self::from_pixels(pixels, transform, sample, limits),
        }
    }

    /// Whether this image came as pixels (a non-JPEG input) rather than coefficients.
    pub fn is_pixels(&self) -> bool {
        !self.raw_samples.is_empty()
    }
}

/// The resize (horizontal pass and vertical taps) and tensor jobs of `plan`, whose image the
/// colour stage has decoded and oriented. Source offsets are relative to the image's first
/// pixel: both passes start reading at the plan's region.
fn resize_and_tensor(
    plan: &ImagePlan,
    transform: &Transform,
) -> (Option<HorizontalWork>, TensorWork) {
    let in_width = plan.oriented.0;
    let region_start = (plan.region.top * in_width + plan.region.left) as u32;
    let horizontal = plan.resize.as_ref().and_then(|resize| {
        resize.horizontal.as_ref().map(|taps| {
            let out_width = taps.bounds.len();
            let (words, weights_base) = horizontal_tap_words(taps);
            HorizontalWork {
                job: HorizontalJob {
                    out_width: out_width as u32,
                    rows: resize.rows as u32,
                    in_width: in_width as u32,
                    window: taps.window as u32,
                    first_row: resize.first_row as u32,
                    source_base: region_start,
                    result_base: 0,
                    bounds_base: 0,
                    weights_base,
                },
                taps: words,
                result_words: (out_width * resize.rows) as u64,
            }
        })
    });
    let vertical = plan.resize.as_ref().and_then(|r| r.vertical.as_ref());
    let (taps, weights_base) = vertical.map_or((Vec::new(), 0), tap_words);
    let output = &plan.output;
    let crop = output.crop;
    let per_word = (4 / element_bytes(output.dtype)) as u32;
    let job = TensorJob {
        out_width: crop.width as u32,
        out_height: crop.height as u32,
        width: plan.resized.0 as u32,
        height: plan.resized.1 as u32,
        crop_x: crop.x as i32,
        crop_y: crop.y as i32,
        vertical: u32::from(vertical.is_some()),
        window: vertical.map_or(0, |t| t.window as u32),
        chw: u32::from(output.layout == Layout::Chw),
        per_word,
        from_rgbx: u32::from(horizontal.is_none()),
        // Either source starts at the first row the vertical taps count from: the
        // horizontal pass's output, or the region of the decoded image.
        source_base: if horizontal.is_none() {
            region_start
        } else {
            0
        },
        bounds_base: 0,
        weights_base,
        first_word: 0,
        out_base: 0,
        stride: if horizontal.is_none() {
            in_width as u32
        } else {
            plan.resized.0 as u32
        },
        flips: u32::from(output.horizontal_flip) | u32::from(output.vertical_flip) << 1,
        // Where the records lie is the packing's to set; the count is the image's.
        erasures: [0, output.erase.len() as u32, 0, 0],
        rotate: u32::from(output.rotation.is_some()),
        fill: output.rotation.map_or(0, |r| {
            u32::from_le_bytes([r.fill[0], r.fill[1], r.fill[2], 0])
        }),
        rotation_x: output.rotation.map_or([0; 4], |r| {
            let [a, b, c] = r.x_map;
            [a, b, c, 0]
        }),
        rotation_y: output.rotation.map_or([0; 4], |r| {
            let [a, b, c] = r.y_map;
            [a, b, c, 0]
        }),
        channel_map: [0, 1, 2, 3].map(|c| {
            if c < 3 {
                output.source_channel(c) as u32
            } else {
                0
            }
        }),
        ..padding_words(output, plan.resized)
    };
    // Every image of a batch reads its tensor from the same source: with a transform that
    // adjusts colours, the adjusted pixels, even where this image drew no adjustment.
    let adjusted = OutputPlan::has_steps(transform).then(|| adjusted(&job, plan));
    let tensor = TensorWork {
        job,
        taps,
        erasures: erasure_words(&output.erase, output.dtype),
        reads_noise: transform
            .random_erasing
            .is_some_and(|e| e.draws_per_element()),
        words: (crop.width * crop.height * 3).div_ceil(per_word as usize) as u64,
        shape: output.shape,
        adjusted,
    };
    (horizontal, tensor)
}

/// The words shaders/tensor.wgsl reads the erased boxes from: per box, in the order they are
/// written, `x0, y0, x1, y1, kind` and three words: for [`ERASE_CONSTANT`] the value's bits per
/// channel, for [`ERASE_DRAWN`] the noise key (low, high), for [`ERASE_GIVEN`] where its values'
/// bits (C×H×W) start, counted from the first record; the given values follow the records.
pub(crate) fn erasure_words(erased: &[Erased], dtype: DType) -> Vec<u32> {
    let bits = |v: f32| element_bits(v, dtype);
    let mut values = Vec::new();
    let mut records = Vec::with_capacity(8 * erased.len());
    for e in erased {
        let b = e.region;
        let (x, y) = (b.left as u32, b.top as u32);
        records.extend([x, y, x + b.width as u32, y + b.height as u32]);
        records.extend(match &e.fill {
            Fill::Constant(value) => [
                ERASE_CONSTANT,
                bits(value[0]),
                bits(value[1]),
                bits(value[2]),
            ],
            Fill::Drawn(key) => [ERASE_DRAWN, *key as u32, (*key >> 32) as u32, 0],
            Fill::Given(given) => {
                let at = (8 * erased.len() + values.len()) as u32;
                values.extend(given.iter().map(|&v| bits(v)));
                [ERASE_GIVEN, at, 0, 0]
            }
        });
    }
    records.extend(values);
    records
}

/// The bits of `value` as an output element of `dtype`: the integer for u8, IEEE half or single.
pub(crate) fn element_bits(value: f32, dtype: DType) -> u32 {
    match dtype {
        DType::U8 => value as u32,
        DType::F16 => u32::from(half::f16::from_f32(value).to_bits()),
        DType::F32 => value.to_bits(),
    }
}

/// The kinds of erased box in [`erasure_words`], as shaders/tensor.wgsl numbers them.
pub(crate) const ERASE_CONSTANT: u32 = 0;
pub(crate) const ERASE_DRAWN: u32 = 1;
pub(crate) const ERASE_GIVEN: u32 = 2;

/// A tensor job's padding words for `output` of an image resized to `resized`: the pads,
/// outermost first (the rest of the job zero).
fn padding_words(output: &OutputPlan, resized: (usize, usize)) -> TensorJob {
    let mut job: TensorJob = bytemuck::Zeroable::zeroed();
    let (width, height) = crate::plan::padding::padded_size(&output.padding, resized);
    job.padded = [width as u32, height as u32, output.padding.len() as u32, 0];
    for (k, p) in output.padding.iter().rev().enumerate() {
        let (w, h) = p.inner;
        job.pads[k] = [p.left as i32, p.top as i32, w as i32, h as i32];
        job.pad_modes[k] = match p.mode {
            PaddingMode::Constant => PAD_CONSTANT,
            PaddingMode::Edge => PAD_EDGE,
            PaddingMode::Reflect => PAD_REFLECT,
            PaddingMode::Symmetric => PAD_SYMMETRIC,
        };
        job.pad_fills[k] = u32::from_le_bytes([p.fill[0], p.fill[1], p.fill[2], 0]);
    }
    job
}

/// A remap's words in [`AdjustJob::remaps`]: its fixed-point map, fill, filter and matrix.
fn remap_words(map: &Rotation) -> [i32; REMAP_WORDS] {
    let [a, b, c] = map.x_map;
    let [d, e, f] = map.y_map;
    let fill = u32::from_le_bytes([map.fill[0], map.fill[1], map.fill[2], 0]);
    let filter = match map.filter {
        Filter::Bilinear => BILINEAR,
        Filter::Bicubic => BICUBIC,
        _ if map.is_scaling() => SCALE,
        _ if map.is_fixed_point() => NEAREST,
        _ => NEAREST_POINT,
    };
    let mut words = [0; REMAP_WORDS];
    words[..8].copy_from_slice(&[a, b, c, d, e, f, fill as i32, filter as i32]);
    let perspective = map.perspective.unwrap_or([0.0; 2]);
    for (k, v) in map.matrix.iter().chain(&perspective).enumerate() {
        let bits = v.to_bits();
        words[8 + 2 * k] = bits as u32 as i32;
        words[9 + 2 * k] = (bits >> 32) as u32 as i32;
    }
    words
}

/// The colour-adjustment path for `plan`, whose stage 4 job `pixels` writes the cropped, flipped
/// image as pixels: stage 5's job, and the tensor job reading the adjusted pixels as they are.
fn adjusted(pixels: &TensorJob, plan: &ImagePlan) -> Adjusted {
    let output = &plan.output;
    let (width, height) = (output.crop.width as u32, output.crop.height as u32);
    let mut job = AdjustJob {
        pixels: width * height,
        width,
        adjustments: output.steps.len() as u32,
        ..AdjustJob::default()
    };
    let mut remaps = 0;
    for (k, step) in output.steps.iter().enumerate() {
        (job.kinds[k], job.factors[k]) = match *step {
            Step::Adjust(adjustment) => adjustment_kind(adjustment),
            Step::Remap(map) => {
                job.remaps[remaps * REMAP_WORDS..][..REMAP_WORDS]
                    .copy_from_slice(&remap_words(&map));
                let index = remaps;
                remaps += 1;
                (REMAP, index as f32)
            }
            Step::Blur(blur) => {
                let (kx, ky) = blur.kernel_size;
                job.blur[..MAX_KERNEL].copy_from_slice(&blur.kernel_x);
                job.blur[MAX_KERNEL..].copy_from_slice(&blur.kernel_y);
                (BLUR, (kx | ky << 8) as f32)
            }
            Step::KeepForMix => (KEEP_FOR_MIX, 0.0),
            Step::AddToMix(weight) => (ADD_TO_MIX, weight),
            Step::BlendMix(factor) => (BLEND_MIX, factor),
            Step::KeepForBlends => (KEEP_FOR_BLENDS, 0.0),
            Step::BlendChain(factor) => (BLEND_CHAIN, factor),
            Step::BlendLastChain(factor) => (BLEND_LAST_CHAIN, factor),
        };
    }
    if job.mixes() {
        job.mix = job.scratch_words() as u32;
    }
    let tensor = TensorJob {
        width,
        height,
        crop_x: 0,
        crop_y: 0,
        vertical: 0,
        window: 0,
        from_rgbx: 0,
        source_base: 0,
        stride: width,
        flips: 0,
        rotate: 0,
        padded: [0; 4],
        ..*pixels
    };
    Adjusted { job, tensor }
}

/// A colour adjustment's kind word and factor in stage 5's job (shaders/adjust.wgsl).
fn adjustment_kind(adjustment: Adjustment) -> (u32, f32) {
    match adjustment {
        Adjustment::Brightness(f) => (BRIGHTNESS, f),
        Adjustment::Contrast(f) => (CONTRAST, f),
        Adjustment::Saturation(f) => (SATURATION, f),
        Adjustment::Hue(f) => (HUE, f32::from(crate::plan::hsv::hue_shift(f))),
        Adjustment::Sharpness(f) => (SHARPNESS, f),
        Adjustment::Posterize(bits) => (POSTERIZE, f32::from(bits)),
        Adjustment::Solarize(from) => (SOLARIZE, f32::from(from)),
        Adjustment::SolarizeAdd(add) => (SOLARIZE_ADD, f32::from(add)),
        Adjustment::AutoContrast => (AUTOCONTRAST, 0.0),
        Adjustment::Equalize => (EQUALIZE, 0.0),
        Adjustment::Grayscale => (GRAYSCALE, 0.0),
        Adjustment::PillowGaussianBlur(radius) => {
            let b = BoxBlur::of(radius);
            (BOX_BLUR | b.radius << KIND_BITS, b.weight as f32)
        }
    }
}

impl ImageWork {
    /// Bytes this image adds to a batch's uploads: coefficients, job records and taps.
    pub fn uploaded_bytes(&self) -> u64 {
        let coefs: usize = self
            .planes
            .iter()
            .map(|p| p.coefs.len() + word_count::<IdctJob>() + 1)
            .sum();
        let horizontal = self
            .horizontal
            .as_ref()
            .map_or(0, |h| h.taps.len() + word_count::<HorizontalJob>() + 1);
        let segment = self
            .entropy
            .as_ref()
            .map_or(0, |e| e.segment.words.len() + e.segment.tables.len());
        let words = coefs
            + segment
            + self.raw_samples.len()
            + word_count::<ColorJob>()
            + 1
            + horizontal
            + self.tensor.taps.len()
            + self.tensor.erasures.len()
            + word_count::<TensorJob>()
            + 1
            + self.tensor.adjusted.as_ref().map_or(0, |_| {
                word_count::<AdjustJob>() + word_count::<TensorJob>() + 2
            });
        words as u64 * 4
    }
}

/// `taps` as the vertical pass (shaders/tensor.wgsl) reads them: (start, count) pairs, then the
/// weights, `window` per output row; and where the weights start.
fn tap_words(taps: &Taps) -> (Vec<u32>, u32) {
    let mut words: Vec<u32> = taps.bounds.iter().flat_map(|&(s, n)| [s, n]).collect();
    let weights_base = words.len() as u32;
    words.extend(taps.weights.iter().map(|&w| w as u32));
    (words, weights_base)
}

/// `taps` as the horizontal pass (shaders/resample_h.wgsl) reads them: (start, count) pairs,
/// then the weights tap by tap (tap k of every output column, then tap k + 1), so that
/// neighbouring invocations, which make neighbouring columns, read neighbouring words; and
/// where the weights start.
fn horizontal_tap_words(taps: &Taps) -> (Vec<u32>, u32) {
    let mut words: Vec<u32> = taps.bounds.iter().flat_map(|&(s, n)| [s, n]).collect();
    let weights_base = words.len() as u32;
    let columns = taps.bounds.len();
    words.extend(
        (0..taps.window)
            .flat_map(|k| (0..columns).map(move |x| taps.weights[x * taps.window + k] as u32)),
    );
    (words, weights_base)
}

/// Component `ci`'s coefficients in the compact form shaders/idct.wgsl reads (see
/// [`crate::jpeg::compact`]), its image blocks in row-major order. Blocks libjpeg would smooth
/// are uploaded smoothed (rare and cheap, so it stays on the CPU).
pub(crate) fn compact_coefficients(image: &CoefficientImage, ci: usize) -> CompactPlane {
    let comp = &image.components[ci];
    compact_dense(comp.width_in_blocks, comp.height_in_blocks, |bx, by| {
        image.block_for_idct(ci, bx, by)
    })
}

fn upsampling_job(method: Upsampling) -> PlaneUpsampling {
    let [h, v] = method.axes();
    PlaneUpsampling {
        repeat_h: h.repeat as u32,
        repeat_v: v.repeat as u32,
        fancy_h: u32::from(h.fancy),
        fancy_v: u32::from(v.fancy),
    }
}

fn color_space_index(color_space: ColorSpace) -> u32 {
    match color_space {
        ColorSpace::Grayscale => 0,
        ColorSpace::YCbCr => 1,
        ColorSpace::Rgb => 2,
        ColorSpace::Cmyk => 3,
        ColorSpace::Ycck => 4,
    }
}

/// Invocations of the IDCT for one component: eight a block at full size (`main_8x8` gives each
/// a row and a column), else one per group of blocks that fills whole output words (`main`).
fn idct_invocations(size: usize, per_invocation: usize, comp: &Component) -> usize {
    let groups = comp.width_in_blocks.div_ceil(per_invocation) * comp.height_in_blocks;
    if size == 8 {
        groups * 8
    } else {
        groups
    }
}
