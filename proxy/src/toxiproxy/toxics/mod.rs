//! Toxics: their JSON shape (Toxiproxy's `ToxicWrapper`), the defaults and checks a new or
//! updated toxic goes through (`toxic`: the wrapper, its `Kind`, the bounds), and one file per
//! toxic type with its attributes and effect.
//!
//! A toxic is `{"name", "type", "stream", "toxicity", "attributes"}`. On create, `stream`
//! defaults to `downstream` (case-insensitive; `upstream` is what the client sends), `name` to
//! `TYPE_STREAM`, `toxicity` to 1.0 and each attribute to 0; unknown members are ignored, as
//! Toxiproxy's JSON decoder ignores them. An update takes `attributes` (merged over the current
//! ones) and `toxicity`; the name, type and stream stay.

mod bandwidth;
mod latency;
mod limit_data;
mod reset_peer;
mod slicer;
mod slow_close;
mod timeout;
mod toxic;

pub(crate) use bandwidth::Bandwidth;
pub(crate) use latency::Latency;
pub(crate) use limit_data::LimitData;
pub(crate) use reset_peer::ResetPeer;
pub(crate) use slicer::Slicer;
pub(crate) use slow_close::SlowClose;
pub(crate) use timeout::Timeout;
use toxic::bounded_ms;
pub(crate) use toxic::{AttrError, Kind, Refused, Stream, Toxic};
