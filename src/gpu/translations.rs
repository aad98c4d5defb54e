//! Every entry point of every shader through naga's other back ends, as wgpu would translate it
//! for Vulkan (SPIR-V, checked by spirv-val of the Khronos SPIRV-Tools), D3D12 (HLSL), Metal
//! (MSL) and OpenGL ES 3.1 (GLSL), and through another WGSL compiler, Dawn's Tint (Chrome's): a
//! shader that only one compiler takes is a GPU on which gpuprep cannot run. Each stage shader
//! is compiled as src/gpu/stages.rs compiles it (`stage_source`: shaders/jobs.wgsl and the shared
//! functions it calls before it), with the values its `override` constants get.

use naga::back::{glsl, hlsl, msl, spv};
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use naga::{Module, ShaderStage};
use std::path::Path;
use std::process::Command;

/// Each stage shader of shaders/, as it is compiled; every other file of shaders/ is one that
/// stage shaders are compiled with.
fn stage_shaders() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let stages = super::shaders::STAGE_SHADERS;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let shared = ["jobs.wgsl", "double.wgsl", "float.wgsl"].contains(&name.as_str());
        assert!(
            shared || stages.iter().any(|(file, _, _)| *file == name),
            "shaders/{name} is neither a stage shader (src/gpu/stages.rs) nor a shared one"
        );
    }
    stages
        .iter()
        .map(|(file, _, _)| (file.to_string(), super::shaders::stage_source(file)))
        .collect()
}

/// The module for `entry_point`, its `override` constants replaced by the values gpuprep gives
/// them.
fn specialised(module: &Module, entry_point: &str) -> (Module, ModuleInfo) {
    let info = validate(module);
    let constants: naga::back::PipelineConstants = override_values(module)
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        module,
        &info,
        Some((ShaderStage::Compute, entry_point)),
        &constants,
    )
    .unwrap_or_else(|e| panic!("{entry_point}: {e}"));
    (module.into_owned(), info.into_owned())
}

fn validate(module: &Module) -> ModuleInfo {
    Validator::new(ValidationFlags::all(), Capabilities::empty())
        .validate(module)
        .unwrap()
}

/// The values of the `override` constants `module` declares, as gpuprep gives them.
fn override_values(module: &Module) -> Vec<(&'static str, f64)> {
    let declared = |name: &str| {
        module
            .overrides
            .iter()
            .any(|(_, o)| o.name.as_deref() == Some(name))
    };
    let values: Vec<(&str, f64)> = super::stages::TAPS
        .iter()
        .chain(super::entropy::CONSTANTS)
        .filter(|(name, _)| declared(name))
        .copied()
        .collect();
    assert_eq!(
        values.len(),
        module.overrides.len(),
        "an override without a value"
    );
    values
}

/// Every (file, entry point, specialised module, its info).
fn entry_points() -> Vec<(String, String, Module, ModuleInfo)> {
    let mut all = Vec::new();
    for (file, source) in stage_shaders() {
        let module = naga::front::wgsl::parse_str(&source).unwrap();
        for entry in &module.entry_points {
            let (specialised, info) = specialised(&module, &entry.name);
            all.push((file.clone(), entry.name.clone(), specialised, info));
        }
    }
    assert!(all.len() >= 7, "found only {} entry points", all.len());
    all
}

/// spirv-val, which the test command installs (Debian's spirv-tools): without it this test
/// fails rather than pass having checked nothing.
fn spirv_val(words: &[u32], what: &str) {
    let path = std::env::temp_dir().join(format!(
        "gpuprep-{}-{}.spv",
        std::process::id(),
        what.replace([':', '/'], "-")
    ));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();
    let run = Command::new("spirv-val")
        .args(["--target-env", "vulkan1.1"])
        .arg(&path)
        .output();
    std::fs::remove_file(&path).unwrap();
    let out = run.unwrap_or_else(|e| {
        panic!("cannot run spirv-val ({e}): install SPIRV-Tools (Debian's spirv-tools)")
    });
    assert!(
        out.status.success(),
        "{what}: spirv-val refuses naga's SPIR-V:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_entry_point_is_valid_spir_v() {
    for (file, entry, module, info) in entry_points() {
        let pipeline = spv::PipelineOptions {
            shader_stage: ShaderStage::Compute,
            entry_point: entry.clone(),
        };
        let options = spv::Options {
            lang_version: (1, 3),
            ..spv::Options::default()
        };
        let words = spv::write_vec(&module, &info, &options, Some(&pipeline))
            .unwrap_or_else(|e| panic!("{file}:{entry}: {e}"));
        spirv_val(&words, &format!("{file}:{entry}"));
    }
}

#[test]
fn every_entry_point_translates_to_hlsl_msl_and_glsl() {
    for (file, entry, module, info) in entry_points() {
        let what = format!("{file}:{entry}");
        let mut hlsl_text = String::new();
        let hlsl_pipeline = hlsl::PipelineOptions {
            entry_point: Some((ShaderStage::Compute, entry.clone())),
        };
        let hlsl_options = hlsl::Options {
            shader_model: hlsl::ShaderModel::V6_0,
            ..hlsl::Options::default()
        };
        hlsl::Writer::new(&mut hlsl_text, &hlsl_options, &hlsl_pipeline)
            .write(&module, &info, None)
            .unwrap_or_else(|e| panic!("{what}: HLSL: {e}"));
        assert!(hlsl_text.contains("[numthreads("), "{what}: {hlsl_text}");

        let msl_options = msl::Options {
            lang_version: (2, 4),
            ..msl::Options::default()
        };
        let msl_pipeline = msl::PipelineOptions {
            entry_point: Some((ShaderStage::Compute, entry.clone())),
            ..msl::PipelineOptions::default()
        };
        let (msl_text, _) = msl::write_string(&module, &info, &msl_options, &msl_pipeline)
            .unwrap_or_else(|e| panic!("{what}: MSL: {e}"));
        assert!(msl_text.contains("kernel void"), "{what}: {msl_text}");

        let mut glsl_text = String::new();
        let glsl_pipeline = glsl::PipelineOptions {
            shader_stage: ShaderStage::Compute,
            entry_point: entry.clone(),
            multiview: None,
        };
        let glsl_options = glsl::Options::default(); // OpenGL ES 3.1, what compute needs
        glsl::Writer::new(
            &mut glsl_text,
            &module,
            &info,
            &glsl_options,
            &glsl_pipeline,
            naga::proc::BoundsCheckPolicies::default(),
        )
        .and_then(|mut w| w.write())
        .unwrap_or_else(|e| panic!("{what}: GLSL: {e}"));
        assert!(glsl_text.contains("local_size_x"), "{what}: {glsl_text}");
    }
}

/// Tint compiles every shader and validates each entry point's pipeline, with its override
/// values and WebGPU's default limits: tools/dawn/compile.mjs on Dawn's node bindings (the npm
/// package `webgpu`, which the test command installs with `npm ci` there). Without node or that
/// package this test fails rather than pass having checked nothing.
#[test]
fn every_shader_compiles_with_tint() {
    let shaders: Vec<serde_json::Value> = stage_shaders()
        .into_iter()
        .map(|(file, source)| {
            let module = naga::front::wgsl::parse_str(&source).unwrap();
            let constants: serde_json::Map<String, serde_json::Value> = override_values(&module)
                .into_iter()
                .map(|(name, value)| (name.to_string(), value.into()))
                .collect();
            let entry_points: Vec<serde_json::Value> = module
                .entry_points
                .iter()
                .map(|e| serde_json::json!({ "name": e.name, "constants": constants }))
                .collect();
            serde_json::json!({ "file": file, "source": source, "entry_points": entry_points })
        })
        .collect();
    let path = std::env::temp_dir().join(format!("gpuprep-tint-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_vec(&shaders).unwrap()).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/dawn");
    let run = Command::new("node")
        .current_dir(&dir)
        .arg("compile.mjs")
        .arg(&path)
        .output();
    std::fs::remove_file(&path).unwrap();
    let out = run.unwrap_or_else(|e| panic!("cannot run node ({e}): install Node.js"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "Tint refuses a shader, or Dawn is missing (npm ci in tools/dawn):\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pipelines: usize = shaders
        .iter()
        .map(|s| s["entry_points"].as_array().unwrap().len())
        .sum();
    let expected = format!(
        "Tint: {} shaders, {pipelines} pipelines, 0 failures",
        shaders.len()
    );
    assert!(stdout.contains(&expected), "{stdout}");
}
