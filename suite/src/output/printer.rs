//! The [`Printer`]: one place that knows `-q`, `-v` and `--color`, so every command prints results
//! to stdout and diagnostics (errors, `hint:` lines, progress) to stderr the same way.

use std::fmt::Display;
use std::io::{IsTerminal, Write};

use idemspec::report::progress::ProgressMode;
use idemspec::report::Palette;
use owo_colors::Style;

/// `--color`: when to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always colour, even into a pipe or file.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether a stream that `is_terminal` gets colour, given the `NO_COLOR` and `TERM` variables
    /// (<https://no-color.org>: any non-empty `NO_COLOR` turns colour off unless forced).
    fn resolve(self, is_terminal: bool, env: &dyn Fn(&str) -> Option<String>) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let no_color = env("NO_COLOR").is_some_and(|v| !v.is_empty());
                let dumb = env("TERM").is_some_and(|t| t == "dumb");
                is_terminal && !no_color && !dumb
            }
        }
    }
}

/// Output settings for one invocation.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    /// `-q`: only the essentials on stdout (the summary), no progress.
    pub quiet: bool,
    /// `-v` count: 1 shows one line per finished check and info logs, 2 debug logs.
    pub verbose: u8,
    /// Colours for stdout.
    pub stdout: Palette,
    /// Colours for stderr.
    pub stderr: Palette,
    stderr_is_terminal: bool,
}

impl Printer {
    /// Decides colour for both streams from `--color`, `NO_COLOR`, `TERM` and whether each
    /// stream is a terminal.
    pub fn new(color: ColorChoice, quiet: bool, verbose: u8) -> Self {
        let env = |name: &str| std::env::var(name).ok();
        let stderr_is_terminal = std::io::stderr().is_terminal();
        Self {
            quiet,
            verbose,
            stdout: Palette {
                enabled: color.resolve(std::io::stdout().is_terminal(), &env),
            },
            stderr: Palette {
                enabled: color.resolve(stderr_is_terminal, &env),
            },
            stderr_is_terminal,
        }
    }

    /// How progress is shown: a bar on a terminal, lines with `-v` elsewhere, nothing with `-q`.
    pub fn progress_mode(&self) -> ProgressMode {
        if self.quiet {
            ProgressMode::Hidden
        } else if self.stderr_is_terminal {
            ProgressMode::Bar
        } else if self.verbose > 0 {
            ProgressMode::Lines
        } else {
            ProgressMode::Hidden
        }
    }

    /// Writes a result to stdout (ignored when stdout is closed, e.g. `| head`).
    pub fn result(&self, text: impl Display) {
        let _ = write!(std::io::stdout().lock(), "{text}");
    }

    /// Writes a status line to stderr, unless `-q`.
    pub fn status(&self, text: impl Display) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }

    /// `error: …` with the whole cause chain, then `hint: …` lines, on stderr (always, even `-q`).
    pub fn error(&self, error: &anyhow::Error, hints: &[String]) {
        let mut err = std::io::stderr().lock();
        let label = self.label("error", Style::new().red().bold());
        let _ = writeln!(err, "{label}: {}", indent_continuation(&error.to_string()));
        for cause in error.chain().skip(1) {
            let _ = writeln!(
                err,
                "  {}: {}",
                self.label("caused by", Style::new().red()),
                indent_continuation(&cause.to_string())
            );
        }
        for hint in hints {
            let _ = writeln!(
                err,
                "{}: {hint}",
                self.label("hint", Style::new().cyan().bold())
            );
        }
    }

    /// `warning: …` on stderr (always).
    pub fn warning(&self, text: impl Display) {
        let label = self.label("warning", Style::new().yellow().bold());
        let _ = writeln!(std::io::stderr().lock(), "{label}: {text}");
    }

    fn label(&self, text: &str, style: Style) -> String {
        self.stderr.paint(style, text)
    }
}

/// Indents every line after the first by four spaces, so a multi-line message (a located error
/// with its snippet) stays visibly part of its entry.
fn indent_continuation(text: &str) -> String {
    text.replace('\n', "\n    ")
}

impl idemspec::report::Output for Printer {
    fn result(&self, text: &str) {
        Printer::result(self, text);
    }

    fn status(&self, text: &str) {
        Printer::status(self, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn auto_colours_only_terminals_without_no_color() {
        assert!(ColorChoice::Auto.resolve(true, &env_of(&[])));
        assert!(!ColorChoice::Auto.resolve(false, &env_of(&[])));
        assert!(!ColorChoice::Auto.resolve(true, &env_of(&[("NO_COLOR", "1")])));
        assert!(ColorChoice::Auto.resolve(true, &env_of(&[("NO_COLOR", "")])));
        assert!(!ColorChoice::Auto.resolve(true, &env_of(&[("TERM", "dumb")])));
    }

    #[test]
    fn always_and_never_override_everything() {
        assert!(ColorChoice::Always.resolve(false, &env_of(&[("NO_COLOR", "1")])));
        assert!(!ColorChoice::Never.resolve(true, &env_of(&[])));
    }
}
