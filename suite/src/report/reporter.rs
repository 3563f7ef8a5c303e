//! The [`Reporter`]: receives the run's events and fans each out to the progress display, the
//! terminal report and the report files (model: nextest's `Reporter::write_event`, one event
//! stream feeding every sink).

use super::{terminal, Progress, ReportError, ReportFiles, TerminalOptions};
use crate::model::RunEvent;

/// Where the terminal report and status lines go; the `idemspec` binary's printer implements it
/// (results on stdout, status on stderr).
pub trait Output {
    /// A result: the terminal report.
    fn result(&self, text: &str);
    /// A status line, e.g. `wrote idemspec.xml`.
    fn status(&self, text: &str);
}

/// What the reporter writes, besides the progress display.
#[derive(Debug, Clone, Default)]
pub struct ReporterOptions {
    /// How the terminal report is rendered (colours, `--allow-unknown`).
    pub terminal: TerminalOptions,
    /// Only the summary line instead of the table and evidence (`-q`).
    pub summary_only: bool,
    /// The report files requested.
    pub files: ReportFiles,
}

/// Fans the run's events out to every sink.
pub struct Reporter<'a> {
    progress: Progress,
    options: ReporterOptions,
    output: &'a dyn Output,
}

impl<'a> Reporter<'a> {
    /// A reporter drawing `progress` and writing the rest to `output`.
    pub fn new(progress: Progress, options: ReporterOptions, output: &'a dyn Output) -> Self {
        Self {
            progress,
            options,
            output,
        }
    }

    /// Hands one event to every sink. At `RunFinished` the progress display is removed, the
    /// terminal report printed and the report files written, in that order.
    ///
    /// # Errors
    /// A report file that could not be rendered or written (after the terminal report was
    /// printed; earlier files stay written).
    pub fn write_event(&mut self, event: &RunEvent) -> Result<(), ReportError> {
        self.progress.handle(event);
        let RunEvent::RunFinished(report) = event else {
            return Ok(());
        };
        self.progress.finish();
        let terminal_options = self.options.terminal;
        if self.options.summary_only {
            let line = terminal::summary(report, terminal_options);
            self.output.result(&format!("{line}\n"));
        } else {
            self.output
                .result(&terminal::render(report, terminal_options));
        }
        for path in self.options.files.write(report, terminal_options.policy)? {
            self.output.status(&format!("wrote {}", path.display()));
        }
        Ok(())
    }

    /// Removes the progress display when the run stops early (interrupted).
    pub fn abandon(&mut self) {
        self.progress.finish();
    }
}
