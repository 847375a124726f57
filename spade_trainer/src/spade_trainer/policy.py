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


@dataclass
class _Continued:
    """What one :meth:`TransformersPolicy.generate` call leaves for the next: every token of
    its batch (prompts left-padded, replies, the padding after a finished reply), which of
    them are each row's real tokens (its prompt and the reply it returned), and the model's
    key/value cache of them."""

    sequences: Any  # (rows, length) token ids
    real: Any  # (rows, length) 1 on real tokens
    tokens: list[list[int]]  # each row's real tokens: what a prompt continuing it starts with
    cache: Any


class TransformersPolicy:
    """Batched sampling with ``model.generate`` (left padding), returning per-token logprobs.

    ``model`` is used as is (not copied): pass the trainer's model and rollouts follow its
    updates. Generation runs under ``torch.no_grad`` in eval mode; the previous mode is
    restored afterwards.

    A multi-turn rollout asks for each turn with the whole conversation so far, which is the
    last turn's prompt and reply plus the environment's answer. When every prompt of a call
    continues a row of the previous call that way, the previous call's key/value cache is
    reused and only the new tokens are read (the environment's answer; the earlier turns are
    not read again): the same tokens at the same positions, so the same distribution up to
    floating-point rounding. :meth:`release` drops the cache (the rollout engine calls it at
    the end of every rollout, so a cache never outlives the weights that computed it).
    """

    def __init__(self, model: Any, tokenizer: Any, *, stop_token_ids: Sequence[int] | None = None,
                 reuse_cache: bool = True) -> None:
        self.model = model
        self.tokenizer = tokenizer
        eos = tokenizer.eos_token_id
        self.stop_token_ids = list(stop_token_ids) if stop_token_ids else ([eos] if eos is not None else [])
        if not self.stop_token_ids:
            raise RolloutError("the tokenizer has no eos token; pass stop_token_ids")
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_token_ids[0]
        self.reuse_cache = reuse_cache
        self._last: _Continued | None = None
        #: Prompt tokens read by the model (new ones) and prompt tokens given, since creation.
        self.read_tokens = self.prompt_tokens = 0

    def release(self) -> None:
        """Forget the previous call's cache (the weights may change next)."""
        self._last = None

    def _continued_rows(self, prompts: Sequence[Sequence[int]]) -> list[int] | None:
        """For each prompt, the row of the previous call whose real tokens it extends by at
        least one token (rows in the previous call's order, as the engine keeps them), or
        ``None`` when some prompt continues none."""
        last = self._last
        if last is None or not self.reuse_cache:
            return None
        rows, at = [], 0
        for p in prompts:
            while at < len(last.tokens):
                t = last.tokens[at]
                at += 1
                if len(p) > len(t) and list(p[: len(t)]) == t:
                    rows.append(at - 1)
                    break
            else:
                return None
        return rows

    def _inputs(self, prompts: Sequence[Sequence[int]]) -> tuple[Any, Any, Any]:
        """``(input_ids, attention_mask, cache)`` of a call: every prompt left-padded and no
        cache, or the previous call's rows continued by each prompt's new tokens (left-padded
        among themselves) with its cache."""
        import torch

        def padded(seqs: Sequence[Sequence[int]]) -> tuple[Any, Any]:
            width = max(len(q) for q in seqs)
            ids = torch.full((len(seqs), width), self.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for row, q in enumerate(seqs):
                if q:
                    ids[row, width - len(q):] = torch.tensor(list(q), dtype=torch.long)
                    mask[row, width - len(q):] = 1
            return ids, mask

        for p in prompts:
            if not p:
                raise RolloutError("cannot generate from an empty prompt")
        self.prompt_tokens += sum(len(p) for p in prompts)
        rows = self._continued_rows(prompts)
        last, self._last = self._last, None
        if rows is None or last is None:
            ids, mask = padded(prompts)
            self.read_tokens += int(mask.sum())
            return ids, mask, None
        index = torch.tensor(rows, dtype=torch.long)
        new = [list(p[len(last.tokens[r]):]) for p, r in zip(prompts, rows, strict=True)]
        new_ids, new_mask = padded(new)
        cache = last.cache
        cache.batch_select_indices(index.to(last.sequences.device))
        self.read_tokens += int(new_mask.sum())
        return (torch.cat([last.sequences[index].cpu(), new_ids], dim=1),
                torch.cat([last.real[index].cpu(), new_mask], dim=1), cache)

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
        input_ids, attention, cache = self._inputs(prompts)
        width = input_ids.shape[1]
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
                    use_cache=True,
                    **({"cache": cache} if cache is not None else {}),
                )
        finally:
            if was_training:
                self.model.train()
        new = out.sequences[:, width:].cpu()
        # logprobs of the sampled tokens under the temperature-scaled model distribution (before
        # top-p), which is how TRL scores the same tokens in the loss; read row by row from
        # each step's logits (log_softmax of one step at a time, never the whole [rows, steps,
        # vocabulary] tensor at once)
        scale = sampling.temperature if sampling.temperature > 0 else 1.0
        chosen = torch.zeros(new.shape, dtype=torch.float32)
        for step, logits in enumerate(out.logits):
            picked = new[:, step].unsqueeze(-1).to(logits.device)
            chosen[:, step] = (logits.float() / scale).log_softmax(-1).gather(-1, picked).squeeze(-1).cpu()
        stops = set(self.stop_token_ids)
        result: list[Generation] = []
        kept = torch.zeros(new.shape, dtype=torch.long)
        for row in range(len(prompts)):
            ids = new[row].tolist()
            end = next((i + 1 for i, t in enumerate(ids) if t in stops), None)
            finished = end is not None
            ids = ids[:end] if finished else ids
            cut = stop(ids) if stop is not None and not finished else None
            if cut is not None:
                ids = ids[:cut]  # the action is complete: what follows (padding) is not the reply
            kept[row, : len(ids)] = 1
            lps = chosen[row, : len(ids)].tolist()
            result.append(Generation(ids, [lp if lp == lp and lp > -1e30 else -1e4 for lp in lps], finished))
        if self.reuse_cache:
            self._last = _Continued(out.sequences, torch.cat([attention, kept], dim=1),
                                    [list(p) + g.completion_ids for p, g in zip(prompts, result, strict=True)],
                                    out.cache)
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
