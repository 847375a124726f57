#!/usr/bin/env bash
# Set up (idempotent) and run the self-play quickstart on CPU with the embedded model: the
# model designs edits of the higher_lower game family and learns to play them, measured on
# held-out instances beside a learning-rate-0 control and the best constant policy
# (runs/quickstart/learning.json; docs/learning.md). Then the report, whose first figure is
# that curve, the verdict, and how long each part took. Extra arguments go to
# `spade selfplay` (say --run-dir DIR, or --set iterations=6).
set -euo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
bash scripts/setup.sh
. .venv/bin/activate
SETUP_DONE=$(date +%s)
RUN_DIR=runs/quickstart
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = "--run-dir" ] && [ $((i + 1)) -lt ${#args[@]} ]; then RUN_DIR=${args[$((i + 1))]}; fi
done
spade selfplay --preset quickstart "$@"
RUN_DONE=$(date +%s)
spade report "$RUN_DIR"
python - "$RUN_DIR" <<'PY'
import json
import sys
from pathlib import Path

data = json.loads((Path(sys.argv[1]) / "learning.json").read_text(encoding="utf-8"))
first, last, v = data["trained"][0], data["trained"][-1], data.get("verdict") or {}
control = data.get("control") or []
ci = lambda e: f"{e['mean']:.3f} [{e['interval'][0]:.3f}, {e['interval'][1]:.3f}]"  # noqa: E731
print(f"quickstart: held-out success {ci(first)} before training -> {ci(last)} after {last['update']} updates; "
      f"control (lr 0) {control[0]['mean']:.3f} -> {control[-1]['mean']:.3f}; best constant {data['constant']:.3f}")
print(f"quickstart: rose {v.get('rose')}, above the constant {v.get('above_constant')}, "
      f"control rose {v.get('control_rose')}: {v.get('learnability', '-')}")
PY
END=$(date +%s)
echo "quickstart: setup $((SETUP_DONE - START)) s, self-play $((RUN_DONE - SETUP_DONE)) s, report $((END - RUN_DONE)) s," \
  "in all $((END - START)) s (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "quickstart: report in $RUN_DIR/report/report.html"
