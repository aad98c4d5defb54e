//! Validates every shader in shaders/ with naga at build time, so that a broken shader fails the
//! build here rather than on a user's machine. Stage shaders are compiled with shaders/jobs.wgsl
//! before them (see src/gpu/stages.rs), so they are validated that way too.

use std::fs;

fn main() {
    println!("cargo:rerun-if-changed=shaders");
    let mut entries: Vec<_> = fs::read_dir("shaders")
        .expect("shaders/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    entries.sort();
    let jobs = fs::read_to_string("shaders/jobs.wgsl").expect("shaders/jobs.wgsl exists");
    for path in entries.into_iter().filter(|p| !p.ends_with("jobs.wgsl")) {
        let source = jobs.clone() + &fs::read_to_string(&path).expect("readable shader");
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("{}:\n{}", path.display(), e.emit_to_string(&source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}:\n{}", path.display(), e.emit_to_string(&source)));
    }
}
