#!/usr/bin/env bash
# The one test command (README's "Development"; CI's .ci/run calls exactly this): from a
# clean clone it installs what the tests need and starts what they need, then runs them.
#   bash tests/run.sh [PYTEST ARGS...]
# - Debian's chromium for the browser tests, zsh and fish for the completion tests (apt, when absent);
# - a virtual environment with the project and its test extra (pip);
# - the pinned agent CLIs for tests/e2e (npm, into the git-ignored .agents/);
# - a throwaway PostgreSQL cluster for tests/sync (a Unix socket, no TCP port), stopped on exit;
# - the tests' temporary files on a RAM file system (/dev/shm) when there is one;
# - the real MARM peer for the import test (pip, into a venv in the git-ignored .peer/, kept for
#   the next run; when missing, in the background from the start, since it takes longer than
#   any test: tests/peer.py; the test waits for it);
# then mypy over marm/ and pytest, in parallel (pytest-xdist, one worker per core).
# A part that cannot be had makes its tests skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
peer_pid=""
pg_started=""
cleanup() {
  # an install still running is stopped; without its rc file the next run starts it afresh
  if [ -n "$peer_pid" ]; then kill -- "-$peer_pid" 2>/dev/null || true; wait "$peer_pid" 2>/dev/null || true; fi
  [ -n "$pg_started" ] && .ci/postgres-stop
  return 0
}
trap cleanup EXIT
# The real MARM (marm-mcp-server from PyPI, ~90 packages, about two minutes) for the import
# test against a store it wrote; MARM_TEST_PEER=0 skips it. Installed once into .peer/ (a
# failed or unfinished install, or another version, is installed again).
export MARM_TEST_PEER="${MARM_TEST_PEER:-1}"
if [ "$MARM_TEST_PEER" = 1 ] && [ -z "${MARM_TEST_PEER_BIN:-}" ]; then
  MARM_TEST_PEER_DIR="${MARM_TEST_PEER_DIR:-$PWD/.peer}"   # another checkout's install may be named
  export MARM_TEST_PEER_DIR
  if ! python3 tests/peer.py --ready "$MARM_TEST_PEER_DIR"; then
    rm -rf "$MARM_TEST_PEER_DIR"
    setsid python3 tests/peer.py "$MARM_TEST_PEER_DIR" &   # its own process group: the trap ends pip too
    peer_pid=$!
  fi
fi
missing=""
for tool in chromium zsh fish; do command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"; done
if [ -n "$missing" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo -n"
    { $SUDO apt-get update -q && $SUDO apt-get install -y -q $missing; } >/dev/null 2>&1 \
      || echo "tests/run.sh: could not install$missing with apt; their tests will skip" >&2
  else
    echo "tests/run.sh: no apt-get to install$missing; their tests will skip" >&2
  fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
# pip only when pyproject.toml (or the Python) changed since this venv's last install: the
# install is editable, so code changes need none, and pip's resolve took 15 s of every run.
# A hand-broken venv: rm .venv/.installed-for (or the venv) and run again.
want="$(python -c 'import hashlib, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest(), sys.version.split()[0])')"
if [ "$(cat .venv/.installed-for 2>/dev/null)" != "$want" ]; then
  pip install -q -e '.[test]'
  echo "$want" > .venv/.installed-for
fi
mypy
.ci/agents || true   # never fails the build: without the CLIs the e2e tests skip
# The tests' temporary files (every test's stores, the PostgreSQL cluster, the browser's
# profile) on a RAM file system when there is one (/dev/shm): what they check does not
# depend on the disk, and on a busy disk the syncs of SQLite's many small stores doubled
# some tests' time. MARM_TEST_TMPDIR names another place; a TMPDIR the caller set is kept.
if [ -n "${MARM_TEST_TMPDIR:-}" ]; then
  export TMPDIR="$MARM_TEST_TMPDIR"
elif [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR="/dev/shm/marm-tests-$(id -u)"
fi
if [ -n "${TMPDIR:-}" ]; then
  mkdir -p "$TMPDIR"
  chmod 711 "$TMPDIR"   # the cluster's own folder in it belongs to the postgres user
fi
# Byte-code written and reused, as a pip install has it: with PYTHONDONTWRITEBYTECODE (set
# in some environments) each xdist worker rewrote the asserts of every test module at each
# collection (10 s instead of 3.5 s here) and every marm process compiled again the modules
# it imports that had no cached byte-code (sync, view, importers).
unset PYTHONDONTWRITEBYTECODE
.ci/postgres-stop    # a cluster a killed run left behind
.ci/postgres-start || true
if [ -f .ci/.pg-url ]; then
  export MARM_TEST_PG="$(cat .ci/.pg-url)"
  pg_started=1
fi
python -m pytest -q -n auto --dist worksteal "$@"
