"""Errors say what happened: text that is not valid Unicode is a contract violation, and a
forged or cut-short frame is a protocol error naming what was wrong (not "exited with code
0"). Forging needs ``os`` and ``msgpack``, refused by the static layer on the normal path;
lone surrogates need nothing."""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import Attack, Outcome, contract, static
from hostmem import FORGE_PRELUDE
from spade_sandbox.errors import SandboxCrash

NOT_UNICODE = contract(r"returned text that is not valid Unicode \(a lone surrogate '\\ud800' at index 2\)")

ATTACKS = [
    Attack(
        "lone-surrogate-in-an-observation",
        "return 'ab\\ud800', 0.0, False, False, {}",
        NOT_UNICODE, NOT_UNICODE, "the worker reports text UTF-8 cannot carry as a contract violation",
    ),
    Attack(
        "lone-surrogate-in-a-reset-observation",
        "return 'ab\\ud800', {}",
        contract(r"reset\(\) returned text that is not valid Unicode"),
        contract(r"reset\(\) returned text that is not valid Unicode"),
        "the same, for reset()", in_reset=True,
    ),
    Attack(
        "lone-surrogate-in-info",
        "return 'ok', 0.0, False, False, {'note': 'ab\\ud800'}",
        NOT_UNICODE, NOT_UNICODE, "the same, for a value of info",
    ),
    Attack(
        "forged-frame-cut-short-then-exit",
        "forge_raw((100).to_bytes(4, 'big') + b'x' * 10)\nos._exit(0)",
        static("import"),
        Outcome(SandboxCrash, r"broke the protocol: its reply frame was cut short \(14 of 104 bytes\) and it ended its own process \(exit code 0\)"),
        "static; the pool names a frame cut short and how the worker ended",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "forged-reply-that-is-not-a-list",
        "forge(msgpack.packb(42))\nos._exit(0)",
        static("import"),
        Outcome(SandboxCrash, r"broke the protocol during step\(\): the reply is a int, not a list"),
        "static; the pool says what the reply was instead of a valid one",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "forged-ok-reply-with-a-wrong-shape",
        "forge(msgpack.packb(['ok', 'o', 1.0]))\nos._exit(0)",
        static("import"),
        Outcome(SandboxCrash, r"broke the protocol during step\(\): an 'ok' reply of 3 item\(s\)"),
        "static; the same",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "exit-zero-instead-of-answering",
        "import os\nos._exit(0)",
        static("import"),
        Outcome(SandboxCrash, r"ended its own process \(exit code 0\) instead of answering"),
        "static; an exit with nothing sent is named as such",
    ),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)


def test_a_lone_surrogate_leaves_the_worker_serving(guarded_pool):
    """A contract violation is not fatal: the same instance answers the next step."""
    h = guarded_pool.spawn(
        "class HalfEnv:\n    def reset(self, seed=None):\n        self.n = 0\n        return 'r', {}\n"
        "    def step(self, a):\n        self.n += 1\n        return ('\\ud800' if a == 'bad' else f'ok {self.n}'), 0.0, False, False, {}\n"
    )
    guarded_pool.reset(h)
    from spade_sandbox.errors import EnvContractViolation

    with pytest.raises(EnvContractViolation, match="lone surrogate") as info:
        guarded_pool.step(h, "bad")
    assert info.value.method == "step"
    assert guarded_pool.step(h, "good")[0] == "ok 2"


SURROGATE_FOR_SEED_ONE = (
    "class PickyEnv:\n    def reset(self, seed=None):\n        self.seed = seed\n"
    "        return ('\\ud800' if seed == 1 else 'ready'), {}\n"
    "    def step(self, a):\n        return ('\\ud800' if self.seed == 1 else 'ok'), 0.0, False, False, {}\n"
)


def test_in_a_batch_only_the_result_with_a_lone_surrogate_fails(guarded_pool):
    """The other instances of the batch get their results: one environment's bad text is
    its own contract violation, not the batch's."""
    from spade_sandbox.errors import EnvContractViolation

    handles = [guarded_pool.spawn(SURROGATE_FOR_SEED_ONE) for _ in range(3)]
    resets = guarded_pool.reset_many([(h, i) for i, h in enumerate(handles)])
    steps = guarded_pool.step_many([(h, "go") for h in handles])
    for results, good in ((resets, ("ready", {})), (steps, ("ok", 0.0, False, False, {}))):
        assert results[0] == good and results[2] == good
        assert isinstance(results[1], EnvContractViolation) and "lone surrogate" in str(results[1])
    for h in handles:
        guarded_pool.close_env(h)
