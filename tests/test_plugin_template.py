"""``spade new-plugin``: the generated package installs and passes its own tests as generated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from spade_core.app.cli import build_app
from spade_core.app.plugin_template import NewPluginError, new_plugin
from typer.testing import CliRunner


@pytest.mark.parametrize("bad", ["", "X", "Chess", "1abc", "a-b", "class", "a" * 41])
def test_bad_names_are_refused_with_the_rule(bad: str, tmp_path: Path) -> None:
    with pytest.raises(NewPluginError, match="must be 2-40 characters"):
        new_plugin(bad, tmp_path)


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "chess").mkdir()
    with pytest.raises(NewPluginError, match="already exists"):
        new_plugin("chess", tmp_path)


def test_cli_creates_the_package(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_app(), ["new-plugin", "riddles", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "riddles"
    for rel in ("pyproject.toml", "src/spade_riddles/plugin.py", "src/spade_riddles/envs/vault_doors.py",
                "src/spade_riddles/helpers.py", "src/spade_riddles/fuzz.py", "tests/test_riddles.py"):
        assert (root / rel).is_file(), rel
    assert 'riddles = "spade_riddles.plugin"' in (root / "pyproject.toml").read_text()


@pytest.mark.slow
def test_generated_plugin_installs_and_passes_its_tests(tmp_path: Path) -> None:
    root = new_plugin("mazes", tmp_path)
    site = tmp_path / "site"
    # Install into a private folder (not the shared environment) and put it on the path.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(root)],
        check=True, capture_output=True, text=True,
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--spade-examples", "50",
         str(root / "tests")],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout, run.stdout[-2000:]
    listed = subprocess.run(
        [sys.executable, "-m", "spade_core.app.cli", "plugins", "--json"], env=env, capture_output=True, text=True,
    )
    assert "mazes" in listed.stdout, listed.stdout + listed.stderr
