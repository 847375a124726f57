"""One configuration tree: every table of ``spade.toml`` has an owner that declared it
(``spade_register_config_sections``), and a command checks the whole file once, at its edge."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict
from spade_core.config import load_config
from spade_core.errors import ConfigError, PluginError
from spade_core.hookspecs import hookimpl
from spade_core.plugins import SpadePlugins, get_plugins

from .cli_support import spade


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spade.toml"
    path.write_text(f'[spade]\nhome = "{tmp_path / "home"}"\n' + text, encoding="utf-8")
    return path


def test_the_installed_plugins_own_the_designer_validation_and_selfplay_tables() -> None:
    owners = get_plugins().config_sections()
    assert {t: owners[t][0] for t in ("designer", "validation", "selfplay")} == {
        "designer": "designer", "validation": "designer", "selfplay": "trainer"}


def test_a_table_no_plugin_owns_is_refused_with_the_known_tables(tmp_path: Path) -> None:
    path = _file(tmp_path, "[desinger]\nbackend = 'replay'\n")
    run = spade("--config", str(path), "list")
    assert run.exit_code == 2, run.output
    assert "[desinger]: no installed plugin reads this table" in run.output
    assert "[designer]" in run.output and "[selfplay]" in run.output and "[validation]" in run.output


def test_every_bad_value_of_every_table_is_named_with_its_key_and_plugin_in_one_error(tmp_path: Path) -> None:
    path = _file(tmp_path, "[designer.sampling]\nmax_new_tokens = 0\n\n[validation]\nmax_source_lines = 'many'\n"
                           "\n[selfplay]\niterations = -1\n")
    with pytest.raises(ConfigError) as caught:
        get_plugins().check_config(load_config(path))
    text = str(caught.value)
    assert f"invalid configuration in {path}" in text
    assert "designer.sampling.max_new_tokens" in text and "(plugin 'designer')" in text
    assert "validation.max_source_lines: Input should be a valid integer" in text
    assert "selfplay.iterations" in text and "(plugin 'trainer')" in text
    run = spade("--config", str(path), "list")  # the same at the command's edge
    assert run.exit_code == 2 and "designer.sampling.max_new_tokens" in run.output


def test_a_checked_configuration_hands_back_the_owners_typed_settings(tmp_path: Path) -> None:
    from spade_designer.config import DesignerConfig

    config = get_plugins().check_config(load_config(_file(tmp_path, "[designer]\nbackend = 'replay'\n")))
    typed = config.settings("designer")
    assert isinstance(typed, DesignerConfig) and typed.backend == "replay"
    assert config.settings("validation") is None  # not in the file
    assert config.model_copy().settings("designer") is typed  # kept by the copies a run makes


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = 1


def _plugin(name: str, table: str) -> types.ModuleType:
    module = types.ModuleType(name)

    @hookimpl
    def spade_register_config_sections(register):  # type: ignore[no-untyped-def]
        register(table, _Table)

    module.spade_register_config_sections = spade_register_config_sections  # type: ignore[attr-defined]
    return module


def test_a_table_claimed_by_two_plugins_names_both(tmp_path: Path) -> None:
    plugins = SpadePlugins(load_entry_points=False)
    plugins.pm.register(_plugin("one", "shared"), name="one")
    plugins.pm.register(_plugin("two", "shared"), name="two")
    with pytest.raises(PluginError, match=r"\[shared\] registered twice \(by 'one' and 'two'\)"):
        plugins.config_sections()


def test_a_third_party_table_is_checked_by_its_own_model(tmp_path: Path) -> None:
    plugins = SpadePlugins(load_entry_points=False)
    plugins.pm.register(_plugin("mine", "mine"), name="mine")
    good = plugins.check_config(load_config(_file(tmp_path, "[mine]\nsize = 3\n")))
    assert good.settings("mine") == _Table(size=3)
    with pytest.raises(ConfigError, match=r"mine\.colour: Extra inputs are not permitted \(plugin 'mine'\)"):
        plugins.check_config(load_config(_file(tmp_path, "[mine]\ncolour = 'red'\n")))


def test_selfplay_lays_its_designer_table_over_the_one_designer_table(tmp_path: Path) -> None:
    """``[designer]`` of spade.toml reaches the self-play designer (it used to be ignored);
    ``[selfplay.designer]`` wins key by key, nested tables merged."""
    from spade_trainer.config import load_selfplay_config
    from spade_trainer.designer_stage import designer_config_of

    spade_config = get_plugins().check_config(load_config(_file(
        tmp_path, "[designer]\nprompt_style = 'full'\nstore_rejected = false\n\n[designer.memory_policy]\nwindow = 7\nnegatives = 3\n")))
    run = load_selfplay_config(preset="tiny", overrides=["designer.memory_policy.negatives=0", "designer.store_rejected=true"])
    merged = designer_config_of(run, spade_config)
    assert merged.prompt_style == "full" and merged.memory_policy.window == 7  # from [designer]
    assert merged.memory_policy.negatives == 0 and merged.store_rejected is True  # [selfplay.designer] over it
    alone = designer_config_of(run)
    assert alone.prompt_style != "full" or alone.memory_policy.window != 7


def test_the_designers_reply_budgets_have_one_home_the_designer_table(tmp_path: Path) -> None:
    """``[designer.sampling] max_new_tokens`` of spade.toml reaches a run (the run's own
    ``[selfplay.designer]`` wins over it); the run's temperature and top_p win over
    ``[designer]``'s, since the designer's replies are trained at the policy's."""
    from spade_trainer.config import GenerationSettings, load_selfplay_config
    from spade_trainer.designer_stage import designer_config_of
    from spade_trainer.plan import plan_run

    assert not {"designer_max_new_tokens", "hint_max_new_tokens"} & set(GenerationSettings.model_fields)
    spade_config = get_plugins().check_config(load_config(_file(
        tmp_path, "[designer.sampling]\nmax_new_tokens = 300\ntop_p = 0.5\n\n[designer.hint]\nmax_new_tokens = 40\n")))
    bare = load_selfplay_config(overrides=["generation.top_p=0.9"])
    merged = designer_config_of(bare, spade_config)
    assert (merged.sampling.max_new_tokens, merged.hint.max_new_tokens, merged.sampling.top_p) == (300, 40, 0.9)
    tiny = load_selfplay_config(preset="tiny")  # the preset sets the run's budgets in [selfplay.designer]
    assert (designer_config_of(tiny, spade_config).sampling.max_new_tokens,
            designer_config_of(tiny, spade_config).hint.max_new_tokens) == (32, 16)
    over = load_selfplay_config(preset="tiny", overrides=["designer.sampling.max_new_tokens=200"])
    assert designer_config_of(over, spade_config).sampling.max_new_tokens == 200
    rows = dict(plan_run(over, spade_config=spade_config).rows())
    assert rows["token budgets"].startswith("design 200, hint 16, agent turn 12,")


def test_the_update_is_sized_with_the_repairs_of_the_one_designer_table(tmp_path: Path) -> None:
    """Under ``invalid_designs = "shape"`` every attempt is a designer sample: the repairs
    ``[designer]`` of spade.toml sets (not only ``[selfplay.designer]``'s) size the update."""
    from spade_trainer.config import load_selfplay_config
    from spade_trainer.plan import plan_run

    spade_config = get_plugins().check_config(load_config(_file(tmp_path, "[designer]\nrepair_attempts = 4\n")))
    run = load_selfplay_config(overrides=["reward.invalid_designs=shape", "skills_per_iteration=2",
                                          "designs_per_skill=3"])
    assert plan_run(run, spade_config=spade_config).designer_samples == 2 * 3 * (1 + 4)
    assert plan_run(run).designer_samples == 2 * 3 * (1 + 2)  # the designer's default, two repairs


def test_the_old_generation_budget_keys_still_work_with_a_warning_and_clash_loudly(tmp_path: Path) -> None:
    """An old key is moved where it is written, so it wins over an earlier layer's budget as
    it used to (the preset's); one table that sets both homes differently is refused."""
    from spade_trainer.config import load_selfplay_config
    from spade_trainer.designer_stage import designer_config_of

    with pytest.warns(FutureWarning, match=r"--set generation.designer_max_new_tokens=300: \[selfplay.generation\] "
                                           r"designer_max_new_tokens is deprecated: write it as "
                                           r"\[selfplay.designer.sampling\] max_new_tokens"):
        old = load_selfplay_config(preset="tiny", overrides=["generation.designer_max_new_tokens=300"])
    assert designer_config_of(old).sampling.max_new_tokens == 300
    assert "designer_max_new_tokens" not in old.generation.model_dump()
    with pytest.warns(FutureWarning, match="hint_max_new_tokens"):
        hint = load_selfplay_config(preset="tiny", overrides=["generation.hint_max_new_tokens=20"])
    assert designer_config_of(hint).hint.max_new_tokens == 20
    with pytest.warns(FutureWarning):
        later = load_selfplay_config(preset="tiny", overrides=["generation.designer_max_new_tokens=300",
                                                               "designer.sampling.max_new_tokens=200"])
    assert designer_config_of(later).sampling.max_new_tokens == 200  # the later layer wins
    both = _file(tmp_path, "[selfplay.generation]\ndesigner_max_new_tokens = 300\n\n"
                           "[selfplay.designer.sampling]\nmax_new_tokens = 200\n")
    with pytest.raises(ConfigError, match=r"generation.designer_max_new_tokens = 300 and "
                                          r"designer.sampling.max_new_tokens = 200 set the same reply budget twice"):
        load_selfplay_config(preset="tiny", path=both)
