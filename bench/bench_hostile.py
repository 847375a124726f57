"""Host-side cost of hostile environments: peak memory and wall time of this process (the
caller: the validator, the trainer) while each runs, beside a good environment.

Two tables from one run:

* the validator API (the whole pipeline, normal path: static layer, guard and every OS
  layer) on a good corpus environment and on memory and time attacks that need no import;
* a :class:`SandboxPool` with the static layer and guard off (the OS layers and the host
  side alone) on attacks that forge frames on the worker's reply pipe, and the same good
  environment run the same way.

Peak memory is this process's RSS high-water mark (``VmHWM``, reset through
``/proc/self/clear_refs`` before each row) minus its RSS right before the row: what the
row cost the host at its worst. Target (issue 16): every hostile row within 64 MB of the
good one.

Run: ``python -m bench.bench_hostile``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "validation" / "corpus"
BOUND_MB = 64


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def measure(run: Callable[[], Any]) -> tuple[float, float, str]:
    """(wall s, peak MB above the RSS before, outcome) of one call of ``run``."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    before = _status_kb("VmRSS")
    t0 = time.perf_counter()
    try:
        outcome = run()
    except Exception as exc:  # the outcome of an attack is often an error
        outcome = f"{type(exc).__name__}: {str(exc)[:70]}"
    wall = time.perf_counter() - t0
    peak = (_status_kb("VmHWM") - before) / 1024
    return wall, peak, str(outcome)


def _env(name: str, step: str, *, prelude: str = "", solution: str = "'a'") -> str:
    return f'''{prelude}
class {name}:
    def reset(self, seed=None):
        return "ready", {{}}

    def step(self, action):
{step}

    def solution(self):
        return {solution}
'''


SLY = "class Sly(str):\n    def __len__(self):\n        return 1\n"

#: Attacks the validator meets on the normal path (no import needed).
VALIDATOR_ATTACKS: list[tuple[str, str]] = [
    ("info of 20,000 empty dicts", _env("DictsEnv", "        return 'o', 0.0, False, False, {'k': [{} for _ in range(20_000)]}")),
    ("info text whose len() lies (5 MB)", _env("SlyInfoEnv", "        return 'o', 0.0, False, False, {'k': Sly('x' * 5_000_000)}", prelude=SLY)),
    ("solution() whose len() lies (8 MB)", _env("SlySolutionEnv", "        return 'o', 1.0, True, False, {}", prelude=SLY, solution="Sly('x' * 8_000_000)")),
    ("solution() of a million empty actions", _env("EmptyActionsEnv", "        return 'o', 1.0, True, False, {}", solution="[''] * 1_000_000")),
    ("observation of 10 M characters", _env("HugeObsEnv", "        return 'x' * 10_000_000, 0.0, False, False, {}")),
    ("lone surrogate in the observation", _env("SurrogateEnv", "        return 'ab\\ud800', 0.0, False, False, {}")),
    ("CPU loop in step()", _env("SpinEnv", "        while True:\n            pass")),
    ("every step about a second of work", _env(
        "SlowEnv", "        for _ in range(20_000_000):\n            pass\n        return 'o', 0.0, False, False, {}")),
]

FORGE = '''
import os, stat, msgpack

def forge_raw(data):
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and os.write(fd, b"") == 0:
                break
        except OSError:
            pass
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

def forge(payload):
    forge_raw(len(payload).to_bytes(4, "big") + payload)
'''

#: Attacks with the static layer off: (name, source, instances stepped in one batch).
FORGED_ATTACKS: list[tuple[str, str, int]] = [
    ("forged 8 MB reply of empty maps", _env("MapsEnv", "        forge(msgpack.packb(['ok', ['o', 0.0, False, False, {'k': [[{}] * 500_000] * 16}]]))\n        os._exit(0)", prelude=FORGE), 1),
    ("forged 600 KB reply of empty maps (within the frame limit)", _env("SmallMapsEnv", "        forge(msgpack.packb(['ok', ['o', 0.0, False, False, {'k': [{}] * 600_000}]]))\n        os._exit(0)", prelude=FORGE), 1),
    ("header announcing 128 MiB, then silence", _env("HeaderEnv", "        forge_raw((128 << 20).to_bytes(4, 'big') + b'x')\n        import time\n        time.sleep(60)", prelude=FORGE), 1),
    ("batch of 200: header announcing 120 MiB, then silence", _env("BatchHeaderEnv", "        forge_raw((120 << 20).to_bytes(4, 'big') + b'x')\n        import time\n        time.sleep(60)", prelude=FORGE), 200),
    ("batch of 64: a 40 MB undecodable frame, worker exits", _env("SenderEnv", "        forge(b'\\xc1' * (40 << 20))\n        os._exit(0)", prelude=FORGE), 64),
]


def validator_table(console: Console) -> list[float]:
    from spade_designer.validation import Validator

    good = (CORPUS / "good" / "guess_number.py").read_text()
    table = Table(title="validator API, normal path: peak host memory and wall time per candidate")
    for col in ("environment", "verdict / reason", "wall s", "peak host MB", "vs good"):
        table.add_column(col, justify="left" if col in ("environment", "verdict / reason") else "right")
    peaks = []
    with Validator() as validator:
        validator.validate(good)  # the zygote and the pool's caches, outside the rows

        def verdict(source: str) -> str:
            report = validator.validate(source)
            if report.passed:
                return "passed"
            return f"rejected at {report.failed_stage}: {', '.join(report.reasons)[:50]}"

        wall, good_peak, out = measure(lambda: verdict(good))
        table.add_row("good: corpus guess_number", out, f"{wall:.2f}", f"{good_peak:.1f}", "-")
        for name, source in VALIDATOR_ATTACKS:
            wall, peak, out = measure(lambda s=source: verdict(s))
            peaks.append(peak - good_peak)
            table.add_row(name, out[:60], f"{wall:.2f}", f"{peak:.1f}", f"{peak - good_peak:+.1f}")
    console.print(table)
    return peaks


def pool_table(console: Console) -> list[float]:
    from spade_core.sandbox_settings import SandboxSettings
    from spade_sandbox.launcher import SandboxLauncher

    good = (CORPUS / "good" / "guess_number.py").read_text()
    table = Table(title="SandboxPool with the static layer and guard off (OS layers and host side alone)")
    for col in ("environment", "outcome", "wall s", "peak host MB", "vs good"):
        table.add_column(col, justify="left" if col in ("environment", "outcome") else "right")
    peaks = []
    # a program pool: no static layer and no guard, the OS layers alone
    with SandboxLauncher(SandboxSettings(memory_mb=256)).program_pool(call_timeout_s=3.0) as pool:
        warm = pool.spawn(good)
        pool.reset(warm, seed=1)

        def run(source: str, n: int) -> str:
            handles = [pool.spawn(source) for _ in range(n)]
            for h in handles[:1]:
                pool.reset(h, seed=1)
            if n == 1:
                out = pool.step(handles[0], "5")
                return f"returned {out[0][:40]!r}"
            results = pool.step_many([(h, "5") for h in handles])
            kinds = sorted({type(r).__name__ for r in results})
            return f"{'/'.join(kinds)}: {str(results[0])[:60]}"

        wall, good_peak, out = measure(lambda: run(good + "\n# fresh worker\n", 1))
        table.add_row("good: corpus guess_number (fresh worker, reset + step)", out, f"{wall:.2f}", f"{good_peak:.1f}", "-")
        for name, source, n in FORGED_ATTACKS:
            wall, peak, out = measure(lambda s=source, k=n: run(s, k))
            peaks.append(peak - good_peak)
            table.add_row(name, out[:70], f"{wall:.2f}", f"{peak:.1f}", f"{peak - good_peak:+.1f}")
    console.print(table)
    return peaks


def main() -> None:
    console = Console()
    peaks = validator_table(console) + pool_table(console)
    worst = max(peaks)
    console.print(f"worst hostile row: {worst:+.1f} MB over the good environment (target: within {BOUND_MB} MB)"
                  f" -> {'holds' if worst < BOUND_MB else 'MISSED'}")


if __name__ == "__main__":
    main()
