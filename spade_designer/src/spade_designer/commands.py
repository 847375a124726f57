"""``spade design``: run one design round with a live progress display, then a table.

Options override the ``[designer]`` table of the configuration; ``--json`` prints the
round (summary and per-candidate outcomes) as JSON instead of tables.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .config import DesignerConfig
from .records import RoundResult


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
    as_json: bool = typer.Option(False, "--json", help="Print the round as JSON."),
) -> None:
    """Design environments with the LLM, validate them, write hints, admit the good ones."""
    from spade_core.catalog import open_store
    from spade_core.cli import command_config, command_plugins

    from .assembly import assemble_designer

    spade_config = command_config(ctx)
    plugins = command_plugins(ctx)
    config = DesignerConfig.from_spade_config(
        spade_config,
        **_overrides(backend=backend, model=model, repair_attempts=repair_attempts,
                     max_new_tokens=max_new_tokens, document_words=document_words),
    )
    plugins.domain(domain)  # fail on an unknown domain before loading a model
    console = Console(stderr=as_json, highlight=False)
    with open_store(spade_config) as store:
        with console.status(f"starting the {escape(config.backend)} backend"):
            designer = assemble_designer(spade_config, config, store=store, plugins=plugins)
        try:
            t0, cpu0 = time.perf_counter(), time.process_time()
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=console, transient=as_json) as bar:
                tasks: dict[str, Any] = {}

                def progress(phase: str, done: int, total: int) -> None:
                    if phase not in tasks:
                        tasks[phase] = bar.add_task(phase, total=total)
                    bar.update(tasks[phase], completed=done, total=total)

                result = designer.design_round(domain, skill, n, difficulty=difficulty, seed=seed, progress=progress)
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        finally:
            close = getattr(designer.validator, "close", None)
            if close is not None:
                close()
    if as_json:
        out = result.to_json()
        out["wall_s"] = round(elapsed, 3)
        out["cpu_s"] = round(cpu, 3)
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False, default=str))
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
