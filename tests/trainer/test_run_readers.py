"""The trainer's readers of a run's files go through the shared JSON-lines reader: a run
killed mid-write keeps every complete line, and a missing metrics file is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade_core.errors import ConfigError
from spade_trainer.metrics import read_metrics
from spade_trainer.run_archive import DESIGNS_FILE, read_archive


def test_metrics_of_a_run_cut_off_mid_write_are_its_complete_iterations(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 1}\n{"iteration": 2}\n{"iteration": 3, "los',
                                            encoding="utf-8")
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1, 2]


def test_a_folder_without_metrics_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"metrics\.jsonl does not exist: is .* a self-play run folder\?"):
        read_metrics(tmp_path)


def test_the_archive_reader_drops_the_full_markers_and_damaged_lines(tmp_path: Path) -> None:
    rows = [{"iteration": 1, "source": "a"}, {"iteration": 1, "archive_full": True}, {"iteration": 2, "source": "b"}]
    (tmp_path / DESIGNS_FILE).write_text("\n".join(json.dumps(r) for r in rows) + "\n[1]\n{broken", encoding="utf-8")
    assert read_archive(tmp_path / DESIGNS_FILE) == [rows[0], rows[2]]
    assert read_archive(tmp_path / "absent.jsonl") == []
