//! Output tensors: shape, element type and data of one preprocessed image, or of a batch of
//! them stacked in one array.

use crate::error::{Error, GpuError, Result};
use crate::plan::Params;
use crate::transform::DType;

/// The elements of a tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// 8-bit samples.
    U8(Vec<u8>),
    /// float32 values.
    F32(Vec<f32>),
    /// float16 values.
    F16(Vec<half::f16>),
}

/// One preprocessed image.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Dimensions in the transform's layout: `[h, w, 3]` or `[3, h, w]`.
    pub shape: [usize; 3],
    /// The elements, C order.
    pub data: TensorData,
    /// The random parameters the image was transformed with (all `None` for a transform
    /// without random operations).
    pub params: Params,
}

impl Tensor {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The elements as little-endian bytes (the `.npy` payload).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match &self.data {
            TensorData::U8(v) => v.clone(),
            TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

impl TensorData {
    /// `len` zero elements of `dtype` (fresh pages: the kernel zeroes them as they are first
    /// written, on whichever thread writes them).
    pub(crate) fn zeroed(dtype: DType, len: usize) -> Self {
        match dtype {
            DType::U8 => Self::U8(bytemuck::zeroed_vec(len)),
            DType::F32 => Self::F32(bytemuck::zeroed_vec(len)),
            DType::F16 => Self::F16(bytemuck::zeroed_vec(len)),
        }
    }

    /// The elements as native-endian bytes, to write in place.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Self::U8(v) => v,
            Self::F32(v) => bytemuck::cast_slice_mut(v),
            Self::F16(v) => bytemuck::cast_slice_mut(v),
        }
    }

    /// The elements as native-endian bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::U8(v) => v,
            Self::F32(v) => bytemuck::cast_slice(v),
            Self::F16(v) => bytemuck::cast_slice(v),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Self::U8(_) => DType::U8,
            Self::F32(_) => DType::F32,
            Self::F16(_) => DType::F16,
        }
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        match self {
            Self::U8(v) => v.truncate(len),
            Self::F32(v) => v.truncate(len),
            Self::F16(v) => v.truncate(len),
        }
    }

    /// Elements it holds without moving.
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Self::U8(v) => v.capacity(),
            Self::F32(v) => v.capacity(),
            Self::F16(v) => v.capacity(),
        }
    }

    /// `len` elements: cut, or grown with zeros (moving them when past the capacity).
    pub(crate) fn resize(&mut self, len: usize) {
        match self {
            Self::U8(v) => v.resize(len, 0),
            Self::F32(v) => v.resize(len, 0.0),
            Self::F16(v) => v.resize(len, half::f16::ZERO),
        }
    }
}

/// A batch of images of one output shape, stacked in one array as they are made (no tensor of
/// its own per image, no copy to stack them), and each input's outcome.
#[derive(Debug)]
pub struct Stacked {
    /// Every image's dimensions, in the transform's layout.
    pub shape: [usize; 3],
    /// The tensors of the inputs that converted, one after another in input order, C order:
    /// `count() × shape` elements.
    pub data: TensorData,
    /// Each input's outcome: the random parameters it was made with, or why it failed (its
    /// tensor is then not in `data`).
    pub outcomes: Vec<Result<Params>>,
}

impl Stacked {
    /// The tensors in `data`.
    pub fn count(&self) -> usize {
        self.outcomes.iter().filter(|o| o.is_ok()).count()
    }

    /// Stacks `inputs` tensors of `shape` and `dtype`: `fill` writes input `i`'s elements into
    /// `slots[i]` (taking it) and says each input's outcome; the slots of the inputs that failed
    /// are then closed up.
    pub(crate) fn fill(
        inputs: usize,
        shape: [usize; 3],
        dtype: DType,
        fill: impl FnOnce(&mut [Option<&mut [u8]>]) -> Vec<Result<Params>>,
    ) -> Self {
        let elements: usize = shape.iter().product();
        let mut data = TensorData::zeroed(dtype, inputs * elements);
        let slot = elements * dtype.size();
        let mut outcomes = {
            let bytes = data.bytes_mut();
            let mut slots: Vec<Option<&mut [u8]>> =
                bytes.chunks_mut(slot.max(1)).map(Some).collect();
            fill(&mut slots)
        };
        outcomes.resize_with(inputs, || Err(GpuError::Internal("no outcome").into()));
        Self::closed_up(shape, data, outcomes)
    }

    /// `data`, whose slot `i` holds input `i`'s tensor where `outcomes[i]` is `Ok`, with the
    /// slots of the inputs that failed closed up.
    pub(crate) fn closed_up(
        shape: [usize; 3],
        mut data: TensorData,
        outcomes: Vec<Result<Params>>,
    ) -> Self {
        close_up(&mut data, shape, &outcomes);
        Self {
            shape,
            data,
            outcomes,
        }
    }

    /// Stacks tensors made one by one (the CPU backend's), each of `shape`, in parallel.
    pub fn from_tensors(shape: [usize; 3], dtype: DType, tensors: Vec<Result<Tensor>>) -> Self {
        use rayon::prelude::*;
        if shape.contains(&0) {
            // No tensor has this shape (every input failed, and none gave one): their errors.
            let outcomes = tensors
                .into_iter()
                .map(|t| t.and_then(|t| Err(unstackable(&t.shape, &shape))))
                .collect();
            return Self::closed_up(shape, TensorData::zeroed(dtype, 0), outcomes);
        }
        Self::fill(tensors.len(), shape, dtype, |slots| {
            tensors
                .into_par_iter()
                .zip(slots.par_iter_mut())
                .map(|(tensor, slot)| {
                    let tensor = tensor?;
                    let bytes = tensor.data.as_bytes();
                    match slot.take() {
                        Some(slot) if tensor.shape == shape && bytes.len() == slot.len() => {
                            slot.copy_from_slice(bytes);
                            Ok(tensor.params)
                        }
                        _ => Err(unstackable(&tensor.shape, &shape)),
                    }
                })
                .collect()
        })
    }
}

/// Closes up, in `data` (slot `i` holding input `i`'s tensor of `shape` where `outcomes[i]` is
/// `Ok`), the slots of the inputs that failed, and cuts it to the tensors kept.
pub(crate) fn close_up(data: &mut TensorData, shape: [usize; 3], outcomes: &[Result<Params>]) {
    let elements: usize = shape.iter().product();
    let slot = elements * data.dtype().size();
    let bytes = data.bytes_mut();
    let mut kept = 0;
    for (i, outcome) in outcomes.iter().enumerate() {
        if outcome.is_ok() {
            if kept != i {
                bytes.copy_within(i * slot..(i + 1) * slot, kept * slot);
            }
            kept += 1;
        }
    }
    data.truncate(kept * elements);
}

/// The error of a tensor whose shape is not the batch's.
pub(crate) fn unstackable(got: &[usize; 3], batch: &[usize; 3]) -> Error {
    Error::Options(format!(
        "a tensor of shape {got:?} does not stack with the batch's {batch:?}"
    ))
}
