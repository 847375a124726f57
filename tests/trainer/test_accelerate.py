"""Multi-GPU runs go through accelerate / DeepSpeed configuration files, not our code: the
shipped files parse with accelerate's own loader, and ``accelerate launch -m spade_trainer``
reaches the self-play command (checked on CPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.utils import DistributedType
from spade_trainer.ranks import process_rank, rank_folder

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "accelerate"

EXPECTED = {
    "cpu.yaml": (DistributedType.NO, None),
    # accelerate starts several local processes only through its multi-GPU launcher; they
    # run on the CPU (gloo) because the self-play config asks for the CPU (test_multiprocess.py)
    "cpu_ddp.yaml": (DistributedType.MULTI_GPU, None),
    "single_gpu.yaml": (DistributedType.NO, None),
    "multi_gpu_ddp.yaml": (DistributedType.MULTI_GPU, None),
    "deepspeed_zero2.yaml": (DistributedType.DEEPSPEED, 2),
    "deepspeed_zero3.yaml": (DistributedType.DEEPSPEED, 3),
}


def test_every_shipped_config_is_listed_here() -> None:
    assert sorted(p.name for p in CONFIGS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_config_parses_with_accelerate(name: str) -> None:
    cfg = load_config_from_file(str(CONFIGS / name))
    kind, zero = EXPECTED[name]
    assert cfg.distributed_type == kind
    assert cfg.num_processes >= 1 and cfg.num_machines == 1
    if zero is not None:
        assert cfg.deepspeed_config["zero_stage"] == zero
    assert cfg.use_cpu is name.startswith("cpu")


def test_accelerate_launch_reaches_the_selfplay_command() -> None:
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / "cpu.yaml"),
         "-m", "spade_trainer", "--help"],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "--preset" in out.stdout and "--resume" in out.stdout


def test_a_bad_module_argument_is_reported_by_the_selfplay_command() -> None:
    out = subprocess.run([sys.executable, "-m", "spade_trainer", "--preset", "no-such-preset"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    assert "unknown preset 'no-such-preset'" in out.stdout + out.stderr


def test_each_process_of_a_launch_keeps_its_own_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert process_rank() == (0, 1)
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert process_rank() == (3, 4)
    assert rank_folder(0) == "" and rank_folder(3) == "rank-3"
