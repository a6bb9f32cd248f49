#!/usr/bin/env bash
# The one test command (README's "Development"; CI's .ci/run calls exactly this): from a
# clean clone it installs what the tests need and starts what they need, then runs them.
#   bash tests/run.sh [PYTEST ARGS...]
# - Debian's chromium for the browser tests, zsh and fish for the completion tests (apt, when absent);
# - a virtual environment with the project and its test extra (pip);
# - the pinned agent CLIs for tests/e2e (npm, into the git-ignored .agents/);
# - a throwaway PostgreSQL cluster for tests/sync (a Unix socket, no TCP port), stopped on exit;
# - the real MARM peer for the import test (pip, into a temporary venv, by the test itself);
# then mypy over marm/ and pytest. A part that cannot be had makes its tests skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
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
pip install -q -e '.[test]'
mypy
.ci/agents || true   # never fails the build: without the CLIs the e2e tests skip
.ci/postgres-stop    # a cluster a killed run left behind
.ci/postgres-start || true
if [ -f .ci/.pg-url ]; then
  export MARM_TEST_PG="$(cat .ci/.pg-url)"
  trap '.ci/postgres-stop' EXIT
fi
# The real MARM (marm-mcp-server from PyPI, ~90 packages, about two minutes) for the import
# test against a store it wrote; MARM_TEST_PEER=0 skips it.
export MARM_TEST_PEER="${MARM_TEST_PEER:-1}"
python -m pytest -q "$@"
