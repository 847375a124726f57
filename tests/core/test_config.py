"""Configuration: one validated object from spade.toml, overridden by flags; every bad
field is listed in one ConfigError."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.config import SpadeConfig, find_config_file, load_config, spade_home
from spade_core.errors import ConfigError, SpadeError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_put_the_store_in_spade_home(spade_home: Path) -> None:
    config = load_config()
    assert config.home == spade_home
    assert config.resolved_store_url == f"sqlite:///{spade_home / 'store.db'}"
    assert config.store_envs_run == "sandbox"
    assert config.plugins is None


def test_spade_home_defaults_to_dot_spade(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPADE_HOME", raising=False)
    assert spade_home() == Path.home() / ".spade"


def test_file_values_are_read_and_overrides_win(tmp_path: Path, spade_home: Path) -> None:
    cfg = write(
        tmp_path / "custom.toml",
        '[spade]\nstore_url = "sqlite:///x.db"\nstore_envs_run = "in-process"\nplugins = ["games"]\n'
        "[spade.sandbox]\nmemory_mb = 256\n",
    )
    config = load_config(cfg, store_url="sqlite:///y.db", plugins=None)
    assert config.store_url == "sqlite:///y.db", "an override replaces the file's value"
    assert config.plugins == ["games"], "a None override leaves the file's value"
    assert config.store_envs_run == "in-process"
    assert config.sandbox.memory_mb == 256


def test_lookup_order_is_cwd_then_spade_home(tmp_path: Path, spade_home: Path) -> None:
    assert find_config_file() is None
    home_file = write(spade_home / "spade.toml", '[spade]\nstore_envs_run = "in-process"\n')
    assert find_config_file() == home_file
    cwd_file = write(tmp_path / "spade.toml", "[spade]\n")
    assert find_config_file() == cwd_file
    assert load_config().store_envs_run == "sandbox", "the cwd file wins over SPADE_HOME's"


def test_other_packages_get_their_own_tables(tmp_path: Path, spade_home: Path) -> None:
    cfg = write(tmp_path / "s.toml", "[designer]\nmodel = 'x'\n[selfplay]\nsteps = 3\n")
    config = load_config(cfg)
    assert config.section("designer") == {"model": "x"}
    assert config.section("selfplay") == {"steps": 3}
    assert config.section("absent") == {}


def test_a_relative_home_in_a_file_is_relative_to_that_file(tmp_path: Path, spade_home: Path) -> None:
    sub = tmp_path / "project"
    sub.mkdir()
    config = load_config(write(sub / "spade.toml", '[spade]\nhome = "state"\n'))
    assert config.home == sub / "state"


def test_a_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_broken_toml_names_the_file_and_the_position(tmp_path: Path) -> None:
    cfg = write(tmp_path / "broken.toml", "[spade\nstore_url = 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert "broken.toml" in str(err.value)
    assert "not valid TOML" in str(err.value)
    assert "line 1" in str(err.value)


def test_every_bad_field_is_listed_with_its_value(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "bad.toml",
        '[spade]\nstore_envs_run = "docker"\nbogus = 1\n[spade.sandbox]\nmemory_mb = 1\ncall_timeout_s = -5\n',
    )
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    message = str(err.value)
    assert "bad.toml" in message
    for expected in (
        "spade.store_envs_run: Input should be 'sandbox' or 'in-process' (got 'docker')",
        "spade.bogus: Extra inputs are not permitted",
        "spade.sandbox.memory_mb: must be at least 32 (got 1)",
        "spade.sandbox.call_timeout_s: must be greater than 0 (got -5.0)",
    ):
        assert expected in message


def test_bad_overrides_are_reported_too(spade_home: Path) -> None:
    with pytest.raises(ConfigError, match="store_envs_run"):
        load_config(store_envs_run="nowhere")


def test_top_level_keys_must_live_in_a_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="top-level keys must live in a table.*store_url"):
        load_config(write(tmp_path / "flat.toml", 'store_url = "sqlite:///x.db"\n'))


def test_config_error_is_a_spade_error() -> None:
    assert issubclass(ConfigError, SpadeError)


def test_the_model_is_strict() -> None:
    with pytest.raises(Exception, match="Extra inputs"):
        SpadeConfig.model_validate({"stor_url": "typo"})
