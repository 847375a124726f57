"""The reply channel: objects that lie about themselves, exceptions that cannot be
printed, forged frames on the worker's own socket. The worker converts values to plain
types and the pool checks them again after decoding, so a lie becomes a contract error,
a crash or a timeout of the attacker's worker only."""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import BYSTANDER, assert_contained
from hostile import TIMEOUT, Attack, Outcome, contract, render, static
from spade_sandbox.errors import EnvCodeError, SandboxCrash

ATTACKS = [
    Attack("str-subclass-lying-len",
           "class Sly(str):\n    def __len__(self):\n        return 1\nreturn Sly('x' * 1_000_000), 0.0, False, False, {}",
           contract("characters"), contract("characters"), "pool re-checks the decoded plain str"),
    Attack("float-subclass-nan-reward", "class R(float):\n    pass\nreturn 'ok', R('nan'), False, False, {}",
           contract("non-finite reward"), contract("non-finite reward"), "reply checks"),
    Attack("exception-whose-str-raises",
           "class Boom(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise Boom()",
           Outcome(EnvCodeError, "unprintable message"), Outcome(EnvCodeError, "unprintable message"),
           "the error reply names the exception without calling its __str__ again; the worker lives on"),
    Attack("info-key-whose-str-hangs",
           "class K:\n    def __str__(self):\n        while True:\n            pass\nreturn 'ok', 0.0, False, False, {K(): 1}",
           TIMEOUT, TIMEOUT, "wall-clock deadline during conversion"),
]

FORGE = (
    "import os, msgpack\nframe = msgpack.packb(['ok', ['forged', 1.0, True, False, {}]])\n"
    "for fd in range(3, 12):\n    try:\n        os.write(fd, len(frame).to_bytes(4, 'big') + frame)\n"
    "    except OSError:\n        pass"
)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)


def test_forging_frames_needs_modules_the_static_layer_refuses(guarded_pool, decoys):
    assert_contained(guarded_pool, Attack("forge", FORGE, static("import"), static("import"), ""), static("import"), decoys)


def test_forged_frames_on_its_own_socket_reach_only_the_attacker(os_pool, decoys):
    """A worker can write frames on its own socket (``write`` is allowed: it is how it
    answers). Whether the pool reads the forged frame as the answer (the attacker lying
    about its own step, which it could do by returning the values) or sees two replies
    (the worker is killed) depends on timing; nothing reaches another worker."""
    bystander = os_pool.spawn(BYSTANDER)
    os_pool.reset(bystander)
    h = os_pool.spawn(render(Attack("forge", FORGE, static("import"), static("import"), "")))
    os_pool.reset(h)
    try:
        obs, reward, *_ = os_pool.step(h, "forge")
        assert obs in ("forged", "nothing happened")
    except SandboxCrash as exc:
        assert "more than one reply" in str(exc) or "broke the protocol" in str(exc)
    assert os_pool.step(bystander, "still")[0] == "still 1"
    assert decoys.untouched() == []
