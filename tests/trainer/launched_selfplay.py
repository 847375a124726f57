"""The self-play run that the multi-process test starts under ``accelerate launch``:
the tiny preset with the scripted design stage, real sandbox, store and GRPO steps.

    accelerate launch --config_file CONFIG -m trainer.launched_selfplay \
        --run-dir RUN --iterations N [--resume] --out OUT [--preset tiny --preset adaptive]

(with the ``tests`` folder on ``PYTHONPATH``). Each process writes what the test compares
to ``OUT/rank-<r>.pt``: its final weights, the distributed setup it ran under and its
iteration records.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--iterations", required=True, type=int)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--preset", action="append", default=None, help="presets laid in order (default: tiny)")
    args = parser.parse_args()

    import torch
    from rich.console import Console
    from spade_trainer.config import load_selfplay_config
    from spade_trainer.selfplay import SelfPlayRun

    from .scripted import ScriptedDesignStage

    torch.set_num_threads(1)  # two processes share a small machine
    cfg = load_selfplay_config(
        preset=args.preset or ["tiny"],
        overrides=[f'run_dir="{args.run_dir}"', f"iterations={args.iterations}", "envs_per_iteration=2"],
    )
    run = SelfPlayRun(cfg, design_stage_factory=ScriptedDesignStage, console=Console(stderr=True))
    records = run.run(resume=args.resume)
    acc = run.learner.accelerator
    args.out.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "rank": run.rank,
            "world_size": run.world_size,
            "distributed_type": str(acc.distributed_type),
            "process_index": acc.process_index,
            "num_processes": acc.num_processes,
            "weights": {k: v.detach().clone() for k, v in run.learner.model.state_dict().items()},
            "records": [r.to_json() for r in records],
            "global_step": run.learner.steps,
        },
        args.out / f"rank-{run.rank}.pt",
    )


if __name__ == "__main__":
    main()
