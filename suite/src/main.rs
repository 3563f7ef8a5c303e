//! The `idemspec` binary: a thin entry point over [`cli::main`].

mod cli;
mod output;

/// mimalloc instead of glibc's malloc: the proxy allocates a few small objects per request, and
/// glibc's free lists cost it ~5 % of its CPU (docs/measurement-log.md, idemspec-proxy).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
