//! Recording a [`Packing`] with wgpu: its upload written and copied to the device, then each
//! stage's dispatch over the packing's jobs, bound to arenas from the pool.

use super::bindings::{binding, first_window, windows};
use super::dispatch::{run, BufferPool};
use super::entropy::EntropyBuffers;
use super::packing::{Packing, StageTableSet, StageTables, UploadLayout};
use super::stages::Stages;
use super::staging::{StagingRing, UploadWrite};
use crate::error::{GpuError, Result};
use std::ops::Range;

/// What recording needs of a [`super::GpuPipeline`]: its compiled stages and the buffers it
/// keeps between batches.
pub(crate) struct Recorder<'a> {
    pub device: &'a wgpu::Device,
    pub stages: &'a Stages,
    pub pool: &'a BufferPool,
    pub staging: &'a StagingRing,
    /// One word, bound where a stage's binding has nothing to show (an image's second RGBX
    /// window when its first holds it all).
    pub placeholder: &'a wgpu::Buffer,
    /// The threads that write uploads.
    pub copiers: &'a rayon::ThreadPool,
    /// Whether the whole upload is written before the stages are recorded (stage timing
    /// submits each stage on its own, the upload's copy first).
    pub upload_first: bool,
    /// The pipeline's HSV tables, once made.
    pub hsv: &'a std::sync::OnceLock<HsvBuffers>,
    /// The pipeline's autocontrast fix table ([`crate::plan::levels::autocontrast_fixes`]),
    /// once made.
    pub autocontrast_fixes: &'a std::sync::OnceLock<wgpu::Buffer>,
}

/// [`crate::plan::hsv::HsvTables`] on the device, for stage 5's hue adjustment.
pub(crate) struct HsvBuffers {
    pub to_hsv: wgpu::Buffer,
    pub to_rgb: wgpu::Buffer,
}

impl HsvBuffers {
    fn new(device: &wgpu::Device) -> Self {
        let tables = crate::plan::hsv::HsvTables::new();
        Self {
            to_hsv: table_buffer(device, "rgb to hsv", &tables.to_hsv),
            to_rgb: table_buffer(device, "hsv to rgb", &tables.to_rgb),
        }
    }
}

/// A storage buffer holding `words`, for the shaders to read.
pub(crate) fn table_buffer(device: &wgpu::Device, label: &str, words: &[u32]) -> wgpu::Buffer {
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: words.len() as u64 * 4,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: true,
    });
    if let Ok(mut range) = buffer.slice(..).get_mapped_range_mut() {
        range.copy_from_slice(bytemuck::cast_slice(words));
    }
    buffer.unmap();
    buffer
}

/// What [`Recorder::record_stages`] binds: the tables and the upload holding them, the
/// coefficients' range in it, the output, and the largest binding.
struct Bound<'a> {
    tables: &'a StageTableSet,
    upload: &'a wgpu::Buffer,
    coefs: Range<u64>,
    output: &'a wgpu::Buffer,
    window: u64,
}

/// What recording a packing leaves: the verdict buffer of its stage 0 images, the time spent
/// writing its upload, and the staging buffer the upload is copied from, which goes back to
/// the ring ([`Recorded::submitted`]) once the encoder is submitted.
#[must_use = "the staging buffer goes back to the ring after the submit"]
pub(crate) struct Recorded {
    /// With stage 0 images: a word per [`Packing::entropy_images`], the number of its restart
    /// intervals the GPU decoded (all of them where it decoded the image), to map once the
    /// work has run.
    pub status: Option<wgpu::Buffer>,
    /// Writing the upload (CPU).
    pub upload: std::time::Duration,
    staging: wgpu::Buffer,
}

impl Recorded {
    /// Call once the encoder the packing was recorded into is submitted; returns the status
    /// buffer.
    pub fn submitted(self, ring: &StagingRing) -> Option<wgpu::Buffer> {
        ring.put(self.staging);
        self.status
    }
}

impl Recorder<'_> {
    /// Records `packing`'s stages, writing each image's output into `output`, binding at most
    /// `window` bytes at a time. `after_stage` is called with each stage's name once it is
    /// recorded (stage timing submits the encoder there; the staging buffer's copy is recorded
    /// before any stage, so it is in the first submission). The copy threads write the
    /// upload's coefficients and segments while this thread records, and it helps them once it
    /// has (see [`UploadWrite`]): on the critical path of a batch, the two took about as long
    /// each.
    pub fn record(
        &self,
        packing: &Packing,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::Buffer,
        window: u64,
        after_stage: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<Recorded> {
        let alignment = self.device.limits().min_storage_buffer_offset_alignment;
        let layout = packing.upload_layout(alignment, window);
        let (buffer, staging) = self.start_upload(encoder, &layout)?;
        let parts = packing.upload_parts(&layout);
        let UploadLayout { tables, coefs, .. } = layout;
        let record_stages =
            |encoder: &mut wgpu::CommandEncoder,
             after_stage: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder)| {
                after_stage("upload", encoder);
                let bound = Bound {
                    tables: &tables,
                    upload: &buffer,
                    coefs: coefs.clone(),
                    output,
                    window,
                };
                self.record_stages(packing, encoder, bound, after_stage)
            };
        let write = UploadWrite::new(&staging, parts);
        let status = if self.upload_first {
            write.run(self.copiers, || ());
            staging.unmap();
            record_stages(encoder, after_stage)
        } else {
            let status = write.run(self.copiers, || record_stages(encoder, after_stage));
            staging.unmap();
            status
        };
        let upload = write.finish()?;
        self.pool.put(buffer);
        Ok(Recorded {
            status: status?,
            upload,
            staging,
        })
    }

    /// Starts the upload: a staging buffer of the ring holding the layout's tables (written
    /// here; the copy threads write the rest, from the coefficients' first byte), and its copy
    /// into a pooled device buffer recorded into `encoder`. Returns that buffer and the staging
    /// buffer (to unmap once written, and back to the ring once `encoder` is submitted).
    fn start_upload(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        layout: &UploadLayout,
    ) -> Result<(wgpu::Buffer, wgpu::Buffer)> {
        let end = layout.coefs.end;
        let staging = self.staging.take(self.device, end);
        staging
            .slice(..layout.tables_words.len() as u64 * 4)
            .get_mapped_range_mut()
            .map_err(GpuError::from)?
            .copy_from_slice(bytemuck::cast_slice(&layout.tables_words));
        // COPY_SRC: non-JPEG images' samples are copied on into the sample arena.
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let buffer = self.pool.take(self.device, "upload", end, usage);
        // Submitting checks that the staging buffer is unmapped by then; recording does not.
        encoder.copy_buffer_to_buffer(&staging, 0, &buffer, 0, end);
        Ok((buffer, staging))
    }

    /// Records one dispatch over every job of `tables`, binding its `starts` and jobs first,
    /// then `resources` in order.
    fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        upload: &wgpu::Buffer,
        tables: &StageTables,
        resources: &[wgpu::BindingResource],
    ) {
        let lookup = [&tables.starts, &tables.jobs]
            .map(|range| binding(upload, range.start, range.end - range.start));
        let entries: Vec<wgpu::BindGroupEntry> = lookup
            .into_iter()
            .chain(resources.iter().cloned())
            .enumerate()
            .map(|(i, resource)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource,
            })
            .collect();
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        run(
            self.device,
            encoder,
            pipeline,
            &bind_group,
            tables.invocations,
        );
    }
    /// Records every stage after the upload's copy (see [`Self::record`]); returns stage 0's
    /// status buffer, if it has images.
    fn record_stages(
        &self,
        packing: &Packing,
        encoder: &mut wgpu::CommandEncoder,
        bound: Bound,
        after_stage: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<Option<wgpu::Buffer>> {
        let (device, stages, pool) = (self.device, self.stages, self.pool);
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
            pixels: pixel_jobs,
            adjust,
            tensor,
            taps,
            constants,
            entropy: entropy_tables,
        } = tables;
        let table = |range: &Range<u64>| binding(upload, range.start, range.end - range.start);
        // Every word of these that a stage reads was written by the stage before (or copied
        // from the upload, for non-JPEG images' samples), but the decoded blocks of an image
        // stage 0 gave up on: the IDCT reads whatever they hold, and the image is redone from
        // the CPU's coefficients, whose output replaces it.
        let arena = |label: &str, words: u64| {
            let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
            pool.take(device, label, words * 4, usage)
        };
        // At least a row of four words, as the IDCT reads it.
        let decoded = arena("decoded coefficients", packing.decoded_words.max(4));
        let status = self.record_entropy(
            packing,
            encoder,
            entropy_tables
                .as_ref()
                .map(|tables| tables.each_ref().map(table)),
            table(&coefs),
            &decoded,
            after_stage,
        )?;
        after_stage("entropy", encoder);
        let samples = arena("samples", packing.sample_words);
        for &(from, to, words) in &packing.raw_copies {
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
                self.dispatch(
                    encoder,
                    stage,
                    upload,
                    jobs,
                    &[
                        table(&coefs),
                        first_window(&samples, window),
                        first_window(&decoded, window),
                    ],
                );
            }
        }
        after_stage("idct", encoder);
        let rgbx = arena("rgbx", packing.rgbx_words);
        let rgbx_windows = windows::<2>(&rgbx, window, self.placeholder);
        if let Some(color) = &color {
            self.dispatch(
                encoder,
                &stages.color,
                upload,
                color,
                &[
                    first_window(&samples, window),
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                ],
            );
        }
        after_stage("color", encoder);
        let hpass = arena("horizontal pass", packing.hpass_words);
        if let Some(horizontal) = &horizontal {
            self.dispatch(
                encoder,
                &stages.horizontal,
                upload,
                horizontal,
                &[
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                    table(taps),
                    first_window(&hpass, window),
                ],
            );
        }
        after_stage("horizontal", encoder);
        // With colour adjustments, stage 4 writes pixels, stage 5 adjusts them, and the tensor
        // reads them where it would read the horizontal pass's output.
        let pixels = arena("pixels", packing.pixel_words);
        if let (Some(pixel_jobs), Some(adjust)) = (pixel_jobs, adjust) {
            self.dispatch(
                encoder,
                &stages.pixels,
                upload,
                pixel_jobs,
                &[
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                    first_window(&hpass, window),
                    table(constants),
                    first_window(&pixels, window),
                ],
            );
            // The hue tables where a batch has a hue adjustment, else a word standing in.
            let (to_hsv, to_rgb) = if packing.shifts_hue() {
                let hsv = self.hsv.get_or_init(|| HsvBuffers::new(device));
                (&hsv.to_hsv, &hsv.to_rgb)
            } else {
                (self.placeholder, self.placeholder)
            };
            let fixes = if packing.autocontrasts() {
                self.autocontrast_fixes.get_or_init(|| {
                    let words = crate::plan::levels::autocontrast_fixes();
                    table_buffer(device, "autocontrast fixes", &words)
                })
            } else {
                self.placeholder
            };
            self.dispatch(
                encoder,
                &stages.adjust,
                upload,
                adjust,
                &[
                    first_window(&pixels, window),
                    to_hsv.as_entire_binding(),
                    to_rgb.as_entire_binding(),
                    fixes.as_entire_binding(),
                ],
            );
        }
        after_stage("adjust", encoder);
        let tensor_source = if packing.adjusts() { &pixels } else { &hpass };
        for (k, jobs) in tensor.iter().enumerate() {
            let Some(jobs) = jobs else { continue };
            let offset = k as u64 * window;
            let size = (output.size() - offset).min(window);
            self.dispatch(
                encoder,
                &stages.tensor,
                upload,
                jobs,
                &[
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                    first_window(tensor_source, window),
                    table(constants),
                    binding(output, offset, size),
                ],
            );
        }
        after_stage("tensor", encoder);
        for buffer in [decoded, samples, rgbx, hpass, pixels] {
            pool.put(buffer);
        }
        Ok(status)
    }

    /// Records stage 0 for this packing's segments (in the upload at `data`, their job tables
    /// at `tables`, `None` without segments) into `decoded`, calling `after_pass` after each
    /// pass; returns the buffer its status words are copied to.
    fn record_entropy(
        &self,
        packing: &Packing,
        encoder: &mut wgpu::CommandEncoder,
        tables: Option<[wgpu::BindingResource; 4]>,
        data: wgpu::BindingResource,
        decoded: &wgpu::Buffer,
        after_pass: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<Option<wgpu::Buffer>> {
        let Some(tables) = tables else {
            return Ok(None);
        };
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let (device, pool) = (self.device, self.pool);
        let spans = pool.take(device, "spans", packing.entropy.span_words() * 4, usage);
        let flag_words = packing.entropy.flag_words();
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
            decoded_words: packing.decoded_words,
        };
        packing
            .entropy
            .record(device, encoder, &self.stages.entropy, buffers, after_pass)?;
        let status_bytes = packing.entropy.status_words() * 4;
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
