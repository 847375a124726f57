"""Run reports for the ui's pages (:class:`Reports`): drawn by :mod:`spade_trainer.report`
into a cache folder of this process, outside the run folder, and drawn again when the
run's metrics change."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path


class Reports:
    """Run reports drawn into a cache folder of this process, redrawn when the run's
    ``metrics.jsonl`` (or its archive) changes."""

    def __init__(self) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="spade-ui-reports-"))
        self._drawn: dict[str, float] = {}
        self._lock = threading.Lock()

    def folder(self, run: Path) -> Path:
        from spade_trainer.report import write_report

        stamp = max((p.stat().st_mtime for p in run.glob("*.jsonl")), default=0.0)
        out = self._root / run.name
        with self._lock:
            if self._drawn.get(run.name) != stamp or not (out / "report.html").is_file():
                write_report(run, out)
                self._drawn[run.name] = stamp
        return out

    def close(self) -> None:
        import shutil

        shutil.rmtree(self._root, ignore_errors=True)


__all__ = ["Reports"]
