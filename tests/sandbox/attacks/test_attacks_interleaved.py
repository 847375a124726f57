"""Property: whatever sequence of attacks runs in a pool, an innocent environment in the
same pool keeps its exact state and no decoy is touched."""

from __future__ import annotations

import test_attacks_files as files
import test_attacks_interpreter as interpreter
import test_attacks_network as network
import test_attacks_processes as processes
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import BYSTANDER
from envsrc import OS_GADGET_MODULES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spade_sandbox.errors import SandboxError

#: Attacks that end quickly without the filters (no deadline or memory limit to wait for).
FAST = [a for m in (files, network, processes, interpreter) for a in m.ATTACKS]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(FAST), min_size=1, max_size=5))
def test_a_bystander_keeps_its_state_through_any_sequence_of_attacks(os_pool, decoys, attacks):
    bystander = os_pool.spawn(BYSTANDER)
    os_pool.reset(bystander)
    for turn, attack in enumerate(attacks, start=1):
        try:
            h = os_pool.spawn(attack.source(**decoys.fields()), allowed_modules=OS_GADGET_MODULES)
            os_pool.reset(h, seed=0)
            outcome = os_pool.step(h, "attack")
            assert decoys.secret not in repr(outcome)
            raised = None
        except SandboxError as exc:
            raised = exc
            assert decoys.secret not in str(exc)
        expected = attack.os_only.error
        if expected is not None:
            assert isinstance(raised, expected), f"{attack.id}: {raised!r}"
        assert os_pool.step(bystander, "x") == (f"x {turn}", 0.0, False, False, {})
    os_pool.close_env(bystander)
    assert decoys.untouched() == []
