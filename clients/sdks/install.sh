#!/usr/bin/env bash
# Installs the real SDKs of the client matrix (docs/client-matrix.md) into this folder:
# Python packages into python/, npm packages into node/. Not part of .ci/run: the matrix is
# re-run by hand (./run-matrix.sh) and its result committed. Versions are pinned so that the
# matrix's explanations (lines of the SDKs' own code) stay true.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --disable-pip-version-check --target python --upgrade \
  stripe==16.1.0 mollie-api-python==4.0.0 hcloud==2.27.0 linode_api4==5.48.0 pydo==0.44.0 \
  boto3==1.44.18 botocore==1.44.18 gocardless_pro==3.22.0 chargebee==3.29.0 \
  squareup==46.0.0.20260916 paypal-server-sdk==2.4.0 modern-treasury==1.80.0 \
  urllib3==2.8.0
npm install --silent --no-audit --no-fund --prefix node stripe@23.1.0
