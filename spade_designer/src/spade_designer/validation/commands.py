"""``spade validate`` and ``spade fuzz``: the pipeline from the command line.

``TARGET`` is a path to an environment source file, the id or name of a seed environment
of an installed domain (as ``spade show`` and ``spade play`` take it), or the id/name of
an environment in the store. Validating a stored environment records the report with its
metadata, a seed's is recorded by code hash under ``SPADE_HOME`` (``spade show`` reads
both); a seed's domain applies to it unless ``--domain`` says otherwise, and a file that
imports a domain's helper module gets that domain
(:func:`spade_core.domains.domain_for_source`). ``spade validate --seeds`` validates every
seed of every installed plugin (``--domain``: of one) with the same stages, and also fails
on what ``spade plugins --check`` reports: a plugin's CI runs it.
Configuration comes from the ``[validation]`` table of ``spade.toml`` (``spade -c FILE``).
Exit status: 0 passed, 1 rejected, 2 usage or store errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

if TYPE_CHECKING:
    from spade_core.domains import Domain
    from spade_core.store import EnvStore

import typer
from rich.console import Console
from spade_core.metadata import EnvMetadata, ValidationReport, code_hash
from spade_core.terminal import terminal_json

from .config import ValidationConfig
from .errors import ValidationInputError
from .render import print_report

TargetArg = Annotated[str, typer.Argument(help="environment source file, seed id, or id/name of a stored environment")]
OptionalTargetArg = Annotated[
    str | None, typer.Argument(help="environment source file, seed id, or id/name of a stored environment")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the report as JSON (the ValidationReport model)")]
DomainOpt = Annotated[str | None, typer.Option("--domain", help="domain plugin whose fuzz strategy and modules apply")]
SeedOpt = Annotated[
    int | None,
    typer.Option("--seed", help="seed of the fuzz examples and of the load/contract episodes (default: the configuration's)"),
]


@dataclass(frozen=True)
class Loaded:
    """What a command validates: the source, its metadata (a seed's or the store's), the
    store it came from (to record the report), a seed's domain, the validation config."""

    source: str
    metadata: EnvMetadata | None
    store: EnvStore | None
    domain: Domain | None
    config: ValidationConfig


def _load(ctx: typer.Context, target: str, seed: int | None = None) -> Loaded:
    """Source, metadata, store (for a stored environment), seed domain and validation
    config of a path, a seed id or a store id."""
    from spade_core.app.cli import command_config, command_plugins

    spade_config = command_config(ctx)
    vconfig = ValidationConfig.from_section(spade_config.section("validation"), seed=seed)
    path = Path(target)
    if path.suffix == ".py" or path.is_file():
        if not path.is_file():
            raise ValidationInputError(f"{target}: no such file")
        try:
            return Loaded(path.read_text(encoding="utf-8"), None, None, None, vconfig)
        except UnicodeDecodeError as exc:
            raise ValidationInputError(f"{target}: not UTF-8 text ({exc.reason})") from None
    from spade_core.app.catalog import open_store, resolve

    with open_store(spade_config, read_only=True) as lookup:
        entry = resolve(target, command_plugins(ctx), lookup)
        if entry.kind == "seed":
            return Loaded(entry.source(), entry.metadata, None, entry.domain, vconfig)
    from spade_core.store import EnvStore

    store = EnvStore.open(spade_config)
    try:
        meta = store.resolve(entry.metadata.id)
        source = store.get_source(meta.id)
    except Exception:
        store.close()
        raise
    return Loaded(source, meta, store, None, vconfig)


def _emit(report: ValidationReport, title: str, as_json: bool) -> None:
    if as_json:
        typer.echo(terminal_json(report.model_dump_json(indent=2)))
    else:
        print_report(report, title=title, console=Console(highlight=False))
    raise typer.Exit(0 if report.passed else 1)


def validate_command(
    ctx: typer.Context,
    target: OptionalTargetArg = None,
    as_json: JsonOpt = False,
    hint: Annotated[str | None, typer.Option("--hint", help="privileged hint to check for leakage")] = None,
    domain: DomainOpt = None,
    seed: SeedOpt = None,
    seeds: Annotated[
        bool, typer.Option("--seeds", help="validate every seed of every installed plugin (--domain: of one domain)")
    ] = False,
) -> None:
    """Run every validation stage on an environment and print the report."""
    from .pipeline import Validator

    if seeds:
        if target is not None or hint is not None:
            raise ValidationInputError("--seeds validates every installed seed: give no TARGET and no --hint")
        _validate_seeds(ctx, domain, seed, as_json)
        return
    if target is None:
        raise ValidationInputError("give an environment to validate (TARGET), or --seeds")
    got = _load(ctx, target, seed)
    store, meta = got.store, got.metadata
    try:
        from spade_core.app.cli import command_config
        from spade_sandbox.launcher import SandboxLauncher

        with Validator(config=got.config, launcher=SandboxLauncher.from_config(command_config(ctx))) as validator:
            report = validator.validate(
                got.source, metadata=meta, domain=domain or got.domain, hint=hint, store=store
            )
        if store is not None and meta is not None:
            store.set_validation(meta.id, report)
        elif got.domain is not None and meta is not None:  # a seed: recorded by its code hash
            from spade_core.app.catalog import save_seed_report

            save_seed_report(meta.code_hash, report)
    finally:
        if store is not None:
            store.close()
    _emit(report, meta.id if meta else target, as_json)


def _validate_seeds(ctx: typer.Context, domain: str | None, seed: int | None, as_json: bool) -> None:
    """``spade validate --seeds``: every seed of the installed plugins (of ``domain``),
    each report recorded for ``spade show``; exit 1 when one is rejected or a plugin has a
    problem (``spade plugins --check``)."""
    import json

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table
    from spade_core.app.catalog import save_seed_report, seed_entries
    from spade_core.app.cli import command_config, command_plugins
    from spade_core.app.plugin_report import warn_problems
    from spade_core.terminal import escape, print_whole
    from spade_sandbox.launcher import SandboxLauncher

    from .pipeline import Validator

    spade_config = command_config(ctx)
    plugins = command_plugins(ctx)
    if domain is not None:
        plugins.domain(domain)  # an unknown domain is named, with the known ones
    vconfig = ValidationConfig.from_section(spade_config.section("validation"), seed=seed)
    entries = seed_entries(plugins, domain=domain)
    problems = [p for p in plugins.problems() if domain is None or p.domain == domain]
    rows = []
    progress = Progress(TextColumn("validating seeds"), BarColumn(), MofNCompleteColumn(),
                        console=Console(stderr=True), transient=True)
    with Validator(config=vconfig, launcher=SandboxLauncher.from_config(spade_config)) as validator, progress:
        task = progress.add_task("seeds", total=len(entries))
        for entry in entries:
            source = entry.source()
            meta = entry.metadata.model_copy(update={"code_hash": code_hash(source)})
            report = validator.validate(source, metadata=meta, domain=entry.domain)
            save_seed_report(meta.code_hash, report)
            rows.append((meta.id, meta.domain, report))
            progress.advance(task)
    rejected = [r for r in rows if not r[2].passed]
    if as_json:
        typer.echo(terminal_json(json.dumps({
            "seeds": [{"id": i, "domain": d, "report": r.model_dump(mode="json")} for i, d, r in rows],
            "problems": [p.to_json() for p in problems],
        }, indent=2)))
    else:
        table = Table(title=f"{len(rows)} seeds validated: {len(rows) - len(rejected)} passed, {len(rejected)} rejected",
                      title_justify="left")
        for col in ("seed", "domain", "verdict", "stage", "reason", "ms"):
            table.add_column(col, justify="right" if col == "ms" else "left", overflow="fold")
        for env_id, dom, report in rows:
            verdict = "[green]passed[/]" if report.passed else "[red]rejected[/]"
            reason = "" if report.passed else (report.reasons[0] if report.reasons else "")
            table.add_row(escape(env_id), escape(dom), verdict, escape(report.failed_stage or ""), escape(reason),
                          f"{1000 * sum(report.timings.values()):.0f}")
        print_whole(Console(highlight=False), table)
        warn_problems(problems)
    raise typer.Exit(1 if rejected or problems else 0)


def fuzz_command(
    ctx: typer.Context,
    target: TargetArg,
    examples: Annotated[int, typer.Option("--examples", "-n", min=1, help="Hypothesis examples (episodes)")] = 200,
    as_json: JsonOpt = False,
    domain: DomainOpt = None,
    seed: SeedOpt = None,
) -> None:
    """Property-fuzz an environment (static, load and fuzz stages) and print the report."""
    from .pipeline import fuzz

    got = _load(ctx, target, seed)
    if got.store is not None:
        got.store.close()
    meta = got.metadata
    from spade_core.app.cli import command_config
    from spade_sandbox.launcher import SandboxLauncher

    launcher = SandboxLauncher.from_config(command_config(ctx))
    report = fuzz(
        got.source, examples=examples, domain=domain or got.domain, metadata=meta, config=got.config, launcher=launcher
    )
    _emit(report, f"fuzz {meta.id if meta else target}", as_json)


def register(cli: typer.Typer) -> None:
    cli.command("validate")(validate_command)
    cli.command("fuzz")(fuzz_command)
