"""The ``spade selfplay`` and ``spade report`` commands (imported only when the CLI is built)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(cli: typer.Typer) -> None:
    """Add ``selfplay`` and ``report`` to the ``spade`` CLI."""

    @cli.command("selfplay")
    def selfplay(
        preset: Annotated[Optional[str], typer.Option(help="Preset: quickstart, tiny, gpu.")] = None,  # noqa: UP045
        config: Annotated[Optional[Path], typer.Option("--config", "-c", help="TOML file with a [selfplay] table.")] = None,  # noqa: UP045
        set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override, e.g. --set iterations=5.")] = None,  # noqa: UP045
        run_dir: Annotated[Optional[Path], typer.Option(help="Run folder (overrides run_dir).")] = None,  # noqa: UP045
        iterations: Annotated[Optional[int], typer.Option(help="Total iterations (overrides).")] = None,  # noqa: UP045
        resume: Annotated[bool, typer.Option(help="Continue from the run folder's latest checkpoint.")] = False,
    ) -> None:
        """Run self-play: the shared policy designs environments and learns to solve them."""
        import os

        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from rich.console import Console
        from spade_designer.llm.transformers_backend import use_flush_denormal_for_process

        from .config import load_selfplay_config

        use_flush_denormal_for_process()  # this process is ours: CPU training/generation at full speed
        from .selfplay import SelfPlayRun

        overrides = list(set_ or [])
        if run_dir is not None:
            overrides.append(f'run_dir="{run_dir}"')
        if iterations is not None:
            overrides.append(f"iterations={iterations}")
        cfg = load_selfplay_config(preset=preset, path=config, overrides=overrides)
        console = Console()
        console.print(f"[bold]spade selfplay[/] preset={preset or '-'} run_dir={cfg.run_dir} iterations={cfg.iterations}")
        run = SelfPlayRun(cfg, console=console)
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
