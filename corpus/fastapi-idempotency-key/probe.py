"""Probes fastapi-idempotency-key without idemspec; prints one line per behaviour. Usage: probe.py BASE_URL"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import probelib  # noqa: E402

CFG = {}  # no lease duration is documented
probelib.probe(sys.argv[1], CFG)
