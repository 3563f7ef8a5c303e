//! The `Idempotency-Key` parser on any bytes: no panic; an accepted key is 1–255 printable ASCII
//! characters, and its RFC 8941 sf-string form parses back to it.

#![no_main]

use leasebroker::idempotency::{IdempotencyKey, MAX_KEY_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|raw: &[u8]| {
    let Ok(key) = IdempotencyKey::parse(raw) else {
        return;
    };
    let key = key.as_str();
    assert!((1..=MAX_KEY_LEN).contains(&key.len()), "{key:?}");
    assert!(key.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{key:?}");
    let quoted = format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""));
    let again = IdempotencyKey::parse(quoted.as_bytes()).expect("the quoted form parses");
    assert_eq!(again.as_str(), key);
});
