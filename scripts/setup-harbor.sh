#!/usr/bin/env bash
# Create .venv-harbor (the `harbor` package, which needs Python >= 3.12) and print the line
# that points tests/core/test_harbor.py at it:
#
#   eval "$(bash scripts/setup-harbor.sh)"     # then: pytest tests/core/test_harbor.py
#
# SPADE itself runs on 3.11, so harbor gets a virtualenv of its own, made from the first
# Python >= 3.12 found: $HARBOR_BASE_PYTHON, then python3.12 / python3.13 on PATH, then the
# versions pyenv keeps. When there is none, it says so on stderr and prints nothing, and the
# harbor checks skip saying why (under CI=true they fail instead). Idempotent; everything but
# the final `export` line goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
HARBOR_VERSION=0.26.0

new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }

find_base() {
  local candidate root
  for candidate in "${HARBOR_BASE_PYTHON:-}" "$(command -v python3.12 || true)" "$(command -v python3.13 || true)"; do
    if [ -n "$candidate" ] && new_enough "$candidate"; then echo "$candidate"; return 0; fi
  done
  root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
  for candidate in "$root"/versions/3.12*/bin/python "$root"/versions/3.13*/bin/python; do
    if [ -x "$candidate" ] && new_enough "$candidate"; then echo "$candidate"; return 0; fi
  done
  return 1
}

if [ ! -x .venv-harbor/bin/python ]; then
  if ! base=$(find_base); then
    echo "setup-harbor: no Python >= 3.12 here (set HARBOR_BASE_PYTHON to one); the harbor checks will skip (and fail under CI=true)" >&2
    exit 0
  fi
  echo "setup-harbor: making .venv-harbor from $("$base" --version 2>&1)" >&2
  "$base" -m venv .venv-harbor >&2
fi
.venv-harbor/bin/python -m pip install -q --upgrade pip >&2
.venv-harbor/bin/python -m pip install -q "harbor==$HARBOR_VERSION" >&2
echo "export SPADE_HARBOR_PYTHON=$PWD/.venv-harbor/bin/python"
