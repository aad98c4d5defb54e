//! Writing NumPy `.npy` files (format version 1.0), the CLI's output format.

use crate::tensor::Tensor;
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

    /// Writes the header with the final count.
    pub fn finish(mut self) -> io::Result<usize> {
        let [a, b, c] = self.shape;
        let header = header_padded(self.dtype, &[self.count, a, b, c], STACKED_HEADER);
        self.to.seek(SeekFrom::Start(0))?;
        self.to.write_all(&header)?;
        self.to.flush()?;
        Ok(self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorData;

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
        };
        let mut file = io::Cursor::new(Vec::new());
        let mut stack = StackedWriter::new(&mut file, DType::U8, [1, 1, 3]).unwrap();
        stack.push(&tensor).unwrap();
        stack.push(&tensor).unwrap();
        assert_eq!(stack.finish().unwrap(), 2);
        let bytes = file.into_inner();
        assert_eq!(bytes.len(), STACKED_HEADER + 6);
        assert!(String::from_utf8_lossy(&bytes[..STACKED_HEADER]).contains("'shape': (2, 1, 1, 3)"));
    }
}
