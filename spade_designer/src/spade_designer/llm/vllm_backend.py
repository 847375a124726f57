"""Batched offline generation with a vLLM engine on GPU (optional extra ``vllm``).

``vllm`` is imported only when this backend is created. ``llm=`` accepts an engine that
is already running (colocated with training, or a test's stand-in with the same
``chat(messages, sampling_params, use_tqdm=, add_generation_prompt=,
continue_final_message=)`` method).

What is used of vLLM's offline API (``vllm.LLM``): ``LLM.chat`` with a list of
conversations and one ``SamplingParams`` per conversation (``n``, ``max_tokens``,
``temperature``, ``top_p``, ``seed``, ``stop``, ``logprobs``); each ``RequestOutput``
gives ``prompt_token_ids`` and ``outputs[0]`` with ``text``, ``token_ids``,
``finish_reason`` and ``logprobs``: one ``{token_id: Logprob}`` per generated token, as
a list or vLLM's ``FlatLogprobs`` (which iterates the same way). ``logprobs=0`` asks for
the sampled token's log-probability only; vLLM reports it from the raw model output
(before temperature), the same convention as the transformers backend.
"""

from __future__ import annotations

from typing import Any

from ..errors import LLMBackendError
from .base import ChatBackend, Completion, Conversation, SamplingRequest, apply_stop, continues_final_message


def _vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise LLMBackendError(
            f"vllm is not installed ({exc}); install the extra: pip install 'spade-designer[vllm]' "
            "(a CUDA build: it needs a GPU)",
            backend="vllm",
        ) from None
    return vllm


class VLLMBackend(ChatBackend):
    """:class:`~spade_designer.llm.base.LLMBackend` over ``vllm.LLM.chat``: one engine call
    per batch (two when a batch mixes prefilled replies with fresh ones, since vLLM takes
    ``continue_final_message`` per call)."""

    continues_final_message = True

    def __init__(
        self,
        model: str | None = None,
        *,
        llm: Any = None,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        dtype: str = "auto",
        logprobs: bool = True,
        name: str = "vllm",
        **engine_options: Any,
    ) -> None:
        self.name = name
        self.logprobs = logprobs
        self._vllm = _vllm()
        if llm is not None:
            self.llm = llm
            self.model_name = model or type(llm).__name__
            return
        if not model:
            raise LLMBackendError("model= (a local folder or model id) is required", backend=name)
        self.model_name = model
        options: dict[str, Any] = {
            "model": model,
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "dtype": dtype,
            **engine_options,
        }
        if max_model_len is not None:
            options["max_model_len"] = max_model_len
        try:
            self.llm = self._vllm.LLM(**options)
        except Exception as exc:  # engine start-up errors come in many types
            raise LLMBackendError(f"could not start the engine for {model}: {exc}", backend=name) from exc

    def generate(self, conversations: list[Conversation], sampling: SamplingRequest) -> list[Completion]:
        params = [
            self._vllm.SamplingParams(
                n=1,
                max_tokens=sampling.max_new_tokens,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                seed=sampling.item_seed(i),
                stop=list(sampling.stop) or None,
                logprobs=0 if self.logprobs else None,  # 0: only the sampled token's
            )
            for i in range(len(conversations))
        ]
        out: list[Completion | None] = [None] * len(conversations)
        for prefilled in (False, True):
            idx = [i for i, c in enumerate(conversations) if continues_final_message(c) == prefilled]
            if not idx:
                continue
            outputs = self.llm.chat(
                [conversations[i] for i in idx],
                [params[i] for i in idx],
                use_tqdm=False,
                add_generation_prompt=not prefilled,
                continue_final_message=prefilled,
            )
            if len(outputs) != len(idx):
                raise LLMBackendError(
                    f"engine returned {len(outputs)} outputs for {len(idx)} conversations", backend=self.name
                )
            for i, o in zip(idx, outputs, strict=True):
                out[i] = self._completion(o, sampling.stop)
        return [c for c in out if c is not None]

    def _completion(self, request_output: Any, stop: tuple[str, ...]) -> Completion:
        out = request_output.outputs[0]
        prompt_ids = list(request_output.prompt_token_ids or [])
        ids = list(out.token_ids or [])
        logprobs = None
        if self.logprobs and out.logprobs is not None:
            steps = out.logprobs
            if len(steps) != len(ids):
                raise LLMBackendError(
                    f"engine returned {len(steps)} log-probabilities for {len(ids)} tokens", backend=self.name
                )
            try:
                logprobs = [float(step[tok].logprob) for tok, step in zip(ids, steps, strict=True)]
            except KeyError as exc:
                raise LLMBackendError(
                    f"engine gave no log-probability for sampled token {exc}", backend=self.name
                ) from None
        text, _ = apply_stop(out.text, stop)
        return Completion(
            text=text,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(ids),
            finish_reason=str(out.finish_reason or "stop"),
            prompt_ids=prompt_ids,
            completion_ids=ids,
            logprobs=logprobs,
        )
