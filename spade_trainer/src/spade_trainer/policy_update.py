"""One GRPO update of a causal LM from scored samples: the loss, the backward pass, the step.

This is the policy-gradient step as a component a loop calls (torch only, no trainer
framework): given :class:`~.samples.PolicySample` objects that already carry their
advantages, it scores their completions under the current weights and takes one optimizer
step on the clipped surrogate

    L = - sum_t mask_t * min(r_t A, clip(r_t, 1 - eps, 1 + eps) A) / sum_t mask_t

where ``r_t = exp(logp_t - logp_old_t)`` (``logp_old`` are the sampling logprobs the
rollout recorded, at the sampling temperature), ``mask`` is ``env_mask`` (model tokens
only; prompts, prefills and environment turns are never trained) and the sum runs over the
whole batch (token-level mean, as DAPO and TRL's default loss). Samples whose advantage is
0 add no gradient, so they are left out of the forward pass; when none carries signal
there is no forward or backward pass at all and :attr:`UpdateStats.skipped` says so.
"""

from __future__ import annotations

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
    #: PPO/GRPO clip range of the importance ratio.
    clip_epsilon: float = 0.2
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
        if self.clip_epsilon <= 0:
            raise TrainerError(f"clip_epsilon must be > 0, got {self.clip_epsilon}")


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
    #: Mean |r - 1| over trained tokens: how far the weights had moved from the sampling ones.
    ratio_drift: float | None = None
    clipped_fraction: float | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class GRPOUpdate:
    """Holds the optimizer of ``model`` and applies one update per :meth:`step` call."""

    def __init__(self, model: Any, settings: UpdateSettings | None = None) -> None:
        import torch

        self.model = model
        self.settings = settings or UpdateSettings()
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise TrainerError("the model has no trainable parameters")
        self.optimizer = torch.optim.AdamW(params, lr=self.settings.learning_rate,
                                           weight_decay=self.settings.weight_decay)
        self.steps = 0

    def step(self, samples: Sequence[PolicySample]) -> UpdateStats:
        """One optimizer step on ``samples`` (see the module docstring)."""
        import torch

        t0 = time.perf_counter()
        # micro-batches of similar lengths pad least
        live = sorted((s for s in samples if s.advantage != 0.0), key=lambda s: len(s.prompt_ids) + len(s.completion_ids))
        masks = [s.env_mask if s.env_mask is not None else [1] * len(s.completion_ids) for s in live]
        tokens = sum(sum(m) for m in masks)
        if not live or tokens == 0:
            return UpdateStats(len(samples), len(live), 0, True, seconds=time.perf_counter() - t0)
        cfg = self.settings
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total_loss, drift, clipped = 0.0, 0.0, 0.0
        try:
            for start in range(0, len(live), cfg.micro_batch):
                batch = live[start : start + cfg.micro_batch]
                bmasks = masks[start : start + cfg.micro_batch]
                logp, old, mask, adv = self._score(batch, bmasks, device)
                # environment and padding positions carry no sampling logprob: their ratio is 1
                ratio = torch.exp((logp - old) * mask)
                low, high = 1.0 - cfg.clip_epsilon, 1.0 + cfg.clip_epsilon
                surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, low, high) * adv)
                loss = -(surrogate * mask).sum() / tokens
                loss.backward()
                with torch.no_grad():
                    total_loss += float(loss)
                    drift += float(((ratio - 1).abs() * mask).sum())
                    clipped += float((((ratio < low) | (ratio > high)).float() * mask).sum())
            params = [p for g in self.optimizer.param_groups for p in g["params"]]
            norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf"))
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
        return UpdateStats(len(samples), len(live), tokens, False, loss=total_loss, grad_norm=grad_norm,
                           ratio_drift=drift / tokens, clipped_fraction=clipped / tokens,
                           seconds=time.perf_counter() - t0)

    def _score(self, batch: Sequence[PolicySample], masks: Sequence[Sequence[int]], device: Any) -> tuple[Any, ...]:
        """Logprobs of each completion token under the current weights, with the sampling
        logprobs, the mask and the advantage, each ``[batch, longest completion]``.

        Rows are left-padded so that every completion ends at the last position; only the
        completion's positions are sent through the LM head (``logits_to_keep``), and
        positions are counted from each row's first real token, as generation counted them.
        """
        import torch

        width = max(len(s.prompt_ids) + len(s.completion_ids) for s in batch)
        keep = max(len(s.completion_ids) for s in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        old = torch.zeros((len(batch), keep))
        mask = torch.zeros((len(batch), keep))
        adv = torch.zeros((len(batch), 1))
        for row, (s, m) in enumerate(zip(batch, masks, strict=True)):
            seq = list(s.prompt_ids) + list(s.completion_ids)
            ids[row, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            attention[row, width - len(seq) :] = 1
            n = len(s.completion_ids)
            old[row, keep - n :] = torch.tensor(s.logprobs, dtype=torch.float32)
            mask[row, keep - n :] = torch.tensor(m, dtype=torch.float32)
            adv[row, 0] = s.advantage
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=ids.to(device), attention_mask=attention.to(device),
                         position_ids=positions.to(device), logits_to_keep=keep + 1, use_cache=False)
        # logits at position t predict token t + 1: the last keep + 1 positions cover the
        # completion's keep tokens
        logits = out.logits[:, :-1, :].float() / self.settings.temperature
        targets = ids[:, width - keep :].to(device)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return logp, old.to(device), mask.to(device), adv.to(device)
