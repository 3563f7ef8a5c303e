//! Writing the report files the user asked for (`--report-junit`, `--report-json`,
//! `--report-markdown`).

use std::path::{Path, PathBuf};

use super::{json, junit, markdown};
use crate::model::RunReport;

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
}

impl ReportFiles {
    /// Renders and writes every requested report; `allow_unknown` is `--allow-unknown` (the
    /// Markdown heading states the result). Returns the paths written, in order.
    ///
    /// # Errors
    /// The first report that cannot be rendered or written; earlier ones stay written.
    pub fn write(
        &self,
        report: &RunReport,
        allow_unknown: bool,
    ) -> Result<Vec<PathBuf>, ReportError> {
        let mut written = Vec::new();
        if let Some(path) = &self.junit {
            write_file(path, &junit::render(report).map_err(ReportError::Junit)?)?;
            written.push(path.clone());
        }
        if let Some(path) = &self.json {
            write_file(path, &json::render(report).map_err(ReportError::Json)?)?;
            written.push(path.clone());
        }
        if let Some(path) = &self.markdown {
            write_file(path, &markdown::render(report, allow_unknown))?;
            written.push(path.clone());
        }
        Ok(written)
    }
}

/// Writes `text` to `path`, creating missing parent directories, through a temporary file in the
/// same directory renamed into place, so a reader never sees half a report.
fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    let error = |source| ReportError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(error)?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(error)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(error)?;
    file.persist(path).map_err(|e| error(e.error))?;
    Ok(())
}
