//! Images packed for one submission, as numbers: every stage runs as one dispatch over all of
//! them, its jobs found by a binary search over `starts` (shaders/jobs.wgsl). Intermediate
//! images live in arenas, one buffer per kind, each bound whole or, for the decoded RGBX
//! images, through two windows of the device's largest binding. This file is the layout
//! alone (offsets, job tables, the upload's words); src/gpu/record.rs records it with wgpu.

use super::entropy::{span_words, upload_words, EntropyPacking};
use super::jobs::{words, EntropyJob, TensorJob, HUE};
use super::work::{ImageWork, SegmentImage};
use crate::plan::OutputPlan;
use crate::transform::DType;
use crate::Transform;
use bytemuck::Pod;
use std::ops::Range;
use std::sync::Arc;

/// Pixels of a row one invocation of the colour stage makes: `PIXELS_PER_INVOCATION` in
/// shaders/color.wgsl (a test holds the two equal).
pub(crate) const COLOR_PIXELS_PER_INVOCATION: u32 = 8;

/// One stage's jobs: each job's first invocation, and the job records back to back.
#[derive(Default)]
pub(super) struct StageJobs {
    starts: Vec<u32>,
    words: Vec<u32>,
    total: u64,
}

impl StageJobs {
    fn push<J: Pod>(&mut self, job: &J, invocations: u64) {
        self.starts.push(self.total as u32);
        self.words.extend_from_slice(words(job));
        self.total += invocations;
    }

    /// Adds this stage's tables to `upload`; `None` when the stage has no work.
    fn upload(&self, upload: &mut Upload) -> Option<StageTables> {
        (self.total > 0).then(|| {
            let mut starts = self.starts.clone();
            starts.push(self.total as u32);
            StageTables {
                starts: upload.push(&starts),
                jobs: upload.push(&self.words),
                invocations: self.total as u32,
            }
        })
    }
}

/// Where a stage's `starts` and job records lie in the upload, and its invocations.
pub(super) struct StageTables {
    pub starts: Range<u64>,
    pub jobs: Range<u64>,
    pub invocations: u32,
}

/// Everything a packing sends to the GPU, as one buffer: the small tables first, each at an
/// offset the device can bind, then the regions that threads copy in side by side (taps,
/// coefficients).
struct Upload {
    /// The tables' words.
    words: Vec<u32>,
    /// The device's storage offset alignment, in words.
    align: usize,
    /// Bytes laid out so far, the regions past `words` included.
    end: u64,
}

impl Upload {
    fn new(offset_alignment: u32) -> Self {
        Self {
            words: Vec::new(),
            align: (offset_alignment as usize / 4).max(2),
            end: 0,
        }
    }

    /// Appends `words` (one zero word when empty, as bindings cannot be empty) at the next
    /// aligned offset; returns their byte range. Tables come before every region.
    fn push(&mut self, words: &[u32]) -> Range<u64> {
        debug_assert_eq!(
            self.end,
            self.words.len() as u64 * 4,
            "a table after a region"
        );
        self.words
            .resize(self.words.len().next_multiple_of(self.align), 0);
        let start = self.words.len() as u64 * 4;
        if words.is_empty() {
            self.words.push(0);
        } else {
            self.words.extend_from_slice(words);
        }
        self.end = self.words.len() as u64 * 4;
        start..self.end
    }

    /// Lays out a region of `words` (one at least, as bindings cannot be empty) at the next
    /// aligned offset, written later by the copy threads; returns its byte range.
    fn region(&mut self, words: u64) -> Range<u64> {
        let start = self.end.next_multiple_of(self.align as u64 * 4);
        self.end = start + words.max(1) * 4;
        start..self.end
    }
}

/// Words that go into one region of the upload piece by piece, each piece as it was made: the
/// copy threads copy them straight into the staging buffer ([`Packing::upload_parts`]), so
/// the thread that feeds the GPU never concatenates them (a batch's taps alone are megabytes).
#[derive(Default)]
struct Pieces {
    /// Each piece's first word in the region, and its words.
    pieces: Vec<(u64, Vec<u32>)>,
    /// The region's words, padding included.
    words: u64,
}

impl Pieces {
    /// Appends `words` at the next even word (mapped ranges start at multiples of 8 bytes,
    /// wgpu's `MAP_ALIGNMENT`); returns the word it starts at.
    fn push(&mut self, words: Vec<u32>) -> u64 {
        let at = self.reserve(words.len() as u64);
        if !words.is_empty() {
            self.pieces.push((at, words));
        }
        at
    }

    /// Leaves room for `words` written from elsewhere, at the next even word; returns the
    /// word it starts at.
    fn reserve(&mut self, words: u64) -> u64 {
        let at = self.words.next_multiple_of(2);
        self.words = at + words;
        at
    }
}

/// Where one image's output goes.
struct Output {
    job: TensorJob,
    words: u64,
    /// First word in the output buffer.
    at: u64,
}

/// Images packed for one submission.
pub(crate) struct Packing {
    idct: StageJobs,
    /// Full-size IDCT jobs: a dispatch (and entry point) of their own.
    idct_8x8: StageJobs,
    /// The upload's coefficient region: each plane's compact coefficients (where they go in
    /// the coefficient arena) and non-JPEG images' samples, with room for stage 0's segments.
    coefs: Pieces,
    /// Stage 0's images: their segments' place in the upload's coefficient region, and their
    /// jobs; their coefficients go to the decoded arena.
    segments: Vec<(u64, Arc<SegmentImage>)>,
    pub entropy: EntropyPacking,
    pub decoded_words: u64,
    /// Stage 0's images in slot order: index in the caller's list, first output word, and what
    /// the CPU needs to decode the image should the GPU give up on it.
    pub entropy_images: Vec<(usize, u64, Arc<SegmentImage>)>,
    /// Non-JPEG images' sample planes: where they are in the upload's coefficient region, where
    /// they go in the sample arena, and their length, all in words.
    pub raw_copies: Vec<(u64, u64, u64)>,
    pub sample_words: u64,
    color: StageJobs,
    pub rgbx_words: u64,
    horizontal: StageJobs,
    /// Every image's horizontal taps.
    taps: Pieces,
    pub hpass_words: u64,
    outputs: Vec<Output>,
    /// With colour adjustments (every image of the batch, when the transform has them): stage
    /// 4's jobs writing each image's cropped, flipped pixels, and stage 5's adjusting them; the
    /// outputs then read the pixels.
    pixels: StageJobs,
    adjust: StageJobs,
    pub pixel_words: u64,
    /// Whether an image's adjustments shift the hue (stage 5 then reads the HSV tables).
    hue: bool,
    /// Whether an image's adjustments stretch its contrast (`ImageOps.autocontrast`).
    autocontrast: bool,
    /// The value table, the noise's table where the transform draws noise, then every image's
    /// vertical taps and erased boxes.
    constants: Pieces,
    /// Where the noise's table starts in the constants (0 without).
    noise_base: u32,
    /// The images' indices in the caller's list.
    pub images: Vec<usize>,
}

/// Bytes each arena needs.
struct Footprint {
    coefs: u64,
    decoded: u64,
    spans: u64,
    /// Stage 0's job records (its largest table): one per restart interval.
    entropy_jobs: u64,
    samples: u64,
    rgbx: u64,
    hpass: u64,
    pixels: u64,
    small: u64,
}

impl Footprint {
    fn of(work: &ImageWork) -> Self {
        let coefs = work
            .planes
            .iter()
            .map(|p| p.coefs.len() as u64)
            .sum::<u64>()
            + work.raw_samples.len() as u64
            + work
                .entropy
                .as_ref()
                .map_or(0, |e| upload_words(&e.segment))
            + 2;
        let decoded = match work.entropy {
            Some(_) => work
                .planes
                .iter()
                .map(|p| dense_words(p.job.table_blocks))
                .sum(),
            None => 0,
        };
        let spans = work.entropy.as_ref().map_or(0, |e| span_words(&e.segment));
        let intervals = work
            .entropy
            .as_ref()
            .map_or(0, |e| e.segment.intervals.len());
        let taps = work.horizontal.as_ref().map_or(0, |h| h.taps.len());
        Self {
            coefs: coefs * 4,
            decoded: decoded * 4,
            spans: spans * 4,
            entropy_jobs: (intervals * size_of::<EntropyJob>()) as u64,
            samples: work.sample_words * 4,
            rgbx: work.rgbx_words * 4,
            hpass: work.horizontal.as_ref().map_or(0, |h| h.result_words) * 4,
            pixels: work
                .tensor
                .adjusted
                .as_ref()
                .map_or(0, |a| a.job.arena_words())
                * 4,
            // Each piece of taps and of erased boxes starts at an even word; the noise's table
            // is counted with each image that reads it (beside others, a little too much).
            small: (taps + work.tensor.taps.len() + work.tensor.erasures.len() + 4) as u64 * 4
                + if work.tensor.reads_noise {
                    NOISE_TABLE_WORDS * 4
                } else {
                    0
                },
        }
    }

    /// Whether arenas of these sizes bind within `window` bytes (two windows for RGBX).
    fn binds(&self, window: u64) -> bool {
        self.coefs <= window
            && self.decoded <= window
            && self.spans <= window
            && self.entropy_jobs <= window
            && self.samples <= window
            && self.rgbx <= 2 * window
            && self.hpass <= window
            && self.pixels <= window
            && self.small + 4 * 770 <= window
    }
}

impl Packing {
    /// An empty packing for `transform`.
    pub fn new(transform: &Transform) -> Self {
        let mut constants = Pieces::default();
        constants.push(table_bits(transform));
        let noise = transform
            .random_erasing
            .is_some_and(|e| e.draws_per_element());
        let noise_base = if noise {
            constants.push(noise_bits(transform.dtype)) as u32
        } else {
            0
        };
        Self {
            noise_base,
            idct: StageJobs::default(),
            idct_8x8: StageJobs::default(),
            coefs: Pieces::default(),
            segments: Vec::new(),
            entropy: EntropyPacking::default(),
            decoded_words: 0,
            entropy_images: Vec::new(),
            raw_copies: Vec::new(),
            sample_words: 0,
            color: StageJobs::default(),
            rgbx_words: 0,
            horizontal: StageJobs::default(),
            taps: Pieces::default(),
            hpass_words: 0,
            outputs: Vec::new(),
            pixels: StageJobs::default(),
            adjust: StageJobs::default(),
            pixel_words: 0,
            hue: false,
            autocontrast: false,
            constants,
            images: Vec::new(),
        }
    }

    /// Whether `work` could be packed at all on a device whose bindings hold `window` bytes (its
    /// output is bound a window at a time, so only the batch's output buffer limits it: see
    /// `GpuPipeline::submit_images`).
    pub fn fits_alone(work: &ImageWork, window: u64) -> bool {
        Footprint::of(work).binds(window)
    }

    /// Whether `work` fits beside the images already packed.
    pub fn fits(&self, work: &ImageWork, window: u64) -> bool {
        let more = Footprint::of(work);
        Footprint {
            coefs: self.coefs.words * 4 + more.coefs,
            decoded: self.decoded_words * 4 + more.decoded,
            spans: self.entropy.span_words() * 4 + more.spans,
            entropy_jobs: self.entropy.job_bytes() + more.entropy_jobs,
            samples: self.sample_words * 4 + more.samples,
            rgbx: self.rgbx_words * 4 + more.rgbx,
            hpass: self.hpass_words * 4 + more.hpass,
            pixels: self.pixel_words * 4 + more.pixels,
            small: (self.taps.words + self.constants.words) * 4 + more.small,
        }
        .binds(window)
    }

    /// Adds image `index` of the caller's list, its output going to word `at` of the output.
    pub fn push(&mut self, index: usize, work: ImageWork, at_output: u64) {
        let sample_base = self.sample_words as u32;
        let mut out_base = [0u32; 4];
        for (ci, plane) in work.planes.into_iter().enumerate() {
            let mut job = plane.job;
            job.sample_base += sample_base;
            if job.dense != 0 {
                // Stage 0 writes this plane into the decoded arena.
                job.coef_base = self.decoded_words as u32;
                out_base[ci] = job.coef_base;
                self.decoded_words += dense_words(job.table_blocks);
            } else {
                job.coef_base = self.coefs.push(plane.coefs) as u32;
            }
            let idct = if job.idct_size == 8 {
                &mut self.idct_8x8
            } else {
                &mut self.idct
            };
            idct.push(&job, u64::from(plane.invocations));
        }
        if let Some(source) = work.entropy {
            let at = self.coefs.reserve(upload_words(&source.segment));
            self.entropy.push(&source.segment, at, out_base);
            self.entropy_images
                .push((index, at_output, Arc::clone(&source)));
            self.segments.push((at, source));
        }
        if !work.raw_samples.is_empty() {
            let words = work.raw_samples.len() as u64;
            let from = self.coefs.push(work.raw_samples);
            self.raw_copies.push((from, u64::from(sample_base), words));
        }
        self.sample_words += work.sample_words;
        let mut color = work.color;
        color.rgbx_base = self.rgbx_words as u32;
        for plane in &mut color.planes {
            plane.base += sample_base;
        }
        let invocations = color.width.div_ceil(COLOR_PIXELS_PER_INVOCATION);
        self.color
            .push(&color, u64::from(invocations) * u64::from(color.height));
        let mut tensor = work.tensor.job;
        match work.horizontal {
            Some(h) => {
                let mut job = h.job;
                job.source_base += color.rgbx_base;
                job.result_base = self.hpass_words as u32;
                job.bounds_base = self.taps.push(h.taps) as u32;
                job.weights_base += job.bounds_base;
                self.horizontal.push(&job, h.result_words);
                tensor.source_base = job.result_base;
                self.hpass_words += h.result_words;
            }
            None => tensor.source_base += color.rgbx_base,
        }
        self.rgbx_words += work.rgbx_words;
        tensor.bounds_base = self.constants.push(work.tensor.taps) as u32;
        tensor.weights_base += tensor.bounds_base;
        tensor.erasures[0] = self.constants.push(work.tensor.erasures) as u32;
        tensor.erasures[2] = self.noise_base;
        let output = match work.tensor.adjusted {
            Some(adjusted) => {
                let base = self.pixel_words as u32;
                let pixels = u64::from(adjusted.job.pixels);
                // Stage 4 writes the pixels (one word each) where stage 5 adjusts them.
                tensor.out_base = base;
                self.pixels.push(&tensor, pixels);
                let mut job = adjusted.job;
                job.pixels_base = base;
                self.hue |= job.has_step(HUE);
                self.autocontrast |= job.autocontrasts();
                // One workgroup an image: its lanes sum the contrast's luma together.
                self.adjust
                    .push(&job, u64::from(super::dispatch::WORKGROUP));
                self.pixel_words += job.arena_words();
                TensorJob {
                    source_base: base,
                    erasures: tensor.erasures,
                    ..adjusted.tensor
                }
            }
            None => tensor,
        };
        self.outputs.push(Output {
            job: output,
            words: work.tensor.words,
            at: at_output,
        });
        self.images.push(index);
    }

    /// Whether stage 5 stretches an image's contrast in this packing (it then reads the
    /// autocontrast fix table).
    pub fn autocontrasts(&self) -> bool {
        self.autocontrast
    }

    /// Whether stage 5 shifts a hue in this packing.
    pub fn shifts_hue(&self) -> bool {
        self.hue
    }

    /// Whether the outputs read adjusted pixels (from the pixel arena, bound where the
    /// horizontal pass's output is otherwise).
    pub fn adjusts(&self) -> bool {
        self.adjust.total > 0
    }
}

/// Words of `blocks` dense blocks in the decoded arena.
fn dense_words(blocks: u32) -> u64 {
    u64::from(blocks) * 32
}

impl Packing {
    /// The tensor stage's jobs for each window of `window` bytes of the output: the part of
    /// each image's output that falls in it.
    fn tensor_windows(&self, window: u64) -> Vec<StageJobs> {
        let window_words = window / 4;
        let end = self
            .outputs
            .iter()
            .map(|o| o.at + o.words)
            .max()
            .unwrap_or(0);
        (0..end)
            .step_by(window_words as usize)
            .map(|first| {
                let last = first + window_words;
                let mut jobs = StageJobs::default();
                for output in &self.outputs {
                    let (from, to) = (output.at.max(first), (output.at + output.words).min(last));
                    if from < to {
                        let mut job = output.job;
                        job.first_word = (from - output.at) as u32;
                        job.out_base = (from - first) as u32;
                        jobs.push(&job, to - from);
                    }
                }
                jobs
            })
            .collect()
    }

    /// The upload's regions as `layout` places them, piece by piece: each piece's first byte in
    /// the upload and its words (the copy threads write them, see [`UploadWrite`]).
    ///
    /// [`UploadWrite`]: super::staging::UploadWrite
    pub(super) fn upload_parts(&self, layout: &UploadLayout) -> Vec<(u64, &[u32])> {
        fn in_region(start: u64, pieces: &Pieces) -> impl Iterator<Item = (u64, &[u32])> {
            let pieces = pieces.pieces.iter();
            pieces.map(move |(at, words)| (start + at * 4, &words[..]))
        }
        let segments = self.segments.iter().flat_map(|(at, source)| {
            let s = &source.segment;
            [
                (*at, &s.words[..]),
                (at + s.words.len() as u64, &s.tables[..]),
            ]
        });
        let coefs = layout.coefs.start;
        in_region(coefs, &self.coefs)
            .chain(segments.map(|(at, words)| (coefs + at * 4, words)))
            .chain(in_region(layout.tables.taps.start, &self.taps))
            .chain(in_region(layout.tables.constants.start, &self.constants))
            .collect()
    }
}

/// Where each stage's job tables lie in the upload.
pub(super) struct StageTableSet {
    pub idct: Option<StageTables>,
    pub idct_8x8: Option<StageTables>,
    pub color: Option<StageTables>,
    pub horizontal: Option<StageTables>,
    /// Stage 4 writing pixels for stage 5, and stage 5.
    pub pixels: Option<StageTables>,
    pub adjust: Option<StageTables>,
    /// One per window of the output.
    pub tensor: Vec<Option<StageTables>>,
    pub taps: Range<u64>,
    pub constants: Range<u64>,
    /// Stage 0's four tables, with images for it.
    pub entropy: Option<[Range<u64>; 4]>,
}

/// A packing's upload as laid out: the small tables' words (written first, by the recording
/// thread), where each stage's tables lie, and the regions written by the copy threads (see
/// [`Packing::upload_parts`]): the taps, then the coefficients and segments, which end it.
pub(super) struct UploadLayout {
    pub tables_words: Vec<u32>,
    pub tables: StageTableSet,
    pub coefs: Range<u64>,
}

impl Packing {
    /// The upload's layout on a device whose storage bindings start at multiples of
    /// `offset_alignment` bytes and hold at most `window` bytes.
    pub(super) fn upload_layout(&self, offset_alignment: u32, window: u64) -> UploadLayout {
        let mut upload = Upload::new(offset_alignment);
        let tables = StageTableSet {
            idct: self.idct.upload(&mut upload),
            idct_8x8: self.idct_8x8.upload(&mut upload),
            color: self.color.upload(&mut upload),
            horizontal: self.horizontal.upload(&mut upload),
            pixels: self.pixels.upload(&mut upload),
            adjust: self.adjust.upload(&mut upload),
            tensor: self
                .tensor_windows(window)
                .iter()
                .map(|jobs| jobs.upload(&mut upload))
                .collect(),
            entropy: (!self.entropy.is_empty())
                .then(|| self.entropy.tables().map(|words| upload.push(&words))),
            taps: upload.region(self.taps.words),
            constants: upload.region(self.constants.words),
        };
        let coefs = upload.region(self.coefs.words);
        UploadLayout {
            tables_words: upload.words,
            tables,
            coefs,
        }
    }
}

/// Packs `works` (each with its index in the caller's list and the first word of its output)
/// in order, opening a new packing where the next image would not bind within `window` bytes
/// beside the ones before it. Every image must fit on its own ([`Packing::fits_alone`]).
pub(crate) fn pack(
    works: impl IntoIterator<Item = (usize, ImageWork, u64)>,
    transform: &Transform,
    window: u64,
) -> Vec<Packing> {
    let mut packings: Vec<Packing> = Vec::new();
    for (index, work, at) in works {
        if !packings.last().is_some_and(|p| p.fits(&work, window)) {
            packings.push(Packing::new(transform));
        }
        packings
            .last_mut()
            .expect("one packing at least")
            .push(index, work, at);
    }
    packings
}

/// The words of the noise's table, with its alignment.
const NOISE_TABLE_WORDS: u64 = (1 << 16) + 2;

/// The noise's table of normal values as output elements of `dtype`
/// ([`crate::plan::erasing`]).
fn noise_bits(dtype: DType) -> Vec<u32> {
    crate::plan::erasing::normal_table()
        .iter()
        .map(|&v| super::work::element_bits(v, dtype))
        .collect()
}

/// The 3×256 output elements as the bits the shader writes: u8 values, or f16 / f32 bits of the
/// CPU-built float32 table (so the GPU does no float arithmetic at all).
fn table_bits(transform: &Transform) -> Vec<u32> {
    // The table depends on the transform alone, not on an image's size.
    let table = OutputPlan::new((1, 1), transform, &crate::plan::Params::default()).value_table();
    table
        .iter()
        .flat_map(|channel| {
            channel
                .iter()
                .enumerate()
                .map(|(v, &value)| match transform.dtype {
                    DType::U8 => v as u32,
                    dtype => super::work::element_bits(value, dtype),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::COLOR_PIXELS_PER_INVOCATION;

    /// The colour stage's invocations are counted with the shader's own number of pixels each.
    #[test]
    fn colour_invocations_are_counted_as_the_shader_makes_them() {
        let shader = include_str!("../../shaders/color.wgsl");
        let line = format!("const PIXELS_PER_INVOCATION: u32 = {COLOR_PIXELS_PER_INVOCATION}u;");
        assert!(shader.contains(&line), "shaders/color.wgsl lacks {line:?}");
    }
}
