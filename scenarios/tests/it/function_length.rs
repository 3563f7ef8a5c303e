//! A guard on the crate's shape: no function in `scenarios/src` has a body over
//! [`MAX_BODY_LINES`] lines. A long function is rules written one after another that belong
//! beside the types they check (the profile's `validate` was 285 lines before its rules moved
//! next to `Principal`, each operation, `Hooks` …). Test modules are not measured: a test reads as
//! a script.

use std::path::{Path, PathBuf};

/// The longest body a function may have, in lines between its braces.
const MAX_BODY_LINES: usize = 80;

/// Functions allowed to be longer, as `path:name`, each with why it cannot be shorter. None is.
const ALLOWED: &[&str] = &[];

/// A function found in a source file: where it starts, its name and the lines of its body.
#[derive(Debug, PartialEq)]
struct Function {
    line: usize,
    name: String,
    body_lines: usize,
}

#[test]
fn no_function_in_the_crate_is_over_80_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut too_long = Vec::new();
    for file in source_files(&src) {
        let text = std::fs::read_to_string(&file).expect("a source file reads");
        let shown = file
            .strip_prefix(&src)
            .unwrap_or(&file)
            .display()
            .to_string();
        for f in functions(&text) {
            let named = format!("{shown}:{}", f.name);
            if f.body_lines > MAX_BODY_LINES && !ALLOWED.contains(&named.as_str()) {
                too_long.push(format!(
                    "src/{shown}:{} fn {}: {} lines",
                    f.line, f.name, f.body_lines
                ));
            }
        }
    }
    assert!(
        too_long.is_empty(),
        "functions over {MAX_BODY_LINES} lines; move their rules beside the types they check:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn the_measure_sees_through_strings_comments_and_test_modules() {
    let text = r###"
fn short() {
    let a = "}}}";
    let b = r#"{ "x" }"#;
    let c = '{';
    // }
    /* } { */
    let d: &'static str = "\"}";
}

#[cfg(test)]
mod tests {
    fn not_measured() {
    }
}

fn after<T: Fn(u8) -> u8>(t: T) -> u8 {
    t(1)
}
trait Declared {
    fn no_body(&self);
}
"###;
    let found = functions(text);
    assert_eq!(
        found,
        [
            Function {
                line: 2,
                name: "short".into(),
                body_lines: 6
            },
            Function {
                line: 17,
                name: "after".into(),
                body_lines: 1
            },
        ]
    );
}

/// Every `.rs` file under `dir`, without the files of test-only modules (`#[cfg(test)] mod
/// tests;`), sorted.
fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a source folder reads") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                all.push(path);
            }
        }
    }
    let test_only: Vec<PathBuf> = all.iter().flat_map(|f| test_module_files(f)).collect();
    all.retain(|f| !test_only.contains(f));
    all.sort();
    all
}

/// The files of the test-only modules `file` declares (`#[cfg(test)] mod NAME;`): `NAME.rs` or
/// `NAME/mod.rs` beside a `lib.rs` or `mod.rs`, under the module's own folder otherwise.
fn test_module_files(file: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(file).expect("a source file reads");
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let parent = file.parent().expect("a file is in a folder");
    let dir = if stem == "lib" || stem == "mod" {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    };
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line != "#[cfg(test)]" {
            continue;
        }
        let next = lines.next().unwrap_or_default();
        if let Some(name) = next.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name).join("mod.rs"));
        }
    }
    out
}

/// The functions with a body in `text`, outside `#[cfg(test)]` modules written inline.
fn functions(text: &str) -> Vec<Function> {
    let code = blank_literals_and_comments(text);
    let bytes = code.as_bytes();
    let line_of = |at: usize| 1 + code[..at].matches('\n').count();
    let skipped = test_module_spans(&code);
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("fn ") {
        let start = at + found;
        at = start + 3;
        let word_starts = start == 0 || !is_ident(bytes[start - 1]);
        if !word_starts || skipped.iter().any(|(a, b)| (*a..*b).contains(&start)) {
            continue;
        }
        let name: String = code[at..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = body_start(bytes, at) else {
            continue;
        };
        let close = matching_brace(bytes, open);
        out.push(Function {
            line: line_of(start),
            name,
            body_lines: line_of(close) - line_of(open) - 1,
        });
    }
    out
}

/// Where the body of the function whose signature starts at `from` opens: the first `{` outside
/// parentheses and brackets, or `None` at a `;` (a declaration without a body).
fn body_start(bytes: &[u8], from: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, b) in bytes.iter().enumerate().skip(from) {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return None,
            b'{' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// The `}` that closes the `{` at `open`.
fn matching_brace(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    bytes.len() - 1
}

/// The byte spans of the `#[cfg(test)] mod NAME { … }` blocks in `code`.
fn test_module_spans(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("#[cfg(test)]") {
        let start = at + found;
        at = start + 1;
        let rest = code[start + "#[cfg(test)]".len()..].trim_start();
        if !rest.starts_with("mod ") {
            continue;
        }
        let bytes = code.as_bytes();
        if let Some(open) = body_start(bytes, start + "#[cfg(test)]".len()) {
            out.push((start, matching_brace(bytes, open)));
        }
    }
    out
}

/// `text` with every string, character literal and comment replaced by spaces (newlines kept),
/// so the braces left are the code's.
fn blank_literals_and_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let end = match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => find_from(b, i, b"\n"),
            b'/' if b.get(i + 1) == Some(&b'*') => find_from(b, i + 2, b"*/") + 2,
            b'r' | b'b' if raw_string_at(b, i).is_some() => raw_string_at(b, i).unwrap_or(i + 1),
            b'"' => string_end(b, i + 1),
            b'\'' => char_literal_end(text, i).unwrap_or(i + 1),
            _ => {
                i += 1;
                continue;
            }
        };
        let end = end.min(b.len());
        for byte in &mut out[i..end] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        i = end.max(i + 1);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where `needle` next starts at or after `from` (the text's end when it does not).
fn find_from(b: &[u8], from: usize, needle: &[u8]) -> usize {
    b[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map_or(b.len(), |p| from + p)
}

/// The end of the string whose text starts at `from` (after its opening quote).
fn string_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`, if one does.
fn raw_string_at(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && is_ident(b[i - 1]) {
        return None;
    }
    let mut j = i + usize::from(b[i] == b'b');
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|c| **c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    Some(find_from(b, j + 1, &close) + close.len())
}

/// The end of a character literal starting at `i` (`'x'`, `'\n'`, `'\u{7f}'`), or `None` for a
/// lifetime (`'a`, `'static`).
fn char_literal_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i + 1) == Some(&b'\\') {
        return Some(find_from(b, i + 2, b"'") + 1);
    }
    let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
    (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
}

/// Whether `c` can be part of an identifier.
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}
