#!/usr/bin/env bash
# Installs the real Toxiproxy clients that proxy/tests/it/toxiproxy_clients.rs drives against
# `idemspec proxy --toxiproxy-api`: toxiproxy-python (PyPI) into venv/, toxiproxy-node-client (npm)
# into node_modules/. Both folders are git-ignored. Versions are pinned so that docs/toxiproxy.md's
# table of passing calls stays true.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x venv/bin/python ]; then python3 -m venv venv; fi
venv/bin/python -m pip install --quiet --disable-pip-version-check toxiproxy-python==0.1.1
npm install --silent --no-audit --no-fund --no-save --prefix . toxiproxy-node-client@4.1.0
