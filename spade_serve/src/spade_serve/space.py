"""``spade serve --space DIR``: an OpenEnv environment repository (a Hugging Face Space) for
chosen environments, and the server it runs.

What :func:`write_space` writes is what OpenEnv 0.10 reads (``openenv validate DIR``:
``openenv/validation``, and its multi-mode check ``openenv/cli/_validation.py``; ``openenv
push``/``build``: ``openenv/cli/_cli_utils.py``):

* ``openenv.yaml``: ``spec_version: 1``, ``name``, ``type: space``, ``runtime: fastapi``,
  ``app: server.app:app``, ``port``, and the ``validation:`` block ``openenv validate``
  grades (:func:`validation_block`: the reward range, a resource budget, the verifier —
  the served reward —, the Task API, type tags, no network);
* ``pyproject.toml``: a project depending on ``openenv`` and the SPADE distributions
  the environments need, with the ``server = "server.app:main"`` script; those
  distributions are not on a package index, so their sources are copied to
  ``vendor/<folder>/`` and named in ``[tool.uv.sources]``;
* ``uv.lock``: ``uv lock`` run on that project, when ``uv`` is installed (openenv's check
  requires it; resolving needs the package index);
* ``server/app.py`` (``app`` and ``main()`` under a ``__main__`` guard), ``server/__init__.py``,
  ``__init__.py``, ``client.py``, ``models.py``, ``README.md`` (the Space card: ``sdk: docker``,
  ``app_port``, tag ``openenv``) and a ``Dockerfile`` that runs ``uv sync --frozen``;
* ``environments/``: the chosen store environments in the Hub export layout
  (:mod:`spade_core.app.hub`), and ``space.json``: the ids to serve.

:class:`SpaceServer` is what ``server/app.py`` runs: it imports ``environments/`` into a
private store (statuses as exported), builds the catalog of the ids and serves them with
``spade serve``'s app, every session sandboxed, on ``0.0.0.0``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from spade_core.errors import SpadeError

#: SPADE distributions every Space needs (the plugins of the served domains come on top).
BASE_DISTRIBUTIONS = ("spade-core", "spade-sandbox", "spade-serve")
SPACE_FILE = "space.json"
ENVIRONMENTS = "environments"
PORT = 8000
#: What a vendored distribution's source folder keeps.
VENDOR_FILES = ("pyproject.toml", "setup.py", "README.md", "LICENSE")
VENDOR_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.egg-info", "build", "dist")


class SpaceError(SpadeError):
    """The Space folder cannot be written (target not empty, a distribution without sources)."""


@dataclass(frozen=True)
class SpaceResult:
    folder: Path
    env_ids: tuple[str, ...]
    distributions: tuple[str, ...]
    #: ``None`` when uv.lock was written, else why not.
    lock_problem: str | None


def distribution_source(name: str) -> Path:
    """The source folder of an installed SPADE distribution (an editable or folder install
    records it in ``direct_url.json``)."""
    try:
        dist = importlib_metadata.distribution(name)
    except importlib_metadata.PackageNotFoundError:
        raise SpaceError(f"{name} is not installed") from None
    raw = dist.read_text("direct_url.json")
    url = json.loads(raw).get("url", "") if raw else ""
    path = Path(unquote(urlparse(url).path)) if url.startswith("file://") else None
    if path is None or not (path / "pyproject.toml").is_file():
        raise SpaceError(
            f"{name} was not installed from a source folder, so its source cannot be copied into the Space "
            "(install it with pip install -e <folder>)"
        )
    return path


def _vendor(name: str, target: Path) -> str:
    """Copy ``name``'s source to ``target/vendor/<folder>``; returns the folder relative to ``target``."""
    source = distribution_source(name)
    folder = f"vendor/{source.name}"
    dest = target / folder
    dest.mkdir(parents=True)
    for f in VENDOR_FILES:
        if (source / f).is_file():
            shutil.copy2(source / f, dest / f)
    shutil.copytree(source / "src", dest / "src", ignore=VENDOR_SKIP)
    return folder


def _project_name(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "spade"


def _pyproject(name: str, distributions: dict[str, str]) -> str:
    from spade_core.app.hub_layout import READ_REQUIREMENTS

    # The server reads environments/ (an export), which needs the layout's readers.
    deps = ['  "openenv>=0.10,<0.11",'] + [f'  "{r}",' for r in READ_REQUIREMENTS]
    deps += [f'  "{d}",' for d in distributions]
    sources = [f'{d} = {{ path = "{p}" }}' for d, p in distributions.items()]
    return "\n".join(
        [
            "[build-system]",
            'requires = ["setuptools>=69"]',
            'build-backend = "setuptools.build_meta"',
            "",
            "[project]",
            f'name = "{name}"',
            'version = "0.1.0"',
            'description = "SPADE environments served over OpenEnv\'s protocol (written by spade serve --space)"',
            'requires-python = ">=3.11"',
            "dependencies = [",
            *deps,
            "]",
            "",
            "[project.scripts]",
            'server = "server.app:main"',
            "",
            "[tool.setuptools]",
            'packages = ["server"]',
            "",
            "# The SPADE distributions are not on a package index: their sources are in vendor/.",
            "[tool.uv.sources]",
            *sources,
            "",
        ]
    )


SERVER_APP = '''"""OpenEnv server of SPADE environments (written by `spade serve --space`).

`server` (or `python -m server.app`) serves the environments of ../space.json on
0.0.0.0:{port}; `--port N` and `--host H` change that. Every session runs sandboxed.
"""

from pathlib import Path

from spade_serve.space import SpaceServer

space = SpaceServer(Path(__file__).resolve().parent.parent)
app = space.app


def main(argv=None):
    space.run(argv)


if __name__ == "__main__":
    main()
'''

CLIENT = '''"""Client of this Space: SPADE's typed OpenEnv client (OpenEnv's GenericEnvClient works too).

    from client import SpadeEnvClient
    with SpadeEnvClient("https://<owner>-<space>.hf.space", env_id="<id>").sync() as env:
        result = env.reset(seed=0)
"""

from spade_serve.client import SpadeEnvClient

__all__ = ["SpadeEnvClient"]
'''

MODELS = '''"""Wire models of this Space: OpenEnv's Action/Observation as SPADE serves them."""

from spade_serve.models import *  # noqa: F401,F403
'''

DOCKERFILE = """FROM python:3.11-slim

RUN pip install --no-cache-dir "uv>=0.5"
WORKDIR /app
COPY . /app
# uv.lock pins every dependency; the SPADE distributions build from vendor/.
RUN uv sync --frozen --no-dev
ENV PATH="/app/.venv/bin:$PATH" SPADE_HOME=/tmp/spade-home
EXPOSE {port}
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/health')"
CMD ["server"]
"""


def _readme(name: str, env_ids: tuple[str, ...]) -> str:
    listed = "\n".join(f"- `{i}`" for i in env_ids)
    return f"""---
title: {name}
sdk: docker
app_port: {PORT}
tags:
- openenv
- spade
---

# {name}

SPADE environments served over OpenEnv's protocol (`/ws`, `/reset`, `/step`, `/state`,
`/schema`, `/health`, and the same under `/envs/<id>/`), every session in SPADE's sandbox:

{listed}

Written by `spade serve --space`. Run it locally with `uv run server` (or `docker build`).
"""


def validation_block(served: list[Any], *, call_timeout_s: float = 10.0) -> dict[str, Any]:
    """The ``validation:`` block of ``openenv.yaml`` for environments of metadata ``served``
    (``EnvMetadata``; at least one): the union of their reward ranges, a resource budget
    (two CPUs and 4 GiB, a Space's free tier holds more; an episode's deadline is its
    ``max_turns`` calls of ``call_timeout_s``, at most the hour OpenEnv's policy allows),
    a floor margin of a tenth of the range (at least 0.1, the policy's least: admission
    rejects environments that trivial policies win), the served reward as the verifier,
    the Task API (:mod:`spade_serve.tasks`), ``spade`` and each domain as type tags, and
    no network (the sandbox gives environments none). No oracle is declared: a SPADE
    environment's ``solution()`` is a replay checked at admission, not an OpenEnv oracle
    artifact."""
    low = min(m.reward_range[0] for m in served)
    high = max(m.reward_range[1] for m in served)
    turns = max(m.max_turns for m in served)
    margin = max(0.1, round(0.1 * (high - low), 6))
    timeout = min(3600.0, float(turns * call_timeout_s))
    return {
        "reward": {"range": [float(low), float(high)], "oracle_tolerance": 0.0, "floor_margin": margin},
        "resources": {"cpu": 2, "memory_mb": 4096, "disk_mb": 4096, "episode_timeout_s": timeout},
        "capabilities": {"verifier": {"kind": "reward_channel"}, "task_api": True},
        "types": {"tags": ["spade", *sorted({m.domain for m in served})]},
        "network": {"mode": "no-network"},
    }


def write_space(
    target: Path,
    env_ids: list[str],
    store_envs: list[tuple[str, Any]],
    distributions: list[str],
    *,
    served: list[Any] | None = None,
    name: str | None = None,
    overwrite: bool = False,
    lock: bool = True,
) -> SpaceResult:
    """Write the Space folder serving ``env_ids``, carrying the store
    environments ``store_envs`` (``(source, EnvMetadata)``) and the SPADE ``distributions``
    they need (see the module docstring). ``served``: the metadata of every served
    environment, for ``openenv.yaml``'s ``validation:`` block (default: the store
    environments'; without any the block is left out). With ``lock``, ``uv lock`` runs when
    uv is installed; :attr:`SpaceResult.lock_problem` says why there is no lock otherwise."""
    from spade_core.app.hub import write_hub_folder

    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not overwrite)):
        raise SpaceError(f"{target} exists and is not an empty folder; pass --force to replace it")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    project = _project_name(name or target.resolve().name)
    vendored = {d: _vendor(d, target) for d in dict.fromkeys(distributions)}
    write_hub_folder(store_envs, target / ENVIRONMENTS, pretty_name=f"{project} environments")
    files = {
        "openenv.yaml": _openenv_yaml(project, served if served is not None else [m for _, m in store_envs]),
        "pyproject.toml": _pyproject(project, vendored),
        "README.md": _readme(project, tuple(env_ids)),
        "Dockerfile": DOCKERFILE.format(port=PORT),
        "__init__.py": '"""SPADE environments as an OpenEnv environment (written by spade serve --space)."""\n',
        "client.py": CLIENT,
        "models.py": MODELS,
        "server/__init__.py": "",
        "server/app.py": SERVER_APP.format(port=PORT),
        SPACE_FILE: json.dumps({"env_ids": list(env_ids), "port": PORT}, indent=2) + "\n",
        ".gitignore": ".venv/\n__pycache__/\n",
    }
    (target / "server").mkdir()
    (target / "outputs").mkdir()
    (target / "outputs" / ".gitkeep").write_text("")
    for rel, text in files.items():
        (target / rel).write_text(text, encoding="utf-8")
    problem = lock_space(target) if lock else "not asked for (--no-lock)"
    return SpaceResult(target, tuple(env_ids), tuple(vendored), problem)


def _openenv_yaml(project: str, served: list[Any]) -> str:
    import yaml

    head = f"spec_version: 1\nname: {project}\ntype: space\nruntime: fastapi\napp: server.app:app\nport: {PORT}\n"
    if not served:
        return head
    return head + yaml.safe_dump({"validation": validation_block(served)}, sort_keys=False)


def lock_space(folder: Path, *, timeout_s: float = 300.0) -> str | None:
    """Run ``uv lock`` in ``folder``; ``None`` on success, else the reason."""
    uv = shutil.which("uv")
    if uv is None:
        return "uv is not installed (pip install uv, then run `uv lock` in the folder)"
    try:
        run = subprocess.run([uv, "lock", "--project", str(folder)], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"uv lock did not finish in {timeout_s:.0f} s"
    if run.returncode != 0:
        tail = " ".join(run.stderr.strip().splitlines()[-3:])
        return f"uv lock failed: {tail}"
    return None


class SpaceServer:
    """The server a Space folder runs: see the module docstring."""

    def __init__(self, root: Path) -> None:
        from spade_core.app.catalog import Catalog
        from spade_core.app.hub import read_hub_items
        from spade_core.app.importer import ImportOptions, import_items
        from spade_core.config import load_config
        from spade_core.plugins import get_plugins
        from spade_core.store import EnvStore

        from .app import create_app
        from .catalog import build_catalog
        from .env_factory import SandboxEnvFactory
        from .sessions import SessionManager
        from .settings import ServeSettings

        spec = json.loads((root / SPACE_FILE).read_text(encoding="utf-8"))
        config = load_config()
        self.store = EnvStore.open(config)
        # The Space's own export, written by `spade serve --space` from the user's store:
        # its statuses are the user's, so they are kept (trusted) as recorded.
        items = read_hub_items(_local_ref(root / ENVIRONMENTS))
        report = import_items(self.store, items, ImportOptions(trust=True))
        if not report.ok:
            bad = next(o for o in report.outcomes if o.outcome in ("failed", "rejected"))
            raise SpaceError(f"{ENVIRONMENTS}/{bad.origin}: {bad.reason}")
        # On the Hub the Space is reached by its own name (the Hub sets SPACE_HOST, e.g.
        # owner-name.hf.space): answered besides IP addresses and localhost (docs/serving.md).
        hosts = tuple(h for h in os.environ.get("SPACE_HOST", "").split(",") if h.strip())
        self.settings = ServeSettings.model_validate(
            {"host": "0.0.0.0", "port": int(spec.get("port", PORT)), "allow_hosts": hosts}
        )
        catalog = build_catalog(Catalog(get_plugins(), self.store), ids=spec["env_ids"])
        from spade_sandbox.launcher import SandboxLauncher

        factory = SandboxEnvFactory.for_server(self.settings, SandboxLauncher.from_config(config))
        self.app = create_app(SessionManager(catalog, self.settings, factory=factory))

    def run(self, argv: list[str] | None = None) -> None:
        import argparse

        import uvicorn

        from .server import uvicorn_config
        from .settings import ServeSettings

        parser = argparse.ArgumentParser(prog="server", description="Serve this Space's SPADE environments.")
        parser.add_argument("--host", default=self.settings.host)
        parser.add_argument("--port", type=int, default=self.settings.port)
        parser.add_argument("--allow-host", action="append", default=[], help="A Host name to answer (repeatable).")
        args = parser.parse_args(argv)
        hosts = self.settings.allow_hosts + tuple(args.allow_host)
        settings = ServeSettings.model_validate(
            {**self.settings.model_dump(), "host": args.host, "port": args.port, "allow_hosts": hosts}
        )
        from .access import AccessRules

        self.app.state.access_rules = AccessRules.of(settings)
        uvicorn.Server(uvicorn_config(self.app, settings, log_level="info")).run()


def _local_ref(folder: Path) -> Any:
    from spade_core.app.hub import HubRef

    return HubRef(str(folder), path=folder)


__all__ = ["SpaceError", "SpaceResult", "SpaceServer", "distribution_source", "lock_space", "write_space"]
