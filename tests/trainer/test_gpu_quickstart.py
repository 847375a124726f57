"""The GPU quickstart, checked on a CPU: the `gpu` preset validates through the same path a
run takes and plans what the issue asks for (vLLM colocated, bf16, a real model); the
script stops early and clearly on a machine without what it needs; `--check` names what is
missing. Nothing here runs the GPU path itself."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from spade_trainer.config import load_selfplay_config
from spade_trainer.errors import ConfigError, TrainerError
from spade_trainer.plan import machine_problems, plan_run
from spade_trainer.timings import read_times, times_table

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_quickstart.sh"


def test_the_gpu_preset_plans_vllm_generation_and_a_bf16_update_on_cuda() -> None:
    plan = plan_run(load_selfplay_config(preset="gpu"))
    cfg = plan.config
    assert (cfg.model.source, cfg.model.device, cfg.model.dtype) == ("embedded", "cuda", "bfloat16")
    assert cfg.generation.backend == "vllm" and cfg.generation.vllm_mode == "colocate"
    assert plan.vllm is not None and plan.vllm.mode == "colocate"
    assert plan.vllm.gpu_memory_utilization == cfg.generation.vllm_gpu_memory_utilization
    assert plan.activation_checkpointing is True  # on a GPU: memory
    assert cfg.iterations == 6 and cfg.checkpoint_every == 3
    assert plan.update.learning_rate == cfg.optim.learning_rate
    assert plan.update.micro_batch == cfg.optim.micro_batch


@pytest.mark.parametrize("preset", ["quickstart", "tiny"])
def test_a_cpu_preset_plans_transformers_generation_without_recomputation(preset: str) -> None:
    plan = plan_run(load_selfplay_config(preset=preset))
    assert plan.vllm is None and plan.activation_checkpointing is False
    rows = dict(plan.rows())
    assert f"lr {plan.update.learning_rate:g}" in rows["update"]


def test_a_designer_table_the_designer_rejects_fails_the_plan() -> None:
    cfg = load_selfplay_config(preset="gpu", overrides=["designer.no_such_option=1"])
    with pytest.raises(ConfigError, match=r"designer\.no_such_option"):
        plan_run(cfg)


@pytest.mark.parametrize(("override", "says"), [
    ("designer.backend_options.temprature=1", r"llm backend 'transformers' \(plugin '\w+'\) has no option 'temprature'"),
    ("designer.corpus_options.words=3", r"corpus 'pydocs' \(plugin '\w+'\) has no option 'words'"),
])
def test_a_plugin_option_the_plugin_does_not_take_fails_the_plan(override: str, says: str) -> None:
    with pytest.raises(ConfigError, match=r"\[selfplay\.designer\]: " + says):
        plan_run(load_selfplay_config(preset="tiny", overrides=[override]))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without a GPU lacks")
def test_a_cpu_machine_lacks_exactly_cuda_and_vllm_for_the_gpu_preset() -> None:
    problems = machine_problems(load_selfplay_config(preset="gpu"))
    vllm_installed = importlib.util.find_spec("vllm") is not None
    assert len(problems) == (1 if vllm_installed else 2)
    assert "model.device = 'cuda'" in problems[0] and "sees no CUDA device" in problems[0]
    if not vllm_installed:
        assert "vllm is not installed" in problems[1]


def test_the_cpu_quickstart_lacks_nothing_here() -> None:
    assert machine_problems(load_selfplay_config(preset="quickstart")) == []


def test_a_model_that_is_neither_local_nor_cached_is_named(tmp_path: Path) -> None:
    cfg = load_selfplay_config(preset="tiny", overrides=[f'model.source="{tmp_path / "no-such-model"}"'])
    (problem,) = machine_problems(cfg)
    assert "no-such-model" in problem and "Hugging Face cache" in problem


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without a GPU lacks")
def test_the_check_command_prints_the_plan_and_exits_3(tmp_path: Path) -> None:
    from spade_core.app.cli import build_app
    from typer.testing import CliRunner

    result = CliRunner().invoke(build_app(), ["selfplay", "--preset", "gpu", "--run-dir", str(tmp_path / "run"),
                                              "--check"])
    assert result.exit_code == 3, result.output
    assert "vllm (colocate, 35% of GPU memory)" in result.output
    assert "missing:" in result.output and "sees no CUDA device" in result.output
    assert not (tmp_path / "run").exists()  # a check writes nothing


# --- the script on a machine without a GPU --------------------------------------------------


def _fake_bin(tmp_path: Path, nvidia_smi: str | None) -> Path:
    """A PATH folder with the few tools the script's first lines use, and (optionally) an
    ``nvidia-smi`` with the given body."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("date", "dirname", "cat"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    if nvidia_smi is not None:
        (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{nvidia_smi}\n")
        (bin_dir / "nvidia-smi").chmod(0o755)
    return bin_dir


def _run_script(tmp_path: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # a copy in its own tree: whatever it would do happens there, never in this checkout
    (tmp_path / "tree" / "scripts").mkdir(parents=True)
    script = tmp_path / "tree" / "scripts" / SCRIPT.name
    shutil.copy(SCRIPT, script)
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, str(script)], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(bin_dir), "HOME": str(tmp_path), **env})


@pytest.mark.parametrize(
    ("nvidia_smi", "says"),
    [(None, "no NVIDIA driver (nvidia-smi not found)"),
     ("echo 'NVIDIA-SMI has failed' >&2; exit 9", "nvidia-smi finds no usable GPU")],
)
def test_the_script_stops_before_installing_anything_without_a_gpu(
    tmp_path: Path, nvidia_smi: str | None, says: str
) -> None:
    done = _run_script(tmp_path, _fake_bin(tmp_path, nvidia_smi))
    assert done.returncode == 2
    assert says in done.stderr and "scripts/quickstart.sh" in done.stderr
    assert not (tmp_path / "tree" / ".venv-gpu").exists()


def test_the_script_stops_on_a_python_older_than_3_11(tmp_path: Path) -> None:
    bin_dir = _fake_bin(tmp_path, "echo 'GPU 0: NVIDIA H100 (UUID: GPU-0)'")
    old = bin_dir / "python3.9"
    old.write_text("#!/bin/sh\nexit 1\n")  # what `python3.9 -c 'raise SystemExit(True)'` returns
    old.chmod(0o755)
    done = _run_script(tmp_path, bin_dir, PYTHON=str(old))
    assert done.returncode == 2
    assert "is not Python 3.11 or newer" in done.stderr
    assert "gpu_quickstart: machine check" not in done.stdout
    assert not (tmp_path / "tree" / ".venv-gpu").exists()


def test_the_script_checks_before_it_trains_and_times_every_stage() -> None:
    text = SCRIPT.read_text()
    check = text.index("--check")
    run = text.index("timeout 1200 spade selfplay")
    assert check < run
    for stage in ("machine check", "install", "check (config + CUDA + vLLM)", "self-play", "report"):
        assert f'stage_done "{stage}"' in text
    assert '"$PYRUN" -m spade_trainer.timings' in text


def test_the_script_without_install_uses_the_python_it_finds_and_names_what_is_missing(tmp_path: Path) -> None:
    """``GPU_QUICKSTART_INSTALL=0`` (a machine prepared offline): no venv, no pip; without a
    ``spade`` command on PATH it stops, saying so."""
    import sys

    bin_dir = _fake_bin(tmp_path, "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'")
    done = _run_script(tmp_path, bin_dir, PYTHON=sys.executable, GPU_QUICKSTART_INSTALL="0")
    assert done.returncode == 2, done.stderr
    assert "no spade command is on PATH" in done.stderr
    assert "gpu_quickstart: machine check" in done.stdout
    assert not (tmp_path / "tree" / ".venv-gpu").exists()


# --- per-stage times of a run ---------------------------------------------------------------


def test_stage_times_are_read_per_iteration(tmp_path: Path) -> None:
    lines = [
        {"iteration": 1, "timings": {"design_s": 10.0, "hint_s": 2.0, "rollout_s": 5.5, "update_s": 7.0,
                                     "register_s": 0.5, "collect_s": 17.5}},
        {"iteration": 2, "timings": {"design_s": 8.0, "hint_s": 0.0, "rollout_s": 4.0}},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    first, second = read_times(tmp_path)
    assert first.iteration == 1 and first.total == pytest.approx(25.0)
    assert second.stages["update"] is None and second.total == pytest.approx(12.0)
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(times_table([first, second]))
    out = console.export_text()
    assert "37.0" in out and "-" in out  # the total row; the untimed update of iteration 2


def test_stage_times_of_a_folder_without_a_run_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(TrainerError, match="metrics.jsonl does not exist"):
        read_times(tmp_path)
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 1}\n[1, 2]\n')
    with pytest.raises(TrainerError, match=r"metrics\.jsonl:2: not an iteration record"):
        read_times(tmp_path)
