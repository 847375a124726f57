"""``spade compare --paper``: our runs' results in the paper's columns, beside the paper's
rows for the model scale nearest ours.

The paper's figures are a copy of its Tables 1-3 (``data/paper_tables.json``, SPADE paper,
arXiv 2608.19197 v1). Each paper column is read from one suite's result: a summary column
(``reasoning_gym_hard``'s Math... as RG-Math..., ``aime25``'s AIME25) or a group (``bfcl``'s
``multi_turn_base`` as BFCL-base, ``tau2_bench``'s tau2-retail..., ``acebench_agent``'s
ACE-multi-step/ACE-multi-turn); a column no run evaluated is listed as not run. Table 2's
overall is the paper's: the mean of the BFCL, tau2 and ACE averages (of those measured).

A run's model scale is read from the snapshot its evaluations record (``Qwen3-4B`` is 4 B
parameters, ``SmolLM2-135M`` 0.135 B). Results of a model under 1 B parameters, or of the
embedded model, are labelled a CPU miniature: the pipeline end to end, not the paper's
scale, so its differences are not the paper's to compare with.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

#: Paper column -> (suite, "column" or "group", name in that suite's result); None: no suite here.
SOURCES: dict[str, tuple[str, str, str] | None] = {
    "AIME25": ("aime25", "column", "AIME25"),
    "AIME26": ("aime26", "column", "AIME26"),
    "GPQA-D": ("gpqa_diamond", "column", "GPQA-D"),
    "LCB-v6": ("livecodebench", "column", "LCB-v6"),
    "RG-Math": ("reasoning_gym_hard", "column", "Math"),
    "RG-Algo": ("reasoning_gym_hard", "column", "Algorithmic"),
    "RG-Cog": ("reasoning_gym_hard", "column", "Cognition"),
    "RG-Logic": ("reasoning_gym_hard", "column", "Logic"),
    "BFCL-base": ("bfcl", "group", "multi_turn_base"),
    "BFCL-miss-func": ("bfcl", "group", "multi_turn_miss_func"),
    "BFCL-miss-param": ("bfcl", "group", "multi_turn_miss_param"),
    "BFCL-long-ctx": ("bfcl", "group", "multi_turn_long_context"),
    "tau2-retail": ("tau2_bench", "column", "tau2-retail"),
    "tau2-airline": ("tau2_bench", "column", "tau2-airline"),
    "tau2-telecom": ("tau2_bench", "column", "tau2-telecom"),
    "ACE-multi-step": ("acebench_agent", "column", "ACE-multi-step"),
    "ACE-multi-turn": ("acebench_agent", "column", "ACE-multi-turn"),
}
_BFCL = ("BFCL-base", "BFCL-miss-func", "BFCL-miss-param", "BFCL-long-ctx")
_TAU2 = ("tau2-retail", "tau2-airline", "tau2-telecom")
_ACE = ("ACE-multi-step", "ACE-multi-turn")
#: Tables whose average is the mean of per-benchmark averages (Table 2's overall), not of columns.
AVERAGE_OF_BENCHMARKS: dict[str, tuple[tuple[str, ...], ...]] = {"table2_tooluse": (_BFCL, _TAU2, _ACE)}
#: Columns whose suite exists but cannot yet measure them here, with the reason (a note).
#: None now: the tau2_bench adapter implements all three domains of Table 2 (retail, airline,
#: telecom with its user-side tools), so a tau2 column a run lacks is only "not run".
NOT_MEASURABLE_HERE: dict[str, str] = {}
#: Suites whose evaluation adds Table 2 to the report.
TOOLUSE_SUITES = ("bfcl", "tau2_bench", "acebench_agent")
TABLES: dict[str, tuple[str, tuple[str, ...], str, tuple[str, ...]]] = {
    # key: (title, our columns, the paper's average column, what no suite here measures)
    "table1_games": ("Table 1 (games setting, held-out benchmarks)",
                     ("AIME25", "AIME26", "GPQA-D", "LCB-v6", "RG-Math", "RG-Algo", "RG-Cog", "RG-Logic"), "Avg", ()),
    "table2_tooluse": ("Table 2 (tool use): BFCL-v4 multi-turn, tau2-bench, ACEBench-Agent",
                       (*_BFCL, *_TAU2, *_ACE), "overall", ()),
}
#: Below this many parameters (billions), a result is a CPU miniature.
MINIATURE_BELOW_B = 1.0


@cache
def paper_tables() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("data/paper_tables.json").read_text(encoding="utf-8"))


def model_scale(text: str) -> float | None:
    """Parameters in billions named in a model or snapshot name (the first ``4B``/``135M``)."""
    m = re.search(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s*([BM])(?![A-Za-z])", text)
    if not m:
        return None
    return float(m.group(1)) * (1.0 if m.group(2) == "B" else 1e-3)


def nearest_model(table: str, scale: float | None, requested: str | None = None) -> str:
    """The paper's model of ``table`` named by ``requested`` (a substring), else the one
    whose scale is nearest ``scale`` (on a log scale; 4B-class when unknown)."""
    models = list(dict.fromkeys(row["model"] for row in paper_tables()[table]))
    if requested:
        found = [m for m in models if requested.lower() in m.lower()]
        if not found:
            raise ValueError(f"no paper model matches {requested!r} (models: {', '.join(models)})")
        return found[0]
    target = scale if scale else 4.0
    return min(models, key=lambda m: abs(math.log((model_scale(m) or 4.0) / target)))


def run_scores(evals: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Each paper column a run's evaluations measured, in percent (a suite's last
    evaluation counts)."""
    last: dict[str, dict[str, Any]] = {}
    for record in evals:
        last[record["suite"]] = record
    out = {}
    for column, source in SOURCES.items():
        if source is None or source[0] not in last:
            continue
        suite, kind, name = source
        found = (last[suite].get("columns" if kind == "column" else "groups") or {}).get(name)
        if found is not None:
            out[column] = 100.0 * float(found["success_rate"])
    return out


@dataclass
class PaperTable:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _average(table: str, scores: dict[str, float], ran: list[str]) -> float | None:
    """The table's average over the columns ``ran``: of the columns, or (Table 2) of each
    benchmark's average over its measured columns."""
    groups = AVERAGE_OF_BENCHMARKS.get(table)
    if groups is None:
        return _mean([scores[c] for c in ran])
    return _mean([m for m in (_mean([scores[c] for c in g if c in ran]) for g in groups) if m is not None])


def paper_table(runs: Sequence[tuple[str, Sequence[dict[str, Any]]]], *, baseline: str | None = None,
                table: str = "table1_games", paper_model: str | None = None) -> PaperTable:
    """The paper's rows for the nearest model and ours (``runs``: name and evaluation
    records, the baseline first unless named), differences to the baseline in points."""
    title, columns, avg_name, not_here = TABLES[table]
    scores = {name: run_scores(evals) for name, evals in runs}
    snapshots = {name: next((r.get("snapshot", "") for r in reversed(evals) if r.get("snapshot")), "")
                 for name, evals in runs}
    scales = [s for s in (model_scale(snap) for snap in snapshots.values()) if s]
    model = nearest_model(table, max(scales) if scales else None, paper_model)
    header = ["row", *columns, avg_name]
    rows = []
    paper_rows = [r for r in paper_tables()[table] if r["model"] == model]
    base_row = paper_rows[0]
    for row in paper_rows:
        cells = [f"paper {model}: {row['run']}"]
        for col in [*columns, avg_name]:
            value = row.get(col)
            if value is None:
                cells.append("-")
            elif row is base_row or base_row.get(col) is None:
                cells.append(f"{value:.1f}")
            else:
                cells.append(f"{value:.1f} ({value - base_row[col]:+.1f})")
        rows.append(cells)
    names = [name for name, _ in runs]
    base = baseline if baseline is not None else (names[0] if names else None)
    base_scores = scores.get(base, {})
    for name in names:
        mine = scores[name]
        snap = snapshots[name]
        scale = model_scale(snap)
        mini = snap.startswith("embedded:") or (scale is not None and scale < MINIATURE_BELOW_B)
        label = f"ours: {name}" + (" (baseline)" if name == base else "") + (" [CPU miniature]" if mini else "")
        cells = [label]
        for col in columns:
            if col not in mine:
                cells.append("not run")
            elif name == base or col not in base_scores:
                cells.append(f"{mine[col]:.1f}")
            else:
                cells.append(f"{mine[col]:.1f} ({mine[col] - base_scores[col]:+.1f})")
        ran = [c for c in columns if c in mine]
        avg = _average(table, mine, ran)
        base_avg = _average(table, base_scores, ran) if all(c in base_scores for c in ran) else None
        if avg is None:
            cells.append("not run")
        else:
            text = f"{avg:.1f}" + ("" if len(ran) == len(columns) else f" (of {len(ran)})")
            if name != base and base_avg is not None:
                text += f" ({avg - base_avg:+.1f})"
            cells.append(text)
        rows.append(cells)
    measured = ", ".join(f"{n}: {snapshots[n] or 'unknown'}" for n in names) or "no runs"
    notes = [f"paper rows: {model}, the paper's model nearest our runs' scale ({measured})"]
    never = [c for c in columns if SOURCES[c] is not None and not any(c in s for s in scores.values())]
    if never:
        notes.append("not run by any of our runs: " + ", ".join(
            f"{c} (spade eval --suite {SOURCES[c][0]})" for c in never))  # type: ignore[index]
    partial = [c for c in columns if c in NOT_MEASURABLE_HERE]
    if partial:
        notes.append("not measurable here yet: " + ", ".join(f"{c} ({NOT_MEASURABLE_HERE[c]})" for c in partial))
    missing = [c for c in columns if SOURCES[c] is None] + list(not_here)
    if missing:
        notes.append("no suite in this tree measures: " + ", ".join(missing))
    minis = [n for n in names if rows[len(paper_rows) + names.index(n)][0].endswith("[CPU miniature]")]
    if minis:
        notes.append(f"CPU miniature: {', '.join(minis)} measured a model under {MINIATURE_BELOW_B:g} B parameters "
                     "(the embedded model, say) to show the pipeline end to end; its scores and differences are "
                     "not comparable with the paper's, which are shown for their shape only")
    notes.append("cells: percent; in brackets the difference to the baseline row in points (ours to our "
                 "baseline run, the paper's to its base model); an average over fewer columns says of how many")
    return PaperTable(f"{title}: ours beside the paper's", header, rows, notes)


def paper_report(runs: Sequence[tuple[str, Sequence[dict[str, Any]]]], *, baseline: str | None = None,
                 paper_model: str | None = None) -> list[PaperTable]:
    """Table 1, and Table 2 when a run evaluated a tool-use suite (``bfcl``, ``tau2_bench``,
    ``acebench_agent``)."""
    out = [paper_table(runs, baseline=baseline, table="table1_games", paper_model=paper_model)]
    if any(r["suite"] in TOOLUSE_SUITES for _, evals in runs for r in evals):
        out.append(paper_table(runs, baseline=baseline, table="table2_tooluse", paper_model=paper_model))
    return out
