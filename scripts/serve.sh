#!/usr/bin/env bash
# Install Nous and start the server on the embedded defaults (SQLite file under ~/.nous, the local
# embedding model, no LLM): on first run it stores the sample data and prints an API key.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/nous serve --demo "$@"
