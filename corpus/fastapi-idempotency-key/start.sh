#!/usr/bin/env sh
# Installs this app into .venv (once) and serves it on 127.0.0.1:$PORT.
cd "$(dirname "$0")" && exec ../common/start-python.sh app:app
