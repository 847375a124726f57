"""The runs page reads each run's metrics.jsonl with the shared reader (spade_core.app.jsonl):
a run killed mid-write is listed with its complete iterations and its last complete record."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path


def test_a_run_cut_off_mid_write_lists_its_complete_iterations(ui_server: str) -> None:
    run = Path(os.environ["SPADE_UI_TEST_RUNS"]) / "cut-run"
    run.mkdir()
    records = [{"iteration": 1, "regret_mean": 0.5, "win_rate": 0.1, "pool_size": 20},
               {"iteration": 2, "regret_mean": 0.25, "win_rate": 0.75, "pool_size": 21}]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + '\n{"iteration": 3, "regr',
                                       encoding="utf-8")
    with urllib.request.urlopen(ui_server + "/runs", timeout=30) as reply:
        html = reply.read().decode("utf-8")
    row = re.search(r'<tr><td><a href="/runs/cut-run">cut-run</a></td>(.*?)</tr>', html, re.S)
    assert row is not None, html
    cells = re.findall(r'<td class="n">(.*?)</td>', row.group(1))
    assert cells == ["2", "0.250", "0.75", "21"]
