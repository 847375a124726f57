"""The zygote's warm-up (spade_sandbox.zygote.warm_up): before it freezes its heap, the
zygote loads and plays an environment of its own through the guard, so that what every
worker's first load and episode would build in its own copy is built once and shared.
It must take the path untrusted code takes, and leave nothing behind that a worker sees."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from spade_sandbox.zygote import WARM_UP_SOURCE

from spade_sandbox import SandboxedEnv, SandboxPool, check_source, guard


def test_the_warm_up_source_takes_the_path_of_untrusted_code() -> None:
    """It passes the static check and the guard's compile."""
    report = check_source(WARM_UP_SOURCE)
    assert report.ok, report.findings
    assert guard.compile_guarded(WARM_UP_SOURCE, "<warm-up>").co_filename == "<warm-up>"


def test_the_warm_up_environment_keeps_the_contract_in_a_real_sandbox(pool: SandboxPool) -> None:
    env = SandboxedEnv(WARM_UP_SOURCE, pool=pool, max_turns=6, class_name="WarmUpEnv")
    try:
        obs, _ = env.reset(seed=3)
        assert obs.startswith("I am thinking of a number.")
        assert env.step("\\boxed{guess x}")[0] == "not a command: 'guess x'"
        (answer,) = env.solution()
        obs, reward, terminated, truncated, _ = env.step(answer)
        assert (obs.endswith("right"), reward, terminated, truncated) == (True, 1.0, True, False)
    finally:
        env.close()


def test_the_warm_up_leaves_no_trace_a_worker_would_see() -> None:
    """Run as the zygote runs it (modules pre-imported, builtins built): the warm-up does
    not disarm the library (the zygote does, after it), no module, line cache entry or
    object of the warm-up environment is left once the collector has run."""
    script = textwrap.dedent(
        """
        import gc, json, linecache, sys
        from spade_sandbox import guard, zygote
        from spade_sandbox.allowlist import DEFAULT_ALLOWED_MODULES
        guard.preimport(sorted(DEFAULT_ALLOWED_MODULES))
        zygote.warm_up()
        zygote.warm_up()  # twice: nothing it did the first time gets in the way
        gc.collect()
        left = [o for o in gc.get_objects() if isinstance(o, type) and o.__name__ == "WarmUpEnv"]
        print(json.dumps({
            "disarmed": guard._Disarmed.done,
            "modules": sorted(m for m in sys.modules if "warm" in m),
            "lines": sorted(k for k in linecache.cache if "warm" in k),
            "classes": len(left),
        }))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "disarmed": False, "modules": [], "lines": [], "classes": 0}
