"""The zygote's start: the process starts without the caller waiting for its boot, a zygote
that fails to start is reported by the first request (and replaced by the next), importing
any package starts nothing (the first make from the store starts the zygote, before it reads
the store, and the default pool adopts it), a forked child does not use its parent's, and
interpreter exit does not wait for it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import psutil
import pytest
from conftest import home_with_stored_counter, run_fresh
from envsrc import COUNTER
from spade_sandbox.backends import ZygoteBackend
from spade_sandbox.errors import SandboxUnavailable
from spade_sandbox.zygote_process import ZygoteProcess

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
    import json, os, sys
    import gymnasium as gym
    import spade_core
    from spade_sandbox import prestart

    at_import = prestart._started
    seen = {"pool_imported": "spade_sandbox.pool" in sys.modules}
    start = prestart.prepare

    def recording_start():
        start()
        seen.setdefault("started", prestart._started)
        seen.setdefault("pool_imported_at_start", "spade_sandbox.pool" in sys.modules)

    prestart.prepare = recording_start
    env = gym.make("spade/ZygoteCounter-v1")
    obs, info = env.reset(seed=4)
    from spade_sandbox import default_pool

    pool = default_pool()
    started = at_import or seen.get("started")
    print(json.dumps({
        "at_import": at_import is not None,
        "pool_imported_first": seen["pool_imported"] or seen.get("pool_imported_at_start", False),
        "started": started is not None,
        "adopted": started is not None and pool.backend._zygote is started,
        "left_over": prestart._started is not None,
        "obs": obs,
    }))
    """
)


def test_the_first_make_starts_the_zygote_before_it_imports_the_pool(tmp_path: Path):
    """Nothing is started at import; the first make of a stored environment starts the
    zygote before it reads the store and imports the pool, and the default pool adopts it."""
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    out = run_fresh(home, _FIRST_MAKE)
    assert out == {
        "at_import": False,
        "pool_imported_first": False,
        "started": True,
        "adopted": True,
        "left_over": False,
        "obs": out["obs"],
    }
    assert str(out["obs"]).startswith("secret ")


_EVERY_PACKAGE = (
    "spade_core", "spade_core.app", "spade_sandbox", "spade_designer", "spade_trainer", "spade_serve", "spade_ui",
    "spade_eval", "spade_games", "spade_tooluse", "spade_reasoning_gym",
)


@pytest.mark.parametrize("case", ["store code in the sandbox", "store code in-process", "sandbox settings of its own", "no store"])
def test_importing_any_package_starts_no_process(tmp_path: Path, case: str):
    """A fresh interpreter whose store holds code for the sandbox imports every package and
    loads every plugin: no child process exists afterwards, and no zygote waits to be adopted."""
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    if case == "store code in-process":
        (home / "spade.toml").write_text('[spade]\nstore_envs_run = "in-process"\n')
    elif case == "sandbox settings of its own":
        (home / "spade.toml").write_text("[spade.sandbox]\ncall_timeout_s = 3\n")
    elif case == "no store":
        (home / "store.db").unlink()
    script = textwrap.dedent(
        f"""
        import importlib, json
        import psutil
        for name in {_EVERY_PACKAGE!r}:
            importlib.import_module(name)
        from spade_core.plugins import get_plugins
        get_plugins().domains()
        from spade_sandbox import prestart
        print(json.dumps([prestart._started is None, [p.pid for p in psutil.Process().children(recursive=True)]]))
        """
    )
    assert run_fresh(home, script) == [True, []]
    if case == "sandbox settings of its own":  # the pool starts its zygote itself, with those settings
        out = run_fresh(home, _FIRST_MAKE)
        assert (out["at_import"], out["started"], out["adopted"], out["left_over"]) == (False, False, False, False)
        assert str(out["obs"]).startswith("secret ")


def test_a_forked_child_does_not_use_the_zygote_its_parent_started(tmp_path: Path):
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    script = textwrap.dedent(
        """
        import json, os
        import gymnasium as gym, spade_core
        from spade_sandbox import prestart
        prestart.prepare()  # what the first make does before it reads the store
        started = prestart._started
        pid = os.fork()
        if pid == 0:  # the child makes with a zygote of its own
            ok = prestart._started is None and started.sock.fileno() == -1
            env = gym.make("spade/ZygoteCounter-v1")
            ok = ok and env.reset(seed=2)[0].startswith("secret ")
            from spade_sandbox import default_pool
            ok = ok and default_pool().backend._zygote is not started
            env.close()
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        env = gym.make("spade/ZygoteCounter-v1")
        obs, _ = env.reset(seed=2)
        from spade_sandbox import default_pool
        print(json.dumps([os.waitstatus_to_exitcode(status), default_pool().backend._zygote is started, obs]))
        """
    )
    child, adopted, obs = run_fresh(home, script)
    assert (child, adopted) == (0, True)
    assert obs.startswith("secret ")


def test_a_forked_child_leaves_the_default_pool_of_its_parent_alone(tmp_path: Path):
    """The child neither uses the parent's pool (its zygote socket and worker pipes are the
    parent's) nor closes it at its exit (the atexit handler it inherited)."""
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    script = textwrap.dedent(
        """
        import json, os, sys
        import gymnasium as gym, spade_core
        from spade_sandbox import default_pool
        env = gym.make("spade/ZygoteCounter-v1")
        first, _ = env.reset(seed=3)
        parents = default_pool()
        pid = os.fork()
        if pid == 0:
            child_env = gym.make("spade/ZygoteCounter-v1")
            ok = child_env.reset(seed=3)[0] == first and default_pool() is not parents and parents.closed
            sys.exit(0 if ok else 1)  # a normal exit: atexit handlers run in the child
        _, status = os.waitpid(pid, 0)
        obs, *_ = env.step("\\boxed{1}")
        again, _ = env.reset(seed=3)
        print(json.dumps([os.waitstatus_to_exitcode(status), default_pool() is parents, not parents.closed, again == first]))
        """
    )
    assert run_fresh(home, script) == [0, True, True, True]


def test_no_zygote_is_started_early_once_the_default_pool_exists(tmp_path: Path):
    """The pool tells prestart that it exists (``watch_default_pool``): a later early start
    would only make a second zygote that no pool adopts."""
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    script = textwrap.dedent(
        """
        import json
        import gymnasium as gym, spade_core
        from spade_sandbox import prestart
        before = prestart._default_pool_exists()
        from spade_sandbox import default_pool
        pool = default_pool()
        prestart.prepare()
        print(json.dumps([before, prestart._default_pool_exists(), prestart._started is None]))
        """
    )
    assert run_fresh(home, script) == [False, True, True]


def test_closing_the_process_pools_closes_the_trusted_one_open_env_made():
    """open_env's process-wide trusted pool is one of the pools close_process_pools closes
    (before, it was kept by the opener alone and outlived the suites' end-of-run close)."""
    from spade_core.sandbox_settings import SandboxSettings
    from spade_sandbox.default import close_process_pools, trusted_pool
    from spade_sandbox.opener import open_env

    env = open_env(COUNTER, trusted=True, sandbox=SandboxSettings())
    env.reset(seed=0)
    pool = trusted_pool(SandboxSettings())
    assert env.pool is pool and not pool.closed
    env.close()
    close_process_pools()
    assert pool.closed
