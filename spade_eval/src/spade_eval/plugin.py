"""spade-eval's plugin: the built-in ``registry`` suite and the ``eval`` / ``compare`` commands."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from spade_core.hookspecs import hookimpl


@hookimpl
def spade_register_eval_suites(register: Callable[[Any], None]) -> None:
    from .acebench import SUITE as ACEBENCH_SUITE
    from .benchmarks import AIME25_SUITE, AIME26_SUITE, GPQA_SUITE
    from .livecodebench import SUITE as LCB_SUITE
    from .suites import REGISTRY_SUITE
    from .tau2 import SUITE as TAU2_SUITE

    register(REGISTRY_SUITE)
    for suite in (AIME25_SUITE, AIME26_SUITE, GPQA_SUITE, LCB_SUITE, TAU2_SUITE, ACEBENCH_SUITE):
        register(suite)


def _options(pairs: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--option")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


@hookimpl
def spade_register_commands(cli: typer.Typer) -> None:
    @cli.command("eval")
    def eval_command(
        ctx: typer.Context,
        suite: str = typer.Option("", "--suite", help="Suite name (`spade eval --list` shows them)."),
        policy: str = typer.Option("embedded", "--policy",
                                   help="embedded, a model folder, run:RUN_DIR or openai:BASE_URL[#MODEL]."),
        size: int | None = typer.Option(None, "--size", min=1,
                                        help="Episodes per environment or task (default: the suite's, else 4)."),
        seed: int = typer.Option(0, "--seed", help="First episode seed (reproducible items and sampling)."),
        option: list[str] | None = typer.Option(None, "--option", "-o", help="Suite option KEY=VALUE (repeatable)."),
        concurrency: int = typer.Option(16, "--concurrency", min=1, help="Episodes in flight at once."),
        max_new_tokens: int | None = typer.Option(None, "--max-new-tokens", min=1,
                                                  help="Reply budget per turn (default: the suite's, else 256)."),
        max_turns: int | None = typer.Option(None, "--max-turns", min=1,
                                             help="Cap on turns per episode (default: each task's own)."),
        temperature: float | None = typer.Option(None, "--temperature", min=0.0,
                                                 help="Sampling temperature, 0 greedy (default: the suite's, else 0)."),
        run: Path | None = typer.Option(None, "--run", help="Store the result in this run folder's evals.jsonl."),
        as_json: bool = typer.Option(False, "--json", help="Print the result (with every episode) as JSON."),
        list_suites: bool = typer.Option(False, "--list", help="List the installed suites and exit."),
    ) -> None:
        """Evaluate a policy on a suite: success rate, mean return and turns per group, with 95% intervals."""
        from rich.console import Console
        from spade_core.app.catalog import open_store
        from spade_core.app.cli import command_config, command_plugins
        from spade_core.errors import SpadeError
        from spade_core.evaluation import SuiteContext
        from spade_core.terminal import escape, printable, terminal_json

        from .harness import evaluate
        from .policy import make_backend, parse_policy
        from .results import columns_table, result_table, run_iteration, store_result, unavailable_lines

        console = Console(stderr=as_json, highlight=False)
        plugins = command_plugins(ctx)
        suites = plugins.eval_suites()
        if list_suites:
            for name, s in sorted(suites.items()):
                where = "in-process (plugin code)" if s.trusted else "sandboxed"
                console.print(f"[bold]{escape(name)}[/] ({where}): {escape(s.description)}")
                for key, text in s.options.items():
                    console.print(f"    -o {escape(key)}=...  {escape(text)}")
            return
        if suite not in suites:
            raise SpadeError(f"unknown suite {suite!r} (installed: {', '.join(sorted(suites)) or 'none'})")
        chosen = suites[suite]
        options = _options(option)
        unknown = sorted(set(options) - set(chosen.options))
        if unknown:
            raise SpadeError(f"suite {suite!r} takes no option {', '.join(unknown)} "
                             f"(it takes: {', '.join(chosen.options) or 'none'})")
        size = size if size is not None else int(chosen.defaults.get("size", 4))
        max_new_tokens = max_new_tokens if max_new_tokens is not None else int(chosen.defaults.get("max_new_tokens", 256))
        temperature = temperature if temperature is not None else float(chosen.defaults.get("temperature", 0.0))
        spec = parse_policy(policy)
        config = command_config(ctx)
        with contextlib.ExitStack() as stack, open_store(config, read_only=True) as store:
            items = list(chosen.items(SuiteContext(config, plugins, store, stack), size=size, seed=seed, **options))
            with console.status(f"loading {escape(spec.snapshot)}"):
                backend = make_backend(spec, plugins)
            log_lines = not console.is_terminal
            last = [-1]

            def progress(done: int, total: int) -> None:
                if log_lines and done != last[0]:
                    last[0] = done
                    console.print(printable(f"{suite}: {done}/{total} episodes"), markup=False)

            with console.status(f"playing {len(items)} episodes of {escape(suite)}"):
                result = evaluate(backend, items, suite=suite, policy=policy, snapshot=spec.snapshot, size=size,
                                  seed=seed, concurrency=concurrency, max_new_tokens=max_new_tokens,
                                  temperature=temperature, options=options, progress=progress,
                                  max_turns=max_turns)
        if run is not None:
            result.iteration = run_iteration(run)
        where = store_result(result, run=run, home=config.home)
        if as_json:
            for line in unavailable_lines(result):
                console.print(printable(line), style="bold red", markup=False)
            typer.echo(terminal_json(json.dumps(result.to_json(), indent=2, default=str)))
            return
        console.print(result_table(result))
        if result.columns:
            console.print(columns_table(result))
        for line in unavailable_lines(result):
            console.print(printable(line), style="bold red", markup=False)
        if suite == "tau2_bench":
            from .tau2 import pass_hat_ks

            for domain, ks in pass_hat_ks(result.episodes).items():
                console.print(printable(f"tau2-{domain}: " + ", ".join(f"pass^{k} {100 * v:.1f}%"
                                                                       for k, v in ks.items())), markup=False)
        console.print(f"{len(result.episodes)} episodes, {result.env_steps} steps in {result.wall_s:.1f}s "
                      f"({result.episodes_per_s:.2f} episodes/s; generation {result.generate_s:.1f}s, "
                      f"environments {result.env_s:.1f}s); stored in {escape(where)}")

    @cli.command("compare")
    def compare_command(
        runs: list[Path] = typer.Argument(..., metavar="RUN...", help="Self-play run folders."),
        baseline: str | None = typer.Option(None, "--baseline", help="The run the others are compared to (default: the first)."),
        out: Path = typer.Option(Path("compare"), "--out", help="Folder for compare.html and its plots."),
        paper: bool = typer.Option(False, "--paper", help="Also show the runs in the paper's columns beside its rows."),
        paper_model: str | None = typer.Option(None, "--paper-model",
                                               help="The paper's model to show (e.g. 8B; default: nearest our scale)."),
    ) -> None:
        """Compare runs: final eval table (differences to a baseline), scores over iterations and steps, admission and regret."""
        from rich.console import Console
        from rich.table import Table
        from spade_core.terminal import escape, printable

        from .compare import final_table, load_runs, paper_tables_of, per_iteration_table, write_compare

        page = write_compare(runs, out, baseline=baseline, paper=paper, paper_model=paper_model)
        views = load_runs(runs)
        console = Console(highlight=False)
        for t in paper_tables_of(views, baseline, paper_model) if paper else []:
            table = Table(title=escape(t.title), title_justify="left")
            for h in t.header:
                table.add_column(escape(h), no_wrap=h == "row", overflow="fold")
            for row in t.rows:
                table.add_row(*(escape(cell) for cell in row))
            console.print(table)
            for note in t.notes:
                console.print(printable(f"  {note}"), markup=False)
        for title, (header, rows) in (
            ("every evaluation (success rate @ episodes the run had played)", per_iteration_table(views)),
            ("final evaluation (success rate; difference to the baseline in points)", final_table(views, baseline)),
        ):
            table = Table(title=title, title_justify="left")
            for h in header:
                table.add_column(escape(h), no_wrap=True)
            for row in rows:
                table.add_row(*(escape(cell) for cell in row))
            console.print(table)
        console.print(f"report: {escape(page)}")
