"""The pieces of the learning experiment: replies cut at the action, the prefill, the GRPO
step as a component (no pass without signal, a step that moves the right way, lr 0 moves
nothing) and the experiment's outputs (``learning.json``'s shape, the control, the table)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from spade_core.metadata import ActionFormat
from spade_trainer.actions import action_end
from spade_trainer.errors import ConfigError
from spade_trainer.experiment import (
    EVAL_SEED_BASE,
    Evaluation,
    LearningExperiment,
    LearnSettings,
    best_constant,
    learning_table,
    rung_source,
    summarise,
    verdict,
    wilson,
)
from spade_trainer.experiment_trl import run_learning
from spade_trainer.inprocess import TrustedEnvPool
from spade_trainer.policy import Generation, Sampling, TransformersPolicy
from spade_trainer.policy_update import GRPOUpdate, UpdateSettings
from spade_trainer.rollout import EpisodeSpec, PlayableEnv, ReplyShape, RolloutEngine
from spade_trainer.samples import PolicySample, Role

from .envs import GUESS_ENV

GUESS = PlayableEnv("guess-v1", GUESS_ENV, "games", skill="deduction", max_turns=5)


class ChattyPolicy:
    """Test double: replies ``reply(prompt)`` whole (it cannot stop early), logprob -1 per token."""

    def __init__(self, tokenizer: Any, reply: Callable[[str], str]) -> None:
        self.tok, self.reply = tokenizer, reply

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling,
                 seed: Any) -> list[Generation]:
        out = []
        for p in prompts:
            ids = self.tok(self.reply(self.tok.decode(list(p))), add_special_tokens=False)["input_ids"][:max_new_tokens]
            out.append(Generation(ids, [-1.0] * len(ids), False))
        return out


# --- where an action ends ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fmt", "end"),
    [
        ("\\boxed{7} and then I ramble", ActionFormat.boxed, len("\\boxed{7}")),
        ("think... \\boxed{f({x})} more", ActionFormat.boxed, len("think... \\boxed{f({x})}")),
        ("\\boxed{7", ActionFormat.boxed, None),
        ("no action at all", ActionFormat.boxed, None),
        ("<tool_call>{}</tool_call><answer>4</answer> trailing", ActionFormat.tool_call,
         len("<tool_call>{}</tool_call><answer>4</answer>")),
        ("<answer>4", ActionFormat.tool_call, None),
        ("free text \\boxed{1}", ActionFormat.free_text, None),
    ],
)
def test_an_action_ends_at_its_closing_brace_or_tag(text: str, fmt: ActionFormat, end: int | None) -> None:
    assert action_end(text, fmt) == end


# --- replies cut at the action, and the prefill -----------------------------------------------


def _model_and_env_text(tok: Any, ep: Any) -> tuple[str, str]:
    model = [t for t, m in zip(ep.completion_ids, ep.env_mask, strict=True) if m]
    env = [t for t, m in zip(ep.completion_ids, ep.env_mask, strict=True) if not m]
    return tok.decode(model), tok.decode(env)


def test_chatter_after_the_action_is_neither_sent_nor_trained(tiny_tokenizer: Any) -> None:
    chatty = ChattyPolicy(tiny_tokenizer, lambda _: "\\boxed{9} because nine is lucky")
    cut = RolloutEngine(TrustedEnvPool(), chatty, tiny_tokenizer, reply=ReplyShape(cut_at_action=True))
    (ep,) = cut.run([EpisodeSpec(GUESS, False, 0)])
    model_text, _ = _model_and_env_text(tiny_tokenizer, ep)
    assert "lucky" not in model_text and model_text.count("\\boxed{9}") == 3
    assert all(m["content"] == "\\boxed{9}" for m in ep.messages if m["role"] == "assistant")
    assert sum(ep.env_mask) == len([lp for lp in ep.logprobs if lp == -1.0])
    # without the cut (the old behaviour) the chatter is trained with the action's advantage
    whole = RolloutEngine(TrustedEnvPool(), chatty, tiny_tokenizer)
    (ep,) = whole.run([EpisodeSpec(GUESS, False, 0)])
    assert "lucky" in _model_and_env_text(tiny_tokenizer, ep)[0]


def test_the_prefill_starts_every_reply_and_is_never_trained(tiny_tokenizer: Any) -> None:
    seen: list[str] = []

    def reply(prompt: str) -> str:
        seen.append(prompt)
        return "9}"

    engine = RolloutEngine(TrustedEnvPool(), ChattyPolicy(tiny_tokenizer, reply), tiny_tokenizer,
                           reply=ReplyShape(prefill="\\boxed{", cut_at_action=True))
    (ep,) = engine.run([EpisodeSpec(GUESS, False, 0)])
    assert ep.turns == 3 and ep.terminated  # "\boxed{" + "9}" was read as the action each turn
    assert all(p.endswith("\\boxed{") for p in seen)
    assert all(m["content"] == "\\boxed{9}" for m in ep.messages if m["role"] == "assistant")
    model_text, env_text = _model_and_env_text(tiny_tokenizer, ep)
    assert "boxed" not in model_text and model_text.count("9}") == 3
    assert env_text.count("\\boxed{") == 2  # the prefills of turns 2 and 3 (turn 1's is in the prompt)
    assert tiny_tokenizer.decode(ep.prompt_ids).endswith("\\boxed{")


def test_a_policy_that_can_stop_stops_sampling_at_the_action(tiny_model: Any, tiny_tokenizer: Any) -> None:
    policy = TransformersPolicy(tiny_model, tiny_tokenizer)
    brace = tiny_tokenizer("}", add_special_tokens=False)["input_ids"]

    def stop(ids: Sequence[int]) -> int | None:
        return 3 if len(ids) >= 3 else None  # "the action ends after three tokens"

    (free,) = policy.generate([[5, 6, 7]], max_new_tokens=12, sampling=Sampling(1.0), seed=3)
    (cut,) = policy.generate([[5, 6, 7]], max_new_tokens=12, sampling=Sampling(1.0), seed=3, stop=stop)
    assert brace  # the tokenizer knows the brace
    if not free.finished:
        assert len(free.completion_ids) == 12
    assert cut.completion_ids == free.completion_ids[:3] and len(cut.logprobs) == 3


# --- the GRPO step ---------------------------------------------------------------------------


def _sample(tok: Any, completion: str, advantage: float, group: str = "g") -> PolicySample:
    prompt = tok("Say a number:", add_special_tokens=False)["input_ids"]
    ids = tok(completion, add_special_tokens=False)["input_ids"]
    return PolicySample(Role.agent, prompt, ids, [0.0] * len(ids), 0.0, group, env_mask=[1] * len(ids),
                        advantage=advantage)


def _logprob(model: Any, sample: PolicySample) -> float:
    ids = torch.tensor([list(sample.prompt_ids) + list(sample.completion_ids)])
    with torch.no_grad():
        logits = model(ids).logits.log_softmax(-1)[0]
    n = len(sample.prompt_ids)
    return float(sum(logits[n - 1 + i, t] for i, t in enumerate(sample.completion_ids)))


def _old_logprobs(model: Any, sample: PolicySample) -> PolicySample:
    ids = torch.tensor([list(sample.prompt_ids) + list(sample.completion_ids)])
    with torch.no_grad():
        logits = model(ids).logits.log_softmax(-1)[0]
    n = len(sample.prompt_ids)
    return replace(sample, logprobs=[float(logits[n - 1 + i, t]) for i, t in enumerate(sample.completion_ids)])


def test_no_forward_or_backward_pass_when_no_sample_carries_signal(tiny_model: Any, tiny_tokenizer: Any) -> None:
    calls = []
    tiny_model.register_forward_hook(lambda *_: calls.append(1))
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    stats = GRPOUpdate(tiny_model, UpdateSettings(learning_rate=1e-2)).step(
        [_sample(tiny_tokenizer, "7", 0.0), _sample(tiny_tokenizer, "8", 0.0)])
    assert stats.skipped and stats.with_signal == 0 and not calls
    assert all(torch.equal(before[k], v) for k, v in tiny_model.state_dict().items())


def test_a_step_raises_the_likelihood_of_what_won_and_lowers_what_lost(tiny_model: Any, tiny_tokenizer: Any) -> None:
    tok = tiny_tokenizer
    win, lose = _sample(tok, "seven", 1.0), _sample(tok, "eight", -1.0)
    win, lose = _old_logprobs(tiny_model, win), _old_logprobs(tiny_model, lose)
    w0, l0 = _logprob(tiny_model, win), _logprob(tiny_model, lose)
    update = GRPOUpdate(tiny_model, UpdateSettings(learning_rate=1e-3))
    for _ in range(3):
        stats = update.step([win, lose])
    assert not stats.skipped and stats.with_signal == 2 and stats.tokens == len(win.completion_ids) + len(lose.completion_ids)
    assert _logprob(tiny_model, win) > w0 + 0.1
    assert _logprob(tiny_model, lose) < l0 - 0.1


def test_environment_tokens_get_no_gradient(tiny_model: Any, tiny_tokenizer: Any) -> None:
    # a sample whose completion is all environment tokens trains nothing: no pass at all
    sample = _sample(tiny_tokenizer, "seven", 1.0)
    sample = replace(sample, env_mask=[0] * len(sample.completion_ids))
    stats = GRPOUpdate(tiny_model, UpdateSettings(learning_rate=1e-2)).step([sample])
    assert stats.skipped and stats.tokens == 0


def test_learning_rate_zero_leaves_the_weights_bit_for_bit(tiny_model: Any, tiny_tokenizer: Any) -> None:
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    stats = GRPOUpdate(tiny_model, UpdateSettings(learning_rate=0.0)).step(
        [_old_logprobs(tiny_model, _sample(tiny_tokenizer, "seven", 1.0)),
         _old_logprobs(tiny_model, _sample(tiny_tokenizer, "eight", -1.0))])
    assert not stats.skipped and stats.grad_norm and stats.grad_norm > 0
    assert all(torch.equal(before[k], v) for k, v in tiny_model.state_dict().items())


def test_update_settings_refuse_nonsense() -> None:
    from spade_trainer.errors import TrainerError

    for bad in ({"learning_rate": -1.0}, {"learning_rate": float("nan")}, {"micro_batch": 0},
                {"temperature": 0.0}):
        with pytest.raises(TrainerError):
            UpdateSettings(**bad)


# --- the rung and the experiment -------------------------------------------------------------


def test_the_rung_rewards_reading_and_feedback_not_a_constant() -> None:
    from spade_core.env import ReferenceEnvAdapter
    from spade_core.source import load_trusted_class

    cls = load_trusted_class(rung_source(3, 2), "HigherLowerEnv")
    seeds = [EVAL_SEED_BASE + i for i in range(200)]

    def make() -> Any:
        return ReferenceEnvAdapter(cls(), max_turns=4)

    _, constant = best_constant(make, [f"\\boxed{{{v}}}" for v in range(9, 101)], seeds)
    assert constant < 0.1
    # halving with the feedback wins every instance; the first listed number, then the
    # next in the direction told, wins far more than a constant and less than halving
    env, wins_bisect, wins_first = make(), 0, 0
    for s in seeds:
        obs, info = env.reset(seed=s)
        c = info["candidates"]
        obs, r, term, trunc, _ = env.step(f"\\boxed{{{c[1]}}}")
        if not term:
            obs, r, term, trunc, _ = env.step(f"\\boxed{{{c[2] if 'higher' in obs else c[0]}}}")
        wins_bisect += r >= 1.0
        obs, info = env.reset(seed=s)
        obs, r, term, trunc, _ = env.step(f"\\boxed{{{c[0]}}}")
        if not term:
            obs, r, term, trunc, _ = env.step(f"\\boxed{{{c[1]}}}")
        wins_first += r >= 1.0
    assert wins_bisect == len(seeds)
    assert constant < wins_first / len(seeds) < 0.9


def test_learn_settings_refuse_nonsense() -> None:
    for bad in ({"updates": 0}, {"group_size": 1}, {"group_instance": "other"}, {"control": "maybe"},
                {"learning_rate": -1e-5}, {"candidates": 40}, {"eval_episodes": 0},
                {"trainer": "keras"}, {"device": "gpu"}, {"device": "cuda:x"}):
        with pytest.raises(ConfigError):
            LearnSettings(**bad)  # type: ignore[arg-type]
    assert LearnSettings(device="cuda:1").device == "cuda:1"


def test_wilson_interval() -> None:
    lo, hi = wilson(20, 100)
    assert lo == pytest.approx(0.1333, abs=1e-3) and hi == pytest.approx(0.2888, abs=1e-3)
    assert wilson(0, 0) == (0.0, 1.0) and wilson(0, 50)[0] == 0.0


def test_the_verdict_needs_intervals_apart_and_a_quiet_control() -> None:
    def ev(update: int, wins: int) -> Evaluation:
        return Evaluation(update, 100, wins, wins / 100, (0.0, 1.0), 0.0)

    assert verdict([ev(0, 10), ev(12, 40)], [ev(0, 10), ev(12, 12)], 0.05)["learned"]
    assert not verdict([ev(0, 10), ev(12, 18)], [ev(0, 10), ev(12, 12)], 0.05)["learned"]  # intervals overlap
    assert not verdict([ev(0, 10), ev(12, 40)], [ev(0, 10), ev(12, 40)], 0.05)["learned"]  # the control rose too
    assert not verdict([ev(0, 10), ev(12, 40)], None, 0.5)["learned"]  # a constant does as well


@pytest.fixture()
def small_experiment(tiny_model: Any, tiny_tokenizer: Any, tmp_path: Path) -> Callable[..., LearningExperiment]:
    def make(**overrides: Any) -> LearningExperiment:
        settings = LearnSettings(**{"updates": 2, "eval_every": 1, "groups": 2, "group_size": 2, "eval_episodes": 6,
                                    "learning_rate": 1e-3, "max_new_tokens": 4, **overrides})
        return LearningExperiment(settings, tmp_path / str(len(list(tmp_path.iterdir()))), model=tiny_model,
                                  tokenizer=tiny_tokenizer, log=lambda _: None)

    return make


def test_the_experiment_writes_its_curves_table_and_plot(small_experiment: Callable[..., LearningExperiment]) -> None:
    exp = small_experiment()
    result = exp.run()
    data = json.loads((exp.run_dir / "learning.json").read_text())
    assert set(data) >= {"trained", "control", "constant"}
    for key in ("trained", "control"):
        assert [e["update"] for e in data[key]] == [0, 1, 2]
        for e in data[key]:
            assert e["episodes"] == 6 and 0.0 <= e["interval"][0] <= e["mean"] <= e["interval"][1] <= 1.0
    assert 0.0 <= data["constant"] <= 1.0 and result["verdict"] == data["verdict"]
    assert len(data["updates"]["trained"]) == 2
    assert {"generate_s", "env_s", "update_s", "seconds"} <= set(data["updates"]["trained"][0])
    assert (exp.run_dir / "learning.png").stat().st_size > 1000
    assert "| 2 |" in (exp.run_dir / "learning.md").read_text()
    assert learning_table(data).count("\n") == 5
    out = summarise([exp.run_dir], exp.run_dir / "summary")
    assert out["runs"] == 1 and (exp.run_dir / "summary" / "summary.png").is_file()


def test_the_control_evaluated_alone_measures_what_the_whole_lr0_run_does(
        small_experiment: Callable[..., LearningExperiment]) -> None:
    alone = small_experiment(control="eval").run()["control"]
    whole = small_experiment(control="full").run()["control"]
    strip = lambda evs: [{k: v for k, v in e.items() if k != "seconds"} for e in evs]  # noqa: E731
    assert strip(alone) == strip(whole)


def test_training_and_evaluation_instances_never_meet(small_experiment: Callable[..., LearningExperiment]) -> None:
    import random

    exp = small_experiment(groups=50, group_size=4)
    train = {spec.seed for _, spec in exp._train_specs(random.Random(0))}
    assert train and max(train) < EVAL_SEED_BASE <= min(exp.eval_seeds())
    shared = small_experiment(groups=5, group_size=4, group_instance="shared")
    by_group: dict[str, set[int]] = {}
    for group, spec in shared._train_specs(random.Random(0)):
        by_group.setdefault(group, set()).add(spec.seed)
    assert len(by_group) == 5 and all(len(s) == 1 for s in by_group.values())


def test_spade_report_shows_the_learning_experiment(small_experiment: Callable[..., LearningExperiment]) -> None:
    from spade_trainer.report import write_report

    exp = small_experiment()
    exp.run()
    page = write_report(exp.run_dir).read_text()
    assert "Learning experiment" in page and 'src="learning.png"' in page
    assert (exp.run_dir / "report" / "learning.png").is_file()
    assert "<th>update</th>" in page and "control (lr 0)" in page
    assert "Mean seconds per update: generate" in page
    assert "<table id=behaviour>" in page and "second guess followed the feedback" in page


def test_the_self_play_report_shows_where_each_iteration_s_time_went(tmp_path: Path) -> None:
    from spade_trainer.metrics import MetricsLog
    from spade_trainer.report import write_report

    log = MetricsLog(tmp_path)
    for i in (1, 2):
        log.write({"iteration": i, "designed": 1, "admitted": 1, "envs_played": 1,
                   "timings": {"design_s": 3.0, "rollout_s": 5.0, "generate_s": 4.5, "update_s": 2.0 * i}})
    page = write_report(tmp_path).read_text()
    times = page.split("<table id=times>")[1].split("</table>")[0]
    assert "<th>rollouts</th>" in times and "<th>of rollouts: generate</th>" in times
    assert "<td>4.5</td>" in times and "<td>4.0</td>" in times


def test_behaviour_reads_where_guesses_fell_and_whether_feedback_was_followed() -> None:
    from spade_trainer.experiment import behaviour

    def talk(*turns: str) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": "act"},
                {"role": "user", "content": "I picked a secret number from this list: 22, 64, 95. Guess it."}]
        for i, t in enumerate(turns):
            msgs.append({"role": "assistant" if i % 2 == 0 else "user", "content": t})
        return msgs

    b = behaviour([
        talk("\\boxed{22}", "Wrong: the secret is higher than 22. 1 guess left.", "\\boxed{64}"),  # followed
        talk("\\boxed{64}", "Wrong: the secret is higher than 64. 1 guess left.", "\\boxed{22}"),  # went the wrong way
        talk("\\boxed{95}", "Correct!"),
        talk("\\boxed{50}", "Wrong: 50 is not in the list; the secret is lower than 50.", "\\boxed{22}"),
        talk("\\boxed{N}", "Invalid guess", "\\boxed{what}"),
    ])
    assert b["first_guess"] == {"first": 0.2, "middle": 0.2, "last": 0.2, "unlisted": 0.2, "invalid": 0.2}
    assert b["second_guesses"] == 3 and b["followed"] == pytest.approx(2 / 3, abs=1e-4)


# --- the same experiment with TRL's GRPOTrainer making the updates ----------------------------


def test_trl_s_grpo_trainer_makes_the_trained_curve(small_experiment: Callable[..., LearningExperiment],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_trainer.rollout import Episode

    # the tiny model never wins the rung: a return of the instance's parity gives the groups
    # signal, so a wiring that trains nothing (no reward, no model tokens, another model) fails
    monkeypatch.setattr(Episode, "episode_return", property(lambda ep: float(ep.spec.seed % 2)))
    exp = small_experiment(trainer="trl", updates=3, eval_every=2, groups=2, group_size=4)
    model = exp._model
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    trained: dict[str, torch.Tensor] = {}
    evaluate_only = LearningExperiment.evaluate_only

    def weights_then_control(self: LearningExperiment, *args: Any) -> Any:
        trained.update({k: v.clone() for k, v in self._model.state_dict().items()})  # before the control resets them
        return evaluate_only(self, *args)

    monkeypatch.setattr(LearningExperiment, "evaluate_only", weights_then_control)
    with pytest.raises(ConfigError, match="experiment_trl.run_learning"):
        exp.run()  # the spade path never stands in for TRL's
    run_learning(exp)
    data = json.loads((exp.run_dir / "learning.json").read_text())
    assert data["settings"]["trainer"] == "trl"
    assert [e["update"] for e in data["trained"]] == [e["update"] for e in data["control"]] == [0, 2, 3]
    records = data["updates"]["trained"]
    assert [r["update"] for r in records] == [1, 2, 3]
    assert {"seconds", "generate_s", "env_s", "update_s", "loss", "grad_norm", "with_signal"} <= set(records[0])
    assert all(r["samples"] == 8 and r["with_signal"] > 0 and r["grad_norm"] > 0 for r in records)
    assert any(not torch.equal(initial[k], trained[k]) for k in initial)
    assert all(torch.equal(initial[k], v) for k, v in model.state_dict().items())  # the control ran on the initial weights


def test_a_summary_of_two_trainers_names_them(small_experiment: Callable[..., LearningExperiment],
                                              tmp_path: Path) -> None:
    from spade_trainer.experiment import run_names

    exp = small_experiment(updates=1, control="none")
    exp.run()
    data = json.loads((exp.run_dir / "learning.json").read_text())
    assert run_names([data, data]) == ["seed 0", "seed 0"]
    trl = tmp_path / "trl-run"
    trl.mkdir()
    (trl / "learning.json").write_text(json.dumps({**data, "settings": {**data["settings"], "trainer": "trl"}}))
    assert run_names([data, json.loads((trl / "learning.json").read_text())]) == [
        "spade GRPO, seed 0", "TRL GRPOTrainer, seed 0"]
    out = summarise([exp.run_dir, trl], tmp_path / "both")
    assert out["trainers"] == ["spade", "trl"] and (tmp_path / "both" / "summary.png").stat().st_size > 1000
    table = (tmp_path / "both" / "summary.md").read_text()
    assert "| spade GRPO |" in table and "| TRL GRPOTrainer |" in table
