//! A loader batch in CUDA memory, handed to torch (or any DLPack consumer) in place: a DLPack
//! capsule (`kDLCUDA`) over the batch's device pointer, made once the consumer's stream has
//! been told to wait for the batch's copies; its deleter records an event on that stream and
//! returns the buffer to the loader's ring, which writes it again only once the event has
//! completed.
#![allow(
    unsafe_code,
    reason = "DLPack is a C protocol: its structures and capsule are raw pointers; see each \
              SAFETY note"
)]

use gpuprep::loader::DeviceArray;
use gpuprep::DType;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;

/// `kDLCUDA`.
const DL_CUDA: i32 = 2;
/// The capsule's name before a consumer takes it, and after.
const NAME: &CStr = c"dltensor";

#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// DLPack's (unversioned) `DLManagedTensor`.
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// What a capsule points at: the managed tensor first (so that a pointer to this is a pointer
/// to it), then what keeps it valid.
#[repr(C)]
struct Exported {
    managed: DlManagedTensor,
    shape: [i64; 4],
    array: DeviceArray,
    /// The consumer's stream, which the batch was handed over on.
    stream: usize,
}

/// DLPack's type code, bits and lanes of `dtype`.
fn dl_dtype(dtype: DType) -> DlDataType {
    let (code, bits) = match dtype {
        DType::U8 => (1, 8),
        DType::F32 => (2, 32),
        DType::F16 => (2, 16),
    };
    DlDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// The deleter DLPack's consumer calls when it is done with the tensor (from any thread, with
/// or without the GIL): the buffer goes back once the work queued on the stream so far has run.
unsafe extern "C" fn delete(managed: *mut DlManagedTensor) {
    if managed.is_null() {
        return;
    }
    // SAFETY: `managed` is the first field of an `Exported` boxed by `__dlpack__`, and DLPack
    // calls the deleter once.
    let mut exported = unsafe { Box::from_raw(managed.cast::<Exported>()) };
    let stream = exported.stream;
    if let Err(e) = exported.array.release_after(stream) {
        // Without the event the buffer cannot be known free: it is leaked rather than
        // written while a kernel may still read it.
        eprintln!("gpuprep: a CUDA batch could not be released ({e}); its buffer is kept");
        std::mem::forget(exported);
    }
}

/// The capsule's destructor: a capsule no consumer took (still named "dltensor") deletes its
/// tensor; a taken one was renamed and belongs to its consumer.
unsafe extern "C" fn destroy_capsule(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed, GIL held.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let managed = pyo3::ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr());
            delete(managed.cast::<DlManagedTensor>());
        }
    }
}

/// One loader batch's images in CUDA memory. `torch.from_dlpack` takes it (once) without a
/// copy; dropped without being taken, its buffer goes straight back to the loader.
#[pyclass(module = "gpuprep._gpuprep", frozen)]
pub struct CudaBatch {
    array: Mutex<Option<DeviceArray>>,
    shape: [usize; 4],
    dtype: DType,
    device: u32,
}

impl CudaBatch {
    pub fn new(array: DeviceArray, shape: [usize; 4], dtype: DType, device: u32) -> Self {
        Self {
            array: Mutex::new(Some(array)),
            shape,
            dtype,
            device,
        }
    }
}

#[pymethods]
impl CudaBatch {
    /// The DLPack capsule, after making `stream` (DLPack's: None or 1 the legacy default
    /// stream, 2 the per-thread one, else a `cudaStream_t`; -1 for no synchronisation, in
    /// which case this waits on the host) wait for the batch.
    #[pyo3(signature = (stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<i64>,
        max_version: Option<Bound<'_, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = max_version; // the unversioned capsule is what every consumer takes
        if let Some((kind, id)) = dl_device {
            if kind != DL_CUDA || id != self.device as i32 {
                return Err(PyBufferError::new_err(format!(
                    "the batch is on CUDA device {}; dl_device ({kind}, {id}) asks for \
                     another (a copy gpuprep does not make)",
                    self.device
                )));
            }
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "the batch is handed over in place; copy=True is not offered",
            ));
        }
        let array = self
            .array
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyBufferError::new_err("the batch was already handed over"))?;
        let stream =
            match stream {
                None => 1,
                Some(-1) => return Err(PyValueError::new_err(
                    "stream=-1 (no synchronisation) is not offered: pass the stream that reads \
                     the batch",
                )),
                Some(s) if s > 0 => s as usize,
                Some(s) => return Err(PyValueError::new_err(format!("no CUDA stream {s}"))),
            };
        py.detach(|| array.wait_on(stream))
            .map_err(|e| crate::HandoffError::new_err(e.to_string()))?;
        let pointer = array
            .cuda_pointer()
            .ok_or_else(|| PyBufferError::new_err("the batch is not in CUDA memory"))?;
        let shape = self.shape.map(|d| d as i64);
        let mut exported = Box::new(Exported {
            managed: DlManagedTensor {
                dl_tensor: DlTensor {
                    data: pointer as *mut c_void,
                    device: DlDevice {
                        device_type: DL_CUDA,
                        device_id: self.device as i32,
                    },
                    ndim: 4,
                    dtype: dl_dtype(self.dtype),
                    shape: std::ptr::null_mut(),
                    // Compact, C order.
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete),
            },
            shape,
            array,
            stream,
        });
        exported.managed.dl_tensor.shape = exported.shape.as_mut_ptr();
        let raw = Box::into_raw(exported);
        // SAFETY: `raw` is a live boxed `Exported`; its fields are not moved again.
        unsafe { (*raw).managed.manager_ctx = raw.cast::<c_void>() };
        // SAFETY: a capsule over the managed tensor (the first field of `raw`), named as DLPack
        // says, whose destructor deletes it unless a consumer took it.
        let capsule = unsafe {
            pyo3::ffi::PyCapsule_New(
                raw.cast::<c_void>(),
                NAME.as_ptr().cast::<c_char>(),
                Some(destroy_capsule),
            )
        };
        if capsule.is_null() {
            // SAFETY: the capsule was not made: nothing else holds `raw`.
            unsafe { delete(raw.cast::<DlManagedTensor>()) };
            return Err(PyErr::fetch(py));
        }
        // SAFETY: PyCapsule_New returned a new reference.
        Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
    }

    /// `(kDLCUDA, device)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (DL_CUDA, self.device as i32)
    }

    /// The batch's shape.
    #[getter]
    fn shape(&self) -> (usize, usize, usize, usize) {
        let [a, b, c, d] = self.shape;
        (a, b, c, d)
    }

    fn __repr__(&self) -> String {
        format!(
            "CudaBatch(shape={:?}, dtype={:?}, device=cuda:{})",
            self.shape, self.dtype, self.device
        )
    }
}
