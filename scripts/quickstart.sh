#!/usr/bin/env bash
# Set up (idempotent) and run the self-play quickstart on CPU with the embedded model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
exec spade selfplay --preset quickstart "$@"
