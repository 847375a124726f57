"""The three bugs of the self-play recipe (issue 21), written as the specification they break.

1. Repair credit: every trained designer sequence carries the reward of what *its own*
   tokens produced; a repaired design's first turn earns no regret credit.
2. Sample selection: fitting an iteration to the update never drops the designer role (the
   `gpu` preset sizes its update so nothing is dropped; a surplus is cut per role).
3. Seeds: under vLLM every request of a batch has its own seed, so K plays of an environment
   whose first observation ignores the seed are K different plays.
"""

from __future__ import annotations

import random
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from spade_core.metadata import EnvMetadata, ValidationReport
from spade_core.plugins import get_plugins
from spade_designer.llm.base import Completion
from spade_designer.records import Attempt, CandidateResult
from spade_trainer.config import load_selfplay_config
from spade_trainer.designer_stage import candidate
from spade_trainer.inprocess import TrustedEnvPool
from spade_trainer.policy import Sampling, VLLMPolicy
from spade_trainer.regret import RegretEstimate, RegretEstimator
from spade_trainer.rewards import designer_reward
from spade_trainer.role_samples import designer_samples
from spade_trainer.rollout import PlayableEnv, RolloutEngine
from spade_trainer.samples import PolicySample, Role, with_advantages
from spade_trainer.shaping_signals import design_progress

from .envs import GUESS_ENV

SKILL = "logical_deduction"
FIRST_IDS = [101, 102, 103]
REPAIR_IDS = [201, 202, 203, 204]


def _attempt(number: int, ids: list[int], *, failed_at: str | None) -> Attempt:
    completion = Completion("reply", prompt_tokens=2, completion_tokens=len(ids), prompt_ids=[1, 2 + number],
                            completion_ids=list(ids), logprobs=[-1.0] * len(ids))
    if failed_at == "extract":
        return Attempt(number, [{"role": "user", "content": "design"}], completion, extraction_error="no code block")
    report = ValidationReport(passed=failed_at is None, failed_stage=failed_at,
                              reasons=[] if failed_at is None else [f"{failed_at} failed"])
    return Attempt(number, [{"role": "user", "content": "design"}], completion, source="class AEnv: pass",
                   class_name="AEnv", report=report)


def _candidate(attempts: list[Attempt], *, admitted: bool) -> CandidateResult:
    meta = EnvMetadata(name="repaired_game", domain="games", skill=SKILL, class_name="AEnv")
    c = CandidateResult(0, None, [], attempts=attempts, metadata=meta, admitted=admitted)
    if not admitted:
        c.rejected_stage = attempts[-1].failed_stage
    return c


def _trained(preset: str, c: CandidateResult, est: RegretEstimate | None) -> dict[tuple[int, ...], float]:
    dc = candidate(c, SKILL)
    by_id = {est.env_id: est} if est is not None else {}
    samples = designer_samples([dc], by_id, {}, config=load_selfplay_config(preset=preset), plugins=get_plugins())
    return {tuple(s.completion_ids): s.reward for s in samples}


def _estimate(env_id: str) -> RegretEstimate:
    # hinted plays all won, unhinted half: regret 0.5, win rate 0.5 -> blend 1.0
    return RegretEstimate(env_id, (1.0, 1.0, 1.0, 1.0), (1.0, 0.0, 1.0, 0.0))


def test_a_repaired_design_credits_the_repair_not_the_first_turn() -> None:
    c = _candidate([_attempt(0, FIRST_IDS, failed_at="extract"), _attempt(1, REPAIR_IDS, failed_at=None)],
                   admitted=True)
    est = _estimate(c.metadata.id)  # type: ignore[union-attr]
    blend = designer_reward(0.5, 0.5)
    # the reference recipe (gpu preset): only valid designs are trained, so the broken first
    # turn is not trained at all and the repair that passed carries the measured reward
    trained = _trained("gpu", c, est)
    assert trained == {tuple(REPAIR_IDS): pytest.approx(blend)}
    # the CPU shaping option trains the broken first turn too, with its own (negative) reward
    shaped = _trained("tiny", c, est)
    assert shaped[tuple(REPAIR_IDS)] >= blend
    assert shaped[tuple(FIRST_IDS)] == pytest.approx(-0.5 * (1 - design_progress("extract")))


def test_when_every_attempt_fails_each_is_graded_by_its_own_stage() -> None:
    c = _candidate([_attempt(0, FIRST_IDS, failed_at="extract"), _attempt(1, REPAIR_IDS, failed_at="fuzz")],
                   admitted=False)
    shaped = _trained("tiny", c, None)
    assert shaped[tuple(FIRST_IDS)] == pytest.approx(-0.5 * (1 - design_progress("extract")))
    assert shaped[tuple(REPAIR_IDS)] == pytest.approx(-0.5 * (1 - design_progress("fuzz")))
    assert _trained("gpu", c, None) == {}  # rejection sampling: nothing invalid is trained


# --- 2. sample selection ----------------------------------------------------------------------


def _iteration_of_the_gpu_preset() -> list[PolicySample]:
    """Every design admitted: 2 skills x 4 designs, and the 8 new environments x 4 plays."""
    rng = random.Random(3)
    designer = [PolicySample(Role.designer, [1], [2, 3], [-1.0, -1.0], rng.uniform(0, 1), skill)
                for skill in ("a", "b") for _ in range(4)]
    agent = [PolicySample(Role.agent, [1], [4, 5, 6], [-1.0] * 3, float(play % 2 == env % 2 or play == 0), f"env{env}")
             for env in range(8) for play in range(4)]
    return designer + agent


def test_the_update_trains_every_sample_of_an_iteration(tiny_model: Any, tiny_tokenizer: Any) -> None:
    # TRL's fixed batch once cut a surplus (the designer's samples first): the learner's step
    # takes the whole iteration, whatever its size
    from spade_trainer.learner import Learner
    from spade_trainer.policy_update import UpdateSettings

    samples = _iteration_of_the_gpu_preset()
    report = Learner(tiny_model, tiny_tokenizer, UpdateSettings(learning_rate=1e-4, micro_batch=4), cpu=True,
                     seed=0).step(samples)
    assert report.fill["samples"] == report.update.samples == 40
    assert report.fill["designer_samples"] == 8 and report.fill["agent_samples"] == 32
    assert report.update.with_signal == report.fill["nonzero_advantages"] > 8
    assert report.update.tokens == sum(len(s.completion_ids) for s in with_advantages(samples) if s.advantage)


# --- 3. one seed per request ------------------------------------------------------------------


class _SeededEngine:
    """Test double of ``vllm.LLM`` with vLLM's per-request seeding: the same prompt and seed
    always sample the same reply; a request without a seed samples freely."""

    llm_engine = object()

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
        self.seeds: list[list[int | None]] = []

    def generate(self, prompts: list[dict[str, Any]], params: Any, use_tqdm: bool = False) -> list[Any]:
        per_request = list(params) if isinstance(params, list) else [params] * len(prompts)
        self.seeds.append([p["seed"] for p in per_request])
        outs = []
        for prompt, p in zip(prompts, per_request, strict=True):
            seed = p["seed"]
            rng = random.Random(f"{prompt['prompt_token_ids']}/{seed}") if seed is not None else random.Random()
            ids = self.tok(f"\\boxed{{{rng.randint(1, 4)}}}", add_special_tokens=False)["input_ids"]
            logprobs = [{t: SimpleNamespace(logprob=-1.0)} for t in ids]
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, logprobs=logprobs, finish_reason="stop")]))
        return outs


def test_vllm_plays_of_one_environment_are_seeded_apart(tiny_tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=lambda **kw: kw))
    engine = _SeededEngine(tiny_tokenizer)
    policy = VLLMPolicy(engine, stop_token_ids=[tiny_tokenizer.eos_token_id])
    rollout = RolloutEngine(TrustedEnvPool(), policy, tiny_tokenizer, sampling=Sampling(1.0, 1.0))
    env = PlayableEnv("guess-v1", GUESS_ENV, "games", hint="think", max_turns=3)
    k = 8
    episodes = RegretEstimator(rollout, k).measure([env], seed=5).unhinted()
    # every request of every batch had its own seed
    for call in engine.seeds:
        assert None not in call and len(set(call)) == len(call)
    # so the K plays (same first observation) are not one play K times
    first_moves = {tuple(e.completion_ids[: e.env_mask.index(0)] if 0 in e.env_mask else e.completion_ids)
                   for e in episodes}
    assert len(first_moves) > 1
    # and the seeds are reproducible: the same measurement again plays the same moves
    again = RegretEstimator(rollout, k).measure([env], seed=5).unhinted()
    assert [e.completion_ids for e in again] == [e.completion_ids for e in episodes]
