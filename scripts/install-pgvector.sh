#!/usr/bin/env bash
# Make `CREATE EXTENSION vector` work in the system PostgreSQL (Debian bookworm).
# pgvector is not packaged for bookworm, so we build it from Debian trixie's
# *source* package against postgresql-server-dev-$PG_MAJOR.
#
# - Idempotent: exits immediately if vector.control + vector.so are installed.
# - Never enables a trixie binary repo: the trixie deb-src entry lives only in a
#   throw-away apt state directory (own sources.list, lists and cache), so the
#   system apt configuration and package lists are never modified.
# - Uses the same mirror host as the already configured bookworm sources.
# - Needs no stdin; safe with CI=true.
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PGVECTOR_SUITE="${PGVECTOR_SUITE:-trixie}"
PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config"
export DEBIAN_FRONTEND=noninteractive
exec </dev/null

log() { echo "[install-pgvector] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi

# --- 1. make sure the cluster is running ------------------------------------
if ! pg_isready -q -h 127.0.0.1; then
  log "PostgreSQL not ready, starting cluster ${PG_MAJOR}/main"
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$PG_MAJOR" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 && break; sleep 1; done
  pg_isready -q -h 127.0.0.1 || die "PostgreSQL did not become ready"
fi

# --- 2. already installed? ----------------------------------------------------
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found (is postgresql-client-${PG_MAJOR} installed?)"
SHAREDIR="$("$PG_CONFIG" --sharedir)"
PKGLIBDIR="$("$PG_CONFIG" --pkglibdir)"
if [ -f "$SHAREDIR/extension/vector.control" ] && [ -f "$PKGLIBDIR/vector.so" ]; then
  log "pgvector already installed ($(sed -n "s/^default_version = '\(.*\)'/\1/p" "$SHAREDIR/extension/vector.control"))"
  exit 0
fi

# --- 3. build dependencies (apt-get update only if needed) -------------------
APT_Q=(-y -qq -o Dpkg::Use-Pty=0 -o Dpkg::Options::=--force-confold)
BUILD_DEPS=("postgresql-server-dev-${PG_MAJOR}" build-essential dpkg-dev)
missing=()
for p in "${BUILD_DEPS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  need_update=0
  for p in "${missing[@]}"; do
    cand="$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')"
    if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then need_update=1; fi
  done
  if [ "$need_update" = 1 ]; then
    log "apt-get update"
    $SUDO apt-get -qq update
  fi
  if ! $SUDO apt-get install "${APT_Q[@]}" --no-install-recommends "${missing[@]}" >/dev/null; then
    log "install failed, retrying after apt-get update"
    $SUDO apt-get -qq update
    $SUDO apt-get install "${APT_Q[@]}" --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# --- 4. find the configured Debian mirror ------------------------------------
SYS_CODENAME="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
[ -n "$SYS_CODENAME" ] || die "cannot determine VERSION_CODENAME"
MIRROR=""
shopt -s nullglob
# deb822 *.sources: first stanza with Types: deb and Suites containing $SYS_CODENAME
for f in /etc/apt/sources.list.d/*.sources; do
  MIRROR="$(awk -v suite="$SYS_CODENAME" '
    BEGIN { RS=""; FS="\n" }
    {
      types=""; uris=""; suites=""; enabled="yes"
      for (i = 1; i <= NF; i++) {
        line = $i
        if (line ~ /^[ \t]*#/) continue
        if (tolower(line) ~ /^types:/)   { sub(/^[^:]*:[ \t]*/, "", line); types = " " line " " }
        if (tolower(line) ~ /^uris:/)    { sub(/^[^:]*:[ \t]*/, "", line); uris = line }
        if (tolower(line) ~ /^suites:/)  { sub(/^[^:]*:[ \t]*/, "", line); suites = " " line " " }
        if (tolower(line) ~ /^enabled:/) { sub(/^[^:]*:[ \t]*/, "", line); enabled = tolower(line) }
      }
      if (enabled != "no" && types ~ / deb / && suites ~ (" " suite " ") && uris != "") {
        split(uris, u, /[ \t]+/); print u[1]; exit
      }
    }' "$f")"
  [ -n "$MIRROR" ] && break
done
# one-line format: deb [opts] URI suite components...
if [ -z "$MIRROR" ]; then
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    MIRROR="$(sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
      awk -v suite="$SYS_CODENAME" '$1 == "deb" && $3 == suite { print $2; exit }')"
    [ -n "$MIRROR" ] && break
  done
fi
shopt -u nullglob
[ -n "$MIRROR" ] || die "no configured apt source for suite '$SYS_CODENAME' found"
log "using mirror $MIRROR (deb-src $PGVECTOR_SUITE, isolated apt state)"

# --- 5. fetch the trixie source package in an isolated apt state --------------
WORK="$(mktemp -d /tmp/pgvector-build.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/apt/sources.list.d" "$WORK/src"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SIGNED_BY=""
[ -f "$KEYRING" ] && SIGNED_BY="[signed-by=$KEYRING] "
echo "deb-src ${SIGNED_BY}${MIRROR} ${PGVECTOR_SUITE} main" > "$WORK/apt/sources.list"
APT_ISO=(
  -o "Dir::Etc::SourceList=$WORK/apt/sources.list"
  -o "Dir::Etc::SourceParts=$WORK/apt/sources.list.d"
  -o "Dir::State::Lists=$WORK/apt/lists"
  -o "Dir::Cache=$WORK/apt/cache"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=root"   # temp dir is root-only; avoids the "unsandboxed" warning
)
apt-get -qq "${APT_ISO[@]}" update
(cd "$WORK/src" && apt-get -qq "${APT_ISO[@]}" source --download-only pgvector) >/dev/null
DSC="$(ls "$WORK"/src/pgvector_*.dsc 2>/dev/null | head -n1)"
[ -n "$DSC" ] || die "pgvector source package not downloaded"
log "building $(basename "$DSC" .dsc)"
(cd "$WORK/src" && dpkg-source --no-check -x "$DSC" build) >/dev/null

# --- 6. build & install --------------------------------------------------------
# OPTFLAGS="": portable build, no -march=native (Debian's no-native patch does the same).
make -s -C "$WORK/src/build" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" -j"$(nproc)" >/dev/null
$SUDO make -s -C "$WORK/src/build" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" install >/dev/null

[ -f "$SHAREDIR/extension/vector.control" ] && [ -f "$PKGLIBDIR/vector.so" ] \
  || die "build finished but vector.control / vector.so not installed"
log "pgvector $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$SHAREDIR/extension/vector.control") installed into PostgreSQL ${PG_MAJOR}"
