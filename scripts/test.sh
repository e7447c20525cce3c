#!/usr/bin/env bash
# Install Nous with dev tools, prepare PostgreSQL + pgvector, lint, and run the whole test suite on
# both backends (SQLite and PostgreSQL). A PostgreSQL test that cannot run fails the run; so does
# the browser test when Chromium cannot be installed. With arguments, pytest runs with them alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/install-pgvector.sh
bash scripts/install-chromium.sh  # the inspector's browser test (tests/test_ui_browser.py)
export NOUS_TEST_REQUIRE_POSTGRES=1
.venv/bin/ruff check src tests
.venv/bin/ruff format --check src tests
.venv/bin/mypy
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)
if [ "$#" -gt 0 ]; then  # a chosen part of the suite (files, -k, ...): as given, in one process
  exec "${pytest[@]}" "$@"
fi
# The whole suite in two passes. First on every core (pytest-xdist, one worker per CPU): each test
# makes its own store (an SQLite file or a PostgreSQL schema of its own), servers on ports of their
# own and its own temporary files, so tests on different workers share nothing. Then, alone, the
# tests that must not share the machine: the fault tests stop and restart PostgreSQL under every
# other test (tests/test_store_faults.py), and the browser test drives Chromium against a live
# server (tests/test_ui_browser.py).
serial=(tests/test_store_faults.py tests/test_ui_browser.py)
status=0
"${pytest[@]}" -n logical "${serial[@]/#/--ignore=}" || status=$?
"${pytest[@]}" "${serial[@]}" || status=$?
exit "$status"
