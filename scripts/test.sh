#!/usr/bin/env bash
# Install Nous with dev tools, prepare PostgreSQL + pgvector, lint, and run the whole test suite on
# both backends (SQLite and PostgreSQL). A PostgreSQL test that cannot run fails the run; so does
# the browser test when Chromium cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/install-pgvector.sh
bash scripts/install-chromium.sh  # the inspector's browser test (tests/test_ui_browser.py)
export NOUS_TEST_REQUIRE_POSTGRES=1
.venv/bin/ruff check src tests
.venv/bin/ruff format --check src tests
.venv/bin/mypy
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
