//! Output tensors: shape, element type and data of one preprocessed image.

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
        match self.data {
            TensorData::U8(_) => DType::U8,
            TensorData::F32(_) => DType::F32,
            TensorData::F16(_) => DType::F16,
        }
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
