"""One GRPO update of a causal LM from scored samples: the loss, the backward pass, the step.

This is the policy-gradient step as a component a loop calls (torch only, no trainer
framework): given :class:`~.samples.PolicySample` objects that already carry their
advantages, it scores their completions under the current weights and takes one optimizer
step on GRPO's surrogate for one step per batch

    L = - sum_t mask_t * r_t * A / sum_t mask_t,   r_t = exp(logp_t - stopgrad(logp_t))

(the ratio is 1 and its gradient is that of ``logp_t``: PPO's clip never acts in the first
step on a batch, so it is left out, as in TRL's GRPO with one iteration per generation).
``logp`` is taken at the sampling temperature; ``mask`` is ``env_mask`` (model tokens
only; prompts, prefills and environment turns are never trained) and the sum runs over the
whole batch (token-level mean, as DAPO and TRL's default loss). The logprobs the rollout
recorded are not in the loss: they differ from the trainer's by the sampler (another
engine, precision or temperature, as the designer records its raw logprobs), and
:attr:`UpdateStats.sampler_drift` reports by how much. Samples whose advantage is
0 add no gradient, so they are left out of the forward pass; when none carries signal
there is no forward or backward pass at all and :attr:`UpdateStats.skipped` says so.

Given an ``accelerate`` ``Accelerator``, the model and optimizer are prepared by it and
every process of a launch takes part in each step: the token count that normalises the
loss and the number of micro-batches are agreed over all processes (a process with fewer
samples runs zero-loss passes, so that data-parallel gradient averaging lines up), the
gradients are averaged once, on the last micro-batch, and a step is skipped only when no
process has a sample with signal. The loss is then the token-level mean over every
process's tokens, as one process holding all the samples would compute.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import TrainerError
from .samples import PolicySample


@dataclass(frozen=True)
class UpdateSettings:
    """The optimizer and loss settings of :class:`GRPOUpdate`."""

    learning_rate: float = 1e-5
    #: Gradient norm clip (0: none).
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    #: Samples per forward/backward pass (gradients accumulate over the batch).
    micro_batch: int = 8
    #: The sampling temperature the logprobs were recorded at (logits are divided by it).
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if self.learning_rate < 0 or not math.isfinite(self.learning_rate):
            raise TrainerError(f"learning_rate must be a finite number >= 0, got {self.learning_rate!r}")
        if self.micro_batch < 1:
            raise TrainerError(f"micro_batch must be >= 1, got {self.micro_batch}")
        if self.temperature <= 0:
            raise TrainerError(f"temperature must be > 0 for a policy gradient, got {self.temperature}")


@dataclass(frozen=True)
class UpdateStats:
    """What one update did."""

    samples: int
    #: Samples with a non-zero advantage (the ones that entered the forward pass).
    with_signal: int
    #: Model tokens trained.
    tokens: int
    skipped: bool
    loss: float | None = None
    grad_norm: float | None = None
    #: Mean |p / p_sampled - 1| over trained tokens: how far the trainer's probabilities of the
    #: sampled tokens are from the ones the rollout recorded (0 when the same weights sampled
    #: them at the same temperature; a large value is a mismatch worth a look).
    sampler_drift: float | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class GRPOUpdate:
    """Holds the optimizer of ``model`` and applies one update per :meth:`step` call."""

    def __init__(self, model: Any, settings: UpdateSettings | None = None, *, accelerator: Any = None) -> None:
        import torch

        self.settings = settings or UpdateSettings()
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise TrainerError("the model has no trainable parameters")
        optimizer = torch.optim.AdamW(params, lr=self.settings.learning_rate, weight_decay=self.settings.weight_decay)
        self.accelerator = accelerator
        if accelerator is not None:
            model, optimizer = accelerator.prepare(model, optimizer)
        #: The model the loss runs through (wrapped for data parallelism under a launch).
        self.model = model
        self.optimizer = optimizer
        self.steps = 0

    def _agreed(self, live: int, tokens: int, rounds: int) -> tuple[int, int, int, int]:
        """``(live, tokens, rounds, processes)`` over every process of the launch."""
        acc = self.accelerator
        if acc is None or acc.num_processes == 1:
            return live, tokens, rounds, 1
        import torch

        counts = acc.gather(torch.tensor([[live, tokens, rounds]], dtype=torch.long, device=acc.device)).cpu()
        return int(counts[:, 0].sum()), int(counts[:, 1].sum()), int(counts[:, 2].max()), acc.num_processes

    def step(self, samples: Sequence[PolicySample]) -> UpdateStats:
        """One optimizer step on ``samples`` (see the module docstring)."""
        import torch

        t0 = time.perf_counter()
        # micro-batches of similar lengths pad least
        live = sorted((s for s in samples if s.advantage != 0.0), key=lambda s: len(s.prompt_ids) + len(s.completion_ids))
        masks = [s.env_mask if s.env_mask is not None else [1] * len(s.completion_ids) for s in live]
        tokens = sum(sum(m) for m in masks)
        cfg = self.settings
        if tokens == 0:
            live, masks = [], []
        rounds = -(-len(live) // cfg.micro_batch)
        all_live, all_tokens, rounds, processes = self._agreed(len(live), tokens, rounds)
        if all_live == 0 or all_tokens == 0:
            return UpdateStats(len(samples), len(live), 0, True, seconds=time.perf_counter() - t0)
        acc = self.accelerator
        device = acc.device if acc is not None else next(self.model.parameters()).device
        was_training = self.model.training
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total_loss, drift = 0.0, 0.0
        # data parallelism averages the processes' gradients: times the number of processes,
        # each process's share of the loss sums to the mean over every process's tokens
        scale = processes / all_tokens
        try:
            for r in range(rounds):
                batch = live[r * cfg.micro_batch : (r + 1) * cfg.micro_batch]
                bmasks = masks[r * cfg.micro_batch : (r + 1) * cfg.micro_batch]
                last = r == rounds - 1
                # gradients are averaged across processes once, on the last micro-batch
                sync = contextlib.nullcontext() if acc is None or last else acc.no_sync(self.model)
                with sync:
                    if not batch:  # another process has more micro-batches: take part with no loss
                        loss = self._zero_loss(device)
                        self._backward(loss)
                        continue
                    logp, sampled, mask, adv = self._score(batch, bmasks, device)
                    ratio = torch.exp(logp - logp.detach())
                    loss = -(ratio * adv * mask).sum() * scale
                    self._backward(loss)
                with torch.no_grad():
                    total_loss += float(loss) / processes
                    # environment and padding positions carry no sampled logprob: masked out
                    drift += float(((torch.exp((logp - sampled) * mask) - 1).abs() * mask).sum())
            max_norm = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
            if acc is not None:
                norm = acc.clip_grad_norm_(self.model.parameters(), max_norm)
            else:
                norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
            grad_norm = float(norm)
            if math.isfinite(grad_norm):
                self.optimizer.step()
            else:
                raise TrainerError(f"non-finite gradient norm ({grad_norm}): the update was not applied")
        finally:
            self.optimizer.zero_grad(set_to_none=True)
            if not was_training:
                self.model.eval()
        self.steps += 1
        local = max(tokens, 1)
        return UpdateStats(len(samples), len(live), tokens, False, loss=total_loss, grad_norm=grad_norm,
                           sampler_drift=drift / local,
                           seconds=time.perf_counter() - t0)

    def state_dict(self) -> dict[str, int]:
        """The step counter (the optimizer and model have checkpoints of their own)."""
        return {"steps": self.steps}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.steps = int(state["steps"])

    def _backward(self, loss: Any) -> None:
        if self.accelerator is not None:
            self.accelerator.backward(loss)
        else:
            loss.backward()

    def _zero_loss(self, device: Any) -> Any:
        """A loss of 0 whose backward pass reaches every parameter (a data-parallel backward
        pass must be taken by every process)."""
        import torch

        ids = torch.zeros((1, 1), dtype=torch.long, device=device)
        return self.model(input_ids=ids, use_cache=False).logits.sum() * 0.0

    def _score(self, batch: Sequence[PolicySample], masks: Sequence[Sequence[int]], device: Any) -> tuple[Any, ...]:
        """Logprobs of each completion token under the current weights, with the sampling
        logprobs, the mask and the advantage, each ``[batch, longest completion]``.

        Rows are left-padded so that every completion ends at the last position; only the
        positions that predict a trained token of some row are sent through the LM head
        (``logits_to_keep`` as indices: environment tokens, a multi-turn completion's larger
        part, get no logits at all), and positions are counted from each row's first real
        token, as generation counted them. Returned tensors are ``[batch, kept positions]``.
        """
        import torch

        width = max(len(s.prompt_ids) + len(s.completion_ids) for s in batch)
        keep = max(len(s.completion_ids) for s in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        sampled = torch.zeros((len(batch), keep))
        mask = torch.zeros((len(batch), keep))
        adv = torch.zeros((len(batch), 1))
        for row, (s, m) in enumerate(zip(batch, masks, strict=True)):
            seq = list(s.prompt_ids) + list(s.completion_ids)
            ids[row, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            attention[row, width - len(seq) :] = 1
            n = len(s.completion_ids)
            sampled[row, keep - n :] = torch.tensor(s.logprobs, dtype=torch.float32)
            mask[row, keep - n :] = torch.tensor(m, dtype=torch.float32)
            adv[row, 0] = s.advantage
        # completion token j sits at position width - keep + j and is predicted at the one before
        trained = mask.sum(0).nonzero().squeeze(-1)
        predictors = trained + (width - keep - 1)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=ids.to(device), attention_mask=attention.to(device),
                         position_ids=positions.to(device), logits_to_keep=predictors.to(device), use_cache=False)
        logits = out.logits.float() / self.settings.temperature
        targets = ids[:, predictors + 1].to(device)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return logp, sampled[:, trained].to(device), mask[:, trained].to(device), adv.to(device)
