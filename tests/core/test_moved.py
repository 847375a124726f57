"""The application modules' old paths (``spade_core.importer``...) still import: the same
module object as the new path, with a FutureWarning naming the new one at the importing line."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from spade_core.moved import MOVED

import spade_core

APP = Path(spade_core.__file__).parent / "app"


def test_every_moved_name_is_a_module_of_the_application_layer_and_no_kernel_file_is_left() -> None:
    kernel = Path(spade_core.__file__).parent
    for name in MOVED:
        assert (APP / f"{name}.py").is_file(), name
        assert not (kernel / f"{name}.py").exists(), f"{name}.py is in the kernel and the application layer"


@pytest.mark.parametrize("name", MOVED)
def test_an_old_path_is_the_new_module_and_warns_at_the_importing_line(name: str) -> None:
    new = importlib.import_module(f"spade_core.app.{name}")
    sys.modules.pop(f"spade_core.{name}", None)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        old = importlib.import_module(f"spade_core.{name}")  # the line the warning names
    assert old is new
    assert [w.category for w in seen] == [FutureWarning]
    assert f"spade_core.{name} moved to spade_core.app.{name}" in str(seen[0].message)
    assert seen[0].filename == __file__


def test_from_import_of_an_old_name_and_a_missing_module_still_fails_as_missing() -> None:
    sys.modules.pop("spade_core.hub", None)
    spade_core.__dict__.pop("hub", None)
    with pytest.warns(FutureWarning, match="spade_core.hub moved"):
        from spade_core import hub
    from spade_core.app import hub as new_hub

    assert hub is new_hub
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("spade_core.no_such_module")


def test_the_command_and_every_plugin_load_without_touching_an_old_path() -> None:
    """Warnings as errors in a fresh interpreter: the ``spade`` command with every installed
    plugin's commands imports no old path (one would raise)."""
    code = (
        "import sys; from spade_core.app.cli import build_app; from typer.testing import CliRunner; "
        "r = CliRunner().invoke(build_app(), ['--help']); print(r.output[-200:]); sys.exit(r.exit_code)"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-c", code], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
