//! The house kept tidy, read from the sources of the four crates: every `src` file opens with a
//! `//!` header saying what it is for; every module path a doc comment names in backticks
//! (`` `runner::steps` ``, `` `context::twin_step` ``) leads to a module that exists and an item
//! defined there; and no crate defines two types of one name (one meaning per word).
//!
//! A path is read as a reader would: its leading lowercase segments are modules, looked up from
//! `crate`, `self`, `super`, a workspace crate's name, or else the file's crate root, its own
//! module or its parent; the first segment after them is an item (fn, struct, enum, trait, const,
//! static, type, mod, macro, variant, field, or a name the module re-exports) of that module's
//! files, and any further segment (a method, a variant) is defined somewhere in the crate. Paths
//! into external crates (the workspace's dependencies, `std`, primitives) are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate's `src` folder and the name other crates use for it.
const CRATES: &[(&str, &str)] = &[
    ("scenarios/src", "idemspec_scenarios"),
    ("proxy/src", "idemspec_proxy"),
    ("suite/src", "idemspec"),
    ("reference-server/src", "leasebroker"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_source_file_opens_with_a_header() {
    let root = workspace();
    let missing: Vec<String> = CRATES
        .iter()
        .flat_map(|(src, _)| rust_files(&root.join(src)))
        .filter(|f| !opens_with_header(&read(f)))
        .map(|f| shown(&root, &f))
        .collect();
    assert!(
        missing.is_empty(),
        "files that do not open with a `//!` header saying what they are for:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_path_a_doc_comment_names_resolves() {
    let root = workspace();
    let external = external_crates(&root);
    let mut drifts = Vec::new();
    for (src, _) in CRATES {
        let src = root.join(src);
        for file in rust_files(&src) {
            for (line, path) in doc_paths(&read(&file)) {
                if let Err(why) = resolve(&root, &src, &file, &path, &external) {
                    drifts.push(format!("{}:{line}: `{path}`: {why}", shown(&root, &file)));
                }
            }
        }
    }
    assert!(
        drifts.is_empty(),
        "doc comments that name what is not there:\n{}",
        drifts.join("\n")
    );
}

#[test]
fn no_crate_defines_two_types_of_one_name() {
    let root = workspace();
    let mut twice = Vec::new();
    for (src, _) in CRATES {
        let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for file in rust_files(&root.join(src)) {
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            for (line, name) in type_definitions(&read(&file)) {
                seen.entry(name)
                    .or_default()
                    .push(format!("{}:{line}", shown(&root, &file)));
            }
        }
        for (name, places) in seen.into_iter().filter(|(_, p)| p.len() > 1) {
            twice.push(format!("{src}: `{name}` at {}", places.join(", ")));
        }
    }
    assert!(
        twice.is_empty(),
        "types of one name defined twice in one crate (give each one name that says what it is):\n{}",
        twice.join("\n")
    );
}

#[test]
fn the_readers_see_what_they_guard() {
    // A header is the first line, not a later one.
    assert!(opens_with_header("//! What it is.\n\nuse x;\n"));
    assert!(!opens_with_header("use x;\n//! Too late.\n"));
    // Paths are read from doc comments only, whole spans, outside code blocks.
    let src = "/// See `runner::run` and `Verdict::Pass`, `a::b()`, `x::y!`.\n// `not::doc`\n//! `self::z` or `tokio::spawn(f)`\n/// ```\n/// `in::code`\n/// ```\nfn f() {}\n";
    let found: Vec<(usize, String)> = doc_paths(src);
    let expected = [(1, "runner::run"), (1, "a::b"), (1, "x::y"), (3, "self::z")];
    assert_eq!(found, expected.map(|(l, p)| (l, p.to_owned())));
    // Item-level types only: not an associated type, nor one inside a function.
    let src = "pub struct A;\npub(crate) enum B {\n    C,\n}\ntype D = u8;\nimpl X for A {\n    type E = u8;\n}\nfn f() {\n    struct F;\n}\npub trait G {}\n";
    let names: Vec<String> = type_definitions(src).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["A", "B", "D", "G"]);
    // Resolution against this workspace: a name that moved no longer resolves where it was, and
    // a re-export resolves where the folder names it.
    let root = workspace();
    let external = external_crates(&root);
    let src = root.join("suite/src");
    let check = src.join("runner/check.rs");
    let at = |path: &str| resolve(&root, &src, &check, path, &external);
    assert!(at("steps::no_such_item").is_err());
    assert!(at("no_such_module::x").is_err());
    assert!(
        at("engine::Check").is_ok(),
        "re-exported from engine/drive.rs"
    );
    assert!(at("runner::run").is_ok());
    assert!(at("idemspec_scenarios::scenario::Isolation").is_ok());
    assert!(
        at("tokio::anything").is_ok(),
        "external crates are not read"
    );
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read a folder").flatten() {
            let p = entry.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).expect("read a source file")
}

fn shown(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

fn opens_with_header(src: &str) -> bool {
    src.starts_with("//!")
}

/// Each backticked module path (two or more `::` segments, the first lowercase; a trailing `()`
/// or `!` allowed) in a `///` or `//!` line outside a fenced code block, with its 1-based line.
fn doc_paths(src: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in src.lines().enumerate() {
        let t = line.trim_start();
        let Some(doc) = t.strip_prefix("///").or_else(|| t.strip_prefix("//!")) else {
            continue;
        };
        if doc.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (n, span) in doc.split('`').enumerate() {
            if n % 2 == 0 {
                continue;
            }
            let path = span
                .strip_suffix("()")
                .or_else(|| span.strip_suffix('!'))
                .unwrap_or(span);
            let segments: Vec<&str> = path.split("::").collect();
            let lower = |s: &str| s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
            if segments.len() >= 2 && segments.iter().all(|s| is_ident(s)) && lower(segments[0]) {
                out.push((i + 1, path.to_owned()));
            }
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// A module: the files that hold its items and the folder that holds its children.
#[derive(Debug, Clone)]
struct Module {
    files: Vec<PathBuf>,
    dir: PathBuf,
}

impl Module {
    fn root(src: &Path) -> Self {
        Self {
            files: ["lib.rs", "main.rs"]
                .iter()
                .map(|f| src.join(f))
                .filter(|f| f.exists())
                .collect(),
            dir: src.to_path_buf(),
        }
    }

    /// The module `file` is (its own), and its parent.
    fn of(src: &Path, file: &Path) -> (Self, Option<Self>) {
        let folder = file.parent().expect("a file has a folder").to_path_buf();
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let at_root = folder == src;
        if ["mod", "lib", "main"].contains(&stem) {
            let own = Self {
                files: vec![file.to_path_buf()],
                dir: folder.clone(),
            };
            let parent = folder.parent().filter(|_| !at_root);
            return (own, parent.and_then(|p| Self::folder(src, p)));
        }
        let own = Self {
            files: vec![file.to_path_buf()],
            dir: folder.join(stem),
        };
        (own, Self::folder(src, &folder))
    }

    /// The module whose children live in `folder` (`folder/mod.rs`, `folder.rs`, or the root).
    fn folder(src: &Path, folder: &Path) -> Option<Self> {
        if folder == src {
            return Some(Self::root(src));
        }
        let files: Vec<PathBuf> = [folder.join("mod.rs"), folder.with_extension("rs")]
            .into_iter()
            .filter(|f| f.exists())
            .collect();
        (!files.is_empty()).then(|| Self {
            files,
            dir: folder.to_path_buf(),
        })
    }

    fn parent(&self, src: &Path) -> Option<Self> {
        if self.dir == src {
            return None;
        }
        Self::folder(src, self.dir.parent()?)
    }

    fn child(&self, name: &str) -> Option<Self> {
        let dir = self.dir.join(name);
        let files: Vec<PathBuf> = [self.dir.join(format!("{name}.rs")), dir.join("mod.rs")]
            .into_iter()
            .filter(|f| f.exists())
            .collect();
        let inline = self.files.iter().any(|f| {
            read(f).lines().any(|l| {
                let l = l.trim_start();
                let l = l
                    .strip_prefix("pub(crate) ")
                    .or(l.strip_prefix("pub "))
                    .unwrap_or(l);
                l.starts_with(&format!("mod {name} {{"))
            })
        });
        if files.is_empty() && !inline {
            return None;
        }
        let files = if files.is_empty() {
            self.files.clone()
        } else {
            files
        };
        Some(Self { files, dir })
    }

    fn defines(&self, name: &str) -> bool {
        self.files.iter().any(|f| defines(&read(f), name))
    }
}

/// Whether `src` defines `name`: as an item, a variant or field, or a name it re-exports.
fn defines(src: &str, name: &str) -> bool {
    let word_at = |text: &str, at: usize| {
        text[at + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c == '_' || c.is_alphanumeric()))
    };
    for kw in [
        "fn",
        "struct",
        "enum",
        "trait",
        "const",
        "static",
        "type",
        "mod",
        "union",
        "macro_rules!",
    ] {
        let needle = format!("{kw} {name}");
        let mut at = 0;
        while let Some(i) = src[at..].find(&needle) {
            let start = at + i;
            at = start + needle.len();
            let before = src[..start].chars().next_back();
            if before.is_none_or(|c| !(c == '_' || c.is_alphanumeric()))
                && word_at(src, start + kw.len() + 1)
            {
                return true;
            }
        }
    }
    let variant_or_field = src.lines().any(|l| {
        let l = l.trim_start();
        let l = l.strip_prefix("pub ").unwrap_or(l);
        l.starts_with(name)
            && l[name.len()..]
                .chars()
                .next()
                .is_none_or(|c| matches!(c, '(' | '{' | ',' | ':' | ' '))
    });
    variant_or_field || re_exported(src, name)
}

/// Whether a `pub use` (any visibility) statement of `src` names `name` (`x as name` too).
fn re_exported(src: &str, name: &str) -> bool {
    src.split(';').any(|statement| {
        let statement: String = statement
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        let statement = statement.trim();
        statement.starts_with("pub")
            && statement.contains(" use ")
            && statement
                .split(|c: char| !(c == '_' || c.is_alphanumeric()))
                .any(|w| w == name)
    })
}

/// The names of the workspace's dependencies (as code names them), the standard library's
/// crates and the primitive types: paths starting with one are not read.
fn external_crates(root: &Path) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = [
        "std", "core", "alloc", "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize",
        "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64",
    ]
    .map(str::to_owned)
    .into();
    let manifests = ["Cargo.toml"].into_iter().map(|m| root.join(m)).chain(
        CRATES
            .iter()
            .map(|(src, _)| root.join(src).join("../Cargo.toml")),
    );
    for manifest in manifests {
        let mut in_deps = false;
        for line in read(&manifest).lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_deps = line.contains("dependencies");
                continue;
            }
            let name: String = line
                .chars()
                .take_while(|c| *c == '_' || *c == '-' || c.is_ascii_alphanumeric())
                .collect();
            if in_deps && !name.is_empty() {
                out.insert(name.replace('-', "_"));
            }
        }
    }
    for (_, name) in CRATES {
        out.remove(*name);
    }
    out
}

/// Follows `path`, named in `file` of the crate at `src`, to its module and item.
fn resolve(
    root: &Path,
    src: &Path,
    file: &Path,
    path: &str,
    external: &BTreeSet<String>,
) -> Result<(), String> {
    let segments: Vec<&str> = path.split("::").collect();
    // A name the file imports (`use crate::runner::observe::{self, …}`) stands for its path.
    let imported = imports(&read(file));
    let full: Vec<&str> = match imported.get(segments[0]) {
        Some(path) => path
            .iter()
            .map(String::as_str)
            .chain(segments[1..].iter().copied())
            .collect(),
        None => segments,
    };
    let found = follow(root, src, file, &full, external);
    // A name both a module of the crate and an external crate (`http`) is either.
    if found.is_err() && external.contains(full[0]) {
        return Ok(());
    }
    found
}

/// The names a file's `use` statements bring in, each with the path it stands for (one level of
/// `{…}` groups; `self` in a group names the group's module; `x as y` is known as `y`).
fn imports(src: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let code = src.split("#[cfg(test)]").next().unwrap_or("");
    for statement in code.split(';') {
        let statement: String = statement
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        let statement = item_after_visibility(statement.trim());
        let Some(path) = statement.strip_prefix("use ") else {
            continue;
        };
        let path: String = path.split_whitespace().collect::<Vec<_>>().join(" ");
        let (prefix, items) = match path.split_once("::{") {
            Some((prefix, group)) => (prefix.to_owned(), group.trim_end_matches('}').to_owned()),
            None => match path.rsplit_once("::") {
                Some((prefix, item)) => (prefix.to_owned(), item.to_owned()),
                None => continue,
            },
        };
        let prefix: Vec<String> = prefix.split("::").map(str::to_owned).collect();
        for item in items.split(',').map(str::trim).filter(|i| !i.contains('{')) {
            let (item, alias) = match item.split_once(" as ") {
                Some((item, alias)) => (item.trim(), alias.trim()),
                None => (item, item.rsplit("::").next().unwrap_or(item)),
            };
            let mut full = prefix.clone();
            if item != "self" {
                full.extend(item.split("::").map(str::to_owned));
            }
            let name = if item == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                alias.to_owned()
            };
            if is_ident(&name) && full.iter().all(|s| is_ident(s)) {
                out.insert(name, full);
            }
        }
    }
    out
}

/// Follows `segments` from the module they start at.
fn follow(
    root: &Path,
    src: &Path,
    file: &Path,
    segments: &[&str],
    external: &BTreeSet<String>,
) -> Result<(), String> {
    let (own, parent) = Module::of(src, file);
    let crate_root = Module::root(src);
    let (mut module, mut rest) = match segments[0] {
        "crate" => (crate_root, &segments[1..]),
        "self" => (own, &segments[1..]),
        "super" => {
            let mut m = parent.ok_or("no parent module")?;
            let mut rest = &segments[1..];
            while rest.first() == Some(&"super") {
                m = m.parent(src).ok_or("no parent module")?;
                rest = &rest[1..];
            }
            (m, rest)
        }
        first => {
            if let Some((other, _)) = CRATES.iter().find(|(_, name)| *name == first) {
                (Module::root(&root.join(other)), &segments[1..])
            } else if let Some(m) = [Some(crate_root), Some(own), parent]
                .into_iter()
                .flatten()
                .find_map(|m| m.child(first))
            {
                (m, &segments[1..])
            } else if external.contains(first) {
                return Ok(());
            } else {
                return Err(format!(
                    "no module `{first}` here, in its parent or at the crate root"
                ));
            }
        }
    };
    while let Some((first, after)) = rest.split_first() {
        if after.is_empty() && module.defines(first) {
            return Ok(());
        }
        match module.child(first) {
            Some(child) => {
                module = child;
                rest = after;
            }
            None if module.defines(first) => {
                let crate_files = rust_files(src);
                return match after
                    .iter()
                    .find(|s| !crate_files.iter().any(|f| defines(&read(f), s)))
                {
                    Some(missing) => Err(format!("`{missing}` is defined nowhere in the crate")),
                    None => Ok(()),
                };
            }
            None => {
                let files: Vec<String> = module.files.iter().map(|f| shown(root, f)).collect();
                return Err(format!("`{first}` is not defined in {}", files.join(", ")));
            }
        }
    }
    Ok(())
}

/// The item-level type definitions (struct, enum, union, trait, type alias) of a rustfmt-ed file
/// outside test modules, with their 1-based lines: those at the start of a line, or one level in
/// within an inline `mod name {`. Associated types and types inside functions are indented
/// deeper, so they are not read.
fn type_definitions(src: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut inline_mod = false;
    let mut test_next = false;
    let mut in_test = false;
    for (i, line) in src.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            test_next = true;
            continue;
        }
        if !line.starts_with(' ') && !line.is_empty() {
            if line.starts_with('}') {
                inline_mod = false;
                in_test = false;
                continue;
            }
            let opens_mod = line.ends_with('{') && item_after_visibility(line).starts_with("mod ");
            if test_next && !line.starts_with("#[") {
                in_test = opens_mod;
                test_next = false;
                if opens_mod || line.ends_with(';') {
                    continue;
                }
            }
            inline_mod = opens_mod && !in_test;
        }
        if in_test {
            continue;
        }
        let item = match line.strip_prefix("    ") {
            Some(inner) if inline_mod && !inner.starts_with(' ') => inner,
            _ if !line.starts_with(' ') => line,
            _ => continue,
        };
        let item = item_after_visibility(item);
        for kw in ["struct ", "enum ", "union ", "trait ", "type "] {
            if let Some(rest) = item.strip_prefix(kw) {
                let name: String = rest
                    .chars()
                    .take_while(|c| *c == '_' || c.is_alphanumeric())
                    .collect();
                if !name.is_empty() {
                    out.push((i + 1, name));
                }
            }
        }
    }
    out
}

/// `line` without its visibility (`pub `, `pub(crate) `, `pub(super) `, `pub(in …) `).
fn item_after_visibility(line: &str) -> &str {
    let line = line.trim_start();
    if let Some(rest) = line.strip_prefix("pub(") {
        return rest.split_once(") ").map_or(line, |(_, r)| r);
    }
    line.strip_prefix("pub ").unwrap_or(line)
}
