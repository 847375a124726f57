"""Crafted sources against the host's static work and the guard's rewrite (issue 16, class 3
and the deep-expression item of class 7), each run three ways as in
``test_attacks_escape_interpreter.py``.

A 60 KB string literal of ``{`` and ``_`` used to hold the host's static check for about
13 s (a backtracking pattern over format fields); a long but valid expression failed to load
under the guard with ``RecursionError`` (its recursive rewrite). Now the crafted literals are
checked in linear time and run, a long expression CPython compiles loads and runs on every
path, and one nested deeper than CPython compiles is refused with a specific message
naming the limit, by the static layer or, without it, by the guard.
"""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from escape_common import *  # noqa: F403 (the guard_pool fixture)
from escape_common import EscapeAttack
from hostile import QUIET, Outcome, env_error, static
from spade_sandbox.errors import StaticCheckError

LONG_SUM = " + ".join(["a"] * 2_500)
TOO_DEEP = " + ".join(["a"] * 4_000)
#: With the static layer off, the pool still parses the source to find the class to build.
NO_CLASS = Outcome(StaticCheckError, r"\[env-class\]")

ATTACKS = [
    EscapeAttack("huge-brace-literal", "return str(len(S)), 0.0, False, False, {}", QUIET, QUIET,
                 "linear format-field scan", prelude="S = '{" + "_" * 60_000 + "'", guard=QUIET),
    EscapeAttack("huge-frame-prefix-literal", "return str(len(S)), 0.0, False, False, {}", QUIET, QUIET,
                 "linear format-field scan", prelude="S = '" + "{ gi_" * 12_000 + "'", guard=QUIET),
    EscapeAttack("huge-unclosed-fields-in-format", "return S.format(1)[:5], 0.0, False, False, {}",
                 env_error("ValueError"), env_error("ValueError"), "linear scan; str.format refuses the malformed string",
                 prelude="S = '{0.real' + '" + "{a" * 20_000 + "'", guard=env_error("ValueError")),
    EscapeAttack("long-expression-with-format", "return '{}'.format(X), 0.0, False, False, {}", QUIET, QUIET,
                 "the guard's rewrite is iterative and compiles with recursion headroom",
                 prelude=f"a = 1\nX = {LONG_SUM}", guard=QUIET),
    EscapeAttack("expression-deeper-than-cpython-compiles", "return '{}'.format(X), 0.0, False, False, {}",
                 static("nesting"), NO_CLASS,
                 "static nesting rule; with the static layer off the pool cannot parse the source for its class "
                 "name and refuses it before any worker runs it",
                 prelude=f"a = 1\nX = {TOO_DEEP}", guard=NO_CLASS),
    EscapeAttack("many-names", "return str(v1999), 0.0, False, False, {}", QUIET, QUIET, "linear walk",
                 prelude="\n".join(f"v{i} = {i}" for i in range(2_000)), guard=QUIET),
]


def test_the_guard_refuses_what_cpython_cannot_parse_with_the_limit_named():
    from spade_sandbox.guard import GuardRefusal, compile_guarded

    with pytest.raises(GuardRefusal, match=r"nests deeper than CPython parses \(limit about \d+ levels"):
        compile_guarded(f"a = 1\nX = '{{}}'.format({TOO_DEEP})", "<env>")


def test_long_expression_gives_its_value_under_the_guard(guard_pool):
    source = ATTACKS[3].source()
    handle = guard_pool.spawn(source)
    guard_pool.reset(handle)
    assert guard_pool.step(handle, "x")[0] == "2500"


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_guard_alone_contains(guard_pool, decoys, attack):
    assert_contained(guard_pool, attack, attack.guard, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)
