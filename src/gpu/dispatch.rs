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

/// Maps a readback buffer and hands its bytes to `read`.
pub(crate) fn read_buffer<T>(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    read: impl FnOnce(&[u8]) -> T,
) -> Result<T> {
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
    let result = read(
        &slice
            .get_mapped_range()
            .map_err(|e| Error::Gpu(format!("cannot read the result back: {e}")))?,
    );
    buffer.unmap();
    Ok(result)
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
