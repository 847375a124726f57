"""Rollout generation against the bare batched ``model.generate`` of the same model.

The rollout engine plays episodes of the learning curve's rung (``higher_lower``, the
``\\boxed{`` prefill, replies cut at the action, 16 tokens a turn, temperature 1) with the
embedded SmolLM2-135M (or the tiny in-process model), in-process environments so that the
time is the policy's. Every batch of prompts the engine hands the policy is recorded; the
same batches are then given to ``model.generate`` alone (left padding, the same sampling
settings, the same token budget, stopping at the end-of-sequence token only): what the
model itself does with exactly those prompts, without the engine's per-token log-probs,
its stop at the action's end, the environments or its bookkeeping.

Reported, medians over ``REPEATS`` alternating rounds (the machine is shared):

* episodes per second: the engine's whole rollout against the bare calls on the same prompts;
* tokens per second: tokens each side generated (the engine's model tokens; the bare calls'
  tokens up to and including the end-of-sequence token) over its time;
* the ratio engine / bare of each (goal: at least 0.8);
* the engine again with its cache across turns off (every turn reads the whole
  conversation, as the bare calls do): what the engine's own work costs beside the model.

The engine stops sampling a row once its action is complete and the bare calls do not, so
the bare side generates more tokens for the same prompts: episodes per second compares the
work the loop needs done, tokens per second the raw sampling speed.

Run: ``python -m bench.bench_generation [--model embedded|tiny] [--episodes N] [--repeats R] [--threads T]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

REPEATS = 3
EPISODES = 64
TOKENS_PER_TURN = 16


class RecordingPolicy:
    """The engine's policy, recording each batch of prompts it is given (and its seeds)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches: list[list[list[int]]] = []

    def generate(self, prompts: Any, *, max_new_tokens: int, sampling: Any, seed: Any, stop: Any = None) -> Any:
        self.batches.append([list(p) for p in prompts])
        return self.inner.generate(prompts, max_new_tokens=max_new_tokens, sampling=sampling, seed=seed, stop=stop)


def _engine(model: Any, tok: Any, policy: Any) -> Any:
    from spade_trainer.inprocess import TrustedEnvPool
    from spade_trainer.policy import Sampling
    from spade_trainer.rollout import ReplyShape, RolloutEngine, TokenBudget

    return RolloutEngine(TrustedEnvPool(), policy, tok, budget=TokenBudget(per_turn=TOKENS_PER_TURN, per_episode=512),
                         sampling=Sampling(1.0, 1.0), reply=ReplyShape(prefill="\\boxed{", cut_at_action=True))


def engine_round(model: Any, tok: Any, episodes: int, seed: int,
                 reuse_cache: bool = True) -> tuple[float, int, list[list[list[int]]]]:
    """Seconds, model tokens and the prompt batches of one rollout of ``episodes`` episodes
    (``reuse_cache=False``: every turn reads its whole conversation again, as before the
    policy kept its cache across turns)."""
    from spade_trainer.envrefs import seed_playable
    from spade_trainer.policy import TransformersPolicy
    from spade_trainer.rollout import EpisodeSpec

    policy = RecordingPolicy(TransformersPolicy(model, tok, reuse_cache=reuse_cache))
    engine = _engine(model, tok, policy)
    env = seed_playable("higher_lower")
    specs = [EpisodeSpec(env, False, 1_000_000_000 + i) for i in range(episodes)]
    t0 = time.perf_counter()
    played = engine.run(specs, seed=seed)
    seconds = time.perf_counter() - t0
    return seconds, sum(ep.model_tokens for ep in played), policy.batches


def bare_round(model: Any, tok: Any, batches: list[list[list[int]]], seed: int) -> tuple[float, int]:
    """Seconds and generated tokens of ``model.generate`` on the same prompt batches."""
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    tokens, seconds = 0, 0.0
    model.eval()
    for n, prompts in enumerate(batches):
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, p in enumerate(prompts):
            ids[row, width - len(p):] = torch.tensor(p)
            mask[row, width - len(p):] = 1
        torch.manual_seed(seed + n)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=TOKENS_PER_TURN, do_sample=True,
                                 temperature=1.0, top_p=1.0, top_k=None, eos_token_id=tok.eos_token_id,
                                 pad_token_id=pad)
        seconds += time.perf_counter() - t0
        for row in out[:, width:].tolist():
            end = next((i + 1 for i, t in enumerate(row) if t == tok.eos_token_id), len(row))
            tokens += end
    return seconds, tokens


def measure(model: Any, tok: Any, episodes: int, repeats: int) -> dict[str, Any]:
    rows: dict[str, list[float]] = {"engine_s": [], "engine_tokens": [], "bare_s": [], "bare_tokens": [],
                                    "uncached_s": []}
    turns = []
    for r in range(repeats):
        seconds, tokens, batches = engine_round(model, tok, episodes, seed=r)
        bare_s, bare_tokens = bare_round(model, tok, batches, seed=r)
        uncached_s, _, _ = engine_round(model, tok, episodes, seed=r, reuse_cache=False)
        rows["engine_s"].append(seconds)
        rows["engine_tokens"].append(tokens)
        rows["bare_s"].append(bare_s)
        rows["bare_tokens"].append(bare_tokens)
        rows["uncached_s"].append(uncached_s)
        turns.append(sum(len(b) for b in batches))
    med = {k: statistics.median(v) for k, v in rows.items()}
    eps = episodes / med["engine_s"], episodes / med["bare_s"]
    tps = (statistics.median(t / s for t, s in zip(rows["engine_tokens"], rows["engine_s"], strict=True)),
           statistics.median(t / s for t, s in zip(rows["bare_tokens"], rows["bare_s"], strict=True)))
    return {**med, "episodes": episodes, "prompts": statistics.median(turns), "episodes_per_s": eps,
            "tokens_per_s": tps, "ratio_episodes": eps[0] / eps[1], "ratio_tokens": tps[0] / tps[1],
            "uncached_ratio_episodes": med["bare_s"] / med["uncached_s"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("embedded", "tiny"), default="embedded")
    parser.add_argument("--episodes", type=int, default=EPISODES)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = parser.parse_args(argv)
    torch.set_flush_denormal(True)
    if args.threads:
        torch.set_num_threads(args.threads)
    console = Console()
    if args.model == "embedded":
        from spade_trainer.config import ModelSettings
        from spade_trainer.models import load_policy

        model, tok = load_policy(ModelSettings())
    else:
        from spade_trainer.tiny import build_tiny_model, build_tiny_tokenizer

        tok = build_tiny_tokenizer()
        model = build_tiny_model(tok)
    import os

    m = measure(model, tok, args.episodes, args.repeats)
    table = Table(title=f"rollout generation, {args.episodes} episodes of higher_lower ({args.model} model, "
                        f"{m['prompts']:.0f} prompts in {args.repeats} rounds' median, torch threads "
                        f"{torch.get_num_threads()}, load {os.getloadavg()[0]:.1f})")
    for col in ("", "engine (rollout)", "bare model.generate", "engine / bare"):
        table.add_column(col, justify="right")
    table.add_row("seconds", f"{m['engine_s']:.1f}", f"{m['bare_s']:.1f}", "")
    table.add_row("episodes / s", f"{m['episodes_per_s'][0]:.2f}", f"{m['episodes_per_s'][1]:.2f}",
                  f"{m['ratio_episodes']:.2f}")
    table.add_row("tokens / s", f"{m['tokens_per_s'][0]:.1f}", f"{m['tokens_per_s'][1]:.1f}", f"{m['ratio_tokens']:.2f}")
    table.add_row("tokens", f"{m['engine_tokens']:.0f}", f"{m['bare_tokens']:.0f}", "")
    table.add_row("engine without its cache: seconds (episodes / s)", f"{m['uncached_s']:.1f} "
                  f"({args.episodes / m['uncached_s']:.2f})", "", f"{m['uncached_ratio_episodes']:.2f}")
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
