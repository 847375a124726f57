"""Checkpoints and resume under a multi-process launch, for real: ``accelerate launch`` starts
two CPU processes (DDP over gloo) that run the tiny self-play config with the scripted
design stage, real sandbox, stores and GRPO steps.

Three launches: two iterations straight; one iteration; a resume of that run to the
second iteration. The resumed launch must end where the straight one did, on both ranks,
and the two ranks must hold the same weights although they trained on different samples
(DDP averaged their gradients).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from spade_trainer.config import load_selfplay_config
from spade_trainer.errors import CheckpointError
from spade_trainer.selfplay import CHECKPOINTS, STATE_FILE, STORE_FILE, SelfPlayRun, latest_checkpoint

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]
CPU_DDP = TESTS.parent / "configs" / "accelerate" / "cpu_ddp.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launch(run_dir: Path, out: Path, iterations: int, *, resume: bool = False,
            presets: tuple[str, ...] = ()) -> dict[int, dict[str, Any]]:
    """One ``accelerate launch`` of two processes; returns what each rank wrote, by rank."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CPU_DDP),
           "--num_processes", "2", "--main_process_port", str(_free_port()),
           "-m", "trainer.launched_selfplay", "--run-dir", str(run_dir), "--iterations", str(iterations),
           "--out", str(out), *(["--resume"] if resume else []), *(a for p in presets for a in ("--preset", p))]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=TESTS.parent)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return {r: torch.load(out / f"rank-{r}.pt", weights_only=False) for r in (0, 1)}


@pytest.fixture(scope="module")
def launches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("multiprocess")
    straight = _launch(root / "straight" / "run", root / "straight" / "out", 2)
    _launch(root / "resumed" / "run", root / "resumed" / "first", 1)
    resumed = _launch(root / "resumed" / "run", root / "resumed" / "out", 2, resume=True)
    adaptive = _launch(root / "adaptive" / "run", root / "adaptive" / "out", 2, presets=("tiny", "adaptive"))
    initial = load_selfplay_config(preset="tiny")  # the tiny model's weights before any update
    from spade_trainer.models import load_policy

    model, _ = load_policy(initial.model)
    return {"root": root, "straight": straight, "resumed": resumed, "adaptive": adaptive,
            "initial": {k: v.detach().clone() for k, v in model.state_dict().items()}}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], *, atol: float = 0.0) -> bool:
    assert a.keys() == b.keys()
    return all(torch.allclose(a[k], b[k], atol=atol, rtol=0) for k in a)


def test_the_launch_runs_two_processes_in_gloo_data_parallel(launches: dict[str, Any]) -> None:
    for r, out in launches["straight"].items():
        assert out["rank"] == out["process_index"] == r
        assert out["world_size"] == out["num_processes"] == 2
        assert out["distributed_type"] == "DistributedType.MULTI_CPU"
        assert out["global_step"] == 2


def test_each_process_collects_its_own_samples(launches: dict[str, Any]) -> None:
    rank0, rank1 = (launches["straight"][r]["records"] for r in (0, 1))
    assert [r["iteration"] for r in rank0] == [r["iteration"] for r in rank1] == [1, 2]
    for a, b in zip(rank0, rank1, strict=True):
        assert a["per_env"].keys() != b["per_env"].keys()  # other designs, other pool draws
        # the invalid candidate is measured against the valid designs' baseline and carries
        # signal; the valid designs of both ranks are each other's baseline (0 when they tie)
        assert a["samples"]["nonzero_advantages"] >= 1 and b["samples"]["nonzero_advantages"] >= 1
        # advantages were computed over both processes' rewards
        pool = a["samples"]["samples"] + b["samples"]["samples"]
        assert a["samples"]["advantage_pool"] == b["samples"]["advantage_pool"] == pool
    assert rank0[1]["rng_at_start"] != rank1[1]["rng_at_start"]


def test_the_adaptive_windows_see_every_ranks_plays_and_agree(launches: dict[str, Any]) -> None:
    """Under the adaptive preset each rank plays its own draws, and every rank's rule
    records all of them: the windows (and the moves) are the same on both ranks."""
    rank0, rank1 = (launches["adaptive"][r]["records"] for r in (0, 1))
    for a, b in zip(rank0, rank1, strict=True):
        mine, theirs = a["adaptive_plays"]["this_rank"], b["adaptive_plays"]["this_rank"]
        assert mine > 0 and theirs > 0
        assert a["adaptive_plays"]["all_ranks"] == b["adaptive_plays"]["all_ranks"] == mine + theirs
        assert a["adaptive"] and a["adaptive"] == b["adaptive"]
        assert sum(p["plays"] for p in a["adaptive"].values()) == mine + theirs


def test_ddp_keeps_both_ranks_weights_equal_and_moved(launches: dict[str, Any]) -> None:
    for name in ("straight", "resumed"):
        w0, w1 = (launches[name][r]["weights"] for r in (0, 1))
        # different samples on each rank: equal weights mean the gradients were averaged
        assert _same(w0, w1)
        assert not _same(w0, launches["initial"], atol=1e-6)


def test_resuming_the_launch_ends_with_the_straight_runs_weights(launches: dict[str, Any]) -> None:
    for r in (0, 1):
        assert _same(launches["resumed"][r]["weights"], launches["straight"][r]["weights"], atol=1e-6)
        assert launches["resumed"][r]["global_step"] == 2


def test_each_rank_resumes_its_own_iteration_and_random_state(launches: dict[str, Any]) -> None:
    for r in (0, 1):
        straight_2 = launches["straight"][r]["records"][1]
        (resumed_2,) = launches["resumed"][r]["records"]
        assert resumed_2["iteration"] == 2
        assert resumed_2["rng_at_start"] == straight_2["rng_at_start"]
        assert resumed_2["per_env"] == straight_2["per_env"]
        assert resumed_2["train"]["loss"] == pytest.approx(straight_2["train"]["loss"])
    metrics = [launches["root"] / "resumed" / "run" / sub / "metrics.jsonl" for sub in ("", "rank-1")]
    for path in metrics:  # one line per iteration: the resumed launch appended iteration 2 only
        assert [json.loads(x)["iteration"] for x in path.read_text().splitlines()] == [1, 2]


def test_a_checkpoint_holds_every_ranks_state(launches: dict[str, Any]) -> None:
    checkpoint = latest_checkpoint(launches["root"] / "straight" / "run", world_size=2)
    assert checkpoint is not None and checkpoint.name == "checkpoint-2"
    for r, sub in ((0, ""), (1, "rank-1")):
        state = json.loads((checkpoint / sub / STATE_FILE).read_text())
        assert state["iteration"] == 2 and state["world_size"] == 2
        assert (checkpoint / sub / STORE_FILE).is_file()
        assert (checkpoint / f"random_states_{r}.pkl").is_file()  # accelerate's, one per process


def test_a_two_process_checkpoint_refuses_a_one_process_resume(
    launches: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    run_dir = launches["root"] / "straight" / "run"
    cfg = load_selfplay_config(preset="tiny", overrides=[f'run_dir="{run_dir}"', "iterations=3",
                                                         "envs_per_iteration=2"])
    with pytest.raises(CheckpointError, match=r"2 process\(es\).*this launch has 1.*--num_processes 2"):
        SelfPlayRun(cfg).setup(resume=True)


def _state(folder: Path, world_size: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STATE_FILE).write_text(json.dumps({"iteration": 1, "world_size": world_size}))


def test_a_checkpoint_missing_a_ranks_state_is_passed_over(tmp_path: Path) -> None:
    root = tmp_path / CHECKPOINTS
    for n in (1, 2):
        _state(root / f"checkpoint-{n}", 2)
    _state(root / "checkpoint-1" / "rank-1", 2)  # checkpoint-2 lost rank 1's part (a crash)
    assert latest_checkpoint(tmp_path, world_size=2) == root / "checkpoint-1"
    assert latest_checkpoint(tmp_path, world_size=1) == root / "checkpoint-2"
    assert latest_checkpoint(tmp_path, world_size=3) is None


def test_a_one_process_checkpoint_refuses_a_two_process_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _state(tmp_path / "run" / CHECKPOINTS / "checkpoint-1", 1)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    cfg = load_selfplay_config(preset="tiny", overrides=[f'run_dir="{tmp_path / "run"}"', "iterations=2"])
    with pytest.raises(CheckpointError, match=r"1 process\(es\) and this launch has 2.*--num_processes 1"):
        SelfPlayRun(cfg).setup(resume=True)
    assert not (tmp_path / "run" / "rank-1" / STORE_FILE).exists()  # refused before touching anything
