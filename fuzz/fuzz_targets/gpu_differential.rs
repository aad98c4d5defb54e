//! GPU == CPU reference, bit for bit, on whatever the decoder accepts (lavapipe where there is no
//! GPU): the fuzzer looks for coefficient images on which the shaders and their CPU mirrors part,
//! and for files on which decoding straight into the compact upload parts from dense decoding.
#![no_main]

use gpuprep::gpu::{create_device, Gpu, GpuPipeline, StreamOptions};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn gpu() -> &'static (Gpu, GpuPipeline) {
    static GPU: OnceLock<(Gpu, GpuPipeline)> = OnceLock::new();
    GPU.get_or_init(|| {
        let gpu = create_device().expect("the differential target needs a GPU (or lavapipe)");
        let pipeline = GpuPipeline::new(&gpu.device, &gpu.queue);
        (gpu, pipeline)
    })
}

fuzz_target!(|data: &[u8]| {
    let limits = gpuprep_fuzz::limits(data);
    let Ok(coefficients) = gpuprep::jpeg::decode_coefficients(data, &limits) else {
        return;
    };
    let (_, pipeline) = gpu();
    // The decoded image, and the normalised resize of it: every shader runs.
    let rgb = gpuprep::reference::decode_rgb(&coefficients);
    if let Ok(expected) = &rgb {
        let actual = pipeline.decode_rgb(&coefficients).unwrap();
        assert!(
            &actual == expected,
            "GPU RGB differs from the CPU reference"
        );
    }
    // The tensor through the streaming loader, the path `convert` takes: there, single-scan
    // files are decoded straight into the compact upload rather than through dense blocks.
    let transform = gpuprep_fuzz::transform();
    let streamed = pipeline.preprocess_many(&[data], &StreamOptions::new(&transform, &limits, 1));
    match (
        gpuprep::preprocess(data, &transform, &limits),
        &streamed.results[0],
    ) {
        (Ok(expected), Ok(actual)) => assert!(
            *actual == expected,
            "GPU tensor differs from the CPU reference"
        ),
        (Err(expected), Err(actual)) => assert_eq!(actual.to_string(), expected.to_string()),
        (expected, actual) => panic!(
            "CPU {:?} but GPU {:?}",
            expected.err(),
            actual.as_ref().err()
        ),
    }
});
