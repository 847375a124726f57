#!/usr/bin/env bash
# The paper's comparison on one GPU: the fixed-environment baseline, the adaptive fixed-pool
# baseline (RLVE-style, the paper's strongest) and SPADE trained from the same 4B-class model,
# each evaluated on the same suites, then `spade compare`.
# docs/evaluation.md ("The paper's experiments on one GPU") has the time and memory it is
# expected to take and how that was estimated. NOT YET RUN on a GPU; what is checked on the
# CPU development machine is the --dry-run mode (tests/eval/test_gpu_paper_recipe.py).
#
#   bash scripts/gpu_paper_recipe.sh MODEL [options] [-- extra `spade selfplay` flags]
#
#   MODEL                a local model folder (config.json inside) or a hub id (Qwen/Qwen3-4B);
#                        a hub id is downloaded once (network) and the runs use the local copy
#   --dry-run            validate everything without a GPU: arguments, both runs' configuration
#                        (`spade selfplay --check`; only what this machine lacks is tolerated),
#                        the evaluation suites and their options; print what would run; exit 0
#   --out DIR            output folder (default runs/paper-<date>): baseline/, adaptive/, spade/, compare/
#   --base NAME          base preset of both runs (default gpu)
#   --baseline NAME      the ablation preset laid on the base for the baseline run (default baseline)
#   --adaptive NAME      the preset laid on the base for the adaptive run (default adaptive; none: no such run)
#   --domain NAME        the domain both runs train on (default: the base preset's)
#   --iterations N       iterations of each run (default: the base preset's)
#   --eval-every N       evaluate during each run every N iterations, suite reasoning_gym (default 2; 0: off)
#   --rg-size N          final eval: questions per Reasoning-Gym task (default 10; 24 tasks)
#   --bfcl-size N        final eval: BFCL-v4 multi-turn entries per category (default 25; 4 categories)
#   --bfcl-categories L  final eval: comma-separated BFCL categories (default all four)
#   --max-model-len N    context of the evaluation server (default 40960, Qwen3's; a conversation
#                        past it fails that suite's evaluation: long_context ones reach 25 k tokens)
#   --rg-hard-size N     final eval, Table 1's RG columns: questions per hard-split task (default 8,
#                        the paper's; 100 tasks, the paper's sampling: temperature 0.6, 8,192 tokens)
#   --aime-k N           final eval: samples per AIME problem for Avg@k (default 32, the paper's)
#   --aime25-data D      AIME 2025 rows (problem, answer): a .jsonl/.parquet file or a Hub dataset id
#                        (default math-ai/aime25; fetched once into the Hub cache by the real run)
#   --aime26-data D      AIME 2026 rows, as above (no default: the column is not run without it)
#   --gpqa-data D        GPQA-Diamond rows (Question, Correct Answer, Incorrect Answer 1..3): a file or
#                        a Hub dataset id (default Idavidrein/gpqa, gpqa_diamond; gated on the Hub)
#   --lcb-data D         LiveCodeBench rows (code_generation_lite format): a file or a Hub dataset id
#                        (default livecodebench/code_generation_lite; the v6 problems are evaluated)
#   --paper-model NAME   the paper's rows `spade compare --paper` shows (default: nearest MODEL's scale)
#   --run-timeout S      seconds allowed per training run (default 7200)
#   --skip-install       use the active environment instead of installing into .venv-gpu
#
# Table 1's columns and what measures each: AIME25, AIME26 (aime25/aime26 suites, Avg@k with
# math-verify), GPQA-D (gpqa_diamond), LCB-v6 (livecodebench, programs run in the sandbox),
# RG-Math/Algo/Cog/Logic (reasoning_gym_hard). A column whose data cannot be read is skipped
# with its reason, and `spade compare --paper` names it as not run.
#
# Exit codes: 0 done (or dry run passed); 2 bad argument, invalid configuration or suite
# option; 3 this machine lacks something (no GPU, vLLM, the model); 4 a stage failed.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,51p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "gpu_paper_recipe: $2" >&2; exit "$1"; }
positive() {  # NAME VALUE [allow-zero]
  [[ $2 =~ ^[0-9]+$ ]] || die 2 "$1 takes a whole number, got '$2'"
  if [ "${3:-}" != zero ] && [ "$2" -lt 1 ]; then die 2 "$1 must be at least 1, got $2"; fi
}

MODEL="" DRY_RUN=0 OUT="" BASE=gpu BASELINE=baseline ADAPTIVE=adaptive DOMAIN="" ITERATIONS="" EVAL_EVERY=2
RG_SIZE=10 BFCL_SIZE=25 BFCL_CATEGORIES=base,miss_func,miss_param,long_context MAX_MODEL_LEN=40960
RUN_TIMEOUT=7200 SKIP_INSTALL=0 EXTRA=()
RG_HARD_SIZE=8 AIME_K=32 AIME25_DATA=math-ai/aime25 AIME26_DATA="" GPQA_DATA="" PAPER_MODEL="" LCB_DATA=livecodebench/code_generation_lite
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --dry-run|--check) DRY_RUN=1 ;;
    --out|--base|--baseline|--adaptive|--domain|--iterations|--eval-every|--rg-size|--bfcl-size|--bfcl-categories|--max-model-len|--run-timeout|\
    --rg-hard-size|--aime-k|--aime25-data|--aime26-data|--gpqa-data|--lcb-data|--paper-model)
      [ $# -ge 2 ] || die 2 "$1 needs a value"
      case "$1" in
        --out) OUT=$2 ;; --base) BASE=$2 ;; --baseline) BASELINE=$2 ;; --adaptive) ADAPTIVE=$2 ;; --domain) DOMAIN=$2 ;;
        --iterations) positive "$1" "$2"; ITERATIONS=$2 ;;
        --eval-every) positive "$1" "$2" zero; EVAL_EVERY=$2 ;;
        --rg-size) positive "$1" "$2"; RG_SIZE=$2 ;;
        --bfcl-size) positive "$1" "$2"; BFCL_SIZE=$2 ;;
        --bfcl-categories) [[ $2 =~ ^[a-z_]+(,[a-z_]+)*$ ]] || die 2 "--bfcl-categories takes names like base,miss_func, got '$2'"
          BFCL_CATEGORIES=$2 ;;
        --max-model-len) positive "$1" "$2"; MAX_MODEL_LEN=$2 ;;
        --run-timeout) positive "$1" "$2"; RUN_TIMEOUT=$2 ;;
        --rg-hard-size) positive "$1" "$2"; RG_HARD_SIZE=$2 ;;
        --aime-k) positive "$1" "$2"; AIME_K=$2 ;;
        --aime25-data) AIME25_DATA=$2 ;; --aime26-data) AIME26_DATA=$2 ;; --gpqa-data) GPQA_DATA=$2 ;;
        --paper-model) PAPER_MODEL=$2 ;; --lcb-data) LCB_DATA=$2 ;;
      esac
      shift ;;
    --skip-install) SKIP_INSTALL=1 ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) die 2 "unknown option $1 (see --help)" ;;
    *) [ -z "$MODEL" ] || die 2 "one MODEL only (got '$MODEL' and '$1')"; MODEL=$1 ;;
  esac
  shift
done
[ -n "$MODEL" ] || die 2 "name the model: a local folder or a hub id, e.g. Qwen/Qwen3-4B (see --help)"
if [ -e "$MODEL" ]; then
  [ -f "$MODEL/config.json" ] || die 2 "$MODEL is not a model folder (no config.json inside)"
  MODEL=$(cd "$MODEL" && pwd)
  MODEL_KIND=local
else
  [[ $MODEL =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$ ]] \
    || die 2 "$MODEL is neither an existing folder nor a hub id of the form owner/name"
  MODEL_KIND=hub
fi
OUT=${OUT:-runs/paper-$(date +%Y%m%d-%H%M%S)}
RG_SUITE=reasoning_gym BFCL_SUITE=bfcl

START=$(date +%s)
STAGE_START=$START
stage_done() {
  local now
  now=$(date +%s)
  printf 'gpu_paper_recipe: %-34s %6d s\n' "$1" "$((now - STAGE_START))"
  STAGE_START=$now
}

# --- this machine and its software ------------------------------------------------------
if [ "$DRY_RUN" = 1 ]; then
  command -v spade >/dev/null 2>&1 || die 3 "--dry-run uses the active environment, which has no 'spade' command"
  echo "gpu_paper_recipe: dry run: nothing is installed, downloaded, trained or served"
else
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 \
    || die 3 "no usable NVIDIA GPU (nvidia-smi finds none); --dry-run validates without one"
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  if [ "$SKIP_INSTALL" = 0 ]; then
    PY=${PYTHON:-python3}
    "$PY" -c 'import sys; raise SystemExit(sys.version_info < (3, 11))' 2>/dev/null \
      || die 3 "$PY is not Python 3.11 or newer (set PYTHON=/path/to/python3.11)"
    [ -x .venv-gpu/bin/python ] || "$PY" -m venv .venv-gpu
    . .venv-gpu/bin/activate
    python -m pip install -q --upgrade pip || die 3 "pip cannot reach PyPI (network needed for the first run)"
    # vLLM first, so pip keeps the CUDA torch it was built against (the range TRL 1.16 supports).
    python -m pip install -q "vllm>=0.22,<=0.31" || die 3 "installing vLLM failed"
    python -m pip install -q "trl==1.16.0" "transformers==5.24.0" \
      -e ./spade_core -e ./spade_sandbox -e "./spade_designer[transformers]" -e ./spade_trainer \
      -e ./spade_eval -e ./plugins/games -e "./plugins/tooluse[bfcl]" -e ./plugins/reasoning_gym \
      || die 3 "installing the SPADE packages next to vLLM failed (see pip's message above)"
    python -m pip install -q --no-deps bfcl-eval==2026.3.23 || die 3 "installing bfcl-eval failed"
  fi
  python -c 'import vllm' 2>/dev/null || die 3 "vllm is not importable in this environment"
  stage_done "machine and install"
fi
export TRL_EXPERIMENTAL_SILENCE=1 TOKENIZERS_PARALLELISM=false

# --- the model --------------------------------------------------------------------------
if [ "$MODEL_KIND" = hub ]; then
  if [ "$DRY_RUN" = 1 ]; then
    echo "gpu_paper_recipe: would download $MODEL from the hub once (huggingface_hub.snapshot_download)"
  else
    MODEL=$(HF_HUB_OFFLINE=0 python -c 'import sys; from huggingface_hub import snapshot_download; print(snapshot_download(sys.argv[1]))' "$MODEL") \
      || die 3 "downloading $MODEL failed (network and a valid hub id needed; or pass a local folder)"
    stage_done "model download"
  fi
fi
if [ "$DRY_RUN" = 0 ]; then  # benchmark data named by a Hub id: into the cache once (a failure skips its column)
  for data in "$AIME25_DATA" "$AIME26_DATA" "${GPQA_DATA:-Idavidrein/gpqa}" "$LCB_DATA"; do
    [ -n "$data" ] && [ ! -e "$data" ] || continue
    HF_HUB_OFFLINE=0 python -c 'import sys, datasets; datasets.load_dataset(sys.argv[1], "gpqa_diamond" if sys.argv[1] == "Idavidrein/gpqa" else None)' "$data" \
      >/dev/null 2>&1 || echo "gpu_paper_recipe: could not fetch $data from the Hub (its column will say why it is skipped)"
  done
fi
export HF_HUB_OFFLINE=1

# --- both runs' configuration ------------------------------------------------------------
overrides=("model.source=\"$MODEL\"" "eval.every=$EVAL_EVERY" "eval.suite=\"$RG_SUITE\"" "eval.size=2")
[ -z "$DOMAIN" ] || overrides+=("domain=\"$DOMAIN\"")
[ -z "$ITERATIONS" ] || overrides+=("iterations=$ITERATIONS")
common=()
for o in "${overrides[@]}"; do common+=(--set "$o"); done
baseline_cmd=(spade selfplay --preset "$BASE" --preset "$BASELINE" --run-dir "$OUT/baseline" "${common[@]}" "${EXTRA[@]}")
spade_cmd=(spade selfplay --preset "$BASE" --run-dir "$OUT/spade" "${common[@]}" "${EXTRA[@]}")
adaptive_cmd=(spade selfplay --preset "$BASE" --preset "$ADAPTIVE" --run-dir "$OUT/adaptive" "${common[@]}" "${EXTRA[@]}")
RUNS=(baseline spade)
[ "$ADAPTIVE" = none ] || RUNS=(baseline adaptive spade)

check_run() {  # NAME COMMAND...
  local name=$1 rc=0
  shift
  "$@" --check || rc=$?
  if [ "$rc" = 3 ] && [ "$DRY_RUN" = 1 ]; then
    echo "gpu_paper_recipe: $name: configuration valid; the 'missing' lines above are what a GPU machine provides"
  elif [ "$rc" != 0 ]; then
    [ "$rc" = 3 ] && die 3 "$name: this machine lacks what the run needs (the 'missing' lines above)"
    die 2 "$name: the configuration does not validate (see above)"
  fi
}
# The final evaluation measures the newest checkpoint: it must be the last iteration's.
python - "$BASE" "$BASELINE" "${overrides[@]}" <<'PYEOF' || die 2 "the runs' configuration does not validate (see above)"
import sys

from spade_trainer.config import load_selfplay_config

base, ablation, *overrides = sys.argv[1:]
for presets in ([base, ablation], [base]):
    try:
        c = load_selfplay_config(preset=presets, overrides=overrides)
    except Exception as exc:  # the configuration's own message says what is wrong
        sys.exit(f"gpu_paper_recipe: {'+'.join(presets)}: {exc}")
    if c.iterations % c.checkpoint_every:
        sys.exit(f"gpu_paper_recipe: {'+'.join(presets)}: {c.iterations} iterations with a checkpoint every "
                 f"{c.checkpoint_every}: the last iteration's weights would never be saved (choose --iterations "
                 f"as a multiple of {c.checkpoint_every}, or add -- --set checkpoint_every=N)")
PYEOF
# --- the evaluation suites: installed, their data present, the options accepted -----------
python - "$RG_SIZE" "$BFCL_SIZE" "$BFCL_CATEGORIES" <<'PYEOF' || die 2 "the evaluation suites are not ready (see above)"
import sys

from spade_core.evaluation import SuiteContext
from spade_core.plugins import get_plugins

runs = {"reasoning_gym": (int(sys.argv[1]), {}), "bfcl": (int(sys.argv[2]), {"categories": sys.argv[3]})}
suites = get_plugins().eval_suites()
for name, (size, options) in runs.items():
    if name not in suites:
        sys.exit(f"gpu_paper_recipe: suite {name!r} is not installed (installed: {', '.join(sorted(suites))})")
    try:
        items = suites[name].items(SuiteContext(None, None), size=size, seed=0, **options)
    except Exception as exc:  # the suite's own message names the bad option or the missing data
        sys.exit(f"gpu_paper_recipe: suite {name}: {exc}")
    groups = sorted({i.group.split("/")[0] for i in items})
    print(f"gpu_paper_recipe: suite {name}: {len(items)} episodes in {len(groups)} groups ({', '.join(groups)})")
PYEOF
# --- Table 1's columns: which suite measures each, and whether its data is here ---------------
PLAN=$(mktemp)
trap 'rm -f "$PLAN"' EXIT
python - "$PLAN" "$DRY_RUN" "$RG_HARD_SIZE" "$AIME_K" "$AIME25_DATA" "$AIME26_DATA" "$GPQA_DATA" "$LCB_DATA" <<'PYEOF' || die 2 "the Table 1 suites are not ready (see above)"
import os
import shlex
import sys

from spade_core.evaluation import SuiteContext
from spade_core.plugins import get_plugins

plan, dry, rg_size, k = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4])
aime25, aime26, gpqa, lcb = sys.argv[5:]
suites = get_plugins().eval_suites()
runs = []  # (columns, suite, size, options)
runs.append((["RG-Math", "RG-Algo", "RG-Cog", "RG-Logic"], "reasoning_gym_hard", rg_size, {}))
runs.append((["AIME25"], "aime25", k, {"data": aime25} if aime25 else None))
runs.append((["AIME26"], "aime26", k, {"data": aime26} if aime26 else None))
runs.append((["GPQA-D"], "gpqa_diamond", 1, {"data": gpqa} if gpqa else {}))
runs.append((["LCB-v6"], "livecodebench", 1, {"data": lcb, "release": "v6"} if lcb else None))
with open(plan, "w") as out:
    for columns, name, size, options in runs:
        what = f"Table 1 column{'s' if len(columns) > 1 else ''} {', '.join(columns)}"
        if name not in suites:
            sys.exit(f"gpu_paper_recipe: suite {name!r} is not installed (installed: {', '.join(sorted(suites))})")
        if options is None:
            flag = {"livecodebench": "lcb"}.get(name, name)
            print(f"gpu_paper_recipe: {what}: not run (no data: pass --{flag}-data FILE or a Hub dataset id)")
            continue
        args = f"{name} --size {size}" + "".join(f" -o {key}={shlex.quote(str(v))}" for key, v in options.items())
        try:
            items = suites[name].items(SuiteContext(None, None), size=1, seed=0, **options,
                                       **({"limit": 1} if name != "reasoning_gym_hard" else {}))
        except Exception as exc:  # the suite's own message says what is missing
            hub = options.get("data") or "its default Hub dataset"
            if dry and not os.path.exists(options.get("data", "")):
                print(f"gpu_paper_recipe: {what}: spade eval --suite {args} (data: {hub}, not in this machine's "
                      "cache; the real run fetches it once and skips the column if it cannot)")
                out.write(args + "\n")
            else:
                print(f"gpu_paper_recipe: {what}: not run ({exc})")
            continue
        detail = f"{len({i.label for i in items})} tasks" if name == "reasoning_gym_hard" else "data readable"
        print(f"gpu_paper_recipe: {what}: spade eval --suite {args} ({detail})")
        out.write(args + "\n")
PYEOF
check_run baseline "${baseline_cmd[@]}"
[ "$ADAPTIVE" = none ] || check_run adaptive "${adaptive_cmd[@]}"
check_run spade "${spade_cmd[@]}"

stage_done "checks"

final_eval=("$RG_SUITE --size $RG_SIZE --max-new-tokens 512" "$BFCL_SUITE --size $BFCL_SIZE -o categories=$BFCL_CATEGORIES --max-new-tokens 512")
while IFS= read -r line; do final_eval+=("$line"); done < "$PLAN"
if [ -z "$PAPER_MODEL" ]; then
  PAPER_MODEL=$(python -c 'import sys; from spade_eval.paper import model_scale; s = model_scale(sys.argv[1].rsplit("/", 1)[-1]); print(f"{s:g}B" if s else "")' "$MODEL")
fi
compare_cmd=(spade compare)
for run in "${RUNS[@]}"; do compare_cmd+=("$OUT/$run"); done
compare_cmd+=(--baseline baseline --out "$OUT/compare" --paper)
[ -z "$PAPER_MODEL" ] || compare_cmd+=(--paper-model "$PAPER_MODEL")
if [ "$DRY_RUN" = 1 ]; then
  echo "gpu_paper_recipe: would run, in order:"
  printf ' %q' "${baseline_cmd[@]}"; echo
  [ "$ADAPTIVE" = none ] || { printf ' %q' "${adaptive_cmd[@]}"; echo; }
  printf ' %q' "${spade_cmd[@]}"; echo
  for run in "${RUNS[@]}"; do
    echo "  vllm serve <newest checkpoint of $OUT/$run> --served-model-name $run --max-model-len $MAX_MODEL_LEN  (loopback, until its evals end)"
    for e in "${final_eval[@]}"; do
      echo "  spade eval --suite $e --policy openai:http://127.0.0.1:<port>/v1#$run --run $OUT/$run"
    done
  done
  printf ' %q' "${compare_cmd[@]}"; echo
  echo "gpu_paper_recipe: the paper's ablations, each a run of its own laid on the base (not run by this script):"
  python -c 'from spade_trainer.config import ablation_names; print("\n".join(f"  spade selfplay --preset BASE --preset {n}" for n in ablation_names() if n not in ("baseline", "adaptive")))'
  echo "gpu_paper_recipe: dry run passed: arguments, both configurations and the suites validate"
  exit 0
fi

# --- train --------------------------------------------------------------------------------
timeout "$RUN_TIMEOUT" "${baseline_cmd[@]}" || die 4 "the baseline run failed or ran past $RUN_TIMEOUT s ($OUT/baseline)"
stage_done "train baseline"
if [ "$ADAPTIVE" != none ]; then
  timeout "$RUN_TIMEOUT" "${adaptive_cmd[@]}" || die 4 "the adaptive run failed or ran past $RUN_TIMEOUT s ($OUT/adaptive)"
  stage_done "train adaptive"
fi
timeout "$RUN_TIMEOUT" "${spade_cmd[@]}" || die 4 "the SPADE run failed or ran past $RUN_TIMEOUT s ($OUT/spade)"
stage_done "train spade"

# --- evaluate each run's final weights behind vLLM's OpenAI-compatible server ---------------
PORT=${PORT:-8011}
SERVER=""
stop_server() { if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=""; fi; }
trap 'stop_server; rm -f "$PLAN"' EXIT
for run in "${RUNS[@]}"; do
  weights=$(python -c 'import sys; from spade_eval.policy import parse_policy; print(parse_policy("run:" + sys.argv[1]).options["model"])' "$OUT/$run") \
    || die 4 "$OUT/$run has no checkpoint with weights to evaluate"
  vllm serve "$weights" --served-model-name "$run" --host 127.0.0.1 --port "$PORT" \
    --max-model-len "$MAX_MODEL_LEN" --gpu-memory-utilization 0.85 > "$OUT/$run/vllm_serve.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 180); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break
    kill -0 "$SERVER" 2>/dev/null || die 4 "vllm serve of $weights exited (see $OUT/$run/vllm_serve.log)"
    sleep 5
  done
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null || die 4 "vllm serve did not come up in 15 minutes ($OUT/$run/vllm_serve.log)"
  for e in "${final_eval[@]}"; do
    # shellcheck disable=SC2086  # "$e" is the suite and its options, split into words
    spade eval --suite $e --policy "openai:http://127.0.0.1:$PORT/v1#$run" --concurrency 64 \
      --run "$OUT/$run" || die 4 "spade eval --suite $e of $run failed"
  done
  stop_server
  stage_done "evaluate $run"
done

"${compare_cmd[@]}" || die 4 "spade compare failed"
stage_done "compare"
echo "gpu_paper_recipe: finished in $(( $(date +%s) - START )) s; report in $OUT/compare/compare.html"
