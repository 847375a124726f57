"""``spade sandbox ...`` commands, registered through ``spade_register_commands``."""

from __future__ import annotations

import typer


def register(cli: typer.Typer) -> None:
    app = typer.Typer(help="The sandbox that runs untrusted environment code.", no_args_is_help=True)

    @app.command("check")
    def check(
        backend: str = typer.Option("native", help="Sandbox backend to probe."),
        as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    ) -> None:
        """Show which isolation layers are active on this host (starts one probe worker).

        Exit code 0 when untrusted code may run (seccomp, or Landlock plus rlimits, is
        active), 1 when the sandbox would refuse it without --allow-insecure.
        """
        from rich.console import Console
        from rich.table import Table
        from spade_core.terminal import escape

        from .status import sandbox_status

        status = sandbox_status(backend)
        if as_json:
            typer.echo(status.model_dump_json(indent=2))
        else:
            console = Console(highlight=False)
            table = Table(title=f"sandbox layers ({status.backend} backend)")
            table.add_column("layer")
            table.add_column("state")
            table.add_column("detail")
            for layer in status.layers:
                state = "[green]active" if layer.active else ("[dim]n/a" if not layer.applicable else "[red]missing")
                table.add_row(layer.name, state, escape(layer.detail))
            console.print(table)
            console.print(f"running as root: {status.running_as_root}; Landlock ABI: {status.landlock_abi}; "
                          f"cgroup: {status.cgroup or 'none'}")
            jails = ", ".join(f"{k}: {v or 'not found'}" for k, v in status.outer_jails.items())
            console.print(f"outer jails: {escape(jails)}")
            if status.c_fast_path:
                worker = {True: "in workers too", False: "[red]but not in the probe worker", None: "(no worker probed)"}
                fast = f"[green]active[/] {worker[status.c_fast_path_worker]}"
            else:
                fast = f"[yellow]off[/] ({escape(status.c_fast_path_detail)}): steps take the pure-Python path"
            console.print(f"C step fast path: {fast}")
            if status.error:
                console.print(f"[red]probe failed:[/] {escape(status.error)}")
            verdict = (
                "[green]untrusted code will run (seccomp, or Landlock + rlimits, active)"
                if status.secure
                else "[red]untrusted code is refused here unless allow_insecure is set"
            )
            console.print(verdict)
        raise typer.Exit(0 if status.secure else 1)

    cli.add_typer(app, name="sandbox")
