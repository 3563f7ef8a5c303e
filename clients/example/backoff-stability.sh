#!/bin/sh
# backoff's verdict on the example client, RUNS times per retry strategy, counted: a rule that
# judges a random process must give the same verdict every time (docs/BENCHMARKS.md, "Client
# backoff verdicts"). Run from the repository root, beside whatever load the machine has.
#
#   clients/example/backoff-stability.sh [RUNS [IDEMSPEC [FLAGS...]]]
#
# Defaults: 20 runs, target/debug/idemspec, every strategy below. Prints one line per strategy:
# its flags, then how many runs gave each verdict.
set -eu
runs=${1:-20}
idemspec=${2:-target/debug/idemspec}
shift $(($# < 2 ? $# : 2))
if [ $# -eq 0 ]; then
    set -- "--backoff jittered" "--backoff full" "--backoff equal" "--backoff decorrelated" \
        "--backoff tenpct" "--backoff fixed" "--backoff standard" "--backoff immediate-first" \
        "--retries transport" "--retries transport --backoff fixed"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for flags in "$@"; do
    : >"$out/verdicts"
    i=0
    while [ "$i" -lt "$runs" ]; do
        "$idemspec" client --quiet --only backoff --profile clients/example/client.yaml \
            --exec "python3 clients/example/create.py $flags" \
            --report-json "$out/report.json" >/dev/null 2>&1 || true
        python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["checks"][0]["verdict"])' \
            "$out/report.json" >>"$out/verdicts"
        i=$((i + 1))
    done
    printf '%-38s %s\n' "$flags" "$(sort "$out/verdicts" | uniq -c | tr -s ' ' | tr '\n' ' ')"
done
