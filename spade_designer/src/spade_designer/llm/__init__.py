"""LLM backends: one interface (:class:`LLMBackend`) for the designer and the agent.

Backends are registered through the ``spade_register_llm_backends`` hook as
``transformers``, ``openai``, ``vllm`` and ``replay``; the heavy ones import their
libraries only when created.
"""

from .base import Completion, Conversation, LLMBackend, Message, apply_stop, check_conversations
from .replay import RecordingBackend, ReplayBackend, conversation_key

__all__ = [
    "Completion",
    "Conversation",
    "LLMBackend",
    "Message",
    "OpenAIBackend",
    "RecordingBackend",
    "ReplayBackend",
    "TransformersBackend",
    "VLLMBackend",
    "apply_stop",
    "check_conversations",
    "conversation_key",
    "default_model_path",
    "load_default_model",
]


def __getattr__(name: str):  # lazy: keep `import spade_designer.llm` free of torch/httpx
    if name in {"TransformersBackend", "default_model_path", "load_default_model"}:
        from . import transformers_backend

        return getattr(transformers_backend, name)
    if name in {"OpenAIBackend", "TokenUsage"}:
        from . import openai_backend

        return getattr(openai_backend, name)
    if name == "VLLMBackend":
        from .vllm_backend import VLLMBackend

        return VLLMBackend
    raise AttributeError(name)
