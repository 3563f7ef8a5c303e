#!/usr/bin/env bash
# Runs every client check against each real SDK (install them first: ./install.sh) and writes
# one JSON report per SDK into results/. docs/client-matrix.md is written from these by hand,
# each verdict beside the SDK's own line that explains it.
set -euo pipefail
cd "$(dirname "$0")"
root=../..
idemspec=${IDEMSPEC:-"cargo run -q --manifest-path $root/Cargo.toml -p idemspec --"}
mkdir -p results
run() {
  local name=$1 profile=$2 exec=$3
  echo "== $name"
  # A FAIL is the point of the matrix, not an error of this script.
  PYTHONPATH="$PWD/python" NODE_PATH="$PWD/node/node_modules" \
    $idemspec client --color never --profile "profiles/$profile" --exec "$exec" \
    --report-json "results/$name.json" || true
}
run stripe-python stripe.yaml "python3 drivers/stripe_python.py"
run stripe-node stripe.yaml "node drivers/stripe_node.js"
run mollie-python mollie.yaml "python3 drivers/mollie_python.py"
run hcloud-python hcloud.yaml "python3 drivers/hcloud_python.py"
run linode-python linode.yaml "python3 drivers/linode_python.py"
run pydo-python pydo.yaml "python3 drivers/pydo_python.py"
run boto3-ec2-python boto3-ec2.yaml "python3 drivers/boto3_ec2_python.py"
run boto3-ecs-python boto3-ecs.yaml "python3 drivers/boto3_ecs_python.py"
run gocardless-python gocardless.yaml "python3 drivers/gocardless_python.py"
run chargebee-python chargebee.yaml "python3 drivers/chargebee_python.py"
run square-python square.yaml "python3 drivers/square_python.py"
run paypal-python paypal.yaml "python3 drivers/paypal_python.py"
run moderntreasury-python moderntreasury.yaml "python3 drivers/moderntreasury_python.py"
