//! The live progress display while checks run, drawn on stderr so stdout carries only results.
//!
//! On a terminal it is an indicatif bar naming the running check; elsewhere (CI logs) it is either
//! nothing or, with `-v`, one line per finished check.

use std::io::Write;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{human_duration, Palette};
use crate::model::RunEvent;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// An animated bar on stderr (stderr is a terminal and not `-q`).
    Bar,
    /// One line per finished check on stderr (`-v` without a terminal).
    Lines,
    /// Nothing.
    Hidden,
}

/// Consumes [`RunEvent`]s and shows how far the run is.
pub struct Progress {
    mode: ProgressMode,
    palette: Palette,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A progress display in `mode`, colouring verdicts with `palette`.
    pub fn new(mode: ProgressMode, palette: Palette) -> Self {
        Self {
            mode,
            palette,
            bar: None,
        }
    }

    /// Updates the display for one event.
    pub fn handle(&mut self, event: &RunEvent) {
        match event {
            RunEvent::RunStarted { total, .. } => {
                if self.mode == ProgressMode::Bar {
                    let bar = ProgressBar::with_draw_target(
                        Some(*total as u64),
                        ProgressDrawTarget::stderr(),
                    );
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
                        )
                        .expect("the progress template is a valid constant"),
                    );
                    bar.enable_steady_tick(Duration::from_millis(120));
                    self.bar = Some(bar);
                }
            }
            RunEvent::CheckStarted { id } => {
                if let Some(bar) = &self.bar {
                    bar.set_message(id.clone());
                }
            }
            RunEvent::CheckFinished(outcome) => {
                // Padded before painting: escape sequences would otherwise count as width.
                let label = format!("{:>7}", outcome.label());
                let line = format!(
                    "{} {} {}",
                    self.palette.verdict(outcome.verdict, &label),
                    outcome.id,
                    self.palette.dim(&human_duration(outcome.duration_ms))
                );
                match (&self.bar, self.mode) {
                    (Some(bar), _) => {
                        bar.inc(1);
                        bar.println(line);
                    }
                    (None, ProgressMode::Lines) => {
                        let _ = writeln!(std::io::stderr(), "{line}");
                    }
                    _ => {}
                }
            }
            RunEvent::RunFinished(_) => self.finish(),
        }
    }

    /// Removes the bar (idempotent), so the final report prints on a clean screen.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
