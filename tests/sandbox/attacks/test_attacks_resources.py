"""Resources: CPU loops (bytecode and C), sleeping forever, memory bombs, huge output,
deep recursion, catastrophic regular expressions. Each is cut off by a deadline, a limit
or a reply check; the error says which, and only the attacker's worker pays for it."""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import MEMORY, QUIET, TIMEOUT, Attack, Outcome, contract, env_error, static
from spade_sandbox.errors import EnvCodeError, SandboxCrash

RECURSE = "def dive(n):\n    return dive(n + 1)"

ATTACKS = [
    Attack("cpu-loop", "while True:\n    pass", TIMEOUT, TIMEOUT, "wall-clock deadline (pidfd kill) / RLIMIT_CPU"),
    Attack(
        "cpu-loop-in-c",
        "return str(sum(range(10**15))), 0.0, False, False, {}",
        TIMEOUT,
        TIMEOUT,
        "wall-clock deadline (no bytecode boundary for signals)",
    ),
    Attack("sleep-forever", "import time\ntime.sleep(10**6)", static("import"), TIMEOUT, "static; wall-clock deadline"),
    Attack(
        "block-forever-in-select",
        "import select\nselect.select([], [], [])",
        static("import"),
        TIMEOUT,
        "static; wall-clock deadline",
    ),
    Attack(
        "memory-bomb",
        "hog = []\nwhile True:\n    hog.append(bytearray(8 << 20))",
        MEMORY,
        MEMORY,
        "RLIMIT_AS / memory cgroup",
    ),
    Attack("one-huge-allocation", "x = 'a' * (1 << 33)", MEMORY, MEMORY, "RLIMIT_AS"),
    Attack(
        "huge-observation",
        "return 'x' * 10_000_000, 0.0, False, False, {}",
        contract("characters"),
        contract("characters"),
        "reply checks (max_output_chars)",
    ),
    Attack(
        "huge-info",
        "return 'ok', 0.0, False, False, {'blob': 'x' * 10_000_000}",
        contract("characters of text"),
        contract("characters of text"),
        "reply checks (info budget)",
    ),
    Attack(
        "self-referential-info",
        "loop = {}\nloop['again'] = loop\nreturn 'ok', 0.0, False, False, loop",
        contract("too large or too deeply nested"),
        contract("too large or too deeply nested"),
        "reply checks (info depth)",
    ),
    Attack(
        "huge-exception-message",
        "raise ValueError('x' * 5_000_000)",
        env_error("ValueError"),
        env_error("ValueError"),
        "error reply is an ordinary env error",
    ),
    Attack(
        "print-flood",
        "for _ in range(20_000):\n    print('x' * 10_000)",
        QUIET,
        QUIET,
        "guard: print goes to a bounded buffer; OS mode: stdout is /dev/null",
    ),
    Attack(
        "deep-recursion",
        "return dive(0)",
        env_error("RecursionError"),
        env_error("RecursionError"),
        "interpreter recursion limit",
        prelude=RECURSE,
    ),
    Attack(
        "c-stack-overflow-nested-tuple-hash",
        "x = ()\nfor _ in range(10**6):\n    x = (x,)\nreturn str(hash(x)), 0.0, False, False, {}",
        Outcome(SandboxCrash, "SIGSEGV"),
        Outcome(SandboxCrash, "SIGSEGV"),
        "nothing stops it in-process (no import needed): the SIGSEGV kills only its worker",
    ),
    Attack(
        "regex-nested-quantifier",
        "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')",
        TIMEOUT,
        TIMEOUT,
        "wall-clock deadline (the match runs in C)",
    ),
    Attack(
        "regex-alternation-blowup",
        "import re\nre.fullmatch(r'(a|aa)+c', 'a' * 80)",
        TIMEOUT,
        TIMEOUT,
        "wall-clock deadline",
    ),
    Attack("hang-in-reset", "while True:\n    pass", TIMEOUT, TIMEOUT, "wall-clock deadline", in_reset=True),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)


def test_error_messages_stay_bounded(guarded_pool):
    """An env that raises with a huge message gets an EnvCodeError whose text stays readable:
    the caller's memory and logs must not be at the mercy of the environment."""
    h = guarded_pool.spawn(
        "class LoudEnv:\n    def reset(self, seed=None):\n        raise ValueError('x' * 5_000_000)\n    def step(self, a):\n        return 'ok', 0.0, True, False, {}\n"
    )
    # Only the size is kept: an xfail report must not hold the 5 MB error alive past the
    # test (the module's RSS check would then fail for the wrong reason).
    try:
        guarded_pool.reset(h)
        raised, size = None, 0
    except EnvCodeError as exc:
        raised, size = type(exc).__name__ + ": " + str(exc)[:60], len(str(exc))
    guarded_pool.close_env(h)
    assert raised is not None and "ValueError" in raised
    assert size < 100_000, f"error message of {size} characters"
