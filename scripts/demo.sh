#!/usr/bin/env bash
# Install Nous and run the demo on the embedded SQLite store (no services, no network at run time).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/nous demo "$@"
