"""Check the vLLM backend on a machine with a CUDA GPU (CI cannot: vLLM's wheel is a CUDA build).

    pip install 'spade-designer[vllm]'
    python scripts/gpu_check_vllm.py [--model PATH_OR_ID] [--n 8] [--round]

Without ``--model`` the embedded SmolLM2-135M-Instruct GGUF file is used, its tokenizer
read from the same file. vLLM has deprecated its in-tree GGUF loader in favour of the
``vllm-gguf-plugin`` package: with a vLLM release that no longer loads GGUF, install the
plugin or pass ``--model`` a Hugging Face checkpoint folder. The script checks, and exits
non-zero on the first failure:

1. the engine starts and one batched ``chat`` call returns one completion per conversation,
   in order, with prompt/completion token ids and one log-probability per token, and no
   text past a stop string;
2. the same seeds reproduce the same text when the same batch is generated again (vLLM's
   kernels are not batch-invariant, so only an identical batch is compared);
3. a prefilled assistant reply is continued (``continue_final_message``), as the
   designer's compact prompts need;
4. with ``--round``: a real design round for the games domain (validation in the sandbox,
   SQLite store in a temporary folder) finishes and reports its numbers.

It prints a rich table of throughput (completions/s, tokens/s).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="local model folder, GGUF file or model id")
    parser.add_argument("--n", type=int, default=8, help="conversations per batch")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.5)
    parser.add_argument("--round", action="store_true", help="also run a design round with this backend")
    args = parser.parse_args()

    # stop at once, with the reason, where this check cannot run
    import importlib.util

    import torch

    if not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        fail(f"torch {torch.__version__} ({build}) sees no CUDA device: this check needs an NVIDIA GPU")
    if importlib.util.find_spec("vllm") is None:
        fail("vllm is not installed: pip install 'spade-designer[vllm]'")

    from rich.console import Console
    from rich.table import Table
    from spade_designer.llm import VLLMBackend, default_model_path

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = args.model
    options = {}
    if model is None:
        folder, gguf = default_model_path()
        model = os.path.join(folder, gguf)
        options["tokenizer"] = model
    t0 = time.perf_counter()
    try:
        backend = VLLMBackend(model, gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=8192, **options)
    except Exception as exc:
        hint = " (GGUF: install vllm-gguf-plugin, or pass --model a checkpoint folder)" if model.endswith(".gguf") else ""
        fail(f"engine did not start: {exc}{hint}")
    start_s = time.perf_counter() - t0

    conversations = [
        [{"role": "user", "content": f"Write a Python class Puzzle{i}Env with reset() and step() for a guessing game."}]
        for i in range(args.n)
    ]
    t0 = time.perf_counter()
    stop = ["\n\n\n"]
    out = backend.chat(conversations, max_new_tokens=args.max_new_tokens, temperature=0.8, seed=1234, stop=stop)
    gen_s = time.perf_counter() - t0
    if len(out) != args.n:
        fail(f"{len(out)} completions for {args.n} conversations")
    for i, c in enumerate(out):
        if not c.prompt_ids or c.completion_ids is None or c.logprobs is None:
            fail(f"completion {i} lacks token ids or logprobs")
        if len(c.logprobs) != len(c.completion_ids):
            fail(f"completion {i}: {len(c.logprobs)} logprobs for {len(c.completion_ids)} tokens")
        if not all(math.isfinite(x) and x <= 0 for x in c.logprobs):
            fail(f"completion {i}: log-probabilities must be finite and <= 0")
        if stop[0] in c.text:
            fail(f"completion {i}: text runs past the stop string")
    again = backend.chat(conversations, max_new_tokens=args.max_new_tokens, temperature=0.8, seed=1234, stop=stop)
    if [c.text for c in again] != [c.text for c in out]:
        fail("the same seeds did not reproduce the same text for the same batch")
    prefix = "class Puzzle0Env:\n    def reset(self, seed=None):\n"
    (cont,) = backend.chat([conversations[0] + [{"role": "assistant", "content": prefix}]],
                           max_new_tokens=32, temperature=0.0)
    if not cont.prompt_ids or cont.text.startswith(prefix) or not cont.completion_ids:
        fail("a prefilled reply was not continued (continue_final_message)")

    table = Table(title=f"vLLM backend on {model}")
    for col in ("engine start s", "batch", "generation s", "completions/s", "tokens out/s"):
        table.add_column(col, justify="right")
    tokens = sum(c.completion_tokens for c in out)
    table.add_row(f"{start_s:.1f}", str(args.n), f"{gen_s:.2f}", f"{args.n / gen_s:.1f}", f"{tokens / gen_s:.0f}")
    Console().print(table)

    if args.round:
        from spade_core.store import EnvStore
        from spade_designer.config import DesignerConfig
        from spade_designer.corpus import PyDocsCorpus
        from spade_designer.designer import Designer
        from spade_designer.memory import StoreMemory
        from spade_designer.validation import Validator

        with tempfile.TemporaryDirectory() as d, Validator() as validator:
            store = EnvStore(f"sqlite:///{d}/store.db")
            # a GPU affords the full prompt and a whole-file reply budget
            config = DesignerConfig(sampling={"max_new_tokens": 1024, "temperature": 0.8}, document_words=300,
                                    prompt_style="full")
            designer = Designer(backend, store, validator, PyDocsCorpus(), StoreMemory(store), config)
            t0 = time.perf_counter()
            result = designer.design_round("games", "logical_deduction", args.n, seed=0)
            Console().print({**result.summary(), "wall_s": round(time.perf_counter() - t0, 1)})
    print("OK: vLLM backend checks passed")


if __name__ == "__main__":
    main()
