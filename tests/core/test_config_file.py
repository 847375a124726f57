"""spade.toml's one parser (spade_core.config_file) and the pydantic-free settings reader
(spade_core.run_settings): for every configuration the reader gives exactly what the validated
model gives, or the model's own error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from spade_core.config import load_config
from spade_core.config_file import read_config_file
from spade_core.errors import ConfigError
from spade_core.run_settings import RunSettings, run_settings

# Values TOML can hold, right and wrong, for the keys the fast reader checks itself and
# for keys it must hand to the model.
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_values = st.one_of(
    _text,
    st.sampled_from(["sandbox", "in-process", "", "relative/home", "~/h", "/abs/h", "sqlite:///s.db"]),
    st.integers(-3, 3),
    st.booleans(),
    st.lists(_text, max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["memory_mb", "backend", "bogus"]), st.integers(0, 600) | _text, max_size=2),
)
_tables = st.dictionaries(
    st.sampled_from(["home", "store_url", "store_envs_run", "plugins", "sandbox", "unknown_key"]),
    _values,
    max_size=5,
)
# Mostly-right tables, so that the fast reader's own answers are exercised as often as its
# hand-overs to the model.
_plausible_tables = st.fixed_dictionaries(
    {},
    optional={
        "home": st.sampled_from(["", "state", "~/h", "/abs/h"]) | _text,
        "store_url": st.sampled_from(["", "sqlite:///s.db", "postgresql://u@h/db"]) | _text,
        "store_envs_run": st.sampled_from(["sandbox", "in-process", "docker"]),
        "plugins": st.lists(_text, max_size=2),
        "sandbox": st.fixed_dictionaries(
            {},
            optional={
                "memory_mb": st.integers(16, 600),
                "backend": st.sampled_from(["native", "bwrap"]),
                "call_timeout_s": st.integers(-1, 4000),
                "allow_insecure": st.booleans(),
            },
        ),
    },
)
_tables = _plausible_tables | _tables
_extra_top = st.dictionaries(st.sampled_from(["designer", "selfplay", "stray"]), _values, max_size=2)


def _toml(table: dict[str, object], extra: dict[str, object]) -> str:
    """Write a TOML document with a [spade] table (JSON strings are valid TOML basic strings
    for the printable values drawn here; tomllib checks the result)."""

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str | int):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        assert isinstance(v, dict)
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)} = {value(x)}" for k, x in v.items()) + "}"

    lines = [f"{json.dumps(k, ensure_ascii=False)} = {value(v)}" for k, v in extra.items() if not isinstance(v, dict)]
    lines.append("[spade]")
    lines += [f"{k} = {value(v)}" for k, v in table.items()]
    lines += [f"[{json.dumps(k, ensure_ascii=False)}]\n" + "\n".join(f"{json.dumps(a, ensure_ascii=False)} = {value(b)}" for a, b in v.items())
              for k, v in extra.items() if isinstance(v, dict)]
    return "\n".join(lines) + "\n"


def _model_answer(path: Path | None) -> RunSettings | str:
    try:
        config = load_config(path)
    except ConfigError as exc:
        return f"ConfigError: {exc}"
    return RunSettings(config.resolved_store_url, config.store_envs_run, config.sandbox)


def _fast_answer(path: Path | None) -> RunSettings | str:
    try:
        return run_settings(path)
    except ConfigError as exc:
        return f"ConfigError: {exc}"


def test_without_a_config_file_the_store_is_in_spade_home_and_runs_in_the_sandbox(spade_home: Path) -> None:
    assert run_settings() == RunSettings(f"sqlite:///{spade_home / 'store.db'}", "sandbox")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=_tables, extra=_extra_top)
def test_the_fast_reader_agrees_with_the_validated_model_on_every_config(
    table: dict[str, object], extra: dict[str, object], spade_home: Path
) -> None:
    text = _toml(table, extra)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # a value this writer cannot express; not a configuration
    path = spade_home.parent / "spade.toml"
    path.write_text(text, encoding="utf-8")
    answer = _model_answer(None)
    event("valid" if isinstance(answer, RunSettings) else "invalid")
    assert _fast_answer(None) == answer
    assert _fast_answer(path) == _model_answer(path)


@pytest.mark.parametrize(
    ("text", "defaults"),
    [
        ('[spade]\nstore_envs_run = "sandbox"\n', True),
        ('[spade.sandbox]\nbackend = "native"\n', True),  # written out, but the defaults
        ("[spade.sandbox]\nmemory_mb = 256\n", False),
        ('[spade.sandbox]\nbackend = "bwrap"\n', False),
    ],
)
def test_the_reader_says_whether_the_sandbox_keeps_its_defaults(spade_home: Path, text: str, defaults: bool) -> None:
    """What the sandbox asks (through ``spade_sandbox.prestart``) before it starts a
    default pool's zygote without loading the configuration model."""
    (spade_home.parent / "spade.toml").write_text(text, encoding="utf-8")
    assert run_settings().sandbox_defaults is defaults
    assert _model_answer(None) == run_settings()


def test_a_relative_home_is_next_to_the_config_file(tmp_path: Path, spade_home: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    cfg = folder / "spade.toml"
    cfg.write_text('[spade]\nhome = "state"\nstore_envs_run = "in-process"\n', encoding="utf-8")
    assert run_settings(cfg) == RunSettings(f"sqlite:///{folder / 'state' / 'store.db'}", "in-process")


def test_an_invalid_value_is_the_models_field_level_error(spade_home: Path) -> None:
    (spade_home.parent / "spade.toml").write_text('[spade]\nstore_envs_run = "docker"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"spade\.store_envs_run: Input should be 'sandbox' or 'in-process'"):
        run_settings()


def test_a_simple_config_is_read_without_importing_pydantic(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "spade.toml").write_text('[spade]\nstore_envs_run = "in-process"\nplugins = ["games"]\n[designer]\nx = 1\n')
    env = {**os.environ, "SPADE_HOME": str(home), "SPADE_PLUGINS": ""}  # this module only, no plugin's imports
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from spade_core.run_settings import run_settings; "
         "print(run_settings().store_envs_run, 'pydantic' in sys.modules)"],
        capture_output=True, text=True, env=env, cwd=home, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["in-process", "False"]


def test_a_home_of_an_unknown_user_is_a_config_error_naming_the_key(spade_home: Path) -> None:
    (spade_home.parent / "spade.toml").write_text('[spade]\nhome = "~no-such-user-here/x"\n', encoding="utf-8")
    for read in (run_settings, load_config):
        with pytest.raises(ConfigError, match=r"spade.home = '~no-such-user-here/x': cannot expand '~'"):
            read()


# --- read_config_file: the one parser of spade.toml, for the core's readers and the trainer's


def test_the_file_is_read_into_its_spade_table_and_the_other_packages_sections(tmp_path: Path) -> None:
    cfg = tmp_path / "spade.toml"
    cfg.write_text('[spade]\nstore_envs_run = "in-process"\n[designer]\nn = 2\n[selfplay]\niterations = 3\n')
    tables = read_config_file(cfg)
    assert tables.path == cfg
    assert tables.spade == {"store_envs_run": "in-process"}
    assert tables.sections == {"designer": {"n": 2}, "selfplay": {"iterations": 3}}
    assert tables.home() is None


@pytest.mark.parametrize(
    ("home", "expected"),
    [("state", "{folder}/state"), ("/abs/h", "/abs/h"), ("~/h", "~/h")],
)
def test_a_relative_home_is_resolved_against_the_files_folder_and_others_kept(
    tmp_path: Path, home: str, expected: str
) -> None:
    cfg = tmp_path / "spade.toml"
    cfg.write_text(f'[spade]\nhome = "{home}"\n')
    assert str(read_config_file(cfg).home()) == expected.format(folder=tmp_path)
    assert load_config(cfg).home == Path(expected.format(folder=tmp_path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[spade\n", r"spade\.toml: not valid TOML: .*line 1"),
        (b'[spade]\nstore_url = "\xff"\n', r"spade\.toml: not UTF-8 text \(invalid start byte at byte \d+\)"),
        (b'spade = "x"\n', r"spade\.toml: \[spade\] must be a table"),
        (b'store_url = "x"\n[spade]\n', r"spade\.toml: top-level keys must live in a table such as \[spade\]: store_url"),
    ],
)
def test_a_file_that_is_not_a_configuration_is_one_error_for_every_reader(
    tmp_path: Path, content: bytes, message: str
) -> None:
    """``load_config``, ``run_settings`` and the trainer's ``load_selfplay_config`` take the
    file from the one reader, so they reject it with the same message."""
    from spade_trainer.config import load_selfplay_config

    cfg = tmp_path / "spade.toml"
    cfg.write_bytes(content)
    errors = []
    for read in (read_config_file, load_config, run_settings, lambda p: load_selfplay_config(path=p)):
        with pytest.raises(ConfigError, match=message) as caught:
            read(cfg)
        errors.append(str(caught.value))
    assert len(set(errors)) == 1, errors


def test_a_missing_or_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"config file {tmp_path / 'nope.toml'} does not exist"):
        read_config_file(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match=rf"{tmp_path}: cannot read the configuration file: Is a directory"):
        read_config_file(tmp_path)


def test_the_trainer_takes_its_selfplay_table_from_the_same_reader(tmp_path: Path) -> None:
    from spade_trainer.config import load_selfplay_config

    cfg = tmp_path / "spade.toml"
    cfg.write_text('[spade]\nstore_envs_run = "in-process"\n[selfplay]\niterations = 7\n')
    assert load_selfplay_config(path=cfg).iterations == read_config_file(cfg).sections["selfplay"]["iterations"] == 7
    cfg.write_text('[spade]\nstore_envs_run = "in-process"\n')
    with pytest.raises(ConfigError, match=r"spade\.toml: no \[selfplay\] table"):
        load_selfplay_config(path=cfg)
