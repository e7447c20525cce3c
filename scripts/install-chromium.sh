#!/usr/bin/env bash
# Install Debian's Chromium and ChromeDriver for the inspector's browser test
# (tests/test_ui_browser.py). Browser downloads (Playwright's, Selenium Manager's) do not work
# here; Debian's packages do. Idempotent: exits at once when both are on PATH. Needs root (or
# passwordless sudo) for apt-get; needs no stdin.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
exec </dev/null

log() { echo "[install-chromium] $*" >&2; }

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  log "chromium and chromedriver already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi
if ! $SUDO apt-get install -y -q chromium chromium-driver >/dev/null; then
  log "apt-get install failed; refreshing the package lists and trying again"
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q chromium chromium-driver >/dev/null
fi
command -v chromium >/dev/null && command -v chromedriver >/dev/null || {
  log "ERROR: chromium or chromedriver is still missing"
  exit 1
}
log "installed $(chromium --version 2>/dev/null | head -1)"
