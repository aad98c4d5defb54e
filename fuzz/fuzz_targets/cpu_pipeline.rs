//! The whole CPU pipeline (decode, resize, crop, normalise) with a fixed transform on arbitrary
//! bytes: an error or a tensor of the promised shape.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let transform = gpuprep_fuzz::transform();
    if let Ok(tensor) = gpuprep::preprocess(data, &transform, &gpuprep_fuzz::limits(data)) {
        assert_eq!(tensor.shape, [3, 24, 24]);
    }
});
