//! Any bytes as what a client sends on one connection to a real leasebroker (in process, on
//! 127.0.0.1, SQLite): the first answer, if any, is a 2xx–4xx, a 4xx carries a problem body, and
//! the server answers within the time limit.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|request: &[u8]| {
    leasebroker_fuzz::judge(&leasebroker_fuzz::exchange(request));
});
