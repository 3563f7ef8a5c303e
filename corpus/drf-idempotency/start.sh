#!/usr/bin/env sh
# Installs this app into .venv (once), migrates its SQLite database and serves it on
# 127.0.0.1:$PORT with gunicorn threads (slow and hanging handlers must not block the others).
set -eu
cd "$(dirname "$0")"
here=$(pwd)
if [ ! -f .venv/installed ] || [ requirements.txt -nt .venv/installed ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  touch .venv/installed
fi
[ "${INSTALL_ONLY:-}" = 1 ] && exit 0
export PYTHONPATH="$here/../common${PYTHONPATH:+:$PYTHONPATH}"
export STATE_DIR="${STATE_DIR:-$here/state}"
.venv/bin/python app.py migrate -v 0
exec .venv/bin/gunicorn app -b "127.0.0.1:${PORT:?set PORT}" -k gthread --threads 32 -w 1 \
  --timeout 0 --log-level warning
