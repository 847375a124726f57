"""Rich rendering of a :class:`~spade_core.metadata.ValidationReport`."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from spade_core.metadata import ValidationReport

from .codes import STAGE_ORDER

#: Longest action shown in a replayable action list (the JSON output has them whole).
_ACTION_CHARS = 160


def _clip(text: str, width: int) -> str:
    shown = repr(text)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def report_renderable(report: ValidationReport, *, title: str = "validation") -> Panel:
    """Stage table (verdict, time, message) and, for a rejection, the reason code, the
    seed and the replayable action list."""
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("stage")
    table.add_column("verdict")
    table.add_column("ms", justify="right")
    table.add_column("details", overflow="fold")
    by_stage: dict[str, list] = {}
    for f in report.findings:
        by_stage.setdefault(f.stage, []).append(f)
    for stage in STAGE_ORDER:
        findings = by_stage.get(stage.value)
        ms = report.timings.get(stage.value)
        if findings is None:
            verdict = "[dim]not run[/]"
            table.add_row(stage.value, verdict, "-", "")
            continue
        failed = any(not f.ok for f in findings)
        verdict = "[bold red]rejected[/]" if failed else "[green]ok[/]"
        notes = "; ".join(
            (f"[bold]{f.code}[/]: " if f.code else "") + escape(f.message) for f in findings
        )
        table.add_row(stage.value, verdict, f"{1000 * ms:.1f}" if ms is not None else "-", notes)
    parts: list = [table]
    failing = [f for f in report.findings if not f.ok]
    if failing:
        f = failing[0]
        lines = [f"[bold red]reason[/] {f.code}: {escape(f.message)}"]
        if f.actions is not None:
            lines.append(f"[bold]replay[/]: reset(seed={f.seed}) then {len(f.actions)} action(s):")
            for i, a in enumerate(f.actions[:30], 1):
                lines.append(f"  {i:>2}. {escape(_clip(a, _ACTION_CHARS))}")
            if len(f.actions) > 30:
                lines.append(f"  ... {len(f.actions) - 30} more (see --json)")
        elif f.seed is not None:
            lines.append(f"seed {f.seed}")
        if report.duplicate_of:
            lines.append(f"[bold]twin[/]: {report.duplicate_of}")
        parts.append("\n".join(lines))
    verdict = "[bold green]PASSED[/]" if report.passed else f"[bold red]REJECTED at {report.failed_stage}[/]"
    feas = "feasibility proven" if report.feasibility_proven else "feasibility unproven"
    total = sum(report.timings.values())
    subtitle = f"{feas} · {1000 * total:.0f} ms" if report.passed else f"{1000 * total:.0f} ms"
    return Panel(Group(*parts), title=f"{escape(title)}: {verdict}", subtitle=subtitle)


def print_report(report: ValidationReport, *, title: str = "validation", console: Console | None = None) -> None:
    (console or Console(highlight=False)).print(report_renderable(report, title=title))
