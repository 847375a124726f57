"""Rich rendering of a :class:`~spade_core.metadata.ValidationReport`.

Everything an environment wrote (its messages, observations, exception texts, actions)
is untrusted when it reaches a terminal: terminal escape sequences and other control
characters are removed before rendering (:func:`terminal_safe`), so an environment
cannot recolour, retitle, clear or rewrite the screen of the person reading its report.
The rendering is bounded whatever the report holds: at most :data:`MAX_FINDINGS_PER_STAGE`
findings per stage, each message clipped to :data:`MAX_MESSAGE_CHARS`, the rest summarised
as counts by reason code (``--json`` keeps everything).
"""

from __future__ import annotations

import re
from collections import Counter

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from spade_core.metadata import Finding, ValidationReport
from spade_core.terminal import escape

from .codes import STAGE_ORDER

#: Longest action shown in a replayable action list (the JSON output has them whole).
_ACTION_CHARS = 160
#: Actions of a replay shown before "... N more".
_ACTIONS_SHOWN = 30
#: Findings shown per stage; the others are counted by reason code.
MAX_FINDINGS_PER_STAGE = 5
#: Characters of one finding's message shown.
MAX_MESSAGE_CHARS = 600

# ESC-introduced sequences: CSI (ESC [ ... final byte), OSC/DCS/PM/APC/SOS strings (up to
# BEL or ST), and two-character escapes; then the 8-bit CSI/OSC forms.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x90\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
)
# What is left that a terminal acts on: C0 controls but tab and newline, DEL, C1 controls,
# and the bidirectional overrides that make text read differently from what it is.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (tab and newline
    stay; a carriage return would let a line overwrite itself, so it goes too)."""
    if text.isprintable():
        return text
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


def _clip(text: str, width: int) -> str:
    # repr() shows control characters as escapes; the result is printable ASCII-safe.
    shown = repr(text)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def _message(text: str) -> str:
    text = terminal_safe(text)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + f"… ({len(text)} characters; see --json)"
    return escape(text)


def _notes(findings: list[Finding]) -> str:
    # The failing finding (the reason) always shows, then the first passing ones.
    shown = sorted(findings, key=lambda f: f.ok)[:MAX_FINDINGS_PER_STAGE]
    parts = [(f"[bold]{escape(terminal_safe(f.code))}[/]: " if f.code else "") + _message(f.message) for f in shown]
    kept = {id(f) for f in shown}
    hidden = [f for f in findings if id(f) not in kept]
    if hidden:
        counts = Counter(f.code or ("ok" if f.ok else "failed") for f in hidden)
        summary = ", ".join(f"{n} {terminal_safe(code)}" for code, n in counts.most_common(5))
        more = len(counts) - 5
        parts.append(
            escape(f"… {len(hidden)} more finding(s): {summary}" + (f" and {more} other codes" if more > 0 else "") + " (see --json)")
        )
    return "; ".join(parts)


def report_renderable(report: ValidationReport, *, title: str = "validation") -> Panel:
    """Stage table (verdict, time, message) and, for a rejection, the reason code, the
    seed and the replayable action list. Bounded in size, free of terminal escapes."""
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("stage")
    table.add_column("verdict")
    table.add_column("ms", justify="right")
    table.add_column("details", overflow="fold")
    by_stage: dict[str, list[Finding]] = {}
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
        table.add_row(stage.value, verdict, f"{1000 * ms:.1f}" if ms is not None else "-", _notes(findings))
    parts: list = [table]
    failing = [f for f in report.findings if not f.ok]
    if failing:
        f = failing[0]
        lines = [f"[bold red]reason[/] {escape(terminal_safe(f.code or ''))}: {_message(f.message)}"]
        if f.actions is not None:
            lines.append(f"[bold]replay[/]: reset(seed={f.seed}) then {len(f.actions)} action(s):")
            for i, a in enumerate(f.actions[:_ACTIONS_SHOWN], 1):
                lines.append(f"  {i:>2}. {escape(_clip(a, _ACTION_CHARS))}")
            if len(f.actions) > _ACTIONS_SHOWN:
                lines.append(f"  ... {len(f.actions) - _ACTIONS_SHOWN} more (see --json)")
            rewards = f.details.get("rewards") if isinstance(f.details, dict) else None
            if isinstance(rewards, list) and rewards:
                shown = ", ".join(f"{r:g}" if isinstance(r, int | float) else "?" for r in rewards[:_ACTIONS_SHOWN])
                lines.append(f"  rewards: {escape(shown)}" + (" ..." if len(rewards) > _ACTIONS_SHOWN else ""))
        elif f.seed is not None:
            lines.append(f"seed {f.seed}")
        if report.duplicate_of:
            lines.append(f"[bold]twin[/]: {_message(report.duplicate_of)}")
        parts.append("\n".join(lines))
    verdict = "[bold green]PASSED[/]" if report.passed else f"[bold red]REJECTED at {escape(terminal_safe(report.failed_stage or '?'))}[/]"
    if "feasibility" not in report.timings:  # the stage did not run (`spade fuzz`): nothing was tried
        feas = "feasibility not checked (spade validate replays solution())"
    else:
        feas = "feasibility proven" if report.feasibility_proven else "feasibility unproven"
    total = sum(report.timings.values())
    subtitle = f"{feas} · {1000 * total:.0f} ms" if report.passed else f"{1000 * total:.0f} ms"
    return Panel(Group(*parts), title=f"{escape(terminal_safe(title))}: {verdict}", subtitle=subtitle)


def print_report(report: ValidationReport, *, title: str = "validation", console: Console | None = None) -> None:
    (console or Console(highlight=False)).print(report_renderable(report, title=title))
