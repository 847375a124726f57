"""``spade validate`` and ``spade fuzz``: the pipeline from the command line.

``TARGET`` is a path to an environment source file or the id/name of an environment in
the store. Validating a stored environment records the report with its metadata.
Configuration comes from the ``[validation]`` table of ``spade.toml`` (``spade -c FILE``).
Exit status: 0 passed, 1 rejected, 2 usage or store errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from spade_core.metadata import EnvMetadata, ValidationReport

from .config import ValidationConfig
from .errors import ValidationInputError
from .render import print_report

TargetArg = Annotated[str, typer.Argument(help="environment source file, or id/name of a stored environment")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the report as JSON (the ValidationReport model)")]
DomainOpt = Annotated[str | None, typer.Option("--domain", help="domain plugin whose fuzz strategy and modules apply")]


def _load(ctx: typer.Context, target: str) -> tuple[str, EnvMetadata | None, Any, ValidationConfig]:
    """(source, metadata, store or None, validation config) for a path or a store id."""
    from spade_core.cli import command_config

    spade_config = command_config(ctx)
    vconfig = ValidationConfig.from_section(spade_config.section("validation"))
    path = Path(target)
    if path.suffix == ".py" or path.is_file():
        if not path.is_file():
            raise ValidationInputError(f"{target}: no such file")
        try:
            return path.read_text(encoding="utf-8"), None, None, vconfig
        except UnicodeDecodeError as exc:
            raise ValidationInputError(f"{target}: not UTF-8 text ({exc.reason})") from None
    from spade_core.store import EnvStore

    store = EnvStore.open(spade_config)
    try:
        meta = store.resolve(target)
        source = store.get_source(meta.id)
    except Exception:
        store.close()
        raise
    return source, meta, store, vconfig


def _emit(report: ValidationReport, title: str, as_json: bool) -> None:
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_report(report, title=title, console=Console(highlight=False))
    raise typer.Exit(0 if report.passed else 1)


def validate_command(
    ctx: typer.Context,
    target: TargetArg,
    as_json: JsonOpt = False,
    hint: Annotated[str | None, typer.Option("--hint", help="privileged hint to check for leakage")] = None,
    domain: DomainOpt = None,
) -> None:
    """Run every validation stage on an environment and print the report."""
    from .pipeline import Validator

    source, meta, store, vconfig = _load(ctx, target)
    try:
        with Validator(config=vconfig) as validator:
            report = validator.validate(source, metadata=meta, domain=domain, hint=hint, store=store)
        if store is not None and meta is not None:
            store.set_validation(meta.id, report)
    finally:
        if store is not None:
            store.close()
    _emit(report, meta.id if meta else target, as_json)


def fuzz_command(
    ctx: typer.Context,
    target: TargetArg,
    examples: Annotated[int, typer.Option("--examples", "-n", min=1, help="Hypothesis examples (episodes)")] = 200,
    as_json: JsonOpt = False,
    domain: DomainOpt = None,
) -> None:
    """Property-fuzz an environment (static, load and fuzz stages) and print the report."""
    from .pipeline import fuzz

    source, meta, store, vconfig = _load(ctx, target)
    if store is not None:
        store.close()
    report = fuzz(source, examples=examples, domain=domain, metadata=meta, config=vconfig)
    _emit(report, f"fuzz {meta.id if meta else target}", as_json)


def register(cli: typer.Typer) -> None:
    cli.command("validate")(validate_command)
    cli.command("fuzz")(fuzz_command)
