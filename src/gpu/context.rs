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
WGPU_BACKEND";

/// Creates a device on the default adapter ([`create_device_on`] with no name).
pub fn create_device() -> Result<Gpu> {
    create_device_on(None)
}

/// Creates a device on the adapter whose name contains `name` (case-insensitive), or the one
/// `WGPU_ADAPTER_NAME` names, or else the default high-performance adapter of the backends
/// `WGPU_BACKEND` allows, with that adapter's real limits rather than wgpu's conservative
/// defaults.
pub fn create_device_on(name: Option<&str>) -> Result<Gpu> {
    open_device(&find_adapter(name)?)
}

/// Creates a device on `adapter`, as [`create_device_on`] does.
pub fn open_device(adapter: &wgpu::Adapter) -> Result<Gpu> {
    let desc = wgpu::DeviceDescriptor {
        label: Some("gpuprep"),
        required_limits: adapter.limits(),
        // Timestamps between passes, where there are any, for profiling (`--time-stages`).
        required_features: adapter.features() & super::stamps::FEATURES,
        ..Default::default()
    };
    // A Vulkan device that can export semaphores opens with that extension too, so that its
    // batches can be handed to CUDA in place (`external`); any other the plain way.
    #[cfg(target_os = "linux")]
    let exporting = super::external::open_exporting(adapter, &desc);
    #[cfg(not(target_os = "linux"))]
    let exporting = None;
    let opened = match exporting {
        Some(opened) => opened,
        None => pollster::block_on(adapter.request_device(&desc)).map_err(GpuError::from)?,
    };
    let (device, queue) = opened;
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

/// Every adapter wgpu finds, on every backend.
pub fn adapters() -> Vec<wgpu::Adapter> {
    pollster::block_on(instance().enumerate_adapters(wgpu::Backends::all()))
}

fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

/// The adapter [`create_device_on`] opens: the one whose name contains `name`, or the one
/// `WGPU_ADAPTER_NAME` names, or the default high-performance one.
pub fn find_adapter(name: Option<&str>) -> Result<wgpu::Adapter> {
    let wanted = name
        .map(str::to_owned)
        .or_else(|| std::env::var("WGPU_ADAPTER_NAME").ok());
    let Some(wanted) = wanted else {
        return pollster::block_on(instance().request_adapter(&wgpu::RequestAdapterOptions {
            power_preference:
                wgpu::PowerPreference::from_env().unwrap_or(wgpu::PowerPreference::HighPerformance),
            ..Default::default()
        }))
        .map_err(|e| Error::NoGpu(format!("{e}; {NO_ADAPTER}")));
    };
    let found = adapters();
    let names: Vec<String> = found
        .iter()
        .map(|a| {
            let info = a.get_info();
            format!("{} ({:?})", info.name, info.backend)
        })
        .collect();
    let lower = wanted.to_lowercase();
    found
        .into_iter()
        .find(|a| a.get_info().name.to_lowercase().contains(&lower))
        .ok_or_else(|| {
            let known = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            Error::NoGpu(format!(
                "no GPU adapter's name contains {wanted:?}; the adapters found: {known}"
            ))
        })
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
    Some(find_adapter(None).unwrap_or_else(|e| panic!("{e}")))
}

/// [`test_adapter`]'s device, as [`create_device`] opens it.
#[cfg(test)]
pub(crate) fn test_gpu() -> Option<Gpu> {
    test_adapter()?;
    Some(create_device().unwrap_or_else(|e| panic!("{e}")))
}
