"""The ``spade selfplay`` and ``spade report`` commands (imported only when the CLI is built)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

_PRESET_HELP = (
    "Preset; repeat it to lay ablations on a base (--preset tiny --preset baseline, or tiny+baseline). "
    "Bases: gpu, learn (the agent alone on one game, measured on held-out instances), quickstart, tiny. "
    "Ablations: baseline (fixed pool, no designer), adaptive (the fixed pool with each environment's knobs "
    "following the agent's success, RLVE-style), learning_potential, no_corpus, no_designer_training, no_memory, "
    "solve_rate_reward, spade (every design a parameter edit of a frontier environment) (docs/trainer.md, Presets)."
)


def register(cli: typer.Typer) -> None:
    """Add ``selfplay`` and ``report`` to the ``spade`` CLI."""

    @cli.command("selfplay")
    def selfplay(
        ctx: typer.Context,
        preset: Annotated[Optional[list[str]], typer.Option("--preset", metavar="PRESET", help=_PRESET_HELP)] = None,  # noqa: UP045
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
        # One configuration for the whole run, loaded and checked here (every table by its
        # owner): the [spade], [validation] and [designer] tables of the file given to
        # --config (else the global --config, ./spade.toml or SPADE_HOME's), handed to every
        # stage instead of each looking it up; [selfplay.designer] is laid over [designer].
        from spade_core.app.cli import command_config, command_plugins
        from spade_core.config import load_config

        spade_config = (command_plugins(ctx).check_config(load_config(config)) if config is not None
                        else command_config(ctx))
        console = Console()
        if check:  # before anything changes this process's state
            _check(cfg, console, "+".join(preset or []) or None, spade_config)
            return
        from .selfplay import SelfPlayRun

        preset_label = "+".join(preset or []) or None
        console.print(f"[bold]spade selfplay[/] preset={preset_label or '-'} run_dir={cfg.run_dir} iterations={cfg.iterations}")
        from .memory import owned_process

        with owned_process():  # this process is ours: CPU training/generation at full speed
            run = SelfPlayRun(cfg, console=console, spade_config=spade_config)
            records = run.run(resume=resume)
        console.print(f"[green]done:[/] {len(records)} iterations; metrics in {cfg.run_dir / 'metrics.jsonl'}; "
                      f"`spade report {cfg.run_dir}` for plots")

    experiment = typer.Typer(help="Experiments that test whether training works.", no_args_is_help=True)
    cli.add_typer(experiment, name="experiment")

    @experiment.command("learn")
    def learn(
        ctx: typer.Context,
        run_dir: Annotated[Path, typer.Option(help="The run folder (learning.json/.md/.png, the run's metrics).")],
        seed: Annotated[Optional[list[int]], typer.Option(  # noqa: UP045
            help="Training seed; repeat it for several (each in RUN_DIR/seed-N, with a summary in RUN_DIR).")] = None,
        env: Annotated[Optional[str], typer.Option(  # noqa: UP045
            help="The environment trained on and measured: a seed or stored id or name, at a knob setting "
                 "(NAME:KNOB=VALUE,...). Default: the preset's (the games domain's higher_lower).")] = None,
        preset: Annotated[str, typer.Option(
            help="The presets run (learn: the agent alone on a fixed pool of the environment; learn+spade: "
                 "the designer edits its knobs).")] = "learn",
        updates: Annotated[Optional[int], typer.Option(help="Policy updates K (self-play iterations).")] = None,  # noqa: UP045
        eval_every: Annotated[Optional[int], typer.Option(help="Evaluate every N updates (and at 0).")] = None,  # noqa: UP045
        episodes: Annotated[Optional[int], typer.Option(help="Held-out instances per evaluation.")] = None,  # noqa: UP045
        lr: Annotated[Optional[float], typer.Option("--lr", help="Learning rate.")] = None,  # noqa: UP045
        control: Annotated[Optional[str], typer.Option(  # noqa: UP045
            help="eval: the learning-rate-0 control at every point; none.")] = None,
        device: Annotated[Optional[str], typer.Option(help="cpu, cuda or cuda:N.")] = None,  # noqa: UP045
        set_: Annotated[Optional[list[str]], typer.Option("--set", help="Any other key of the run, key.path=value.")] = None,  # noqa: UP045
        record: Annotated[bool, typer.Option(
            help="Record the verdict with the environment in the configured store (spade show, GET /envs/ID).")]
        = True,
    ) -> None:
        """How learnable an environment is: untrained held-out success, the best constant policy and
        the curve after K updates against a learning-rate-0 control, with a verdict (learnable,
        no_signal, gameable, not_learned). A self-play run of the learn preset."""
        from .experiments import ExperimentSpec

        specs = [ExperimentSpec(run_dir, n, preset, env, updates, eval_every, episodes, lr, control, device,
                                overrides=tuple(set_ or [])) for n in (seed or [0])]
        _run_experiments(ctx, run_dir, specs, record=record)

    @experiment.command("curriculum")
    def curriculum_cmd(
        ctx: typer.Context,
        run_dir: Annotated[Path, typer.Option(help="The run folder (RUN_DIR/seed-N for several seeds).")],
        arm: Annotated[str, typer.Option(
            help="fixed: the target itself (preset learn); spade: the designer edits the pool's knobs "
                 "(learn+spade); adaptive: the knobs follow the agent's success by a fixed rule (learn+adaptive).")]
        = "fixed",
        target: Annotated[str, typer.Option(
            help="The environment whose held-out success is the outcome, and the pool the run starts from.")]
        = "higher_lower",
        seed: Annotated[Optional[list[int]], typer.Option(help="Training seed; repeat it for several.")] = None,  # noqa: UP045
        updates: Annotated[Optional[int], typer.Option(help="Policy updates (iterations).")] = None,  # noqa: UP045
        eval_every: Annotated[Optional[int], typer.Option(help="Evaluate every N updates (and at 0).")] = None,  # noqa: UP045
        episodes: Annotated[Optional[int], typer.Option(help="Held-out instances per evaluation.")] = None,  # noqa: UP045
        control: Annotated[str, typer.Option(help="eval or none (the fixed arm is the comparison).")] = "none",
        set_: Annotated[Optional[list[str]], typer.Option("--set", help="Any other key of the run.")] = None,  # noqa: UP045
    ) -> None:
        """SPADE against the fixed pool: one arm, its held-out success on the target over updates."""
        from .experiments import ARMS, ExperimentSpec

        if arm not in ARMS:
            raise typer.BadParameter(f"--arm must be one of {', '.join(ARMS)}, got {arm!r}")
        specs = [ExperimentSpec(run_dir, n, ARMS[arm], target, updates, eval_every, episodes, None, control, None,
                                label=arm, overrides=tuple(set_ or [])) for n in (seed or [0])]
        _run_experiments(ctx, run_dir, specs, record=False)

    @experiment.command("summary")
    def summary_cmd(
        run_dirs: Annotated[list[Path], typer.Argument(help="Run folders holding learning.json.")],
        out: Annotated[Path, typer.Option(help="Where summary.md / .png / .json go.")],
    ) -> None:
        """One table and plot of several runs' curves (seeds; arms side by side, each against fixed)."""
        from .learning_report import summarise

        result = summarise(run_dirs, out)
        typer.echo(f"learned in {result['learned']} of {result['runs']} runs: {out / 'summary.md'}")

    @cli.command("report")
    def report(
        run_dir: Annotated[Path, typer.Argument(help="A self-play run folder.")],
        out: Annotated[Optional[Path], typer.Option(help="Output folder (default RUN_DIR/report).")] = None,  # noqa: UP045
    ) -> None:
        """Write an HTML report with plots (and PNG files) of a self-play run."""
        from .report import write_report

        page = write_report(run_dir, out)
        typer.echo(f"report: {page}")


def _run_experiments(ctx: typer.Context, run_dir: Path, specs: list[Any], *, record: bool) -> None:
    """Run each experiment spec (one seed each) and summarise several."""
    from dataclasses import replace

    from rich.console import Console
    from spade_core.app.cli import command_config, command_plugins

    from .experiments import experiment_config, record_learnability, run_experiment
    from .learning_report import summarise
    from .memory import owned_process

    console = Console()
    spade_config, plugins = command_config(ctx), command_plugins(ctx)
    several = len(specs) > 1
    specs = [replace(s, run_dir=run_dir / f"seed-{s.seed}") if several else s for s in specs]
    configs = [experiment_config(s, plugins, spade_config) for s in specs]  # every seed's settings checked first
    for spec, cfg in zip(specs, configs, strict=True):
        with owned_process(offline=True):
            data = run_experiment(cfg, spade_config, plugins, console)
        v = data.get("verdict") or {}
        console.print(f"seed {spec.seed}: {v.get('learnability', '-')} (rose {v.get('rose')}, above constant "
                      f"{v.get('above_constant')}, control rose {v.get('control_rose')}); "
                      f"{cfg.run_dir / 'learning.md'}, {cfg.run_dir / 'learning.png'}")
        if record:
            meta = record_learnability(data, cfg.run_dir, plugins, spade_config)
            console.print(f"recorded with {meta.id} in the configured store (spade show {meta.id})")
    if several:
        summary = summarise([s.run_dir for s in specs], run_dir)
        console.print(f"learned in {summary['learned']} of {summary['runs']} runs: {run_dir / 'summary.md'}")


def _check(cfg: Any, console: Any, preset: str | None, spade_config: Any = None) -> None:
    """``spade selfplay --check``: the plan of the run and what this machine lacks for it."""
    from rich.table import Table
    from spade_core.terminal import escape

    from .plan import machine_problems, plan_run

    plan = plan_run(cfg, spade_config=spade_config)
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
