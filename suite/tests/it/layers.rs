//! The modules of a folder import one way: no two of a folder's child modules reach each other,
//! directly or round a longer circle. Read from the sources, as a reader follows `use` lines: an
//! edge x → y is any `crate::…::y` or `super::y` path (grouped `{y, z}` too) written in x's files
//! outside comments and test modules, and any `crate::…::Name` or `super::Name` where the folder's
//! `mod.rs` (or `lib.rs`) re-exports `Name` from y (`pub use y::Name`, `pub(crate) use`,
//! `pub(super) use`): a re-export hides the module a name lives in, not the edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The folders whose child modules must import one way, with the path by which code names them.
const LAYERED: &[(&str, &str)] = &[
    ("suite/src", "crate"),
    ("suite/src/runner", "crate::runner"),
    ("suite/src/client_check", "crate::client_check"),
    ("suite/src/engine", "crate::engine"),
    ("reference-server/src", "crate"),
    ("reference-server/src/store", "crate::store"),
    ("reference-server/src/idempotency", "crate::idempotency"),
    ("reference-server/src/fleet", "crate::fleet"),
    ("reference-server/src/flaw", "crate::flaw"),
    ("reference-server/src/api", "crate::api"),
    ("reference-server/src/listener", "crate::listener"),
    ("scenarios/src", "crate"),
    ("scenarios/src/profile", "crate::profile"),
    ("proxy/src/http", "crate::http"),
    ("proxy/src/tcp", "crate::tcp"),
    ("proxy/src/toxiproxy", "crate::toxiproxy"),
];

#[test]
fn each_folder_s_modules_import_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut circles = Vec::new();
    for (dir, path) in LAYERED {
        let graph = imports(&root.join(dir), path);
        assert!(graph.len() >= 2, "{dir}: no modules found");
        for circle in cycles(&graph) {
            circles.push(format!("{dir}: {}", circle.join(" ↔ ")));
        }
    }
    assert!(
        circles.is_empty(),
        "modules that import each other:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_reader_sees_a_circle_where_there_is_one() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
    let src = "use super::{b, c::D};\n// super::d\nuse crate::x::e;\nlet f = super::super::g;\n#[cfg(test)]\nuse super::h;";
    let mut found = BTreeSet::new();
    references(src, "super", &mut found);
    references(src, "crate::x", &mut found);
    assert_eq!(found, ["b", "c", "e", "super"].map(str::to_owned).into());
}

#[test]
fn the_reader_follows_a_re_export_to_the_module_that_defines_it() {
    let mod_rs = "mod a;\nmod b;\npub use a::{A, inner::{Y as Z}};\npub(crate) use self::b::B;\npub(super) use b::f as g;\npub use crate::elsewhere::E;\nuse a::Private;";
    let exported = re_exports(mod_rs);
    let expected: BTreeMap<String, String> = [("A", "a"), ("Z", "a"), ("B", "b"), ("g", "b")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(exported, expected);
    // a names b's item through the folder's re-export, b names a directly: a circle only a reader
    // of re-exports sees.
    let names: BTreeSet<String> = ["a", "b"].map(str::to_owned).into();
    let a_src = "use crate::m::{B, Other};\nfn x() -> super::g {}";
    let b_src = "use super::a::helper;";
    let edges = |exported: &BTreeMap<String, String>| -> BTreeMap<String, BTreeSet<String>> {
        [("a", a_src), ("b", b_src)]
            .into_iter()
            .map(|(child, src)| {
                let mut found = BTreeSet::new();
                references(src, "crate::m", &mut found);
                references(src, "super", &mut found);
                (child.to_owned(), siblings(child, found, &names, exported))
            })
            .collect()
    };
    assert_eq!(cycles(&edges(&exported)), vec![vec!["a", "b"]]);
    assert!(cycles(&edges(&BTreeMap::new())).is_empty());
}

/// Child module → the sibling modules its files name.
fn imports(dir: &Path, path: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut children: BTreeMap<String, Vec<(PathBuf, usize)>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("read the folder").flatten() {
        let p = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            let mut files = Vec::new();
            rust_files(&p, 0, &mut files);
            children.insert(name, files);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if !["mod", "lib", "main"].contains(&stem) {
                children.insert(stem.to_owned(), vec![(p, 0)]);
            }
        }
    }
    let names: BTreeSet<String> = children.keys().cloned().collect();
    let exported = ["mod.rs", "lib.rs"]
        .iter()
        .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .map(|src| re_exports(&src))
        .unwrap_or_default();
    children
        .iter()
        .map(|(child, files)| {
            let mut found = BTreeSet::new();
            for (file, depth) in files {
                let src = std::fs::read_to_string(file).expect("read a source file");
                references(&src, path, &mut found);
                references(&src, &vec!["super"; depth + 1].join("::"), &mut found);
            }
            (child.clone(), siblings(child, found, &names, &exported))
        })
        .collect()
}

/// The sibling modules among the names `child`'s files use: a module's own name, or the module
/// that defines a name the folder re-exports.
fn siblings(
    child: &str,
    found: BTreeSet<String>,
    names: &BTreeSet<String>,
    exported: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    found
        .into_iter()
        .filter_map(|n| {
            if names.contains(&n) {
                Some(n)
            } else {
                exported.get(&n).cloned()
            }
        })
        .filter(|n| n != child)
        .collect()
}

/// Name → the child module it comes from, for every `pub use`, `pub(crate) use` and `pub(super)
/// use` of a child (`self::child::…` too) in a folder's `mod.rs` or `lib.rs`; a renamed item
/// (`x as y`) is known by its new name. Re-exports of other folders' items are left out.
fn re_exports(mod_src: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for statement in mod_src.split(';') {
        let statement = statement
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        let statement = statement.trim();
        let Some(rest) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| statement.strip_prefix(p))
        else {
            continue;
        };
        let rest = rest.trim().strip_prefix("self::").unwrap_or(rest.trim());
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
        if ["crate", "super"].contains(&module) || ident(module).as_deref() != Some(module) {
            continue;
        }
        for item in items.split(['{', '}', ',']) {
            let item = item.trim();
            let name = match item.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => item.rsplit("::").next().unwrap_or(""),
            };
            if let Some(name) = ident(name).filter(|n| n == name && n != "self") {
                out.insert(name, module.to_owned());
            }
        }
    }
    out
}

/// The `.rs` files under `dir`, each with how far below the folder's children it sits (`mod.rs`
/// of a child is at the child's depth).
fn rust_files(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, usize)>) {
    for entry in std::fs::read_dir(dir).expect("read a folder").flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, depth + 1, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let is_mod = p.file_name().is_some_and(|n| n == "mod.rs");
            out.push((p, if is_mod { depth } else { depth + 1 }));
        }
    }
}

/// Adds the first name after every `prefix::` in `src` (each name of a `prefix::{…}` group),
/// outside line comments and before the first `#[cfg(test)]`.
fn references(src: &str, prefix: &str, found: &mut BTreeSet<String>) {
    let code = src.split("#[cfg(test)]").next().unwrap_or("");
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let needle = format!("{prefix}::");
    let mut at = 0;
    while let Some(i) = code[at..].find(&needle) {
        let start = at + i;
        at = start + needle.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c == ':' || c == '_' || c.is_alphanumeric()) {
            continue;
        }
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(inner.split(',').filter_map(|item| ident(item.trim())));
        } else if let Some(name) = ident(rest) {
            found.insert(name);
        }
    }
}

fn ident(s: &str) -> Option<String> {
    let name: String = s
        .chars()
        .take_while(|c| *c == '_' || c.is_alphanumeric())
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Every set of two or more modules that reach each other (strongly connected), each sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(n) = todo.pop() {
            for next in graph.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|k| (k, reach(k))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (k, r) in &reaches {
        let circle: Vec<String> = graph
            .keys()
            .filter(|o| r.contains(*o) && reaches[o].contains(*k))
            .cloned()
            .collect();
        if circle.len() > 1 && !out.contains(&circle) {
            out.push(circle);
        }
    }
    out
}
