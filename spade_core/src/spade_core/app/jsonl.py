"""Reading the JSON-lines files a run writes (``metrics.jsonl``, ``evals.jsonl``, the run
archive's ``designs.jsonl`` / ``transcripts.jsonl``): the one reader the trainer's report,
``spade compare`` and the browser's runs page share.

A run appends one JSON object per line and may be killed mid-write, so the reader is
lenient by contract: a missing file is no rows, and a line that is blank, not JSON or
not an object is skipped (the damaged last line of a killed run, never a whole file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["read_jsonl"]


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The objects of the JSON-lines file ``path``, in file order (``[]`` when it does not
    exist); lines that are blank, damaged or hold something other than an object are
    skipped."""
    file = Path(path)
    if not file.is_file():
        return []
    rows: list[dict[str, Any]] = []
    for line in file.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
