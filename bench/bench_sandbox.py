"""Sandbox benchmark: cold start, step round trip (same core / cross core), batched steps,
and 1,000 live instances of 100 environments with per-worker memory (USS).

The step rows come twice, side by side from the same run: through the C fast path
(``spade_sandbox._fast``) and through the pure-Python path (``SPADE_SANDBOX_NO_C=1``),
each sampled in a fresh interpreter whose pool, zygote and workers take that path, in
alternating rounds so that other load hits both alike.

Run: ``python -m bench.bench_sandbox`` (or ``python -m bench sandbox``). Prints one rich
table: medians, p90, the baseline measured in the same run, and the ratio to it. The
machine is shared and noisy, so every figure is a median of many repetitions.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from spade_sandbox.backends import ZygoteBackend

from spade_sandbox import SandboxLimits, SandboxPool

TRIVIAL = '''
class TrivialEnv:
    def __init__(self):
        self.n = 0
    def reset(self, seed=None):
        self.n = 0
        return "start", {}
    def step(self, action):
        self.n += 1
        return "ok", 0.0, False, False, {}
'''


@dataclass
class Row:
    """One table row. ``median``/``p90`` are wall time; ``cpu`` is CPU time per operation
    summed over every process involved (the caller's thread, the zygote, the workers).
    ``baseline``/``baseline_cpu`` were measured in the same run. ``ok`` judges the wall
    median against the target; ``cpu_ok`` judges the CPU per operation, which is what the
    wall time would be on an idle core when the processes run one after the other (they
    do: the caller waits for the worker), and is far less disturbed by other load."""

    metric: str
    target: str
    median: float
    p90: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    ok: bool | None = None
    cpu: float | None = None
    baseline_cpu: float | None = None
    cpu_ok: bool | None = None

    @property
    def ratio(self) -> str:
        if not self.baseline:
            return "-"
        text = f"{self.median / self.baseline:.1f}x"
        if self.cpu is not None and self.baseline_cpu:
            text += f" (CPU {self.cpu / self.baseline_cpu:.1f}x)"
        return text


def _q(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _variant(i: int) -> str:
    return TRIVIAL + f"\n# variant {i}\n"


def _oncpu_s(pid: int) -> float:
    """CPU time of another process in seconds, with nanosecond resolution (the scheduler's
    own account in /proc/PID/schedstat; /proc/PID/stat counts 10 ms ticks)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system


def _cpu(pids: list[int]) -> float:
    """CPU seconds used so far by this thread and by ``pids`` (the progress bar's refresh
    thread is left out)."""
    return time.thread_time() + sum(_oncpu_s(pid) for pid in pids)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _zygote_pid(pool: SandboxPool) -> int:
    zygote = pool.backend._zygote  # type: ignore[attr-defined]
    return zygote.proc.pid if zygote is not None else os.getpid()


def bench_cold_start(progress: Progress, n: int = 25) -> list[Row]:
    """Spawn -> an instance ready to answer, for code no worker has loaded yet. CPU per
    spawn: what the caller's thread, the zygote and the new worker used between the call
    and its return (a spare's hardening, done while the pool was idle, is not counted;
    without a spare, the fork and hardening are)."""
    rows = []
    task = progress.add_task("cold start", total=5 * n)

    def spawns(pool: SandboxPool, pause: float, same_code: bool = False) -> tuple[list[float], float]:
        first = pool.spawn(_variant(-1))
        zygote = _zygote_pid(pool)
        pids = [zygote, pool.worker_of(first).pid] if same_code else [zygote]
        out, cpu = [], 0.0
        for i in range(n):
            time.sleep(pause)
            before = {pid: _oncpu_s(pid) for pid in _children(zygote)}  # the spare, if any
            c0 = _cpu(pids)
            t0 = time.perf_counter()
            h = pool.spawn(_variant(-1 if same_code else i))
            out.append(time.perf_counter() - t0)
            cpu += _cpu(pids) - c0
            if not same_code:
                worker = pool.worker_of(h).pid
                cpu += _oncpu_s(worker) - before.get(worker, 0.0)
            progress.advance(task)
        return out, cpu / n

    fresh: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        fresh.append(time.perf_counter() - t0)
        progress.advance(task)
    base = statistics.median(fresh) * 1e3
    with SandboxPool(backend=ZygoteBackend(spare=True)) as pool:
        warm, warm_cpu = spawns(pool, 0.1)
        again, again_cpu = spawns(pool, 0.0, same_code=True)
    with SandboxPool(backend=ZygoteBackend(spare=False)) as pool:
        cold, cold_cpu = spawns(pool, 0.0)
    bare = SandboxLimits(namespaces=False, landlock=False, seccomp=False, drop_uid=False)
    with SandboxPool(bare, backend=ZygoteBackend(spare=False), allow_insecure=True) as pool:
        unhardened, unhardened_cpu = spawns(pool, 0.0)
    ms = [1e3 * statistics.median(v) for v in (warm, cold, unhardened, again)]
    rows.append(Row("cold start: spawn -> ready (pre-hardened spare)", "< 5 ms", ms[0], 1e3 * _q(warm, 0.9), "ms",
                    base, "python -S start", ms[0] < 5, 1e3 * warm_cpu, None, 1e3 * warm_cpu < 5))
    rows.append(Row("cold start: fork + harden + load (no spare)", "report", ms[1], 1e3 * _q(cold, 0.9), "ms",
                    base, "python -S start", None, 1e3 * cold_cpu))
    rows.append(Row("cold start: fork + load, no OS layers", "report", ms[2], 1e3 * _q(unhardened, 0.9), "ms",
                    base, "python -S start", None, 1e3 * unhardened_cpu))
    rows.append(Row("spawn: another instance of loaded code", "report", ms[3], 1e3 * _q(again, 0.9), "ms",
                    base, "python -S start", None, 1e3 * again_cpu))
    return rows


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench_first_start(progress: Progress, n: int = 12) -> list[Row]:
    """A pool's first start, as in the first ``gym.make`` of a stored environment in a
    fresh interpreter: the zygote's exec until it is ready, then the first spawn (no spare
    yet: fork + harden + load) and reset. CPU: everything the zygote and its workers used
    (and their children), read after the pool closed, plus this thread."""
    task = progress.add_task("first start (zygote)", total=2 * n)
    bare, bare_cpu = [], []
    for _ in range(n):
        c0, t0 = _children_cpu_s(), time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t0)
        bare_cpu.append(_children_cpu_s() - c0)
        progress.advance(task)
    ready, first, cpus = [], [], []
    for _ in range(n):
        c0, own0, t0 = _children_cpu_s(), time.thread_time(), time.perf_counter()
        pool = SandboxPool()
        # The constructor only starts the process; ready() waits for its hello.
        pool.backend.zygote(pool.limits).ready()  # type: ignore[attr-defined]
        t1 = time.perf_counter()
        h = pool.spawn(_variant(-2))
        pool.reset(h)
        t2 = time.perf_counter()
        own = time.thread_time() - own0
        pool.close()
        ready.append(t1 - t0)
        first.append(t2 - t0)
        cpus.append(_children_cpu_s() - c0 + own)
        progress.advance(task)
    base, base_cpu = 1e3 * statistics.median(bare), 1e3 * statistics.median(bare_cpu)
    return [
        Row("first start: zygote exec -> ready", "report", 1e3 * statistics.median(ready), 1e3 * _q(ready, 0.9), "ms",
            base, "python -I -S start", None, None, base_cpu),
        Row("first start: + first spawn + reset (fresh pool)", "report", 1e3 * statistics.median(first),
            1e3 * _q(first, 0.9), "ms", base, "python -I -S start", None, 1e3 * statistics.median(cpus), base_cpu),
    ]


#: Round trips per CPU-time sample: CPU per operation is the median over samples, so a
#: sample in which another engineer's job thrashed the caches does not skew it.
CHUNK = 100


def _pin(pid: int, cpu: int) -> bool:
    try:
        os.sched_setaffinity(pid, {cpu})
        return True
    except OSError:
        return False


def in_process_step_us(n: int = 20_000) -> float:
    """Median cost of the same trivial step called directly in this process (the baseline)."""
    ns: dict[str, object] = {}
    exec(compile(TRIVIAL, "<trivial>", "exec"), ns)
    local = ns["TrivialEnv"]()  # type: ignore[operator]
    local.reset()
    per = []
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(n // 20):
            local.step("a")
        per.append((time.perf_counter() - t0) / (n // 20))
    return statistics.median(per) * 1e6


def _socketpair_ends():
    a, b = socket.socketpair()

    def ping() -> None:
        a.send(b"x" * 20)
        a.recv(64)

    def echo() -> None:
        while True:
            data = b.recv(64)
            if not data:
                break
            b.send(data)

    return ping, echo, (a.close, b.close)


def _pipe_ends():
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    buf = bytearray(64)
    bufs = (buf,)

    def ping() -> None:
        os.write(to_child_w, b"x" * 20)
        os.readv(to_parent_r, bufs)

    def echo() -> None:
        while True:
            k = os.readv(to_child_r, bufs)
            if not k:
                break
            os.write(to_parent_w, buf[:k])

    return ping, echo, tuple(lambda fd=fd: os.close(fd) for fd in (to_child_r, to_child_w, to_parent_r, to_parent_w))


def _eventfd_ends():
    """Shared memory carries the bytes; two eventfds carry the wake-ups."""
    import mmap

    request, reply = os.eventfd(0), os.eventfd(0)
    shared = mmap.mmap(-1, 4096)

    def ping() -> None:
        shared[:20] = b"x" * 20
        os.eventfd_write(request, 1)
        os.eventfd_read(reply)

    def echo() -> None:
        while True:
            os.eventfd_read(request)
            if shared[0] == 0:
                break
            shared[20:40] = shared[:20]
            os.eventfd_write(reply, 1)

    def stop() -> None:
        shared[0] = 0
        os.eventfd_write(request, 1)

    return ping, echo, (stop, lambda: os.close(request), lambda: os.close(reply))


class _BareEnv:
    """TRIVIAL's class, defined here for the bare Python floor below."""

    def __init__(self) -> None:
        self.n = 0

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        self.n += 1
        return "ok", 0.0, False, False, {}


def _bare_step_ends():
    """The least Python a sandboxed step can do over the pipe pair: the pool's binary step
    frames, a ``poll`` for the deadline, the reply checks on both sides and the step of a
    plain object, with no pool, lock, handle checks, guard or hardening. What the pool
    costs above this row is its own structure; what this row costs above the raw pipe is
    the Python any implementation of these checks pays."""
    import select

    from spade_sandbox import protocol

    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    buf = bytearray(65536)
    bufs = (buf,)
    view = memoryview(buf)
    waiter = select.poll()
    waiter.register(to_parent_r, select.POLLIN)
    wait = waiter.poll
    request_head = protocol.STEP_REQUEST.pack
    request_of = protocol.STEP_REQUEST.unpack_from
    reply_head = protocol.STEP_REPLY_HEAD.pack
    reply_of = protocol.STEP_REPLY_HEAD.unpack_from

    action = "a"

    def ping() -> None:
        text = action.encode("utf-8")
        os.write(to_child_w, request_head(len(text) + 9, protocol.STEP_MARK, 0) + text)
        wait(10_000)
        have = os.readv(to_parent_r, bufs)
        size, mark, flags, reward = reply_of(buf)
        if have != size + 4 or mark != protocol.STEP_MARK or flags > 3 or reward - reward != 0.0:
            raise AssertionError("bad reply")
        obs = str(view[14:have], "utf-8")
        if len(obs) > 65536:
            raise AssertionError("bad reply")

    def echo() -> None:
        live = {0: _BareEnv()}
        while True:
            have = os.readv(to_child_r, bufs)
            if not have:
                break
            size, mark, iid = request_of(buf)
            if have != size + 4 or mark != protocol.STEP_MARK:
                break
            o, rw, te, tr, inf = live[iid].step(str(view[13:have], "utf-8"))
            if not (type(o) is str and len(o) <= 65536 and type(rw) is float and rw - rw == 0.0
                    and (te is True or te is False) and (tr is True or tr is False) and type(inf) is dict
                    and not inf):
                break
            text = o.encode("utf-8")
            os.write(to_parent_w, reply_head(len(text) + 10, protocol.STEP_MARK, te | tr << 1, rw) + text)

    return ping, echo, tuple(lambda fd=fd: os.close(fd) for fd in (to_child_r, to_child_w, to_parent_r, to_parent_w))


#: Raw transports measured side by side: the floor of a process sandbox on each; and the
#: pipe pair carrying a bare Python step (the floor of a Python implementation).
TRANSPORTS = {"socketpair": _socketpair_ends, "pipe pair": _pipe_ends, "eventfd + shared memory": _eventfd_ends,
              "pipe pair + bare Python step": _bare_step_ends}


def raw_rtt_us(transport: str, cpu: int, n: int = 3000) -> tuple[list[float], float]:
    """Floor of any process sandbox here: a 20-byte ping-pong between two Python processes
    over ``transport``, with no framing, encoding or checks. (every round trip's wall time
    in us, median CPU us per round trip of both processes)."""
    ping, echo, closers = TRANSPORTS[transport]()
    pid = os.fork()
    if pid == 0:  # the echo child
        try:
            echo()
        finally:
            os._exit(0)
    _pin(pid, cpu)
    for _ in range(100):
        ping()
    times: list[float] = []
    cpus: list[float] = []
    for _ in range(n // CHUNK):
        c0 = _cpu([pid])
        for _ in range(CHUNK):
            t0 = time.perf_counter()
            ping()
            times.append(time.perf_counter() - t0)
        cpus.append((_cpu([pid]) - c0) / CHUNK)
    for close in closers:
        close()
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return [t * 1e6 for t in times], statistics.median(cpus) * 1e6


#: The two step paths compared side by side: the C fast path and the pure-Python one it
#: mirrors (``SPADE_SANDBOX_NO_C``). Each sample runs in a fresh interpreter with the
#: variable set, so the pool, its zygote and its workers all take that path.
PATHS = {"C path": "0", "pure Python": "1"}


def sample_steps(cpu: int, n: int) -> dict[str, list[float]]:
    """``pool.step`` of a trivial environment, caller pinned to core 0 and its worker to
    ``cpu``: every round trip's wall time and the CPU per round trip of each chunk of
    :data:`CHUNK` (caller thread + worker), in us."""
    from spade_sandbox import native

    with SandboxPool() as pool:
        h = pool.spawn(TRIVIAL)
        pool.reset(h)
        worker = pool.worker_of(h).pid
        if not (_pin(0, 0) and _pin(worker, cpu)):
            return {"times": [], "cpus": [], "active": [native.active()]}
        for _ in range(300):
            pool.step(h, "a")
        times: list[float] = []
        cpus: list[float] = []
        for _ in range(n // CHUNK):
            c0 = _cpu([worker])
            for _ in range(CHUNK):
                t0 = time.perf_counter()
                pool.step(h, "a")
                times.append((time.perf_counter() - t0) * 1e6)
            cpus.append((_cpu([worker]) - c0) / CHUNK * 1e6)
        return {"times": times, "cpus": cpus, "active": [native.active()]}


def sample_batched(case: str, reps: int) -> dict[str, list[float]]:
    """``step_many`` of 256 instances (``case``: "one" worker placed by the scheduler,
    "pinned" one worker on the caller's core, "spread" over 16 workers): per env-step wall
    time and CPU (caller thread + workers) of each repetition, in us."""
    from spade_sandbox import native

    with SandboxPool() as pool:
        if case == "spread":
            handles = [pool.spawn(_variant(i % 16)) for i in range(256)]
        else:
            handles = [pool.spawn(TRIVIAL) for _ in range(256)]
        pool.reset_many([(h, None) for h in handles])
        pids = sorted({pool.worker_of(h).pid for h in handles})
        if case == "pinned" and not (_pin(0, 0) and _pin(pids[0], 0)):
            return {"times": [], "cpus": [], "active": [native.active()]}
        items = [(h, "a") for h in handles]
        for _ in range(20):
            results = pool.step_many(items)
        assert all(isinstance(r, tuple) for r in results)
        per: list[float] = []
        cpus: list[float] = []
        for _ in range(reps):
            c0 = _cpu(pids)
            t0 = time.perf_counter()
            pool.step_many(items)
            per.append((time.perf_counter() - t0) / len(items) * 1e6)
            cpus.append((_cpu(pids) - c0) / len(items) * 1e6)
        return {"times": per, "cpus": cpus, "active": [native.active()]}


def _sample(path: str, what: str, *args: object) -> dict[str, list[float]]:
    """Run ``sample_<what>(*args)`` in a fresh interpreter taking ``path`` (a key of
    :data:`PATHS`) and return its samples."""
    env = {**os.environ, "SPADE_SANDBOX_NO_C": PATHS[path]}
    code = ("import json, sys; from bench import bench_sandbox as b; "
            f"print(json.dumps(b.sample_{what}(*json.loads(sys.argv[1]))))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=env, check=True,
                          capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    return json.loads(done.stdout.splitlines()[-1])


def bench_round_trip(progress: Progress, n: int = 3000, rounds: int = 3) -> list[Row]:
    """``pool.step`` of a trivial environment through the C path and the pure-Python path,
    against the raw floor of each transport, measured in interleaved rounds (transport
    floors, then each path, ``rounds`` times) so that a burst of other load hits them alike;
    medians over all rounds."""
    rows = []
    ncpu = len(os.sched_getaffinity(0))
    per_round = len(TRANSPORTS) * n + len(PATHS) * n + n
    task = progress.add_task("step round trip", total=2 * rounds * per_round)
    original = os.sched_getaffinity(0)
    for label, cpu in (("same core", 0), ("cross core", 1)):
        if cpu >= ncpu or not _pin(0, 0):
            progress.advance(task, rounds * per_round)
            continue
        floors: dict[str, tuple[list[float], list[float]]] = {t: ([], []) for t in TRANSPORTS}
        paths: dict[str, tuple[list[float], list[float], bool]] = {}
        mp_times: list[float] = []
        mp_cpus: list[float] = []
        with SandboxPool() as pool:
            h = pool.spawn(TRIVIAL)
            pool.reset(h)
            worker = pool.worker_of(h).pid
            _pin(worker, cpu)
            # The same step as one msgpack request and reply (the protocol before binary
            # step frames), through the link the pool uses: the encoding's share.
            link = pool._links[h.worker_id]  # type: ignore[attr-defined]
            message = ["step", h.instance_id, "a"]
            for _ in range(rounds):
                for transport in TRANSPORTS:
                    walls, cpu_per = raw_rtt_us(transport, cpu, n)
                    floors[transport][0].extend(walls)
                    floors[transport][1].append(cpu_per)
                    progress.advance(task, n)
                for path in PATHS:
                    got = _sample(path, "steps", cpu, n)
                    old = paths.get(path, ([], [], True))
                    paths[path] = (old[0] + got["times"], old[1] + got["cpus"], bool(got["active"][0]))
                    progress.advance(task, n)
                _pin(0, 0)
                for _ in range(n // CHUNK):
                    c0 = _cpu([worker])
                    for _ in range(CHUNK):
                        t0 = time.perf_counter()
                        with link.lock:
                            link.call(message, "step()")
                        mp_times.append(time.perf_counter() - t0)
                    mp_cpus.append((_cpu([worker]) - c0) / CHUNK)
                progress.advance(task, n)
        os.sched_setaffinity(0, original)
        same = cpu == 0
        pipe_wall = statistics.median(floors["pipe pair"][0])
        pipe_cpu = statistics.median(floors["pipe pair"][1])
        for transport, (walls, cpu_per) in floors.items():
            rows.append(Row(f"raw {transport} RTT, {label} (floor)", "report", statistics.median(walls),
                            _q(walls, 0.9), "us", pipe_wall, "raw pipe pair", None, statistics.median(cpu_per),
                            pipe_cpu))
        c_med = c_cpu = None
        for path, (times, cpus, active) in paths.items():
            if not times:
                continue
            med, cpu_us = statistics.median(times), statistics.median(cpus)
            name = f"step() round trip, {label}, {path}" + ("" if active or path != "C path" else " (NOT BUILT)")
            if path == "C path":
                c_med, c_cpu = med, cpu_us
                rows.append(Row(name, "< 20 us" if same else "report", med, _q(times, 0.9), "us", pipe_wall,
                                "raw pipe pair RTT", med < 20 if same else None, cpu_us, pipe_cpu,
                                cpu_us < 20 if same else None))
            else:
                rows.append(Row(f"  {name}", "report", med, _q(times, 0.9), "us", c_med, "C path above", None,
                                cpu_us, c_cpu))
        if c_med is not None:
            mp_med = statistics.median(mp_times) * 1e6
            rows.append(Row(f"  same step as msgpack frames (link.call), {label}", "report", mp_med,
                            _q(mp_times, 0.9) * 1e6, "us", c_med, "C path above", None,
                            statistics.median(mp_cpus) * 1e6, c_cpu))
    os.sched_setaffinity(0, original)
    return rows


def bench_batched(progress: Progress, base: float, reps: int = 400, rounds: int = 2) -> list[Row]:
    """``step_many`` of 256 instances through each path: in one worker with the scheduler
    placing caller and worker (the target row), the same pinned to one core, and spread over
    16 workers. Paths alternate in ``rounds`` so that other load hits them alike."""
    rows = []
    cases = (("one", "256 instances, 1 worker"), ("pinned", "256 instances, 1 worker, same core"),
             ("spread", "256 instances, 16 workers"))
    task = progress.add_task("batched steps", total=len(cases) * len(PATHS) * rounds)
    for case, label in cases:
        got: dict[str, tuple[list[float], list[float], bool]] = {p: ([], [], True) for p in PATHS}
        for _ in range(rounds):
            for path in PATHS:
                sample = _sample(path, "batched", case, reps // rounds)
                old = got[path]
                got[path] = (old[0] + sample["times"], old[1] + sample["cpus"], bool(sample["active"][0]))
                progress.advance(task)
        single = case != "spread"
        c_med = c_cpu = None
        for path, (per, cpus, active) in got.items():
            if not per:
                continue
            med, cpu_us = statistics.median(per), statistics.median(cpus)
            name = f"step_many, {label}, {path}" + ("" if active or path != "C path" else " (NOT BUILT)")
            if path == "C path":
                c_med, c_cpu = med, cpu_us
                rows.append(Row(name, "< 2 us/env-step" if single else "report", med, _q(per, 0.9), "us/step",
                                base, "in-process step", med < 2 if single else None, cpu_us, base,
                                cpu_us < 2 if single else None))
            else:
                rows.append(Row(f"  {name}", "report", med, _q(per, 0.9), "us/step", c_med, "C path above", None,
                                cpu_us, c_cpu))
    return rows


def bench_scale(progress: Progress, envs: int = 100, per_env: int = 10) -> list[Row]:
    rows = []
    task = progress.add_task(f"{envs * per_env} instances / {envs} envs", total=envs * per_env + envs)
    with SandboxPool() as pool:
        t0 = time.perf_counter()
        handles = []
        for i in range(envs):
            for _ in range(per_env):
                handles.append(pool.spawn(_variant(1000 + i)))
                progress.advance(task)
        spawn_s = time.perf_counter() - t0
        pool.reset_many([(h, i) for i, h in enumerate(handles)])
        results = pool.step_many([(h, "a") for h in handles])
        live = sum(isinstance(r, tuple) for r in results)
        workers = pool.workers()
        uss = []
        for w in workers:
            uss.append(psutil.Process(w.pid).memory_full_info().uss / 2**20)
            progress.advance(task)
        steps = []
        items = [(h, "a") for h in handles]
        for _ in range(10):
            t1 = time.perf_counter()
            pool.step_many(items)
            steps.append((time.perf_counter() - t1) / len(items))
    rows.append(Row(f"live instances answering (of {envs * per_env}) in {len(workers)} workers",
                    ">= 1000 in >= 100", float(live), float(live), "instances", None, "",
                    live >= 1000 and len(workers) >= 100))
    rows.append(Row("worker USS (own memory)", "< 8 MB each", statistics.median(uss), max(uss), "MiB (p90 col = max)",
                    None, "", max(uss) < 8))
    rows.append(Row("spawning all instances", "report", spawn_s, spawn_s, "s"))
    rows.append(Row("step_many over all instances", "report", statistics.median(steps) * 1e6,
                    _q(steps, 0.9) * 1e6, "us/step"))
    return rows


BUSY = """
class BusyEnv:
    def reset(self, seed=None):
        return "start", {}
    def step(self, action):
        total = 0
        for i in range(3000):
            total += i * i % 7
        return str(total), 0.0, False, False, {}
"""


def bench_backends(progress: Progress, reps: int = 60) -> list[Row]:
    """Cost of running environment code: a step doing ~3,000 loop iterations, directly in
    this process, in a native worker, and under the in-process restricted backend."""
    task = progress.add_task("backends: busy step", total=3 * reps)
    ns: dict[str, object] = {}
    exec(compile(BUSY, "<busy>", "exec"), ns)
    local = ns["BusyEnv"]()  # type: ignore[operator]

    def timed(step) -> float:
        step()
        per = []
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            per.append(time.perf_counter() - t0)
            progress.advance(task)
        return statistics.median(per) * 1e6

    direct = timed(lambda: local.step("a"))
    rows = []
    with SandboxPool() as pool:
        h = pool.spawn(BUSY)
        native = timed(lambda: pool.step(h, "a"))
    rows.append(Row("busy step(), native worker", "report", native, native, "us", direct, "in-process step"))
    try:
        with SandboxPool(backend="restricted", allow_insecure=True) as pool:
            h = pool.spawn(BUSY)
            restricted = timed(lambda: pool.step(h, "a"))
        rows.append(Row("busy step(), restricted backend (not a boundary)", "report", restricted, restricted, "us",
                        direct, "in-process step"))
    except Exception as exc:  # RestrictedPython not installed: say so in the table
        rows.append(Row(f"restricted backend unavailable: {exc}", "-", 0.0, 0.0, "-"))
    return rows


def bench_domain_worker_memory() -> list[Row]:
    """USS of a worker running a tool-use seed environment (its helper module pulls in more)."""
    try:
        import spade_tooluse
    except ImportError:
        return []
    envs = sorted(p for p in (Path(spade_tooluse.__file__).parent / "envs").glob("*.py") if p.name != "__init__.py")
    if not envs:
        return []
    with SandboxPool() as pool:
        h = pool.spawn(envs[0].read_text(), allowed_modules=["spade_tooluse.base"])
        pool.reset(h, seed=1)
        pool.step(h, '<tool_call>{"name": "nothing", "arguments": {}}</tool_call>')
        uss = psutil.Process(pool.worker_of(h).pid).memory_full_info().uss / 2**20
    return [Row(f"worker USS, tool-use env ({envs[0].stem})", "< 8 MB", uss, uss, "MiB", None, "", uss < 8)]


MATH_VERIFY_ENV = '''
from math_verify import parse, verify

class CheckEnv:
    def reset(self, seed=None):
        return "1/2 as a decimal?", {}
    def step(self, action):
        right = verify(parse("$\\\\frac{1}{2}$"), parse(action))
        return "checked", float(right), True, False, {}
'''


def bench_math_verify_worker(rounds: int = 5) -> list[Row]:
    """What allowing ``math_verify`` (the games domain does) costs: the zygote imports the
    library and its facade once (sympy, latex2sympy2_extended), and each worker forked from
    it shares those pages. Each round opens a fresh pool and spawns three code versions of
    the same environment with and without the import (a stand-in that never imports it),
    and the stand-in in a pool where the module is allowed (what a games seed pays):
    the first spawn (the zygote's import), the later ones, and a worker's USS and PSS after
    one checked answer, and the RSS of the zygote (the worker's parent)."""
    plain = MATH_VERIFY_ENV.replace("from math_verify import parse, verify",
                                    "def parse(x):\n    return x\n\ndef verify(a, b):\n    return a == b")
    cases = {"without": (plain, ()), "with": (MATH_VERIFY_ENV, ("math_verify",)),
             "allowed, unused": (plain, ("math_verify",))}
    found: dict[str, dict[str, list[float]]] = {k: {} for k in cases}
    for _ in range(rounds):
        for case, (source, allowed) in cases.items():
            with SandboxPool() as pool:
                times, handles = [], []
                for version in range(3):
                    t0 = time.perf_counter()
                    h = pool.spawn(source + f"\n# version {version}\n", allowed_modules=allowed)
                    times.append((time.perf_counter() - t0) * 1000)
                    handles.append(h)
                pool.reset(handles[-1], seed=0)
                assert pool.step(handles[-1], "\\boxed{0.5}")[1] == (1.0 if source is MATH_VERIFY_ENV else 0.0)
                info = psutil.Process(pool.worker_of(handles[-1]).pid).memory_full_info()
                zygote = psutil.Process(pool.worker_of(handles[-1]).pid).parent().memory_info().rss
                for key, value in (("first spawn", times[0]), ("later spawn", statistics.median(times[1:])),
                                   ("USS", info.uss / 2**20), ("PSS", info.pss / 2**20), ("zygote RSS", zygote / 2**20)):
                    found[case].setdefault(key, []).append(value)
    rows = []
    for key, unit in (("first spawn", "ms"), ("later spawn", "ms"), ("USS", "MiB"), ("PSS", "MiB"), ("zygote RSS", "MiB")):
        base = statistics.median(found["without"][key])
        for case, label in (("with", "imported and used"), ("allowed, unused", "allowed, env never imports it")):
            rows.append(Row(f"math_verify {label}: {key}", "-", statistics.median(found[case][key]),
                            max(found[case][key]), f"{unit} (p90 col = max)", base, "not allowed"))
    return rows


def main(only: str = "all") -> None:
    """Run every section (``only="all"``), or only the per-call ones (``only="steps"``: the
    step round trips and batched steps, with their floors), or only what allowing
    ``math_verify`` costs (``only="math_verify"``)."""
    console = Console()
    gc.collect()
    load = os.getloadavg()
    rows: list[Row] = []
    with Progress(console=console, transient=True) as progress:
        if only == "math_verify":
            rows += bench_math_verify_worker()
        elif only == "all":
            rows += bench_cold_start(progress)
            rows += bench_first_start(progress)
        if only != "math_verify":
            base = in_process_step_us()
            rows += bench_round_trip(progress)
            rows += bench_batched(progress, base)
        if only == "all":
            rows += bench_scale(progress)
            rows += bench_domain_worker_memory()
            rows += bench_math_verify_worker()
            rows += bench_backends(progress)
    end_load = os.getloadavg()
    table = Table(expand=True, title=f"spade_sandbox (native backend, {len(os.sched_getaffinity(0))} CPUs, "
                        f"load avg {load[0]:.1f} at start, {end_load[0]:.1f} at end)")
    for col in ("metric", "target", "wall median", "wall p90", "CPU / op", "unit", "baseline (same run)", "ratio",
                "ok (wall)", "ok (CPU)"):
        table.add_column(col, justify="right" if col in ("wall median", "wall p90", "CPU / op") else "left")

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else ("[green]yes" if ok else "[red]no")

    for r in rows:
        base_text = "-" if r.baseline is None else f"{r.baseline:.2f} ({r.baseline_name})"
        if r.baseline_cpu is not None and r.baseline_cpu != r.baseline:
            base_text += f", CPU {r.baseline_cpu:.2f}"
        cpu = "-" if r.cpu is None else f"{r.cpu:.2f}"
        table.add_row(r.metric, r.target, f"{r.median:.2f}", f"{r.p90:.2f}", cpu, r.unit, base_text, r.ratio,
                      verdict(r.ok), verdict(r.cpu_ok))
    console.print(table)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    name = "sandbox.json" if only == "all" else f"sandbox_{only}.json"
    (out / name).write_text(json.dumps([asdict(r) for r in rows], indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] not in ("all", "steps", "math_verify")):
        sys.exit("usage: python -m bench.bench_sandbox [all|steps|math_verify]")
    main(sys.argv[1] if len(sys.argv) == 2 else "all")
