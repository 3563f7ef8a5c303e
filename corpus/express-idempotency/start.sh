#!/usr/bin/env sh
# Installs this app into node_modules (once) and serves it on 127.0.0.1:$PORT.
set -eu
cd "$(dirname "$0")"
if [ ! -f node_modules/.installed ] || [ package.json -nt node_modules/.installed ]; then
  npm install --no-audit --no-fund --silent
  touch node_modules/.installed
fi
[ "${INSTALL_ONLY:-}" = 1 ] && exit 0
exec node app.js
