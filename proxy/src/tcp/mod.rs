//! TCP mode: a byte relay per connection with the byte-level faults (refuse, latency with
//! jitter, close or reset after N bytes in a direction, blackhole).

mod relay;

pub(crate) use relay::serve_connection;
