//! The `idemspec` command line: flags (clap), one module per subcommand, and the mapping of every
//! outcome to a documented exit code (0 ok, 1 checks failed, 2 usage or configuration, 3 target
//! unreachable).

mod args;
mod failure;
mod init;
mod inputs;
mod list;
mod run;
mod validate;

pub use args::{Cli, Command};
pub use failure::Failure;

use clap::Parser as _;

use crate::output::Printer;

/// Parses the command line, runs the command and returns the process exit code.
pub fn main() -> std::process::ExitCode {
    // clap prints usage errors itself and exits 2, like every other usage error here.
    let cli = Cli::parse();
    let printer = Printer::new(cli.global.color, cli.global.quiet, cli.global.verbose);
    init_tracing(&printer);
    let result = match cli.command {
        Command::Run(args) => run::run(args, &printer),
        Command::Init(args) => init::init(&args, &printer),
        Command::Validate(args) => validate::validate(&args, &printer),
        Command::List(args) => list::list(&args, &printer),
    };
    let code = match result {
        Ok(code) => code,
        Err(failure) => {
            printer.error(&failure.error, &failure.hints);
            failure.code
        }
    };
    std::process::ExitCode::from(code.code() as u8)
}

/// Logs go to stderr: warnings by default, `-v` info, `-vv` debug; `RUST_LOG` overrides.
fn init_tracing(printer: &Printer) {
    let default = match printer.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(printer.stderr.enabled)
        .try_init();
}
