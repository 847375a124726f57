"""Configuration, hook registration, and the ``spade design`` command."""

from __future__ import annotations

import json

import pytest
from spade_core.config import load_config
from spade_core.errors import ConfigError
from spade_core.plugins import SpadePlugins
from spade_designer.config import DesignerConfig, MemoryPolicy
from typer.testing import CliRunner

from .conftest import LANTERN


def test_defaults_follow_the_reference_recipe():
    cfg = DesignerConfig()
    assert cfg.memory_policy.window == 200 and cfg.memory_policy.high_regret == 2
    assert cfg.memory_policy.band == (0.15, 0.85) and cfg.memory_policy.negatives == 1
    assert cfg.document_words == 4000 and cfg.backend == "transformers" and cfg.corpus == "pydocs"


def test_designer_section_of_spade_toml(tmp_path):
    path = tmp_path / "spade.toml"
    path.write_text('[designer]\nbackend = "openai"\nrepair_attempts = 4\n[designer.memory_policy]\nwindow = 50\n')
    cfg = DesignerConfig.from_spade_config(load_config(path), model="qwen")
    assert (cfg.backend, cfg.model, cfg.repair_attempts, cfg.memory_policy.window) == ("openai", "qwen", 4, 50)


@pytest.mark.parametrize(
    "data, match",
    [
        ({"repair_attempts": -1}, "designer.repair_attempts"),
        ({"memory_policy": {"band": [0.9, 0.1]}}, "band must satisfy"),
        ({"colour": "blue"}, "designer.colour"),
    ],
)
def test_invalid_designer_config_names_the_field(data, match):
    with pytest.raises(ConfigError, match=match):
        DesignerConfig.load(data)


def test_memory_band_must_be_ordered():
    with pytest.raises(ValueError):
        MemoryPolicy(band=(0.5, 0.5))


def test_builtins_are_registered_through_the_hooks():
    plugins = SpadePlugins()
    assert {"transformers", "openai", "vllm", "replay"} <= set(plugins.llm_backends())
    assert {"pydocs", "jsonl", "parquet", "hf"} <= set(plugins.corpora())
    assert "store" in plugins.memories()
    replay = plugins.create("llm_backends", "replay", model=None, outputs=["x"])
    assert replay.chat([[{"role": "user", "content": "q"}]])[0].text == "x"
    corpus = plugins.create("corpora", "pydocs", chunk_words=100)
    assert corpus.name == "pydocs"


def _cli(tmp_path, extra: str = ""):
    from spade_core.app.cli import build_app

    fence = "```"
    reply = f"{fence}python\n{LANTERN}{fence}\n"
    (tmp_path / "spade.toml").write_text(
        "[spade]\n"
        f'store_url = "sqlite:///{tmp_path / "store.db"}"\n'
        "[designer]\n"
        'backend = "replay"\n'
        "document_words = 50\n"
        "repair_attempts = 0\n"
        "[designer.backend_options]\n"
        f"rules = [[\"source code of an environment\", \"Halve the range each guess.\"], [\"Design a new\", [{json.dumps(reply)}, \"no code\"]]]\n"
        "[validation]\n"
        "fuzz_examples = 4\ncall_time_bound_s = 5.0\nsandbox_call_timeout_s = 20.0\n" + extra
    )
    return build_app(), ["--config", str(tmp_path / "spade.toml")]


def test_spade_design_json_reports_designed_valid_admitted_and_rejections(tmp_path):
    app, base = _cli(tmp_path)
    result = CliRunner().invoke(app, [*base, "design", "--domain", "games", "--skill", "logical_deduction",
                                      "--n", "2", "--seed", "3", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{"):])
    assert (out["designed"], out["valid"], out["admitted"], out["rejected"]) == (2, 1, 1, 1)
    assert out["rejected_by_stage"] == {"extract": 1}
    assert out["candidates"][0]["hint"] == "Halve the range each guess."
    assert out["model"] == "replay" and out["wall_s"] > 0


def test_spade_design_table(tmp_path):
    app, base = _cli(tmp_path)
    result = CliRunner().invoke(app, [*base, "design", "--domain", "games", "--skill", "logical_deduction", "--n", "2"])
    assert result.exit_code == 0, result.output
    assert "totals" in result.stdout and "rejected by stage" in result.stdout and "extract: 1" in result.stdout


def test_spade_design_unknown_domain_is_one_clear_error(tmp_path):
    app, base = _cli(tmp_path)
    result = CliRunner().invoke(app, [*base, "design", "--domain", "chess", "--skill", "x"])
    assert result.exit_code == 2
    assert "unknown domain 'chess'" in result.output


def test_building_the_spade_command_does_not_import_the_validation_pipeline(tmp_path):
    """Every ``spade`` invocation registers ``validate`` and ``fuzz``; the pipeline (and
    hypothesis, a quarter of a second) loads only when one of them runs."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from spade_core.app.cli import build_app\n"
        "build_app()\n"
        "print(sorted(m for m in ('hypothesis', 'spade_designer.validation.pipeline') if m in sys.modules))\n"
    )
    env = {**os.environ, "SPADE_HOME": str(tmp_path)}
    env.pop("SPADE_PLUGINS", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_spade_design_logs_progress_lines_when_output_is_not_a_terminal(tmp_path):
    app, base = _cli(tmp_path)
    result = CliRunner().invoke(app, [*base, "design", "--domain", "games", "--skill", "logical_deduction", "--n", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "starting the replay backend" in lines
    steps = [line for line in lines if line.startswith("[") and "s] " in line]
    assert any(line.endswith("design: 0/2") for line in steps) and any(line.endswith("admission: 2/2") for line in steps)


def test_the_cpu_profile_sits_beneath_the_designer_table_and_the_flags():
    from spade_core.config_file import merge_tables
    from spade_designer.commands import CPU_PROFILE, profile_defaults

    # auto: the default backend with its embedded model, on a machine without CUDA here
    assert profile_defaults("auto", {}, None, None) == CPU_PROFILE
    assert profile_defaults("auto", {"backend": "openai"}, None, None) == {}
    assert profile_defaults("auto", {}, None, "some/model") == {}
    assert profile_defaults("full", {}, None, None) == {}
    table = {"repair_attempts": 1, "memory_policy": {"window": 50}}
    cfg = DesignerConfig.load(merge_tables(merge_tables(profile_defaults("cpu", table, None, None), table),
                                          {"document_words": 9}))
    assert cfg.repair_attempts == 1 and cfg.document_words == 9  # the table, then the flag, win
    assert cfg.sampling.max_new_tokens == 256 and cfg.memory_policy.window == 50
    assert cfg.memory_policy.code_prefix_chars == 300  # nested profile values survive a nested table


def test_spade_design_unknown_profile_is_a_usage_error(tmp_path):
    app, base = _cli(tmp_path)
    result = CliRunner().invoke(app, [*base, "design", "--domain", "games", "--skill", "logical_deduction",
                                      "--profile", "gpu"])
    assert result.exit_code == 2 and "must be auto, cpu or full" in result.output
