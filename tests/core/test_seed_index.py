"""The seed index: ``import spade_core`` registers the plugins' seed environments without
loading the plugins, and only while nothing they were derived from has changed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from spade_core import seed_index

from .test_registry import run_python

PROBE = """
import sys, json
import spade_core
import gymnasium as gym
from spade_core import registry, seed_index
seeds = sorted(k for k, s in gym.registry.items() if s.entry_point == registry.SEED_ENTRY_POINT)
plugins_loaded = "pluggy" in sys.modules or "importlib.metadata" in sys.modules
allowed = seed_index.allowed_modules("games")
from spade_core.plugins import get_plugins
expected = tuple(sorted(get_plugins().domains()["games"].allowed_modules))
print(json.dumps({"seeds": seeds, "plugins_loaded": plugins_loaded, "allowed_ok": allowed == expected}))
"""


def probe(home: Path, **env: str) -> dict[str, Any]:
    out = run_python(PROBE, home, extra_env=env)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "", out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_the_second_import_registers_the_same_seeds_without_loading_plugins(home: Path) -> None:
    first = probe(home)
    assert first["plugins_loaded"] and first["seeds"]
    assert (home / "cache" / "seed-index.json").is_file()
    second = probe(home)
    assert not second["plugins_loaded"]
    assert second["seeds"] == first["seeds"]
    assert second["allowed_ok"]  # sandboxed makes get the domain's modules from the index


def test_an_index_from_another_setup_is_ignored_and_rewritten(home: Path) -> None:
    probe(home)
    index = home / "cache" / "seed-index.json"
    data = json.loads(index.read_text())
    data["key"]["path"] = ["/somewhere/else"]
    data["seeds"] = []
    index.write_text(json.dumps(data))
    again = probe(home)
    assert again["plugins_loaded"] and again["seeds"]
    assert json.loads(index.read_text())["key"]["path"] != ["/somewhere/else"]


def test_a_corrupt_index_is_ignored(home: Path) -> None:
    first = probe(home)
    index = home / "cache" / "seed-index.json"
    valid = json.loads(index.read_text())
    index.write_text("{not json")
    again = probe(home)
    assert again["plugins_loaded"] and again["seeds"] == first["seeds"]
    # a well-keyed index whose entries are malformed is not trusted either
    valid["seeds"][0].pop("path")
    index.write_text(json.dumps(valid))
    again = probe(home)
    assert again["plugins_loaded"] and again["seeds"] == first["seeds"]


def test_the_index_can_be_turned_off(home: Path) -> None:
    probe(home)
    off = probe(home, SPADE_SEED_INDEX="0")
    assert off["plugins_loaded"]


def test_a_different_plugin_selection_misses_the_index(home: Path) -> None:
    probe(home)
    only_games = probe(home, SPADE_PLUGINS="games")
    assert only_games["plugins_loaded"]
    assert only_games["seeds"] and all(not s.startswith("spade/tooluse.") for s in only_games["seeds"])


# --- validity, in process ----------------------------------------------------------------


@pytest.fixture
def index_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.delenv("SPADE_SEED_INDEX", raising=False)
    monkeypatch.delenv("SPADE_PLUGINS", raising=False)
    return home


def _save_one(seed_file: Path) -> None:
    seed = {"gym_id": "spade/x-v1", "path": str(seed_file), "class_name": None, "max_turns": 5, "domain": "d",
            "reward_range": [0.0, 1.0]}
    seed_index.save([seed], {"d": ["math"]}, [])


def test_a_changed_seed_file_invalidates_the_index(index_home: Path, tmp_path: Path) -> None:
    seed_file = tmp_path / "seed.py"
    seed_file.write_text("class Env: pass\n")
    _save_one(seed_file)
    loaded = seed_index.load()
    assert loaded is not None and loaded["seeds"][0]["gym_id"] == "spade/x-v1"
    assert loaded["allowed_modules"] == {"d": ["math"]}
    st = seed_file.stat()
    os.utime(seed_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert seed_index.load() is None


def test_a_new_file_beside_the_seeds_invalidates_the_index(index_home: Path, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "a.py").write_text("class Env: pass\n")
    _save_one(seeds / "a.py")
    assert seed_index.load() is not None
    (seeds / "b.py").write_text("class Env: pass\n")  # what a plugin globbing seeds/*.py would add
    st = seeds.stat()  # make the change visible even on a coarse-mtime file system
    os.utime(seeds, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert seed_index.load() is None


def test_a_removed_seed_file_invalidates_the_index(index_home: Path, tmp_path: Path) -> None:
    seed_file = tmp_path / "seed.py"
    seed_file.write_text("class Env: pass\n")
    _save_one(seed_file)
    seed_file.unlink()
    assert seed_index.load() is None


def test_nothing_is_written_without_a_home_or_when_turned_off(
    index_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_file = tmp_path / "seed.py"
    seed_file.write_text("class Env: pass\n")
    monkeypatch.setenv("SPADE_SEED_INDEX", "off")
    _save_one(seed_file)
    assert not (index_home / "cache").exists()
    monkeypatch.delenv("SPADE_SEED_INDEX")
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "missing"))
    _save_one(seed_file)
    assert not (tmp_path / "missing").exists()
