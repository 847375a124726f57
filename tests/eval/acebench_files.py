"""ACEBench agent entries written in the benchmark's published layout, for the acebench tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_rows(folder: Path, name: str, rows: list[dict[str, Any]]) -> None:
    """``folder/name`` holding ``rows``, one JSON object per line (the benchmark's files)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_agent_data(root: Path, step: list[dict[str, Any]], turn: list[dict[str, Any]],
                     step_answers: list[dict[str, Any]], turn_answers: list[dict[str, Any]]) -> Path:
    """``root`` (a ``data_en`` folder) with the agent category's two files and their
    ``possible_answer`` files; returns ``root``."""
    write_rows(root, "data_agent_multi_step.json", step)
    write_rows(root, "data_agent_multi_turn.json", turn)
    write_rows(root / "possible_answer", "data_agent_multi_step.json", step_answers)
    write_rows(root / "possible_answer", "data_agent_multi_turn.json", turn_answers)
    return root
