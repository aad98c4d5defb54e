//! Buffer bindings within the device's limits: the largest window one binding may hold, and
//! ranges of buffers as bindings.

use std::num::NonZeroU64;

/// The largest storage binding this device offers, as a whole number of offset-alignment units
/// (so that windows can start at its multiples), and no more than half its largest buffer (so
/// that an arena bound through two windows, and an upload of one window's coefficients and its
/// tables, are buffers the device can create). Every arena a packing uses fits in it (see
/// `Footprint` in src/gpu/packing.rs), whatever size the buffer pool rounds a buffer up to.
pub(crate) fn binding_window(device: &wgpu::Device) -> u64 {
    window_of(&device.limits())
}

/// [`binding_window`] for a device of these limits.
pub(crate) fn window_of(limits: &wgpu::Limits) -> u64 {
    let align = u64::from(limits.min_storage_buffer_offset_alignment).max(4);
    let max = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size / 2)
        .min(u64::from(u32::MAX) + 1);
    max / align * align
}

/// What one image may ask of this device: the largest binding window ([`binding_window`]) and
/// the loop iterations one lane of the colour stage may run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fit {
    pub window: u64,
    pub lane_iterations: u64,
}

/// The loop iterations gpuprep lets one lane run on Mesa's llvmpipe (lavapipe), which ends
/// every loop of a shader invocation once 65,535 iterations (exit tests included) have run in
/// all, leaving the work half done without a word: a margin below that for what the count
/// (`AdjustJob::lane_iterations`) leaves out. Measured: a 296x296 blur with a 31x31 kernel,
/// counted 64,834, is exact there, a 297x297 one, counted 65,212, is not.
pub(crate) const LLVMPIPE_LANE_ITERATIONS: u64 = 62_000;

impl Fit {
    /// The fit of `device`.
    pub fn of(device: &wgpu::Device) -> Self {
        let info = device.adapter_info();
        let llvmpipe = info.driver == "llvmpipe" || info.name.starts_with("llvmpipe");
        Self {
            window: binding_window(device),
            lane_iterations: if llvmpipe {
                LLVMPIPE_LANE_ITERATIONS
            } else {
                u64::MAX
            },
        }
    }

    /// A device of bindings of `window` bytes and no loop limit.
    #[cfg(test)]
    pub fn window(window: u64) -> Self {
        Self {
            window,
            lane_iterations: u64::MAX,
        }
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
pub(crate) fn first_window(buffer: &wgpu::Buffer, window: u64) -> wgpu::BindingResource<'_> {
    binding(buffer, 0, buffer.size().min(window))
}

/// `buffer` as `N` consecutive bindings of at most `window` bytes; the windows past its end are
/// bound to `dummy`.
pub(crate) fn windows<'a, const N: usize>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_aligned_and_two_of_it_make_a_buffer() {
        let limits = |binding: u64, buffer: u64| wgpu::Limits {
            max_storage_buffer_binding_size: binding,
            max_buffer_size: buffer,
            min_storage_buffer_offset_alignment: 256,
            ..wgpu::Limits::default()
        };
        // The H200's: a binding of 2^31 - 4 bytes, large buffers.
        assert_eq!(window_of(&limits((1 << 31) - 4, 1 << 40)), (1 << 31) - 256);
        // A largest buffer no larger than the largest binding halves the window.
        assert_eq!(window_of(&limits(1 << 30, 1 << 30)), 1 << 29);
        assert_eq!(window_of(&limits(u64::MAX, u64::MAX)), 1 << 32);
    }
}
