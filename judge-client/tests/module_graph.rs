//! `judge serve`'s modules import one another one way only: the graph of which module of
//! `src/serve/` names which (`super::x`, `crate::serve::x`, outside test code) has no circle, so
//! the state never depends on the runners nor the index on the simulations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The serve module a file belongs to (`index/records.rs` is `index`; `mod.rs` is the root, `""`).
fn module_of(relative: &Path) -> String {
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    if first == "mod.rs" {
        String::new()
    } else {
        first.trim_end_matches(".rs").to_owned()
    }
}

/// The source without its tests and comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The serve modules a file in `module` names: `super::x`, `super::{x, y}`, `crate::serve::x`,
/// and from the files inside a module's folder `super::super::x`.
fn named(
    module: &str,
    in_folder: bool,
    code: &str,
    modules: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let prefixes: &[&str] = if in_folder {
        &["crate::serve::", "super::super::"]
    } else {
        &["crate::serve::", "super::"]
    };
    for prefix in prefixes {
        for (i, _) in code.match_indices(prefix) {
            // `super::super::x` also contains `super::x`: skip the inner match.
            if *prefix == "super::" && code[..i].ends_with("super::") {
                continue;
            }
            let rest = &code[i + prefix.len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or("").trim())
                    .collect(),
                None => vec![
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or(""),
                ],
            };
            for name in names {
                if modules.contains(name) && name != module {
                    out.insert(name.to_owned());
                }
            }
        }
    }
    out
}

/// A circle in `graph`, as the modules along it, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn serve_modules_import_one_another_without_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/serve");
    let mut paths = Vec::new();
    files(&root, &mut paths);
    let modules: BTreeSet<String> = paths
        .iter()
        .map(|p| module_of(p.strip_prefix(&root).unwrap()))
        .filter(|m| !m.is_empty())
        .collect();
    assert!(modules.len() > 10, "{modules:?}");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &paths {
        let relative = path.strip_prefix(&root).unwrap();
        let module = module_of(relative);
        if module.is_empty() {
            // The root only wires the routes: it names every module.
            continue;
        }
        // In `index/records.rs`, `super` is `index`; in `index/mod.rs` it is the serve root.
        let in_folder = relative.components().count() > 1 && !relative.ends_with("mod.rs");
        let text = std::fs::read_to_string(path).unwrap();
        let names = named(&module, in_folder, &code(&text), &modules);
        graph.entry(module).or_default().extend(names);
    }
    assert!(
        graph["runner"].contains("state") && graph["live"].contains("index"),
        "the graph is read: {graph:?}"
    );
    assert_eq!(circle(&graph), None, "{graph:#?}");
}

#[test]
fn a_circle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        circle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
