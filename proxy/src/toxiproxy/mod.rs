//! A Toxiproxy-compatible control API (`idemspec proxy --toxiproxy-api ADDR`): Toxiproxy's REST
//! surface over per-connection TCP relays, so that Toxiproxy's own clients (toxiproxy-python,
//! toxiproxy-node-client, Testcontainers' Toxiproxy module) drive idemspec unchanged. Every
//! proxy made through it is a TCP relay on its own listen address; its toxics act on the bytes.
//! Per-request HTTP faults stay idemspec's own rules (`control`, `--control`).
//!
//! Layout: `server` (the API server's start, accept loop and shutdown), `api` (routes, status
//! codes, bodies), `error` (Toxiproxy's error body as a problem
//! document), `registry` (the proxies and their accept loops), `chain` (the toxics of one
//! connection, as a transform of idemspec's TCP relay, `crate::tcp::relay`), `toxics/` (one file
//! per toxic type). Connections are served on the server's I/O threads and recorded in its
//! event log ([`ToxiproxyServer::events_since`]). `docs/toxiproxy.md` lists what is
//! served and every deliberate difference from Toxiproxy.

mod api;
mod chain;
mod error;
mod registry;
mod server;
mod toxics;

pub use api::{BODY_LIMIT, VERSION};
pub use server::{ToxiproxyServer, HEADER_READ_TIMEOUT};
