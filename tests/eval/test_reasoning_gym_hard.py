"""``spade eval --suite reasoning_gym_hard``: Reasoning-Gym's hard split in the paper's four
columns.

The policies are real backends: the replay backend answering each question with the
dataset's own reference answer (or a wrong one) through the same harness the model goes
through, and the embedded model on one task per column through the command line (marked
``model``)."""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from dataclasses import replace

import pytest

pytest.importorskip("reasoning_gym")

from spade_core.app.cli import build_app
from spade_core.evaluation import EvalItem, SuiteContext
from spade_core.plugins import get_plugins
from spade_designer.llm.replay import ReplayBackend, conversation_key
from spade_eval.harness import SYSTEM_PROMPT, evaluate
from spade_eval.results import unavailable_lines
from spade_reasoning_gym import hard
from spade_reasoning_gym.suite import SuiteOptionError
from typer.testing import CliRunner

CTX = SuiteContext(None, None)
#: The paper's columns and their task counts (SPADE paper, Table 1's RG columns).
COLUMNS = {"Math": 31, "Algorithmic": 36, "Cognition": 24, "Logic": 9}
#: One small task per column, for the model's slice.
SLICE = "basic_arithmetic,base_conversion,number_sequence,syllogism"


def test_the_suite_is_registered_with_the_papers_settings() -> None:
    suite = get_plugins().eval_suites()["reasoning_gym_hard"]
    assert suite is hard.SUITE and suite.trusted
    assert suite.defaults == {"size": 8, "temperature": 0.6, "max_new_tokens": 8192}
    split = hard.hard_split()
    assert split.evaluation["max_turns"] == 2 and split.columns == COLUMNS
    names = [t.dataset for t in split.tasks]
    assert len(names) == len(set(names)) == 100
    assert Counter(t.column for t in split.tasks) == COLUMNS


@pytest.mark.slow
def test_the_full_suite_holds_every_dataset_of_the_split_in_its_column() -> None:
    items = hard.hard_items(CTX, size=1)
    split = hard.hard_split()
    # a dataset dropped (or one the installed Reasoning-Gym cannot build) fails here by name
    assert [i.label for i in items] == [t.dataset for t in split.tasks]
    assert Counter(i.column for i in items) == COLUMNS
    assert all(i.group == f"{i.column}/{i.label}" and i.max_turns == 2 for i in items)
    failing = []
    for item in items:
        try:
            item.make_env().reset(seed=item.seed)
        except Exception as exc:
            failing.append(f"{item.label}: {exc}")
    assert failing == []


def test_slices_keep_the_questions_of_the_full_suite_and_bad_options_are_named() -> None:
    one = hard.hard_items(CTX, size=2, seed=5, tasks="gcd")
    again = hard.hard_items(CTX, size=2, seed=5, columns="math", tasks="gcd,lcm")
    assert [i.make_env().reset()[0] for i in one] == [i.make_env().reset()[0] for i in again[:2]]
    assert [i.label for i in hard.hard_items(CTX, size=1, columns="Logic")] == [
        "acre", "list_functions", "aiw", "circuit_logic", "knights_knaves", "propositional_logic", "self_reference",
        "syllogism", "zebra_puzzles"]
    with pytest.raises(SuiteOptionError, match="not in the hard split: poetry"):
        hard.hard_items(CTX, tasks="gcd,poetry")
    with pytest.raises(SuiteOptionError, match="unknown column"):
        hard.hard_items(CTX, columns="Music")


def test_a_wrong_first_answer_may_be_corrected_once() -> None:
    env = hard.hard_items(CTX, size=1, tasks="gcd")[0].make_env()
    env.reset()
    obs, reward, terminated, _, _ = env.step("\\boxed{-1}")
    assert (reward, terminated) == (0.0, False) and "Try again" in obs
    assert env.step(env.solution())[1:3] == (1.0, True)
    env = hard.hard_items(CTX, size=1, tasks="gcd")[0].make_env()
    env.reset()
    env.step("\\boxed{-1}")
    assert env.step("\\boxed{-2}")[1:3] == (0.0, True)


def _inverse_scramble(moves: str) -> str:
    """Undo a Rubik's cube scramble: the moves reversed, each inverted, written without
    layer numbers (the scorer skips a move that starts with a digit): ``1Rw`` is ``R``,
    the slice ``2R`` is ``Rw R'``."""

    def inverse(move: str) -> str:
        return move[:-1] if move.endswith("'") else move + "'"

    out = []
    for move in reversed(moves.split()):
        layer, face, wide, prime = re.fullmatch(r"(\d?)([A-Z])(w?)('?)", move).groups()
        plain = [face] if layer == "1" else [face + "w", inverse(face)] if layer == "2" else [face + wide]
        out += plain if prime else [inverse(p) for p in plain]
    return " ".join(out)


def _solve_rush_hour(config: str) -> str:
    """Breadth-first search over one-cell moves; the moves as ``A+1 B-1 ...``, named as the
    question's board names the cars."""
    from reasoning_gym.games.rush_hour import Board

    board = str(Board(config)).replace("\n", "").replace(".", "o")
    size, target = 6, 2 * 6 + 6 - 2

    def moves(state: str):
        for label in sorted(set(state) - {"o", "x"}):
            cells = [i for i, c in enumerate(state) if c == label]
            stride = cells[1] - cells[0]
            for sign in (1, -1):
                edge = cells[-1] + stride if sign > 0 else cells[0] - stride
                if stride == 1 and (edge < 0 or edge // size != cells[0] // size):
                    continue
                if not 0 <= edge < size * size or state[edge] != "o":
                    continue
                free = cells[0] if sign > 0 else cells[-1]
                s = list(state)
                s[edge], s[free] = label, "o"
                yield f"{label}{'+' if sign > 0 else '-'}1", "".join(s)

    seen = {board: ""}
    queue = deque([board])
    while queue:
        state = queue.popleft()
        if state.index("A") == target:
            return seen[state]
        for move, nxt in moves(state):
            if nxt not in seen:
                seen[nxt] = f"{seen[state]} {move}".strip()
                queue.append(nxt)
    raise AssertionError(f"rush hour board {board} has no solution")


def _reference(env: hard.HardTaskEnv) -> str:
    """The dataset's reference answer; the two tasks that keep none are solved here from
    their metadata (the scramble undone, the board searched)."""
    meta = env.entry["metadata"]
    if env.task == "rubiks_cube":
        return f"\\boxed{{{_inverse_scramble(meta['scramble_moves'])}}}"
    if env.task == "rush_hour":
        return f"\\boxed{{{_solve_rush_hour(meta['board_config'])}}}"
    return env.solution()


def _first_turn_replies(items: list[EvalItem], answer) -> dict[str, str]:
    recorded = {}
    for item in items:
        env = item.make_env()
        obs, _ = env.reset(seed=item.seed)
        recorded[conversation_key([{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": obs}])] = answer(env)
    return recorded


#: Entries whose reference the dataset's own scorer rejects (Reasoning-Gym 0.1.25 writes
#: ``["No solution"]`` as the answer of some jug puzzles); found by this test, listed so a
#: new one fails it.
REJECTED_REFERENCES = {"jugs"}
#: Tasks whose scorer accepts a wrong answer: Reasoning-Gym 0.1.25's game_of_life_halting
#: compares ``bool(answer) == bool(reference)``, so any non-empty answer scores 1 (its
#: references are the non-empty strings "True" and "False"). Pinned so a fixed release fails here.
LENIENT_SCORERS = {"game_of_life_halting"}


#: Questions per task in the harness test: every answer is scored in a forked child (about
#: 0.1 s each from a test process of 1.5 GB), and 3 per task of the 100 keep every task's
#: scorer checked at a third of the time of 8.
PER_TASK = 3


@pytest.mark.slow
def test_reference_answers_score_every_task_and_wrong_answers_none_through_the_harness() -> None:
    items = list(hard.hard_items(CTX, size=PER_TASK))
    right = ReplayBackend(recorded=_first_turn_replies(items, _reference), rules=[("Try again", "\\boxed{}")])
    result = evaluate(right, items, suite="reasoning_gym_hard", size=PER_TASK, concurrency=64)
    assert len(result.episodes) == 100 * PER_TASK and result.overall.errors == 0
    lost = {e.label for e in result.episodes if not e.success}
    assert lost <= REJECTED_REFERENCES, lost
    rejected = [e for e in result.episodes if not e.success]
    references = {(i.label, i.seed): i.make_env().solution() for i in items if i.label in REJECTED_REFERENCES}
    assert {references[(e.label, e.seed)] for e in rejected} <= {'\\boxed{["No solution"]}'}
    assert set(result.columns) == set(COLUMNS)
    for name, column in result.columns.items():
        assert (column.tasks, column.scored, column.episodes, column.unavailable) == (COLUMNS[name], COLUMNS[name],
                                                                                       PER_TASK * COLUMNS[name], [])
    assert result.columns["Math"].success_rate == result.columns["Cognition"].success_rate == 1.0
    assert result.columns["Logic"].success_rate == 1.0
    assert result.columns["Algorithmic"].success_rate == pytest.approx(1 - len(rejected) / PER_TASK / 36)

    wrong = ReplayBackend(rules=[(".", "\\boxed{no answer here}")])
    result = evaluate(wrong, items, suite="reasoning_gym_hard", size=PER_TASK, concurrency=64)
    assert result.overall.errors == 0
    assert {e.label for e in result.episodes if e.success} == LENIENT_SCORERS
    assert result.groups["Algorithmic/game_of_life_halting"].success_rate == 1.0
    assert result.columns["Algorithmic"].success_rate == pytest.approx(1 / 36)
    assert all(c.success_rate == 0.0 for name, c in result.columns.items() if name != "Algorithmic")
    # every wrong first answer got its second turn
    assert all(e.turns == 2 for e in result.episodes if e.label not in LENIENT_SCORERS)


def test_a_dataset_that_cannot_be_built_is_reported_by_name_not_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    split = hard.hard_split()
    broken = [replace(t, config={"min_n": 10, "max_n": 5}) if t.dataset == "count_bits" else t for t in split.tasks]
    monkeypatch.setattr(hard, "hard_split", lambda: replace(split, tasks=tuple(broken)))
    items = list(hard.hard_items(CTX, size=2, tasks="count_bits,gcd"))
    assert [i.label for i in items] == ["count_bits", "count_bits", "gcd", "gcd"]
    backend = ReplayBackend(recorded=_first_turn_replies(items[2:], _reference))
    result = evaluate(backend, items, suite="reasoning_gym_hard", size=2)
    math = result.columns["Math"]
    assert (math.tasks, math.scored, math.unavailable, math.success_rate) == (2, 1, ["Math/count_bits"], 1.0)
    assert result.groups["Math/count_bits"].errors == 2
    [line] = unavailable_lines(result)
    assert "Math/count_bits" in line and "cannot build count_bits" in line


@pytest.mark.model
@pytest.mark.slow
def test_spade_eval_of_the_embedded_model_on_one_task_per_column() -> None:
    r = CliRunner().invoke(build_app(), ["eval", "--suite", "reasoning_gym_hard", "--size", "1", "-o", f"tasks={SLICE}",
                                         "--max-new-tokens", "8", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout[r.stdout.index("{"):])
    assert out["overall"]["n"] == 4 and out["overall"]["errors"] == 0
    assert set(out["columns"]) == set(COLUMNS)
    assert all(c["tasks"] == 1 and c["episodes"] == 1 for c in out["columns"].values())
    assert out["size"] == 1 and out["snapshot"] == "embedded:SmolLM2-135M-Instruct"
