//! GPU memory and a timeline semaphore that another API on the same GPU can import: the
//! hand-off of batches to CUDA without a copy through the host.
//!
//! wgpu's allocator does not export memory, so these are made with raw Vulkan through
//! wgpu-hal (`VK_KHR_external_memory_fd`, `VK_KHR_external_semaphore_fd`): a buffer whose
//! memory was allocated exportable, handed to wgpu as a buffer of its own (wgpu then frees it),
//! and the memory's file descriptor for the importer; a timeline semaphore whose value
//! gpuprep's submissions raise as they finish, and its file descriptor. Where the device is not
//! Vulkan or lacks the extensions, [`Exporter::new`] says why and callers take another path.
#![allow(
    unsafe_code,
    reason = "raw Vulkan calls through wgpu-hal; see each SAFETY note"
)]

use crate::error::HandoffError;
use ash::vk;
use std::os::fd::{FromRawFd, OwnedFd};
use wgpu::hal::api::Vulkan;

/// The device extension gpuprep adds to wgpu's own when a Vulkan device offers it, so that
/// semaphores can be exported (wgpu already enables `VK_KHR_external_memory_fd` where offered).
pub(crate) const SEMAPHORE_FD: &std::ffi::CStr = ash::khr::external_semaphore_fd::NAME;

/// `adapter`'s device UUID (`VkPhysicalDeviceIDProperties::deviceUUID`), where it is a Vulkan
/// adapter.
pub(crate) fn adapter_uuid(adapter: &wgpu::Adapter) -> Option<[u8; 16]> {
    // SAFETY: the hal adapter is only read here, while `adapter` lives.
    let hal = unsafe { adapter.as_hal::<Vulkan>() }?;
    let instance = hal.shared_instance().raw_instance();
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
    // SAFETY: the physical device belongs to this instance; `id` is a valid extension of the
    // properties chain (Vulkan 1.1, which wgpu requires).
    unsafe { instance.get_physical_device_properties2(hal.raw_physical_device(), &mut properties) };
    Some(id.device_uuid)
}

/// Opens `adapter` as wgpu would for `desc`, adding [`SEMAPHORE_FD`] to the device's
/// extensions; `None` where the adapter is not Vulkan, does not offer it, or the device does
/// not open so (the caller then opens it the plain way).
pub(crate) fn open_exporting(
    adapter: &wgpu::Adapter,
    desc: &wgpu::DeviceDescriptor<'_>,
) -> Option<(wgpu::Device, wgpu::Queue)> {
    let opened = {
        // SAFETY: the hal adapter is only read here, while `adapter` lives.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }?;
        if !offers(&hal, SEMAPHORE_FD) {
            return None;
        }
        let add = Box::new(
            |args: wgpu::hal::vulkan::CreateDeviceCallbackArgs<'_, '_, '_>| {
                args.extensions.push(SEMAPHORE_FD);
            },
        );
        // SAFETY: the features and limits are the adapter's own (as wgpu's request_device
        // passes them); the callback only adds an extension the physical device offers.
        unsafe {
            hal.open_with_callback(
                desc.required_features,
                &desc.required_limits,
                &desc.memory_hints,
                Some(add),
            )
        }
        .ok()?
    };
    // SAFETY: `opened` was created from this adapter's hal adapter with `desc`'s features.
    unsafe { adapter.create_device_from_hal(opened, desc) }.ok()
}

/// Whether the physical device behind `adapter` offers device extension `name`.
fn offers(adapter: &wgpu::hal::vulkan::Adapter, name: &std::ffi::CStr) -> bool {
    let instance = adapter.shared_instance().raw_instance();
    // SAFETY: the physical device belongs to this instance, which outlives the call.
    let extensions =
        unsafe { instance.enumerate_device_extension_properties(adapter.raw_physical_device()) };
    extensions.is_ok_and(|list| {
        list.iter()
            .any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name))
    })
}

/// Makes exportable buffers and timeline semaphores on one wgpu device.
pub struct Exporter {
    /// Keeps the device (and so the raw handles below) alive.
    device: wgpu::Device,
    raw: ash::Device,
    memory_fd: ash::khr::external_memory_fd::Device,
    semaphore_fd: ash::khr::external_semaphore_fd::Device,
    memory_types: Vec<vk::MemoryType>,
    uuid: [u8; 16],
    /// Whether the device was opened with [`SEMAPHORE_FD`].
    semaphores: bool,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter")
            .field("uuid", &self.uuid)
            .finish()
    }
}

impl Exporter {
    /// An exporter on `device`, or why there cannot be one (not Vulkan; no external memory
    /// extension; no timeline semaphores).
    pub fn new(device: &wgpu::Device) -> Result<Self, HandoffError> {
        // SAFETY: the hal device is only read while the guard lives; the handles cloned out of
        // it stay valid while `device`, kept in the exporter, lives.
        let hal = unsafe { device.as_hal::<Vulkan>() }.ok_or(HandoffError::NotVulkan)?;
        let enabled = hal.enabled_device_extensions();
        if !enabled.contains(&ash::khr::external_memory_fd::NAME) {
            return Err(HandoffError::NoExtension {
                extension: "VK_KHR_external_memory_fd",
                exports: "memory",
            });
        }
        let semaphores = enabled.contains(&SEMAPHORE_FD);
        let instance = hal.shared_instance().raw_instance();
        let raw = hal.raw_device().clone();
        let physical = hal.raw_physical_device();
        // SAFETY: the physical device belongs to this instance.
        let memory = unsafe { instance.get_physical_device_memory_properties(physical) };
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut timeline = vk::PhysicalDeviceTimelineSemaphoreFeatures::default();
        {
            let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
            // SAFETY: as above; `id` is a valid extension of the properties chain (Vulkan 1.1).
            unsafe { instance.get_physical_device_properties2(physical, &mut properties) };
            let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut timeline);
            // SAFETY: as above (Vulkan 1.2's timeline semaphore features).
            unsafe { instance.get_physical_device_features2(physical, &mut features) };
        }
        if timeline.timeline_semaphore == vk::FALSE {
            return Err(HandoffError::NoTimelineSemaphores);
        }
        Ok(Self {
            device: device.clone(),
            memory_fd: ash::khr::external_memory_fd::Device::new(instance, &raw),
            semaphore_fd: ash::khr::external_semaphore_fd::Device::new(instance, &raw),
            raw,
            memory_types: memory.memory_types_as_slice().to_vec(),
            uuid: id.device_uuid,
            semaphores,
        })
    }

    /// The device's UUID (`VkPhysicalDeviceIDProperties::deviceUUID`): CUDA reports the same
    /// for the same GPU (`cuDeviceGetUuid`).
    pub fn uuid(&self) -> [u8; 16] {
        self.uuid
    }

    /// A device-local buffer of `size` bytes (`STORAGE | COPY_SRC | COPY_DST` to wgpu) in
    /// memory of its own, exported as an opaque file descriptor.
    pub fn buffer(&self, size: u64) -> Result<ExportedBuffer, HandoffError> {
        let size = size.max(4);
        let handle = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST,
            )
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: a valid create info on a live device.
        let buffer = unsafe { self.raw.create_buffer(&info, None) }.map_err(|e| {
            vulkan(
                "vkCreateBuffer",
                Some(format!("exportable, {size} bytes")),
                e,
            )
        })?;
        let memory = self.exportable_memory(buffer).inspect_err(|_| {
            // SAFETY: the buffer was created above and is not in use.
            unsafe { self.raw.destroy_buffer(buffer, None) }
        })?;
        let (memory, allocation) = memory;
        let free = || {
            // SAFETY: both were created above and are not in use.
            unsafe {
                self.raw.destroy_buffer(buffer, None);
                self.raw.free_memory(memory, None);
            }
        };
        let get = vk::MemoryGetFdInfoKHR::default()
            .memory(memory)
            .handle_type(handle);
        // SAFETY: the memory was allocated exportable as this handle type.
        let fd = match unsafe { self.memory_fd.get_memory_fd(&get) } {
            Ok(fd) => fd,
            Err(e) => {
                free();
                return Err(vulkan("vkGetMemoryFdKHR", None, e));
            }
        };
        // SAFETY: vkGetMemoryFdKHR returned a new file descriptor that this process owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: wgpu takes the buffer and its memory (bound at offset 0) as its own and frees
        // both when the wgpu buffer is dropped; nothing else destroys them.
        let hal = unsafe { wgpu::hal::vulkan::Buffer::from_raw_managed(buffer, memory, 0, size) };
        let desc = wgpu::BufferDescriptor {
            label: Some("exported batch"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        };
        // SAFETY: the buffer was created on this device with the usages `desc` gives, and is
        // bound to memory; its contents are whatever the memory held, which is valid for a
        // storage buffer.
        let buffer = unsafe { self.device.create_buffer_from_hal::<Vulkan>(hal, &desc) };
        Ok(ExportedBuffer {
            buffer,
            fd: Some(fd),
            allocation,
        })
    }

    /// Device-local memory for `buffer`, allocated for it alone (what CUDA's import of a
    /// dedicated allocation expects) and exportable; bound to it. Returns the memory and its
    /// size.
    fn exportable_memory(
        &self,
        buffer: vk::Buffer,
    ) -> Result<(vk::DeviceMemory, u64), HandoffError> {
        // SAFETY: `buffer` is a live buffer of this device.
        let needs = unsafe { self.raw.get_buffer_memory_requirements(buffer) };
        let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
        let kind = (0..self.memory_types.len() as u32)
            .find(|&i| {
                needs.memory_type_bits & (1 << i) != 0
                    && self.memory_types[i as usize].property_flags.contains(local)
            })
            .ok_or(HandoffError::NoMemoryType)?;
        let mut export = vk::ExportMemoryAllocateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let info = vk::MemoryAllocateInfo::default()
            .allocation_size(needs.size)
            .memory_type_index(kind)
            .push_next(&mut export)
            .push_next(&mut dedicated);
        // SAFETY: a valid allocate info on a live device.
        let memory = unsafe { self.raw.allocate_memory(&info, None) }.map_err(|e| {
            let about = format!("exportable, {} bytes", needs.size);
            vulkan("vkAllocateMemory", Some(about), e)
        })?;
        // SAFETY: fresh memory of a type the buffer accepts, large enough, at offset 0.
        if let Err(e) = unsafe { self.raw.bind_buffer_memory(buffer, memory, 0) } {
            // SAFETY: the memory was allocated above and is bound to nothing.
            unsafe { self.raw.free_memory(memory, None) };
            return Err(vulkan("vkBindBufferMemory", None, e));
        }
        Ok((memory, needs.size))
    }

    /// A timeline semaphore at value 0, exported as an opaque file descriptor; an error where
    /// the device offers no semaphore export.
    pub fn timeline(&self) -> Result<Timeline, HandoffError> {
        if !self.semaphores {
            return Err(HandoffError::NoExtension {
                extension: "VK_KHR_external_semaphore_fd",
                exports: "semaphores",
            });
        }
        let handle = vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD;
        let mut timeline = self.local_timeline(Some(handle))?;
        let get = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(timeline.semaphore)
            .handle_type(handle);
        // SAFETY: the semaphore was created exportable as this handle type.
        let fd = unsafe { self.semaphore_fd.get_semaphore_fd(&get) }
            .map_err(|e| vulkan("vkGetSemaphoreFdKHR", None, e))?;
        // SAFETY: vkGetSemaphoreFdKHR returned a new file descriptor this process owns.
        timeline.fd = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(timeline)
    }

    /// A timeline semaphore at value 0, exportable as `export` where given.
    fn local_timeline(
        &self,
        export: Option<vk::ExternalSemaphoreHandleTypeFlags>,
    ) -> Result<Timeline, HandoffError> {
        let mut kind = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let mut info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
        let mut exported = vk::ExportSemaphoreCreateInfo::default();
        if let Some(handle) = export {
            exported = exported.handle_types(handle);
            info = info.push_next(&mut exported);
        }
        // SAFETY: a valid create info on a live device.
        let semaphore = unsafe { self.raw.create_semaphore(&info, None) }
            .map_err(|e| vulkan("vkCreateSemaphore", Some("timeline".into()), e))?;
        Ok(Timeline {
            _device: self.device.clone(),
            raw: self.raw.clone(),
            semaphore,
            fd: None,
            signalled: std::sync::atomic::AtomicU64::new(0),
        })
    }
}

/// A wgpu buffer in exported memory.
#[derive(Debug)]
pub struct ExportedBuffer {
    /// The buffer, as wgpu uses it (wgpu frees its memory when it is dropped; an importer's
    /// own reference keeps the memory until it lets go too).
    pub buffer: wgpu::Buffer,
    /// The memory's file descriptor, until an importer takes it.
    pub fd: Option<OwnedFd>,
    /// The size of the memory allocation (what an importer must be told), at least the
    /// buffer's.
    pub allocation: u64,
}

/// A timeline semaphore of gpuprep's device, raised by its submissions, with the file
/// descriptor an importer waits on it through.
pub struct Timeline {
    /// Keeps the device alive while the semaphore exists.
    _device: wgpu::Device,
    raw: ash::Device,
    semaphore: vk::Semaphore,
    /// The semaphore's file descriptor, until an importer takes it.
    pub fd: Option<OwnedFd>,
    /// The last value a submission was asked to signal.
    signalled: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline")
            .field("signalled", &self.signalled)
            .finish()
    }
}

impl Timeline {
    /// Submits `commands` on `queue`, the semaphore signalled to the next value once they (and
    /// everything submitted before them, Vulkan's signal scope) have run; returns that value.
    /// `queue` must be the queue of the device the semaphore was made on; the signal goes with
    /// the queue's next submission, so gpuprep's other submissions wait (`gpu::submitting`).
    pub fn submit(&self, queue: &wgpu::Queue, commands: wgpu::CommandBuffer) -> u64 {
        use std::sync::atomic::Ordering;
        // The signal staged here goes with the submission below, none other between them.
        let _alone = crate::gpu::submitting();
        let value = self.signalled.fetch_add(1, Ordering::Relaxed) + 1;
        {
            // SAFETY: the hal queue is only used to stage the signal while the guard lives;
            // the semaphore lives until the device has passed every value it was given.
            match unsafe { queue.as_hal::<Vulkan>() } {
                Some(hal) => hal.add_signal_semaphore(self.semaphore, Some(value)),
                None => unreachable!("a timeline exists only on a Vulkan device"),
            }
        }
        queue.submit([commands]);
        value
    }

    /// The value the GPU has reached.
    pub fn reached(&self) -> Result<u64, HandoffError> {
        // SAFETY: a live timeline semaphore of this device.
        unsafe { self.raw.get_semaphore_counter_value(self.semaphore) }
            .map_err(|e| vulkan("vkGetSemaphoreCounterValue", None, e))
    }

    /// Blocks until the GPU has reached `value` (at most `timeout`).
    pub fn wait(&self, value: u64, timeout: std::time::Duration) -> Result<(), HandoffError> {
        let semaphores = [self.semaphore];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&semaphores)
            .values(&values);
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: a live timeline semaphore of this device, waited for on the host.
        unsafe { self.raw.wait_semaphores(&info, nanos) }.map_err(|e| match e {
            vk::Result::TIMEOUT => HandoffError::Timeout {
                value,
                waited: timeout,
            },
            e => vulkan("vkWaitSemaphores", Some(format!("value {value}")), e),
        })
    }
}

/// The failure of Vulkan function `call`, made for `about` where given.
fn vulkan(call: &'static str, about: Option<String>, result: vk::Result) -> HandoffError {
    HandoffError::Vulkan {
        call,
        about,
        code: result.as_raw(),
        message: result.to_string(),
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        // The semaphore may not be destroyed while a submission still signals it.
        let last = self.signalled.load(Ordering::Relaxed);
        let _ = self.wait(last, std::time::Duration::from_secs(10));
        // SAFETY: no pending submission signals it any more (waited above); an importer's
        // reference is its own.
        unsafe { self.raw.destroy_semaphore(self.semaphore, None) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the test adapter (lavapipe on CI): a buffer's memory comes out as a file descriptor,
    /// data written through wgpu is read back through wgpu, and a timeline rises with the
    /// submission it was given to.
    #[test]
    fn exported_buffers_and_timelines_work_through_wgpu() {
        let Some(gpu) = super::super::context::test_gpu() else {
            return;
        };
        let exporter = match Exporter::new(&gpu.device) {
            Ok(e) => e,
            Err(why) if gpu.info.backend != wgpu::Backend::Vulkan => {
                println!("not a Vulkan adapter, nothing to export: {why}");
                return;
            }
            Err(why) => panic!("the Vulkan test device cannot export: {why}"),
        };
        let mut exported = exporter.buffer(4096).unwrap();
        let fd = exported.fd.take().expect("a file descriptor");
        let file = std::fs::File::from(fd);
        let _ = file.metadata().expect("a real file descriptor");
        assert!(exported.allocation >= 4096);
        let words: Vec<u32> = (0..1024u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        gpu.queue
            .write_buffer(&exported.buffer, 0, bytemuck::cast_slice(&words));
        // Lavapipe exports memory but not semaphores: there the signalling is tested on a
        // timeline of its own.
        let timeline = match exporter.timeline() {
            Ok(timeline) => {
                let fd = timeline.fd.as_ref().expect("a semaphore file descriptor");
                let _ = std::fs::File::from(fd.try_clone().unwrap())
                    .metadata()
                    .unwrap();
                timeline
            }
            Err(why) => {
                println!("{why}: the signalling tested on a timeline that is not exported");
                exporter.local_timeline(None).unwrap()
            }
        };
        assert_eq!(timeline.reached().unwrap(), 0);
        let readback = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 4096,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&exported.buffer, 0, &readback, 0, 4096);
        let value = timeline.submit(&gpu.queue, encoder.finish());
        assert_eq!(value, 1);
        timeline
            .wait(value, std::time::Duration::from_secs(30))
            .unwrap();
        assert_eq!(timeline.reached().unwrap(), 1);
        // An empty submission to wait for: the copy's own index was taken by the timeline.
        let after = crate::gpu::submit(&gpu.queue, []);
        let got: Vec<u32> =
            super::super::dispatch::read_buffer(&gpu.device, &readback, 4096, after, |b| {
                bytemuck::cast_slice(b).to_vec()
            })
            .unwrap();
        assert_eq!(got, words);
    }
}
