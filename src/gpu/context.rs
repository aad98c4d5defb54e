//! Making a device for callers that have none. An application with a device of its own hands
//! it (and its queue) to [`super::GpuPipeline::new`] instead; this is for the CLI, the
//! backends, tests and examples.

use crate::error::{Error, GpuError, HandoffError, Result};

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
    let info = adapter.get_info();
    if info.backend == wgpu::Backend::Gl && !gl_runs_compute(&info.driver_info) {
        return Err(GpuError::GlWithoutCompute {
            version: info.driver_info,
        }
        .into());
    }
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

/// Whether the GL context whose `GL_VERSION` is `version` runs compute shaders: OpenGL ES 3.1
/// or later ("OpenGL ES 3.2 Mesa ..."), or desktop OpenGL 4.3 or later ("4.6 (Core Profile)
/// Mesa ...", "3.3.0 NVIDIA ..."). wgpu takes ES 3.0 and desktop 3.3 contexts, and one whose
/// driver lists GL_ARB_compute_shader as able to run compute, but naga writes no compute shader
/// for them.
fn gl_runs_compute(version: &str) -> bool {
    let (numbers, least) = match version.strip_prefix("OpenGL ES ") {
        Some(rest) => (rest, (3, 1)),
        None => (version, (4, 3)),
    };
    let mut parts = numbers
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= least,
        _ => true, // a form not known: let wgpu try
    }
}

/// Every adapter wgpu finds: on Vulkan, Metal and DX12, or (only where those find none) on GL.
/// `WGPU_BACKEND` chooses the backends instead.
pub fn adapters() -> Vec<wgpu::Adapter> {
    let found = pollster::block_on(instance(PRIMARY).enumerate_adapters(wgpu::Backends::all()));
    if !found.is_empty() {
        return found;
    }
    pollster::block_on(instance(wgpu::Backends::GL).enumerate_adapters(wgpu::Backends::all()))
}

/// The backends probed first. GL is probed only when they find no adapter: its probe (EGL)
/// prints to stderr on machines without a display, and GL is the slowest way to the GPU.
const PRIMARY: wgpu::Backends = wgpu::Backends::VULKAN
    .union(wgpu::Backends::METAL)
    .union(wgpu::Backends::DX12);

/// The instance on `backends` (unless `WGPU_BACKEND` names others), one for the process: made
/// once and kept, so that the Vulkan driver is loaded once. An instance dropped unloads the
/// driver, and loading it again takes more of the C library's static TLS, which it does not give
/// back; a process that has loaded torch's libraries runs out of it after a few dozen loads
/// (NVIDIA's Vulkan driver then fails to load, and wgpu falls back to GL).
fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    static INSTANCES: std::sync::Mutex<Vec<(wgpu::Backends, wgpu::Instance)>> =
        std::sync::Mutex::new(Vec::new());
    let mut made = INSTANCES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, instance)) = made.iter().find(|(b, _)| *b == backends) {
        return instance.clone();
    }
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = backends;
    let instance = wgpu::Instance::new(descriptor.with_env());
    made.push((backends, instance.clone()));
    instance
}

/// The default adapter of the instance on `backends` (see [`instance`]).
fn default_adapter(backends: wgpu::Backends) -> Result<wgpu::Adapter, wgpu::RequestAdapterError> {
    pollster::block_on(
        instance(backends).request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::from_env()
                .unwrap_or(wgpu::PowerPreference::HighPerformance),
            ..Default::default()
        }),
    )
}

/// The adapter [`create_device_on`] opens, which `selector` (else `WGPU_ADAPTER_NAME`) names:
/// `N` is the N-th of [`adapters`] (as `gpuprep info` numbers them); `cuda:N` is the Vulkan
/// adapter of the GPU that CUDA calls device N (their UUIDs match), so that a training rank's
/// loader runs on that rank's GPU; anything else is a part of the adapter's name
/// (case-insensitive). Without either, the default high-performance adapter.
pub fn find_adapter(selector: Option<&str>) -> Result<wgpu::Adapter> {
    let wanted = selector
        .map(str::to_owned)
        .or_else(|| std::env::var("WGPU_ADAPTER_NAME").ok());
    let Some(wanted) = wanted else {
        return default_adapter(PRIMARY)
            .or_else(|_| default_adapter(wgpu::Backends::GL))
            .map_err(|e| Error::NoGpu(format!("{e}; {NO_ADAPTER}")));
    };
    let found = adapters();
    let known = || {
        let names: Vec<String> = found
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let info = a.get_info();
                format!("{i}: {} ({:?})", info.name, info.backend)
            })
            .collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    let chosen = match wanted.trim() {
        index if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => {
            let at = index.parse::<usize>().ok();
            at.and_then(|i| found.get(i)).cloned().ok_or_else(|| {
                format!(
                    "there is no adapter {index}; the adapters found: {}",
                    known()
                )
            })
        }
        cuda if cuda.starts_with("cuda") => match cuda_ordinal(cuda) {
            None => Err(format!("{cuda:?} is not cuda or cuda:N")),
            Some(ordinal) => cuda_adapter(ordinal, &found)
                .map_err(|e| e.to_string())
                .and_then(|a| a.ok_or_else(|| format!("no Vulkan adapter is {cuda}'s GPU"))),
        },
        name => {
            let lower = name.to_lowercase();
            let matching = found
                .iter()
                .find(|a| a.get_info().name.to_lowercase().contains(&lower));
            matching
                .cloned()
                .ok_or_else(|| format!("no GPU adapter's name contains {name:?}"))
        }
    };
    chosen.map_err(|why| Error::NoGpu(format!("{why}; the adapters found: {}", known())))
}

/// The CUDA device `selector` names: `cuda` is device 0, `cuda:N` device N; `None` for
/// anything else.
fn cuda_ordinal(selector: &str) -> Option<u32> {
    match selector.strip_prefix("cuda")? {
        "" => Some(0),
        rest => rest.strip_prefix(':')?.parse::<u32>().ok(),
    }
}

/// The adapter among `found` whose UUID is CUDA device `ordinal`'s, if any; an error where
/// CUDA cannot say.
fn cuda_adapter(
    ordinal: u32,
    found: &[wgpu::Adapter],
) -> std::result::Result<Option<wgpu::Adapter>, HandoffError> {
    let uuid = crate::cuda::Cuda::open(ordinal)?.uuid()?;
    Ok(found
        .iter()
        .find(|a| adapter_uuid(a) == Some(uuid))
        .cloned())
}

/// The adapter's device UUID (Vulkan's `deviceUUID`, which CUDA reports for the same GPU);
/// `None` on other backends.
pub fn adapter_uuid(adapter: &wgpu::Adapter) -> Option<[u8; 16]> {
    #[cfg(target_os = "linux")]
    return super::external::adapter_uuid(adapter);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = adapter;
        None
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desktop_gl_under_4_3_is_refused_before_wgpu_calls_it_a_lost_device() {
        // GL_VERSION as NVIDIA's headless EGL reports wgpu's context, and as Mesa's do.
        assert!(!gl_runs_compute("3.3.0 NVIDIA 580.159.04"));
        assert!(!gl_runs_compute("4.2.0 NVIDIA 390.157"));
        assert!(gl_runs_compute("4.3.0 NVIDIA 580.159.04"));
        assert!(gl_runs_compute("4.6 (Core Profile) Mesa 22.3.6"));
        assert!(gl_runs_compute("OpenGL ES 3.2 Mesa 22.3.6"));
        assert!(gl_runs_compute("OpenGL ES 3.1 NVIDIA 580.159.04"));
        assert!(!gl_runs_compute("OpenGL ES 3.0 Mesa 22.3.6"));
        let message = Error::from(GpuError::GlWithoutCompute {
            version: "3.3.0 NVIDIA 580.159.04".into(),
        })
        .to_string();
        assert!(
            message.contains("OpenGL 3.3.0 NVIDIA") && message.contains("Vulkan"),
            "{message}"
        );
    }

    fn described(adapter: &wgpu::Adapter) -> (String, wgpu::Backend) {
        let info = adapter.get_info();
        (info.name, info.backend)
    }

    #[test]
    fn adapters_are_chosen_by_number_and_by_name() {
        if test_adapter().is_none() {
            return;
        }
        let found = adapters();
        assert!(!found.is_empty());
        for (i, adapter) in found.iter().enumerate() {
            let chosen = find_adapter(Some(&i.to_string())).expect("a listed number");
            assert_eq!(described(&chosen), described(adapter), "adapter {i}");
        }
        let past = found.len().to_string();
        let error = find_adapter(Some(&past))
            .expect_err("past the list")
            .to_string();
        assert!(
            error.contains(&format!("there is no adapter {past}")),
            "{error}"
        );
        assert!(
            error.contains("0: "),
            "the error lists the adapters: {error}"
        );
        let name = found[0].get_info().name;
        let part: String = name.chars().take(6).collect::<String>().to_uppercase();
        let by_name = find_adapter(Some(&part)).expect("a part of a name");
        assert!(by_name.get_info().name.to_uppercase().contains(&part));
        let error = find_adapter(Some("cuda:x"))
            .expect_err("not a device")
            .to_string();
        assert!(error.contains("is not cuda or cuda:N"), "{error}");
    }

    #[test]
    fn cuda_selectors_name_an_ordinal() {
        assert_eq!(cuda_ordinal("cuda"), Some(0));
        assert_eq!(cuda_ordinal("cuda:3"), Some(3));
        for not in ["cuda:", "cuda:x", "cuda3", "cuda:-1", "gpu:0"] {
            assert_eq!(cuda_ordinal(not), None, "{not}");
        }
    }

    #[test]
    fn cuda_devices_pick_the_adapter_of_their_gpu() {
        if test_adapter().is_none() {
            return;
        }
        match find_adapter(Some("cuda:0")) {
            // Where CUDA runs (the GPU machine), the adapter is CUDA device 0's GPU.
            Ok(adapter) => {
                let cuda = crate::cuda::Cuda::open(0).expect("CUDA answered before");
                assert_eq!(adapter_uuid(&adapter), cuda.uuid().ok());
            }
            // Elsewhere the error says why, and lists the adapters.
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("CUDA") || e.contains("no Vulkan adapter"), "{e}");
                assert!(e.contains("the adapters found: 0: "), "{e}");
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_adapters_uuid_is_its_devices() {
        let Some(adapter) = test_adapter() else {
            return;
        };
        let uuid = adapter_uuid(&adapter);
        if adapter.get_info().backend != wgpu::Backend::Vulkan {
            assert_eq!(uuid, None);
            return;
        }
        let gpu = open_device(&adapter).expect("the test adapter opens");
        let exporter = super::super::external::Exporter::new(&gpu.device);
        match exporter {
            Ok(exporter) => assert_eq!(uuid, Some(exporter.uuid())),
            Err(why) => assert!(uuid.is_some(), "{why}"),
        }
    }
}
