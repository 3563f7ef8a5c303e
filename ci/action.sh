#!/usr/bin/env bash
# The idemspec GitHub Action's step (action.yml): installs idemspec the fast way (its wheel, from
# PyPI, into a virtual environment of its own), runs it, appends the Markdown report to the job
# summary, writes the JUnit report where asked, and exits with idemspec's exit code, so the step
# fails exactly when the run does (docs/ci.md has the codes). Read from the environment:
#
#   IDEMSPEC_PROFILE  the target profile (`--target`); empty when IDEMSPEC_ARGS names the target
#                     (`--reference`)
#   IDEMSPEC_ARGS     more `idemspec run` arguments, split on whitespace (no quoting, no globs)
#   IDEMSPEC_VERSION  the version to install: `latest` (or empty) for the newest, or e.g. `0.1.0`
#   IDEMSPEC_JUNIT    where the JUnit report goes (default idemspec.xml)
#   IDEMSPEC_BIN      an idemspec binary to run instead of installing one (a build of your own)
#   GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_PATH, RUNNER_TEMP: as GitHub sets them; the step runs
#                     without them too (nothing is written where one is unset).
#
# Outputs: `exit-code`, `junit` (the JUnit path), `report` (the Markdown report's path); `junit` and
# `report` only when that file was written.
# When idemspec writes no report (a configuration error, exit 2; an unreachable target, exit 3), the
# summary gets its error output instead, which names the file, line and column at fault.
set -uo pipefail

junit=${IDEMSPEC_JUNIT:-idemspec.xml}
work=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/idemspec.XXXXXX")
report=$work/idemspec.md
errors=$work/stderr.txt

# Appends the text $2 and a newline to the file named by the variable $1 (GITHUB_OUTPUT...), if set.
record() { if [ -n "${!1:-}" ]; then printf '%s\n' "$2" >>"${!1}"; fi; }

install_idemspec() {
  local version=${IDEMSPEC_VERSION:-latest} spec=idemspec
  if [ "$version" != latest ]; then spec="idemspec==$version"; fi
  python3 -m venv "$work/venv" || return
  "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec" || return
  record GITHUB_PATH "$work/venv/bin"
  IDEMSPEC_BIN=$work/venv/bin/idemspec
}

# Ends the step with exit 2 before idemspec ran: the reason in the log, the summary and outputs.
give_up() {
  echo "::error::$1"
  record GITHUB_STEP_SUMMARY "$(printf '## idemspec: exit 2, not run\n\n%s' "$1")"
  record GITHUB_OUTPUT "exit-code=2"
  exit 2
}

case $junit in *$'\n'* | *$'\r'*) give_up "the junit path has a line break in it" ;; esac
if [ -z "${IDEMSPEC_BIN:-}" ]; then
  install_idemspec || give_up "installing idemspec from PyPI failed (see the log above)"
fi
"$IDEMSPEC_BIN" --version || give_up "$IDEMSPEC_BIN does not run (the binary input)"

set -f
args=()
if [ -n "${IDEMSPEC_PROFILE:-}" ]; then args+=(--target "$IDEMSPEC_PROFILE"); fi
# shellcheck disable=SC2206 # split on whitespace, as documented
args+=(${IDEMSPEC_ARGS:-})
set +f
mkdir -p "$(dirname "$junit")"

# stdout to the log as it is; stderr to the log and to $errors, for the summary.
{ "$IDEMSPEC_BIN" run "${args[@]}" --report-junit "$junit" --report-markdown "$report" 2>&1 1>&3 |
  tee "$errors" >&2; } 3>&1
code=${PIPESTATUS[0]}

if [ -s "$report" ]; then
  record GITHUB_STEP_SUMMARY "$(cat "$report")"
else
  record GITHUB_STEP_SUMMARY "$(printf '## idemspec: exit %s, no report\n\n```text\n%s\n```' \
    "$code" "$(cat "$errors")")"
fi
record GITHUB_OUTPUT "exit-code=$code"
# A path is an output only when its file was written (a run stopped by exit 2 or 3 writes none).
if [ -s "$junit" ]; then record GITHUB_OUTPUT "junit=$junit"; fi
if [ -s "$report" ]; then record GITHUB_OUTPUT "report=$report"; fi
exit "$code"
