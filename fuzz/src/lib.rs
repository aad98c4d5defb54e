//! What the fuzz targets share: limits small enough that libFuzzer explores instead of
//! allocating, and the transform the pipeline targets run.

use gpuprep::{DType, Layout, Normalize, Resize};
use gpuprep::{Limits, Transform};

/// Small images only (a 4-megapixel cap keeps each run fast), few scans; every other input
/// decodes with `load_truncated`, so both ways of ending early are explored.
pub fn limits(data: &[u8]) -> Limits {
    Limits {
        max_pixels: 1 << 22,
        max_scans: 100,
        load_truncated: data.len() % 2 == 1,
    }
}

/// Resize to 24×24, normalised float32 C×H×W: every pixel stage runs.
pub fn transform() -> Transform {
    Transform {
        resize: Some(Resize::Exact {
            width: 24,
            height: 24,
        }),
        normalize: Some(Normalize::IMAGENET),
        layout: Layout::Chw,
        dtype: DType::F32,
        ..Transform::default()
    }
}
