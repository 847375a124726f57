"""``spade eval``, its suites and ``spade compare``.

Policies here are real backends: the replay backend answering from rules (exact and
deterministic, for the harness's arithmetic), and the embedded model on a small slice
(marked ``model``). Registry store environments run in the real sandbox."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.app.cli import build_app
from spade_core.config import load_config
from spade_core.evaluation import SuiteContext
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import get_plugins
from spade_core.source import load_trusted_class
from spade_core.store import EnvStore
from spade_designer.llm.replay import ReplayBackend
from spade_eval.compare import final_table, load_runs, write_compare
from spade_eval.harness import evaluate, wilson
from spade_eval.policy import PolicyError, parse_policy
from spade_eval.suites import held_out, registry_items
from typer.testing import CliRunner

HANOI = Path(__file__).parents[1] / "core" / "fixtures" / "reference_envs" / "tower_of_hanoi.py"


def hanoi_rules() -> list[tuple[str, str]]:
    """Replay rules that play Hanoi's optimal solution: the state each observation shows -> the next move."""
    cls = load_trusted_class(HANOI.read_text())
    env = cls()
    obs, _ = env.reset(seed=0)
    rules = []
    for move in env.solution():
        state = obs.split("State: ")[-1]
        rules.append((re.escape(state) + "$", move))
        obs, *_ = env.step(move)
    return rules


@pytest.fixture
def store_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    with EnvStore(load_config().resolved_store_url) as store:
        m = store.add(HANOI.read_text(), EnvMetadata(name="hanoi", domain="games", skill="planning", max_turns=12))
        store.set_status(m.id, EnvStatus.admitted)
    return home


def test_a_solving_policy_scores_one_on_a_sandboxed_store_env(store_home: Path) -> None:
    config = load_config()
    with EnvStore(config.resolved_store_url) as store:
        items = registry_items(SuiteContext(config, get_plugins(), store), size=3, seed=5, ids="hanoi-v1")
        result = evaluate(ReplayBackend(rules=hanoi_rules()), items, suite="registry", concurrency=2)
    assert result.overall.n == 3 and result.overall.success_rate == 1.0 and result.overall.errors == 0
    assert result.overall.mean_turns == 7.0 and result.env_steps == 21
    assert list(result.groups) == ["planning"] and [e.seed for e in result.episodes] == [5, 6, 7]


def test_a_wrong_policy_scores_zero_and_turn_limits_end_episodes(store_home: Path) -> None:
    config = load_config()
    with EnvStore(config.resolved_store_url) as store:
        items = registry_items(SuiteContext(config, get_plugins(), store), size=2, ids="hanoi-v1")
        result = evaluate(ReplayBackend(rules=[(".", "\\boxed{move B C}")]), items, concurrency=8)
    assert result.overall.success_rate == 0.0 and result.overall.mean_return == 0.0
    assert all(e.turns == 12 and not e.terminated for e in result.episodes)  # max_turns of the env


def test_a_turn_cap_ends_episodes_early_and_never_lengthens_one(store_home: Path) -> None:
    config = load_config()
    with EnvStore(config.resolved_store_url) as store:
        items = registry_items(SuiteContext(config, get_plugins(), store), size=2, ids="hanoi-v1")
        wrong = ReplayBackend(rules=[(".", "\\boxed{move B C}")])
        capped = evaluate(wrong, items, concurrency=8, max_turns=3)
        solved = evaluate(ReplayBackend(rules=hanoi_rules()), items, max_turns=50)  # the env's 12 stays
        with pytest.raises(ValueError, match="max_turns must be at least 1, got 0"):
            evaluate(wrong, items, max_turns=0)
    assert [e.turns for e in capped.episodes] == [3, 3] and capped.env_steps == 6 and capped.max_turns == 3
    assert capped.to_json()["max_turns"] == 3
    assert solved.overall.success_rate == 1.0 and [e.turns for e in solved.episodes] == [7, 7]


def test_a_failing_environment_is_an_error_row_not_a_crash(store_home: Path) -> None:
    from spade_core.evaluation import EvalItem

    class Broken:
        def reset(self, seed=None):
            raise RuntimeError("boom at reset")

    items = [EvalItem("g", 0, Broken, label="broken")] + [
        EvalItem("g", 1, lambda: load_trusted_class(HANOI.read_text())(), max_turns=1, label="hanoi")]
    result = evaluate(ReplayBackend(rules=[(".", "\\boxed{move A C}")]), items)
    assert result.overall.errors == 1 and "boom at reset" in result.episodes[0].error
    assert result.overall.n == 2


class _Talker:
    """Says ``text`` at every turn; never ends by itself."""

    text = "short"

    def reset(self, seed=None):
        return self.text, {}

    def step(self, action):
        return self.text, 0.0, False, False, {}


class _LongTalker(_Talker):
    text = "x" * 6000


def _server_with_a_context_of(chars: int, status: int = 400):
    """An OpenAI-compatible endpoint (an HTTP transport) refusing conversations longer
    than ``chars`` with ``status``, answering the others."""
    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if sum(len(m["content"]) for m in body["messages"]) > chars:
            return httpx.Response(status, json={"error": {"message": "maximum context length exceeded"}})
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})

    return httpx.MockTransport(answer)


def test_a_conversation_the_model_server_refuses_fails_its_episode_only() -> None:
    from spade_core.evaluation import EvalItem
    from spade_designer.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(transport=_server_with_a_context_of(5000), max_retries=0)
    items = [EvalItem("g", 0, _LongTalker, max_turns=2, label="long"),
             EvalItem("g", 1, _Talker, max_turns=2, label="short")]
    result = evaluate(backend, items, concurrency=2)
    long, short = sorted(result.episodes, key=lambda e: e.label)
    assert "rejected the request: HTTP 400" in long.error and "maximum context length" in long.error
    assert long.turns == 0
    assert short.error is None and short.turns == 2
    assert result.env_steps == 2 and result.overall.errors == 1


def test_a_model_server_refusing_every_request_stops_the_evaluation() -> None:
    from spade_core.evaluation import EvalItem
    from spade_designer.errors import LLMBackendError
    from spade_designer.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(transport=_server_with_a_context_of(0, status=401), max_retries=0)
    with pytest.raises(LLMBackendError, match="HTTP 401"):
        evaluate(backend, [EvalItem("g", 0, _Talker, max_turns=2)], concurrency=2)


@given(st.integers(0, 500), st.integers(0, 500))
def test_wilson_interval_holds_the_rate_and_stays_in_0_1(a: int, b: int) -> None:
    wins, n = min(a, b), max(a, b)
    lo, hi = wilson(wins, n)
    assert 0.0 <= lo <= hi <= 1.0
    if n:
        assert lo - 1e-12 <= wins / n <= hi + 1e-12


@given(st.text(min_size=1, max_size=12).filter(lambda s: s.strip() == s and s))
def test_the_held_out_split_is_a_fixed_function_of_the_id(env_id: str) -> None:
    assert held_out(env_id) == held_out(env_id)


def test_policy_strings(tmp_path: Path) -> None:
    assert parse_policy("embedded").backend == "transformers"
    spec = parse_policy("openai:http://127.0.0.1:9/v1#tiny")
    assert spec.backend == "openai" and spec.options == {"base_url": "http://127.0.0.1:9/v1", "model": "tiny"}
    with pytest.raises(PolicyError, match="unknown policy"):
        parse_policy(str(tmp_path / "nothing"))
    with pytest.raises(PolicyError, match="no checkpoint with model weights"):
        parse_policy(f"run:{tmp_path}")
    with pytest.raises(PolicyError, match="http"):
        parse_policy("openai:localhost:8000")


def test_reasoning_gym_items_are_reproducible_and_scored_by_the_task() -> None:
    from spade_reasoning_gym.suite import SuiteOptionError, reasoning_gym_items

    ctx = SuiteContext(None, None)
    a = reasoning_gym_items(ctx, size=2, seed=3, groups="math,logic")
    b = reasoning_gym_items(ctx, size=2, seed=3, groups="math,logic")
    assert [x.make_env().reset()[0] for x in a] == [x.make_env().reset()[0] for x in b]
    assert {x.group.split("/")[0] for x in a} == {"math", "logic"}
    env = a[0].make_env()
    assert env.step(env.solution())[1] == 1.0
    assert env.step("\\boxed{certainly not the answer}")[1] == 0.0
    with pytest.raises(SuiteOptionError, match="unknown group"):
        reasoning_gym_items(ctx, groups="poetry")


def test_cli_names_what_is_wrong(store_home: Path) -> None:
    app = build_app()
    r = CliRunner().invoke(app, ["eval", "--suite", "nope"])
    assert r.exit_code == 2 and "unknown suite 'nope'" in r.output and "reasoning_gym" in r.output
    r = CliRunner().invoke(app, ["eval", "--suite", "registry", "-o", "colour=red"])
    assert r.exit_code == 2 and "takes no option colour" in r.output


def _run(path: Path, scores: list[float], episodes: int) -> Path:
    path.mkdir(parents=True)
    with (path / "metrics.jsonl").open("w") as f:
        for i in range(1, len(scores) + 1):
            f.write(json.dumps({"iteration": i, "episodes": episodes, "admission_rate": 0.5, "regret_mean": 0.1}) + "\n")
    with (path / "evals.jsonl").open("w") as f:
        for i, s in enumerate(scores, 1):
            f.write(json.dumps({"suite": "reasoning_gym", "iteration": i, "overall": {"success_rate": s}}) + "\n")
    return path


def test_compare_puts_runs_side_by_side_with_differences_to_the_baseline(tmp_path: Path) -> None:
    base = _run(tmp_path / "baseline", [0.1, 0.2], 10)
    spade = _run(tmp_path / "spade", [0.1, 0.3, 0.35], 4)
    header, rows = final_table(load_runs([base, spade]), "baseline")
    assert header == ["run", "reasoning_gym", "mean"]
    assert rows[0] == ["baseline (baseline)", "20.0%", "20.0%"]
    assert rows[1] == ["spade", "35.0% (+15.0)", "35.0% (+15.0)"]
    page = write_compare([base, spade], tmp_path / "out", baseline="baseline")
    assert "spade" in page.read_text() and (tmp_path / "out" / "reasoning_gym_steps.png").stat().st_size > 5_000


@pytest.mark.model
@pytest.mark.slow
def test_spade_eval_of_the_embedded_model_on_a_reasoning_gym_slice(store_home: Path) -> None:
    run = store_home.parent / "run"
    r = CliRunner().invoke(build_app(), ["eval", "--suite", "reasoning_gym", "--size", "1", "-o", "tasks=gcd,syllogism",
                                         "--max-new-tokens", "24", "--run", str(run), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout[r.stdout.index("{"):])
    assert out["overall"]["n"] == 2 and set(out["groups"]) == {"math/gcd", "logic/syllogism"}
    assert out["snapshot"] == "embedded:SmolLM2-135M-Instruct"
    stored = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert stored[0]["suite"] == "reasoning_gym" and "episodes" not in stored[0]


@pytest.mark.model
@pytest.mark.slow
def test_spade_eval_of_the_embedded_model_on_a_registry_slice(store_home: Path) -> None:
    """A seed and a sandboxed store environment, played by the embedded model turn by turn."""
    r = CliRunner().invoke(build_app(), ["eval", "--suite", "registry", "--size", "1", "-o", "ids=code_breaker-v1,hanoi-v1",
                                         "--max-new-tokens", "16", "--max-turns", "3", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout[r.stdout.index("{"):])
    assert out["overall"]["n"] == 2 and out["snapshot"] == "embedded:SmolLM2-135M-Instruct"
    assert sum(g["n"] for g in out["groups"].values()) == 2
    assert out["overall"]["errors"] == 0
    assert out["max_turns"] == 3 and all(e["turns"] <= 3 for e in out["episodes"])
