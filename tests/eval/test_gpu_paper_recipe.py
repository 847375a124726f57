"""scripts/gpu_paper_recipe.sh, checked on a CPU: its --dry-run validates both runs'
configuration (through `spade selfplay --check`), the evaluation suites and their sizes,
and prints what would run; bad arguments and configurations stop it early with a named
reason. Nothing here trains, serves or evaluates on a GPU."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_paper_recipe.sh"


def recipe(tmp_path: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SPADE_HOME=str(tmp_path / "home"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_the_dry_run_validates_both_runs_and_the_suites_and_prints_the_plan(tmp_path: Path) -> None:
    out = tmp_path / "paper"
    r = recipe(tmp_path, "Qwen/Qwen3-4B", "--dry-run", "--out", str(out), "--domain", "tooluse",
               "--iterations", "3", "--rg-size", "1", "--bfcl-size", "2", "--bfcl-categories", "base,long_context")
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout
    assert "spade selfplay --check (preset gpu+baseline)" in text and "spade selfplay --check (preset gpu)" in text
    assert "spade selfplay --check (preset gpu+adaptive)" in text  # the adaptive fixed-pool baseline (RLVE-style)
    assert len(re.findall(r"3 \(checkpoint every 3\)", text)) == 3
    assert "none: fixed pool" in text  # the baseline designs nothing
    assert "baseline: configuration valid" in text and "spade: configuration valid" in text
    assert "adaptive: configuration valid" in text
    for ablation in ("no_corpus", "no_memory", "solve_rate_reward", "learning_potential", "no_designer_training"):
        assert f"spade selfplay --preset BASE --preset {ablation}" in text
    assert "suite reasoning_gym: 24 episodes in 4 groups" in text
    assert "suite bfcl: 4 episodes in 2 groups (multi_turn_base, multi_turn_long_context)" in text
    assert f"spade compare {out}/baseline {out}/adaptive {out}/spade --baseline baseline" in text
    assert "--suite bfcl --size 2 -o categories=base,long_context" in text and "--max-model-len 40960" in text and "--suite reasoning_gym --size 1" in text
    assert "dry run passed" in text and not out.exists()  # nothing was written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "name the model"),
        (("Qwen/Qwen3-4B", "--iterations", "0"), "--iterations must be at least 1"),
        (("Qwen/Qwen3-4B", "--bfcl-size", "many"), "--bfcl-size takes a whole number"),
        (("Qwen/Qwen3-4B", "--colour"), "unknown option --colour"),
        (("not/a/hub/id",), "neither an existing folder nor a hub id"),
        (("Qwen/Qwen3-4B", "--dry-run", "--iterations", "5"), "the last iteration's weights would never be saved"),
        (("Qwen/Qwen3-4B", "--dry-run", "--baseline", "no_such_ablation"), "unknown preset 'no_such_ablation'"),
        (("Qwen/Qwen3-4B", "--dry-run", "--bfcl-categories", "base,poetry"), "unknown BFCL multi-turn category poetry"),
        (("Qwen/Qwen3-4B", "--max-model-len", "lots"), "--max-model-len takes a whole number"),
    ],
)
def test_bad_arguments_stop_it_with_exit_2_and_the_reason(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    r = recipe(tmp_path, *args)
    assert r.returncode == 2 and message in r.stderr, r.stdout + r.stderr


def test_a_folder_that_is_no_model_is_named(tmp_path: Path) -> None:
    (tmp_path / "weights").mkdir()
    r = recipe(tmp_path, str(tmp_path / "weights"), "--dry-run")
    assert r.returncode == 2 and "is not a model folder (no config.json inside)" in r.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="checks a machine without an NVIDIA GPU")
def test_without_a_gpu_the_real_run_stops_at_once_pointing_to_the_dry_run(tmp_path: Path) -> None:
    r = recipe(tmp_path, "Qwen/Qwen3-4B", timeout=60)
    assert r.returncode == 3 and "no usable NVIDIA GPU" in r.stderr and "--dry-run" in r.stderr


@pytest.mark.slow
def test_the_dry_run_lists_every_table_1_column_and_the_commands_for_it(tmp_path: Path) -> None:
    aime26 = tmp_path / "aime26.jsonl"
    aime26.write_text('{"problem": "What is 2 + 3?", "answer": "5"}\n')
    r = recipe(tmp_path, "Qwen/Qwen3-8B", "--dry-run", "--out", str(tmp_path / "paper"), "--iterations", "3",
               "--domain", "tooluse", "--rg-size", "1", "--aime-k", "4", "--aime26-data", str(aime26))
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout
    for column in ("AIME25", "AIME26", "GPQA-D", "LCB-v6", "RG-Math, RG-Algo, RG-Cog, RG-Logic"):
        assert re.search(rf"Table 1 columns? {re.escape(column)}: ", text), column
    assert "--suite livecodebench --size 1 -o data=livecodebench/code_generation_lite -o release=v6" in text
    assert "spade eval --suite reasoning_gym_hard --size 8 (100 tasks)" in text
    assert f"--suite aime26 --size 4 -o data={aime26} --policy openai:http://127.0.0.1:<port>/v1#spade" in text
    assert "--suite gpqa_diamond --size 1 --policy" in text and "--suite aime25 --size 4" in text
    assert "--paper --paper-model 8B" in text
