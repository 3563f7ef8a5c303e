#!/usr/bin/env bash
# Re-runs the conformance matrix: for each library (all, or those named), installs its app, starts
# it on a free 127.0.0.1 port and runs its probe, then lets idemspec start it again (the profile's
# `process:`) and run the catalogue; writes results/ and the tables in docs/conformance-matrix.md.
#   IDEMSPEC=path/to/idemspec corpus/run-matrix.sh [LIBRARY...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
idemspec=${IDEMSPEC:-${CARGO_TARGET_DIR:-$here/../target}/release/idemspec}
all=(fastapi-idempotency fastapi-idempotency-key pyidempotent drf-idempotency express-idempotency axum-idempotent)
libs=("${@:-${all[@]}}")
results=$here/results
mkdir -p "$results"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

for lib in "${libs[@]}"; do
  dir=$here/$lib
  echo "==> $lib: install"
  (cd "$dir" && INSTALL_ONLY=1 ./start.sh)

  echo "==> $lib: probe"
  port=$(free_port)
  state=$(mktemp -d)
  # A session of its own, so the whole app (start.sh and what it runs) is killed at once; the
  # leader's pid is written to a file because setsid may fork.
  (cd "$dir" && PORT=$port STATE_DIR=$state setsid sh -c 'echo $$ >"$0"; exec ./start.sh' "$state/pid" \
    >"$results/$lib.probe.log" 2>&1 &)
  for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.5; done
  timeout 180 python3 "$dir/probe.py" "http://127.0.0.1:$port" | tee "$results/$lib.probe.txt" || true
  # SIGKILL: a hanging handler would hold a graceful shutdown for its hour.
  kill -KILL -- -"$(cat "$state/pid")" 2>/dev/null || true
  rm -rf "$state"

  echo "==> $lib: idemspec run"
  state=$(mktemp -d)
  (cd "$dir" && CORPUS_PORT=$(free_port) CORPUS_STATE=$state CORPUS_LOG=$results/$lib.target.log timeout 900 "$idemspec" run --target profile.yaml \
    --color never --report-json "$results/$lib.json" >"$results/$lib.txt" 2>&1) || true
  tail -n 1 "$results/$lib.txt"
  rm -rf "$state"
done

python3 "$here/matrix.py" "$results" "$here/../docs/conformance-matrix.md" "${all[@]}"
echo "wrote docs/conformance-matrix.md"
