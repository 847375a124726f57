"""Batched offline generation with a vLLM engine on GPU (optional extra ``vllm``).

``vllm`` is imported only when this backend is created. ``llm=`` accepts an engine that
is already running (colocated with training, or a test's stand-in with the same
``chat(messages, sampling_params, use_tqdm=)`` method).
"""

from __future__ import annotations

from typing import Any

from ..errors import LLMBackendError
from .base import Completion, Conversation, apply_stop, check_conversations, check_sampling


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


class VLLMBackend:
    """:class:`~spade_designer.llm.base.LLMBackend` over ``vllm.LLM.chat``: one call per batch."""

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

    def chat(
        self,
        conversations: list[Conversation],
        *,
        max_new_tokens: int = 512,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: list[str] | None = None,
    ) -> list[Completion]:
        check_conversations(conversations, backend=self.name)
        check_sampling(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, backend=self.name)
        params = [
            self._vllm.SamplingParams(
                n=1,
                max_tokens=max_new_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=None if seed is None else seed + i,
                stop=list(stop) if stop else None,
                logprobs=0 if self.logprobs else None,  # 0: only the sampled token's
            )
            for i in range(len(conversations))
        ]
        outputs = self.llm.chat(conversations, params, use_tqdm=False)
        if len(outputs) != len(conversations):
            raise LLMBackendError(
                f"engine returned {len(outputs)} outputs for {len(conversations)} conversations", backend=self.name
            )
        return [self._completion(o, stop) for o in outputs]

    def _completion(self, request_output: Any, stop: list[str] | None) -> Completion:
        out = request_output.outputs[0]
        prompt_ids = list(request_output.prompt_token_ids or [])
        ids = list(out.token_ids or [])
        logprobs = None
        if self.logprobs and out.logprobs:
            logprobs = [float(step[tok].logprob) for tok, step in zip(ids, out.logprobs, strict=False)]
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
