"""SPADE core's ``spade import`` and ``spade export`` commands (registered with the others by
:func:`spade_core.app.commands.register`): a pool read into the store through
:mod:`.importer`, the store written out through :mod:`.exporter`, to the Hub (:mod:`.hub`)
or as Harbor tasks (:mod:`.harbor`)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from ..metadata import EnvStatus
from ..terminal import escape, print_whole
from .cli import command_config, command_console, command_plugins, echo_json


class ImportStatus(StrEnum):
    """Statuses an import may give (``retired`` makes no sense for new code)."""

    candidate = "candidate"
    admitted = "admitted"


class ExportFormatChoice(StrEnum):
    jsonl = "jsonl"
    parquet = "parquet"
    dir = "dir"


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
        from .harbor_import import harbor_path, read_harbor_items

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
        echo_json([o.to_json() for o in report.outcomes])
    else:
        _print_import_report(report, str(path))
    if not report.ok:
        raise typer.Exit(1)


def _print_import_report(report: Any, origin: str) -> None:
    console = command_console()
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
        command_console().print(f"exported {n} ATIF trajectories to {escape(str(to_atif))}")
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
    command_console().print(f"exported {n} environments to {escape(str(path))}")


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
    command_console().print(f"exported {sum(done.counts.values())} environments ({counts}) to {escape(where)}")


def _export_to_harbor(
    ctx: typer.Context, target: Path, domain: str | None, skill: str | None, status: EnvStatus | None, force: bool, seed: int
) -> None:
    from .catalog import open_store
    from .exporter import iter_envs
    from .harbor import TaskRuntime, export_harbor

    runtime = TaskRuntime.from_plugins(command_plugins(ctx))
    with open_store(command_config(ctx), read_only=True) as store:
        n = export_harbor(iter_envs(store, domain=domain, skill=skill, status=status), target, runtime, seed=seed, overwrite=force)
    command_console().print(f"exported {n} environments as Harbor tasks to {escape(str(target))}")
