"""What a self-play run keeps besides its metrics: the designed candidates and a sample of
episode transcripts, so that a report (and a person) can see what happened.

Two JSON-lines files in the run folder, appended once per iteration:

* ``designs.jsonl``: one line per designed candidate: iteration, skill, env id, whether it
  was valid and admitted, the stage that rejected it and why, the hint, and its code;
* ``transcripts.jsonl``: per iteration and environment, at most ``transcripts_per_env``
  hinted and as many unhinted episodes (first ones played): the messages, rewards,
  return, turns and how the episode ended.

Both are bounded: each text is clipped to ``max_text_chars`` and an archive stops
writing a file once it holds ``max_file_bytes`` (a line says so, once), so a run of
thousands of iterations cannot fill the disk with transcripts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_core.app.jsonl import read_jsonl

DESIGNS_FILE = "designs.jsonl"
TRANSCRIPTS_FILE = "transcripts.jsonl"


@dataclass(frozen=True)
class ArchiveLimits:
    """How much of a run is kept (``transcripts_per_env`` = 0 keeps no transcripts)."""

    transcripts_per_env: int = 2
    max_text_chars: int = 4_000
    max_code_chars: int = 40_000
    max_file_bytes: int = 32 * 1024 * 1024


def _clip(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters]"


class RunArchive:
    """Appends designs and transcripts of each iteration to the run folder."""

    def __init__(self, run_dir: str | Path, limits: ArchiveLimits | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.limits = limits or ArchiveLimits()

    def truncate_after(self, iteration: int) -> None:
        """Drop lines of iterations after ``iteration`` (a resumed run redoes them)."""
        for name in (DESIGNS_FILE, TRANSCRIPTS_FILE):
            path = self.run_dir / name
            if not path.is_file():
                continue
            keep = [line for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip() and json.loads(line).get("iteration", 0) <= iteration]
            path.write_text("".join(line + "\n" for line in keep), encoding="utf-8")

    def _append(self, name: str, rows: Iterable[dict[str, Any]]) -> int:
        path = self.run_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        size = path.stat().st_size if path.exists() else 0
        written = 0
        with path.open("a", encoding="utf-8") as f:
            for row in rows:
                line = json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n"
                if size + len(line) > self.limits.max_file_bytes:
                    if size < self.limits.max_file_bytes:  # say it once
                        f.write(json.dumps({"iteration": row.get("iteration"), "archive_full": True}) + "\n")
                        size = self.limits.max_file_bytes
                    break
                f.write(line)
                size += len(line)
                written += 1
        return written

    def record_designs(self, iteration: int, candidates: Sequence[Any]) -> int:
        """One line per :class:`~spade_trainer.design_protocol.DesignedCandidate` of ``iteration``."""
        lim = self.limits

        def rows() -> Iterator[dict[str, Any]]:
            for c in candidates:
                yield {
                    "iteration": iteration,
                    "skill": c.skill,
                    "env_id": c.env_id,
                    "valid": bool(c.valid),
                    "admitted": bool(c.admitted),
                    "failed_stage": c.failed_stage,
                    "stages_passed": list(c.stages_passed),
                    "reasons": [_clip(r, lim.max_text_chars) for r in c.reasons],
                    "novelty": c.novelty,
                    "operator": getattr(c, "operator", None),
                    "parent_id": getattr(c, "parent_id", None),
                    "hint": _clip(getattr(c, "hint", None), lim.max_text_chars),
                    "code": _clip(getattr(c, "source", None), lim.max_code_chars),
                }

        return self._append(DESIGNS_FILE, rows())

    def record_episodes(self, iteration: int, episodes: Sequence[Any]) -> int:
        """The first ``transcripts_per_env`` hinted and unhinted episodes of each environment."""
        lim = self.limits
        if lim.transcripts_per_env <= 0:
            return 0
        taken: Counter[tuple[str, bool]] = Counter()

        def rows() -> Iterator[dict[str, Any]]:
            for ep in episodes:
                key = (ep.spec.env.env_id, bool(ep.spec.hinted))
                if taken[key] >= lim.transcripts_per_env:
                    continue
                taken[key] += 1
                yield {
                    "iteration": iteration,
                    "env_id": key[0],
                    "hinted": key[1],
                    "return": ep.episode_return,
                    "turns": ep.turns,
                    "terminated": ep.terminated,
                    "truncated": ep.truncated,
                    "hung": ep.hung,
                    "error": _clip(ep.error, lim.max_text_chars),
                    "rewards": list(ep.rewards),
                    "messages": [{"role": m.get("role"), "content": _clip(m.get("content"), lim.max_text_chars)}
                                 for m in ep.messages],
                }

        return self._append(TRANSCRIPTS_FILE, rows())


def read_archive(path: Path) -> list[dict[str, Any]]:
    """Rows of an archive file of a run (``[]`` when it does not exist), read by
    :func:`spade_core.app.jsonl.read_jsonl` (a damaged line, from a run killed mid-write, is
    skipped), without the ``archive_full`` markers the writer leaves when a limit is hit."""
    return [row for row in read_jsonl(path) if not row.get("archive_full")]
