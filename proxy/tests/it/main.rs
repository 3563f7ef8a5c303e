//! End-to-end tests of idemspec-proxy over real sockets: a real upstream that counts what it
//! received (`support::upstream`), the proxy in between, and real clients.

mod control;
mod early_answers;
mod fast_path;
mod fast_path_hostile;
mod fast_path_rules;
mod faults;
mod fuzz;
mod malformed;
mod matching;
mod memory;
mod metrics;
mod passthrough;
mod slow_clients;
mod support;
mod tcp;
mod tls_downstream;
mod tls_upstream;
mod toxiproxy;
