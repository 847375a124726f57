"""The policy as the rollout engine sees it: token ids in, sampled token ids out.

Rollouts feed the policy *token ids*, not re-rendered chat text, so the multi-turn
trajectory the trainer scores is exactly the one that was sampled (model tokens and
environment tokens concatenated, told apart by ``env_mask``).

Implementations:

* :class:`TransformersPolicy` — ``model.generate`` on an already-loaded causal LM (the
  trainer's own model object, so rollouts always use the current weights);
* :class:`VLLMPolicy` — a vLLM engine (colocated ``LLM`` or TRL's server client), chosen
  by configuration on machines with a GPU;
* :class:`InstantPolicy` — a zero-cost policy for measuring the engine's own overhead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .errors import RolloutError


@dataclass(frozen=True)
class Generation:
    """One sampled continuation.

    ``finished`` is true when the model emitted a stop token (included in
    ``completion_ids``); false when ``max_new_tokens`` cut it.
    """

    completion_ids: list[int]
    logprobs: list[float]
    finished: bool


@dataclass(frozen=True)
class Sampling:
    """Sampling settings shared by every call of one rollout."""

    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise RolloutError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise RolloutError(f"top_p must be in (0, 1], got {self.top_p}")


#: A batch's seeding: ``None`` (unseeded), one seed for the batch (request ``i`` uses
#: ``seed + i`` where a backend seeds per request, as the designer's backends do), or one
#: seed per prompt.
Seeds = int | Sequence[int] | None


def request_seeds(seed: Seeds, n: int) -> list[int | None]:
    """One seed per request of a batch of ``n`` (see :data:`Seeds`)."""
    if seed is None:
        return [None] * n
    if isinstance(seed, int):
        from spade_designer.llm.base import SamplingRequest

        batch = SamplingRequest(seed=seed)
        return [batch.item_seed(i) for i in range(n)]
    seeds = [int(s) for s in seed]
    if len(seeds) != n:
        raise RolloutError(f"{len(seeds)} seeds for {n} prompts")
    return list(seeds)


def batch_seed(seed: Seeds) -> int | None:
    """One seed standing for a whole batch (a backend that seeds a batch, not a request)."""
    if seed is None or isinstance(seed, int):
        return seed
    mixed = 0
    for s in seed:
        mixed = (mixed * 1_000_003 + int(s)) % (2**63 - 1)
    return mixed


#: Where a reply ends: given the token ids sampled so far, the number of them that make the
#: reply (the rest is dropped), or ``None`` while it goes on. A policy may stop sampling a
#: row early once it answers; the rollout engine cuts every reply by it either way.
ReplyEnd = Callable[[Sequence[int]], "int | None"]


@runtime_checkable
class TokenPolicy(Protocol):
    """Batched generation from token ids."""

    def generate(
        self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling, seed: Seeds
    ) -> list[Generation]:
        """One :class:`Generation` per prompt, in order; ``seed`` as in :data:`Seeds`.

        A policy may also take ``stop: ReplyEnd`` (the engine passes it when replies are cut
        at the action's end, and only to a policy whose ``generate`` accepts it)."""
        ...


def accepts_stop(policy: Any) -> bool:
    """Whether ``policy.generate`` takes the optional ``stop`` rule (:data:`ReplyEnd`)."""
    import inspect

    try:
        params = inspect.signature(policy.generate).parameters
    except (TypeError, ValueError):
        return False
    return "stop" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


class InstantPolicy:
    """Answers every prompt at once with a fixed action (benchmarks of the engine itself)."""

    def __init__(self, completion_ids: Sequence[int], *, finished: bool = True) -> None:
        self._ids = list(completion_ids)
        self._logprobs = [0.0] * len(self._ids)
        self._finished = finished

    def generate(
        self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling, seed: Seeds
    ) -> list[Generation]:
        ids = self._ids[:max_new_tokens]
        return [Generation(ids, self._logprobs[: len(ids)], self._finished) for _ in prompts]


class TransformersPolicy:
    """Batched sampling with ``model.generate`` (left padding), returning per-token logprobs.

    ``model`` is used as is (not copied): pass the trainer's model and rollouts follow its
    updates. Generation runs under ``torch.no_grad`` in eval mode; the previous mode is
    restored afterwards.
    """

    def __init__(self, model: Any, tokenizer: Any, *, stop_token_ids: Sequence[int] | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        eos = tokenizer.eos_token_id
        self.stop_token_ids = list(stop_token_ids) if stop_token_ids else ([eos] if eos is not None else [])
        if not self.stop_token_ids:
            raise RolloutError("the tokenizer has no eos token; pass stop_token_ids")
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_token_ids[0]

    def generate(
        self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling, seed: Seeds,
        stop: ReplyEnd | None = None,
    ) -> list[Generation]:
        import torch

        if not prompts:
            return []
        if max_new_tokens < 1:
            raise RolloutError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, p in enumerate(prompts):
            if not p:
                raise RolloutError("cannot generate from an empty prompt")
            input_ids[row, width - len(p) :] = torch.tensor(list(p), dtype=torch.long)
            attention[row, width - len(p) :] = 1
        # model.generate samples a batch from one generator: per-prompt seeds fold into one
        one = batch_seed(seed)
        if one is not None:
            torch.manual_seed(one)
        greedy = sampling.temperature == 0
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention.to(device),
                    max_new_tokens=max_new_tokens,
                    do_sample=not greedy,
                    temperature=None if greedy else sampling.temperature,
                    top_p=None if greedy else sampling.top_p,
                    top_k=None,
                    eos_token_id=self.stop_token_ids,
                    pad_token_id=self.pad_token_id,
                    output_logits=True,
                    return_dict_in_generate=True,
                    stopping_criteria=_stopping(stop, width),
                )
        finally:
            if was_training:
                self.model.train()
        new = out.sequences[:, width:].cpu()
        # logprobs of the sampled tokens under the temperature-scaled model distribution (before
        # top-p), which is how TRL scores the same tokens in the loss
        scale = sampling.temperature if sampling.temperature > 0 else 1.0
        steps = (torch.stack(out.logits, dim=1).float() / scale).log_softmax(-1).cpu()
        chosen = steps.gather(-1, new[:, : steps.shape[1]].unsqueeze(-1)).squeeze(-1)
        stops = set(self.stop_token_ids)
        result: list[Generation] = []
        for row in range(len(prompts)):
            ids = new[row].tolist()
            end = next((i + 1 for i, t in enumerate(ids) if t in stops), None)
            finished = end is not None
            ids = ids[:end] if finished else ids
            cut = stop(ids) if stop is not None and not finished else None
            if cut is not None:
                ids = ids[:cut]  # the action is complete: what follows (padding) is not the reply
            lps = chosen[row, : len(ids)].tolist()
            result.append(Generation(ids, [lp if lp == lp and lp > -1e30 else -1e4 for lp in lps], finished))
        return result


def _stopping(stop: ReplyEnd | None, width: int) -> Any:
    """``model.generate``'s stopping criteria for a :data:`ReplyEnd` (``None``: none)."""
    if stop is None:
        return None
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _ReplyEnds(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = [stop(row) is not None for row in input_ids[:, width:].tolist()]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_ReplyEnds()])


class VLLMPolicy:
    """Generation on a vLLM engine from token ids.

    ``engine`` is either a ``vllm.LLM`` (colocated) or TRL's ``VLLMClient`` (server mode);
    both are driven through :meth:`generate` below. Only the interface is exercised on
    machines without a GPU (the vLLM wheel is a CUDA build).

    Colocated, every request gets its own ``SamplingParams`` with its own seed
    (:func:`request_seeds`): vLLM seeds per request, so one seed for a whole batch would
    make identical prompts (K plays of one environment) sample identical replies. TRL's
    server client takes one set of parameters per call, so server mode sends no seed
    (each request is sampled independently; not reproducible).
    """

    def __init__(self, engine: Any, *, stop_token_ids: Sequence[int]) -> None:
        self.engine = engine
        self.stop_token_ids = list(stop_token_ids)

    def generate(
        self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling, seed: Seeds
    ) -> list[Generation]:
        if not prompts:
            return []
        if hasattr(self.engine, "llm_engine") or type(self.engine).__name__ == "LLM":
            return self._generate_colocated(prompts, max_new_tokens, sampling, seed)
        return self._generate_server(prompts, max_new_tokens, sampling)

    def _generate_colocated(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, sampling: Sampling, seed: Seeds
    ) -> list[Generation]:
        from vllm import SamplingParams

        params = [
            SamplingParams(
                n=1,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=max_new_tokens,
                stop_token_ids=self.stop_token_ids,
                logprobs=0,
                seed=s,
            )
            for s in request_seeds(seed, len(prompts))
        ]
        outs = self.engine.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
        result = []
        for out in outs:
            comp = out.outputs[0]
            ids = list(comp.token_ids)
            lps = [next(iter(d.values())).logprob if d else 0.0 for d in (comp.logprobs or [{}] * len(ids))]
            result.append(Generation(ids, lps, comp.finish_reason == "stop"))
        return result

    def _generate_server(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, sampling: Sampling
    ) -> list[Generation]:
        out = self.engine.generate(
            prompts=[list(p) for p in prompts],
            n=1,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=max_new_tokens,
        )
        result = []
        stops = set(self.stop_token_ids)
        for ids, lps in zip(out["completion_ids"], out["logprobs"], strict=True):
            flat = [lp[0] if isinstance(lp, list) else lp for lp in lps]
            result.append(Generation(list(ids), flat, bool(ids) and ids[-1] in stops))
        return result
