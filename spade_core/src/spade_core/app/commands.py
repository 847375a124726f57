"""SPADE core's CLI commands: ``list``, ``show``, ``play``, ``import``, ``export``, ``plugins``.

Registered by the built-in plugin through ``spade_register_commands`` (:func:`register`).
Each command parses its options, calls the module that does the work (catalog, play,
importer, exporter) and renders the result with rich; ``--json`` prints machine-readable
output instead. Errors are :class:`~spade_core.errors.SpadeError` and reach the user as
one red line (see :mod:`spade_core.app.cli`).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from ..metadata import EnvMetadata, EnvStatus
from ..terminal import escape, print_whole, printable, terminal_json, unwrapped
from . import plugin_report
from .cli import command_config, command_plugins


class ImportStatus(StrEnum):
    """Statuses an import may give (``retired`` makes no sense for new code)."""

    candidate = "candidate"
    admitted = "admitted"


class ExportFormatChoice(StrEnum):
    jsonl = "jsonl"
    parquet = "parquet"
    dir = "dir"


def _console() -> Console:
    # Created per call: CliRunner swaps sys.stdout between invocations.
    return Console(highlight=False, soft_wrap=False)


def _echo_json(value: Any) -> None:
    typer.echo(terminal_json(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


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
        _echo_json([e.summary() for e in entries])
        plugin_report.warn_problems(plugins.problems())
        return
    console = _console()
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
        _echo_json(out)
        return
    console = _console()
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
    console = _console()
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


# --- spade import ---------------------------------------------------------------------


def import_envs(
    ctx: typer.Context,
    path: str = typer.Argument(
        ...,
        metavar="SOURCE",
        help="A .py file, a folder, a .jsonl / .parquet pool, hf:OWNER/NAME[@REVISION] / hf:./FOLDER "
        "(a Hugging Face dataset: docs/hub.md), or harbor:DIR (Harbor tasks spade export --to-harbor wrote: "
        "docs/harbor.md).",
    ),
    domain: str | None = typer.Option(None, "--domain", help="Domain of every item (else the data's 'domain')."),
    skill: str | None = typer.Option(None, "--skill", help="Skill of every item (else the data's, else 'general')."),
    status: ImportStatus | None = typer.Option(
        None,
        "--status",
        help="Status of every item, replacing the data's (admitted: validated first, unless --trust). "
        "Without it an item keeps the status the data records, except that admitted is read as candidate "
        "unless --trust.",
    ),
    new_version: bool = typer.Option(
        False, "--new-version", help="Store code whose id is taken by other code as the next version."
    ),
    trust: bool = typer.Option(
        False,
        "--trust",
        help="With --status admitted: admit without running the validation pipeline; without --status: keep "
        "the statuses the data records (else what any file, folder or hf: dataset records as admitted is read "
        "as a candidate).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the per-item report as JSON."),
) -> None:
    """Import environments; every item is reported, bad items never stop the batch.

    A row's own status is the data's word: what any input records as admitted is read
    as a candidate unless --trust. With --status admitted each item first runs through
    the validation pipeline: only what passes is admitted, the rest is reported with the
    stage and reason (--trust skips this). A .py file without metadata gets the domain
    its code implies (boxed commands or a tool-use base) when one installed domain takes
    that format, and so does a row of a published pool read with hf:."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..errors import SpadeError
    from .catalog import open_store
    from .importer import ImportOptions, ImportOutcome, import_items, read_items

    config = command_config(ctx)
    plugins = command_plugins(ctx)
    if path.startswith("hf:"):
        from .hub import parse_hub_ref, read_hub_items

        # The whole dataset is read and checked before anything is stored.
        items = read_hub_items(parse_hub_ref(path))
    elif path.startswith("harbor:"):
        from .harbor import harbor_path, read_harbor_items

        items = read_harbor_items(harbor_path(path))
    else:
        items = list(read_items(Path(path)))
    by_format: dict[str, list[str]] = {}
    for name, d in plugins.domains().items():
        by_format.setdefault(d.action_format.value, []).append(name)
    options = ImportOptions(
        domain=domain,
        skill=skill,
        status=EnvStatus(status.value) if status else None,
        trust=trust,
        format_domains={fmt: names[0] for fmt, names in by_format.items() if len(names) == 1},
    )
    validator = None
    if options.status is EnvStatus.admitted and not trust:
        validator = plugins.pm.hook.spade_admission_validator(config=config)
        if validator is None:
            raise SpadeError(
                "--status admitted validates every item, and no installed plugin provides the validation "
                "pipeline (install spade-designer), or pass --trust to admit without validation"
            )
    err_console = Console(stderr=True)
    progress = Progress(
        TextColumn("validating and importing" if validator else "importing"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=err_console, transient=True,
    )
    try:
        with open_store(config) as store, progress:
            task = progress.add_task("import", total=len(items))

            def advance(_: ImportOutcome) -> None:
                progress.advance(task)

            report = import_items(store, items, options, new_version=new_version, on_item=advance, validator=validator)
    finally:
        if validator is not None:
            validator.close()
    if as_json:
        _echo_json([o.to_json() for o in report.outcomes])
    else:
        _print_import_report(report, str(path))
    if not report.ok:
        raise typer.Exit(1)


def _print_import_report(report: Any, origin: str) -> None:
    console = _console()
    rows = report.outcomes
    big = len(rows) > 100
    table = Table(title=f"import of {escape(origin)}", title_justify="left")
    for col in ("item", "outcome", "environment", "details"):
        table.add_column(col, overflow="fold")
    colours = {"imported": "green", "unchanged": "cyan", "failed": "red", "rejected": "red"}
    bad = ("failed", "rejected")
    for o in rows:
        if big and o.outcome not in bad:
            continue
        details = o.reason or "; ".join(o.notes)
        if o.outcome == "rejected":
            details = f"{o.stage}: {details}"
        table.add_row(escape(o.origin), f"[{colours[o.outcome]}]{o.outcome}[/]", escape(o.env_id or "-"), escape(details))
    if rows and (not big or any(report.count(b) for b in bad)):
        print_whole(console, table)
    rejected = f", {report.count('rejected')} rejected by validation" if report.count("rejected") else ""
    console.print(
        f"{report.count('imported')} imported, {report.count('unchanged')} unchanged, "
        f"{report.count('failed')} failed{rejected}" + (" (only failures listed; --json lists all)" if big else "")
    )


# --- spade export ---------------------------------------------------------------------


def export(
    ctx: typer.Context,
    path: Path | None = typer.Argument(None, help="Target file (.jsonl, .parquet) or folder (or use --to-hub)."),
    fmt: ExportFormatChoice | None = typer.Option(None, "--format", help="jsonl, parquet or dir (default: from PATH)."),
    domain: str | None = typer.Option(None, "--domain"),
    skill: str | None = typer.Option(None, "--skill"),
    status: EnvStatus | None = typer.Option(None, "--status"),
    force: bool = typer.Option(False, "--force", help="Replace an existing file / write into a non-empty folder."),
    to_hub: str | None = typer.Option(
        None,
        "--to-hub",
        metavar="REPO",
        help="A Hugging Face dataset: upload to OWNER/NAME, or write the same layout to ./FOLDER (docs/hub.md).",
    ),
    include_seeds: bool = typer.Option(
        False, "--include-seeds", help="With --to-hub: add the installed plugins' seed environments (split 'seeds')."
    ),
    private: bool = typer.Option(False, "--private", help="With --to-hub OWNER/NAME: create the dataset private."),
    message: str | None = typer.Option(None, "--message", help="With --to-hub OWNER/NAME: the commit message."),
    to_harbor: Path | None = typer.Option(
        None, "--to-harbor", metavar="DIR", help="One Harbor task per environment under DIR (docs/harbor.md)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="With --to-harbor: the episode seed of every task (default 0)."),
    to_atif: Path | None = typer.Option(
        None, "--to-atif", metavar="DIR", help="With --run: one ATIF trajectory per recorded episode under DIR."
    ),
    run: Path | None = typer.Option(
        None, "--run", metavar="RUN", help="With --to-atif: a run folder (its transcripts.jsonl) or a task's episode file."
    ),
) -> None:
    """Export store environments in a format `spade import` reads back (or episodes as ATIF)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from ..errors import SpadeError
    from .catalog import open_store
    from .exporter import export_envs, iter_envs

    config = command_config(ctx)
    if (to_atif is None) != (run is None):
        raise SpadeError("--to-atif DIR and --run RUN go together")
    targets = [t for t in (path, to_hub, to_harbor, to_atif) if t is not None]
    if len(targets) > 1:
        raise SpadeError("export writes one target: PATH, --to-hub REPO, --to-harbor DIR or --to-atif DIR")
    if seed is not None and to_harbor is None:
        raise SpadeError("--seed applies to --to-harbor only")
    if (to_harbor is not None or to_atif is not None) and (fmt is not None or include_seeds or private or message):
        raise SpadeError("--format, --include-seeds, --private and --message do not apply to --to-harbor or --to-atif")
    if to_atif is not None and run is not None:
        from .harbor import export_atif

        n = export_atif(run, to_atif, overwrite=force)
        _console().print(f"exported {n} ATIF trajectories to {escape(str(to_atif))}")
        return
    if to_harbor is not None:
        _export_to_harbor(ctx, to_harbor, domain, skill, status, force, seed or 0)
        return
    if to_hub is not None:
        if path is not None or fmt is not None:
            raise SpadeError("--to-hub writes its own layout: give either PATH [--format] or --to-hub REPO")
        _export_to_hub(ctx, to_hub, domain, skill, status, force, include_seeds, private, message)
        return
    if path is None:
        raise SpadeError(
            "export needs a target: PATH (a .jsonl / .parquet file or a folder), --to-hub REPO, --to-harbor DIR "
            "or --to-atif DIR --run RUN"
        )
    if include_seeds or private or message is not None:
        raise SpadeError("--include-seeds, --private and --message apply to --to-hub only")
    progress = Progress(SpinnerColumn(), TextColumn("exported {task.completed}"), console=Console(stderr=True), transient=True)
    with open_store(config, read_only=True) as store, progress:
        task = progress.add_task("export", total=None)
        n = export_envs(
            iter_envs(store, domain=domain, skill=skill, status=status),
            path,
            fmt.value if fmt else None,
            overwrite=force,
            on_item=lambda _m: progress.advance(task),
        )
    _console().print(f"exported {n} environments to {escape(str(path))}")


def _export_to_hub(
    ctx: typer.Context,
    to_hub: str,
    domain: str | None,
    skill: str | None,
    status: EnvStatus | None,
    force: bool,
    include_seeds: bool,
    private: bool,
    message: str | None,
) -> None:
    from ..errors import SpadeError
    from ..metadata import code_hash
    from .catalog import open_store, seed_entries
    from .exporter import iter_envs
    from .hub import export_target, export_to_hub

    target = export_target(to_hub)
    if target.path is not None and (private or message is not None):
        raise SpadeError("--private and --message apply to an upload (--to-hub OWNER/NAME), not to a folder")
    seeds = None
    if include_seeds:
        seeds = []
        for e in seed_entries(command_plugins(ctx), domain=domain, skill=skill, status=status):
            if e.seed is not None:
                source = e.seed.source()
                seeds.append((source, e.metadata.model_copy(update={"code_hash": code_hash(source)})))
    with open_store(command_config(ctx), read_only=True) as store:
        done = export_to_hub(
            iter_envs(store, domain=domain, skill=skill, status=status),
            target,
            seeds=seeds,
            overwrite=force,
            private=private,
            message=message,
        )
    counts = ", ".join(f"{n} in {split}" for split, n in done.counts.items())
    where = done.url or str(done.folder)
    _console().print(f"exported {sum(done.counts.values())} environments ({counts}) to {escape(where)}")


def _export_to_harbor(
    ctx: typer.Context, target: Path, domain: str | None, skill: str | None, status: EnvStatus | None, force: bool, seed: int
) -> None:
    from .catalog import open_store
    from .exporter import iter_envs
    from .harbor import TaskRuntime, export_harbor

    runtime = TaskRuntime.from_plugins(command_plugins(ctx))
    with open_store(command_config(ctx), read_only=True) as store:
        n = export_harbor(iter_envs(store, domain=domain, skill=skill, status=status), target, runtime, seed=seed, overwrite=force)
    _console().print(f"exported {n} environments as Harbor tasks to {escape(str(target))}")


def register(cli: typer.Typer) -> None:
    """Add the core commands to ``cli`` (called by the built-in plugin)."""
    cli.command("list")(list_envs)
    cli.command("show")(show)
    cli.command("play")(play)
    cli.command("import")(import_envs)
    cli.command("export")(export)
    cli.command("plugins")(plugin_report.plugins)
