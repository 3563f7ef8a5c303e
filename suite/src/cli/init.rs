//! `idemspec init [PATH]`: write a commented target profile to start from.

use std::io::Write as _;
use std::path::Path;

use anyhow::{anyhow, Context as _};
use idemspec::model::ExitCode;

use super::args::InitArgs;
use super::Failure;
use crate::output::Printer;

/// The profile `init` writes: every field commented, valid as it stands.
pub const TEMPLATE: &str = include_str!("init-profile.yaml");

/// The presets `init --preset` knows, with the profile each writes: the three header-keyed
/// presets share [`TEMPLATE`] with their own `preset:` line; the clouds' have shapes of their own.
const PRESETS: [(&str, &str); 5] = [
    ("article", TEMPLATE),
    ("ietf-draft", TEMPLATE),
    ("stripe-v1", TEMPLATE),
    ("aws-client-token", include_str!("init-profile-aws.yaml")),
    ("gcp-request-id", include_str!("init-profile-gcp.yaml")),
];

/// The profile `init --preset name` writes, if `name` is a preset.
fn template(name: &str) -> Option<String> {
    let (_, text) = PRESETS.iter().find(|(n, _)| *n == name)?;
    Some(text.replacen("  preset: article", &format!("  preset: {name}"), 1))
}

/// Runs `idemspec init`.
///
/// # Errors
/// A [`Failure`] (exit 2) when the file exists and `--force` was not given, or it cannot be written.
pub fn init(args: &InitArgs, printer: &Printer) -> Result<ExitCode, Failure> {
    let Some(text) = template(&args.preset) else {
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        return Err(
            Failure::usage(anyhow!("--preset: no preset is called `{}`", args.preset))
                .hint(format!("the presets are: {}", names.join(", "))),
        );
    };
    write(&args.path, args.force, &text).map_err(|error| {
        let failure = Failure::usage(error);
        if args.path.exists() && !args.force {
            failure.hint(
                "pass --force to overwrite it, or write elsewhere: `idemspec init other.yaml`",
            )
        } else {
            failure
        }
    })?;
    let path = args.path.display();
    printer.status(format!(
        "wrote {path}: set base_urls, principals and operations for your API (every field: docs/profile-reference.md), then run\n  idemspec validate {path}\n  idemspec run --target {path}"
    ));
    Ok(ExitCode::Success)
}

fn write(path: &Path, force: bool, text: &str) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        // create_new checks and creates in one step: no window in which another file appears.
        options.create_new(true);
    }
    let mut file = options.open(path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow!("`{}` already exists", path.display())
        } else {
            anyhow::Error::new(error).context(format!("failed to create `{}`", path.display()))
        }
    })?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("failed to write `{}`", path.display()))
}
