//! Small formatting helpers shared by the reporters: durations and the colour palette.

use owo_colors::{OwoColorize, Style};

use crate::model::{RunStats, Verdict};

/// A duration in ms as people read it: `850ms`, `1.24s`, `2m03s`.
pub fn human_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.2}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// The counts per verdict in words: `14 passed, 1 failed, 1 warned, 0 info, 0 skipped, 0 unknown`.
/// A run with FAILs or WARNs the target's documentation states adds how many after the counts:
/// `… 0 unknown; 1 of them as documented`.
pub fn counts(stats: &RunStats) -> String {
    let documented = match stats.documented {
        0 => String::new(),
        n => format!(
            "; {n} of the {} as documented",
            if stats.warn == 0 {
                "failures"
            } else if stats.fail == 0 {
                "warnings"
            } else {
                "failures and warnings"
            }
        ),
    };
    format!(
        "{} passed, {} failed, {} warned, {} info, {} skipped, {} unknown{documented}",
        stats.pass, stats.fail, stats.warn, stats.info, stats.skip, stats.unknown
    )
}

/// `1 check`, `16 checks`.
pub fn checks(n: usize) -> String {
    if n == 1 {
        "1 check".to_owned()
    } else {
        format!("{n} checks")
    }
}

/// Whether and how to colour terminal output. Decided once by the CLI (`--color`, `NO_COLOR`,
/// whether the stream is a terminal); reporters only ask it to paint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Palette {
    /// `true` to emit ANSI colour sequences.
    pub enabled: bool,
}

impl Palette {
    /// A palette that never colours (files, pipes, `--color never`).
    pub const PLAIN: Palette = Palette { enabled: false };

    /// A palette that always colours.
    pub const COLOURED: Palette = Palette { enabled: true };

    /// The style a verdict is shown in: red for FAIL, yellow for WARN, and so on.
    pub fn verdict_style(self, verdict: Verdict) -> Style {
        let style = Style::new();
        match verdict {
            Verdict::Pass => style.green(),
            Verdict::Fail => style.red().bold(),
            Verdict::Warn => style.yellow().bold(),
            Verdict::Info => style.blue(),
            Verdict::Skip => style.dimmed(),
            Verdict::Unknown => style.magenta().bold(),
        }
    }

    /// `text` in the verdict's style, or unchanged when colour is off.
    pub fn verdict(self, verdict: Verdict, text: &str) -> String {
        self.paint(self.verdict_style(verdict), text)
    }

    /// `text` in bold, or unchanged when colour is off.
    pub fn bold(self, text: &str) -> String {
        self.paint(Style::new().bold(), text)
    }

    /// `text` dimmed, or unchanged when colour is off.
    pub fn dim(self, text: &str) -> String {
        self.paint(Style::new().dimmed(), text)
    }

    /// `text` in `style`, or unchanged when colour is off.
    pub fn paint(self, style: Style, text: &str) -> String {
        if self.enabled {
            text.style(style).to_string()
        } else {
            text.to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(0), "0ms");
        assert_eq!(human_duration(999), "999ms");
        assert_eq!(human_duration(1_240), "1.24s");
        assert_eq!(human_duration(123_000), "2m03s");
    }

    #[test]
    fn plain_palette_adds_no_escapes() {
        assert_eq!(Palette::PLAIN.verdict(Verdict::Fail, "FAIL"), "FAIL");
        assert!(Palette::COLOURED
            .verdict(Verdict::Fail, "FAIL")
            .contains('\u{1b}'));
    }
}
