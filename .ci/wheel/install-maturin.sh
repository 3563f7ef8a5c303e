#!/usr/bin/env bash
# Installs maturin, which builds the idemspec wheel (pyproject.toml), into venv/ beside this script
# (git-ignored). Pinned, so CI and the release workflow build the wheel with one known maturin.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x venv/bin/python ]; then python3 -m venv venv; fi
venv/bin/python -m pip install --quiet --disable-pip-version-check maturin==1.16.0
