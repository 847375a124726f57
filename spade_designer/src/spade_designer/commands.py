"""``spade design``: run one design round with progress shown, then a table.

Settings come from, lowest first: the profile (``--profile``), the ``[designer]`` table of
the configuration, then the flags. ``--json`` prints the round (summary and per-candidate
outcomes) as JSON instead of tables. Progress is a live bar on a terminal and one log
line per step otherwise (a pipe, a CI log); Ctrl-C stops the round and says what was done.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from spade_core.config_file import merge_tables
from spade_core.terminal import escape, terminal_json

from .config import DesignerConfig
from .records import RoundResult

#: Sized for the embedded 135M model on a CPU (what the quickstart's designer uses): a
#: compact prompt over a short grounding excerpt, short replies, no repair rounds. The
#: ``full`` profile is the model defaults (2,048-token replies, 4,000-word documents, two
#: repairs), sized for a GPU model.
CPU_PROFILE: dict[str, Any] = {
    "sampling": {"max_new_tokens": 256},
    "document_words": 80,
    "repair_attempts": 0,
    "prompt_style": "auto",
    "memory_policy": {"high_regret": 1, "negatives": 1, "failures": 0, "code_prefix_chars": 300},
    "hint": {"attempts": 1, "max_new_tokens": 64},
}


def profile_defaults(profile: str, table: dict[str, Any], backend: str | None, model: str | None) -> dict[str, Any]:
    """The settings ``profile`` puts beneath the configuration's ``[designer]`` table.
    ``auto`` is ``cpu`` for the default backend with its embedded model on a machine
    without CUDA, else ``full``."""
    if profile == "auto":
        chosen_backend = backend or table.get("backend") or "transformers"
        chosen_model = model or table.get("model")
        profile = "cpu" if chosen_backend == "transformers" and chosen_model is None and not _has_cuda() else "full"
    return dict(CPU_PROFILE) if profile == "cpu" else {}


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class _Reporter:
    """Progress of a round: a rich bar on a terminal, a log line per step elsewhere."""

    def __init__(self, console: Console, *, transient: bool) -> None:
        self.console = console
        self.live = console.is_terminal
        self.done: dict[str, tuple[int, int]] = {}
        self.t0 = time.perf_counter()
        self._bar: Progress | None = None
        self._tasks: dict[str, Any] = {}
        if self.live:
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=transient)

    def __enter__(self) -> _Reporter:
        if self._bar is not None:
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.done.get(phase) == (done, total):
            return
        self.done[phase] = (done, total)
        if self._bar is not None:
            if phase not in self._tasks:
                self._tasks[phase] = self._bar.add_task(phase, total=total)
            self._bar.update(self._tasks[phase], completed=done, total=total)
        else:
            self.console.print(f"[{time.perf_counter() - self.t0:7.1f}s] {escape(phase)}: {done}/{total}",
                               highlight=False, markup=False)

    def summary(self) -> str:
        parts = ", ".join(f"{phase} {d}/{t}" for phase, (d, t) in self.done.items()) or "nothing finished yet"
        return f"{parts} after {time.perf_counter() - self.t0:.0f}s"


def _overrides(**flags: Any) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in flags.items() if v is not None and k != "max_new_tokens"}
    if flags.get("max_new_tokens") is not None:
        out["sampling"] = {"max_new_tokens": flags["max_new_tokens"]}
    return out


def design(
    ctx: typer.Context,
    domain: str = typer.Option(..., "--domain", help="Domain to design for (e.g. games, tooluse)."),
    skill: str = typer.Option(..., "--skill", help="One of the domain's skills."),
    n: int = typer.Option(4, "--n", min=1, help="How many environments to design in this round."),
    backend: str | None = typer.Option(None, "--backend", help="LLM backend (transformers, openai, vllm, replay)."),
    model: str | None = typer.Option(None, "--model", help="Model path or id for the backend."),
    difficulty: float | None = typer.Option(None, "--difficulty", min=0.0, max=1.0, help="Target difficulty 0-1."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of document sampling and generation."),
    repair_attempts: int | None = typer.Option(None, "--repair-attempts", min=0, help="Repair rounds per candidate."),
    max_new_tokens: int | None = typer.Option(None, "--max-new-tokens", min=1, help="Generation budget per reply."),
    document_words: int | None = typer.Option(None, "--document-words", min=0, help="Grounding document word budget."),
    profile: str = typer.Option(
        "auto", "--profile",
        help="Settings beneath [designer]: cpu (the embedded model on a CPU: short prompt and replies, no repairs), "
             "full (the model defaults, sized for a GPU model), or auto (cpu for the embedded model without CUDA).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the round as JSON."),
) -> None:
    """Design environments with the LLM, validate them, write hints, admit the good ones."""
    from spade_core.app.catalog import open_store
    from spade_core.app.cli import command_config, command_plugins

    from .assembly import assemble_designer

    spade_config = command_config(ctx)
    plugins = command_plugins(ctx)
    if profile not in ("auto", "cpu", "full"):
        raise typer.BadParameter(f"must be auto, cpu or full, not {profile!r}", param_hint="--profile")
    table = spade_config.section("designer")
    flags = _overrides(backend=backend, model=model, repair_attempts=repair_attempts,
                       max_new_tokens=max_new_tokens, document_words=document_words)
    config = DesignerConfig.load(merge_tables(merge_tables(profile_defaults(profile, table, backend, model), table), flags))
    plugins.domain(domain)  # fail on an unknown domain before loading a model
    console = Console(stderr=as_json, highlight=False)
    with open_store(spade_config) as store:
        starting = f"starting the {escape(config.backend)} backend"
        if not console.is_terminal:
            console.print(starting, highlight=False)
        with console.status(starting):
            designer = assemble_designer(spade_config, config, store=store, plugins=plugins)
        try:
            t0, cpu0 = time.perf_counter(), time.process_time()
            reporter = _Reporter(console, transient=as_json)
            try:
                with reporter:
                    result = designer.design_round(domain, skill, n, difficulty=difficulty, seed=seed,
                                                   progress=reporter)
            except KeyboardInterrupt:
                admitted = reporter.done.get("admission", (0, 0))[0] > 0
                console.print(f"[yellow]interrupted[/]: {escape(reporter.summary())}; "
                              + ("its admissions were stored" if admitted else "nothing of this round was stored"),
                              highlight=False)
                raise typer.Exit(130) from None
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        finally:
            close = getattr(designer.validator, "close", None)
            if close is not None:
                close()
    if as_json:
        out = result.to_json()
        out["wall_s"] = round(elapsed, 3)
        out["cpu_s"] = round(cpu, 3)
        typer.echo(terminal_json(json.dumps(out, indent=2, ensure_ascii=False, default=str)))
        return
    render_round(result, console, elapsed, cpu)


def render_round(result: RoundResult, console: Console, elapsed: float, cpu: float | None = None) -> None:
    s = result.summary()
    per = Table(title=f"design round: {result.domain} / {result.skill} ({escape(result.model)})")
    for col in ("#", "environment", "outcome", "stage", "repairs", "reason"):
        per.add_column(col, overflow="fold")
    for c in result.candidates:
        outcome = "[green]admitted" if c.admitted else "[red]rejected"
        reason = " ".join((c.reasons[0] if c.reasons else (c.hint.hint if c.hint and c.hint.hint else "")).split())
        per.add_row(str(c.index), escape(c.metadata.id) if c.metadata else "-", outcome,
                    escape(c.rejected_stage or "-"), str(c.repairs), escape(reason[:160]))
    console.print(per)
    totals = Table(title="totals")
    totals.add_column("measure")
    totals.add_column("value", justify="right")
    by_stage = ", ".join(f"{k}: {v}" for k, v in s["rejected_by_stage"].items()) or "-"
    for label, value in (
        ("designed", s["designed"]),
        ("code extracted", s["extracted"]),
        ("valid", s["valid"]),
        ("admitted", s["admitted"]),
        ("rejected", s["rejected"]),
        ("rejected by stage", by_stage),
        ("repair attempts", s["repairs"]),
        ("tokens in / out", f"{s['prompt_tokens']} / {s['completion_tokens']}"),
        ("wall seconds", f"{elapsed:.1f}"),
        # on a shared machine wall time hides how much work the round itself needed
        ("CPU seconds (this process)", "-" if cpu is None else f"{cpu:.1f}"),
    ):
        totals.add_row(label, escape(str(value)))
    console.print(totals)
    console.print("[dim]seconds per phase: " + ", ".join(f"{k} {v:.2f}" for k, v in s["timings_s"].items()))


def register(cli: typer.Typer) -> None:
    cli.command("design")(design)
