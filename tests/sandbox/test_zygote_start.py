"""The zygote's start: the process starts without the caller waiting for its boot, a zygote
that fails to start is reported by the first request (and replaced by the next), the first
``gym.make`` of a stored environment starts it before importing the pool, and interpreter
exit does not wait for it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import psutil
import pytest
from conftest import home_with_stored_counter, run_fresh
from envsrc import COUNTER
from spade_sandbox.backends import ZygoteBackend
from spade_sandbox.channel import ZygoteProcess
from spade_sandbox.errors import SandboxUnavailable

from spade_sandbox import SandboxLimits, SandboxPool


def test_starting_a_zygote_does_not_wait_for_its_boot(tmp_path: Path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    # The zygote's command waits until the test opens the gate: a constructor that waited
    # for the hello would block until its start timeout and raise instead of returning.
    held = ["sh", "-c", f'read _ < "{gate}"; exec "$@"', "sh"]
    zygote = ZygoteProcess(held, start_timeout_s=30)
    try:
        assert zygote.alive
        with open(gate, "w") as opener:
            opener.write("go\n")
        hello = zygote.ready()
        assert hello[0] == "ok"
        assert zygote.pid == hello[1]["pid"] and zygote.pid != os.getpid()
        assert zygote.ready() is hello  # read once
    finally:
        zygote.close()
    assert not zygote.alive


def test_a_zygote_that_fails_to_start_is_reported_by_the_first_request_and_replaced():
    backend = ZygoteBackend("broken", ["false"])  # exits at once: no hello ever comes
    with SandboxPool(SandboxLimits(spawn_timeout_s=10), backend=backend) as pool:
        for _ in range(2):  # the second attempt starts a new zygote, which fails the same way
            with pytest.raises(SandboxUnavailable, match="zygote failed to start"):
                pool.spawn(COUNTER)
            assert backend._zygote is not None and not backend._zygote.alive


def test_closing_without_waiting_leaves_the_clean_up_to_the_zygote():
    pool = SandboxPool(SandboxLimits(call_timeout_s=5))
    handles = [pool.spawn(COUNTER + f"\n# v{i}\n") for i in range(2)]
    workers = [psutil.Process(pool.worker_of(h).pid) for h in handles]
    zygote = pool.backend._zygote
    assert zygote is not None
    zygote_process = psutil.Process(zygote.proc.pid)
    pool.close(wait=False)
    assert pool.closed
    # Nothing is left running: the workers were killed, and the zygote leaves on its own.
    gone, alive = psutil.wait_procs([*workers, zygote_process], timeout=20)
    assert not alive
    zygote.proc.wait(timeout=5)  # reap it here (the interpreter exit this is for needs not)


_FIRST_MAKE = textwrap.dedent(
    """
    import json, sys
    import gymnasium as gym
    import spade_core
    from spade_sandbox import prestart

    seen = {}
    start = prestart.start_default_zygote

    def recording_start():
        seen["pool_imported"] = "spade_sandbox.pool" in sys.modules
        start()
        seen["started"] = prestart._started

    prestart.start_default_zygote = recording_start
    env = gym.make("spade/ZygoteCounter-v1")
    obs, info = env.reset(seed=4)
    from spade_sandbox import default_pool

    pool = default_pool()
    print(json.dumps({
        "pool_imported_first": seen["pool_imported"],
        "started": seen["started"] is not None,
        "adopted": seen["started"] is not None and pool.backend._zygote is seen["started"],
        "left_over": prestart._started is not None,
        "obs": obs,
    }))
    """
)


def test_the_first_make_of_a_stored_env_starts_the_zygote_before_importing_the_pool(tmp_path: Path):
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    out = run_fresh(home, _FIRST_MAKE)
    assert out == {
        "pool_imported_first": False,
        "started": True,
        "adopted": True,
        "left_over": False,
        "obs": out["obs"],
    }
    assert str(out["obs"]).startswith("secret ")

    # Sandbox settings of its own: the pool starts its zygote itself, with those settings.
    (home / "spade.toml").write_text("[spade.sandbox]\ncall_timeout_s = 3\n")
    out = run_fresh(home, _FIRST_MAKE)
    assert (out["started"], out["adopted"], out["left_over"]) == (False, False, False)
    assert str(out["obs"]).startswith("secret ")
