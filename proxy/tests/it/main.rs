//! End-to-end tests of idemspec-proxy over real sockets: a real upstream that counts what it
//! received (`support::upstream`), the proxy in between, and real clients.

mod control;
mod faults;
mod matching;
mod passthrough;
mod support;
mod tcp;
