//! CUDA's driver library (`libcuda.so.1`), loaded at run time so that gpuprep builds and runs
//! without a CUDA toolchain: found, it page-locks host memory for a CUDA device, so that copies
//! of it to that device run at the bus's speed without a staging copy (what torch calls pinned
//! memory, and what `Tensor.is_pinned()` reports).
//!
//! It also imports what gpuprep's Vulkan device exports (`gpu::external`): batch memory,
//! mapped as a CUDA device pointer, and the timeline semaphore a consumer's stream waits on
//! before reading a batch; and it records events on a consumer's stream, so that a batch's
//! memory is written again only after the work that read it.
//!
//! Only the few entry points that need are bound. Where the library or a device is missing,
//! [`Cuda::open`] says why and callers keep pageable memory.
#![allow(
    unsafe_code,
    reason = "calls into a C library loaded at run time; see each SAFETY note"
)]

use crate::error::HandoffError;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Arc, Mutex, OnceLock};

/// `CUresult`: 0 is success.
type CuResult = c_int;
/// `CUcontext`, an opaque handle.
type CuContext = *mut c_void;
/// `CUexternalMemory`, `CUexternalSemaphore`, `CUevent`, `CUstream`: opaque handles.
type CuHandle = *mut c_void;
/// `CUdeviceptr`.
type CuDevicePtr = u64;

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
    device_get_uuid: unsafe extern "C" fn(*mut [u8; 16], c_int) -> CuResult,
    import_external_memory:
        unsafe extern "C" fn(*mut CuHandle, *const MemoryHandleDesc) -> CuResult,
    external_memory_get_mapped_buffer:
        unsafe extern "C" fn(*mut CuDevicePtr, CuHandle, *const BufferDesc) -> CuResult,
    destroy_external_memory: unsafe extern "C" fn(CuHandle) -> CuResult,
    mem_free: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    import_external_semaphore:
        unsafe extern "C" fn(*mut CuHandle, *const SemaphoreHandleDesc) -> CuResult,
    wait_external_semaphores: unsafe extern "C" fn(
        *const CuHandle,
        *const SemaphoreWaitParams,
        c_uint,
        CuHandle,
    ) -> CuResult,
    destroy_external_semaphore: unsafe extern "C" fn(CuHandle) -> CuResult,
    event_create: unsafe extern "C" fn(*mut CuHandle, c_uint) -> CuResult,
    event_record: unsafe extern "C" fn(CuHandle, CuHandle) -> CuResult,
    event_synchronize: unsafe extern "C" fn(CuHandle) -> CuResult,
    event_query: unsafe extern "C" fn(CuHandle) -> CuResult,
    event_destroy: unsafe extern "C" fn(CuHandle) -> CuResult,
    /// Kept loaded for as long as the function pointers above are used.
    _library: libloading::Library,
}

/// The process's driver, loaded and initialised once (`cuInit`), or why not.
fn driver() -> Result<&'static Driver, HandoffError> {
    static DRIVER: OnceLock<Result<Driver, HandoffError>> = OnceLock::new();
    DRIVER
        .get_or_init(|| load(LIBRARY))
        .as_ref()
        .map_err(Clone::clone)
}

/// The driver library's file name.
const LIBRARY: &str = "libcuda.so.1";

/// The driver from the library `file`, initialised.
fn load(file: &'static str) -> Result<Driver, HandoffError> {
    // SAFETY: loading the NVIDIA driver library runs its initialisers, which have no
    // preconditions on the loading process.
    let library =
        unsafe { libloading::Library::new(file) }.map_err(|e| HandoffError::NoCudaDriver {
            library: file,
            reason: e.to_string(),
        })?;
    /// A symbol of `library` as a function pointer of the type the binding declares.
    fn symbol<T: Copy>(
        library: &libloading::Library,
        name: &'static str,
    ) -> Result<T, HandoffError> {
        // SAFETY: each binding's type is the C prototype of the driver API function of that
        // name (cuda.h, API version 2 names where the driver exports several).
        unsafe { library.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| HandoffError::NoCudaSymbol {
                symbol: name,
                reason: e.to_string(),
            })
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
        device_get_uuid: symbol(&library, "cuDeviceGetUuid")?,
        import_external_memory: symbol(&library, "cuImportExternalMemory")?,
        external_memory_get_mapped_buffer: symbol(&library, "cuExternalMemoryGetMappedBuffer")?,
        destroy_external_memory: symbol(&library, "cuDestroyExternalMemory")?,
        mem_free: symbol(&library, "cuMemFree_v2")?,
        import_external_semaphore: symbol(&library, "cuImportExternalSemaphore")?,
        wait_external_semaphores: symbol(&library, "cuWaitExternalSemaphoresAsync")?,
        destroy_external_semaphore: symbol(&library, "cuDestroyExternalSemaphore")?,
        event_create: symbol(&library, "cuEventCreate")?,
        event_record: symbol(&library, "cuEventRecord")?,
        event_synchronize: symbol(&library, "cuEventSynchronize")?,
        event_query: symbol(&library, "cuEventQuery")?,
        event_destroy: symbol(&library, "cuEventDestroy_v2")?,
        _library: library,
    };
    // SAFETY: cuInit takes flags, which must be 0.
    driver.check("cuInit", unsafe { init(0) })?;
    Ok(driver)
}

impl Driver {
    /// `Ok` for success, else the call's name and the driver's name of the error.
    fn check(&self, call: &'static str, result: CuResult) -> Result<(), HandoffError> {
        if result == 0 {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorName writes a pointer to a static string, or leaves it null for
        // an unknown code.
        let known = unsafe { (self.get_error_name)(result, &mut name) } == 0 && !name.is_null();
        let name = known.then(|| {
            // SAFETY: a non-null result of cuGetErrorName is a static NUL-terminated string.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        });
        Err(HandoffError::Cuda {
            call,
            code: result,
            name,
        })
    }
}

/// One CUDA device's primary context (the one torch uses), held for page-locking host memory.
pub struct Cuda {
    driver: &'static Driver,
    context: SendContext,
    device: u32,
    /// The driver's handle of the device.
    handle: c_int,
    /// Push, call, pop: one registration at a time, so that no thread's current context is
    /// left changed by another's.
    calls: Mutex<()>,
}

/// A `CUcontext` (or another of the driver's handles) is a handle the driver lets any thread
/// use.
struct SendContext(CuContext);
// SAFETY: CUDA contexts may be used from any thread (cuCtxPushCurrent is the documented way).
unsafe impl Send for SendContext {}
// SAFETY: as above; the handle itself is never mutated after it is retained.
unsafe impl Sync for SendContext {}

impl Cuda {
    /// CUDA device `device` through the driver library, or why it cannot be had (no library, no
    /// driver, no such device).
    pub fn open(device: u32) -> Result<Arc<Cuda>, HandoffError> {
        // Checked before the driver is loaded: no driver has a device past `int`'s range.
        let ordinal = c_int::try_from(device).map_err(|_| HandoffError::NoCudaDevice(device))?;
        let driver = driver()?;
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
            handle,
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
    pub(crate) fn lock(&self, memory: &mut [u8]) -> Result<(), HandoffError> {
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
    pub(crate) fn unlock(&self, address: *mut u8) -> Result<(), HandoffError> {
        // SAFETY: `address` was registered by `lock` and is still allocated (caller's
        // contract); unregistering only unpins it.
        let result =
            self.in_context(|| unsafe { (self.driver.host_unregister)(address.cast::<c_void>()) });
        self.driver.check("cuMemHostUnregister", result)
    }
}

/// `CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`.
const MEMORY_OPAQUE_FD: c_uint = 1;
/// `CUDA_EXTERNAL_MEMORY_DEDICATED`: the memory is a dedicated allocation (as gpuprep's are).
const MEMORY_DEDICATED: c_uint = 1;
/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD`.
const SEMAPHORE_TIMELINE_FD: c_uint = 9;
/// `CU_EVENT_DISABLE_TIMING`: the cheapest event, for ordering only.
const EVENT_DISABLE_TIMING: c_uint = 2;

/// `CUDA_EXTERNAL_MEMORY_HANDLE_DESC` (cuda.h, 64-bit): the handle union's largest member is
/// two pointers; a file descriptor is its first four bytes.
#[repr(C)]
struct MemoryHandleDesc {
    kind: c_uint,
    handle: [u64; 2],
    size: u64,
    flags: c_uint,
    reserved: [c_uint; 16],
}

/// `CUDA_EXTERNAL_MEMORY_BUFFER_DESC`.
#[repr(C)]
struct BufferDesc {
    offset: u64,
    size: u64,
    flags: c_uint,
    reserved: [c_uint; 16],
}

/// `CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC`.
#[repr(C)]
struct SemaphoreHandleDesc {
    kind: c_uint,
    handle: [u64; 2],
    flags: c_uint,
    reserved: [c_uint; 16],
}

/// `CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS`: `params` holds the fence value, the NvSciSync union
/// and the keyed mutex's key and timeout (a struct of 16 bytes), then ten reserved words.
#[repr(C)]
struct SemaphoreWaitParams {
    value: u64,
    nv_sci_sync: u64,
    keyed_mutex_key: u64,
    keyed_mutex_timeout_ms: c_uint,
    params_reserved: [c_uint; 11],
    flags: c_uint,
    reserved: [c_uint; 16],
}

/// A stream as DLPack and torch name one: 1 is the legacy default stream, 2 the per-thread
/// default stream (the driver's `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD` are those same
/// values), anything else a `cudaStream_t`.
pub type Stream = usize;

impl Cuda {
    /// The device's UUID, as Vulkan reports it for the same GPU.
    pub fn uuid(&self) -> Result<[u8; 16], HandoffError> {
        let mut uuid = [0u8; 16];
        // SAFETY: cuDeviceGetUuid writes 16 bytes for a valid device handle.
        let result = unsafe { (self.driver.device_get_uuid)(&mut uuid, self.handle) };
        self.driver.check("cuDeviceGetUuid", result)?;
        Ok(uuid)
    }

    #[cfg(unix)]
    /// Imports the dedicated allocation of `allocation` bytes behind `fd` (which CUDA then
    /// owns) and maps its first `size` bytes as a device pointer.
    pub fn import_memory(
        self: &Arc<Self>,
        fd: std::os::fd::OwnedFd,
        allocation: u64,
        size: u64,
    ) -> Result<CudaMemory, HandoffError> {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let desc = MemoryHandleDesc {
            kind: MEMORY_OPAQUE_FD,
            handle: [u64::from(fd.as_raw_fd() as u32), 0],
            size: allocation,
            flags: MEMORY_DEDICATED,
            reserved: [0; 16],
        };
        let mut memory: CuHandle = std::ptr::null_mut();
        // SAFETY: `desc` describes an opaque file descriptor of a live allocation; on success
        // the driver owns the descriptor.
        let result =
            self.in_context(|| unsafe { (self.driver.import_external_memory)(&mut memory, &desc) });
        self.driver.check("cuImportExternalMemory", result)?;
        let _owned_by_cuda = fd.into_raw_fd();
        let memory = SendContext(memory);
        let buffer = BufferDesc {
            offset: 0,
            size,
            flags: 0,
            reserved: [0; 16],
        };
        let mut pointer: CuDevicePtr = 0;
        // SAFETY: `memory` was imported above; the range lies within it.
        let result = self.in_context(|| unsafe {
            (self.driver.external_memory_get_mapped_buffer)(&mut pointer, memory.0, &buffer)
        });
        if let Err(e) = self.driver.check("cuExternalMemoryGetMappedBuffer", result) {
            // SAFETY: imported above and mapped nowhere.
            self.in_context(|| unsafe { (self.driver.destroy_external_memory)(memory.0) });
            return Err(e);
        }
        Ok(CudaMemory {
            cuda: Arc::clone(self),
            memory,
            pointer,
        })
    }

    #[cfg(unix)]
    /// Imports the timeline semaphore behind `fd` (which CUDA then owns).
    pub fn import_timeline(
        self: &Arc<Self>,
        fd: std::os::fd::OwnedFd,
    ) -> Result<CudaTimeline, HandoffError> {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let desc = SemaphoreHandleDesc {
            kind: SEMAPHORE_TIMELINE_FD,
            handle: [u64::from(fd.as_raw_fd() as u32), 0],
            flags: 0,
            reserved: [0; 16],
        };
        let mut semaphore: CuHandle = std::ptr::null_mut();
        // SAFETY: `desc` describes the opaque file descriptor of a live timeline semaphore; on
        // success the driver owns the descriptor.
        let result = self.in_context(|| unsafe {
            (self.driver.import_external_semaphore)(&mut semaphore, &desc)
        });
        self.driver.check("cuImportExternalSemaphore", result)?;
        let _owned_by_cuda = fd.into_raw_fd();
        Ok(CudaTimeline {
            cuda: Arc::clone(self),
            semaphore: SendContext(semaphore),
        })
    }

    /// An event recorded on `stream` now: it completes once the work queued there so far has.
    pub fn record_event(self: &Arc<Self>, stream: Stream) -> Result<CudaEvent, HandoffError> {
        let mut event: CuHandle = std::ptr::null_mut();
        // SAFETY: creates an event in this device's context.
        let result = self
            .in_context(|| unsafe { (self.driver.event_create)(&mut event, EVENT_DISABLE_TIMING) });
        self.driver.check("cuEventCreate", result)?;
        let event = CudaEvent {
            cuda: Arc::clone(self),
            event: SendContext(event),
        };
        // SAFETY: the event was created above; `stream` is a stream of this context (the
        // consumer's) or one of the two special default-stream handles.
        let result = self.in_context(|| unsafe {
            (self.driver.event_record)(event.event.0, stream as CuHandle)
        });
        self.driver.check("cuEventRecord", result)?;
        Ok(event)
    }
}

/// GPU memory of gpuprep's device, imported into CUDA and mapped at [`Self::pointer`]; unmapped
/// and released when dropped.
pub struct CudaMemory {
    cuda: Arc<Cuda>,
    memory: SendContext,
    pointer: CuDevicePtr,
}

impl CudaMemory {
    /// The CUDA device pointer of the memory's first byte.
    pub fn pointer(&self) -> u64 {
        self.pointer
    }
}

impl Drop for CudaMemory {
    fn drop(&mut self) {
        let driver = self.cuda.driver;
        // SAFETY: the pointer was mapped from the memory, which was imported; neither is used
        // after this (whoever read it waited for its last reader's event first).
        self.cuda.in_context(|| unsafe {
            (driver.mem_free)(self.pointer);
            (driver.destroy_external_memory)(self.memory.0)
        });
    }
}

/// gpuprep's timeline semaphore, imported into CUDA.
pub struct CudaTimeline {
    cuda: Arc<Cuda>,
    semaphore: SendContext,
}

impl CudaTimeline {
    /// Makes `stream`'s later work wait until the semaphore reaches `value`.
    pub fn wait_on(&self, stream: Stream, value: u64) -> Result<(), HandoffError> {
        let params = SemaphoreWaitParams {
            value,
            nv_sci_sync: 0,
            keyed_mutex_key: 0,
            keyed_mutex_timeout_ms: 0,
            params_reserved: [0; 11],
            flags: 0,
            reserved: [0; 16],
        };
        // SAFETY: one imported semaphore, one parameter block, a stream of this context.
        let result = self.cuda.in_context(|| unsafe {
            (self.cuda.driver.wait_external_semaphores)(
                &self.semaphore.0,
                &params,
                1,
                stream as CuHandle,
            )
        });
        self.cuda
            .driver
            .check("cuWaitExternalSemaphoresAsync", result)
    }
}

impl Drop for CudaTimeline {
    fn drop(&mut self) {
        // SAFETY: imported by `import_timeline`; no wait is queued on it any more once its
        // batches are gone (their memory's drop waited for their readers).
        self.cuda.in_context(|| unsafe {
            (self.cuda.driver.destroy_external_semaphore)(self.semaphore.0)
        });
    }
}

/// A recorded CUDA event.
pub struct CudaEvent {
    cuda: Arc<Cuda>,
    event: SendContext,
}

impl CudaEvent {
    /// Blocks until the work before the event has run.
    pub fn synchronize(&self) -> Result<(), HandoffError> {
        // SAFETY: a live event of this context.
        let result = self
            .cuda
            .in_context(|| unsafe { (self.cuda.driver.event_synchronize)(self.event.0) });
        self.cuda.driver.check("cuEventSynchronize", result)
    }

    /// Whether the work before the event has run, without waiting.
    pub fn is_done(&self) -> Result<bool, HandoffError> {
        // SAFETY: a live event of this context.
        let result = self
            .cuda
            .in_context(|| unsafe { (self.cuda.driver.event_query)(self.event.0) });
        if result == CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        self.cuda
            .driver
            .check("cuEventQuery", result)
            .map(|()| true)
    }
}

/// cuEventQuery's answer for an event whose work is still running.
const CUDA_ERROR_NOT_READY: CuResult = 600;

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // SAFETY: a live event; destroying one still pending is allowed (its resources go once
        // it completes).
        self.cuda
            .in_context(|| unsafe { (self.cuda.driver.event_destroy)(self.event.0) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library that is not there is the driver missing, named with the loader's reason; an
    /// ordinal past `int`'s range is no device, with or without a driver.
    #[test]
    fn a_missing_driver_and_a_bad_ordinal_are_typed() {
        let missing = "libgpuprep-test-no-such-driver.so.1";
        match load(missing) {
            Err(HandoffError::NoCudaDriver { library, reason }) => {
                assert_eq!(library, missing);
                // dlerror's message names the file; Windows' loader error does not.
                #[cfg(unix)]
                assert!(reason.contains(missing), "{reason}");
                let error = HandoffError::NoCudaDriver { library, reason }.to_string();
                let prefix = "no CUDA driver library (libgpuprep-test-no-such-driver.so.1): ";
                assert!(error.starts_with(prefix), "{error}");
                // glibc's dlerror, word for word.
                #[cfg(all(target_os = "linux", target_env = "gnu"))]
                assert_eq!(
                    error,
                    "no CUDA driver library (libgpuprep-test-no-such-driver.so.1): \
                     libgpuprep-test-no-such-driver.so.1: cannot open shared object file: No \
                     such file or directory"
                );
            }
            Err(other) => panic!("not the missing library: {other}"),
            Ok(_) => panic!("a library that does not exist was loaded"),
        }
        let Err(error) = Cuda::open(u32::MAX) else {
            panic!("CUDA device {} opened", u32::MAX);
        };
        assert_eq!(error, HandoffError::NoCudaDevice(u32::MAX));
        assert_eq!(error.to_string(), "no CUDA device 4294967295");
    }

    /// The structures' sizes are cuda.h's on a 64-bit machine.
    #[test]
    fn interop_structures_have_the_drivers_sizes() {
        assert_eq!(std::mem::size_of::<MemoryHandleDesc>(), 104);
        assert_eq!(std::mem::size_of::<BufferDesc>(), 88);
        assert_eq!(std::mem::size_of::<SemaphoreHandleDesc>(), 96);
        assert_eq!(std::mem::size_of::<SemaphoreWaitParams>(), 144);
        assert_eq!(std::mem::offset_of!(MemoryHandleDesc, handle), 8);
        assert_eq!(std::mem::offset_of!(MemoryHandleDesc, size), 24);
        assert_eq!(std::mem::offset_of!(SemaphoreHandleDesc, flags), 24);
        assert_eq!(
            std::mem::offset_of!(SemaphoreWaitParams, params_reserved),
            28
        );
        assert_eq!(std::mem::offset_of!(SemaphoreWaitParams, flags), 72);
    }
}
