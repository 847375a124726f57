"""Run ``spade import ARGS --json`` in this fresh process and print, as JSON, its exit code,
its output and how far the process's peak memory (``VmHWM``) rose above where it stood
before the import. Everything the import loads (libraries, plugins, the store) is loaded
by a warm-up import first (and Arrow's compute registry, which a warm-up without
dictionary-encoded columns does not touch), so what is measured is what reading the data costs.

Usage: ``python peak_import.py WARM_UP_SOURCE ARGS...`` (``SPADE_HOME`` chosen by the caller).
"""

from __future__ import annotations

import json
import sys


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def main(argv: list[str]) -> None:
    from spade_core.app.cli import build_app
    from typer.testing import CliRunner

    app = build_app()
    warm = CliRunner().invoke(app, ["import", argv[0], "--json"])
    assert warm.exit_code == 0, warm.output
    # Arrow's compute functions set up their registry on first use (about 40 MB, once per
    # process, whatever the data): done here, so the measure is the data's cost only.
    import pyarrow as pa
    import pyarrow.compute as pc

    pc.cumulative_sum(pc.take(pc.binary_length(pa.array(["x"])), pa.array([0])))
    with open("/proc/self/clear_refs", "w") as refs:  # VmHWM from here on is this import's
        refs.write("5")
    before = _status_kb("VmRSS")
    run = CliRunner().invoke(app, ["import", *argv[1:], "--json"])
    peak = _status_kb("VmHWM")
    outcomes: dict[str, int] = {}
    try:
        for row in json.loads(run.stdout):
            outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    except (ValueError, TypeError, KeyError):
        pass  # no report: the import stopped as a whole
    print(json.dumps({
        "outcomes": outcomes,
        "exit_code": run.exit_code,
        "output": run.output[-4000:],
        "exception": None if run.exception is None or isinstance(run.exception, SystemExit) else repr(run.exception),
        "grown_mb": (peak - before) / 1024,
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
