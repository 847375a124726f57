#!/usr/bin/env bash
# Create .venv-verifiers (verifiers 0.4 and integrations/verifiers, installed editable) and
# print the line that points the tests at it:
#
#   eval "$(bash scripts/setup-verifiers.sh)"     # then: pytest tests/integrations
#
# A virtualenv of its own: verifiers 0.4.0 pins mcp==2.0.0, and spade-serve's openenv 0.10
# needs fastmcp 3, which needs mcp<2 (docs/verifiers.md). Idempotent; everything but the
# final `export` line goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv-verifiers/bin/python ]; then
  "$PY" -m venv .venv-verifiers >&2
fi
.venv-verifiers/bin/python -m pip install -q --upgrade pip >&2
.venv-verifiers/bin/python -m pip install -q "verifiers==0.4.0" httpx -e integrations/verifiers >&2
echo "export SPADE_VERIFIERS_PYTHON=$PWD/.venv-verifiers/bin/python"
