//! Validates every shader in shaders/ with naga at build time, so that a broken shader fails the
//! build here rather than on a user's machine. Stage shaders are compiled with shaders/jobs.wgsl
//! and the shared functions they call before them (see src/gpu/stages.rs); each is validated
//! with both shared files before it.

use std::fs;

fn main() {
    println!("cargo:rerun-if-changed=shaders");
    let mut entries: Vec<_> = fs::read_dir("shaders")
        .expect("shaders/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    entries.sort();
    let shared = [
        "shaders/jobs.wgsl",
        "shaders/double.wgsl",
        "shaders/float.wgsl",
    ];
    let prefix: String = shared
        .iter()
        .map(|p| fs::read_to_string(p).expect("the shared shader files exist"))
        .collect();
    for path in entries
        .into_iter()
        .filter(|p| !shared.iter().any(|s| p.ends_with(s)))
    {
        let source = prefix.clone() + &fs::read_to_string(&path).expect("readable shader");
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
