"""The monorepo's packaging contract: separately installable packages whose dependencies
point one way, and a light core."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "spade_core": "spade-core",
    "spade_sandbox": "spade-sandbox",
    "spade_serve": "spade-serve",
    "spade_ui": "spade-ui",
    "spade_eval": "spade-eval",
    "spade_designer": "spade-designer",
    "spade_trainer": "spade-trainer",
    "plugins/games": "spade-games",
    "plugins/tooluse": "spade-tooluse",
    "plugins/reasoning_gym": "spade-reasoning-gym",
}
#: Adapters another framework loads, installed apart from SPADE (docs/architecture.md).
INTEGRATIONS = {
    "integrations/verifiers": "spade-verifiers",
}
HEAVY = {"torch", "trl", "transformers", "vllm", "ray", "accelerate", "deepspeed"}
# DESIGN.md: what each package must not depend on.
FORBIDDEN = {
    "spade-core": HEAVY | {"spade-sandbox", "spade-designer", "spade-trainer"},
    "spade-sandbox": HEAVY | {"spade-designer", "spade-trainer"},
    "spade-serve": HEAVY | {"spade-designer", "spade-trainer"},
    # run reports come from spade-trainer only through the optional `runs` extra
    "spade-ui": HEAVY | {"spade-designer", "spade-trainer"},
    "spade-eval": HEAVY | {"spade-trainer"},
    "spade-reasoning-gym": {"spade-games", "spade-tooluse", "spade-trainer", "spade-designer"} | HEAVY,
    "spade-designer": {"spade-trainer"},
    "spade-games": {"spade-tooluse", "spade-trainer", "spade-designer"} | HEAVY,
    "spade-tooluse": {"spade-games", "spade-trainer", "spade-designer"} | HEAVY,
}


def _requirement_names(reqs: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in reqs}


def _project(folder: str) -> dict:
    return tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize("folder,dist", sorted(PACKAGES.items()))
def test_every_package_has_its_own_pyproject_and_entry_point(folder: str, dist: str) -> None:
    project = _project(folder)
    assert project["name"] == dist
    assert (ROOT / folder / "src").is_dir()
    if dist != "spade-core":
        assert project.get("entry-points", {}).get("spade"), f"{dist} registers no plugin in group 'spade'"


@pytest.mark.parametrize("folder,dist", sorted(INTEGRATIONS.items()))
def test_every_integration_installs_apart_from_spade(folder: str, dist: str) -> None:
    """An integration has its own pyproject and ``src/`` and depends on no SPADE
    distribution: it reaches SPADE through a server's protocol (its README says why)."""
    project = _project(folder)
    assert project["name"] == dist
    assert (ROOT / folder / "src").is_dir() and (ROOT / folder / "README.md").is_file()
    deps = _requirement_names(project.get("dependencies", []))
    spade = sorted(d for d in deps if d.startswith("spade"))
    assert not spade, f"{dist} must not depend on {spade}"
    assert not project.get("entry-points", {}).get("spade"), f"{dist} is no SPADE plugin"


def test_every_integration_folder_is_listed() -> None:
    found = {p.parent.relative_to(ROOT).as_posix() for p in ROOT.glob("integrations/*/pyproject.toml")}
    assert found == set(INTEGRATIONS)


@pytest.mark.parametrize("dist,forbidden", sorted(FORBIDDEN.items()))
def test_dependencies_point_one_way(dist: str, forbidden: set[str]) -> None:
    folder = next(f for f, d in PACKAGES.items() if d == dist)
    deps = _requirement_names(_project(folder).get("dependencies", []))
    assert not deps & forbidden, f"{dist} must not depend on {sorted(deps & forbidden)}"


def test_importing_spade_core_and_the_sandbox_loads_no_heavy_module() -> None:
    code = (
        "import sys, spade_core, spade_sandbox\n"
        f"heavy = sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"heavy modules imported: {out.stdout.strip()}"
