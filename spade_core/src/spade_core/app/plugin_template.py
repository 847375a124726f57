"""``spade new-plugin NAME``: a working domain plugin package, written from ``plugin_templates/``.

The generated package has an entry point in group ``spade``, a ``spade_register_domains``
hookimpl, one seed environment (with knobs, a solution and a hint), a helper module its
environments import (the domain's ``allowed_modules``), a fuzz strategy and tests that
check the plugin loads without a problem and validate and fuzz every seed environment it
ships. It installs and passes its tests as generated; the guide in ``docs/plugins.md``
walks through it.
"""

from __future__ import annotations

import keyword
import re
from importlib import resources
from pathlib import Path

from ..errors import SpadeError

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{1,39}$")

#: template file (under plugin_templates/) -> path in the new package ({pkg} = import name).
_FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "__init__.py.tmpl": "src/{pkg}/__init__.py",
    "plugin.py.tmpl": "src/{pkg}/plugin.py",
    "fuzz.py.tmpl": "src/{pkg}/fuzz.py",
    "helpers.py.tmpl": "src/{pkg}/helpers.py",
    "seed_env.py.tmpl": "src/{pkg}/envs/vault_doors.py",
    "test_plugin.py.tmpl": "tests/test_{name}.py",
}


class NewPluginError(SpadeError):
    """The plugin cannot be created (bad name, target exists)."""


def new_plugin(name: str, directory: Path) -> Path:
    """Write the plugin package ``spade-<name>`` into ``directory/<name>``; return that folder."""
    if not _NAME_RE.match(name) or keyword.iskeyword(name):
        raise NewPluginError(
            f"plugin name {name!r} must be 2-40 characters of lowercase letters, digits and '_', "
            "starting with a letter (it becomes the domain name and part of the import name)"
        )
    target = Path(directory) / name
    if target.exists():
        raise NewPluginError(f"{target} already exists; choose another name or folder")
    values = {"name": name, "pkg": f"spade_{name}", "dist": f"spade-{name.replace('_', '-')}"}
    templates = resources.files("spade_core.app") / "plugin_templates"
    for template, dest in _FILES.items():
        text = (templates / template).read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        path = target / dest.format(**values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target


def register(cli: object) -> None:
    import typer
    from rich.console import Console

    app: typer.Typer = cli  # type: ignore[assignment]

    @app.command("new-plugin")
    def new_plugin_command(
        name: str = typer.Argument(..., help="domain name, e.g. 'chess' (package spade-chess)"),
        directory: Path = typer.Option(Path("."), "--dir", help="folder to create the package in"),
    ) -> None:
        """Create a domain plugin package (entry point, hooks, a seed env, a fuzz test)."""
        folder = new_plugin(name, directory)
        console = Console()
        console.print(f"[green]created[/] {folder}")
        console.print(f"  pip install -e {folder}      (beside a shared install: docs/plugins.md)\n"
                      f"  python -m pytest {folder / 'tests'}\n  spade plugins --check")
