"""The training side of a self-play run, as one component the loop calls.

:class:`Learner` owns what changes the weights and what must survive a restart:

* the ``accelerate`` ``Accelerator`` (one process, or whatever ``accelerate launch``
  configured: DDP over gloo on CPUs or NCCL on GPUs, DeepSpeed),
* the GRPO step (:class:`~.policy_update.GRPOUpdate`: loss, backward, optimizer),
* the advantages of one iteration's samples, computed over every process's rewards,
* the vLLM engine generation runs on, when ``generation.backend = "vllm"`` (TRL's public
  ``trl.generation.VLLMGeneration``, colocated or a server), with the new weights loaded
  into it after every step,
* checkpoints: ``accelerator.save_state`` (optimizer and every process's random state)
  with the policy written as a Hugging Face model folder (``config.json``, safetensors,
  tokenizer) that ``spade eval --policy run:DIR`` and ``from_pretrained`` read.

Only public APIs of accelerate, transformers and TRL are used; the loop itself is
:meth:`~.selfplay.SelfPlayRun.iterate`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .errors import CheckpointError, TrainerError
from .policy_update import GRPOUpdate, UpdateSettings, UpdateStats
from .samples import PolicySample, Role, reward_keys, with_advantages, with_pooled_advantages


@dataclass(frozen=True)
class VLLMSettings:
    """How generation reaches vLLM (``[selfplay.generation]``)."""

    mode: str = "colocate"
    gpu_memory_utilization: float = 0.3
    max_new_tokens: int = 256
    temperature: float = 1.0


@dataclass(frozen=True)
class StepReport:
    """What one :meth:`Learner.step` did."""

    update: UpdateStats
    #: Counts of the samples (``metrics.jsonl``'s ``samples``).
    fill: dict[str, int]
    param_delta_l2: float | None
    param_delta_max: float | None


#: Elements of a parameter read back at a time by :class:`ParameterDelta` (8 MB in float64).
_DELTA_SLICE = 1 << 20


class ParameterDelta:
    """Measures how far each optimizer step moves the weights: L2 norm of the parameter
    change (``last_l2``) and the largest absolute change (``last_max``).

    :meth:`attach` hooks the torch optimizer (the one inside accelerate's wrapper). For
    ``torch.optim.AdamW`` (without ``amsgrad`` or ``maximize``, the learner's) the change is
    read back after the step from the optimizer's own state, one tensor at a time: AdamW moved
    ``p`` to ``p' = (1 - lr wd) p - lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)``, so
    ``p`` is recovered from ``p'``, ``m`` and ``v`` and no copy of the weights is held (a copy
    is a whole model's memory more at the step, the run's peak). For any other optimizer the
    trainable parameters are copied before the step and compared after it.
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
        if self._from_state(inner):
            self._handles = [inner.register_step_post_hook(self._post_adamw)]
        else:
            self._handles = [inner.register_step_pre_hook(self._pre), inner.register_step_post_hook(self._post)]

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    @staticmethod
    def _from_state(optimizer: torch.optim.Optimizer) -> bool:
        return type(optimizer) is torch.optim.AdamW and not any(
            g.get("amsgrad") or g.get("maximize") for g in optimizer.param_groups)

    @staticmethod
    def _params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]

    def _record(self, sq: torch.Tensor, biggest: torch.Tensor) -> None:
        self.last_l2 = float(sq.sqrt())
        self.last_max = float(biggest)
        self.steps += 1

    def _post_adamw(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        sq = torch.zeros((), dtype=torch.float64)
        biggest = torch.zeros((), dtype=torch.float64)
        with torch.no_grad():
            for group in optimizer.param_groups:
                lr, wd, eps = float(group["lr"]), float(group["weight_decay"]), float(group["eps"])
                b1, b2 = group["betas"]
                for p in group["params"]:
                    state = optimizer.state.get(p)
                    if not p.requires_grad or not state or "exp_avg" not in state:
                        continue  # never stepped (no gradient yet): it did not move
                    t = float(state["step"])
                    flat = [x.detach().reshape(-1) for x in (state["exp_avg"], state["exp_avg_sq"], p)]
                    # in slices: float64 copies of a whole embedding matrix would be the step's peak
                    for at in range(0, flat[0].numel(), _DELTA_SLICE):
                        m, v, after = (x[at: at + _DELTA_SLICE].double() for x in flat)
                        moved = (lr / (1 - b1**t)) * m / ((v / (1 - b2**t)).sqrt() + eps)
                        d = after - (after + moved) / (1 - lr * wd)
                        sq += d.square().sum().cpu()
                        biggest = torch.maximum(biggest, d.abs().max().cpu())
        self._record(sq, biggest)

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
                sq += d.square().sum().cpu()
                if d.numel():
                    biggest = torch.maximum(biggest, d.abs().max().cpu())
        self._record(sq, biggest)


class Learner:
    """The policy's training state and its one operation, :meth:`step`."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        settings: UpdateSettings,
        *,
        cpu: bool,
        seed: int,
        designer_scale: float = 1.0,
        bf16: bool = False,
        activation_checkpointing: bool = False,
        vllm: VLLMSettings | None = None,
    ) -> None:
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        # accelerate's state is one per process: ask for bf16 only when wanted, so that a process
        # where another trainer already set it up (TRL's, in one test session) keeps working
        self.accelerator = Accelerator(cpu=cpu, **({"mixed_precision": "bf16"} if bf16 else {}))
        set_seed(seed)  # every process starts from the run's seed; each then draws its own collection seeds
        if activation_checkpointing:
            # recomputing activations saves GPU memory; on a CPU the recomputation only costs time
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.tokenizer = tokenizer
        self.designer_scale = designer_scale
        self.update = GRPOUpdate(model, settings, accelerator=self.accelerator)
        self.delta = ParameterDelta()
        self.delta.attach(self.update.optimizer)
        self.vllm_generation: Any = None
        if vllm is not None:
            from trl.generation import VLLMGeneration

            self.vllm_generation = VLLMGeneration(
                model=self.model, accelerator=self.accelerator, processing_class=tokenizer, mode=vllm.mode,
                gpu_memory_utilization=vllm.gpu_memory_utilization, temperature=vllm.temperature,
                max_completion_length=vllm.max_new_tokens, logprobs=0,
            )
        self.accelerator.register_for_checkpointing(self.update)  # its step counter
        self.accelerator.register_save_state_pre_hook(self._save_model)
        self.accelerator.register_load_state_pre_hook(self._load_model)

    @property
    def model(self) -> Any:
        """The model itself (unwrapped from DDP): what generation runs on."""
        return self.accelerator.unwrap_model(self.update.model)

    @property
    def steps(self) -> int:
        return self.update.steps

    @property
    def rank(self) -> int:
        return self.accelerator.process_index

    @property
    def world_size(self) -> int:
        return self.accelerator.num_processes

    def generation_engine(self) -> Any:
        """The vLLM engine generation runs on: a ``vllm.LLM`` (colocated) or TRL's client."""
        if self.vllm_generation is None:
            raise TrainerError("this learner generates with transformers, not vLLM")
        return getattr(self.vllm_generation, "llm", None) or self.vllm_generation.vllm_client

    # --- one update ------------------------------------------------------------------------

    def advantages(self, samples: Sequence[PolicySample]) -> tuple[list[PolicySample], int]:
        """``samples`` with their per-role advantages, and how many samples the baselines
        pooled (every process's, under a multi-process launch)."""
        if self.world_size == 1:
            return with_advantages(samples, designer_scale=self.designer_scale), len(samples)
        from accelerate.utils import gather_object

        everyone = gather_object([reward_keys(samples)])
        scored = with_pooled_advantages(samples, everyone, self.rank, designer_scale=self.designer_scale)
        return scored, sum(len(keys) for keys in everyone)

    def step(self, samples: Sequence[PolicySample]) -> StepReport:
        """One GRPO update on this iteration's samples (every process calls it)."""
        scored, pooled = self.advantages(samples)
        self.delta.last_l2 = self.delta.last_max = None
        stats = self.update.step(scored)
        if not stats.skipped and self.vllm_generation is not None:
            self.vllm_generation.sync_weights()
        fill = {
            "samples": len(scored),
            "advantage_pool": pooled,
            "designer_samples": sum(s.role is Role.designer for s in scored),
            "agent_samples": sum(s.role is Role.agent for s in scored),
            # a sample with advantage 0 adds no gradient
            "nonzero_advantages": sum(s.advantage != 0.0 for s in scored),
        }
        return StepReport(stats, fill, self.delta.last_l2, self.delta.last_max)

    # --- checkpoints ------------------------------------------------------------------------

    def save(self, checkpoint: Path) -> None:
        """Write the training state to ``checkpoint`` (every process calls it)."""
        from accelerate.utils import DistributedType

        acc = self.accelerator
        acc.save_state(str(checkpoint))
        if acc.distributed_type == DistributedType.DEEPSPEED:
            # DeepSpeed saved its own shards; the model folder needs the gathered weights
            state = acc.get_state_dict(self.update.model)
            if acc.is_main_process:
                self.model.save_pretrained(checkpoint, state_dict=state)
        acc.wait_for_everyone()

    def load(self, checkpoint: Path) -> None:
        """Restore the state :meth:`save` wrote, the random state of this process included."""
        if not Path(checkpoint).is_dir():
            raise CheckpointError(f"{checkpoint} is not a checkpoint folder")
        self.accelerator.load_state(str(checkpoint))
        if self.vllm_generation is not None:
            self.vllm_generation.sync_weights()

    def _save_model(self, models: list[Any], weights: list[Any], output_dir: str) -> None:
        # accelerate would save the DDP-wrapped state dict under its own name; the policy
        # goes out as a model folder instead, once (rank 0), and accelerate saves the rest
        if not weights:  # DeepSpeed: handled in save()
            return
        if self.accelerator.is_main_process:
            from transformers.utils import logging as hf_logging

            shown = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()  # the run's own progress says "saving checkpoint-N"
            try:
                self.accelerator.unwrap_model(models[0]).save_pretrained(output_dir)
                self.tokenizer.save_pretrained(output_dir)
            finally:
                if shown:
                    hf_logging.enable_progress_bar()
        weights.clear()

    def _load_model(self, models: list[Any], input_dir: str) -> None:
        from accelerate.utils import DistributedType

        if self.accelerator.distributed_type == DistributedType.DEEPSPEED:
            return  # accelerate loads DeepSpeed's own shards
        model = self.accelerator.unwrap_model(models[0])
        load_model_folder(model, Path(input_dir))
        models.clear()


def load_model_folder(model: Any, folder: Path) -> None:
    """Load the safetensors weights of a ``save_pretrained`` folder into ``model`` in place.

    Tied weights (an LM head sharing the embedding) are saved once; every other parameter
    must be in the files, or :class:`CheckpointError` says which are missing."""
    from safetensors.torch import load_file

    index = folder / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    missing_files = [f for f in files if not (folder / f).is_file()]
    if missing_files:
        raise CheckpointError(f"{folder} holds no {', '.join(missing_files)}: not a complete model checkpoint")
    state: dict[str, Any] = {}
    for f in files:
        state.update(load_file(str(folder / f)))
    missing, unexpected = model.load_state_dict(state, strict=False)
    loaded = {p.data_ptr() for name, p in model.state_dict().items() if name in state}
    untied = [name for name in missing if model.state_dict()[name].data_ptr() not in loaded]
    if unexpected or untied:
        raise CheckpointError(f"{folder} does not fit this model: missing {untied[:5]}, unexpected {unexpected[:5]}")
