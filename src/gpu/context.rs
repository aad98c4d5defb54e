//! Making a device for callers that have none. Library entry points borrow the host's
//! `wgpu::Device` and `wgpu::Queue` instead; this helper is for the CLI, tests and examples.

use crate::error::{Error, GpuError, Result};

/// A device and its queue, with what the adapter said about itself.
pub struct Gpu {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter behind it.
    pub info: wgpu::AdapterInfo,
}

/// What to do when there is no adapter: the error names the fix.
const NO_ADAPTER: &str = "no GPU adapter found: install a Vulkan driver (on a CPU-only Debian or \
Ubuntu machine: apt-get install mesa-vulkan-drivers libvulkan1, for lavapipe), or pick one with \
WGPU_BACKEND / WGPU_ADAPTER_NAME";

/// Creates a device on the adapter that `WGPU_ADAPTER_NAME` names (a case-insensitive part of
/// its name), or else the default high-performance adapter of the backends `WGPU_BACKEND`
/// allows (default: Vulkan, Metal, DX12), with that adapter's real limits rather than wgpu's conservative defaults.
pub fn create_device() -> Result<Gpu> {
    let adapter = find_adapter()?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("gpuprep"),
        required_limits: adapter.limits(),
        // Timestamps between passes, where there are any, for profiling (`--time-stages`).
        required_features: adapter.features() & super::stamps::FEATURES,
        ..Default::default()
    }))
    .map_err(GpuError::from)?;
    // gpuprep's own work reports errors through error scopes; anything else is logged rather
    // than panicking the process (wgpu's default).
    device.on_uncaptured_error(std::sync::Arc::new(|e| {
        eprintln!("gpuprep: uncaptured GPU error: {e}")
    }));
    Ok(Gpu {
        device,
        queue,
        info: adapter.get_info(),
    })
}

/// The adapter [`create_device`] opens.
pub(crate) fn find_adapter() -> Result<wgpu::Adapter> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
        Ok(wanted) => {
            let wanted = wanted.to_lowercase();
            let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
            adapters
                .into_iter()
                .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
                .ok_or_else(|| {
                    Error::NoGpu(format!("no adapter named like {wanted:?}; {NO_ADAPTER}"))
                })?
        }
        Err(_) => {
            pollster::block_on(
                instance.request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::from_env()
                        .unwrap_or(wgpu::PowerPreference::HighPerformance),
                    ..Default::default()
                }),
            )
            .map_err(|e| Error::NoGpu(format!("{e}; {NO_ADAPTER}")))?
        }
    };
    Ok(adapter)
}

/// The adapter the library's GPU tests run on. No adapter fails the test with the fix, unless
/// `GPUPREP_NO_GPU=1` explicitly marks the run GPU-less, which is then said out loud (a GPU test
/// must never pass because no GPU was found).
#[cfg(test)]
pub(crate) fn test_adapter() -> Option<wgpu::Adapter> {
    if std::env::var("GPUPREP_NO_GPU").is_ok_and(|v| v == "1") {
        println!("GPUPREP_NO_GPU=1: GPU test NOT run");
        return None;
    }
    Some(find_adapter().unwrap_or_else(|e| panic!("{e}")))
}

/// [`test_adapter`]'s device, as [`create_device`] opens it.
#[cfg(test)]
pub(crate) fn test_gpu() -> Option<Gpu> {
    test_adapter()?;
    Some(create_device().unwrap_or_else(|e| panic!("{e}")))
}
