//! The `idemspec` command line: flags (clap), one module per subcommand, and the mapping of every
//! outcome to a documented exit code (0 ok, 1 checks failed, 2 usage or configuration, 3 target
//! unreachable, 4 nothing judged, 130 interrupted).

mod args;
mod client;
mod failure;
mod init;
mod inputs;
mod list;
mod reporting;
mod run;
mod servers;
mod validate;

pub use args::{Cli, Command};
pub use failure::Failure;

use clap::Parser as _;

use idemspec::model::ExitCode;

use crate::output::{ColorChoice, Printer};

/// Parses the command line, runs the command and returns the process exit code.
pub fn main() -> std::process::ExitCode {
    let mut raw = std::env::args_os();
    let program = raw.next();
    let first = raw.next();
    if first.as_deref() == Some(std::ffi::OsStr::new(servers::LEASEBROKER_SUBCOMMAND)) {
        // Dispatched before clap, so idemspec's global flags never take one of leasebroker's.
        let printer = Printer::new(ColorChoice::Auto, false, 0);
        return exit(servers::leasebroker(raw), &printer);
    }
    // clap prints usage errors itself and exits 2, like every other usage error here.
    let cli = Cli::parse_from(program.into_iter().chain(first).chain(raw));
    let printer = Printer::new(cli.global.color, cli.global.quiet, cli.global.verbose);
    // The standalone proxy logs every fault it applies, so it logs at info by default.
    init_tracing(&printer, matches!(cli.command, Command::Proxy(_)));
    let result = match cli.command {
        Command::Run(args) => run::run(args, &printer),
        Command::Init(args) => init::init(&args, &printer),
        Command::Validate(args) => validate::validate(&args, &printer),
        Command::List(args) => list::list(&args, &printer),
        Command::Proxy(args) => servers::proxy(args),
        Command::Client(args) => client::client(args, &printer),
    };
    exit(result, &printer)
}

/// Prints a failure (error chain and hints) and turns the outcome into the process exit code.
fn exit(result: Result<ExitCode, Failure>, printer: &Printer) -> std::process::ExitCode {
    let code = match result {
        Ok(code) => code,
        Err(failure) => {
            printer.error(&failure.error, &failure.hints);
            failure.code
        }
    };
    std::process::ExitCode::from(code.code() as u8)
}

/// Logs go to stderr: warnings by default (info for a server), `-v` info, `-vv` debug;
/// `RUST_LOG` overrides.
fn init_tracing(printer: &Printer, server: bool) {
    let default = match printer.verbose {
        0 if server => "info",
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
