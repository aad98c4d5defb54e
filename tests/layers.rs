//! The layers of src/ and the rule between them, checked on the source text (outside
//! `#[cfg(test)]` modules, whose tests may compare anything with anything):
//!
//! - src/plan/ (each image's geometry) names no wgpu and nothing of src/reference/ or src/gpu/:
//!   both backends read it, so it can favour neither;
//! - src/gpu/ names nothing of src/reference/ and src/reference/ nothing of src/gpu/: the CPU
//!   reference is the oracle the GPU is checked against, not a source of its numbers;
//! - within each folder of src/ (the CLI's too), the files' imports of one another form no
//!   circle, and neither do the crate's top-level modules;
//! - no file of src/ holds more than 800 lines of library code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The folder of the crate's modules.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every .rs file under `dir`, in sorted order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of a file as the library compiles it: without its `#[cfg(test)]` items and without
/// comments (doc links name modules without importing them).
fn library_code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut code = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            skip_item(&mut lines);
            continue;
        }
        let without_comment = match trimmed.find("//") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        code.push_str(without_comment);
        code.push('\n');
    }
    code
}

/// Skips the item after a `#[cfg(test)]` line: to the end of its braces, or of its line when it
/// has none (`use`, a `mod` declared in a file of its own).
fn skip_item<'a>(lines: &mut impl Iterator<Item = &'a str>) {
    let mut depth = 0i32;
    let mut opened = false;
    for line in lines {
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if line.trim_start().starts_with("#[") && !opened {
            continue;
        }
        if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
            return;
        }
    }
}

/// The files of `layer` (a folder of src/) whose library code contains any of `forbidden`.
fn naming(layer: &str, forbidden: &[&str]) -> Vec<String> {
    rust_files(&src().join(layer))
        .iter()
        .flat_map(|path| {
            let code = library_code(path);
            forbidden
                .iter()
                .filter(|name| code.contains(*name))
                .map(|name| format!("{} names {name}", path.display()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_plan_names_neither_backend_nor_wgpu() {
    let found = naming("plan", &["wgpu", "crate::reference", "crate::gpu"]);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_gpu_and_the_cpu_reference_name_each_other_only_in_tests() {
    let mut found = naming("gpu", &["crate::reference"]);
    found.extend(naming("reference", &["crate::gpu"]));
    assert!(found.is_empty(), "{found:#?}");
}

/// The first path segment named after each `prefix` in `code` (`prefix::a::B` names `a`;
/// `prefix::{a, b::C}` names `a` and `b`).
fn names_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    code.match_indices(prefix).flat_map(move |(at, _)| {
        let rest = &code[at + prefix.len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(0)]
                .split(',')
                .map(|n| n.trim().split("::").next().unwrap_or(""))
                .collect(),
            None => vec![rest
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or("")],
        };
        names
    })
}

/// For each file of the folder `module` of src/ (the folder's mod.rs aside), the sibling files
/// its library code uses (`super::x`, `crate::module::x`).
fn sibling_imports(module: &str) -> BTreeMap<String, BTreeSet<String>> {
    let dir = src().join(module);
    let stem = |p: &Path| p.file_stem().unwrap().to_string_lossy().into_owned();
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| !["mod", "main"].contains(&stem(p).as_str()))
        .collect();
    let siblings: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .map(|p| stem(&p))
        .filter(|name| name != "mod" && name != "main")
        .collect();
    files
        .iter()
        .map(|path| {
            let code = library_code(path);
            let mut used = BTreeSet::new();
            for prefix in ["super::".to_string(), format!("crate::{module}::")] {
                used.extend(
                    names_after(&code, &prefix)
                        .filter(|n| siblings.contains(*n) && *n != stem(path))
                        .map(String::from),
                );
            }
            (stem(path), used)
        })
        .collect()
}

/// A circle in `imports`, if there is one.
fn find_circle(imports: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        imports: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in imports.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, imports, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    imports
        .keys()
        .find_map(|node| visit(node, imports, &mut Vec::new(), &mut done))
}

#[test]
fn no_folder_of_src_imports_in_a_circle() {
    for module in ["bin/gpuprep", "gpu", "jpeg", "loader", "plan", "reference"] {
        let imports = sibling_imports(module);
        assert!(imports.len() > 2, "src/{module}: its files were not found");
        if let Some(circle) = find_circle(&imports) {
            panic!("src/{module} imports in a circle: {}", circle.join(" -> "));
        }
    }
}

/// The crate's top-level modules (a file or folder of src/ each), with the others each one's
/// library code names as `crate::x` or `crate::{x, ..}`.
fn top_level_imports() -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<String, PathBuf> = std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .filter(|(name, _)| !["lib", "bin"].contains(&name.as_str()))
        .collect();
    modules
        .iter()
        .map(|(name, path)| {
            let files = if path.is_dir() {
                rust_files(path)
            } else {
                vec![path.clone()]
            };
            let mut used = BTreeSet::new();
            for file in files {
                let code = library_code(&file);
                used.extend(
                    names_after(&code, "crate::")
                        .filter(|n| modules.contains_key(*n) && n != name)
                        .map(String::from),
                );
            }
            (name.clone(), used)
        })
        .collect()
}

#[test]
fn the_top_level_modules_import_in_no_circle() {
    let imports = top_level_imports();
    assert!(imports.len() > 10, "src/: its modules were not found");
    // The layering the rest rests on: the transform vocabulary and errors name nothing above them.
    assert!(
        imports["transform"].is_empty(),
        "{:?}",
        imports["transform"]
    );
    assert!(imports["error"].is_empty(), "{:?}", imports["error"]);
    if let Some(circle) = find_circle(&imports) {
        panic!("src/ imports in a circle: {}", circle.join(" -> "));
    }
}

#[test]
fn no_file_of_src_holds_more_than_800_lines_of_library_code() {
    let files = rust_files(&src());
    assert!(files.len() > 50, "src/: its files were not found");
    let long: Vec<String> = files
        .iter()
        .map(|path| (path, library_code(path).lines().count()))
        .filter(|(_, lines)| *lines > 800)
        .map(|(path, lines)| format!("{}: {lines}", path.display()))
        .collect();
    assert!(long.is_empty(), "{long:#?}");
}

/// The checks above can fail: the circle that packing.rs, pipeline.rs and entropy.rs formed
/// before the plan layer is found, and a test module's imports are not library code.
#[test]
fn the_circle_finder_finds_circles_and_ignores_tests() {
    let imports: BTreeMap<String, BTreeSet<String>> = [
        ("entropy", vec!["packing"]),
        ("packing", vec!["pipeline"]),
        ("pipeline", vec!["packing", "stream"]),
        ("stream", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    let circle = find_circle(&imports).expect("a circle");
    assert_eq!(circle, ["packing", "pipeline", "packing"]);
    let dir = std::env::temp_dir().join(format!("gpuprep-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sample.rs");
    std::fs::write(
        &file,
        "use crate::gpu::x; // crate::reference in a comment\n\
         #[cfg(test)]\nmod tests {\n    use crate::reference::y;\n    fn f() { if true { } }\n}\n\
         #[cfg(test)]\nuse crate::reference::z;\nfn after() {}\n",
    )
    .unwrap();
    let code = library_code(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(code.contains("crate::gpu::x"));
    assert!(code.contains("fn after()"));
    assert!(!code.contains("crate::reference"), "{code}");
}
