"""Hook implementations of spade_tooluse: the ``tooluse`` domain and the ``bfcl`` eval suite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spade_core.domains import ActionFormat, Domain, EvalSuite
from spade_core.hookspecs import hookimpl

from .catalog import SKILLS, seed_envs
from .fuzz import actions
from .prompt import PROMPT_SPEC
from .reference_base import REWARD_RANGE

#: Actions that must never solve a request or crash an environment (degenerate-reward probes).
GARBAGE_ACTIONS: tuple[str, ...] = (
    "",
    "hello",
    "I give up.",
    "<answer></answer>",
    "<answer>done</answer>",
    "<tool_call></tool_call>",
    "<tool_call>{}</tool_call>",
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    "<tool_call>{not json</tool_call>",
    '<tool_call>{"name": "x"',
    "\\boxed{answer}",
)


def _bfcl_suite(**options: Any) -> Any:
    from .bfcl import suite_for_plugin

    return suite_for_plugin(**options)


def tooluse_domain() -> Domain:
    """The tool-use domain: six skills, the seed pool, fuzzing and the BFCL-v4 suite."""
    return Domain(
        name="tooluse",
        description=(
            "Multi-turn tool use: simulated systems operated through OpenAI-format tools, "
            "<tool_call> / <answer> actions, graded by comparing the final state with a replayed reference."
        ),
        skills=SKILLS,
        prompt_spec=PROMPT_SPEC,
        action_format=ActionFormat.tool_call,
        seed_envs=seed_envs(),
        allowed_modules=frozenset({"spade_tooluse.base"}),
        # -0.1 for a format error in the reference tool-use base (``ToolUseBaseEnv``).
        reward_range=REWARD_RANGE,
        fuzz_strategy=actions,
        eval_suites={
            "bfcl_v4_multi_turn": EvalSuite(
                name="bfcl_v4_multi_turn",
                description=(
                    "The 800 BFCL-v4 multi-turn entries (base, miss_func, miss_param, long_context) as environments: "
                    "ground-truth replay and agreement with the official checker on mutated trajectories."
                ),
                run=_bfcl_suite,
            )
        },
        garbage_actions=GARBAGE_ACTIONS,
    )


@hookimpl
def spade_register_domains(register: Callable[[Domain], None]) -> None:
    register(tooluse_domain())


@hookimpl
def spade_register_eval_suites(register: Callable[[Any], None]) -> None:
    from .bfcl.suite import SUITE

    register(SUITE)
