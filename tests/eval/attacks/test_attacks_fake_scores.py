"""A score cannot be faked with a number that is not one: ``nan``, ``inf``, ``Infinity`` or a
value past a float's range never matches an expected number, in any scorer that compares
numbers (LiveCodeBench's outputs, tool-use answers, tau2's number arguments, Reasoning-Gym's
answers, a tool call's JSON arguments). Before, a LiveCodeBench program printing ``nan``
passed every numeric test: ``abs(nan - 3.5) > 1e-6`` is false, so never "too far"."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from spade_core.actions import ActionFormatError, parse_tool_action
from spade_core.answers import finite_number, names_non_finite, numbers_match
from spade_core.app.eval_harness import SYSTEM_PROMPT, evaluate
from spade_core.evaluation import SuiteContext
from spade_designer.llm.replay import ReplayBackend, conversation_key
from spade_eval.livecodebench import livecodebench_items, outputs_match

NOT_NUMBERS = ("nan", "NaN", "-nan", "inf", "-inf", "Infinity", "+infinity", "1e999", "-1e400", "9" * 401)


def test_no_non_finite_text_matches_a_number() -> None:
    for fake in NOT_NUMBERS:
        assert finite_number(fake) is None and names_non_finite(fake) == (fake != "9" * 401), fake
        for expected in ("3.5", "0", "-2", fake):
            assert not numbers_match(fake, expected, abs_tol=1e-6), (fake, expected)
            assert not numbers_match(expected, fake, abs_tol=1e-6), (fake, expected)
    assert numbers_match("3.5000001", "3.5", abs_tol=1e-6) and not numbers_match("3.6", "3.5", abs_tol=1e-6)
    assert numbers_match(2, "2.0") and not numbers_match(True, 1)
    # the tool-use answer check compares through it too
    from spade_tooluse.reference_base import ToolUseBaseEnv

    env = ToolUseBaseEnv.__new__(ToolUseBaseEnv)
    for expected in ("3.50", "1e999"):
        env._expected_answer = expected
        for fake in ("nan", "NaN", "inf", "$inf", "1e999", "1e400"):
            assert not env._check_answer(fake) or fake == expected, (fake, expected)
    env._expected_answer = "3.50"
    assert env._check_answer("$3.5") and env._check_answer("3.501")


@pytest.mark.parametrize("fake", ["nan", "-nan", "NaN 1"])
def test_livecodebench_outputs_never_match_a_non_finite_token(fake: str) -> None:
    expected = "3.5 1\n" if " " in fake else "3.5\n"
    assert not outputs_match(fake + "\n", expected)
    assert outputs_match("3.5000000001\n", "3.5\n")  # the tolerance still holds for real numbers


def test_a_program_printing_nan_fails_every_numeric_test_in_the_sandbox(tmp_path: Path) -> None:
    tests = [{"input": f"{a} {b}\n", "output": f"{a / b}\n", "testtype": "stdin"} for a, b in ((1, 3), (7, 2), (5, 4))]
    row = {"question_id": "ratio", "question_content": "Print a / b.", "starter_code": "", "contest_date": "2025-03-01",
           "public_test_cases": json.dumps(tests[:1]), "private_test_cases": json.dumps(tests[1:]), "metadata": "{}"}
    data = tmp_path / "lcb.jsonl"
    data.write_text(json.dumps(row) + "\n")
    with contextlib.ExitStack() as stack:
        items = livecodebench_items(SuiteContext(None, None, None, stack), size=1, data=str(data), time_limit=3)
        obs, _ = items[0].make_env().reset(seed=0)
        key = conversation_key([{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": obs}])
        for program, wins in (("print(float('nan'))", 0.0), ("print('inf')", 0.0),
                              ("a, b = map(int, input().split())\nprint(a / b)", 1.0)):
            policy = ReplayBackend(recorded={key: f"```python\n{program}\n```"})
            result = evaluate(policy, items, suite="livecodebench", size=1)
            assert result.columns["LCB-v6"].success_rate == wins, program
            assert result.overall.errors == 0


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_tool_call_with_a_non_finite_json_number_is_a_format_error(constant: str) -> None:
    with pytest.raises(ActionFormatError, match="not a JSON number"):
        parse_tool_action(f'<tool_call>{{"name": "pay", "arguments": {{"amount": {constant}}}}}</tool_call>')
    with pytest.raises(ActionFormatError, match="not a JSON number"):
        parse_tool_action(f'<tool_call>{{"name": "pay", "arguments": "{{\\"amount\\": {constant}}}"}}</tool_call>')


def test_tau2_number_arguments_refuse_non_finite_values() -> None:
    from spade_eval.tau2._common import conform

    for fake in ("nan", "inf", "-Infinity", float("nan"), float("inf"), 10**400):
        with pytest.raises(ValueError, match="amount: must be a number, .* nan and the infinities are not numbers"):
            conform({"type": "number"}, fake, "amount")
    assert conform({"type": "number"}, "12.5", "amount") == 12.5


def test_a_reasoning_gym_answer_that_is_no_finite_number_scores_nothing() -> None:
    pytest.importorskip("reasoning_gym")
    from spade_reasoning_gym.suite import ReasoningGymEnv

    class LenientScorer:
        """A scorer written the way that passes NaN: far is ``> tolerance``."""

        def score_answer(self, answer: str, entry: dict) -> float:
            try:
                return 0.0 if abs(float(answer) - float(entry["answer"])) > 1e-6 else 1.0
            except ValueError:
                return 0.0

    env = ReasoningGymEnv(LenientScorer(), {"question": "What is 7 / 2?", "answer": "3.5"}, "decimal_arithmetic")
    for fake in ("\\boxed{nan}", "\\boxed{NaN}", "nan"):
        obs, reward, terminated, _, info = env.step(fake)
        assert (reward, terminated) == (0.0, True) and "not a finite number" in info["scoring_error"], fake
    assert env.step("\\boxed{3.5}")[1] == 1.0
