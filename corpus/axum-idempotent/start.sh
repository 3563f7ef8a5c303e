#!/usr/bin/env sh
# Builds this app (once, into its own target/ here) and serves it on 127.0.0.1:$PORT.
set -eu
cd "$(dirname "$0")"
if [ ! -x target/release/corpus-axum-idempotent ] || [ src/main.rs -nt target/release/corpus-axum-idempotent ] \
  || [ Cargo.toml -nt target/release/corpus-axum-idempotent ]; then
  CARGO_TARGET_DIR="$(pwd)/target" cargo build --release --quiet
fi
[ "${INSTALL_ONLY:-}" = 1 ] && exit 0
exec target/release/corpus-axum-idempotent
