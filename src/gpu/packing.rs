//! Images packed for one submission: every stage runs as one dispatch over all of them, its jobs
//! found by a binary search over `starts` (shaders/jobs.wgsl). Intermediate images live in
//! arenas, one buffer per kind, each bound whole or, for the decoded RGBX images, through two
//! windows of the device's largest binding.

use super::dispatch::run;
use super::entropy::{span_words, upload_words, EntropyBuffers, EntropyPacking};
use super::jobs::TensorJob;
use super::pipeline::GpuPipeline;
use super::staging::UploadWrite;
use super::work::{ImageWork, SegmentImage};
use crate::error::{Error, Result};
use crate::plan::OutputPlan;
use crate::transform::DType;
use crate::Transform;
use std::num::NonZeroU64;
use std::sync::Arc;

/// The largest storage binding this device offers, as a whole number of offset-alignment units
/// (so that windows can start at its multiples).
pub(crate) fn binding_window(device: &wgpu::Device) -> u64 {
    let limits = device.limits();
    let align = u64::from(limits.min_storage_buffer_offset_alignment).max(4);
    let max = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
        .min(u64::from(u32::MAX) + 1);
    max / align * align
}

/// One stage's jobs: each job's first invocation, and the job records back to back.
#[derive(Default)]
struct StageJobs {
    starts: Vec<u32>,
    words: Vec<u32>,
    total: u64,
}

impl StageJobs {
    fn push(&mut self, job: &[u32], invocations: u64) {
        self.starts.push(self.total as u32);
        self.words.extend_from_slice(job);
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

/// Where a stage's `starts` and job records lie in the upload.
struct StageTables {
    starts: std::ops::Range<u64>,
    jobs: std::ops::Range<u64>,
    invocations: u32,
}

impl StageTables {
    /// Records one dispatch over every job, binding `starts` and the jobs first, then
    /// `resources` in order.
    fn dispatch(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        upload: &wgpu::Buffer,
        resources: &[wgpu::BindingResource],
    ) {
        let tables = [&self.starts, &self.jobs]
            .map(|range| binding(upload, range.start, range.end - range.start));
        let entries: Vec<wgpu::BindGroupEntry> = tables
            .into_iter()
            .chain(resources.iter().cloned())
            .enumerate()
            .map(|(i, resource)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource,
            })
            .collect();
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        run(device, encoder, pipeline, &bind_group, self.invocations);
    }
}

/// Everything a packing sends to the GPU, as one buffer: the small tables first, each at an
/// offset the device can bind, then the coefficients, which threads copy in side by side.
struct Upload {
    words: Vec<u32>,
    /// The device's storage offset alignment, in words.
    align: usize,
}

impl Upload {
    fn new(device: &wgpu::Device) -> Self {
        let align = device.limits().min_storage_buffer_offset_alignment as usize / 4;
        Self {
            words: Vec::new(),
            align: align.max(2),
        }
    }

    /// Appends `words` (one zero word when empty, as bindings cannot be empty) at the next
    /// aligned offset; returns their byte range.
    fn push(&mut self, words: &[u32]) -> std::ops::Range<u64> {
        self.words
            .resize(self.words.len().next_multiple_of(self.align), 0);
        let start = self.words.len() as u64 * 4;
        if words.is_empty() {
            self.words.push(0);
        } else {
            self.words.extend_from_slice(words);
        }
        start..self.words.len() as u64 * 4
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
    /// Each plane's compact coefficients and where they go in the coefficient arena; copied
    /// into the upload in parallel.
    coefs: Vec<(u64, Vec<u32>)>,
    coef_words: u64,
    /// Stage 0's images: their segments' place in the upload's coefficient region, and their
    /// jobs; their coefficients go to the decoded arena.
    segments: Vec<(u64, Arc<SegmentImage>)>,
    entropy: EntropyPacking,
    decoded_words: u64,
    /// Stage 0's images in slot order: index in the caller's list, first output word, and what
    /// the CPU needs to decode the image should the GPU give up on it.
    pub entropy_images: Vec<(usize, u64, Arc<SegmentImage>)>,
    /// Non-JPEG images' sample planes: where they are in the upload's coefficient region, where
    /// they go in the sample arena, and their length, all in words.
    raw_copies: Vec<(u64, u64, u64)>,
    sample_words: u64,
    color: StageJobs,
    rgbx_words: u64,
    horizontal: StageJobs,
    taps: Vec<u32>,
    hpass_words: u64,
    outputs: Vec<Output>,
    /// The value table, then every image's vertical taps.
    constants: Vec<u32>,
    /// The images' indices in the caller's list.
    pub images: Vec<usize>,
}

/// Bytes each arena needs.
struct Footprint {
    coefs: u64,
    decoded: u64,
    spans: u64,
    samples: u64,
    rgbx: u64,
    hpass: u64,
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
        let taps = work.horizontal.as_ref().map_or(0, |h| h.taps.len());
        Self {
            coefs: coefs * 4,
            decoded: decoded * 4,
            spans: spans * 4,
            samples: work.sample_words * 4,
            rgbx: work.rgbx_words * 4,
            hpass: work.horizontal.as_ref().map_or(0, |h| h.result_words) * 4,
            small: (taps + work.tensor.taps.len()) as u64 * 4,
        }
    }

    /// Whether arenas of these sizes bind within `window` bytes (two windows for RGBX).
    fn binds(&self, window: u64) -> bool {
        self.coefs <= window
            && self.decoded <= window
            && self.spans <= window
            && self.samples <= window
            && self.rgbx <= 2 * window
            && self.hpass <= window
            && self.small + 4 * 768 <= window
    }
}

impl Packing {
    /// An empty packing for `transform`.
    pub fn new(transform: &Transform) -> Self {
        Self {
            idct: StageJobs::default(),
            idct_8x8: StageJobs::default(),
            coefs: Vec::new(),
            coef_words: 0,
            segments: Vec::new(),
            entropy: EntropyPacking::default(),
            decoded_words: 0,
            entropy_images: Vec::new(),
            raw_copies: Vec::new(),
            sample_words: 0,
            color: StageJobs::default(),
            rgbx_words: 0,
            horizontal: StageJobs::default(),
            taps: Vec::new(),
            hpass_words: 0,
            outputs: Vec::new(),
            constants: table_bits(transform),
            images: Vec::new(),
        }
    }

    /// Whether `work` could be packed at all on a device whose bindings hold `window` bytes.
    pub fn fits_alone(work: &ImageWork, window: u64) -> bool {
        Footprint::of(work).binds(window)
    }

    /// Whether `work` fits beside the images already packed.
    pub fn fits(&self, work: &ImageWork, window: u64) -> bool {
        let more = Footprint::of(work);
        Footprint {
            coefs: self.coef_words * 4 + more.coefs,
            decoded: self.decoded_words * 4 + more.decoded,
            spans: self.entropy.span_words() * 4 + more.spans,
            samples: self.sample_words * 4 + more.samples,
            rgbx: self.rgbx_words * 4 + more.rgbx,
            hpass: self.hpass_words * 4 + more.hpass,
            small: (self.taps.len() + self.constants.len()) as u64 * 4 + more.small,
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
                // Mapped ranges start at multiples of 8 bytes (wgpu's MAP_ALIGNMENT).
                self.coef_words = self.coef_words.next_multiple_of(2);
                job.coef_base = self.coef_words as u32;
                self.coef_words += plane.coefs.len() as u64;
                self.coefs.push((u64::from(job.coef_base), plane.coefs));
            }
            let idct = if job.idct_size == 8 {
                &mut self.idct_8x8
            } else {
                &mut self.idct
            };
            idct.push(&job.words(), u64::from(plane.invocations));
        }
        if let Some(source) = work.entropy {
            self.coef_words = self.coef_words.next_multiple_of(2);
            let at = self.coef_words;
            self.entropy.push(&source.segment, at, out_base);
            self.coef_words += upload_words(&source.segment);
            self.entropy_images
                .push((index, at_output, Arc::clone(&source)));
            self.segments.push((at, source));
        }
        if !work.raw_samples.is_empty() {
            self.coef_words = self.coef_words.next_multiple_of(2);
            let (from, words) = (self.coef_words, work.raw_samples.len() as u64);
            self.raw_copies.push((from, u64::from(sample_base), words));
            self.coefs.push((from, work.raw_samples));
            self.coef_words += words;
        }
        self.sample_words += work.sample_words;
        let mut color = work.color;
        color.rgbx_base = self.rgbx_words as u32;
        for plane in &mut color.planes {
            plane.base += sample_base;
        }
        // The colour stage takes four pixels of a row an invocation.
        self.color.push(
            &color.words(),
            u64::from(color.width.div_ceil(4)) * u64::from(color.height),
        );
        let mut tensor = work.tensor.job;
        match work.horizontal {
            Some(h) => {
                let mut job = h.job;
                job.source_base = color.rgbx_base;
                job.result_base = self.hpass_words as u32;
                job.bounds_base = self.taps.len() as u32;
                job.weights_base += job.bounds_base;
                self.taps.extend_from_slice(&h.taps);
                self.horizontal.push(&job.words(), h.result_words);
                tensor.source_base = job.result_base;
                self.hpass_words += h.result_words;
            }
            None => tensor.source_base = color.rgbx_base,
        }
        self.rgbx_words += work.rgbx_words;
        tensor.bounds_base = self.constants.len() as u32;
        tensor.weights_base += tensor.bounds_base;
        self.constants.extend_from_slice(&work.tensor.taps);
        self.outputs.push(Output {
            job: tensor,
            words: work.tensor.words,
            at: at_output,
        });
        self.images.push(index);
    }

    /// Whether no image is packed.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// Records the stages, writing each image's output into `output`, binding at most `window`
    /// bytes at a time. `after_stage` is called with each stage's name once it is recorded
    /// (stage timing submits the encoder there; the staging buffer's copy is recorded before
    /// any stage, so it is in the first submission). The copy threads write the upload's
    /// coefficients and segments while this thread records, and it helps them once it has
    /// (see [`UploadWrite`]): on the critical path of a batch, the two took about as long each.
    pub fn record(
        &self,
        pipeline: &GpuPipeline,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::Buffer,
        window: u64,
        after_stage: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<Recorded> {
        let mut upload = Upload::new(device);
        let tables = StageTableSet {
            idct: self.idct.upload(&mut upload),
            idct_8x8: self.idct_8x8.upload(&mut upload),
            color: self.color.upload(&mut upload),
            horizontal: self.horizontal.upload(&mut upload),
            tensor: self
                .tensor_windows(window)
                .iter()
                .map(|jobs| jobs.upload(&mut upload))
                .collect(),
            taps: upload.push(&self.taps),
            constants: upload.push(&self.constants),
            entropy: (!self.entropy.is_empty())
                .then(|| self.entropy.tables().map(|words| upload.push(&words))),
        };
        let coef_start = upload.push(&[]).start;
        let (buffer, staging, coefs) =
            self.start_upload(device, encoder, pipeline, upload, coef_start)?;
        let record_stages =
            |encoder: &mut wgpu::CommandEncoder,
             after_stage: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder)| {
                after_stage("upload", encoder);
                let stages = Bound {
                    tables: &tables,
                    upload: &buffer,
                    coefs: coefs.clone(),
                    output,
                    window,
                };
                self.record_stages(pipeline, device, encoder, stages, after_stage)
            };
        let write = UploadWrite::new(&staging, self.upload_parts(coef_start));
        let status = if pipeline.time_stages() {
            // Each stage is submitted on its own there, the upload first: written before.
            write.run(&pipeline.copiers, || ());
            staging.unmap();
            record_stages(encoder, after_stage)
        } else {
            let status = write.run(&pipeline.copiers, || record_stages(encoder, after_stage));
            staging.unmap();
            status
        };
        let upload = write.finish()?;
        pipeline.pool.put(buffer);
        Ok(Recorded {
            status: status?,
            upload,
            staging,
        })
    }

    /// Records every stage after the upload's copy (see [`Self::record`]); returns stage 0's
    /// status buffer, if it has images.
    fn record_stages(
        &self,
        pipeline: &GpuPipeline,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        bound: Bound,
        after_stage: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<Option<wgpu::Buffer>> {
        let (stages, pool) = (&pipeline.stages, &pipeline.pool);
        let Bound {
            tables,
            upload,
            coefs,
            output,
            window,
        } = bound;
        let StageTableSet {
            idct,
            idct_8x8,
            color,
            horizontal,
            tensor,
            taps,
            constants,
            entropy: entropy_tables,
        } = tables;
        let table =
            |range: &std::ops::Range<u64>| binding(upload, range.start, range.end - range.start);
        // Every word of these that a stage reads was written by the stage before (or copied
        // from the upload, for non-JPEG images' samples).
        let arena = |label: &str, words: u64| {
            let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
            pool.take(device, label, words * 4, usage)
        };
        // At least a row of four words, as the IDCT reads it.
        let decoded = arena("decoded coefficients", self.decoded_words.max(4));
        let status = self.record_entropy(
            device,
            encoder,
            pipeline,
            entropy_tables
                .as_ref()
                .map(|tables| tables.each_ref().map(table)),
            table(&coefs),
            &decoded,
            after_stage,
        )?;
        after_stage("entropy", encoder);
        let samples = arena("samples", self.sample_words);
        for &(from, to, words) in &self.raw_copies {
            encoder.copy_buffer_to_buffer(
                upload,
                coefs.start + from * 4,
                &samples,
                to * 4,
                words * 4,
            );
        }
        for (jobs, stage) in [(&idct, &stages.idct), (&idct_8x8, &stages.idct_8x8)] {
            if let Some(jobs) = jobs {
                jobs.dispatch(
                    device,
                    encoder,
                    stage,
                    upload,
                    &[
                        table(&coefs),
                        first_window(&samples, window),
                        first_window(&decoded, window),
                    ],
                );
            }
        }
        after_stage("idct", encoder);
        let rgbx = arena("rgbx", self.rgbx_words);
        let rgbx_windows = windows::<2>(&rgbx, window, &pipeline.placeholder);
        if let Some(color) = &color {
            color.dispatch(
                device,
                encoder,
                &stages.color,
                upload,
                &[
                    first_window(&samples, window),
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                ],
            );
        }
        after_stage("color", encoder);
        let hpass = arena("horizontal pass", self.hpass_words);
        if let Some(horizontal) = &horizontal {
            horizontal.dispatch(
                device,
                encoder,
                &stages.horizontal,
                upload,
                &[
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                    table(taps),
                    first_window(&hpass, window),
                ],
            );
        }
        after_stage("horizontal", encoder);
        for (k, jobs) in tensor.iter().enumerate() {
            let Some(jobs) = jobs else { continue };
            let offset = k as u64 * window;
            let size = (output.size() - offset).min(window);
            jobs.dispatch(
                device,
                encoder,
                &stages.tensor,
                upload,
                &[
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                    first_window(&hpass, window),
                    table(constants),
                    binding(output, offset, size),
                ],
            );
        }
        after_stage("tensor", encoder);
        for buffer in [decoded, samples, rgbx, hpass] {
            pool.put(buffer);
        }
        Ok(status)
    }

    /// Records stage 0 for this packing's segments (in the upload at `data`, their job tables
    /// at `tables`, `None` without segments) into `decoded`, calling `after_pass` after each
    /// pass; returns the buffer its status words are copied to.
    #[allow(clippy::too_many_arguments, reason = "the stage's buffers, one by one")]
    fn record_entropy(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &GpuPipeline,
        tables: Option<[wgpu::BindingResource; 3]>,
        data: wgpu::BindingResource,
        decoded: &wgpu::Buffer,
        after_pass: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<Option<wgpu::Buffer>> {
        let Some(tables) = tables else {
            return Ok(None);
        };
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let pool = &pipeline.pool;
        let spans = pool.take(device, "spans", self.entropy.span_words() * 4, usage);
        let flag_words = self.entropy.flag_words();
        let flags = pool.take(
            device,
            "entropy flags",
            flag_words * 4,
            usage | wgpu::BufferUsages::COPY_SRC,
        );
        let buffers = EntropyBuffers {
            tables,
            data,
            spans: &spans,
            flags: &flags,
            decoded,
            decoded_words: self.decoded_words,
        };
        self.entropy.record(
            device,
            encoder,
            &pipeline.stages.entropy,
            buffers,
            after_pass,
        )?;
        let status_bytes = self.entropy.status_words() * 4;
        let status = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("entropy status"),
            size: status_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.copy_buffer_to_buffer(&flags, 0, &status, 0, status_bytes);
        pool.put(spans);
        pool.put(flags);
        Ok(Some(status))
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
                        jobs.push(&job.words(), to - from);
                    }
                }
                jobs
            })
            .collect()
    }

    /// Starts the upload: a staging buffer of the ring holding `upload`'s tables (written here;
    /// [`Self::write_upload`] writes the rest, from byte `coef_start`), and its copy into a
    /// pooled device buffer recorded into `encoder`. Returns that buffer, the staging buffer
    /// (to unmap once written, and back to the ring once `encoder` is submitted) and the
    /// coefficients' byte range.
    fn start_upload(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &GpuPipeline,
        upload: Upload,
        coef_start: u64,
    ) -> Result<(wgpu::Buffer, wgpu::Buffer, std::ops::Range<u64>)> {
        let coef_end = coef_start + (self.coef_words * 4).max(4);
        let staging = pipeline.staging.take(device, coef_end);
        staging
            .slice(..coef_start)
            .get_mapped_range_mut()
            .map_err(mapping_error)?
            .copy_from_slice(bytemuck::cast_slice(
                &upload.words[..coef_start as usize / 4],
            ));
        // COPY_SRC: non-JPEG images' samples are copied on into the sample arena.
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let buffer = pipeline.pool.take(device, "upload", coef_end, usage);
        // Submitting checks that the staging buffer is unmapped by then; recording does not.
        encoder.copy_buffer_to_buffer(&staging, 0, &buffer, 0, coef_end);
        Ok((buffer, staging, coef_start..coef_end))
    }

    /// The coefficients and segments to write into the staging buffer, each with its first
    /// byte there (the region from `coef_start`).
    fn upload_parts(&self, coef_start: u64) -> Vec<(u64, &[u32])> {
        let segments = self.segments.iter().flat_map(|(at, source)| {
            let s = &source.segment;
            [
                (*at, &s.words[..]),
                (at + s.words.len() as u64, &s.tables[..]),
            ]
        });
        self.coefs
            .iter()
            .map(|(at, words)| (*at, &words[..]))
            .chain(segments)
            .map(|(at, words)| (coef_start + at * 4, words))
            .collect()
    }
}

fn mapping_error(e: wgpu::MapRangeError) -> Error {
    Error::Gpu(format!("cannot write the upload: {e}"))
}

/// Where each stage's job tables lie in the upload.
struct StageTableSet {
    idct: Option<StageTables>,
    idct_8x8: Option<StageTables>,
    color: Option<StageTables>,
    horizontal: Option<StageTables>,
    /// One per window of the output.
    tensor: Vec<Option<StageTables>>,
    taps: std::ops::Range<u64>,
    constants: std::ops::Range<u64>,
    /// Stage 0's three tables, with images for it.
    entropy: Option<[std::ops::Range<u64>; 3]>,
}

/// What [`Packing::record_stages`] binds: the tables and the upload holding them, the
/// coefficients' range in it, the output, and the largest binding.
struct Bound<'a> {
    tables: &'a StageTableSet,
    upload: &'a wgpu::Buffer,
    coefs: std::ops::Range<u64>,
    output: &'a wgpu::Buffer,
    window: u64,
}

/// What recording a packing leaves: the verdict buffer of its stage 0 images, the time spent
/// writing its upload, and the staging buffer the upload is copied from, which goes back to
/// the ring ([`Recorded::submitted`]) once the encoder is submitted.
#[must_use = "the staging buffer goes back to the ring after the submit"]
pub(crate) struct Recorded {
    /// With stage 0 images: a word per [`Packing::entropy_images`], 1 where the GPU decoded
    /// it, to map once the work has run.
    pub status: Option<wgpu::Buffer>,
    /// Writing the upload (CPU).
    pub upload: std::time::Duration,
    staging: wgpu::Buffer,
}

impl Recorded {
    /// Call once the encoder the packing was recorded into is submitted; returns the status
    /// buffer.
    pub fn submitted(self, pipeline: &GpuPipeline) -> Option<wgpu::Buffer> {
        pipeline.staging.put(self.staging);
        self.status
    }
}

/// Bytes `offset .. offset + size` of `buffer` as a binding.
pub(crate) fn binding(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: NonZeroU64::new(size),
    })
}

/// `buffer`'s first `window` bytes as a binding: an arena from the pool may be larger than one
/// binding holds (sizes are rounded up), but the part a packing uses fits in one.
fn first_window(buffer: &wgpu::Buffer, window: u64) -> wgpu::BindingResource<'_> {
    binding(buffer, 0, buffer.size().min(window))
}

/// `buffer` as `N` consecutive bindings of at most `window` bytes; the windows past its end are
/// bound to `dummy`.
fn windows<'a, const N: usize>(
    buffer: &'a wgpu::Buffer,
    window: u64,
    dummy: &'a wgpu::Buffer,
) -> [wgpu::BindingResource<'a>; N] {
    std::array::from_fn(|k| {
        let offset = k as u64 * window;
        if offset < buffer.size() {
            binding(buffer, offset, (buffer.size() - offset).min(window))
        } else {
            dummy.as_entire_binding()
        }
    })
}

/// The 3×256 output elements as the bits the shader writes: u8 values, or f16 / f32 bits of the
/// CPU-built float32 table (so the GPU does no float arithmetic at all).
fn table_bits(transform: &Transform) -> Vec<u32> {
    // The table depends on the transform alone, not on an image's size.
    let table = OutputPlan::new((1, 1), transform).value_table();
    table
        .iter()
        .flat_map(|channel| {
            channel
                .iter()
                .enumerate()
                .map(|(v, &value)| match transform.dtype {
                    DType::U8 => v as u32,
                    DType::F16 => u32::from(half::f16::from_f32(value).to_bits()),
                    DType::F32 => value.to_bits(),
                })
        })
        .collect()
}
