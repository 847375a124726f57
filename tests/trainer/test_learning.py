"""The learning curve a self-play run measures: replies cut at the action, the prefill, the
GRPO step as a component (no pass without signal, a step that moves the right way, lr 0
moves nothing), and ``[selfplay.learning]``: held-out instances, the control, the best
constant policy, the verdicts and ``learning.json``'s shape, in real runs of the tiny model."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from spade_core.metadata import ActionFormat
from spade_core.returns import HELD_OUT_SEED_BASE
from spade_trainer.actions import action_end
from spade_trainer.config import load_selfplay_config
from spade_trainer.envrefs import seed_playable
from spade_trainer.errors import ConfigError
from spade_trainer.inprocess import TrustedEnvPool
from spade_trainer.learning import (
    Evaluation,
    behaviour,
    constant_wins,
    learnability,
    observed_constants,
    verdict,
)
from spade_trainer.learning_report import learning_table, newcombe, run_names, seed_interval, summarise
from spade_trainer.policy import Generation, Sampling, TransformersPolicy
from spade_trainer.policy_update import GRPOUpdate, UpdateSettings
from spade_trainer.rollout import EpisodeSpec, PlayableEnv, ReplyShape, RolloutEngine
from spade_trainer.samples import PolicySample, Role
from spade_trainer.selfplay import SelfPlayRun

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


# --- the rung, the best constant and the verdicts ------------------------------------------------


def _rung_seeds(n: int = 200) -> list[int]:
    return [HELD_OUT_SEED_BASE + i for i in range(n)]


def test_the_rung_rewards_reading_and_feedback_not_a_constant() -> None:
    from spade_core.env import ReferenceEnvAdapter
    from spade_core.source import load_trusted_class

    rung = seed_playable("higher_lower")
    cls = load_trusted_class(rung.source, "HigherLowerEnv")
    seeds = _rung_seeds()
    constant = max(constant_wins(TrustedEnvPool(), rung, seeds, [f"\\boxed{{{v}}}" for v in range(9, 101)]))
    assert constant / len(seeds) < 0.1
    # halving with the feedback wins every instance; the first listed number, then the
    # next in the direction told, wins far more than a constant and less than halving
    env, wins_bisect, wins_first = ReferenceEnvAdapter(cls(), max_turns=4), 0, 0
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
    assert constant / len(seeds) < wins_first / len(seeds) < 0.9


def test_the_constants_read_from_the_instances_hold_the_best_of_every_number() -> None:
    rung, pool, seeds = seed_playable("higher_lower"), TrustedEnvPool(), _rung_seeds(96)
    every = [f"\\boxed{{{v}}}" for v in range(9, 101)]
    best = max(constant_wins(pool, rung, seeds, every))
    observed = observed_constants(pool, rung, seeds)
    # the listed numbers and secrets (and the "2" of "You have 2 guesses"), boxed
    assert len(set(observed) & set(every)) > 40 and all(a.startswith("\\boxed{") for a in observed)
    assert max(constant_wins(pool, rung, seeds, observed)) == best  # the brute force finds nothing better


def test_a_knob_setting_names_a_variant_and_a_bad_one_is_refused() -> None:
    hard = seed_playable("higher_lower:CANDIDATES=15,GUESSES=4")
    assert hard.env_id == "higher_lower.candidates15.guesses4-v1"
    assert "CANDIDATES = 15" in hard.source and "GUESSES = 4" in hard.source
    assert seed_playable("higher_lower:candidates=3").env_id == "higher_lower-v1"  # the setting as written
    with pytest.raises(ConfigError, match="CANDIDATES"):
        seed_playable("higher_lower:CANDIDATES=40")
    with pytest.raises(ConfigError, match="no knob"):
        seed_playable("higher_lower:SIZE=4")
    with pytest.raises(ConfigError, match="no environment"):
        seed_playable("no_such_game")


def test_wilson_interval() -> None:
    from spade_core.app.eval_harness import wilson

    lo, hi = wilson(20, 100)
    assert lo == pytest.approx(0.1333, abs=1e-3) and hi == pytest.approx(0.2888, abs=1e-3)
    assert wilson(0, 0) == (0.0, 1.0) and wilson(0, 50)[0] == 0.0


def _ev(update: int, wins: int, n: int = 100) -> Evaluation:
    return Evaluation(update, n, wins, wins / n, (0.0, 1.0), 0.0)


def test_the_verdict_needs_intervals_apart_and_a_quiet_control() -> None:
    assert verdict([_ev(0, 10), _ev(12, 40)], [_ev(0, 10), _ev(12, 12)], 0.05)["learned"]
    assert not verdict([_ev(0, 10), _ev(12, 18)], [_ev(0, 10), _ev(12, 12)], 0.05)["learned"]  # intervals overlap
    assert not verdict([_ev(0, 10), _ev(12, 40)], [_ev(0, 10), _ev(12, 40)], 0.05)["learned"]  # the control rose too
    assert not verdict([_ev(0, 10), _ev(12, 40)], None, 0.5)["learned"]  # a constant does as well


def test_learnability_says_learnable_no_signal_gameable_or_not_learned() -> None:
    quiet = [_ev(0, 10), _ev(8, 11)]
    assert learnability([_ev(0, 10), _ev(8, 40)], quiet, 0.05, [16, 20]) == "learnable"
    assert learnability([_ev(0, 0), _ev(8, 0)], quiet, 0.0, [0, 0]) == "no_signal"
    assert learnability([_ev(0, 30), _ev(8, 35)], quiet, 0.4, [8, 8]) == "gameable"
    assert learnability([_ev(0, 10), _ev(8, 12)], quiet, 0.05, [8, 8]) == "not_learned"
    # a constant that wins rarely does not make a game gameable
    assert learnability([_ev(0, 1), _ev(8, 2)], quiet, 0.05, [4, 4]) == "not_learned"


def test_behaviour_reads_where_guesses_fell_and_whether_feedback_was_followed() -> None:
    def talk(*turns: str) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": "act"},
                {"role": "user", "content": "I picked a secret number from this list: 22, 64, 95. Guess it."}]
        for i, t in enumerate(turns):
            msgs.append({"role": "assistant" if i % 2 == 0 else "user", "content": t})
        return msgs

    b = behaviour([
        talk("\\boxed{22}", "Wrong: the secret is higher than 22. 1 guess left.", "\\boxed{64}"),  # followed
        talk("\\boxed{64}", "Wrong: the secret is higher than 64. 1 guess left.", "\\boxed{22}"),  # the wrong way
        talk("\\boxed{95}", "Correct!"),
        talk("\\boxed{50}", "Wrong: 50 is not in the list; the secret is lower than 50.", "\\boxed{22}"),
        talk("\\boxed{N}", "Invalid guess", "\\boxed{what}"),
    ])
    assert b["first_guess"] == {"first": 0.2, "middle": 0.2, "last": 0.2, "unlisted": 0.2, "invalid": 0.2}
    assert b["second_guesses"] == 3 and b["followed"] == pytest.approx(2 / 3, abs=1e-4)
    assert behaviour([[{"role": "user", "content": "another game"}, {"role": "assistant", "content": "x"}]]) == {}


def test_the_difference_of_two_rates_has_newcombe_s_interval() -> None:
    d, lo, hi = newcombe(56, 70, 48, 80)  # Newcombe (1998), example (a): 0.8 - 0.6
    assert d == pytest.approx(0.2) and lo == pytest.approx(0.0524, abs=1e-3) and hi == pytest.approx(0.3339, abs=1e-3)


def test_an_interval_over_three_seeds_uses_student_s_t() -> None:
    lo, hi = seed_interval([0.1, 0.2, 0.3])
    assert (hi - lo) / 2 == pytest.approx(4.303 * 0.1 / 3**0.5, rel=1e-3)
    assert seed_interval([0.4]) == (0.4, 0.4)


# --- the curve inside a self-play run ------------------------------------------------------------


def _learn(tmp_path: Path, name: str, *presets: str, **sets: Any) -> SelfPlayRun:
    values = {"run_dir": json.dumps(str(tmp_path / name)), "model.source": '"tiny"', "iterations": 2,
              "learning.every": 1, "learning.episodes": 6, "optim.learning_rate": 1e-3, "model.threads": 1,
              "generation.agent_max_new_tokens": 4, **sets}
    cfg = load_selfplay_config(preset=list(presets) or ["learn"], overrides=[f"{k}={v}" for k, v in values.items()])
    run = SelfPlayRun(cfg)
    run.run()
    return run


def test_a_run_measures_its_curve_beside_the_control_and_the_constant(tmp_path: Path) -> None:
    run = _learn(tmp_path, "run")
    data = json.loads((run.run_dir / "learning.json").read_text())
    assert set(data) >= {"trained", "control", "constant", "constant_action", "settings", "updates", "verdict"}
    for key in ("trained", "control"):
        assert [e["update"] for e in data[key]] == [0, 1, 2]
        for e in data[key]:
            assert e["episodes"] == 6 and 0.0 <= e["interval"][0] <= e["mean"] <= e["interval"][1] <= 1.0
    assert data["trained"][0] == data["control"][0]  # the same weights and seed: one play
    assert 0.0 <= data["constant"] <= 1.0 and data["constant_action"].startswith("\\boxed{")
    assert data["verdict"]["learnability"] in ("learnable", "no_signal", "gameable", "not_learned")
    assert [u["update"] for u in data["updates"]["trained"]] == [1, 2]
    assert data["settings"]["target"] == "higher_lower" and data["settings"]["fixed_pool"]
    assert (run.run_dir / "learning.png").stat().st_size > 1000
    assert "| 2 |" in (run.run_dir / "learning.md").read_text() and learning_table(data).count("\n") == 5
    # one environment in the pool is played the whole iteration's budget: 4 x 8 plays
    metrics = [json.loads(x) for x in (run.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert all(r["episodes"] == 32 and r["envs_played"] == 1 for r in metrics)


def test_the_control_is_what_the_whole_run_at_learning_rate_0_measures(tmp_path: Path) -> None:
    trained = json.loads((_learn(tmp_path, "a").run_dir / "learning.json").read_text())
    whole = json.loads((_learn(tmp_path, "b", **{"optim.learning_rate": 0.0, "learning.control": '"none"'}).run_dir
                        / "learning.json").read_text())
    assert whole["control"] == []
    pick = lambda evs: [(e["update"], e["successes"], e["mean_return"], e["behaviour"]) for e in evs]  # noqa: E731
    assert pick(trained["control"]) == pick(whole["trained"])


def test_training_and_evaluation_instances_never_meet(tmp_path: Path) -> None:
    from spade_trainer.regret import RegretEstimator

    rung = seed_playable("higher_lower")
    planner = RegretEstimator(None, 32)  # type: ignore[arg-type]  # planning plays nothing
    for seed in (0, 7, 10**6, 2**31 - 1):  # run seeds; an iteration's collection seed is seed * 100003 + it
        specs = planner.plan([rung], seed=seed * 100_003 + 12, hinted=False)
        assert len(specs) == 32 and all(0 <= s.seed < HELD_OUT_SEED_BASE for s in specs)
    run = _learn(tmp_path, "run", **{"iterations": 1})
    assert run.learning is not None and min(run.learning.seeds) == HELD_OUT_SEED_BASE


def test_the_report_leads_with_the_curve(tmp_path: Path) -> None:
    from spade_trainer.report import write_report

    run = _learn(tmp_path, "run", **{"iterations": 1})
    page = write_report(run.run_dir).read_text()
    assert page.index("<h2 id=learning>") < page.index("<h2>Plots</h2>")
    assert 'src="learning.png"' in page and (run.run_dir / "report" / "learning.png").is_file()
    assert "control (lr 0)" in page and "verdict: <b>" in page


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


def test_a_summary_compares_arms_on_the_seeds_both_ran(tmp_path: Path) -> None:
    def run(arm: str, seed: int, wins: int) -> Path:
        folder = tmp_path / f"{arm}-{seed}"
        folder.mkdir()
        evs = [_ev(0, 5, 96).to_json(), _ev(12, wins, 96).to_json()]
        folder.joinpath("learning.json").write_text(json.dumps({
            "trained": evs, "control": [], "constant": 0.04, "settings": {"seed": seed, "label": arm,
                                                                           "target": "higher_lower"},
            "verdict": verdict([_ev(0, 5, 96), _ev(12, wins, 96)], None, 0.04)}))
        return folder

    dirs = [run("fixed", 0, 10), run("fixed", 1, 14), run("spade", 0, 40), run("spade", 1, 50), run("spade", 2, 60)]
    out = summarise(dirs, tmp_path / "summary")
    diff = out["differences"]["spade"]
    assert diff["seeds"] == [0, 1] and diff["per_seed"] == pytest.approx([30 / 96, 36 / 96])
    assert diff["pooled_interval"][0] > 0 and out["arms"]["spade"]["seeds"] == [0, 1, 2]
    table = (tmp_path / "summary" / "summary.md").read_text()
    assert "| spade | 2 |" in table and "| fixed | 0 |" in table
    assert run_names([json.loads((d / "learning.json").read_text()) for d in dirs[:1]]) == ["fixed, seed 0"]
    assert (tmp_path / "summary" / "summary.png").stat().st_size > 1000


# --- the learnability of an environment, recorded with it ------------------------------------


def _cli(*args: str) -> Any:
    from spade_core.app.cli import build_app
    from typer.testing import CliRunner

    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "300"})


@pytest.mark.parametrize("env", ["higher_lower", "higher_lower:CANDIDATES=4"])
def test_experiment_learn_records_the_verdict_with_the_environment(
        env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_core.app.catalog import open_store, resolve
    from spade_core.config import load_config
    from spade_core.plugins import get_plugins

    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = _cli("experiment", "learn", "--run-dir", str(tmp_path / "run"), "--env", env, "--updates", "1",
                  "--episodes", "4", "--set", 'model.source="tiny"', "--set", "generation.agent_max_new_tokens=4",
                  "--set", "model.threads=1")
    assert result.exit_code == 0, result.output
    assert 2.2250738585072014e-308 / 2 != 0.0, "the command left flush-to-zero on for the process"
    data = json.loads((tmp_path / "run" / "learning.json").read_text())
    verdict_word = data["verdict"]["learnability"]
    assert data["settings"]["target"] == env and f"seed 0: {verdict_word}" in result.output
    name = "higher_lower-v1" if env == "higher_lower" else "higher_lower.candidates4-v1"
    assert f"recorded with {name}" in result.output
    with open_store(load_config(), read_only=True) as store:
        entry = resolve(name, get_plugins(), store)  # a seed's record reaches its catalog entry too
        row = entry.summary()  # the row of `spade list --json` and of GET /envs/<id>
    assert entry.kind == ("seed" if env == "higher_lower" else "store")
    assert row["learnability"]["verdict"] == verdict_word and row["learnability"]["updates"] == 1
    assert row["learnability"]["untrained"] == data["trained"][0]["mean"] and row["learnability"]["target"] == env
    shown = _cli("show", name)
    assert shown.exit_code == 0 and f"learnability: {verdict_word} after 1 updates" in " ".join(shown.output.split())


def test_the_browser_page_and_the_server_s_row_show_a_recorded_learnability(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient
    from spade_core.app.catalog import CatalogEntry
    from spade_core.config import load_config
    from spade_core.metadata import EnvMetadata, EnvStatus, Learnability, StatsSnapshot
    from spade_core.plugins import get_plugins
    from spade_core.store import EnvStore

    from spade_ui import UiSettings, create_ui_app

    url = f"sqlite:///{tmp_path / 'store.db'}"
    learned = Learnability(verdict="learnable", updates=12, episodes=96, untrained=0.135,
                           untrained_interval=(0.081, 0.218), trained=0.573, trained_interval=(0.473, 0.667),
                           control=0.188, constant=0.042, constant_action="\\boxed{60}", target="guess", run="runs/x")
    with EnvStore(url) as store:
        meta = store.add(GUESS_ENV, EnvMetadata(name="guess", domain="games", skill="deduction"))
        store.set_status(meta.id, EnvStatus.admitted)
        stored = store.record_stats(meta.id, StatsSnapshot(policy_snapshot="learn:12 updates:seed 0", samples=96,
                                                           win_rate=0.135, learnability=learned))
    assert CatalogEntry("store", stored).summary()["learnability"]["verdict"] == "learnable"
    app = create_ui_app(load_config(None, store_url=url), get_plugins(), UiSettings(runs_dir=tmp_path))
    page = TestClient(app, base_url="http://127.0.0.1").get(f"/env/{meta.id}").text
    text = " ".join(page.split())
    assert "Learnability: <b>learnable</b> after 12 updates" in text and "0.135 &rarr; 0.573" in text
