//! The module graph: foundations at the bottom, no folder importing one above it. A cycle
//! between any two top-level modules fails here, listing every edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules its files name (`crate::x`).
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
            let module = first.trim_end_matches(".rs").to_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            // Test modules may reach anywhere; only the shipped code is layered. The cut is at
            // the attribute on a line of its own: `#[cfg(test)]` in a comment cuts nothing.
            let shipped = text
                .lines()
                .take_while(|line| line.trim() != "#[cfg(test)]")
                .flat_map(|line| [line, "\n"])
                .collect::<String>();
            let uses = graph.entry(module.clone()).or_default();
            for (i, _) in shipped.match_indices("crate::") {
                let name: String =
                    shipped[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != module {
                    uses.insert(name);
                }
            }
            // `use crate::{a, b::c}` groups.
            for (i, _) in shipped.match_indices("use crate::{") {
                let group = &shipped[i + 12..];
                let group = &group[..group.find("};").unwrap_or(group.len())];
                for part in group.split(',') {
                    let name: String =
                        part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() && name != module && name != "self" {
                        uses.insert(name);
                    }
                }
            }
        }
    }
    graph
}

/// The modules reachable from `from`.
fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_owned()];
    while let Some(m) = todo.pop() {
        for next in graph.get(&m).into_iter().flatten() {
            if seen.insert(next.clone()) {
                todo.push(next.clone());
            }
        }
    }
    seen
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = module_graph();
    assert!(graph.len() > 20, "the graph was not read: {graph:?}");
    let modules: Vec<&String> = graph.keys().collect();
    let mut cycles = Vec::new();
    for a in &modules {
        for b in modules.iter().filter(|b| a < *b) {
            if reach(&graph, a).contains(*b) && reach(&graph, b).contains(*a) {
                cycles.push(format!("{a} ⇄ {b}"));
            }
        }
    }
    let edges: Vec<String> = graph
        .iter()
        .map(|(m, uses)| format!("{m} → {}", uses.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect();
    assert!(cycles.is_empty(), "cycles: {}\nedges:\n{}", cycles.join("; "), edges.join("\n"));
}

/// The rows of docs/architecture.md's module table, bottom first: the modules each names.
fn documented_layers() -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")).unwrap();
    let table = doc.split("| module | holds | imports |").nth(1).expect("the module table in docs/architecture.md");
    let rows = table.lines().skip(2).take_while(|line| line.starts_with('|'));
    rows.map(|row| {
        let first = row.split(" | ").next().unwrap_or_default();
        first
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|name| name.trim_end_matches('/').trim_end_matches(".rs").to_owned())
            .collect()
    })
    .collect()
}

#[test]
fn the_documented_layers_are_the_import_order() {
    let graph = module_graph();
    let layers = documented_layers();
    let row_of = |module: &str| layers.iter().position(|row| row.iter().any(|m| m == module));
    let mut wrong = Vec::new();
    // `lib.rs`, the binary and the fuzz bodies stand outside the layers.
    for (module, uses) in graph.iter().filter(|(m, _)| !["lib", "main", "fuzz_targets"].contains(&m.as_str())) {
        let Some(row) = row_of(module) else {
            wrong.push(format!("`{module}` is not in the table"));
            continue;
        };
        for used in uses.iter().filter(|u| graph.contains_key(*u)) {
            if row_of(used).is_none_or(|r| r > row) {
                wrong.push(format!("`{module}` imports `{used}`, which the table puts above it"));
            }
        }
    }
    assert!(layers.len() > 10, "the table was not read: {layers:?}");
    assert!(wrong.is_empty(), "docs/architecture.md's module table against the code:\n{}", wrong.join("\n"));
}

/// Every ```rust block of docs/architecture.md's recipes says where it goes, and the place is
/// there (a new file that does not exist yet, a line that holds its anchor once):
/// `scripts/check-recipes.py --list` applies them to a copy of the tree. `scripts/test.sh` runs
/// it without `--list`, which builds the copy and runs its unit tests.
#[test]
fn every_recipe_block_has_its_place_in_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/check-recipes.py"))
        .arg("--list")
        .output()
        .expect("python3 runs scripts/check-recipes.py");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(" recipe blocks applied"), "{stdout}");
}
