//! Decodes JPEG files to uint8 H×W×3 `.npy` files next to them, printing each outcome.
//!
//! `cargo run --release --example decode_to_npy -- a.jpg b.jpg`

fn main() {
    let limits = gpuprep::Limits::default();
    for path in std::env::args().skip(1) {
        let result = std::fs::read(&path)
            .map_err(gpuprep::Error::from)
            .and_then(|bytes| gpuprep::decode_rgb(&bytes, &limits));
        match result {
            Ok(rgb) => {
                let out = format!("{path}.npy");
                match gpuprep::convert::write_rgb_npy(out.as_ref(), &rgb) {
                    Ok(()) => println!("{path}: {}x{} -> {out}", rgb.width, rgb.height),
                    Err(e) => println!("{path}: {e}"),
                }
            }
            Err(e) => println!("{path}: {e}"),
        }
    }
}
