//! NumPy `.npy` files: writing them (format version 1.0, the CLI's output format), and reading
//! back a single image's array, as numpy or gpuprep wrote it.

use crate::tensor::{Tensor, TensorData};
use crate::transform::DType;
use std::io::{self, Seek, SeekFrom, Write};

/// NumPy's type string for an element type.
pub fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "|u1",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
    }
}

/// The header of a C-ordered array of `shape`, padded with spaces to `len` bytes (a multiple
/// of 64, so the data starts aligned).
fn header_padded(dtype: DType, shape: &[usize], len: usize) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr(dtype)
    );
    // magic (6) + version (2) + length (2) + dict + '\n'.
    let unpadded = 10 + dict.len() + 1;
    assert!(
        unpadded <= len,
        "npy header of {unpadded} bytes exceeds {len}"
    );
    dict.extend(std::iter::repeat_n(' ', len - unpadded));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// The shortest aligned header for an array of `shape`.
pub fn header(dtype: DType, shape: &[usize]) -> Vec<u8> {
    let minimal = header_padded(dtype, shape, 4096).trim_ascii_end().len() + 1;
    header_padded(dtype, shape, minimal.next_multiple_of(64))
}

/// Writes one tensor as a `.npy` file.
pub fn write_tensor(mut to: impl Write, tensor: &Tensor) -> io::Result<()> {
    to.write_all(&header(tensor.dtype(), &tensor.shape))?;
    to.write_all(&tensor.to_le_bytes())
}

/// Bytes reserved for the header of a stacked file, whose first dimension is known only at the
/// end: enough for any shape of four dimensions.
const STACKED_HEADER: usize = 128;

/// A `.npy` file of shape (N, …) written one tensor at a time; N is filled in by `finish`.
pub struct StackedWriter<W: Write + Seek> {
    to: W,
    dtype: DType,
    shape: [usize; 3],
    count: usize,
}

impl<W: Write + Seek> StackedWriter<W> {
    /// Starts a stack of tensors of `dtype` and `shape`.
    pub fn new(mut to: W, dtype: DType, shape: [usize; 3]) -> io::Result<Self> {
        to.write_all(&[b' '; STACKED_HEADER])?;
        Ok(Self {
            to,
            dtype,
            shape,
            count: 0,
        })
    }

    /// Appends one tensor, which must have the stack's dtype and shape.
    pub fn push(&mut self, tensor: &Tensor) -> io::Result<usize> {
        assert_eq!(
            (tensor.dtype(), tensor.shape),
            (self.dtype, self.shape),
            "stacked tensors must agree"
        );
        self.to.write_all(&tensor.to_le_bytes())?;
        self.count += 1;
        Ok(self.count - 1)
    }

    /// Writes the header with the final count; returns the writer, flushed.
    pub fn finish_into(mut self) -> io::Result<W> {
        let [a, b, c] = self.shape;
        let header = header_padded(self.dtype, &[self.count, a, b, c], STACKED_HEADER);
        self.to.seek(SeekFrom::Start(0))?;
        self.to.write_all(&header)?;
        self.to.flush()?;
        Ok(self.to)
    }
}

/// Why a `.npy` file is not one image's array that [`read_tensor`] reads.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NpyError {
    /// The bytes do not start with the `.npy` magic string.
    #[error("not an npy file")]
    NotNpy,
    /// A format version other than 1 to 3.
    #[error("npy version {0}")]
    Version(u8),
    /// The header is cut short, or is not text.
    #[error("truncated npy header")]
    TruncatedHeader,
    /// The header lacks one of its keys (`descr`, `fortran_order`, `shape`).
    #[error("npy header without {0}")]
    MissingKey(&'static str),
    /// The array is in Fortran order.
    #[error("Fortran-ordered npy array")]
    FortranOrder,
    /// The shape is not a tuple.
    #[error("bad npy shape")]
    BadShape,
    /// A dimension of the shape is not a number.
    #[error("bad npy dimension {0:?}")]
    BadDimension(String),
    /// The array does not have three dimensions.
    #[error("npy array of shape {0:?}, not one image")]
    NotOneImage(Vec<usize>),
    /// The data's length is not the shape's.
    #[error("npy data of {bytes} bytes for shape {shape:?}")]
    DataSize {
        /// The data's length in bytes.
        bytes: usize,
        /// The shape the header gives.
        shape: [usize; 3],
    },
    /// An element type other than uint8, little-endian float32 or float16.
    #[error("npy element type {0}")]
    ElementType(String),
}

/// Reads a `.npy` file of one image: a C-ordered 3-D array of uint8, little-endian float32 or
/// float16. Anything else is an error saying what was found.
pub fn read_tensor(bytes: &[u8]) -> Result<Tensor, NpyError> {
    let (header, data) = split_header(bytes)?;
    let field = |key: &'static str| {
        let start = header
            .find(&format!("'{key}':"))
            .ok_or(NpyError::MissingKey(key))?
            + key.len()
            + 3;
        Ok::<&str, NpyError>(header[start..].trim_start())
    };
    if !field("fortran_order")?.starts_with("False") {
        return Err(NpyError::FortranOrder);
    }
    let shape_text = field("shape")?;
    let shape_text = shape_text.strip_prefix('(').ok_or(NpyError::BadShape)?;
    let shape_text = &shape_text[..shape_text.find(')').ok_or(NpyError::BadShape)?];
    let dims: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().map_err(|_| NpyError::BadDimension(d.to_string())))
        .collect::<Result<_, _>>()?;
    let shape: [usize; 3] = dims.try_into().map_err(NpyError::NotOneImage)?;
    let count = shape.iter().product::<usize>();
    let descr = field("descr")?;
    let element = |size: usize| {
        (data.len() == count * size)
            .then_some(data)
            .ok_or(NpyError::DataSize {
                bytes: data.len(),
                shape,
            })
    };
    let data = if descr.starts_with("'|u1'") {
        TensorData::U8(element(1)?.to_vec())
    } else if descr.starts_with("'<f4'") {
        let bytes = element(4)?.chunks_exact(4);
        TensorData::F32(
            bytes
                .map(|b| f32::from_le_bytes(b.try_into().expect("4")))
                .collect(),
        )
    } else if descr.starts_with("'<f2'") {
        let bytes = element(2)?.chunks_exact(2);
        TensorData::F16(
            bytes
                .map(|b| half::f16::from_le_bytes(b.try_into().expect("2")))
                .collect(),
        )
    } else {
        let found = descr.split(',').next().unwrap_or("");
        return Err(NpyError::ElementType(found.to_string()));
    };
    Ok(Tensor {
        shape,
        data,
        params: Default::default(),
    })
}

/// The header dictionary and the data of a `.npy` file (versions 1 to 3).
fn split_header(bytes: &[u8]) -> Result<(&str, &[u8]), NpyError> {
    if !bytes.starts_with(b"\x93NUMPY") || bytes.len() < 10 {
        return Err(NpyError::NotNpy);
    }
    let (len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => {
            let len = u32::from_le_bytes(bytes[8..12].try_into().expect("4"));
            (len as usize, 12)
        }
        version => return Err(NpyError::Version(version)),
    };
    let header = bytes
        .get(start..start + len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or(NpyError::TruncatedHeader)?;
    Ok((header, &bytes[start + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorData;

    /// A header whose shape is no tuple, or is cut off, is an error naming it, not a panic.
    #[test]
    fn a_shape_that_is_no_tuple_is_refused() {
        for shape in [")", "é", "(2, 3", "", "(2, x, 3)"] {
            let text = format!("{{'descr': '|u1', 'fortran_order': False, 'shape': {shape}, }}");
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            let padded = format!("{text:<118}\n");
            bytes.extend((padded.len() as u16).to_le_bytes());
            bytes.extend(padded.bytes());
            let err = read_tensor(&bytes).err();
            assert!(
                matches!(err, Some(NpyError::BadShape | NpyError::BadDimension(_))),
                "{shape:?}: {err:?}"
            );
        }
    }

    #[test]
    fn header_is_aligned_and_describes_the_array() {
        let h = header(DType::U8, &[2, 3, 3]);
        assert_eq!(h.len() % 64, 0);
        let text = String::from_utf8_lossy(&h[10..]);
        assert!(text.starts_with("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3, 3), }"));
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn stacked_header_gets_the_final_count() {
        let tensor = Tensor {
            shape: [1, 1, 3],
            data: TensorData::U8(vec![1, 2, 3]),
            params: Default::default(),
        };
        let mut file = io::Cursor::new(Vec::new());
        let mut stack = StackedWriter::new(&mut file, DType::U8, [1, 1, 3]).unwrap();
        stack.push(&tensor).unwrap();
        stack.push(&tensor).unwrap();
        stack.finish_into().unwrap();
        let bytes = file.into_inner();
        assert_eq!(bytes.len(), STACKED_HEADER + 6);
        assert!(String::from_utf8_lossy(&bytes[..STACKED_HEADER]).contains("'shape': (2, 1, 1, 3)"));
    }

    #[test]
    fn read_tensor_reads_back_what_write_tensor_wrote() {
        let tensors = [
            Tensor {
                shape: [2, 3, 3],
                data: TensorData::U8((0..18).collect()),
                params: Default::default(),
            },
            Tensor {
                shape: [3, 1, 2],
                data: TensorData::F32(vec![0.5, -1.25, 3.0, 1e-7, -0.0, 7.5]),
                params: Default::default(),
            },
            Tensor {
                shape: [3, 2, 1],
                data: TensorData::F16(
                    (0..6)
                        .map(|v| half::f16::from_f32(v as f32 / 3.0))
                        .collect(),
                ),
                params: Default::default(),
            },
        ];
        for tensor in tensors {
            let mut bytes = Vec::new();
            write_tensor(&mut bytes, &tensor).unwrap();
            assert_eq!(read_tensor(&bytes).unwrap(), tensor);
        }
        assert_eq!(read_tensor(b"\x93NUMPY\x01\x00"), Err(NpyError::NotNpy));
    }
}
