"""The ``spade selfplay`` and ``spade report`` commands (imported only when the CLI is built)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

_PRESET_HELP = (
    "Preset; repeat it to lay ablations on a base (--preset tiny --preset baseline, or tiny+baseline). "
    "Bases: gpu, quickstart, tiny. Ablations: baseline (fixed pool, no designer), learning_potential, "
    "no_corpus, no_designer_training, no_memory, solve_rate_reward (docs/trainer.md, Presets)."
)


def register(cli: typer.Typer) -> None:
    """Add ``selfplay`` and ``report`` to the ``spade`` CLI."""

    @cli.command("selfplay")
    def selfplay(
        ctx: typer.Context,
        preset: Annotated[Optional[list[str]], typer.Option(metavar="PRESET", help=_PRESET_HELP)] = None,  # noqa: UP045
        config: Annotated[Optional[Path], typer.Option("--config", "-c", help="TOML file with a [selfplay] table.")] = None,  # noqa: UP045
        set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override, e.g. --set iterations=5.")] = None,  # noqa: UP045
        run_dir: Annotated[Optional[Path], typer.Option(help="Run folder (overrides run_dir).")] = None,  # noqa: UP045
        iterations: Annotated[Optional[int], typer.Option(help="Total iterations (overrides).")] = None,  # noqa: UP045
        resume: Annotated[bool, typer.Option(help="Continue from the run folder's latest checkpoint.")] = False,
        check: Annotated[bool, typer.Option(
            "--check", help="Validate the configuration and this machine for it, print what would run, and exit "
                            "(nothing is loaded or trained; exit code 3 when the machine lacks something).")] = False,
    ) -> None:
        """Run self-play: the shared policy designs environments and learns to solve them."""
        import os

        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from rich.console import Console

        from .config import load_selfplay_config

        overrides = list(set_ or [])
        if run_dir is not None:
            overrides.append(f'run_dir="{run_dir}"')
        if iterations is not None:
            overrides.append(f"iterations={iterations}")
        cfg = load_selfplay_config(preset=preset, path=config, overrides=overrides)
        console = Console()
        if check:  # before anything changes this process's state
            _check(cfg, console, "+".join(preset or []) or None)
            return
        from spade_designer.llm.transformers_backend import use_flush_denormal_for_process

        use_flush_denormal_for_process()  # this process is ours: CPU training/generation at full speed
        from .selfplay import SelfPlayRun

        preset_label = "+".join(preset or []) or None
        console.print(f"[bold]spade selfplay[/] preset={preset_label or '-'} run_dir={cfg.run_dir} iterations={cfg.iterations}")
        # One configuration for the whole run, loaded here: the [spade], [validation] and
        # [designer]-level tables of the file given to --config (else the global --config,
        # ./spade.toml or SPADE_HOME's), handed to every stage instead of each looking it up.
        from spade_core.cli import command_config
        from spade_core.config import load_config

        spade_config = load_config(config) if config is not None else command_config(ctx)
        run = SelfPlayRun(cfg, console=console, spade_config=spade_config)
        records = run.run(resume=resume)
        console.print(f"[green]done:[/] {len(records)} iterations; metrics in {cfg.run_dir / 'metrics.jsonl'}; "
                      f"`spade report {cfg.run_dir}` for plots")

    @cli.command("report")
    def report(
        run_dir: Annotated[Path, typer.Argument(help="A self-play run folder.")],
        out: Annotated[Optional[Path], typer.Option(help="Output folder (default RUN_DIR/report).")] = None,  # noqa: UP045
    ) -> None:
        """Write an HTML report with plots (and PNG files) of a self-play run."""
        from .report import write_report

        page = write_report(run_dir, out)
        typer.echo(f"report: {page}")


def _check(cfg: Any, console: Any, preset: str | None) -> None:
    """``spade selfplay --check``: the plan of the run and what this machine lacks for it."""
    from rich.table import Table
    from spade_core.terminal import escape

    from .plan import machine_problems, plan_run

    plan = plan_run(cfg)
    table = Table(title=f"spade selfplay --check (preset {preset or '-'})", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    for what, value in plan.rows():
        table.add_row(what, escape(value))
    console.print(table)
    problems = machine_problems(cfg)
    if problems:
        for p in problems:
            console.print(f"[red]missing:[/] {escape(p)}", soft_wrap=True)
        raise typer.Exit(3)
    console.print("[green]ready:[/] the configuration is valid and this machine has what it needs")
