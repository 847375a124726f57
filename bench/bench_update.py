"""Seconds per GRPO update: the project's own step against TRL's GRPOTrainer, same samples.

One batch of real episodes of the learning experiment's rung (``higher_lower``, 4 groups of
8 plays, the ``\\boxed{`` prefill, replies cut at the action) is played once by the
embedded SmolLM2-135M (or the tiny in-process model), and the same samples, with the same
advantages, are then trained on

* by :class:`spade_trainer.learner.Learner`, the self-play loop's update (accelerate, the
  advantages, :class:`~spade_trainer.policy_update.GRPOUpdate`, the weight-change meter;
  ``step`` per update), and
* by TRL's ``GRPOTrainer`` through its public arguments: a ``rollout_func`` that returns
  these samples and a reward function that hands back their rewards, one optimizer step
  per update over all of them (``num_generations`` = the group size), timed by a callback
  from step begin to step end,

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
    from spade_trainer.envrefs import seed_playable
    from spade_trainer.inprocess import TrustedEnvPool
    from spade_trainer.policy import Sampling, TransformersPolicy
    from spade_trainer.rollout import EpisodeSpec, ReplyShape, RolloutEngine, TokenBudget
    from spade_trainer.samples import PolicySample, Role, with_advantages

    env = seed_playable("higher_lower")
    engine = RolloutEngine(TrustedEnvPool(), TransformersPolicy(model, tok), tok,
                           budget=TokenBudget(per_turn=8, per_episode=512), sampling=Sampling(1.0, 1.0),
                           reply=ReplyShape(prefill="\\boxed{", cut_at_action=True))
    groups = [(f"group-{g}", EpisodeSpec(env, False, 100 * g + i)) for g in range(4) for i in range(8)]
    episodes = engine.run([spec for _, spec in groups], seed=1)
    # every sample gets signal (half of each group won, half lost), so that both sides run the
    # whole step: what is timed is the update machinery, not how many samples happened to win
    samples = [PolicySample(Role.agent, ep.prompt_ids, ep.completion_ids, ep.logprobs, float(i % 2), group,
                            env_mask=ep.env_mask) for i, ((group, _), ep) in enumerate(zip(groups, episodes, strict=True))]
    return with_advantages(samples)


def _ours(model: Any, tok: Any, samples: list[Any], repeats: int) -> list[float]:
    from spade_trainer.learner import Learner
    from spade_trainer.policy_update import UpdateSettings

    update = Learner(model, tok, UpdateSettings(learning_rate=LR, micro_batch=MICRO_BATCH), cpu=True, seed=0)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        update.step(samples)
        times.append(time.perf_counter() - t0)
    return times


def _trl(model: Any, tok: Any, samples: list[Any], repeats: int) -> list[float]:
    import os
    import warnings

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    group = len(samples) // len({s.group for s in samples})

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        return {"prompt_ids": [list(s.prompt_ids) for s in samples],
                "completion_ids": [list(s.completion_ids) for s in samples],
                "logprobs": [list(s.logprobs) for s in samples],
                "env_mask": [list(s.env_mask or [1] * len(s.completion_ids)) for s in samples],
                "won": [s.reward for s in samples]}

    def reward(prompts: list[Any], completions: list[Any], won: list[float], **_: Any) -> list[float]:
        return list(won)

    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            times.append(time.perf_counter() - self.t0)

    steps = len(samples) // MICRO_BATCH
    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = GRPOConfig(output_dir=out, per_device_train_batch_size=MICRO_BATCH, gradient_accumulation_steps=steps,
                          steps_per_generation=steps, num_generations=group, max_steps=repeats, learning_rate=LR,
                          use_cpu=True, beta=0.0, logging_steps=1, save_strategy="no", report_to=[],
                          disable_tqdm=True, lr_scheduler_type="constant", shuffle_dataset=False,
                          remove_unused_columns=False)
        dataset = Dataset.from_dict({"prompt": [f"group {g}" for g in range(len(samples) // group)]})
        trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,  # type: ignore[list-item]
                              processing_class=tok, rollout_func=rollout, callbacks=[Clock()])
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # its per-step dicts would bury the table
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
    ours = _ours(model, tok, samples, args.repeats)
    console.log("timing TRL's GRPOTrainer")
    model.load_state_dict(initial)
    trl = _trl(model, tok, samples, args.repeats)
    table = Table(title=f"seconds per GRPO update, {len(samples)} samples of higher_lower ({args.model} model, "
                        f"micro-batch {MICRO_BATCH}, {args.repeats} updates each)")
    for col in ("", "median s", "min s", "max s"):
        table.add_column(col, justify="right")
    for name, ts in (("ours (Learner)", ours), ("TRL GRPOTrainer", trl)):
        table.add_row(name, f"{statistics.median(ts):.2f}", f"{min(ts):.2f}", f"{max(ts):.2f}")
    console.print(table)
    console.print(f"ratio ours / TRL (median): {statistics.median(ours) / statistics.median(trl):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
