"""Environments written for the reference implementation's tool-use base run unchanged."""

from __future__ import annotations

import pytest
from gymnasium.utils.env_checker import check_env
from spade_core.env import ReferenceEnvAdapter
from spade_core.source import load_trusted_class
from spade_tooluse.reference_base import REWARD_RANGE, with_base_import

# Written the way the reference designer writes them: no import of the base, tools declared
# as a dict in reset(), global random seeded in reset(), a text solution.
REFERENCE_STYLE = '''
import json
import random


class ShelfAuditEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        self.turn_count = 0
        self._call_history = []
        if seed is not None:
            random.seed(seed)
        shelves = {f"S{i}": random.randint(0, 40) for i in range(1, 6)}
        self._state = {"shelves": shelves, "moved": 0}
        self._tools = {
            "list_shelves": {"description": "Units on every shelf", "parameters": {"type": "object", "properties": {}}},
            "move_units": {"description": "Move units between shelves", "parameters": {"type": "object",
                "properties": {"src": {"type": "string"}, "dst": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["src", "dst", "n"]}},
        }
        self._expected_answer = sum(shelves.values())
        return ("Report the total number of units across all shelves as <answer>N</answer>.", {})

    def tool_list_shelves(self):
        return json.dumps(self._state["shelves"])

    def tool_move_units(self, src, dst, n):
        if self._state["shelves"][src] < n:
            return "Error: not enough units"
        self._state["shelves"][src] -= n
        self._state["shelves"][dst] += n
        return "ok"

    def solution(self):
        return '<tool_call>{"name": "list_shelves", "arguments": {}}</tool_call>\\n<answer>' + str(self._expected_answer) + '</answer>'
'''


@pytest.fixture()
def env():
    cls = load_trusted_class(with_base_import(REFERENCE_STYLE))
    e = cls()
    e.reset(seed=3)
    return e


def test_the_base_import_is_added_only_when_needed():
    adopted = with_base_import(REFERENCE_STYLE)
    assert adopted.startswith("from spade_tooluse.base import ToolUseBaseEnv\n")
    assert with_base_import(adopted) == adopted
    future = "from __future__ import annotations\n" + REFERENCE_STYLE
    assert with_base_import(future).splitlines()[:2] == [
        "from __future__ import annotations", "from spade_tooluse.base import ToolUseBaseEnv"]
    plain = "class PlainEnv:\n    pass\n"
    assert with_base_import(plain) == plain
    assert with_base_import("def (") == "def ("


def test_tools_are_exposed_in_openai_format(env):
    names = [t["function"]["name"] for t in env.get_tool_schemas()]
    assert names == ["list_shelves", "move_units"]
    assert env.get_tools()[1]["function"]["parameters"]["required"] == ["src", "dst", "n"]


def test_a_tool_call_runs_and_a_right_answer_ends_the_episode(env):
    obs, reward, terminated, truncated, _ = env.step('<tool_call>{"name": "list_shelves", "arguments": {}}</tool_call>')
    assert obs.startswith("Tool result:\n{") and reward == 0.0 and not terminated
    total = env._expected_answer
    obs, reward, terminated, truncated, _ = env.step(f"The total is <answer>{total:,}.00</answer>")
    assert (obs, reward, terminated, truncated) == ("Correct!", 1.0, True, False)


def test_wrong_answers_format_errors_and_unknown_tools(env):
    assert env.step("<answer>-1</answer>")[:3] == ("Incorrect. Keep using tools.", 0.0, False)
    obs, reward, *_ = env.step("just text")
    assert reward == -0.1 and obs.startswith("Format error")
    obs, reward, *_ = env.step("<tool_call>{broken</tool_call>")
    assert reward == -0.1 and "invalid tool call" in obs
    obs, reward, *_ = env.step('<tool_call>{"name": "teleport", "arguments": {}}</tool_call>')
    assert reward == 0.0 and "Unknown tool 'teleport'" in obs
    obs, reward, *_ = env.step('<tool_call>{"name": "move_units", "arguments": {"src": "S1"}}</tool_call>')
    assert "Error calling move_units" in obs


def test_running_out_of_turns_truncates_and_reveals_the_solution():
    cls = load_trusted_class(with_base_import(REFERENCE_STYLE))
    env = cls(max_turns=2)
    env.reset(seed=1)
    assert env.step("<answer>0</answer>")[3] is False
    obs, reward, terminated, truncated, _ = env.step("<answer>0</answer>")
    assert truncated and not terminated and reward == 0.0 and "Solution:" in obs


def test_reference_style_env_passes_check_env():
    cls = load_trusted_class(with_base_import(REFERENCE_STYLE))
    check_env(ReferenceEnvAdapter(cls, max_turns=10, reward_range=REWARD_RANGE), skip_render_check=True)
