//! Generated input for the loaders' property tests (test-only): edits of valid files — bytes deleted
//! and YAML's structure characters or special values inserted — and structured-but-wrong changes — a
//! line deleted, a value's type swapped, control characters, huge numbers and durations, deep
//! nesting, alias bombs, a second document — plus the property every loader must keep: it returns in
//! bounded time and every rejection names a line and a column.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::load::LoadError;

/// What an edit puts in: YAML's structure characters, and values the schemas treat specially.
pub(crate) const PIECES: &[&str] = &[
    ":",
    "-",
    " ",
    "  ",
    "\n",
    "{",
    "}",
    "[",
    "]",
    ",",
    "#",
    "'",
    "\"",
    "&a",
    "*a",
    "!!str",
    "|",
    ">",
    "\t",
    "\\n",
    "0",
    "101",
    "-1",
    "1.5",
    "999999999999999999999",
    "~",
    "null",
    "refuse",
    "name",
    "nth: 0",
    "seed",
    "\u{0}",
    "é",
    "\u{1b}",
    "<<: *a",
    "${",
    "${X}",
    "${UNSET}",
    "${X:-",
    "{{",
    "}}",
    "{{marker}}",
    "{{nope}}",
    "$.",
    "$[?@.a]",
    "2xx",
    "10years",
    "999999999h",
    "0ms",
];

/// One edit: at a position (a fraction of the text), delete some bytes and insert a piece.
pub(crate) fn edit() -> impl Strategy<Value = (f64, usize, &'static str)> {
    (0.0..1.0f64, 0..4usize, prop::sample::select(PIECES))
}

/// `seed` with `edits` applied in order, each at a character boundary.
pub(crate) fn apply(seed: &str, edits: &[(f64, usize, &str)]) -> String {
    let mut text = seed.to_owned();
    for (at, delete, piece) in edits {
        let i = boundary(&text, *at, false);
        let mut end = (i + delete).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        text.replace_range(i..end, piece);
    }
    text
}

/// The character boundary nearest the fraction `at` of `text`, moving back (or, with
/// `forward`, ahead).
fn boundary(text: &str, at: f64, forward: bool) -> usize {
    let mut i = ((at * text.len() as f64) as usize).min(text.len());
    while !text.is_char_boundary(i) {
        if forward {
            i += 1;
        } else {
            i -= 1;
        }
    }
    i
}

/// A change that keeps a file YAML-shaped but wrong in one way.
#[derive(Debug, Clone)]
pub(crate) enum Wrong {
    /// Delete the line at this fraction of the file.
    DeleteLine(f64),
    /// Replace the value after the `: ` of the line at this fraction with another type's.
    SwapValue(f64, &'static str),
    /// Insert a control character.
    Control(f64, char),
    /// Prepend a billion-laughs alias bomb of this depth (each level ten aliases of the last).
    AliasBomb(u32),
    /// Nest flow sequences this deep in place of a value.
    Nest(f64, usize),
    /// Append a second document.
    SecondDocument,
    /// Repeat the file's last top-level line (a duplicate key).
    DuplicateKey,
}

/// Values of other types than the ones the schemas expect, and values at and past every bound.
const SWAPS: &[&str] = &[
    "[1, 2]",
    "{a: 1}",
    "~",
    "true",
    "\"text\"",
    "-5",
    "0",
    "18446744073709551616",
    "1e400",
    ".nan",
    "999999999999d",
    "31d",
    "1ns",
    "!!binary aGVsbG8=",
    "*undefined",
    "''",
];

pub(crate) fn wrong() -> impl Strategy<Value = Wrong> {
    let at = 0.0..1.0f64;
    prop_oneof![
        at.clone().prop_map(Wrong::DeleteLine),
        (at.clone(), prop::sample::select(SWAPS)).prop_map(|(a, v)| Wrong::SwapValue(a, v)),
        (
            at.clone(),
            prop::sample::select(
                &['\u{0}', '\u{7}', '\u{1b}', '\r', '\u{7f}', '\u{feff}', '\u{85}'][..]
            )
        )
            .prop_map(|(a, c)| Wrong::Control(a, c)),
        (1u32..9).prop_map(Wrong::AliasBomb),
        (at, 1usize..20_000).prop_map(|(a, d)| Wrong::Nest(a, d)),
        Just(Wrong::SecondDocument),
        Just(Wrong::DuplicateKey),
    ]
}

/// `seed` with one [`Wrong`] change.
pub(crate) fn make_wrong(seed: &str, change: &Wrong) -> String {
    let lines: Vec<&str> = seed.lines().collect();
    let line_at = |at: f64| ((at * lines.len() as f64) as usize).min(lines.len().saturating_sub(1));
    match change {
        Wrong::DeleteLine(at) => {
            let n = line_at(*at);
            let mut out: Vec<&str> = lines.clone();
            if !out.is_empty() {
                out.remove(n);
            }
            out.join("\n") + "\n"
        }
        Wrong::SwapValue(at, value) => {
            let n = line_at(*at);
            let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            if let Some(line) = out.get_mut(n) {
                if let Some(colon) = line.find(": ") {
                    line.replace_range(colon + 2.., value);
                }
            }
            out.join("\n") + "\n"
        }
        Wrong::Control(at, c) => {
            let mut text = seed.to_owned();
            text.insert(boundary(seed, *at, true), *c);
            text
        }
        Wrong::AliasBomb(depth) => {
            let mut bomb =
                String::from("x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
            for i in 1..=*depth {
                let p = i - 1;
                bomb.push_str(&format!(
                    "x{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
                ));
            }
            bomb + seed
        }
        Wrong::Nest(at, depth) => {
            let mut text = seed.to_owned();
            let nest = "[".repeat(*depth) + &"]".repeat(*depth);
            text.insert_str(boundary(seed, *at, true), &nest);
            text
        }
        Wrong::SecondDocument => format!("{seed}---\n{seed}"),
        Wrong::DuplicateKey => {
            let last = lines
                .iter()
                .rev()
                .find(|l| !l.starts_with([' ', '#', '-']))
                .copied()
                .unwrap_or("version: 1");
            format!("{seed}{last}\n")
        }
    }
}

/// Generated text for a loader: a few edits of a seed, one wrong change of it, or any bytes.
pub(crate) fn input(seeds: Vec<&'static str>) -> impl Strategy<Value = String> {
    let seed = prop::sample::select(seeds);
    prop_oneof![
        4 => (seed.clone(), prop::collection::vec(edit(), 1..5)).prop_map(|(s, e)| apply(s, &e)),
        4 => (seed, wrong()).prop_map(|(s, w)| make_wrong(s, &w)),
        1 => prop::collection::vec(any::<u8>(), 0..512).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// How long one load may take on a loaded CI machine (a parse of a few KiB takes microseconds).
pub(crate) const BOUND: Duration = Duration::from_secs(2);

/// Runs `load` on `text` and checks the loaders' promise: it returns within [`BOUND`], and an
/// error names a line and a column of `text` (1-based, within its lines and their length) and
/// says something.
pub(crate) fn assert_located<T>(
    text: &str,
    load: impl FnOnce(&str) -> Result<T, LoadError>,
) -> Result<Option<T>, TestCaseError> {
    let started = Instant::now();
    let result = load(text);
    let took = started.elapsed();
    prop_assert!(took < BOUND, "{:?} took {:?}", text, took);
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) => {
            for e in e.each() {
                prop_assert!(
                    e.line >= 1 && e.column >= 1,
                    "{:?} is not located: {}",
                    text,
                    e
                );
                // Lines as YAML counts them (a lone CR breaks a line too, which `str::lines`
                // does not count); the parser may point one line past the end (an unexpected
                // end of input).
                let lines = text
                    .replace("\r\n", "\n")
                    .replace('\r', "\n")
                    .lines()
                    .count() as u64
                    + 1;
                prop_assert!(
                    e.line <= lines,
                    "{:?}: line {} of {}: {}",
                    text,
                    e.line,
                    lines,
                    e
                );
                prop_assert!(!e.message.is_empty(), "{:?}", text);
            }
            Ok(None)
        }
    }
}
