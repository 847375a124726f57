"""The zygote's start: the process starts without the caller waiting for its boot, a zygote
that fails to start is reported by the first request (and replaced by the next), ``import
spade_core`` starts it when the store has environments to run in it (and one left unclaimed
leaves by itself, settling a request that crosses its leaving), a forked child does not use
its parent's, and interpreter exit does not wait for it."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from conftest import home_with_stored_counter, run_fresh
from envsrc import COUNTER
from spade_sandbox.backends import ZygoteBackend
from spade_sandbox.channel import ZygoteLeft, ZygoteProcess
from spade_sandbox.errors import SandboxUnavailable
from spade_sandbox.prestart import AT_IMPORT_VARIABLE, UNCLAIMED_EXIT_S

from spade_sandbox import SandboxLimits, SandboxPool, prestart


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


@pytest.mark.parametrize("hello_read", [True, False], ids=["hello read at once", "hello and leaving queued"])
def test_a_zygote_left_unclaimed_says_so_and_leaves(hello_read: bool):
    zygote = ZygoteProcess(unclaimed_exit_s=0.1)
    if hello_read:
        assert zygote.ready()[0] == "ok"
    assert zygote.proc.wait(timeout=20) == 0  # nothing asked it for anything
    assert zygote.alive is False
    # A request sent after it left is known never to have been read.
    with pytest.raises(ZygoteLeft, match="left unclaimed"):
        zygote.spawn({"source": COUNTER})
    assert zygote.left and not zygote.alive
    zygote.close()


_LEAVES_WHILE_ASKED = textwrap.dedent(
    """
    import socket, sys, time
    sys.path[:0] = sys.argv[1].split(":")
    from spade_sandbox import protocol

    fd = next(int(a) for a in sys.argv[2:] if a.isdigit())
    control = socket.socket(fileno=fd)
    protocol.send(control, ["ok", {"pid": 0, "seccomp": False}])
    protocol.send(control, ["leaving"])  # decided to leave; the request arrives meanwhile
    time.sleep(2)
    """
)


def test_a_request_that_crosses_the_zygote_leaving_is_answered_by_a_fresh_one(tmp_path: Path):
    """The race the ``leaving`` message settles: the request is written before the zygote
    is gone, and the reply read is its ``leaving``."""
    fake = tmp_path / "leaving_zygote.py"
    fake.write_text(_LEAVES_WHILE_ASKED)
    import spade_sandbox

    paths = os.pathsep.join(str(Path(p).parent) for p in spade_sandbox.__path__)
    zygote = ZygoteProcess([sys.executable, str(fake), paths])
    with pytest.raises(ZygoteLeft):
        zygote.spawn({"source": COUNTER})
    assert not zygote.alive
    zygote.close()

    # Through a backend: the request goes to a zygote started anew, once.
    backend = ZygoteBackend()
    backend._zygote = ZygoteProcess([sys.executable, str(fake), paths])
    with SandboxPool(SandboxLimits(call_timeout_s=5), backend=backend) as pool:
        handle = pool.spawn(COUNTER)
        assert pool.reset(handle, seed=1)[0].startswith("secret ")
        assert backend._zygote is not None and backend._zygote.alive


_FIRST_MAKE = textwrap.dedent(
    """
    import json, os, sys
    import gymnasium as gym
    import spade_core
    from spade_sandbox import prestart

    at_import = prestart._started
    seen = {
        "pool_imported": "spade_sandbox.pool" in sys.modules,
        "unclaimed_exit": at_import is not None and at_import.command[-1],
    }
    start = prestart.start_default_zygote

    def recording_start(**options):
        start(**options)
        seen.setdefault("started", prestart._started)

    prestart.start_default_zygote = recording_start
    env = gym.make("spade/ZygoteCounter-v1")
    obs, info = env.reset(seed=4)
    from spade_sandbox import default_pool

    pool = default_pool()
    started = at_import or seen.get("started")
    print(json.dumps({
        "at_import": at_import is not None,
        "pool_imported_first": seen["pool_imported"],
        "unclaimed_exit": seen["unclaimed_exit"],
        "started": started is not None,
        "adopted": started is not None and pool.backend._zygote is started,
        "left_over": prestart._started is not None,
        "obs": obs,
    }))
    """
)


def test_import_starts_the_zygote_when_the_store_has_environments(tmp_path: Path):
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    out = run_fresh(home, _FIRST_MAKE)
    assert out == {
        "at_import": True,
        "pool_imported_first": False,
        "unclaimed_exit": f"--unclaimed-exit={UNCLAIMED_EXIT_S:g}",
        "started": True,
        "adopted": True,
        "left_over": False,
        "obs": out["obs"],
    }
    assert str(out["obs"]).startswith("secret ")


@pytest.mark.parametrize(
    "case",
    ["SPADE_SANDBOX_AT_IMPORT=0", "store code in-process", "sandbox settings of its own", "no store"],
)
def test_import_does_not_start_the_zygote(tmp_path: Path, case: str):
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    env: dict[str, str] = {}
    if case == "SPADE_SANDBOX_AT_IMPORT=0":
        env[AT_IMPORT_VARIABLE] = "0"
    elif case == "store code in-process":
        (home / "spade.toml").write_text('[spade]\nstore_envs_run = "in-process"\n')
    elif case == "sandbox settings of its own":
        (home / "spade.toml").write_text("[spade.sandbox]\ncall_timeout_s = 3\n")
    else:
        (home / "store.db").unlink()
    script = "import json, spade_core\nfrom spade_sandbox import prestart\nprint(json.dumps(prestart._started is None))"
    assert run_fresh(home, script, env) is True
    if case == "SPADE_SANDBOX_AT_IMPORT=0":  # the first make starts it, as before, and the pool adopts it
        out = run_fresh(home, _FIRST_MAKE, env)
        assert (out["at_import"], out["started"], out["adopted"], out["unclaimed_exit"]) == (False, True, True, False)
    elif case == "sandbox settings of its own":  # the pool starts its zygote itself, with those settings
        out = run_fresh(home, _FIRST_MAKE, env)
        assert (out["at_import"], out["started"], out["adopted"], out["left_over"]) == (False, False, False, False)
        assert str(out["obs"]).startswith("secret ")


def test_a_make_after_the_zygote_started_at_import_left_starts_a_new_one(tmp_path: Path):
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    script = textwrap.dedent(
        """
        import json, time
        from spade_sandbox import prestart
        prestart.UNCLAIMED_EXIT_S = 0.05
        import gymnasium as gym, spade_core
        first = prestart._started
        first.proc.wait(timeout=20)
        env = gym.make("spade/ZygoteCounter-v1")
        obs, _ = env.reset(seed=1)
        from spade_sandbox import default_pool
        now = default_pool().backend._zygote
        print(json.dumps([first.proc.returncode, now is not first, now.alive, obs]))
        """
    )
    code, new, alive, obs = run_fresh(home, script)
    assert (code, new, alive) == (0, True, True)
    assert obs.startswith("secret ")


def test_a_forked_child_does_not_use_the_zygote_its_parent_started(tmp_path: Path):
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    script = textwrap.dedent(
        """
        import json, os
        import gymnasium as gym, spade_core
        from spade_sandbox import prestart
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


def test_starting_at_import_is_best_effort(monkeypatch: pytest.MonkeyPatch):
    def fails(**options: object) -> None:
        raise SandboxUnavailable("no processes left")

    monkeypatch.setattr(prestart, "start_default_zygote", fails)
    prestart.start_at_import()  # nothing raised: the first make reports it


def test_no_zygote_is_started_early_once_the_default_pool_exists(tmp_path: Path):
    """The pool tells prestart that it exists (``watch_default_pool``): a later early start
    would only make a second zygote that no pool adopts."""
    home = home_with_stored_counter(tmp_path, "ZygoteCounter")
    script = textwrap.dedent(
        """
        import json, os
        os.environ["SPADE_SANDBOX_AT_IMPORT"] = "0"
        import gymnasium as gym, spade_core
        from spade_sandbox import prestart
        before = prestart._default_pool_exists()
        from spade_sandbox import default_pool
        pool = default_pool()
        prestart.start_default_zygote()
        print(json.dumps([before, prestart._default_pool_exists(), prestart._started is None]))
        """
    )
    assert run_fresh(home, script) == [False, True, True]
