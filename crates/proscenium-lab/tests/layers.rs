//! The lab's modules import downward only: each imports those before it in [`ORDER`]
//! (the layers of `src/lib.rs`'s map), read from the `crate::` paths of its files,
//! test modules and comments left out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every top-level module, bottom first: plan, then run, results, report and the
/// runner that composes them.
const ORDER: [&str; 14] = [
    // plan
    "calibration",
    "scenario",
    // run
    "error",
    "progress",
    "tools",
    "process",
    "servers",
    "machine",
    "provenance",
    "load",
    // results
    "results",
    // report
    "report",
    "index",
    // the runner
    "runner",
];

#[test]
fn every_module_imports_only_the_ones_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut upward = Vec::new();
    for file in sources(&src) {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let module = relative.split(['/', '.']).next().unwrap().to_owned();
        if module == "lib" || relative.ends_with("/tests.rs") {
            continue;
        }
        let rank = rank(&module).unwrap_or_else(|| panic!("{module} is not in ORDER"));
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for used in crate_paths(&code) {
            let used_rank = rank_of_path(&used)
                .unwrap_or_else(|| panic!("{relative}: crate::{used} is not a module of ORDER"));
            if used_rank > rank {
                upward.push(format!("{relative} imports crate::{used}"));
            }
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

fn rank(module: &str) -> Option<usize> {
    ORDER.iter().position(|m| *m == module)
}

/// The rank of a path below `crate::`: its module's, or `error`'s for the root's
/// `Error`.
fn rank_of_path(path: &str) -> Option<usize> {
    match path {
        "Error" => rank("error"),
        _ => rank(path),
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// A file's code without its test module (at its end, by the convention) and without
/// comments.
fn code_of(text: &str) -> String {
    let end = [
        "#[cfg(test)]\nmod tests",
        "#[cfg(test)]\npub(crate) mod tests",
    ]
    .iter()
    .filter_map(|start| text.find(start))
    .min()
    .unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|line| line.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first name after each `crate::`, and the first of each item of a
/// `crate::{...}` list.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(list) => names.extend(list_heads(list)),
            None => {
                names.insert(head(rest));
            }
        }
    }
    names.remove("");
    names
}

/// The name a path starts with.
fn head(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The first name of each item of a use list, up to its closing brace.
fn list_heads(list: &str) -> Vec<String> {
    let mut heads = vec![head(list.trim_start())];
    let mut depth = 0;
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(head(list[i + 1..].trim_start())),
            _ => {}
        }
    }
    heads
}
