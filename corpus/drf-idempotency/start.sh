#!/usr/bin/env sh
# Installs this app into .venv (once), migrates its SQLite database and serves it on
# 127.0.0.1:$PORT with gunicorn threads (slow and hanging handlers must not block the others).
cd "$(dirname "$0")" && exec ../common/start-python.sh -- sh -c '
  set -eu
  .venv/bin/python app.py migrate -v 0
  exec .venv/bin/gunicorn app -b "127.0.0.1:${PORT:?set PORT}" -k gthread --threads 32 -w 1 \
    --timeout 0 --log-level warning'
