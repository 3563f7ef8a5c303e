//! TCP relaying: `relay` (one connection relayed through a per-direction [`relay::Transform`],
//! one event per connection), used by idemspec's TCP mode (`rules`: refuse, latency with
//! jitter, close or reset after N bytes in a direction, blackhole) and by the Toxiproxy
//! proxies (`crate::toxiproxy`, whose toxics are a transform).

pub(crate) mod relay;
mod rules;

pub(crate) use rules::serve_connection;
