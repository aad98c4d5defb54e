//! Small wgpu helpers shared by the stages: buffers, dispatches, read-back.

use crate::error::{GpuError, Result};

/// Threads per workgroup of every shader.
pub(crate) const WORKGROUP: u32 = 64;

/// A storage buffer holding `words` (a dummy word when empty). Unlike wgpu's
/// `create_buffer_init`, which panics when the device is lost, this returns the error.
pub(crate) fn storage_buffer(
    device: &wgpu::Device,
    label: &str,
    words: &[u32],
    extra: wgpu::BufferUsages,
) -> Result<wgpu::Buffer> {
    let contents: &[u8] = if words.is_empty() {
        &[0; 4]
    } else {
        bytemuck::cast_slice(words)
    };
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: contents.len() as u64,
        usage: wgpu::BufferUsages::STORAGE | extra,
        mapped_at_creation: true,
    });
    buffer
        .slice(..)
        .get_mapped_range_mut()
        .map_err(GpuError::from)?
        .copy_from_slice(contents);
    buffer.unmap();
    Ok(buffer)
}

/// The workgroups (x, y) of [`run`]'s grid for `invocations` threads.
pub(crate) fn grid(device: &wgpu::Device, invocations: u32) -> (u32, u32) {
    let groups = invocations.div_ceil(WORKGROUP).max(1);
    let max = device.limits().max_compute_workgroups_per_dimension;
    if groups <= max {
        (groups, 1)
    } else {
        (max, groups.div_ceil(max))
    }
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
    let (x, y) = grid(device, invocations);
    let mut pass = encoder.begin_compute_pass(&Default::default());
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, bind_group, &[]);
    pass.dispatch_workgroups(x, y, 1);
}

/// GPU buffers kept between calls, so that streaming batches of similar images allocates
/// nothing after the first ones. Holds at most [`BufferPool::KEEP`] buffers.
#[derive(Default)]
pub(crate) struct BufferPool {
    free: std::sync::Mutex<Vec<wgpu::Buffer>>,
}

impl BufferPool {
    /// Buffers kept at most (a submission's arenas and upload, and the outputs and read-back
    /// buffers of the submissions in flight); the smallest go first.
    const KEEP: usize = 16;

    /// Bytes of the buffers kept now.
    pub fn bytes(&self) -> u64 {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.iter().map(wgpu::Buffer::size).sum()
    }

    /// A buffer of at least `size` bytes with exactly `usage`: a kept one, or a new one rounded
    /// up to a power of two (within the device's largest buffer) so that it can be reused.
    pub fn take(
        &self,
        device: &wgpu::Device,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let size = size.next_multiple_of(4).max(4);
        {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            let fitting = free
                .iter()
                .enumerate()
                .filter(|(_, b)| b.usage() == usage && b.size() >= size)
                .min_by_key(|(_, b)| b.size())
                .map(|(i, _)| i);
            if let Some(i) = fitting {
                return free.swap_remove(i);
            }
        }
        let rounded = size
            .next_power_of_two()
            .min(device.limits().max_buffer_size)
            .max(size);
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: rounded,
            usage,
            mapped_at_creation: false,
        })
    }

    /// Keeps `buffer` for a later [`BufferPool::take`]. Work already submitted that uses it is
    /// ordered before any later submission, so it may be handed out again at once.
    pub fn put(&self, buffer: wgpu::Buffer) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.push(buffer);
        if free.len() > Self::KEEP {
            let smallest = (0..free.len()).min_by_key(|&i| free[i].size()).unwrap_or(0);
            free.swap_remove(smallest);
        }
    }
}

/// Maps the first `size` bytes of a readback buffer once `submission` (the one that fills it)
/// has run, and hands them to `read`.
pub(crate) fn read_buffer<T>(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    size: u64,
    submission: wgpu::SubmissionIndex,
    read: impl FnOnce(&[u8]) -> T,
) -> Result<T> {
    let slice = buffer.slice(..size.max(4));
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(submission),
            timeout: None,
        })
        .map_err(GpuError::from)?;
    receiver
        .recv()
        .unwrap_or(Err(wgpu::BufferAsyncError))
        .map_err(GpuError::from)?;
    let result = read(&slice.get_mapped_range().map_err(GpuError::from)?);
    buffer.unmap();
    Ok(result)
}

/// Runs `work` (encoding, submitting, reading back) inside validation and out-of-memory error
/// scopes, so that a GPU error comes back as [`crate::Error::Gpu`] instead of wgpu's panicking
/// default handler.
pub(crate) fn checked<T>(device: &wgpu::Device, work: impl FnOnce() -> Result<T>) -> Result<T> {
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let result = work();
    let memory = pollster::block_on(memory.pop());
    let validation = pollster::block_on(validation.pop());
    match memory.or(validation) {
        Some(e) => Err(GpuError::from(e).into()),
        None => result,
    }
}

/// Test shaders of shared WGSL functions (shaders/double.wgsl, float.wgsl): compiles `source`,
/// whose entry point `main` reads `input` at binding 0 and writes `output_words` words at
/// binding 1 with 64 invocations a workgroup, runs one invocation per `per_invocation` input
/// words, and reads the output back.
#[cfg(test)]
pub(crate) fn run_test_shader(
    gpu: &super::context::Gpu,
    source: &str,
    input: &[u32],
    per_invocation: usize,
    output_words: usize,
) -> Vec<u32> {
    let device = &gpu.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("function test"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("function test"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let invocations = input.len() / per_invocation;
    let input = storage_buffer(device, "cases", input, wgpu::BufferUsages::empty()).unwrap();
    let zeros = vec![0u32; output_words];
    let output = storage_buffer(device, "results", &zeros, wgpu::BufferUsages::COPY_SRC).unwrap();
    let size = (output_words * 4) as u64;
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("results readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: input.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: output.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        let groups = invocations.div_ceil(64) as u32;
        pass.dispatch_workgroups(groups.min(65535), groups.div_ceil(65535), 1);
    }
    encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, size);
    let submission = gpu.queue.submit([encoder.finish()]);
    read_buffer(device, &readback, size, submission, |b| {
        bytemuck::cast_slice(b).to_vec()
    })
    .unwrap()
}
