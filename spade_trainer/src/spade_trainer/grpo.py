"""One GRPO update of the shared policy per self-play iteration, on TRL's GRPOTrainer.

TRL owns the training machinery (optimizer, scheduler, loss, accelerate/DeepSpeed,
checkpoints, vLLM weight sync). We plug in through its ``rollout_func``: each call asks a
:class:`SampleSource` (the self-play loop) for one iteration's samples of both roles and
returns their token ids, sampling logprobs and ``env_mask``. The only behaviour we change
is the advantage: :class:`SelfPlayGRPOTrainer` replaces GRPO's per-prompt-group
advantages with the per-role ones computed in :mod:`.samples`, because self-play groups
(skills, environments) do not match TRL's fixed-size prompt groups. Under a multi-process
launch the advantages are computed over every process's rewards (gathered), so a group's
baseline covers all of its samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import torch
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from .errors import TrainerError
from .samples import PolicySample, Role, fit_to_capacity, reward_keys, with_advantages, with_pooled_advantages

#: TRL requires at least two generations per prompt; our groups are our own, so the minimum does.
_NUM_GENERATIONS = 2


class SampleSource(Protocol):
    """Produces one iteration's samples (called once per optimizer step)."""

    def __call__(self, trainer: GRPOTrainer) -> Sequence[PolicySample]: ...


@dataclass(frozen=True)
class UpdateShape:
    """How one iteration's samples are split into TRL batches."""

    capacity: int
    micro_batch: int

    @classmethod
    def for_samples(cls, expected: int, micro_batch: int) -> UpdateShape:
        if expected < 1 or micro_batch < 1:
            raise TrainerError(f"expected samples ({expected}) and micro batch ({micro_batch}) must be >= 1")
        step = micro_batch * _NUM_GENERATIONS // _gcd(micro_batch, _NUM_GENERATIONS)
        return cls(capacity=-(-expected // step) * step, micro_batch=micro_batch)

    @property
    def steps_per_generation(self) -> int:
        return self.capacity // self.micro_batch


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def grpo_config(output_dir: str, shape: UpdateShape, **kwargs: Any) -> GRPOConfig:
    """The ``GRPOConfig`` of a self-play run (arguments of :func:`grpo_config_kwargs`)."""
    return GRPOConfig(**grpo_config_kwargs(output_dir, shape, **kwargs))


def unknown_grpo_arguments(kwargs: dict[str, Any]) -> list[str]:
    """Keyword arguments that this TRL's ``GRPOConfig`` has no field for (a renamed or
    removed option), checked without building the config: building it checks the
    machine too (bf16 needs a GPU), and a CPU must be able to check a GPU run's settings."""
    import dataclasses

    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    return sorted(k for k in kwargs if k not in fields)


def _checkpointing_argument() -> str:
    """Transformers 5 renamed ``gradient_checkpointing`` to ``activation_checkpointing`` (the
    old name still works, with a FutureWarning in every run); older versions know only the
    old name."""
    import dataclasses

    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    return "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"


#: The name of the checkpointing option in this Transformers version.
CHECKPOINTING = _checkpointing_argument()


def grpo_config_kwargs(
    output_dir: str,
    shape: UpdateShape,
    *,
    max_steps: int,
    learning_rate: float = 1e-6,
    seed: int = 0,
    use_cpu: bool = True,
    bf16: bool = False,
    use_vllm: bool = False,
    vllm_mode: str = "colocate",
    save_steps: int = 0,
    report_to: Sequence[str] = (),
    logging_dir: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The ``GRPOConfig`` keyword arguments of a self-play run: one optimizer step per iteration."""
    kwargs: dict[str, Any] = dict(
        output_dir=output_dir,
        per_device_train_batch_size=shape.micro_batch,
        gradient_accumulation_steps=shape.steps_per_generation,
        steps_per_generation=shape.steps_per_generation,
        num_generations=_NUM_GENERATIONS,
        max_steps=max_steps,
        learning_rate=learning_rate,
        seed=seed,
        use_cpu=use_cpu,
        bf16=bf16,
        beta=0.0,
        scale_rewards="none",
        shuffle_dataset=False,
        logging_steps=1,
        save_strategy="steps" if save_steps else "no",
        save_steps=save_steps or 500,
        save_only_model=False,
        report_to=list(report_to),
        disable_tqdm=True,
        dataloader_num_workers=0,
        remove_unused_columns=False,
        use_vllm=use_vllm,
        lr_scheduler_type="constant",
        warmup_steps=0,
    )
    # recomputing activations saves GPU memory; on a CPU memory is plentiful and the
    # recomputation would cost a third more time per update
    kwargs[CHECKPOINTING] = not use_cpu
    if use_vllm:
        kwargs["vllm_mode"] = vllm_mode
    if logging_dir:
        extra.setdefault("logging_dir", logging_dir)
    kwargs.update(extra)
    return kwargs


def sample_reward(prompts: list[Any], completions: list[Any], role_reward: list[float], **_: Any) -> list[float]:
    """TRL reward function: the role reward the self-play loop computed (logged by TRL)."""
    return [float(r) for r in role_reward]


def build_trainer(
    model: Any,
    tokenizer: Any,
    source: SampleSource,
    args: Any,
    *,
    callbacks: Sequence[Any] = (),
    designer_scale: float = 1.0,
) -> SelfPlayGRPOTrainer:
    """A :class:`SelfPlayGRPOTrainer` whose every generation step pulls from ``source``;
    ``designer_scale`` multiplies designer advantages (:class:`SelfPlayRollout`)."""
    from datasets import Dataset

    rollout = SelfPlayRollout(source, designer_scale=designer_scale)
    slots = args.generation_batch_size // _NUM_GENERATIONS
    dataset = Dataset.from_dict({"prompt": [f"self-play slot {i}" for i in range(slots)]})
    trainer = SelfPlayGRPOTrainer(
        model=model,
        reward_funcs=[cast(Any, sample_reward)],  # TRL types reward functions as returning float | None
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollout,
        callbacks=list(callbacks),
    )
    trainer._spade_rollout = rollout
    trainer._spade_delta = ParameterDelta()
    trainer.add_callback(_AttachDelta(trainer._spade_delta))
    # progress is ours (rich); TRL's per-step printing would interleave with it
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    return trainer


class _AttachDelta(TrainerCallback):
    """Hooks :class:`ParameterDelta` onto the optimizer once the trainer has built it."""

    def __init__(self, delta: ParameterDelta) -> None:
        self.delta = delta

    def on_train_begin(self, args: Any, state: Any, control: Any, optimizer: Any = None, **kw: Any) -> None:
        if optimizer is not None:
            self.delta.attach(optimizer)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.delta.detach()


class SelfPlayRollout:
    """TRL ``rollout_func``: one iteration's samples shaped as TRL expects.

    ``designer_scale`` multiplies designer advantages (the reference recipe's
    ``env_reward_scale``; see :attr:`~.config.SelfPlayConfig.designer_reward_scale`).
    """

    def __init__(self, source: SampleSource, *, designer_scale: float = 1.0) -> None:
        self.source = source
        self.designer_scale = designer_scale
        self.last_fill: dict[str, int] = {}

    def __call__(self, prompts: list[Any], trainer: GRPOTrainer) -> dict[str, Any]:
        local = list(self.source(trainer))
        acc = getattr(trainer, "accelerator", None)
        if acc is not None and acc.num_processes > 1:
            # every process collected its own samples: one baseline per group over all of them
            from accelerate.utils import gather_object

            everyone = gather_object([reward_keys(local)])
            samples = with_pooled_advantages(local, everyone, acc.process_index, designer_scale=self.designer_scale)
            pooled = sum(len(keys) for keys in everyone)
        else:
            samples, pooled = with_advantages(local, designer_scale=self.designer_scale), len(local)
        fit = fit_to_capacity(samples, len(prompts))
        fitted = fit.samples
        self.last_fill = {
            "samples": len(samples),
            "advantage_pool": pooled,
            "padded": fit.padded,
            "dropped": fit.dropped,
            # what the cut took from each role (the update is sized so that it takes nothing)
            "dropped_designer": fit.dropped_by_role.get(Role.designer.value, 0),
            "dropped_agent": fit.dropped_by_role.get(Role.agent.value, 0),
            "designer_samples": sum(s.role is Role.designer for s in samples),
            "agent_samples": sum(s.role is Role.agent for s in samples),
            # what makes the step a real update: a sample with advantage 0 adds no gradient
            "nonzero_advantages": sum(s.advantage != 0.0 for s in fitted),
        }
        # build_trainer hands this rollout to a SelfPlayGRPOTrainer only
        cast(SelfPlayGRPOTrainer, trainer).set_pending_advantages([s.advantage for s in fitted])
        return {
            "prompt_ids": [list(s.prompt_ids) for s in fitted],
            "completion_ids": [list(s.completion_ids) for s in fitted],
            "logprobs": [list(s.logprobs) for s in fitted],
            "env_mask": [list(s.env_mask) if s.env_mask is not None else [1] * len(s.completion_ids) for s in fitted],
            "role_reward": [s.reward for s in fitted],
            "role": [s.role.value for s in fitted],
        }


class ParameterDelta:
    """Measures how far each optimizer step moves the weights: L2 norm of the parameter
    change (``last_l2``) and the largest absolute change (``last_max``).

    :meth:`attach` hooks the torch optimizer (the one inside accelerate's wrapper): before
    a step it copies the trainable parameters, after it compares. The copy lives only for
    the optimizer step, after the backward pass has freed its activations.
    """

    def __init__(self) -> None:
        self.last_l2: float | None = None
        self.last_max: float | None = None
        self.steps = 0
        self._before: list[torch.Tensor] | None = None
        self._handles: list[Any] = []

    def attach(self, optimizer: Any) -> None:
        inner = getattr(optimizer, "optimizer", optimizer)  # accelerate's AcceleratedOptimizer
        if not isinstance(inner, torch.optim.Optimizer):
            raise TrainerError(f"cannot measure parameter deltas of {type(inner).__name__}: not a torch optimizer")
        self.detach()
        self._handles = [inner.register_step_pre_hook(self._pre), inner.register_step_post_hook(self._post)]

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    @staticmethod
    def _params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]

    def _pre(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        with torch.no_grad():
            self._before = [p.detach().clone() for p in self._params(optimizer)]

    def _post(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        before, self._before = self._before, None
        if before is None:
            return
        sq = torch.zeros((), dtype=torch.float64)
        biggest = torch.zeros((), dtype=torch.float64)
        with torch.no_grad():
            for p, b in zip(self._params(optimizer), before, strict=True):
                d = (p.detach() - b).double()
                sq += d.square().sum()
                if d.numel():
                    biggest = torch.maximum(biggest, d.abs().max())
        self.last_l2 = float(sq.sqrt())
        self.last_max = float(biggest)
        self.steps += 1


class SelfPlayGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages are the per-role advantages of the samples."""

    _pending_advantages: list[float] | None = None
    #: set by :func:`build_trainer`: the rollout (its last fill) and the weight-change meter
    _spade_rollout: SelfPlayRollout
    _spade_delta: ParameterDelta

    def set_pending_advantages(self, advantages: list[float]) -> None:
        self._pending_advantages = list(advantages)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out = super()._generate_and_score_completions(inputs)
        pending, self._pending_advantages = self._pending_advantages, None
        if pending is None:
            raise TrainerError("rollout_func did not provide per-role advantages")
        adv = out["advantages"]
        if adv.shape[0] != len(pending):
            raise TrainerError(f"{len(pending)} advantages for a batch of {adv.shape[0]} samples")
        out["advantages"] = torch.tensor(pending, dtype=adv.dtype, device=adv.device)
        return out
