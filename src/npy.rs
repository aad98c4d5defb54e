//! Writing NumPy `.npy` files (format version 1.0), the CLI's output format.

use std::io::{self, Write};

/// An element type that `.npy` can describe.
pub trait Element: Copy {
    /// NumPy's type string, e.g. `|u1` or `<f4`.
    const DESCR: &'static str;
    /// Appends the little-endian bytes of `values`.
    fn extend_bytes(values: &[Self], out: &mut Vec<u8>);
}

impl Element for u8 {
    const DESCR: &'static str = "|u1";
    fn extend_bytes(values: &[Self], out: &mut Vec<u8>) {
        out.extend_from_slice(values);
    }
}

impl Element for f32 {
    const DESCR: &'static str = "<f4";
    fn extend_bytes(values: &[Self], out: &mut Vec<u8>) {
        out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }
}

/// The header of a C-ordered array of `shape`, padded so the data starts 64-byte aligned.
pub fn header<T: Element>(shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        T::DESCR
    );
    // magic (6) + version (2) + length (2) + dict + '\n' must be a multiple of 64.
    let unpadded = 10 + dict.len() + 1;
    dict.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes `values` as an array of `shape` (C order).
pub fn write<T: Element>(mut to: impl Write, shape: &[usize], values: &[T]) -> io::Result<()> {
    assert_eq!(
        shape.iter().product::<usize>(),
        values.len(),
        "shape does not match data"
    );
    let mut bytes = header::<T>(shape);
    T::extend_bytes(values, &mut bytes);
    to.write_all(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_aligned_and_describes_the_array() {
        let h = header::<u8>(&[2, 3, 3]);
        assert_eq!(h.len() % 64, 0);
        let text = String::from_utf8_lossy(&h[10..]);
        assert!(text.starts_with("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3, 3), }"));
        assert!(text.ends_with('\n'));
    }
}
