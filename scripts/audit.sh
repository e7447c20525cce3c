#!/usr/bin/env bash
# Audit the pinned dependencies (requirements.lock) for known vulnerabilities with pip-audit.
# Needs the network: pip-audit asks PyPI's JSON API (or OSV with `-s osv`) about each package.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
.venv/bin/python -m pip install --quiet --disable-pip-version-check "pip-audit>=2.7"
exec .venv/bin/pip-audit --progress-spinner off -r requirements.lock "$@"
