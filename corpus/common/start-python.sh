#!/usr/bin/env sh
# Installs a Python corpus app's requirements into its own .venv (once) and serves it on
# 127.0.0.1:$PORT. Run from the app's folder:
#   ../common/start-python.sh MODULE:APP     serves MODULE:APP with uvicorn
#   ../common/start-python.sh -- CMD...      runs CMD (with PYTHONPATH and STATE_DIR set) instead
set -eu
here=$(pwd)
if [ ! -f .venv/installed ] || [ requirements.txt -nt .venv/installed ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  touch .venv/installed
fi
[ "${INSTALL_ONLY:-}" = 1 ] && exit 0
export PYTHONPATH="$here/../common${PYTHONPATH:+:$PYTHONPATH}"
export STATE_DIR="${STATE_DIR:-$here/state}"
if [ "${1:-}" = -- ]; then
  shift
  exec "$@"
fi
exec .venv/bin/uvicorn "$1" --host 127.0.0.1 --port "${PORT:?set PORT}" --log-level warning
