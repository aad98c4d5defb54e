//! The entropy decoder on arbitrary bytes: an error or coefficients, never a panic, a hang or an
//! allocation the limits do not allow (libFuzzer's -rss_limit_mb catches the last).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = gpuprep::jpeg::decode_coefficients(data, &gpuprep_fuzz::limits(data));
});
