//! Stage 0 on the GPU: Huffman decoding of entropy-coded segments (shaders/entropy.wgsl, whose
//! CPU mirror is [`crate::jpeg::parallel`]).

use super::bindings::binding;
use super::dispatch::{grid, WORKGROUP};
use super::jobs::{EntropyImage, EntropyJob};
use crate::error::Result;
use crate::jpeg::parallel::{subsequences, sync_dispatches, MAX_SYNC_DISPATCHES, SUBSEQUENCE_BITS};
use crate::jpeg::segment::{EntropySegment, TABLE_WORDS};
use wgpu::util::DeviceExt;

/// Words of one subsequence's record in the spans arena (`SPAN_WORDS` of the shader).
const SPAN_WORDS: u64 = 16;

/// The values of shaders/entropy.wgsl's `override` constants.
pub(super) const CONSTANTS: &[(&str, f64)] = &[
    ("SUBSEQUENCE_BITS", SUBSEQUENCE_BITS as f64),
    ("TABLE_WORDS", TABLE_WORDS as f64),
    ("SPAN_WORDS", SPAN_WORDS as f64),
];

/// The passes, sharing one bind group layout.
pub(crate) struct EntropyStages {
    layout: wgpu::BindGroupLayout,
    /// Sync dispatch d's number at byte `d * dispatch_stride`: the uniform each pass reads
    /// through a dynamic offset.
    dispatch_numbers: wgpu::Buffer,
    dispatch_stride: u32,
    sync_first: wgpu::ComputePipeline,
    sync: wgpu::ComputePipeline,
    prefix_local: wgpu::ComputePipeline,
    prefix_groups: wgpu::ComputePipeline,
    write: wgpu::ComputePipeline,
}

impl EntropyStages {
    pub fn new(device: &wgpu::Device) -> Self {
        let source = super::shaders::stage_source("entropy.wgsl");
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("entropy"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        // starts, jobs and data are read; spans, flags and decoded written; then the pass's
        // dispatch number, and the images the jobs belong to (read).
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..8)
            .map(|binding| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match binding {
                        6 => wgpu::BufferBindingType::Uniform,
                        _ => wgpu::BufferBindingType::Storage {
                            read_only: binding < 3 || binding == 7,
                        },
                    },
                    has_dynamic_offset: binding == 6,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("entropy"),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("entropy"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |entry_point: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry_point),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: CONSTANTS,
                    ..Default::default()
                },
                cache: None,
            })
        };
        let dispatch_stride = device.limits().min_uniform_buffer_offset_alignment.max(16);
        let stride_words = dispatch_stride as usize / 4;
        let mut numbers = vec![0u32; MAX_SYNC_DISPATCHES * stride_words];
        for (dispatch, number) in numbers.iter_mut().step_by(stride_words).enumerate() {
            *number = dispatch as u32;
        }
        let dispatch_numbers = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sync dispatch numbers"),
            contents: bytemuck::cast_slice(&numbers),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        Self {
            sync_first: pipeline("sync_first"),
            sync: pipeline("sync"),
            prefix_local: pipeline("prefix_local"),
            prefix_groups: pipeline("prefix_groups"),
            write: pipeline("write"),
            layout,
            dispatch_numbers,
            dispatch_stride,
        }
    }
}

/// What stage 0 reads and writes.
pub(crate) struct EntropyBuffers<'a> {
    /// [`EntropyPacking::tables`]: the job records, the image records, the per-subsequence
    /// passes' `starts` and `prefix_groups`'.
    pub tables: [wgpu::BindingResource<'a>; 4],
    /// The upload holding the segments' data and tables.
    pub data: wgpu::BindingResource<'a>,
    /// Scratch of at least [`EntropyPacking::span_words`].
    pub spans: &'a wgpu::Buffer,
    /// At least [`EntropyPacking::flag_words`]; afterwards, word `slot` is 1 where that
    /// segment was decoded ([`EntropyPacking::status_words`]).
    pub flags: &'a wgpu::Buffer,
    /// The decoded arena, whose first `decoded_words` (every segment's blocks) are cleared and
    /// then receive the coefficients (the blocks of a segment left to the CPU may hold some of
    /// them; its redo does not read them).
    pub decoded: &'a wgpu::Buffer,
    pub decoded_words: u64,
}

/// Segments packed for one submission: their records, and their intervals' (the jobs).
#[derive(Default)]
pub(crate) struct EntropyPacking {
    jobs: Vec<EntropyJob>,
    images: Vec<EntropyImage>,
    /// Each job's first invocation in the per-subsequence passes and in `prefix_groups`
    /// ([`Self::place`]), and each pass's invocations so far.
    span_starts: Vec<u32>,
    prefix_starts: Vec<u32>,
    span_invocations: u32,
    prefix_invocations: u32,
    spans: u64,
    /// The most sync dispatches a segment needs.
    dispatches: usize,
}

/// Words a segment takes in the upload: its data, then its tables.
pub(crate) fn upload_words(segment: &EntropySegment) -> u64 {
    (segment.words.len() + segment.tables.len()) as u64
}

/// Words a segment takes in the spans arena.
pub(crate) fn span_words(segment: &EntropySegment) -> u64 {
    let intervals = 0..segment.intervals.len();
    let spans: usize = intervals.map(|i| subsequences(&segment.interval(i))).sum();
    spans as u64 * SPAN_WORDS
}

impl EntropyPacking {
    /// Adds `segment`, whose data and then tables are at word `data_base` of the upload and whose
    /// component c's dense coefficients go to word `out_base[c]` of the decoded arena: a job per
    /// restart interval. Returns its slot (its place among the segments).
    pub fn push(&mut self, segment: &EntropySegment, data_base: u64, out_base: [u32; 4]) -> usize {
        let image = self.images.len() as u32;
        let mut record = EntropyImage {
            tables_base: (data_base + segment.words.len() as u64) as u32,
            blocks_per_mcu: segment.blocks.len() as u32,
            mcus: segment.mcus as u32,
            restart_mcus: segment.intervals[0].mcus.max(1) as u32,
            out_base,
            ..EntropyImage::default()
        };
        for (b, (word, block)) in record
            .mcu_blocks
            .iter_mut()
            .zip(&segment.blocks)
            .enumerate()
        {
            *word = block.word();
            record.scan_comps |= (block.scan_comp as u32) << (2 * b);
        }
        self.images.push(record);
        for (i, interval) in segment.intervals.iter().enumerate() {
            let data = segment.interval(i);
            self.jobs.push(EntropyJob {
                data_base: (data_base + interval.first_word as u64) as u32,
                bit_len: interval.bit_len as u32,
                first_span: self.spans as u32,
                index: i as u32,
                image,
            });
            let n = subsequences(&data);
            self.place(n as u32);
            self.spans += n as u64;
            self.dispatches = self.dispatches.max(sync_dispatches(&data));
        }
        image as usize
    }

    /// Places the next job, of `n` subsequences, in both passes' invocations. In the
    /// per-subsequence passes, a job of up to a workgroup's subsequences shares one workgroup
    /// with others but is never split between two, and a larger one starts a workgroup: either
    /// way its workgroups are the mirror's (restart intervals, a few subsequences each, fill
    /// workgroups instead of idling most of one). In `prefix_groups`, a larger job takes a whole
    /// workgroup and a smaller one an invocation (idle: its sums lie within one workgroup).
    fn place(&mut self, n: u32) {
        let group = WORKGROUP;
        let large = n > group;
        if large || self.span_invocations % group + n > group {
            self.span_invocations = self.span_invocations.next_multiple_of(group);
        }
        self.span_starts.push(self.span_invocations);
        self.span_invocations += n;
        if large {
            self.prefix_invocations = self.prefix_invocations.next_multiple_of(group);
        }
        self.prefix_starts.push(self.prefix_invocations);
        self.prefix_invocations += if large { group } else { 1 };
    }

    /// Whether no segment is packed.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Words of the flags buffer: per segment, how many of its intervals were decoded (its
    /// status); then per sync dispatch, each segment's changes and those of all of them.
    pub fn flag_words(&self) -> u64 {
        let images = self.images.len() as u64;
        images + self.dispatches as u64 * (images + 1)
    }

    /// The status words, first in the flags buffer: word `slot` counts that segment's intervals
    /// decoded, all of them where the segment was.
    pub fn status_words(&self) -> u64 {
        self.images.len() as u64
    }

    /// Bytes of the job records.
    pub fn job_bytes(&self) -> u64 {
        std::mem::size_of_val(&self.jobs[..]) as u64
    }

    /// Words of the spans arena.
    pub fn span_words(&self) -> u64 {
        self.spans * SPAN_WORDS
    }

    /// The job records, the image records and the `starts` of the per-subsequence passes and of
    /// `prefix_groups`, each ending with its pass's total: [`EntropyBuffers::tables`].
    pub fn tables(&self) -> [Vec<u32>; 4] {
        let jobs = bytemuck::cast_slice(&self.jobs).to_vec();
        let images = bytemuck::cast_slice(&self.images).to_vec();
        let with_total = |starts: &[u32], total: u32| [starts, &[total]].concat();
        let per_span = with_total(&self.span_starts, self.span_invocations);
        let prefix = with_total(&self.prefix_starts, self.prefix_invocations);
        [jobs, images, per_span, prefix]
    }

    /// [`Self::tables`] in buffers of their own (where no upload holds them).
    #[cfg(test)]
    pub fn table_buffers(&self, device: &wgpu::Device) -> Result<Vec<wgpu::Buffer>> {
        let usage = wgpu::BufferUsages::empty();
        self.tables()
            .iter()
            .map(|words| super::dispatch::storage_buffer(device, "entropy table", words, usage))
            .collect()
    }

    /// Records the passes (see [`EntropyBuffers`]), calling `after_pass` with each one's name
    /// once it is recorded (for timing them). Sync dispatches are recorded for the segment that
    /// needs most; once one changes nothing, those after it return at once. The flags are cleared
    /// once: each dispatch counts in words of its own.
    pub fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        stages: &EntropyStages,
        buffers: EntropyBuffers,
        after_pass: &mut dyn FnMut(&'static str, &mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let flags_bytes = self.flag_words() * 4;
        // Each bound as far as it is used: a pooled buffer may be larger than the device binds.
        let decoded_bytes = (buffers.decoded_words * 4).max(4);
        let resources = [
            buffers.data,
            binding(buffers.spans, 0, (self.span_words() * 4).max(4)),
            binding(buffers.flags, 0, flags_bytes),
            binding(buffers.decoded, 0, decoded_bytes),
        ];
        let [jobs, images, span_starts, image_starts] = buffers.tables;
        let (spans_total, prefix_invocations) = (self.span_invocations, self.prefix_invocations);
        let bind_group = |starts: &wgpu::BindingResource| {
            let dispatch_number = wgpu::BufferBinding {
                buffer: &stages.dispatch_numbers,
                offset: 0,
                size: std::num::NonZeroU64::new(16),
            };
            let resources = [starts.clone(), jobs.clone()]
                .into_iter()
                .chain(resources.iter().cloned())
                .chain([
                    wgpu::BindingResource::Buffer(dispatch_number),
                    images.clone(),
                ]);
            let entries: Vec<wgpu::BindGroupEntry> = resources
                .enumerate()
                .map(|(i, resource)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource,
                })
                .collect();
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("entropy"),
                layout: &stages.layout,
                entries: &entries,
            })
        };
        let (per_span_group, per_image_group) =
            (bind_group(&span_starts), bind_group(&image_starts));
        encoder.clear_buffer(buffers.flags, 0, Some(flags_bytes));
        encoder.clear_buffer(buffers.decoded, 0, Some(buffers.decoded_words * 4));
        after_pass("huffman_clear", encoder);
        let dispatches = self.dispatches;
        let mut pass = |name, pipeline, group, invocations, dispatch: usize| {
            let (x, y) = grid(device, invocations);
            let offset = dispatch as u32 * stages.dispatch_stride;
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, group, &[offset]);
            pass.dispatch_workgroups(x, y, 1);
            drop(pass);
            after_pass(name, encoder);
        };
        let (sync_first, sync) = (&stages.sync_first, &stages.sync);
        pass(
            "huffman_sync_first",
            sync_first,
            &per_span_group,
            spans_total,
            0,
        );
        for dispatch in 1..dispatches {
            pass("huffman_sync", sync, &per_span_group, spans_total, dispatch);
        }
        pass(
            "huffman_prefix_local",
            &stages.prefix_local,
            &per_span_group,
            spans_total,
            0,
        );
        pass(
            "huffman_prefix_groups",
            &stages.prefix_groups,
            &per_image_group,
            prefix_invocations,
            0,
        );
        // The write pass reads the last sync dispatch's changes.
        let (write, last) = (&stages.write, dispatches - 1);
        pass("huffman_write", write, &per_span_group, spans_total, last);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::dispatch::{checked, read_buffer, storage_buffer};
    use crate::gpu::stamps::StageStamps;
    use crate::jpeg::compact::tests::test_jpegs;
    use crate::jpeg::{decode_for_gpu, parallel, Coefficients, Limits};

    /// Decodes `segments` on the GPU, on their own: per segment, each component's dense blocks in
    /// table order, or `None` where the GPU left it to the CPU. For tests and measurements; the
    /// pipeline records the stage with the others.
    pub(crate) fn decode_segments(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        stages: &EntropyStages,
        segments: &[EntropySegment],
    ) -> Result<Vec<Option<Vec<Vec<i16>>>>> {
        let mut packing = EntropyPacking::default();
        let mut planes = Vec::new();
        let mut decoded_words = 0u64;
        let mut upload = Vec::new();
        for segment in segments {
            let mut out_base = [0u32; 4];
            let mut sizes = Vec::new();
            let components = segment.blocks.iter().map(|b| b.comp + 1).max().unwrap_or(0);
            for (comp, base) in out_base.iter_mut().enumerate().take(components) {
                let per_mcu = segment.blocks.iter().filter(|b| b.comp == comp).count();
                let words = (segment.mcus * per_mcu * 32) as u64;
                *base = decoded_words as u32;
                sizes.push((decoded_words, words));
                decoded_words += words;
            }
            packing.push(segment, upload.len() as u64, out_base);
            upload.extend_from_slice(&segment.words);
            upload.extend_from_slice(&segment.tables);
            planes.push(sizes);
        }
        let flag_words = packing.flag_words();
        checked(device, || {
            let scratch = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            let data = storage_buffer(device, "entropy data", &upload, scratch)?;
            let zeros = |words: u64| vec![0u32; words.max(1) as usize];
            let spans = storage_buffer(device, "spans", &zeros(packing.span_words()), scratch)?;
            let flags = storage_buffer(device, "flags", &zeros(packing.flag_words()), scratch)?;
            // Not zeros: the stage must clear what it writes.
            let stale = vec![0xDEAD_BEEF_u32; decoded_words.max(1) as usize];
            let decoded = storage_buffer(device, "decoded", &stale, scratch)?;
            let mut encoder = device.create_command_encoder(&Default::default());
            let tables = packing.table_buffers(device)?;
            let buffers = EntropyBuffers {
                tables: [0, 1, 2, 3].map(|t| tables[t].as_entire_binding()),
                data: data.as_entire_binding(),
                spans: &spans,
                flags: &flags,
                decoded: &decoded,
                decoded_words,
            };
            packing.record(device, &mut encoder, stages, buffers, &mut |_, _| {})?;
            let (flag_bytes, decoded_bytes) = (packing.flag_words() * 4, decoded_words.max(1) * 4);
            let mapped = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
            let readback = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("entropy readback"),
                size: flag_bytes + decoded_bytes,
                usage: mapped,
                mapped_at_creation: false,
            });
            encoder.copy_buffer_to_buffer(&flags, 0, &readback, 0, flag_bytes);
            encoder.copy_buffer_to_buffer(&decoded, 0, &readback, flag_bytes, decoded_bytes);
            let submission = crate::gpu::submit(queue, [encoder.finish()]);
            read_buffer(
                device,
                &readback,
                flag_bytes + decoded_bytes,
                submission,
                |bytes| {
                    let words: &[u32] = bytemuck::cast_slice(bytes);
                    planes
                        .iter()
                        .enumerate()
                        .map(|(slot, sizes)| {
                            let intervals = segments[slot].intervals.len();
                            (words[slot] as usize == intervals).then(|| {
                                sizes
                                    .iter()
                                    .map(|&(at, len)| {
                                        let at = (flag_words + at) as usize;
                                        bytemuck::cast_slice::<u32, i16>(
                                            &words[at..at + len as usize],
                                        )
                                        .to_vec()
                                    })
                                    .collect()
                            })
                        })
                        .collect()
                },
            )
        })
    }

    /// Every test file's segment, whole and cut short, decoded on the GPU in one batch, gives
    /// exactly what the CPU mirror gives (which another test holds to the sequential decoder),
    /// and is left to the CPU exactly where the mirror leaves it.
    #[test]
    fn gpu_decoding_is_the_mirror() {
        let Some(gpu) = crate::gpu::context::test_gpu() else {
            return;
        };
        let stages = EntropyStages::new(&gpu.device);
        let files = test_jpegs();
        let limits = Limits {
            load_truncated: true,
            ..Limits::default()
        };
        let mut segments = Vec::new();
        let mut names = Vec::new();
        for path in &files {
            let whole = std::fs::read(path).unwrap();
            for cut in [whole.len(), whole.len() * 2 / 3] {
                if let Ok((_, Coefficients::Segment(s))) = decode_for_gpu(&whole[..cut], &limits) {
                    segments.push(s);
                    names.push(format!("{} cut at {cut}", path.display()));
                }
            }
        }
        let decoded = decode_segments(&gpu.device, &gpu.queue, &stages, &segments).unwrap();
        let (mut on_gpu, mut with_restarts) = (0, 0);
        for ((segment, gpu), name) in segments.iter().zip(decoded).zip(&names) {
            let mirror = parallel::decode(segment);
            assert_eq!(gpu.is_some(), mirror.is_some(), "{name}");
            if let (Some(gpu), Some(mirror)) = (gpu, mirror) {
                on_gpu += 1;
                with_restarts += usize::from(segment.intervals.len() > 1);
                assert!(gpu == mirror, "{name}: coefficients differ");
            }
        }
        eprintln!(
            "{on_gpu} of {} segments decoded on the GPU, {with_restarts} with restart markers",
            segments.len()
        );
        assert!(on_gpu > 80, "{on_gpu} decoded");
        assert!(
            with_restarts >= 10,
            "{with_restarts} with restart markers decoded"
        );
    }

    /// An image of more than 64 workgroups of subsequences (a large photo's scan: the prefix
    /// sums its workgroups' totals in chunks of several) decodes on the GPU as the mirror and
    /// the sequential decoder decode it.
    #[test]
    fn a_scan_of_many_workgroups_is_the_mirror() {
        let Some(gpu) = crate::gpu::context::test_gpu() else {
            return;
        };
        let (width, height) = (640, 480);
        // Noise at quality 100 keeps nearly every coefficient: about a megabyte of codes.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let noise: Vec<u8> = (0..width * height * 3)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 32) as u8
            })
            .collect();
        let pixels = crate::encode::Pixels {
            width,
            height,
            channels: 3,
            data: &noise,
        };
        let options = crate::encode::JpegOptions {
            quality: 100,
            subsampling: Some(crate::encode::Subsampling::Full),
            optimize: false,
        };
        let jpeg = crate::encode::encode(pixels, &options).unwrap();
        let Ok((_, Coefficients::Segment(segment))) = decode_for_gpu(&jpeg, &Limits::default())
        else {
            panic!("a baseline JPEG is one segment");
        };
        let groups = parallel::subsequences(&segment.interval(0)).div_ceil(64);
        assert!(groups > 2 * 64, "{groups} workgroups of subsequences");
        let stages = EntropyStages::new(&gpu.device);
        let decoded = decode_segments(
            &gpu.device,
            &gpu.queue,
            &stages,
            std::slice::from_ref(&segment),
        );
        let gpu_planes = decoded
            .unwrap()
            .pop()
            .flatten()
            .expect("decoded on the GPU");
        assert!(gpu_planes == parallel::decode_sequential(&segment));
    }

    /// Throughput of the stage on a directory of JPEGs (`GPUPREP_BENCH_DIR`), for the GPU
    /// machine: the CPU's share (reading the segments, on all cores) and the GPU's (the passes,
    /// submitted and waited for, nothing read back), each over the whole set.
    #[test]
    #[ignore = "a measurement: run with GPUPREP_BENCH_DIR=DIR -- --ignored --nocapture"]
    fn entropy_stage_throughput() {
        use rayon::prelude::*;
        let dir = std::env::var("GPUPREP_BENCH_DIR").expect("GPUPREP_BENCH_DIR");
        let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        let copies: usize = std::env::var("GPUPREP_BENCH_COPIES").map_or(1, |c| c.parse().unwrap());
        files = files
            .iter()
            .cycle()
            .take(files.len() * copies)
            .cloned()
            .collect();
        let limits = Limits::default();
        let read = |files: &[Vec<u8>]| -> Vec<EntropySegment> {
            files
                .par_iter()
                .filter_map(|f| match decode_for_gpu(f, &limits) {
                    Ok((_, Coefficients::Segment(s))) => Some(s),
                    _ => None,
                })
                .collect()
        };
        let segments = read(&files);
        let start = std::time::Instant::now();
        let rounds = 5;
        for _ in 0..rounds {
            std::hint::black_box(read(&files));
        }
        let cpu = start.elapsed().as_secs_f64() / rounds as f64;
        let Some(gpu) = crate::gpu::context::test_gpu() else {
            return;
        };
        let stages = EntropyStages::new(&gpu.device);
        let mut packing = EntropyPacking::default();
        let mut decoded_words = 0u64;
        let mut upload = Vec::new();
        for segment in &segments {
            packing.push(segment, upload.len() as u64, [decoded_words as u32; 4]);
            upload.extend_from_slice(&segment.words);
            upload.extend_from_slice(&segment.tables);
            decoded_words += (segment.mcus * segment.blocks.len() * 32) as u64;
        }
        let usage = wgpu::BufferUsages::COPY_DST;
        let device = &gpu.device;
        let data = storage_buffer(device, "data", &upload, usage).unwrap();
        let zeros = |words: u64| vec![0u32; words.max(1) as usize];
        let spans = storage_buffer(device, "spans", &zeros(packing.span_words()), usage).unwrap();
        let flags = storage_buffer(device, "flags", &zeros(packing.flag_words()), usage).unwrap();
        let decoded = storage_buffer(device, "decoded", &zeros(decoded_words), usage).unwrap();
        let tables = packing.table_buffers(device).unwrap();
        let mut times = Vec::new();
        let mut passes = Vec::new();
        for _ in 0..6 {
            let start = std::time::Instant::now();
            let mut encoder = device.create_command_encoder(&Default::default());
            let mut stamps = StageStamps::new(device);
            if let Some(stamps) = &mut stamps {
                stamps.start(&mut encoder);
            }
            let buffers = EntropyBuffers {
                tables: [0, 1, 2, 3].map(|t| tables[t].as_entire_binding()),
                data: data.as_entire_binding(),
                spans: &spans,
                flags: &flags,
                decoded: &decoded,
                decoded_words,
            };
            let mut after_pass = |pass, encoder: &mut wgpu::CommandEncoder| {
                if let Some(stamps) = &mut stamps {
                    stamps.end(encoder, pass);
                }
            };
            packing
                .record(device, &mut encoder, &stages, buffers, &mut after_pass)
                .unwrap();
            let submission = crate::gpu::submit(&gpu.queue, [encoder.finish()]);
            device
                .poll(wgpu::PollType::Wait {
                    submission_index: Some(submission),
                    timeout: None,
                })
                .unwrap();
            times.push(start.elapsed().as_secs_f64());
            if let Some(stamps) = stamps {
                passes = stamps.read(device, &gpu.queue).unwrap();
            }
        }
        // The last round's passes, on the GPU's clock (sync dispatches summed).
        let mut pass_ms: Vec<(&str, f64)> = Vec::new();
        for (pass, time) in passes {
            match pass_ms.iter_mut().find(|(p, _)| *p == pass) {
                Some((_, ms)) => *ms += time.as_secs_f64() * 1e3,
                None => pass_ms.push((pass, time.as_secs_f64() * 1e3)),
            }
        }
        println!("{{\"what\": \"entropy_passes\", \"ms\": {pass_ms:?}}}");
        let best = times[1..].iter().copied().fold(f64::MAX, f64::min);
        let bytes: usize = files.iter().map(Vec::len).sum();
        let n = segments.len() as f64;
        println!(
            "{{\"what\": \"entropy_stage\", \"files\": {}, \"segments\": {}, \"mb\": {:.1}, \
             \"cpu_img_s\": {:.0}, \"gpu_img_s\": {:.0}, \"gpu_ms\": {:.2}, \"sync_dispatches\": {}}}",
            files.len(),
            segments.len(),
            bytes as f64 / 1e6,
            n / cpu,
            n / best,
            best * 1e3,
            packing.dispatches,
        );
        let readback = decode_segments(
            &gpu.device,
            &gpu.queue,
            &stages,
            &segments[..8.min(segments.len())],
        )
        .unwrap();
        for (segment, gpu) in segments.iter().zip(readback) {
            assert!(
                gpu == crate::jpeg::parallel::decode(segment),
                "exact on the device too"
            );
        }
    }
}
