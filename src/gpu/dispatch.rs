//! Small wgpu helpers shared by the stages: buffers, dispatches, read-back.

use crate::error::{Error, Result};
use wgpu::util::DeviceExt;

/// Threads per workgroup of every shader.
pub(crate) const WORKGROUP: u32 = 64;

/// A storage buffer holding `words` (a dummy word when empty).
pub(crate) fn storage_buffer(
    device: &wgpu::Device,
    label: &str,
    words: &[u32],
    extra: wgpu::BufferUsages,
) -> wgpu::Buffer {
    let contents: &[u8] = if words.is_empty() {
        &[0; 4]
    } else {
        bytemuck::cast_slice(words)
    };
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents,
        usage: wgpu::BufferUsages::STORAGE | extra,
    })
}

/// A uniform buffer holding `bytes`.
pub(crate) fn uniform_buffer(device: &wgpu::Device, bytes: &[u8]) -> wgpu::Buffer {
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("params"),
        contents: bytes,
        usage: wgpu::BufferUsages::UNIFORM,
    })
}

/// Binds `buffers` in order and dispatches `invocations` threads of `pipeline`.
pub(crate) fn dispatch(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::ComputePipeline,
    buffers: &[&wgpu::Buffer],
    invocations: u32,
) {
    let layout = pipeline.get_bind_group_layout(0);
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &layout,
        entries: &entries,
    });
    run(device, encoder, pipeline, &bind_group, invocations);
}

/// Dispatches `invocations` threads as a 2-D grid, since one dimension holds at most 65535
/// workgroups; shaders rebuild the linear index from `num_workgroups`.
pub(crate) fn run(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::ComputePipeline,
    bind_group: &wgpu::BindGroup,
    invocations: u32,
) {
    let groups = invocations.div_ceil(WORKGROUP).max(1);
    let max = device.limits().max_compute_workgroups_per_dimension;
    let (x, y) = if groups <= max {
        (groups, 1)
    } else {
        (max, groups.div_ceil(max))
    };
    let mut pass = encoder.begin_compute_pass(&Default::default());
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, bind_group, &[]);
    pass.dispatch_workgroups(x, y, 1);
}

/// Maps a readback buffer and copies its bytes out.
pub(crate) fn read_buffer(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>> {
    let slice = buffer.slice(..);
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| Error::Gpu(format!("waiting for the GPU: {e}")))?;
    receiver
        .recv()
        .map_err(|_| Error::Gpu("the read-back was dropped".into()))?
        .map_err(|e| Error::Gpu(format!("cannot read the result back: {e}")))?;
    let bytes = slice
        .get_mapped_range()
        .map_err(|e| Error::Gpu(format!("cannot read the result back: {e}")))?
        .to_vec();
    buffer.unmap();
    Ok(bytes)
}

/// Runs `work` (encoding, submitting, reading back) inside validation and out-of-memory error
/// scopes, so that a GPU error comes back as [`Error::Gpu`] instead of wgpu's panicking default
/// handler.
pub(crate) fn checked<T>(device: &wgpu::Device, work: impl FnOnce() -> Result<T>) -> Result<T> {
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let result = work();
    let memory = pollster::block_on(memory.pop());
    let validation = pollster::block_on(validation.pop());
    match memory.or(validation) {
        Some(e) => Err(Error::Gpu(e.to_string())),
        None => result,
    }
}
