//! Where output goes: results on stdout, diagnostics on stderr, colour and verbosity decided once
//! (model: uv's printer).

mod printer;

pub use printer::{ColorChoice, Printer};
