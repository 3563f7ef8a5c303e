//! The two migration folders are one schema in two spellings: the same files, the same lines, but
//! for the one type the databases name differently (PostgreSQL's `BYTEA` is SQLite's `BLOB`). A change
//! made to one folder and not the other fails here instead of drifting silently.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The PostgreSQL spelling and the SQLite spelling of every type the schema names differently.
const SPELLINGS: &[(&str, &str)] = &[("BYTEA", "BLOB")];

fn folder(database: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(database)
}

fn file_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// The lines that differ, numbered, as `-` (PostgreSQL, in SQLite's spelling) and `+` (SQLite).
fn line_diff(postgres: &str, sqlite: &str) -> String {
    let (p, s): (Vec<&str>, Vec<&str>) = (postgres.lines().collect(), sqlite.lines().collect());
    let mut out = String::new();
    for n in 0..p.len().max(s.len()) {
        let (a, b) = (p.get(n), s.get(n));
        if a != b {
            if let Some(a) = a {
                out.push_str(&format!("{:>4} - {a}\n", n + 1));
            }
            if let Some(b) = b {
                out.push_str(&format!("{:>4} + {b}\n", n + 1));
            }
        }
    }
    out
}

#[test]
fn postgres_and_sqlite_migrations_differ_only_in_type_spelling() {
    let (postgres, sqlite) = (folder("postgres"), folder("sqlite"));
    let names = file_names(&postgres);
    assert_eq!(
        names,
        file_names(&sqlite),
        "the two migration folders must hold the same files"
    );
    assert!(!names.is_empty(), "no migrations in {}", postgres.display());
    let mut drift = String::new();
    for name in &names {
        let read = |dir: &Path| {
            std::fs::read_to_string(dir.join(name))
                .unwrap_or_else(|e| panic!("read {}: {e}", dir.join(name).display()))
        };
        let respelled = SPELLINGS
            .iter()
            .fold(read(&postgres), |text, (pg, lite)| text.replace(pg, lite));
        let diff = line_diff(&respelled, &read(&sqlite));
        if !diff.is_empty() {
            drift.push_str(&format!("{name} (- postgres, + sqlite):\n{diff}"));
        }
    }
    assert!(
        drift.is_empty(),
        "migrations/postgres and migrations/sqlite differ beyond {SPELLINGS:?}:\n{drift}"
    );
}
