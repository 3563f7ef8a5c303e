//! The HTTP API: the public router ([`app`]), the admin router ([`admin_app`]), and problem bodies.

mod admin;
mod body;
mod problem;
mod router;
mod worker_id;
mod workers;

pub use admin::admin_app;
pub(crate) use body::read_body;
pub use body::{BodyDeadline, JsonBody};
pub use problem::{ApiError, PROBLEM_BASE};
pub use router::app;
