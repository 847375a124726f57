"""The learning experiment's trained curve produced by TRL's ``GRPOTrainer`` (``--trainer trl``).

The same rung, model, instances and budget as :meth:`.experiment.LearningExperiment.run_curve`,
with the update made by ``trl.GRPOTrainer`` through its public arguments only:

* ``rollout_func(prompts, trainer)`` (:class:`RungRollout`) plays one update's episodes of
  the rung with the experiment's own :class:`~.rollout.RolloutEngine` on ``trainer.model``
  (multi-turn; the same prefill, cut, temperature and token budget; fresh training
  instances from the same random stream as the spade path, so update ``u`` of both trainers
  plays the same instances with the same sampling seed) and returns the token trajectories,
  their sampling logprobs, ``env_mask`` (model tokens 1, prompt and environment tokens 0) and
  each episode's return;
* a reward function (:func:`episode_return`) hands that return back to TRL, which computes
  its own group-normalised advantages (``num_generations`` = the experiment's group size:
  TRL's groups are the experiment's groups) and its own loss;
* the batch sizes make one optimizer step one update of ``groups * group_size`` episodes
  (micro-batches of at most 8, as :class:`~.policy_update.GRPOUpdate`'s);
* a :class:`transformers.TrainerCallback` (:class:`CurveCallback`) records each update and
  evaluates on the held-out instances with the experiment's :meth:`evaluate`.

What TRL computes differently from the spade step, by its own defaults: the group std has
Bessel's correction (ours: the population std; both add 1e-4); its token-level mean counts
the tokens of every sample, ours only those of samples with signal; every sample enters the
forward pass (ours leaves out zero-advantage ones). Both take the ratio against the
detached current logprobs (one step per generation) and clip the gradient norm at 1, so
where every pre-clip norm is above 1 the two steps differ by a scale the clip removes.
"""

from __future__ import annotations

import math
import random
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from .errors import ConfigError

if TYPE_CHECKING:
    from .experiment import Curve, LearningExperiment

#: Samples per forward/backward pass, as :class:`~.policy_update.UpdateSettings`'s default.
MICRO_BATCH = 8


def micro_batch(total: int, most: int = MICRO_BATCH) -> int:
    """The largest divisor of ``total`` not above ``most``: TRL splits one update's
    ``total`` samples into equal micro-batches."""
    return max(d for d in range(1, min(total, most) + 1) if total % d == 0)


def episode_return(prompts: Sequence[Any], completions: Sequence[Any], episode_return: Sequence[float | None],
                   **_: Any) -> list[float | None]:
    """TRL reward function: the return the rollout recorded for each episode (``None`` for an
    episode that says nothing about the agent; TRL leaves it out of its group's baseline and
    gives it no advantage)."""
    return list(episode_return)


@dataclass
class Played:
    """One update's episodes, kept by the rollout for the callback."""

    update: int
    episodes: list[Any]
    groups: list[str]
    trainable: list[bool]
    started: float
    rollout_s: float
    generate_s: float
    env_s: float


class RungRollout:
    """TRL ``rollout_func``: one update's episodes of the rung (see the module docstring)."""

    def __init__(self, experiment: LearningExperiment, rng: random.Random, tokenizer: Any) -> None:
        self.experiment, self.rng, self.tokenizer = experiment, rng, tokenizer
        self._engine: Any = None
        self._engine_model: Any = None
        self.last: Played | None = None

    def engine(self, model: Any) -> Any:
        if self._engine is None or self._engine_model is not model:
            self._engine, self._engine_model = self.experiment._engine(model, self.tokenizer), model
        return self._engine

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        s = self.experiment.settings
        if len(prompts) != s.groups * s.group_size:
            raise ConfigError(f"TRL asked for {len(prompts)} episodes in one generation; an update is "
                              f"{s.groups} x {s.group_size}")
        t0 = time.perf_counter()
        update = trainer.state.global_step + 1
        engine = self.engine(trainer.model)
        labelled = self.experiment._train_specs(self.rng)
        episodes = engine.run([spec for _, spec in labelled], seed=(s.seed * 7_919 + update) % 2**31)
        stats = engine.last_stats
        eos = self.tokenizer.eos_token_id
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                     "episode_return": []}
        trainable = []
        for ep in episodes:
            ok = ep.usable and ep.model_tokens > 0 and bool(ep.prompt_ids)
            trainable.append(ok)
            # an episode that failed before any token still fills its row (TRL needs one per
            # prompt); its return is None and its one token is masked: it trains nothing
            out["prompt_ids"].append(list(ep.prompt_ids) or [eos])
            out["completion_ids"].append(list(ep.completion_ids) or [eos])
            out["logprobs"].append(list(ep.logprobs) or [0.0])
            out["env_mask"].append(list(ep.env_mask) or [0])
            out["episode_return"].append(float(ep.episode_return) if ok else None)
        self.last = Played(update, episodes, [g for g, _ in labelled], trainable, t0, time.perf_counter() - t0,
                           stats.generate_s, stats.env_s)
        return out


def _with_signal(played: Played) -> tuple[int, int]:
    """Trainable samples, and those in a group whose returns differ (a non-zero advantage)."""
    returns: dict[str, set[float]] = {}
    for group, ep, ok in zip(played.groups, played.episodes, played.trainable, strict=True):
        if ok:
            returns.setdefault(group, set()).add(float(ep.episode_return))
    trainable = sum(played.trainable)
    signal = sum(ok and len(returns[g]) > 1 for g, ok in zip(played.groups, played.trainable, strict=True))
    return trainable, signal


class CurveCallback(TrainerCallback):
    """Records each TRL update as the spade path does and evaluates every ``eval_every``."""

    def __init__(self, experiment: LearningExperiment, curve: Curve, rollout: RungRollout) -> None:
        self.experiment, self.curve, self.rollout = experiment, curve, rollout
        self._pending: dict[str, Any] | None = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
        played = self.rollout.last
        if played is None or played.update != state.global_step:
            raise ConfigError(f"TRL finished step {state.global_step} without a rollout for it")
        wins = sum(ep.terminated and (ep.rewards[-1] if ep.rewards else 0.0) >= 1.0 for ep in played.episodes)
        trainable, signal = _with_signal(played)
        seconds = time.perf_counter() - played.started
        self._pending = {
            "samples": trainable, "with_signal": signal,
            "tokens": sum(ep.model_tokens for ep, ok in zip(played.episodes, played.trainable, strict=True) if ok),
            "skipped": False, "loss": None, "grad_norm": None, "update": state.global_step,
            "train_success": wins / len(played.episodes), "seconds": round(seconds, 3),
            "generate_s": round(played.generate_s, 3), "env_s": round(played.env_s, 3),
            "update_s": round(seconds - played.rollout_s, 3),
        }
        control.should_log = True  # TRL's log of this step carries its loss and gradient norm
        return control

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        record, self._pending = self._pending, None
        if record is None:  # the summary TRL logs when training ends
            return
        logs = logs or {}
        record["loss"], record["grad_norm"] = logs.get("loss"), logs.get("grad_norm")
        record["trl"] = {k: v for k, v in logs.items()
                         if isinstance(v, int | float) and math.isfinite(v) and k not in ("loss", "grad_norm")}
        self.curve.updates.append(record)
        exp, s, u = self.experiment, self.experiment.settings, record["update"]
        grad = record["grad_norm"]
        exp.log(f"[{self.curve.label}] update {u}/{s.updates} (TRL): train success {record['train_success']:.2f}, "
                f"{record['with_signal']}/{record['samples']} samples with signal, "
                f"grad norm {'-' if grad is None else f'{grad:.3f}'}, {record['seconds']:.1f}s "
                f"(generate {record['generate_s']:.1f}s, env {record['env_s']:.2f}s, update {record['update_s']:.1f}s)")
        if u % s.eval_every == 0 or u == s.updates:
            engine = self.rollout.engine(kw["model"])
            self.curve.evaluations.append(exp.evaluate(engine, u))
            exp._log_eval(self.curve.label, self.curve.evaluations[-1])


def trl_config(settings: Any, learning_rate: float, output_dir: str) -> Any:
    """The ``GRPOConfig`` of one curve: one optimizer step per update of ``groups x
    group_size`` episodes, TRL's groups the experiment's, no KL term, constant learning rate,
    no warmup, gradient norm clipped at 1, on the CPU, nothing saved or reported."""
    import dataclasses

    from trl import GRPOConfig

    total = settings.groups * settings.group_size
    micro = micro_batch(total)
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    # Transformers 5 calls it activation checkpointing; TRL turns it on by default, which
    # recomputes activations in the backward pass: off, as the spade step has none
    checkpointing = "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"
    return GRPOConfig(
        output_dir=output_dir,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=total // micro,
        num_generations=settings.group_size,
        max_steps=settings.updates,
        learning_rate=learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_grad_norm=1.0,
        weight_decay=0.0,
        beta=0.0,
        temperature=settings.temperature,
        seed=settings.seed,
        use_cpu=settings.device == "cpu",
        bf16=False,
        shuffle_dataset=False,
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        save_strategy="no",
        dataloader_num_workers=0,
        **{checkpointing: False},
    )


def run_learning(experiment: LearningExperiment) -> dict[str, Any]:
    """``experiment`` with its trained curve made by TRL's ``GRPOTrainer`` (``trainer = "trl"``)."""
    return experiment.run(make_curve=run_trl_curve)


def run_trl_curve(experiment: LearningExperiment, label: str, learning_rate: float,
                  initial_state: dict[str, Any]) -> Curve:
    """The trained curve of ``experiment`` with TRL's ``GRPOTrainer`` making each update."""
    import torch
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    from .experiment import Curve

    s = experiment.settings
    model, tokenizer = experiment._load()
    model.load_state_dict(initial_state)
    torch.manual_seed(s.seed)
    rng = random.Random(f"{s.seed}/train")  # the spade path's stream: the same instances per update
    rollout = RungRollout(experiment, rng, tokenizer)
    curve = Curve(label, learning_rate)
    # placeholder prompts, one per group and update: the rollout plays the rung's own observations
    dataset = Dataset.from_dict({"prompt": [f"{label} group {i}" for i in range(s.groups * s.updates)]})
    with tempfile.TemporaryDirectory(prefix="spade-trl-") as out, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*rollout_func.*experimental")
        # TRL asks the model a question Transformers 5 renamed, once per update
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        trainer = GRPOTrainer(model=model, reward_funcs=[episode_return], args=trl_config(s, learning_rate, out),
                              train_dataset=dataset, processing_class=tokenizer, rollout_func=rollout,
                              callbacks=[CurveCallback(experiment, curve, rollout)])
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        curve.evaluations.append(experiment.evaluate(rollout.engine(trainer.model), 0))
        experiment._log_eval(label, curve.evaluations[-1])
        trainer.train()
    if len(curve.updates) != s.updates:
        raise ConfigError(f"TRL made {len(curve.updates)} updates, not {s.updates}")
    return curve


__all__ = ["CurveCallback", "RungRollout", "episode_return", "micro_batch", "run_trl_curve", "trl_config"]
