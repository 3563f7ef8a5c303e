//! The `idemspec` binary: a thin entry point over [`cli::main`].

mod cli;
mod output;

fn main() -> std::process::ExitCode {
    cli::main()
}
