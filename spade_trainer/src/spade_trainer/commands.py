"""The ``spade selfplay`` and ``spade report`` commands (imported only when the CLI is built)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .experiment_settings import CurriculumSettings, format_levels, parse_levels
from .experiment_settings import LearnSettings as _Learn

_PRESET_HELP = (
    "Preset; repeat it to lay ablations on a base (--preset tiny --preset baseline, or tiny+baseline). "
    "Bases: gpu, quickstart, tiny. Ablations: baseline (fixed pool, no designer), adaptive (the fixed pool "
    "with each environment's knobs following the agent's success, RLVE-style), learning_potential, "
    "no_corpus, no_designer_training, no_memory, solve_rate_reward (docs/trainer.md, Presets)."
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
        from spade_designer.llm.transformers_backend import use_flush_denormal_for_process

        use_flush_denormal_for_process()  # this process is ours: CPU training/generation at full speed
        from .selfplay import SelfPlayRun

        preset_label = "+".join(preset or []) or None
        console.print(f"[bold]spade selfplay[/] preset={preset_label or '-'} run_dir={cfg.run_dir} iterations={cfg.iterations}")
        run = SelfPlayRun(cfg, console=console, spade_config=spade_config)
        records = run.run(resume=resume)
        console.print(f"[green]done:[/] {len(records)} iterations; metrics in {cfg.run_dir / 'metrics.jsonl'}; "
                      f"`spade report {cfg.run_dir}` for plots")

    experiment = typer.Typer(help="Experiments that test whether training works.", no_args_is_help=True)
    cli.add_typer(experiment, name="experiment")

    @experiment.command("learn")
    def learn(
        run_dir: Annotated[Path, typer.Option(help="Where learning.json, learning.md, learning.png and the log go.")],
        seed: Annotated[Optional[list[int]], typer.Option(  # noqa: UP045
            help="Training seed; repeat it for several (each in RUN_DIR/seed-N, with a summary in RUN_DIR).")] = None,
        updates: Annotated[int, typer.Option(help="Policy updates per curve.")] = _Learn.updates,
        eval_every: Annotated[int, typer.Option(help="Evaluate every N updates.")] = _Learn.eval_every,
        groups: Annotated[int, typer.Option(help="GRPO groups per update.")] = _Learn.groups,
        group_size: Annotated[int, typer.Option(help="Plays per group.")] = _Learn.group_size,
        group_instance: Annotated[str, typer.Option(
            help="fresh: every play its own instance (the paper's); shared: a group plays one instance.")] = _Learn.group_instance,
        eval_episodes: Annotated[int, typer.Option(help="Held-out episodes per evaluation.")] = _Learn.eval_episodes,
        lr: Annotated[float, typer.Option("--lr", help="Learning rate of the trained curve.")] = _Learn.learning_rate,
        prefill: Annotated[str, typer.Option(help="Text each reply starts with (not trained).")] = _Learn.prefill,
        cut_at_action: Annotated[bool, typer.Option(help="End each reply at its action's closing brace.")] = _Learn.cut_at_action,
        control: Annotated[str, typer.Option(
            help="The learning-rate-0 control: eval (the initial weights evaluated at every point), "
                 "full (also played and updated at lr 0) or none.")] = _Learn.control,
        candidates: Annotated[int, typer.Option(help="The rung's CANDIDATES knob.")] = _Learn.candidates,
        guesses: Annotated[int, typer.Option(help="The rung's GUESSES knob.")] = _Learn.guesses,
        trainer: Annotated[str, typer.Option(
            help="Who makes the trained curve's updates: spade (the project's GRPO step) or trl "
                 "(TRL's GRPOTrainer, with a rollout function that plays the rung).")] = _Learn.trainer,
        device: Annotated[str, typer.Option(
            help="cpu, cuda or cuda:N: where the model is sampled and trained (float32 on every device).")] = _Learn.device,
    ) -> None:
        """Train the embedded model (agent only) on the games domain's bottom rung and measure
        held-out success against a learning-rate-0 control and the best constant policy."""
        _experiment_process()
        from rich.console import Console

        from .experiment import LearningExperiment, LearnSettings, summarise

        console = Console()
        seeds = list(seed or [0])
        run_dir.mkdir(parents=True, exist_ok=True)
        model = tokenizer = None
        dirs = []
        for n in seeds:
            settings = LearnSettings(seed=n, updates=updates, eval_every=eval_every, groups=groups,
                                     group_size=group_size, group_instance=group_instance,  # type: ignore[arg-type]
                                     eval_episodes=eval_episodes, learning_rate=lr, prefill=prefill,
                                     cut_at_action=cut_at_action, control=control,  # type: ignore[arg-type]
                                     candidates=candidates,
                                     guesses=guesses, trainer=trainer, device=device)  # type: ignore[arg-type]
            out = run_dir if len(seeds) == 1 else run_dir / f"seed-{n}"
            out.mkdir(parents=True, exist_ok=True)
            log_file = (out / "learning.log").open("w", encoding="utf-8")

            def log(line: str, _f: Any = log_file) -> None:
                console.log(line, markup=False, highlight=False)
                _f.write(line + "\n")
                _f.flush()

            exp = LearningExperiment(settings, out, model=model, tokenizer=tokenizer, log=log)
            if settings.trainer == "trl":
                from .experiment_trl import run_learning

                result = run_learning(exp)
            else:
                result = exp.run()
            model, tokenizer = exp._model, exp._tokenizer  # one load for every seed
            log_file.close()
            dirs.append(out)
            v = result["verdict"]
            console.print(f"seed {n}: rose {v['rose']}, above constant {v['above_constant']}, "
                          f"control rose {v.get('control_rose')}; {out / 'learning.md'}, {out / 'learning.png'}")
        if len(seeds) > 1:
            summary = summarise(dirs, run_dir)
            console.print(f"learned in {summary['learned']} of {summary['runs']} runs: {run_dir / 'summary.md'}")

    @experiment.command("summary")
    def summary_cmd(
        run_dirs: Annotated[list[Path], typer.Argument(help="Experiment folders holding learning.json.")],
        out: Annotated[Path, typer.Option(help="Where summary.md / .png / .json go.")],
    ) -> None:
        """One table and plot of several learning experiments (seeds, or trainers: the legend
        names the trainer when the runs mix them)."""
        from .experiment import summarise

        result = summarise(run_dirs, out)
        typer.echo(f"learned in {result['learned']} of {result['runs']} runs: {out / 'summary.md'}")

    @experiment.command("curriculum")
    def curriculum_cmd(
        run_dir: Annotated[Path, typer.Option(help="Where curriculum.json / .md / .png and the log go.")],
        arm: Annotated[str, typer.Option(
            help="fixed: the rung at its default knobs; spade: the same model designs children of the frontier "
                 "by parameter edits under the designer reward; adaptive: the rung's knobs follow the agent's "
                 "measured success by a fixed rule (RLVE-style, no designer).")] = CurriculumSettings.arm,
        seed: Annotated[Optional[list[int]], typer.Option(  # noqa: UP045
            help="Training seed; repeat it for several (each in RUN_DIR/seed-N, with a summary in RUN_DIR).")] = None,
        updates: Annotated[int, typer.Option(help="Policy updates.")] = _Learn.updates,
        eval_every: Annotated[int, typer.Option(help="Evaluate every N updates (and at update 0).")] = _Learn.eval_every,
        groups: Annotated[int, typer.Option(help="GRPO groups per update (spade: children per update).")] = _Learn.groups,
        group_size: Annotated[int, typer.Option(help="Agent plays per group (spade: per child, and as many "
                                                     "hinted).")] = _Learn.group_size,
        eval_episodes: Annotated[int, typer.Option(help="Held-out episodes per level and evaluation.")] = _Learn.eval_episodes,
        lr: Annotated[float, typer.Option("--lr", help="Learning rate.")] = _Learn.learning_rate,
        levels: Annotated[str, typer.Option(help="Evaluation levels, NAME=CANDIDATESxGUESSES, comma separated.")]
        = format_levels(CurriculumSettings.levels),
        reward: Annotated[str, typer.Option(help="Designer reward: blend, regret, plateau or learning_potential.")]
        = CurriculumSettings.reward,
        invalid_designs: Annotated[str, typer.Option(
            help="reject: train admitted children's designer samples only; shape: rejected replies too.")]
        = CurriculumSettings.invalid_designs,
        designer_scale: Annotated[Optional[float], typer.Option(  # noqa: UP045
            help="Multiplier of designer advantages (default: agent samples / designer samples).")] = None,
        device: Annotated[str, typer.Option(
            help="cpu, cuda or cuda:N: where the model is sampled and trained (float32 on every device).")] = _Learn.device,
        start: Annotated[str, typer.Option(
            help="The rung's starting knobs, CANDIDATESxGUESSES: the fixed arm trains there throughout, the spade "
                 "arm's frontier and the adaptive arm's window start there (2x2, the ladder's bottom, is RLVE's "
                 "difficulty 0).")] = f"{_Learn.candidates}x{_Learn.guesses}",
    ) -> None:
        """SPADE against the fixed pool, in miniature: one arm on the games domain's bottom rung,
        evaluated on held-out instances at several difficulty levels."""
        from rich.console import Console

        from .curriculum_experiment import run_seeds

        console = Console()
        import re

        from .errors import ConfigError

        knobs = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", start)
        if knobs is None:
            raise ConfigError(f"--start {start!r}: write one CANDIDATESxGUESSES, e.g. 2x2")
        candidates, guesses = int(knobs[1]), int(knobs[2])
        settings = [CurriculumSettings.of(arm=arm, seed=n, candidates=candidates, guesses=guesses, updates=updates,
                                          eval_every=eval_every, groups=groups, group_size=group_size,
                                          eval_episodes=eval_episodes, learning_rate=lr, device=device,
                                          levels=parse_levels(levels), reward=reward, invalid_designs=invalid_designs,
                                          designer_scale=designer_scale) for n in (seed or [0])]
        _experiment_process()
        dirs = run_seeds(run_dir, settings, echo=lambda line: console.log(line, markup=False, highlight=False))
        console.print(f"done: {', '.join(str(d / 'curriculum.md') for d in dirs)}")

    @experiment.command("curriculum-summary")
    def curriculum_summary_cmd(
        run_dirs: Annotated[list[Path], typer.Argument(help="Folders holding curriculum.json (both arms, any seeds).")],
        out: Annotated[Path, typer.Option(help="Where curriculum-summary.md / .png / .json go.")],
    ) -> None:
        """Fixed pool against SPADE over seeds, side by side, with 95% intervals."""
        from .curriculum_experiment import summarise_curriculum

        summarise_curriculum(run_dirs, out)
        typer.echo(f"summary: {out / 'curriculum-summary.md'}")

    @cli.command("report")
    def report(
        run_dir: Annotated[Path, typer.Argument(help="A self-play run folder.")],
        out: Annotated[Optional[Path], typer.Option(help="Output folder (default RUN_DIR/report).")] = None,  # noqa: UP045
    ) -> None:
        """Write an HTML report with plots (and PNG files) of a self-play run."""
        from .report import write_report

        page = write_report(run_dir, out)
        typer.echo(f"report: {page}")


def _experiment_process() -> None:
    """An experiment command owns its process: offline hub, quiet tokenizers, and CPU
    generation and training with denormals flushed (full speed)."""
    import os

    from spade_designer.llm.transformers_backend import use_flush_denormal_for_process

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    use_flush_denormal_for_process()


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
