"""Hook implementations of spade_games: the ``games`` domain."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spade_core.domains import ActionFormat, Domain, EvalSuite
from spade_core.hookspecs import hookimpl

from .catalog import SKILLS, seed_envs
from .fuzz import actions
from .prompt import PROMPT_SPEC

#: Actions that must never solve a game or crash it (degenerate-reward probes). None of them
#: is a well-formed command of any seed game's grammar.
GARBAGE_ACTIONS: tuple[str, ...] = (
    "",
    "hello",
    "I give up.",
    "\\boxed{}",
    "\\boxed{asdf qwerty}",
    "\\boxed{solve}",
    "\\boxed{answer}",
    "\\boxed{help}",
    "\\boxed{" + "9" * 40 + "}",
    "\\boxed{\u00e9\u00e8 \u4e2d\u6587 \U0001f600}",
    "boxed{guess 1234}",
    "\\boxed{guess",
)


def _seed_pool_suite(**options: Any) -> Any:
    from .evaluation import evaluate  # imported when the suite runs, not when domains are listed

    return evaluate(**options)


def games_domain() -> Domain:
    """The games domain: six reasoning skills, the seed pool, and fuzzing support."""
    return Domain(
        name="games",
        description=(
            "Cognitive text games with hidden state revealed by acting: math, logic, spatial, "
            "pattern, optimisation and causal reasoning; \\boxed{command} actions."
        ),
        skills=SKILLS,
        prompt_spec=PROMPT_SPEC,
        action_format=ActionFormat.boxed,
        seed_envs=seed_envs(),
        # The paper's environment contract checks math answers with
        # ``from math_verify import parse, verify``; the sandbox hands out its facade
        # (spade_sandbox.facades.math_verify), whose parsed answers are opaque.
        allowed_modules=frozenset({"math_verify"}),
        fuzz_strategy=actions,
        garbage_actions=GARBAGE_ACTIONS,
        eval_suites={
            "seed_pool": EvalSuite(
                name="seed_pool",
                description=(
                    "A player (one per episode, observation -> action) on every seed game: mean return, "
                    "win rate and turns per game and per skill; without a player, the blind floor and "
                    "expert ceiling of each game."
                ),
                run=_seed_pool_suite,
            )
        },
    )


@hookimpl
def spade_register_domains(register: Callable[[Domain], None]) -> None:
    register(games_domain())
