"""Host memory amplification: replies that would cost the host far more than their size.

The pool's process is the trainer's (or the validator's) own, so a worker must not be able
to make it allocate. Each attack runs in both modes with this process's peak RSS measured
(``hostmem.within_bound``: within 64 MB of where it started). What stops them, host side:
a frame larger than a valid reply to the request can be is refused from its header; a frame
that fits is decoded with a budget of values; frame buffers grow as bytes arrive; the pool
checks info depth and size after decoding; the worker measures strings by their real length.
"""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import Attack, Outcome, contract, static
from hostmem import FORGE_PRELUDE, held_mb, within_bound
from spade_sandbox.errors import SandboxCrash, SandboxError, SandboxTimeout

from spade_sandbox import SandboxLimits, SandboxPool

SLY = "class Sly(str):\n    def __len__(self):\n        return 1\n"
REFUSED = Outcome(SandboxCrash, r"announced a \d+-byte reply \(limit for this request \d+\)")
TOO_MANY = Outcome(SandboxCrash, r"decodes to too many values")

ATTACKS = [
    Attack(
        "forged-8mb-reply-of-empty-maps",
        "forge(msgpack.packb(['ok', ['o', 0.0, False, False, {'k': [[{}] * 500_000] * 16}]]))\nos._exit(0)",
        static("import"), REFUSED,
        "static; the pool refuses a frame larger than any valid step reply from its header (8 MB -> 650 MB before)",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "forged-reply-of-empty-maps-within-the-frame-limit",
        "forge(msgpack.packb(['ok', ['o', 0.0, False, False, {'k': [{}] * 600_000}]]))\nos._exit(0)",
        static("import"), TOO_MANY,
        "static; the decode budget stops after the values a valid reply can hold",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "forged-header-announcing-128-mib",
        "forge_raw((128 << 20).to_bytes(4, 'big') + b'x' * 1000)\nimport time\ntime.sleep(60)",
        static("import"), REFUSED,
        "static; the header alone is refused (nothing allocated for it)",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "forged-deep-info",
        "deep = 0\nfor _ in range(40):\n    deep = [deep]\n"
        "forge(msgpack.packb(['ok', ['o', 0.0, False, False, {'k': deep}]]))\nos._exit(0)",
        static("import"), contract("too large or too deeply nested"),
        "static; the pool checks the decoded info's depth itself",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "forged-info-of-too-many-values",
        "forge(msgpack.packb(['ok', ['o', 0.0, False, False, {'k': list(range(20_000))}]]))\nos._exit(0)",
        static("import"), contract("too large or too deeply nested"),
        "static; the pool counts the decoded info's values itself",
        prelude=FORGE_PRELUDE,
    ),
    Attack(
        "info-of-twenty-thousand-empty-dicts",
        "return 'o', 0.0, False, False, {'k': [{} for _ in range(20_000)]}",
        contract("too large or too deeply nested"), contract("too large or too deeply nested"),
        "the worker's info budget (MAX_INFO_ITEMS)",
    ),
    Attack(
        "info-text-whose-len-lies",
        SLY + "return 'o', 0.0, False, False, {'k': Sly('x' * 5_000_000)}",
        contract("characters of text"), contract("characters of text"),
        "the worker measures str subclasses by their real length",
    ),
]

def _solution_attack(id: str, setup: str, guarded: Outcome, os_only: Outcome, stops: str) -> Attack:
    """An attack whose ``solution()`` returns the module-level ``SOLUTION`` built by ``setup``."""
    return WholeSourceAttack(id, "", guarded, os_only, stops, prelude=setup + """

class SolutionAttackEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return "ok", 0.0, True, False, {}

    def solution(self):
        return SOLUTION
""")


class WholeSourceAttack(Attack):
    """An attack given as a whole module (its ``prelude``) rather than a ``step`` body."""

    def source(self, **decoys: object) -> str:
        return self.prelude


SOLUTION_ATTACKS = [
    _solution_attack(
        "solution-whose-len-lies", SLY + "SOLUTION = Sly('x' * 8_000_000)",
        contract("characters"), contract("characters"),
        "the worker measures the solution's real length; the pool re-checks the plain str",
    ),
    _solution_attack(
        "solution-list-of-lying-actions", SLY + "SOLUTION = [Sly('x' * 100_000) for _ in range(80)]",
        contract("characters"), contract("characters"),
        "the worker sums the actions' real lengths; the pool re-checks the plain list",
    ),
    _solution_attack(
        "solution-of-a-million-empty-actions", "SOLUTION = [''] * 1_000_000",
        contract("actions"), contract("actions"),
        "the worker bounds the number of actions (max_output_chars)",
    ),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    within_bound(lambda: assert_contained(guarded_pool, attack, attack.guarded, decoys))


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    within_bound(lambda: assert_contained(os_pool, attack, attack.os_only, decoys))


@pytest.mark.parametrize("attack", SOLUTION_ATTACKS, ids=lambda a: a.id)
def test_solutions_normal_path(guarded_pool, decoys, attack):
    within_bound(lambda: assert_contained(guarded_pool, attack, attack.guarded, decoys, call="solution"))


@pytest.mark.parametrize("attack", SOLUTION_ATTACKS, ids=lambda a: a.id)
def test_solutions_os_layers_alone(os_pool, decoys, attack):
    within_bound(lambda: assert_contained(os_pool, attack, attack.os_only, decoys, call="solution"))


# --- batches: the frame limit scales with the batch, the buffer with the bytes ----------

BATCH_ANNOUNCES = FORGE_PRELUDE + '''
class AnnouncerEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        # A header announcing 120 MiB (within a 200-instance batch's limit), then silence.
        forge_raw((120 << 20).to_bytes(4, "big") + b"x" * 64)
        import time
        time.sleep(60)
'''

BATCH_SENDS = FORGE_PRELUDE + '''
class SenderEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        # 40 MB of bytes that are no msgpack value, then the worker ends.
        forge(b"\\xc1" * (40 << 20))
        os._exit(0)
'''


@pytest.fixture(scope="module")
def batch_pool():
    with SandboxPool(SandboxLimits(call_timeout_s=3.0, memory_mb=256, cpu_seconds=2), unsafe_skip_static_check=True) as p:
        yield p


def test_a_header_announcing_a_large_batch_reply_allocates_nothing_up_front(batch_pool):
    """Before, the pool allocated the announced 120 MiB the moment the header came; now
    the buffer grows with the bytes that actually arrive (64 here)."""
    first = batch_pool.spawn(BATCH_ANNOUNCES)
    handles = [first] + [batch_pool.spawn(BATCH_ANNOUNCES) for _ in range(199)]
    assert len({batch_pool.worker_of(h).pid for h in handles}) == 1

    def run() -> list:
        return batch_pool.step_many([(h, "go") for h in handles])

    results, peak = within_bound(run)
    assert all(isinstance(r, SandboxTimeout) for r in results), results[:2]
    assert peak.grown_mb < 20, f"{peak.grown_mb:.0f} MB for a header and 64 bytes"


def test_dead_links_do_not_keep_their_buffers(batch_pool):
    """Three workers each send a 40 MB frame that does not decode and die: the buffers the
    pool read them into are not kept alive by the dead links' errors (before: 44 -> 428 MB,
    never released)."""
    start = held_mb()
    for i in range(3):
        handles = [batch_pool.spawn(BATCH_SENDS + f"\n# attacker {i}\n") for _ in range(64)]
        results = batch_pool.step_many([(h, "go") for h in handles])
        assert all(isinstance(r, SandboxError) and "undecodable" in str(r) for r in results), results[:2]
    kept = held_mb() - start
    assert kept < 30, f"this process kept {kept:.0f} MB after three dead workers"
