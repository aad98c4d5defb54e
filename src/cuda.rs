//! CUDA's driver library (`libcuda.so.1`), loaded at run time so that gpuprep builds and runs
//! without a CUDA toolchain: found, it page-locks host memory for a CUDA device, so that copies
//! of it to that device run at the bus's speed without a staging copy (what torch calls pinned
//! memory, and what `Tensor.is_pinned()` reports).
//!
//! Only the few entry points that need are bound. Where the library or a device is missing,
//! [`Cuda::open`] says why and callers keep pageable memory.
#![allow(
    unsafe_code,
    reason = "calls into a C library loaded at run time; see each SAFETY note"
)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Arc, Mutex, OnceLock};

/// `CUresult`: 0 is success.
type CuResult = c_int;
/// `CUcontext`, an opaque handle.
type CuContext = *mut c_void;

/// `CU_MEMHOSTREGISTER_PORTABLE`: page-locked for every CUDA context, not only the one current
/// at registration (torch copies from any of them).
const REGISTER_PORTABLE: c_uint = 1;

/// The driver's entry points that gpuprep uses, with the library that holds them.
struct Driver {
    get_error_name: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut CuContext, c_int) -> CuResult,
    ctx_push: unsafe extern "C" fn(CuContext) -> CuResult,
    ctx_pop: unsafe extern "C" fn(*mut CuContext) -> CuResult,
    host_register: unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CuResult,
    host_unregister: unsafe extern "C" fn(*mut c_void) -> CuResult,
    /// Kept loaded for as long as the function pointers above are used.
    _library: libloading::Library,
}

/// The process's driver, loaded and initialised once (`cuInit`), or why not.
fn driver() -> Result<&'static Driver, String> {
    static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
    DRIVER.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Driver, String> {
    // SAFETY: loading the NVIDIA driver library runs its initialisers, which have no
    // preconditions on the loading process.
    let library = unsafe { libloading::Library::new("libcuda.so.1") }
        .map_err(|e| format!("no CUDA driver library (libcuda.so.1): {e}"))?;
    /// A symbol of `library` as a function pointer of the type the binding declares.
    fn symbol<T: Copy>(library: &libloading::Library, name: &str) -> Result<T, String> {
        // SAFETY: each binding's type is the C prototype of the driver API function of that
        // name (cuda.h, API version 2 names where the driver exports several).
        unsafe { library.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("the CUDA driver has no {name}: {e}"))
    }
    let init: unsafe extern "C" fn(c_uint) -> CuResult = symbol(&library, "cuInit")?;
    let driver = Driver {
        get_error_name: symbol(&library, "cuGetErrorName")?,
        device_get: symbol(&library, "cuDeviceGet")?,
        primary_ctx_retain: symbol(&library, "cuDevicePrimaryCtxRetain")?,
        ctx_push: symbol(&library, "cuCtxPushCurrent_v2")?,
        ctx_pop: symbol(&library, "cuCtxPopCurrent_v2")?,
        host_register: symbol(&library, "cuMemHostRegister_v2")?,
        host_unregister: symbol(&library, "cuMemHostUnregister")?,
        _library: library,
    };
    // SAFETY: cuInit takes flags, which must be 0.
    driver.check("cuInit", unsafe { init(0) })?;
    Ok(driver)
}

impl Driver {
    /// `Ok` for success, else the call's name and the driver's name of the error.
    fn check(&self, call: &str, result: CuResult) -> Result<(), String> {
        if result == 0 {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorName writes a pointer to a static string, or leaves it null for
        // an unknown code.
        let known = unsafe { (self.get_error_name)(result, &mut name) } == 0 && !name.is_null();
        let name = if known {
            // SAFETY: a non-null result of cuGetErrorName is a static NUL-terminated string.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        } else {
            format!("error {result}")
        };
        Err(format!("{call} failed: {name}"))
    }
}

/// One CUDA device's primary context (the one torch uses), held for page-locking host memory.
pub struct Cuda {
    driver: &'static Driver,
    context: SendContext,
    device: u32,
    /// Push, call, pop: one registration at a time, so that no thread's current context is
    /// left changed by another's.
    calls: Mutex<()>,
}

/// A `CUcontext` is a handle the driver lets any thread make current.
struct SendContext(CuContext);
// SAFETY: CUDA contexts may be used from any thread (cuCtxPushCurrent is the documented way).
unsafe impl Send for SendContext {}
// SAFETY: as above; the handle itself is never mutated after it is retained.
unsafe impl Sync for SendContext {}

impl Cuda {
    /// CUDA device `device` through the driver library, or why it cannot be had (no library, no
    /// driver, no such device).
    pub fn open(device: u32) -> Result<Arc<Cuda>, String> {
        let driver = driver()?;
        let ordinal = c_int::try_from(device).map_err(|_| format!("no CUDA device {device}"))?;
        let mut handle: c_int = 0;
        // SAFETY: cuDeviceGet writes the device handle of an ordinal.
        driver.check("cuDeviceGet", unsafe {
            (driver.device_get)(&mut handle, ordinal)
        })?;
        let mut context: CuContext = std::ptr::null_mut();
        // SAFETY: retains (creating if need be) the device's primary context; it is never
        // released, as a process keeps its primary contexts.
        driver.check("cuDevicePrimaryCtxRetain", unsafe {
            (driver.primary_ctx_retain)(&mut context, handle)
        })?;
        Ok(Arc::new(Cuda {
            driver,
            context: SendContext(context),
            device,
            calls: Mutex::new(()),
        }))
    }

    /// The device's ordinal.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// Runs `call` with this device's context current on this thread.
    fn in_context(&self, call: impl FnOnce() -> CuResult) -> CuResult {
        let _one = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the context was retained in `open` and is never released.
        let pushed = unsafe { (self.driver.ctx_push)(self.context.0) };
        if pushed != 0 {
            return pushed;
        }
        let result = call();
        let mut popped: CuContext = std::ptr::null_mut();
        // SAFETY: pops the context pushed above.
        unsafe { (self.driver.ctx_pop)(&mut popped) };
        result
    }

    /// Page-locks `memory` until [`Cuda::unlock`] is called on the same address. The caller
    /// keeps the memory allocated, and at its address, until then.
    pub(crate) fn lock(&self, memory: &mut [u8]) -> Result<(), String> {
        if memory.is_empty() {
            return Ok(());
        }
        let (address, len) = (memory.as_mut_ptr().cast::<c_void>(), memory.len());
        // SAFETY: `address..address + len` is memory this process owns, valid for the call;
        // the caller's contract keeps it valid while registered.
        let result = self
            .in_context(|| unsafe { (self.driver.host_register)(address, len, REGISTER_PORTABLE) });
        self.driver.check("cuMemHostRegister", result)
    }

    /// Ends the page-locking of the memory at `address` that [`Cuda::lock`] began.
    pub(crate) fn unlock(&self, address: *mut u8) -> Result<(), String> {
        // SAFETY: `address` was registered by `lock` and is still allocated (caller's
        // contract); unregistering only unpins it.
        let result =
            self.in_context(|| unsafe { (self.driver.host_unregister)(address.cast::<c_void>()) });
        self.driver.check("cuMemHostUnregister", result)
    }
}
