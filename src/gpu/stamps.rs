//! GPU timestamps between stages, for profiling ([`super::GpuPipeline::timing_stages`]): what each
//! stage and pass costs on the GPU itself, without the submissions and waits that timing on the
//! CPU needs (those also count the CPU's recording and the upload's transfer).

use super::dispatch::read_buffer;
use crate::error::Result;
use std::time::Duration;

/// What a device needs for timestamps between passes; [`super::create_device`] asks for them
/// where the adapter has them.
pub(crate) const FEATURES: wgpu::Features =
    wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);

/// Most marks per call; later ones are not written.
const CAPACITY: u32 = 512;

/// Marks written into command encoders, read once the work has run.
pub(crate) struct StageStamps {
    queries: wgpu::QuerySet,
    /// Per mark, the stage it ends; `None` where a run of stages starts.
    labels: Vec<Option<&'static str>>,
}

impl StageStamps {
    /// `None` when the device cannot write timestamps between passes.
    pub fn new(device: &wgpu::Device) -> Option<Self> {
        device.features().contains(FEATURES).then(|| Self {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("stage timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: CAPACITY,
            }),
            labels: Vec::new(),
        })
    }

    /// Marks where a run of stages starts.
    pub fn start(&mut self, encoder: &mut wgpu::CommandEncoder) {
        self.mark(encoder, None);
    }

    /// Marks the end of `stage`, which began at the mark before.
    pub fn end(&mut self, encoder: &mut wgpu::CommandEncoder, stage: &'static str) {
        self.mark(encoder, Some(stage));
    }

    fn mark(&mut self, encoder: &mut wgpu::CommandEncoder, label: Option<&'static str>) {
        let index = self.labels.len() as u32;
        if index < CAPACITY {
            encoder.write_timestamp(&self.queries, index);
            self.labels.push(label);
        }
    }

    /// Each marked stage's GPU time, in order, once the work recorded so far has been
    /// submitted.
    pub fn read(
        self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<Vec<(&'static str, Duration)>> {
        let count = self.labels.len() as u32;
        if count == 0 {
            return Ok(Vec::new());
        }
        let bytes = u64::from(count) * wgpu::QUERY_SIZE as u64;
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as Usage;
        let resolved = buffer("timestamps", Usage::QUERY_RESOLVE | Usage::COPY_SRC);
        let readback = buffer("timestamps readback", Usage::MAP_READ | Usage::COPY_DST);
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.resolve_query_set(&self.queries, 0..count, &resolved, 0);
        encoder.copy_buffer_to_buffer(&resolved, 0, &readback, 0, bytes);
        let submission = crate::gpu::submit(queue, [encoder.finish()]);
        let ticks: Vec<u64> = read_buffer(device, &readback, bytes, submission, |b| {
            bytemuck::cast_slice(b).to_vec()
        })?;
        let nanoseconds_per_tick = f64::from(queue.get_timestamp_period());
        // Mark i + 1 ends its stage, which began at mark i.
        Ok(ticks
            .windows(2)
            .zip(&self.labels[1..])
            .filter_map(|(pair, label)| {
                let elapsed = pair[1].wrapping_sub(pair[0]) as f64 * nanoseconds_per_tick;
                label.map(|stage| (stage, Duration::from_nanos(elapsed as u64)))
            })
            .collect())
    }
}
