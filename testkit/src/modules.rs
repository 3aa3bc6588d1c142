//! The import graph of a crate's modules, read from its source, for tests that hold a layering.
//!
//! Every path a module's code names (`crate::a::b`, `super::x`, `self::y`, inside `use` trees and
//! inline) is resolved to the deepest module of the crate it reaches. Code under `#[cfg(test)]`
//! and comments are left out: tests may reach anywhere. A folder's `mod.rs` is the folder itself,
//! so a child naming its parent's items is not an edge between siblings.
//!
//! [`ModuleGraph::circle_among_children`] answers, for one folder, whether its direct children
//! import one another in a loop (an import from anywhere inside a child counts for the child).
//! This is a reader of source text, not of the compiler's view: it does not see macros that name
//! modules, nor `mod x { .. }` blocks inside a file; the crates this serves use neither for
//! layering.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path inside its crate: `["agent", "relay"]`; the crate root is empty.
pub type ModulePath = Vec<String>;

/// Which modules each module's code names.
#[derive(Debug, Default)]
pub struct ModuleGraph {
    /// Every module, with the modules its code names (itself excluded).
    pub edges: BTreeMap<ModulePath, BTreeSet<ModulePath>>,
}

impl ModuleGraph {
    /// Reads the crate whose sources are under `src` (`lib.rs`, `mod.rs` folders, `x.rs` files).
    /// Binaries' roots (`main.rs`, `bin/`) are not part of the library's graph and are skipped.
    pub fn read(src: &Path) -> Self {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut sources = BTreeMap::new();
        for file in files {
            let relative = file.strip_prefix(src).expect("under src");
            if relative == Path::new("main.rs") || relative.starts_with("bin") {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            sources.insert(module_of(relative), text);
        }
        let modules: BTreeSet<ModulePath> = sources.keys().cloned().collect();
        let mut edges = BTreeMap::new();
        for (module, text) in &sources {
            let named: BTreeSet<ModulePath> = paths_named(&without_tests(&strip_comments(text)))
                .into_iter()
                .filter_map(|path| absolute(module, &path))
                .filter_map(|path| deepest_module(&path, &modules))
                .filter(|target| target != module)
                .collect();
            edges.insert(module.clone(), named);
        }
        Self { edges }
    }

    /// The direct children of `folder` (modules one level below it).
    pub fn children(&self, folder: &[String]) -> BTreeSet<String> {
        self.edges
            .keys()
            .filter(|m| m.len() == folder.len() + 1 && m.starts_with(folder))
            .map(|m| m[folder.len()].clone())
            .collect()
    }

    /// The graph among `folder`'s direct children: child A names child B if any module inside A
    /// names a module inside B.
    pub fn among_children(&self, folder: &[String]) -> BTreeMap<String, BTreeSet<String>> {
        let child_of = |m: &ModulePath| -> Option<String> {
            (m.len() > folder.len() && m.starts_with(folder)).then(|| m[folder.len()].clone())
        };
        let mut graph: BTreeMap<String, BTreeSet<String>> = self
            .children(folder)
            .into_iter()
            .map(|c| (c, BTreeSet::new()))
            .collect();
        for (from, targets) in &self.edges {
            let Some(a) = child_of(from) else { continue };
            for target in targets {
                if let Some(b) = child_of(target)
                    && a != b
                {
                    graph.entry(a.clone()).or_default().insert(b);
                }
            }
        }
        graph
    }

    /// A loop among `folder`'s direct children, as the children along it, if there is one.
    pub fn circle_among_children(&self, folder: &[String]) -> Option<Vec<String>> {
        circle(&self.among_children(folder))
    }

    /// Every folder module (one with children), the crate root first.
    pub fn folders(&self) -> Vec<ModulePath> {
        let mut folders: BTreeSet<ModulePath> = BTreeSet::new();
        for module in self.edges.keys() {
            for len in 0..module.len() {
                folders.insert(module[..len].to_vec());
            }
        }
        folders.into_iter().collect()
    }
}

/// A circle in `graph`, as the nodes along it (the first repeated at the end), if there is one.
pub fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
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

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("a readable folder")
        .map(|e| e.expect("a readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `agent/relay.rs` is `agent::relay`; `agent/mod.rs` is `agent`; `lib.rs` is the root.
fn module_of(relative: &Path) -> ModulePath {
    let mut parts: ModulePath = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    match last.as_str() {
        "mod.rs" | "lib.rs" => {}
        file => parts.push(file.trim_end_matches(".rs").to_owned()),
    }
    parts
}

/// The text without `//` and `/* */` comments (string literals are kept as they are: a `//`
/// inside one cuts the rest of its line, which never holds a module path in these crates).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, tail)| tail);
        } else if rest.starts_with("//") {
            rest = rest.split_once('\n').map_or("", |(_, tail)| tail);
            out.push('\n');
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The text without the items marked `#[cfg(test)]`: from the attribute to the end of its
/// item (a `;` before any brace, or the brace block that follows).
fn without_tests(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let end = match (item.find('{'), item.find(';')) {
            (Some(brace), Some(semi)) if semi < brace => semi + 1,
            (Some(brace), _) => brace + block_len(&item[brace..]),
            (None, Some(semi)) => semi + 1,
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The length of the balanced `{ .. }` block `text` starts with (all of `text` if unbalanced).
fn block_len(text: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// Every path starting with `crate`, `super` or `self` that `code` names, `use` trees expanded:
/// `use crate::a::{b, c::d}` names `crate::a::b` and `crate::a::c::d`.
fn paths_named(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // `super::super::x` is read from its first `super`; `my_crate::` is not ours.
            }
            expand(&code[i..], Vec::new(), &mut out);
        }
    }
    out
}

/// Reads one path (or `use` tree) at the start of `text` after `prefix`, pushing each full path.
fn expand(text: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..block_len(rest).saturating_sub(2).min(group.len())];
            for part in split_top_level(inner) {
                expand(part, path.clone(), out);
            }
            return;
        }
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        path.push(rest[..len].to_owned());
        match rest[len..].trim_start().strip_prefix("::") {
            Some(after) => rest = after.trim_start(),
            None => break,
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// `a, b::{c, d}, e` split at the commas outside braces.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[from..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// `path` as named from `module`, made absolute (`None` if it climbs above the root).
fn absolute(module: &[String], path: &[String]) -> Option<ModulePath> {
    let mut base: ModulePath = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self") => {
            base = module.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            base = module.to_vec();
            while rest.first().is_some_and(|p| p == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().filter(|p| *p != "self").cloned());
    Some(base)
}

/// The deepest module of `modules` that `path` lies in.
fn deepest_module(path: &[String], modules: &BTreeSet<ModulePath>) -> Option<ModulePath> {
    (0..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|prefix| modules.contains(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(pairs: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn a_circle_is_found_and_a_chain_is_not_one() {
        let looped = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &[])]);
        assert_eq!(
            circle(&looped),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        let chain = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &[]), ("d", &["a"])]);
        assert_eq!(circle(&chain), None);
    }

    #[test]
    fn use_trees_relative_paths_tests_and_comments_are_read_as_rust_means_them() {
        let code = "use crate::a::{b, c::{d, e}};\n\
                    use super::super::f;\n\
                    // use crate::commented;\n\
                    fn x() { crate::g::h(); self::i::j(); }\n\
                    #[cfg(test)]\nmod tests { use crate::only_in_tests; }\n\
                    #[cfg(test)]\nuse crate::test_import;\n\
                    fn y() { my_crate::k(); }";
        let named = paths_named(&without_tests(&strip_comments(code)));
        let named: BTreeSet<String> = named.iter().map(|p| p.join("::")).collect();
        let expected: BTreeSet<String> = [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "super::super::f",
            "crate::g::h",
            "self::i::j",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        assert_eq!(named, expected);

        let module: ModulePath = vec!["p".into(), "q".into()];
        let path = |s: &str| s.split("::").map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            absolute(&module, &path("super::super::f")),
            Some(vec!["f".to_owned()])
        );
        assert_eq!(absolute(&module, &path("self::i")), Some(path("p::q::i")));
        assert_eq!(absolute(&module, &path("super::super::super::f")), None);
    }

    #[test]
    fn a_childs_imports_count_for_it_and_its_parent_is_no_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        std::fs::create_dir_all(src.join("a")).unwrap();
        std::fs::write(src.join("lib.rs"), "pub mod a; pub mod b;").unwrap();
        // a/mod.rs names its child and a/inner.rs names its parent: no circle among a's children.
        std::fs::write(src.join("a/mod.rs"), "mod inner; use self::inner::X;").unwrap();
        std::fs::write(src.join("a/inner.rs"), "use super::Y; use crate::b::Z;").unwrap();
        std::fs::write(src.join("b.rs"), "use crate::a::Y;").unwrap();
        let graph = ModuleGraph::read(src);
        assert_eq!(graph.circle_among_children(&["a".to_owned()]), None);
        // a's inner names b, and b names a: the root's children import one another in a loop.
        assert_eq!(
            graph.circle_among_children(&[]),
            Some(vec!["a".into(), "b".into(), "a".into()])
        );
        assert_eq!(graph.folders(), vec![vec![], vec!["a".to_owned()]]);
    }
}
