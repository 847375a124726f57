"""Specification of the rollout engine: batched multi-turn episodes with token trajectories."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from spade_core.metadata import ActionFormat
from spade_trainer.actions import extract_action
from spade_trainer.chat import ChatFormat
from spade_trainer.inprocess import TrustedEnvPool
from spade_trainer.policy import Generation, Sampling
from spade_trainer.rollout import EpisodeSpec, PlayableEnv, RolloutEngine, TokenBudget

from .envs import ENDLESS_ENV, GUESS_ENV


class ScriptedPolicy:
    """Test double: answers each prompt with ``reply(prompt_text)``, logprob -1 per token."""

    def __init__(self, tokenizer: Any, reply: Callable[[str], str]) -> None:
        self.tok, self.reply, self.calls = tokenizer, reply, 0

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling,
                 seed: int | None) -> list[Generation]:
        self.calls += 1
        out = []
        for p in prompts:
            ids = self.tok(self.reply(self.tok.decode(list(p))), add_special_tokens=False)["input_ids"]
            ids = (ids + [self.tok.eos_token_id])[:max_new_tokens]
            out.append(Generation(ids, [-1.0] * len(ids), ids[-1] == self.tok.eos_token_id))
        return out


def _hinted_answer(prompt: str) -> str:
    # answers the hinted number when there is a hint, else always "1"
    if "Hint: the number is" in prompt:
        return "I think \\boxed{" + prompt.split("Hint: the number is ")[1][0] + "}"
    return "\\boxed{1}"


GUESS = PlayableEnv("guess-v1", GUESS_ENV, "games", skill="deduction", hint="unused", max_turns=5)


def _env_with_hint_for(seed: int) -> PlayableEnv:
    import random

    target = random.Random(seed).randint(1, 4)
    return PlayableEnv(f"guess{seed}-v1", GUESS_ENV, "games", hint=f"the number is {target}", max_turns=5)


def test_each_turn_generates_once_for_all_live_episodes(tiny_tokenizer: Any) -> None:
    policy = ScriptedPolicy(tiny_tokenizer, lambda _: "\\boxed{9}")  # never right: 3 turns each
    engine = RolloutEngine(TrustedEnvPool(), policy, tiny_tokenizer)
    episodes = engine.run([EpisodeSpec(GUESS, False, s) for s in range(6)])
    assert policy.calls == 3
    assert all(e.turns == 3 and e.terminated and e.episode_return == 0.0 for e in episodes)
    assert engine.last_stats.turns == 18


def test_hinted_plays_see_the_hint_and_win(tiny_tokenizer: Any) -> None:
    envs = [_env_with_hint_for(s) for s in range(4)]
    engine = RolloutEngine(TrustedEnvPool(), ScriptedPolicy(tiny_tokenizer, _hinted_answer), tiny_tokenizer)
    episodes = engine.run([EpisodeSpec(e, True, s) for s, e in enumerate(envs)])
    assert all(e.episode_return == 1.0 and e.turns == 1 for e in episodes)
    assert all("Hint: the number is" in e.messages[1]["content"] for e in episodes)
    assert all(e.messages[0]["role"] == "system" for e in episodes)


def test_trajectory_is_prompt_then_model_and_environment_tokens_told_apart(tiny_tokenizer: Any) -> None:
    engine = RolloutEngine(TrustedEnvPool(), ScriptedPolicy(tiny_tokenizer, lambda _: "\\boxed{9}"), tiny_tokenizer)
    (ep,) = engine.run([EpisodeSpec(GUESS, False, 0)])
    assert len(ep.completion_ids) == len(ep.env_mask) == len(ep.logprobs)
    model = [t for t, m in zip(ep.completion_ids, ep.env_mask, strict=True) if m]
    env = [t for t, m in zip(ep.completion_ids, ep.env_mask, strict=True) if not m]
    assert tiny_tokenizer.decode(model).count("\\boxed{9}") == 3
    assert "Wrong, try again." in tiny_tokenizer.decode(env) and "boxed" not in tiny_tokenizer.decode(env)
    assert all(lp == -1.0 for lp, m in zip(ep.logprobs, ep.env_mask, strict=True) if m)
    # the whole trajectory is exactly what the chat template renders for the conversation
    full = tiny_tokenizer.decode(ep.prompt_ids + ep.completion_ids)
    assert full == tiny_tokenizer.apply_chat_template(ep.messages, tokenize=False).rstrip("\n")[: len(full)]


class HangingPool(TrustedEnvPool):
    """Test double: the sandbox answers TimeoutError for the environment seeded 1."""

    def __init__(self) -> None:
        super().__init__()
        self.seeds: dict[int, int | None] = {}

    def reset_many(self, items: Sequence[tuple[int, int | None]]) -> list[Any]:
        self.seeds.update(dict(items))
        return super().reset_many(items)

    def step_many(self, items: Sequence[tuple[int, str]]) -> list[Any]:
        real = super().step_many(items)
        return [TimeoutError("step exceeded 30 s") if self.seeds[h] == 1 else r for (h, _), r in zip(items, real, strict=True)]


def test_a_hung_step_costs_the_penalty_and_does_not_stall_the_others(tiny_tokenizer: Any) -> None:
    engine = RolloutEngine(HangingPool(), ScriptedPolicy(tiny_tokenizer, lambda _: "\\boxed{9}"), tiny_tokenizer)
    episodes = engine.run([EpisodeSpec(GUESS, False, s) for s in range(3)])
    assert [e.hung for e in episodes] == [False, True, False]
    assert episodes[1].episode_return == -0.5 and episodes[1].turns == 1
    assert episodes[0].turns == episodes[2].turns == 3


def test_broken_environment_code_ends_only_its_own_episodes(tiny_tokenizer: Any) -> None:
    broken = PlayableEnv("broken-v1", "class BrokenEnv:\n    def reset(self, seed=None):\n        raise ValueError('x')\n"
                         "    def step(self, a):\n        pass\n", "games")
    engine = RolloutEngine(TrustedEnvPool(), ScriptedPolicy(tiny_tokenizer, lambda _: "\\boxed{9}"), tiny_tokenizer)
    bad, good = engine.run([EpisodeSpec(broken, False, 0), EpisodeSpec(GUESS, False, 0)])
    assert bad.done and "ValueError" in (bad.error or "") and bad.episode_return == 0.0
    assert good.turns == 3 and good.error is None


def test_turn_limit_truncates_and_scores_zero(tiny_tokenizer: Any) -> None:
    endless = PlayableEnv("endless-v1", ENDLESS_ENV, "games", max_turns=4)
    engine = RolloutEngine(TrustedEnvPool(), ScriptedPolicy(tiny_tokenizer, lambda _: "hi"), tiny_tokenizer)
    (ep,) = engine.run([EpisodeSpec(endless, False, 0)])
    assert ep.turns == 4 and ep.truncated and not ep.terminated and ep.episode_return == 0.0


def test_episode_token_budget_truncates(tiny_tokenizer: Any) -> None:
    endless = PlayableEnv("endless-v1", ENDLESS_ENV, "games", max_turns=100)
    engine = RolloutEngine(TrustedEnvPool(), ScriptedPolicy(tiny_tokenizer, lambda _: "hi " * 20), tiny_tokenizer,
                           budget=TokenBudget(per_turn=8, per_episode=40))
    (ep,) = engine.run([EpisodeSpec(endless, False, 0)])
    assert ep.truncated and ep.turns < 100 and ep.episode_return == 0.0
    assert max(len(ep.completion_ids) - 8, 0) <= 40
    assert all(n <= 8 for n in _model_runs(ep.env_mask))


def _model_runs(mask: list[int]) -> list[int]:
    runs, n = [], 0
    for m in mask + [0]:
        if m:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return runs


@pytest.mark.parametrize(
    "message,fmt,action",
    [
        ("let me think... \\boxed{2} no wait \\boxed{3}", ActionFormat.boxed, "\\boxed{3}"),
        ("no box here", ActionFormat.boxed, "no box here"),
        ('x <tool_call>{"name": "ls", "arguments": {}}</tool_call>', ActionFormat.tool_call,
         '<tool_call>{"name": "ls", "arguments": {}}</tool_call>'),
        ("<tool_call>{bad json</tool_call>", ActionFormat.tool_call, "<tool_call>{bad json</tool_call>"),
        ("<answer>42</answer>", ActionFormat.tool_call, "<answer>42</answer>"),
        ("  go north \n", ActionFormat.free_text, "go north"),
    ],
)
def test_actions_are_extracted_per_domain_format(message: str, fmt: ActionFormat, action: str) -> None:
    assert extract_action(message, fmt) == action


def test_hinted_spec_requires_a_hint() -> None:
    from spade_trainer.errors import RolloutError

    with pytest.raises(RolloutError, match="no hint"):
        EpisodeSpec(PlayableEnv("x-v1", "", "games"), True, 0)


def test_a_template_without_content_is_refused(tiny_tokenizer: Any) -> None:
    import copy

    from spade_trainer.errors import RolloutError

    tok = copy.deepcopy(tiny_tokenizer)
    tok.chat_template = "{% for m in messages %}x{% endfor %}"
    with pytest.raises(RolloutError, match="drops message content"):
        ChatFormat(tok)
