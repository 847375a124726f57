"""``[spade.sandbox]`` reaches the workers of an evaluation: the registry suite opens store
environments under the configuration it is handed (``spade --config FILE eval`` hands that
file's, a self-play run its own), so an environment that allocates past ``memory_mb`` at
reset is an error row with the sandbox's memory error."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_core.config import load_config
from spade_core.evaluation import SuiteContext
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import get_plugins
from spade_core.store import EnvStore
from spade_designer.llm.replay import ReplayBackend
from spade_eval.harness import evaluate
from spade_eval.suites import registry_items


def _errors(config_path: Path | None) -> list[str | None]:
    config = load_config(config_path)
    with EnvStore(config.resolved_store_url) as store:
        items = registry_items(SuiteContext(config, get_plugins(), store), size=1, ids="MemoryHog-v1")
        result = evaluate(ReplayBackend(rules=[(".", "\\boxed{1}")]), items, suite="registry")
    return [e.error for e in result.episodes]


@pytest.mark.parametrize("where", ["--config", "active file"])
def test_the_registry_suite_runs_under_the_configured_memory(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_hog_source: str, tight_sandbox_table: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    with EnvStore(load_config().resolved_store_url) as store:
        m = store.add(memory_hog_source, EnvMetadata(name="MemoryHog", domain="games", skill="eating", max_turns=2))
        store.set_status(m.id, EnvStatus.admitted)
    assert _errors(None) == [None], "the default memory_mb lets it eat"
    if where == "--config":
        tight = tmp_path / "tight.toml"
        tight.write_text(f'[spade]\nhome = "{home}"\n' + tight_sandbox_table)
        (error,) = _errors(tight)
    else:
        (home / "spade.toml").write_text(tight_sandbox_table)
        (error,) = _errors(None)
    assert error is not None and "memory" in error, error
