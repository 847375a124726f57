"""SPADE core's CLI commands: ``list``, ``show``, ``play``, ``plugins`` here, ``import`` and
``export`` in :mod:`.import_export`.

Registered by the built-in plugin through ``spade_register_commands`` (:func:`register`).
Each command parses its options, calls the module that does the work (catalog, play,
importer, exporter) and renders the result with rich; ``--json`` prints machine-readable
output instead. Errors are :class:`~spade_core.errors.SpadeError` and reach the user as
one red line (see :mod:`spade_core.app.cli`).
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.panel import Panel
from rich.table import Table

from ..metadata import EnvMetadata, EnvStatus
from ..terminal import escape, print_whole, printable, unwrapped
from . import plugin_report
from .cli import command_config, command_console, command_plugins, echo_json
from .import_export import export, import_envs


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --- spade list -----------------------------------------------------------------------


def list_envs(
    ctx: typer.Context,
    domain: str | None = typer.Option(None, "--domain", help="Only this domain."),
    status: EnvStatus | None = typer.Option(None, "--status", help="Only this status (seeds count as admitted)."),
    skill: str | None = typer.Option(None, "--skill", help="Only this skill."),
    limit: int = typer.Option(200, "--limit", min=1, help="At most this many store environments."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List environments: the store's and the installed plugins' seed environments."""
    from .catalog import CatalogEntry, open_store, seed_entries

    config = command_config(ctx)
    plugins = command_plugins(ctx)
    seeds = seed_entries(plugins, domain=domain, skill=skill, status=status)
    with open_store(config, read_only=True) as store:
        total = store.count(domain=domain, skill=skill, status=status)
        stored = [CatalogEntry("store", m) for m in store.find(domain=domain, skill=skill, status=status, limit=limit)]
    entries = seeds + stored
    if as_json:
        echo_json([e.summary() for e in entries])
        plugin_report.warn_problems(plugins.problems())
        return
    console = command_console()
    table = Table(title=f"{len(seeds)} seed + {total} store environments", title_justify="left")
    # The id is what the user types next (`spade show ID`): it never wraps, and neither do
    # the skill and the status. The numbers and the description come only where the
    # terminal has room for them beside those, rather than squeezing them.
    summaries = [e.summary() for e in entries]
    widths = {
        "id": max([len(s["id"]) for s in summaries] + [2]),
        "kind": 5,
        "domain": max([len(s["domain"]) for s in summaries] + [6]),
        "skill": max([len(s["skill"]) for s in summaries] + [5]),
        "status": max([len(s["status"]) for s in summaries] + [6]),
    }
    columns = list(widths)
    if domain is not None:  # every row says the same
        columns.remove("domain")
        del widths["domain"]
    room = 1 << 20 if unwrapped(console) else console.width  # a pipe or a file: whole rows
    needed = sum(widths.values()) + 3 * len(columns) + 1  # cells, padding and rules
    if needed > room:  # too narrow even for these: the skill folds, the rest stays whole
        del widths["skill"]
    for col, width in (("turns", 5), ("win rate", 8), ("regret", 6)):
        if needed + width + 3 <= room:
            columns.append(col)
            widths[col] = width
            needed += width + 3
    if needed + 23 <= room:
        columns.append("description")
    for col in columns:
        numeric = col in ("turns", "win rate", "regret")
        table.add_column(
            col,
            justify="right" if numeric else "left",
            no_wrap=col in widths,
            min_width=widths.get(col),
            max_width=50 if col == "description" else None,
            overflow="ellipsis" if col == "description" else "fold",
        )
    colours = {"admitted": "green", "candidate": "yellow", "retired": "dim"}
    for e, s in zip(entries, summaries, strict=True):
        cells = {
            "id": escape(s["id"]),
            "kind": "[cyan]seed[/]" if e.kind == "seed" else "store",
            "domain": escape(s["domain"]),
            "skill": escape(s["skill"]),
            "status": f"[{colours[s['status']]}]{s['status']}[/]",
            "turns": str(s["max_turns"]),
            "win rate": _fmt(s["win_rate"]),
            "regret": _fmt(s["regret"], ".3f"),
            "description": escape(_clip(s["description"], 50)),
        }
        table.add_row(*(cells[c] for c in columns))
    print_whole(console, table)
    if total > len(stored):
        console.print(f"[dim]showing {len(stored)} of {total} store environments; --limit shows more[/]")
    plugin_report.warn_problems(plugins.problems())


# --- spade show -----------------------------------------------------------------------


def _edit_text(m: EnvMetadata) -> str:
    """How an edited environment differs from its parent, in one line ("-" if written from scratch)."""
    e = m.edit
    if e is None:
        return "-"
    if e.kind == "parameter":
        changes = ", ".join(f"{k} {e.previous.get(k, '?')} -> {v}" for k, v in e.values.items())
        return f"parameter edit of {e.parent_id}: {changes or 'no change'}"
    lines = (e.diff or "").splitlines()
    changed = sum(1 for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return f"code edit of {e.parent_id}: {changed} changed lines"


def _metadata_panel(kind: str, m: EnvMetadata) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    rows: list[tuple[str, Any]] = [
        ("gym id", m.gym_id),
        ("kind", "seed (trusted, plugin)" if kind == "seed" else "store (sandboxed)"),
        ("status", m.status.value),
        ("domain / skill", f"{m.domain} / {m.skill}"),
        ("action format", m.action_format.value),
        ("max turns", m.max_turns),
        ("reward range", f"[{m.reward_range[0]}, {m.reward_range[1]}]"),
        ("difficulty", _fmt(m.difficulty)),
        ("class", m.class_name or "-"),
        ("code hash", m.code_hash[:16] + "…" if m.code_hash else "-"),
        ("designer", m.designer_model or "-"),
        ("document", f"{m.document.corpus}:{m.document.doc_id}" if m.document else "-"),
        ("tags", ", ".join(m.tags) or "-"),
        ("created", m.created_at.isoformat(timespec="seconds")),
        ("description", m.description or "-"),
        ("hint", m.hint or "-"),
        ("edit", _edit_text(m)),
    ]
    for k, v in rows:
        grid.add_row(k, escape(str(v)))
    return Panel(grid, title=f"[bold]{escape(m.id)}", title_align="left")


def _validation_panel(kind: str, m: EnvMetadata) -> Panel:
    v = m.validation
    if v is None:
        hint = " (`spade validate --seeds` validates every installed seed)" if kind == "seed" else ""
        return Panel(f"not validated yet{hint}", title="validation", title_align="left")
    head = "[green]passed[/]" if v.passed else f"[red]failed[/] at stage [bold]{escape(v.failed_stage or '?')}[/]"
    lines = [head + f"   feasibility proven: {'yes' if v.feasibility_proven else 'no'}"]
    if v.timings:
        lines.append("time: " + ", ".join(f"{k} {t:.2f}s" for k, t in v.timings.items()))
    lines += [f"- {escape(r)}" for r in v.reasons]
    if v.duplicate_of:
        lines.append(f"duplicate of {escape(v.duplicate_of)}")
    return Panel("\n".join(lines), title="validation", title_align="left")


def _stats_table(m: EnvMetadata) -> Table:
    table = Table(title="stats", title_justify="left")
    for col in ("snapshot", "samples", "win rate", "regret", "hinted", "unhinted", "measured"):
        table.add_column(col)
    for s in m.stats:
        table.add_row(
            escape(s.policy_snapshot),
            str(s.samples),
            _fmt(s.win_rate),
            _fmt(s.regret, ".3f"),
            _fmt(s.mean_return_hinted),
            _fmt(s.mean_return_unhinted),
            s.measured_at.isoformat(timespec="seconds"),
        )
    return table


def show(
    ctx: typer.Context,
    env_id: str = typer.Argument(..., metavar="ID", help="Environment id, name (latest version) or spade/<id>."),
    code: bool = typer.Option(False, "--code", help="Also show the source code."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of panels."),
) -> None:
    """Show one environment: metadata, validation, stats, lineage (and code)."""
    from .catalog import learnability_of, open_store, resolve

    config = command_config(ctx)
    with open_store(config, read_only=True) as store:
        entry = resolve(env_id, command_plugins(ctx), store)
        m = entry.metadata
        ancestors = [a.id for a in store.lineage(m.id)] if entry.kind == "store" else []
        children = [d.id for d in store.descendants(m.id)] if entry.kind == "store" else []
        source = entry.source(store) if code else None
    if as_json:
        out: dict[str, Any] = {
            "kind": entry.kind,
            "metadata": m.model_dump(mode="json"),
            "lineage": ancestors,
            "descendants": children,
        }
        if source is not None:
            out["source"] = source
        echo_json(out)
        return
    console = command_console()
    console.print(_metadata_panel(entry.kind, m))
    console.print(_validation_panel(entry.kind, m))
    if m.stats:
        print_whole(console, _stats_table(m))
    else:
        console.print("[dim]no play statistics yet[/]")
    learned = learnability_of(m)
    if learned is not None:
        lo, hi = learned["trained_interval"]
        console.print(
            f"learnability: [bold]{escape(learned['verdict'])}[/] after {learned['updates']} updates "
            f"(held-out success {learned['untrained']:.3f} -> {learned['trained']:.3f} [{lo:.3f}, {hi:.3f}], "
            f"control {_fmt(learned['control'], '.3f')}, best constant {learned['constant']:.3f}; "
            f"{escape(str(learned['run'] or '-'))})"
        )
    if entry.kind == "store":
        console.print(
            f"lineage: parents {escape(', '.join(m.parent_ids) or '-')}; "
            f"ancestors {escape(' <- '.join(ancestors) or '-')}; descendants {escape(', '.join(children) or '-')}"
        )
    if source is not None:
        from rich.syntax import Syntax

        console.print(Syntax(printable(source), "python", line_numbers=True, word_wrap=False))


# --- spade play -----------------------------------------------------------------------


def play(
    ctx: typer.Context,
    env_id: str = typer.Argument(..., metavar="ID", help="Environment id, name or spade/<id>."),
    seed: int | None = typer.Option(None, "--seed", help="Episode seed (default: drawn, and shown)."),
    in_process: bool = typer.Option(
        False, "--in-process",
        help="Run the code in this process, with no call deadline: store code instead of the sandbox (trusted "
             "code only), a seed instead of its worker process (to debug it).",
    ),
) -> None:
    r"""Play an environment in the terminal: type actions (wrapped as \boxed{...} for boxed
    domains), :solution to reveal, :reset [SEED], :quit."""
    from .catalog import open_store, resolve
    from .play import PlaySession, open_env, play_in_terminal

    config = command_config(ctx)
    with open_store(config, read_only=True) as store:
        entry = resolve(env_id, command_plugins(ctx), store)
        env = open_env(entry, config, in_process=in_process, store=store)
    console = command_console()
    if entry.kind == "store" and (in_process or config.store_envs_run == "in-process"):
        console.print("[yellow]running store code in this process (no sandbox)[/]")

    interactive = sys.stdin.isatty()

    def read_line() -> str | None:
        if interactive:  # input() gives a person line editing and history
            try:
                return console.input("[bold]>[/] ")
            except EOFError:
                console.print()
                return None
        console.print("[bold]>[/] ", end="")
        line = sys.stdin.readline()
        if not line:
            console.print()
            return None
        return line.rstrip("\n")

    try:
        play_in_terminal(PlaySession(env, entry.metadata.action_format, seed), read_line, console)
    finally:
        env.close()


def register(cli: typer.Typer) -> None:
    """Add the core commands to ``cli`` (called by the built-in plugin)."""
    cli.command("list")(list_envs)
    cli.command("show")(show)
    cli.command("play")(play)
    cli.command("import")(import_envs)
    cli.command("export")(export)
    cli.command("plugins")(plugin_report.plugins)
