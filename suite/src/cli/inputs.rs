//! Reading the user's files: expanding directories into the YAML files they hold, and telling
//! a target profile from a scenario or a proxy file by its top-level keys.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// What a YAML file describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A target profile (`base_urls:`, `operations:`).
    Profile,
    /// A check's scenario (`id:`, `steps:` or `procedure:`).
    Scenario,
    /// A standalone proxy file (`upstream:`, `rules:`).
    ProxyFile,
    /// A client profile (`operation:`, `success:`, `gives_up:`, `retry_after:`, `routes:`).
    ClientProfile,
}

impl FileKind {
    /// What to call it in messages.
    pub fn noun(self) -> &'static str {
        match self {
            FileKind::Profile => "target profile",
            FileKind::Scenario => "scenario",
            FileKind::ProxyFile => "proxy file",
            FileKind::ClientProfile => "client profile",
        }
    }
}

/// The scenario ids taken so far: every built-in check's, then each file's as it is read. Ids are
/// unique among them, as `run` requires; `validate` and `list` refuse a file that takes one again.
pub struct ScenarioIds(std::collections::HashMap<String, String>);

impl ScenarioIds {
    /// The built-in checks' ids.
    pub fn builtin() -> Self {
        let ids = idemspec::runner::catalogue_ids()
            .into_iter()
            .map(|id| (id, "a built-in check".to_owned()))
            .collect();
        Self(ids)
    }

    /// Takes `id` for `file`, whose id is at `at` (`file:line:column`).
    ///
    /// # Errors
    /// The id is taken, by a built-in check or an earlier file: the error names it.
    pub fn take(&mut self, id: &str, at: &str, file: &Path) -> anyhow::Result<()> {
        if let Some(owner) = self.0.get(id) {
            anyhow::bail!("{at}: scenario id `{id}` is already used by {owner}");
        }
        self.0
            .insert(id.to_owned(), format!("`{}`", file.display()));
        Ok(())
    }
}

/// Classifies `text` by its top-level keys; `None` when it has none of the telling ones.
///
/// Only keys at column 1 count, so this works even when the file has a syntax error further on,
/// and the loader then reports that error with its location.
pub fn classify(text: &str) -> Option<FileKind> {
    let keys: Vec<&str> = text
        .lines()
        .filter(|line| !line.starts_with([' ', '\t', '#', '-']))
        .filter_map(|line| {
            line.split_once(':')
                .map(|(key, _)| key.trim().trim_matches(['"', '\'']))
        })
        .collect();
    let has = |key: &str| keys.contains(&key);
    // A client profile's keys are its own (its `operations` is a count, not a mapping).
    let client = [
        "operation",
        "success",
        "gives_up",
        "retry_after",
        "routes",
        "answers",
        "persists_keys",
        "retry_after_header",
        "retry_after_cap",
        "key_made_by",
        "in_flight_state",
    ];
    // `version` and `name` alone (and the fields both kinds share) make the default client
    // profile; a target profile cannot be without its `base_urls`.
    let shared_only = keys
        .iter()
        .all(|k| ["version", "name", "contract", "timeout", "tls"].contains(k));
    if (client.iter().any(|k| has(k)) || (shared_only && has("version")))
        && !has("base_urls")
        && !has("principals")
    {
        Some(FileKind::ClientProfile)
    } else if has("base_urls") || has("operations") || has("principals") {
        Some(FileKind::Profile)
    } else if has("steps") || has("procedure") || has("assert") {
        Some(FileKind::Scenario)
    } else if has("upstream") || has("rules") {
        Some(FileKind::ProxyFile)
    } else {
        None
    }
}

/// Expands each path: a file stays itself, a directory becomes every `*.yaml`/`*.yml` under it
/// (recursively, sorted, so runs are reproducible).
///
/// # Errors
/// A path that does not exist or a directory that cannot be read.
pub fn expand(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("failed to read `{}`", path.display()))?;
        if meta.is_dir() {
            let before = out.len();
            walk(path, &mut out)?;
            out[before..].sort();
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("failed to read directory `{}`", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("failed to read directory `{}`", dir.display()))?
            .path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads a file as UTF-8 text.
///
/// # Errors
/// When it cannot be read, naming the file; when it is not UTF-8, naming the file, the line and
/// column of the first invalid byte, and that byte.
pub fn read(path: &Path) -> anyhow::Result<String> {
    let bytes =
        std::fs::read(path).with_context(|| format!("failed to read `{}`", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}:{}",
            path.display(),
            not_utf8(e.as_bytes(), e.utf8_error().valid_up_to())
        )
    })
}

/// Where the first invalid UTF-8 byte of `bytes` is (at `at`), as `line:column: …` (1-based,
/// columns counted in characters as every other located error counts them).
fn not_utf8(bytes: &[u8], at: usize) -> String {
    let valid = String::from_utf8_lossy(&bytes[..at]);
    let line = valid.matches('\n').count() + 1;
    let column = valid.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(
        "{line}:{column}: the file is not UTF-8 text: byte 0x{:02X} at offset {at} is not valid \
         UTF-8; save the file as UTF-8",
        bytes[at]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_utf8_is_located_at_its_first_invalid_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.yaml");
        std::fs::write(&path, b"version: 1\nname: caf\xe9-api\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "p.yaml:2:10: the file is not UTF-8 text: byte 0xE9 at offset 20 is not valid \
                 UTF-8; save the file as UTF-8"
            ),
            "{err}"
        );
    }

    #[test]
    fn classifies_by_top_level_keys_only() {
        assert_eq!(
            classify("version: 1\nname: sdk\noperations: 2\nsuccess: {status: 201}\n"),
            Some(FileKind::ClientProfile)
        );
        assert_eq!(
            classify("version: 1\nname: x\nbase_urls: []\n"),
            Some(FileKind::Profile)
        );
        assert_eq!(
            classify("# c\nid: a\nsteps:\n  - base_urls: x\n"),
            Some(FileKind::Scenario)
        );
        assert_eq!(
            classify("version: 1\nupstream: 127.0.0.1:1\nrules: []\n"),
            Some(FileKind::ProxyFile)
        );
        assert_eq!(classify("hello: world\n"), None);
    }
}
