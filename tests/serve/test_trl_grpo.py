"""One real GRPO step of TRL's ``GRPOTrainer`` on a sandboxed seed environment through
:class:`~spade_serve.trl_env.TrlEnvironments`: the model calls the ``act`` tool, the
environment is stepped in its sandbox worker, ``get_reward`` scores the rollouts and the
update changes the weights.

The model is the tiny in-process Llama (``spade_trainer.tiny``) under TRL's own Qwen2.5
chat template (the tiny tokenizer speaks ChatML; that template renders and parses tool
calls). A random model never writes a well-formed tool call, and fitting it to write one
takes longer than the step itself (hundreds of supervised steps on a 600-token prompt), so
its sampling is steered with transformers' ``sequence_bias`` generation setting, passed
through ``GRPOConfig.generation_kwargs``, towards two ``act`` calls: the episode's solution
and a wrong answer. Everything after the sampler is TRL's and the adapter's own: parsing
the call, dispatching it to the environment instance, the sandboxed step, ``get_reward``,
advantages and the update. The group holds different returns, so the advantages, and the
update, are not zero.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from spade_serve.trl_env import TrlEnvironments  # noqa: E402

ENV_ID = "polynomial_probe-v1"
SEED = 0


def _call(command: str) -> str:
    call = {"name": "act", "arguments": {"command": command}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"


def _steer_to(tokenizer: Any, prompt: str, completions: list[str], *, window: int = 6, bias: float = 40.0
              ) -> list[list[Any]]:
    """transformers' ``sequence_bias`` that makes sampling after ``prompt`` write one of
    ``completions``: each completion token is favoured where the ``window - 1`` tokens
    before it match (the prompt's tail, then the completion so far). Where completions
    share a prefix and then part, both continuations get the same bias: sampling picks one."""
    tail = tokenizer(prompt, add_special_tokens=False)["input_ids"][-(window - 1):]
    keyed: dict[tuple[int, ...], float] = {}
    for text in completions:
        ids = tail + tokenizer(text, add_special_tokens=False)["input_ids"]
        for end in range(len(tail), len(ids)):
            keyed[tuple(ids[end - window + 1:end + 1])] = bias
    return [[list(key), value] for key, value in keyed.items()]


def test_one_grpo_step_plays_the_environment_through_the_tool_and_updates_the_weights(tmp_path: Path) -> None:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import gymnasium as gym
    from spade_trainer.tiny import build_tiny_model, build_tiny_tokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    started = time.monotonic()
    torch.manual_seed(0)
    tokenizer = build_tiny_tokenizer()
    tokenizer.chat_template = qwen2_5_chat_template
    model = build_tiny_model(tokenizer)

    reference = gym.make(f"spade/{ENV_ID}")
    reference.reset(seed=SEED)
    (solution,) = reference.unwrapped.solution()
    reference.close()
    right = solution.removeprefix("\\boxed{").removesuffix("}")
    wrong = "answer 0 0 0"

    with TrlEnvironments([ENV_ID], seed=SEED) as envs:
        # The prompt the trainer will render: the row's empty user message + reset's text.
        probe = envs.factory()()
        first = probe.reset(seed=SEED)
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": first}], tools=[probe.act], tokenize=False, add_generation_prompt=True
        )
        steering = _steer_to(tokenizer, prompt, [_call(right), _call(wrong)])
        before = {name: p.detach().clone() for name, p in model.named_parameters()}

        args = GRPOConfig(
            output_dir=str(tmp_path / "grpo"),
            per_device_train_batch_size=4,
            num_generations=4,
            max_completion_length=48,
            max_tool_calling_iterations=1,
            max_steps=1,
            generation_kwargs={"sequence_bias": steering},
            learning_rate=1e-2,
            logging_steps=1,
            report_to=[],
            use_cpu=True,
            seed=SEED,
            save_strategy="no",
            dataloader_num_workers=0,
        )
        trainer = GRPOTrainer(
            model=model,
            args=args,
            processing_class=tokenizer,
            train_dataset=envs.dataset(1, seed=SEED),
            environment_factory=envs.environment_factory,
        )
        trainer.train()

        played = [e for e in envs.instances if e is not probe and e.steps]
        assert played, "no environment instance was stepped through the act tool"
        for env in played:
            assert env.last_seed == SEED
            assert env.actions[0] in (f"\\boxed{{{right}}}", f"\\boxed{{{wrong}}}")
        returns = sorted(e.get_reward() for e in played)
        assert returns[0] == 0.0 and returns[-1] == 1.0, returns
        logged = [row for row in trainer.state.log_history if "loss" in row]
        assert logged and all(isinstance(row["loss"], float) for row in logged)
        reward_keys = [k for row in logged for k in row if "BoxedEnvironment" in k]
        assert reward_keys, f"the environment's reward column is missing from {sorted(logged[0])}"
        changed = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
        assert changed, "the GRPO step left every weight unchanged"
    assert all(e._env is None for e in played), "close() left a sandboxed environment open"
    print(f"one GRPO step with the adapter: {time.monotonic() - started:.1f} s")
