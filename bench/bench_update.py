"""Seconds per GRPO update: the project's own step against TRL's GRPOTrainer, same samples.

One batch of real episodes of the learning experiment's rung (``higher_lower``, 4 groups of
8 plays, the ``\\boxed{`` prefill, replies cut at the action) is played once by the
embedded SmolLM2-135M (or the tiny in-process model), and the same samples, with the same
advantages, are then trained on

* by :class:`spade_trainer.policy_update.GRPOUpdate` (``step`` per update), and
* by TRL's ``GRPOTrainer`` as the self-play loop drives it (``spade_trainer.grpo.build_trainer``
  with a source that returns these samples; one optimizer step per update, timed by a
  callback from step begin to step end),

with every sample carrying signal (half of each group scored as won, so that neither side
skips work), each from the same initial weights, micro-batch 8, learning rate 2e-5, ``REPEATS`` updates.
Generation is not timed (both get the same samples); what differs is the update machinery.
Reported: the median seconds per update of each and the ratio ours / TRL's (goal: <= 1).

Run: ``python -m bench.bench_update [--model embedded|tiny] [--repeats N]`` (embedded: about
3 minutes on a 2-core machine; tiny: seconds).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

REPEATS = 4
MICRO_BATCH = 8
LR = 2e-5


def _samples(model: Any, tok: Any) -> list[Any]:
    import random

    from spade_trainer.experiment import LearningExperiment, LearnSettings
    from spade_trainer.samples import PolicySample, Role, with_advantages

    exp = LearningExperiment(LearnSettings(max_new_tokens=8), tempfile.mkdtemp(), model=model, tokenizer=tok,
                             log=lambda _: None)
    engine = exp._engine(model, tok)
    labelled = exp._train_specs(random.Random(0))
    episodes = engine.run([spec for _, spec in labelled], seed=1)
    # every sample gets signal (half of each group won, half lost), so that both sides run the
    # whole step: what is timed is the update machinery, not how many samples happened to win
    samples = [PolicySample(Role.agent, ep.prompt_ids, ep.completion_ids, ep.logprobs, float(i % 2), group,
                            env_mask=ep.env_mask) for i, ((group, _), ep) in enumerate(zip(labelled, episodes, strict=True))]
    return with_advantages(samples)


def _ours(model: Any, samples: list[Any], repeats: int) -> list[float]:
    from spade_trainer.policy_update import GRPOUpdate, UpdateSettings

    update = GRPOUpdate(model, UpdateSettings(learning_rate=LR, micro_batch=MICRO_BATCH))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        update.step(samples)
        times.append(time.perf_counter() - t0)
    return times


def _trl(model: Any, tok: Any, samples: list[Any], repeats: int) -> list[float]:
    from spade_trainer.grpo import UpdateShape, build_trainer, grpo_config
    from transformers import TrainerCallback

    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            times.append(time.perf_counter() - self.t0)

    with tempfile.TemporaryDirectory() as out:
        shape = UpdateShape.for_samples(len(samples), MICRO_BATCH)
        trainer = build_trainer(model, tok, lambda _t: samples,
                                grpo_config(out, shape, max_steps=repeats, learning_rate=LR), callbacks=[Clock()])
        trainer.train()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("embedded", "tiny"), default="embedded")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args(argv)
    torch.set_flush_denormal(True)
    console = Console()
    if args.model == "embedded":
        from spade_trainer.config import ModelSettings
        from spade_trainer.models import load_policy

        model, tok = load_policy(ModelSettings())
    else:
        from spade_trainer.tiny import build_tiny_model, build_tiny_tokenizer

        tok = build_tiny_tokenizer()
        model = build_tiny_model(tok)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    console.log("playing one batch of the rung")
    samples = _samples(model, tok)
    live = sum(s.advantage != 0 for s in samples)
    tokens = sum(sum(s.env_mask or []) for s in samples)
    console.log(f"{len(samples)} samples, {live} with signal, {tokens} model tokens; timing ours")
    model.load_state_dict(initial)
    ours = _ours(model, samples, args.repeats)
    console.log("timing TRL's GRPOTrainer")
    model.load_state_dict(initial)
    trl = _trl(model, tok, samples, args.repeats)
    table = Table(title=f"seconds per GRPO update, {len(samples)} samples of higher_lower ({args.model} model, "
                        f"micro-batch {MICRO_BATCH}, {args.repeats} updates each)")
    for col in ("", "median s", "min s", "max s"):
        table.add_column(col, justify="right")
    for name, ts in (("ours (GRPOUpdate)", ours), ("TRL GRPOTrainer", trl)):
        table.add_row(name, f"{statistics.median(ts):.2f}", f"{min(ts):.2f}", f"{max(ts):.2f}")
    console.print(table)
    console.print(f"ratio ours / TRL (median): {statistics.median(ours) / statistics.median(trl):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
