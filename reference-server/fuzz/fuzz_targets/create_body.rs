//! Any bytes as the body of a keyed `POST /v1/workers` (a fresh key each time, so every body is
//! parsed rather than refused as a reused key): the answer is a 201, or a 4xx problem.

#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;

static KEYS: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|body: &[u8]| {
    let key = KEYS.fetch_add(1, Ordering::Relaxed);
    let mut request = format!(
        "POST /v1/workers HTTP/1.1\r\nhost: fuzz\r\nauthorization: Bearer fuzz\r\n\
         idempotency-key: body-{key}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    leasebroker_fuzz::judge(&leasebroker_fuzz::exchange(&request));
});
