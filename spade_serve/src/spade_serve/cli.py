"""``spade serve``, registered through ``spade_register_commands``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from spade_core.plugins import SpadePlugins
    from spade_core.store import EnvStore

    from .catalog import EnvCatalog


def register(cli: typer.Typer) -> None:
    @cli.command("serve")
    def serve(
        ctx: typer.Context,
        env_ids: list[str] = typer.Argument(None, metavar="[ID]...", help="Environments to serve (ids, names or spade/<id>)."),
        domain: str | None = typer.Option(None, "--domain", help="Serve every seed and admitted environment of this domain."),
        whole_registry: bool = typer.Option(False, "--all", help="Serve every seed and admitted environment."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
        port: int = typer.Option(8000, "--port", min=0, max=65535),
        max_sessions: int = typer.Option(1024, "--max-sessions", min=1, help="Open sessions in total."),
        max_sessions_per_client: int = typer.Option(256, "--max-sessions-per-client", min=1),
        idle_timeout: float = typer.Option(300.0, "--idle-timeout", help="Close a session idle this many seconds."),
        max_concurrent_calls: int = typer.Option(64, "--max-concurrent-calls", min=1),
        max_queued_calls: int = typer.Option(1024, "--max-queued-calls", min=0, help="Calls that may wait; past that: BUSY."),
        max_request_bytes: int = typer.Option(1_048_576, "--max-request-bytes", min=1024),
        sessions_per_worker: int = typer.Option(1, "--sessions-per-worker", min=1, help="Sessions sharing one sandbox worker."),
        move_after: float = typer.Option(
            0.5, "--move-after", help="With shared workers: seconds a session waits behind another's call before moving."
        ),
        call_timeout: float | None = typer.Option(
            None, "--call-timeout", help="Deadline of one environment call (seconds; default: [spade.sandbox]'s call_timeout_s)."
        ),
        max_idle_workers: int = typer.Option(16, "--max-idle-workers", min=0, help="Sandbox workers kept warm after their sessions closed."),
        max_replay_steps: int = typer.Option(
            256, "--max-replay-steps", min=1, help="With shared workers: actions of an episode kept for replaying it."
        ),
        max_replay_bytes: int = typer.Option(
            65_536, "--max-replay-bytes", min=1024, help="With shared workers: bytes of actions of an episode kept for replaying it."
        ),
        max_restores: int = typer.Option(
            3, "--max-restores", min=0, help="With shared workers: times one session is restored or moved per episode."
        ),
        max_connections: int | None = typer.Option(
            None, "--max-connections", min=8, help="Open connections (default: from the open-file limit; docs/serving.md)."
        ),
        read_timeout: float = typer.Option(5.0, "--read-timeout", help="Seconds to send a whole request (headers and body)."),
        allow_host: list[str] = typer.Option(
            None, "--allow-host", metavar="NAME[:PORT]", help="A Host name to answer besides the listen address (repeatable; * any)."
        ),
        allow_origin: list[str] = typer.Option(
            None, "--allow-origin", metavar="URL", help="A web origin whose pages may call the server (repeatable; * any)."
        ),
        trust_forwarded: list[str] = typer.Option(
            None, "--trust-forwarded", metavar="ADDR", help="A proxy address or network whose X-Forwarded-For names the client (repeatable)."
        ),
        token_file: Path | None = typer.Option(None, "--token-file", help="File holding a bearer token clients must send."),
        cursor_secret_file: Path | None = typer.Option(
            None, "--cursor-secret-file", help="File holding the secret GET /envs cursors are signed from (replicas share "
            "it; default: a random key per start)."
        ),
        seeds_in_process: bool = typer.Option(
            False, "--seeds-in-process", help="Trust seed environments (plugin code): run them in workers without the sandbox's confinement, under the call deadline."
        ),
        log_level: str = typer.Option("info", "--log-level"),
        space: Path | None = typer.Option(
            None,
            "--space",
            metavar="DIR",
            help="Instead of serving: write an OpenEnv environment repository / Hugging Face Space for these "
            "environments to DIR (docs/serving.md).",
        ),
        force: bool = typer.Option(False, "--force", help="With --space: replace a non-empty DIR."),
        lock: bool = typer.Option(True, "--lock/--no-lock", help="With --space: run `uv lock` (needs uv and the index)."),
    ) -> None:
        """Serve environments over OpenEnv's HTTP/WebSocket protocol, each session sandboxed.

        Routes: /ws, /reset, /step, /state, /schema, /metadata, /health at the root (one
        environment served) and under /envs/<id>/ (any served environment).
        """
        from rich.console import Console
        from spade_core.app.catalog import Catalog, open_store
        from spade_core.app.cli import command_config, command_plugins
        from spade_core.errors import SpadeError

        from .catalog import build_catalog
        from .settings import ServeSettings

        console = Console(stderr=True, highlight=False)
        if not env_ids and domain is None and not whole_registry:
            raise typer.BadParameter("name environment ids, a --domain, or --all", param_hint="ID")
        token = _read_secret(token_file, "token") if token_file is not None else None
        cursor_secret = _read_secret(cursor_secret_file, "cursor secret") if cursor_secret_file is not None else None
        try:
            settings = ServeSettings(
                host=host,
                port=port,
                max_sessions=max_sessions,
                max_sessions_per_client=max_sessions_per_client,
                idle_timeout_s=idle_timeout,
                max_concurrent_calls=max_concurrent_calls,
                max_queued_calls=max_queued_calls,
                max_request_bytes=max_request_bytes,
                sessions_per_worker=sessions_per_worker,
                move_after_s=move_after,
                call_timeout_s=call_timeout,
                max_idle_workers=max_idle_workers,
                token=token,
                cursor_secret=cursor_secret,
                seeds_in_process=seeds_in_process,
                max_replay_steps=max_replay_steps,
                max_replay_bytes=max_replay_bytes,
                max_restores=max_restores,
                max_connections=max_connections,
                read_timeout_s=read_timeout,
                allow_hosts=tuple(allow_host or ()),
                allow_origins=tuple(allow_origin or ()),
                trust_forwarded=tuple(trust_forwarded or ()),
            )
        except ValueError as exc:  # pydantic's ValidationError names each field
            raise SpadeError(f"invalid serve settings: {exc}") from None
        config = command_config(ctx)
        plugins = command_plugins(ctx)
        with open_store(config, read_only=True) as store:
            catalog = build_catalog(Catalog(plugins, store), ids=env_ids or (), domain=domain, whole_registry=whole_registry)
            if space is not None:
                _write_space(console, space, catalog, plugins, store, force=force, lock=lock)
                return
            if not settings.loopback_only and settings.token is None:
                console.print(f"[yellow]listening on {host} without a bearer token: anyone who reaches it can run sessions[/]")
            served = ", ".join(e.id for e in catalog.listed()[:5]) + (" ..." if len(catalog.listed()) > 5 else "")
            if catalog.whole_registry:
                served += " and every admitted environment"
            console.print(f"serving {served} on http://{host}:{port} (OpenEnv protocol; /envs/<id>/ws)")
            from spade_sandbox.launcher import SandboxLauncher

            from .server import run

            run(catalog, settings, launcher=SandboxLauncher.from_config(config), log_level=log_level)


def _read_secret(path: Path, what: str) -> str:
    from spade_core.errors import SpadeError

    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpadeError(f"{path}: cannot read the {what} file ({getattr(exc, 'strerror', None) or exc})") from None


def _write_space(console: Console, target: Path, catalog: EnvCatalog, plugins: SpadePlugins, store: EnvStore, *, force: bool, lock: bool) -> None:
    from spade_core.metadata import EnvStatus

    from .space import BASE_DISTRIBUTIONS, write_space

    served = catalog.listed()
    store_envs = [(e.source, e.metadata) for e in served if e.kind == "store"]
    if catalog.whole_registry:
        known = {e.id for e in served}
        for meta in store.find(status=EnvStatus.admitted, limit=None):
            if meta.id not in known:
                store_envs.append((store.get_source(meta.id), meta))
    ids = [e.id for e in served] + [m.id for _, m in store_envs if m.id not in {e.id for e in served}]
    domains = {e.metadata.domain for e in served} | {m.domain for _, m in store_envs}
    plugins.domains()  # fills each plugin's domain list
    dists = list(BASE_DISTRIBUTIONS) + sorted(
        {i.distribution for i in plugins.infos if i.distribution and set(i.domains) & domains} - set(BASE_DISTRIBUTIONS)
    )
    metadata = [e.metadata for e in served] + [m for _, m in store_envs if m.id not in {e.id for e in served}]
    result = write_space(target, ids, store_envs, dists, served=metadata, overwrite=force, lock=lock)
    console.print(f"wrote an OpenEnv Space for {len(ids)} environments to {target} (vendored: {', '.join(result.distributions)})")
    if result.lock_problem is not None:
        console.print(f"[yellow]no uv.lock: {result.lock_problem}; `openenv validate` requires one[/]")
