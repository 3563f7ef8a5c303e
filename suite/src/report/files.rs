//! Writing the report files the user asked for (`--report-junit`, `--report-json`,
//! `--report-markdown`, `--report-html`).

use std::path::{Path, PathBuf};

use super::{html, json, junit, markdown};
use crate::model::{ExitPolicy, RunReport};

/// A report file could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file (or its directory) could not be written.
    #[error("write report `{}`", path.display())]
    Write {
        /// The path as given on the command line.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Two report flags name the same file: the later report would silently replace the earlier.
    #[error("`{first}` and `{second}` both write `{}`; give each report its own file", path.display())]
    SamePath {
        /// The path as given to the second flag.
        path: PathBuf,
        /// The first flag, e.g. `--report-junit`.
        first: &'static str,
        /// The second flag.
        second: &'static str,
    },
    /// A report file could not be written where the flag says (checked before the run).
    #[error("`{flag}` cannot write `{}`: {reason}", path.display())]
    Unwritable {
        /// The path as given.
        path: PathBuf,
        /// The flag, e.g. `--report-json`.
        flag: &'static str,
        /// Why not, in words.
        reason: String,
    },
    /// The JUnit XML could not be serialised.
    #[error("render the JUnit report")]
    Junit(#[source] quick_junit::SerializeError),
    /// The JSON could not be serialised.
    #[error("render the JSON report")]
    Json(#[source] serde_json::Error),
}

/// Where to write each report; `None` means not requested.
#[derive(Debug, Clone, Default)]
pub struct ReportFiles {
    /// `--report-junit FILE`.
    pub junit: Option<PathBuf>,
    /// `--report-json FILE`.
    pub json: Option<PathBuf>,
    /// `--report-markdown FILE`.
    pub markdown: Option<PathBuf>,
    /// `--report-html FILE`.
    pub html: Option<PathBuf>,
}

impl ReportFiles {
    /// The requested files with their flags, in the order they are written.
    fn requested(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--report-junit", &self.junit),
            ("--report-json", &self.json),
            ("--report-markdown", &self.markdown),
            ("--report-html", &self.html),
        ]
        .into_iter()
        .filter_map(|(flag, path)| path.as_deref().map(|p| (flag, p)))
        .collect()
    }

    /// Checks, before anything runs, that every report can be written — its directory exists and
    /// takes a new file, the path is not a directory — and that no two reports go to the same file
    /// (`a.json` and `./a.json` are the same file). A long run must not end in "cannot write".
    ///
    /// # Errors
    /// [`ReportError::Unwritable`] naming the flag and why, [`ReportError::SamePath`] naming both
    /// flags.
    pub fn check(&self) -> Result<(), ReportError> {
        let requested = self.requested();
        for (i, (first, a)) in requested.iter().enumerate() {
            for (second, b) in &requested[i + 1..] {
                if same_file(a, b) {
                    return Err(ReportError::SamePath {
                        path: b.to_path_buf(),
                        first,
                        second,
                    });
                }
            }
        }
        for (flag, path) in &requested {
            writable(path).map_err(|reason| ReportError::Unwritable {
                path: path.to_path_buf(),
                flag,
                reason,
            })?;
        }
        Ok(())
    }

    /// Renders and writes every requested report; `policy` is what the run may end with (the
    /// Markdown heading states the result). Returns the paths written, in order.
    ///
    /// # Errors
    /// The first report that cannot be rendered or written; earlier ones stay written.
    pub fn write(
        &self,
        report: &RunReport,
        policy: ExitPolicy,
    ) -> Result<Vec<PathBuf>, ReportError> {
        let mut written = Vec::new();
        if let Some(path) = &self.junit {
            write_file(
                path,
                &junit::render(report, policy).map_err(ReportError::Junit)?,
            )?;
            written.push(path.clone());
        }
        if let Some(path) = &self.json {
            write_file(path, &json::render(report).map_err(ReportError::Json)?)?;
            written.push(path.clone());
        }
        if let Some(path) = &self.markdown {
            write_file(path, &markdown::render(report, policy))?;
            written.push(path.clone());
        }
        if let Some(path) = &self.html {
            write_file(path, &html::render(report, policy))?;
            written.push(path.clone());
        }
        Ok(written)
    }
}

/// `path` made absolute with its directory resolved: through the filesystem where the directory
/// exists, lexically (`.` and `..` folded) where it does not yet.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_owned());
    let mut lexical = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    match (lexical.parent(), lexical.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|dir| dir.join(name))
            .unwrap_or(lexical.clone()),
        _ => lexical,
    }
}

/// Whether two paths name the same file: equal once resolved, or the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    if resolved(a) == resolved(b) {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Why a report cannot be written at `path`, if it cannot: its directory must exist (none is
/// created that the user did not ask for) and take a new file; the path must not be a directory.
fn writable(path: &Path) -> Result<(), String> {
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_dir() {
            return Err("it is a directory".into());
        }
        if !meta.is_file() {
            // `/dev/stdout`, a FIFO: written through as it is.
            return Ok(());
        }
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Err(_) => {
            return Err(format!(
                "the directory `{}` does not exist; create it first",
                dir.display()
            ))
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(format!("`{}` is not a directory", dir.display()))
        }
        Ok(_) => {}
    }
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .map_err(|e| format!("the directory `{}` takes no new file: {e}", dir.display()))
}

/// Writes `text` to `path` through a temporary file in the same directory renamed into place, so a reader never sees half a report. A new file gets mode
/// 0644 (a CI artefact others must read; the temporary file's own mode is 0600); a file that
/// exists keeps its mode. A path that exists but is not a regular file — `/dev/stdout`, a FIFO, a
/// symlink — is written through, never replaced.
fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    let error = |source| ReportError::Write {
        path: path.to_owned(),
        source,
    };
    let existing = std::fs::symlink_metadata(path).ok();
    if let Some(meta) = &existing {
        if !meta.file_type().is_file() && !meta.is_dir() {
            return std::fs::write(path, text).map_err(error);
        }
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(error)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(error)?;
    let permissions = match &existing {
        Some(meta) => meta.permissions(),
        None => new_file_permissions(file.as_file()).map_err(error)?,
    };
    file.as_file().set_permissions(permissions).map_err(error)?;
    file.persist(path).map_err(|e| error(e.error))?;
    Ok(())
}

/// Permissions for a new report file: 0644 on Unix, the temporary file's own elsewhere.
fn new_file_permissions(file: &std::fs::File) -> std::io::Result<std::fs::Permissions> {
    #[cfg(unix)]
    {
        let _ = file;
        use std::os::unix::fs::PermissionsExt as _;
        Ok(std::fs::Permissions::from_mode(0o644))
    }
    #[cfg(not(unix))]
    {
        Ok(file.metadata()?.permissions())
    }
}
