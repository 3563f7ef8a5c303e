#!/usr/bin/env bash
# The wheel as a user gets it: builds it from pyproject.toml with the dev profile (so it reuses the
# debug build the tests made; releases use `dist`), installs it into a fresh virtual environment
# with no package index (nothing is fetched), and, from an empty directory with only that
# environment and the system on PATH, runs `idemspec --version` (must be the crate's version) and
# `idemspec run --reference` (must pass: leasebroker and SQLite are inside the binary). Fails when
# the wheel carries no `idemspec` or the binary cannot run the reference. Then runs the GitHub
# Action's step (ci/action.sh) with no `binary`, so it installs the version asked for as it does on
# GitHub, pip finding this wheel instead of PyPI. Prints each part's time.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out=$target/wheels-ci
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seconds() { echo $(($(date +%s) - $1)); }

.ci/wheel/install-maturin.sh
rm -rf "$out"
t=$(date +%s)
.ci/wheel/venv/bin/maturin build --profile dev --out "$out"
echo "wheel built in $(seconds "$t") s: $(ls "$out")"

t=$(date +%s)
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$out"/idemspec-*.whl
echo "fresh venv and pip install in $(seconds "$t") s"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -1)
mkdir "$tmp/empty" && cd "$tmp/empty"
run() { env -i HOME="$HOME" PATH="$tmp/venv/bin:/usr/bin:/bin" NO_COLOR=1 "$@"; }
test "$(run sh -c 'command -v idemspec')" = "$tmp/venv/bin/idemspec"
said=$(run idemspec --version)
if [ "$said" != "idemspec $version" ]; then
  echo "the wheel's idemspec says '$said', the crate is $version"
  exit 1
fi
run idemspec run --reference

t=$(date +%s)
run env PIP_NO_INDEX=1 PIP_FIND_LINKS="$out" RUNNER_TEMP="$tmp" GITHUB_STEP_SUMMARY="$tmp/summary.md" \
  IDEMSPEC_VERSION="$version" IDEMSPEC_PROFILE= IDEMSPEC_ARGS="--reference --only fingerprint-mismatch" \
  "$root/ci/action.sh"
grep -q '^## idemspec: `leasebroker` passed' "$tmp/summary.md"
echo "the action installed the wheel and passed in $(seconds "$t") s"
