//! The `convert` job: image files in, one `.npy` per image and a `report.json` out.
//!
//! Images are decoded in parallel across threads; one bad image never stops the others.

use crate::error::{Error, Result};
use crate::{decode_rgb, npy, Limits, RgbImage};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// File extensions a directory input contributes (compared without case).
pub const IMAGE_EXTENSIONS: [&str; 5] = ["jpg", "jpeg", "jpe", "jfif", "jif"];

/// Which implementation runs the pixel stages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// The CPU reference (the default, and the fallback without a GPU).
    #[default]
    Cpu,
}

/// What one input became.
#[derive(Debug)]
pub struct ImageReport {
    /// The input path as given (or as found in a directory).
    pub file: PathBuf,
    /// The `.npy` written, or why there is none.
    pub result: Result<Written>,
}

/// A written output.
#[derive(Debug)]
pub struct Written {
    /// Path of the `.npy` file.
    pub output: PathBuf,
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
}

/// Expands directories into the image files directly inside them, in name order; files stay.
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            files.push(input.clone());
            continue;
        }
        let mut found = Vec::new();
        for entry in fs::read_dir(input).map_err(|e| Error::from(e).in_file(input))? {
            let path = entry.map_err(|e| Error::from(e).in_file(input))?.path();
            if path.is_file() && has_image_extension(&path) {
                found.push(path);
            }
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

fn has_image_extension(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    IMAGE_EXTENSIONS
        .iter()
        .any(|known| ext.eq_ignore_ascii_case(known))
}

/// Refuses two inputs whose outputs would have the same name.
pub fn check_unique_names(files: &[PathBuf]) -> Result<()> {
    let mut seen: HashMap<&std::ffi::OsStr, &Path> = HashMap::new();
    for file in files {
        let name = file.file_name().unwrap_or(file.as_os_str());
        if let Some(first) = seen.insert(name, file) {
            return Err(Error::OutputClash {
                name: name.to_string_lossy().into_owned(),
                first: first.to_path_buf(),
                second: file.clone(),
            });
        }
    }
    Ok(())
}

/// Decodes each file to RGB and writes `<out_dir>/<file name>.npy` (uint8, H×W×3) and
/// `<out_dir>/report.json`. Returns one report per file, in input order.
pub fn convert(files: &[PathBuf], out_dir: &Path, limits: &Limits) -> Result<Vec<ImageReport>> {
    check_unique_names(files)?;
    fs::create_dir_all(out_dir).map_err(|e| Error::from(e).in_file(out_dir))?;
    let reports: Vec<ImageReport> = files
        .par_iter()
        .map(|file| ImageReport {
            file: file.clone(),
            result: convert_one(file, out_dir, limits).map_err(|e| e.in_file(file)),
        })
        .collect();
    let report_path = out_dir.join("report.json");
    fs::write(&report_path, report_json(&reports))
        .map_err(|e| Error::from(e).in_file(&report_path))?;
    Ok(reports)
}

fn convert_one(file: &Path, out_dir: &Path, limits: &Limits) -> Result<Written> {
    let bytes = fs::read(file)?;
    let image = decode_rgb(&bytes, limits)?;
    let name = file.file_name().unwrap_or(file.as_os_str());
    let mut output = out_dir.join(name).into_os_string();
    output.push(".npy");
    let output = PathBuf::from(output);
    write_rgb_npy(&output, &image)?;
    Ok(Written {
        output,
        width: image.width,
        height: image.height,
    })
}

/// Writes an RGB image as a uint8 H×W×3 `.npy`.
pub fn write_rgb_npy(path: &Path, image: &RgbImage) -> Result<()> {
    let file = fs::File::create(path)?;
    npy::write(
        std::io::BufWriter::new(file),
        &[image.height, image.width, 3],
        &image.data,
    )?;
    Ok(())
}

/// The report as a JSON array, one object per input in input order.
pub fn report_json(reports: &[ImageReport]) -> String {
    let entries: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            let file = r.file.display().to_string();
            match &r.result {
                Ok(w) => serde_json::json!({
                    "file": file,
                    "ok": true,
                    "output": w.output.display().to_string(),
                    "width": w.width,
                    "height": w.height,
                }),
                Err(e) => serde_json::json!({ "file": file, "ok": false, "error": e.to_string() }),
            }
        })
        .collect();
    serde_json::to_string_pretty(&entries).expect("JSON values serialise") + "\n"
}
