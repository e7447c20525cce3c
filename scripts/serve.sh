#!/usr/bin/env bash
# Install Nous and start the server on the embedded defaults (SQLite file under ~/.nous, the local
# embedding model, no LLM): on first run it stores the sample data and prints an API key.
# The banner's commands name the CLI by its absolute path (.venv/bin/nous is not on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "the CLI: $PWD/.venv/bin/nous   (or '. .venv/bin/activate' to put it on PATH)"
exec "$PWD/.venv/bin/nous" serve --demo "$@"
