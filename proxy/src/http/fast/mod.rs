//! The fast path: pass-through of plain HTTP/1.1 requests that no rule can apply to, without
//! hyper on either side.
//!
//! Every downstream connection starts here. A request head that is plain (see [`wire`]) and
//! satisfies no rule's conditions (none in force, or none whose method, path and headers fit it;
//! no rule's counters move for it, as on hyper's path) is forwarded here (`serve`): its head
//! rewritten as hyper's path rewrites it, its body (whole in the buffer with the head) sent with
//! it, the response copied as it comes, and its event recorded through the same `RequestCtx`
//! (so the event log, the metrics and a departed client's receipt are the same). Anything else —
//! a head some rule's conditions fit, a head hyper's parser must judge, a slow head, a shutdown
//! while idle — hands the connection, with the bytes read but not yet handled, to hyper's path
//! ([`super::conn`]) for the rest of its life, before anything of that request was sent: the fast
//! path never answers what it does not know, and never decides which rule applies.
//!
//! What it saves per request (docs/BENCHMARKS.md): hyper's two HTTP/1 state machines, the
//! `http::Request`/`Response` and `HeaderMap` of each message, and the boxed body streams; a head
//! is parsed once with `httparse` into a stack array and copied once into a reused buffer.

mod serve;
mod wire;

pub(super) use serve::{serve, Exit};
