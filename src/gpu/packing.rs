//! Images packed for one submission: every stage runs as one dispatch over all of them, its jobs
//! found by a binary search over `starts` (shaders/jobs.wgsl). Intermediate images live in
//! arenas, one buffer per kind, each bound whole or, for the decoded RGBX images, through two
//! windows of the device's largest binding.

use super::dispatch::{run, storage_buffer, BufferPool};
use super::jobs::TensorJob;
use super::work::ImageWork;
use super::Stages;
use crate::error::{Error, Result};
use crate::reference::tensor::value_table;
use crate::transform::DType;
use crate::Transform;
use rayon::prelude::*;
use std::num::NonZeroU64;

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

    /// Records one dispatch over every job, binding `starts` and the jobs first, then
    /// `resources` in order.
    fn dispatch(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        resources: &[wgpu::BindingResource],
    ) {
        if self.total == 0 {
            return;
        }
        let mut starts = self.starts.clone();
        starts.push(self.total as u32);
        let starts = storage_buffer(device, "job starts", &starts, wgpu::BufferUsages::empty());
        let jobs = storage_buffer(device, "jobs", &self.words, wgpu::BufferUsages::empty());
        let mut entries = vec![
            wgpu::BindGroupEntry {
                binding: 0,
                resource: starts.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: jobs.as_entire_binding(),
            },
        ];
        entries.extend(
            resources
                .iter()
                .enumerate()
                .map(|(i, resource)| wgpu::BindGroupEntry {
                    binding: 2 + i as u32,
                    resource: resource.clone(),
                }),
        );
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        run(device, encoder, pipeline, &bind_group, self.total as u32);
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
    /// Each plane's compact coefficients and where they go in the coefficient arena; copied
    /// into the upload in parallel.
    coefs: Vec<(u64, Vec<u32>)>,
    coef_words: u64,
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
    samples: u64,
    rgbx: u64,
    hpass: u64,
    small: u64,
}

impl Footprint {
    fn of(work: &ImageWork) -> Self {
        let coefs: u64 = work.planes.iter().map(|p| p.coefs.len() as u64).sum();
        let taps = work.horizontal.as_ref().map_or(0, |h| h.taps.len());
        Self {
            coefs: coefs * 4,
            samples: work.sample_words * 4,
            rgbx: work.rgbx_words * 4,
            hpass: work.horizontal.as_ref().map_or(0, |h| h.result_words) * 4,
            small: (taps + work.tensor.taps.len()) as u64 * 4,
        }
    }

    /// Whether arenas of these sizes bind within `window` bytes (two windows for RGBX).
    fn binds(&self, window: u64) -> bool {
        self.coefs <= window
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
            coefs: Vec::new(),
            coef_words: 0,
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
            samples: self.sample_words * 4 + more.samples,
            rgbx: self.rgbx_words * 4 + more.rgbx,
            hpass: self.hpass_words * 4 + more.hpass,
            small: (self.taps.len() + self.constants.len()) as u64 * 4 + more.small,
        }
        .binds(window)
    }

    /// Adds image `index` of the caller's list, its output going to word `at` of the output.
    pub fn push(&mut self, index: usize, work: ImageWork, at: u64) {
        let sample_base = self.sample_words as u32;
        for plane in work.planes {
            let mut job = plane.job;
            // Mapped ranges start at multiples of 8 bytes (wgpu's MAP_ALIGNMENT).
            self.coef_words = self.coef_words.next_multiple_of(2);
            job.coef_base = self.coef_words as u32;
            job.sample_base += sample_base;
            self.idct.push(&job.words(), u64::from(plane.invocations));
            self.coef_words += plane.coefs.len() as u64;
            self.coefs.push((u64::from(job.coef_base), plane.coefs));
        }
        self.sample_words += work.sample_words;
        let mut color = work.color;
        color.rgbx_base = self.rgbx_words as u32;
        for plane in &mut color.planes {
            plane.base += sample_base;
        }
        self.color.push(
            &color.words(),
            u64::from(color.width) * u64::from(color.height),
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
            at,
        });
        self.images.push(index);
    }

    /// Whether no image is packed.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// Records the four stages, writing each image's output into `output`, binding at most
    /// `window` bytes at a time. `after_stage` is called with each stage's name once it is
    /// recorded (stage timing submits the encoder there).
    pub fn record(
        &self,
        stages: &Stages,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::Buffer,
        window: u64,
        pool: &BufferPool,
        after_stage: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let dummy = storage_buffer(device, "unused", &[0], wgpu::BufferUsages::empty());
        // Every word of these that a stage reads was written by the stage before.
        let arena = |label: &str, words: u64| {
            pool.take(device, label, words * 4, wgpu::BufferUsages::STORAGE)
        };
        let coefs = self.upload_coefficients(device)?;
        let samples = arena("samples", self.sample_words);
        self.idct.dispatch(
            device,
            encoder,
            &stages.idct,
            &[coefs.as_entire_binding(), samples.as_entire_binding()],
        );
        after_stage("idct", encoder);
        let rgbx = arena("rgbx", self.rgbx_words);
        let rgbx_windows = windows::<2>(&rgbx, window, &dummy);
        self.color.dispatch(
            device,
            encoder,
            &stages.color,
            &[
                samples.as_entire_binding(),
                rgbx_windows[0].clone(),
                rgbx_windows[1].clone(),
            ],
        );
        after_stage("color", encoder);
        let hpass = arena("horizontal pass", self.hpass_words);
        let taps = storage_buffer(device, "taps", &self.taps, wgpu::BufferUsages::empty());
        self.horizontal.dispatch(
            device,
            encoder,
            &stages.horizontal,
            &[
                rgbx_windows[0].clone(),
                rgbx_windows[1].clone(),
                taps.as_entire_binding(),
                hpass.as_entire_binding(),
            ],
        );
        after_stage("horizontal", encoder);
        let constants = storage_buffer(
            device,
            "constants",
            &self.constants,
            wgpu::BufferUsages::empty(),
        );
        let window_words = window / 4;
        let end = self
            .outputs
            .iter()
            .map(|o| o.at + o.words)
            .max()
            .unwrap_or(0);
        for (k, first) in (0..end).step_by(window_words as usize).enumerate() {
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
            let size = (output.size() - k as u64 * window).min(window);
            jobs.dispatch(
                device,
                encoder,
                &stages.tensor,
                &[
                    rgbx_windows[0].clone(),
                    rgbx_windows[1].clone(),
                    hpass.as_entire_binding(),
                    constants.as_entire_binding(),
                    binding(output, k as u64 * window, size),
                ],
            );
        }
        after_stage("tensor", encoder);
        drop(rgbx_windows);
        for buffer in [samples, rgbx, hpass] {
            pool.put(buffer);
        }
        Ok(())
    }
}

impl Packing {
    /// The coefficient arena, each plane copied into the mapped buffer by its own thread.
    fn upload_coefficients(&self, device: &wgpu::Device) -> Result<wgpu::Buffer> {
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("coefficients"),
            size: (self.coef_words * 4).max(4),
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: true,
        });
        self.coefs
            .par_iter()
            .filter(|(_, words)| !words.is_empty())
            .try_for_each(|(at, words)| -> Result<()> {
                let range = at * 4..(at + words.len() as u64) * 4;
                let mut view = buffer
                    .slice(range)
                    .get_mapped_range_mut()
                    .map_err(|e| Error::Gpu(format!("cannot write the coefficients: {e}")))?;
                view.copy_from_slice(bytemuck::cast_slice(words));
                Ok(())
            })?;
        buffer.unmap();
        Ok(buffer)
    }
}

/// Bytes `offset .. offset + size` of `buffer` as a binding.
fn binding(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: NonZeroU64::new(size),
    })
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
    let table = value_table(transform);
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
