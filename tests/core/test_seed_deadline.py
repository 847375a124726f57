"""Seeds run under a deadline: a seed whose ``step()`` hangs is stopped at the sandbox's
call deadline with the ``call_timeout`` error store code gets, in ``spade play``,
``gymnasium.make`` and ``spade eval``'s registry suite alike (before, each froze with no
message). The seed is the regexes plugin's ``regex_hang`` (``regex_plugin``): plugin code
that imports its plugin's helper module, run in a worker of the trusted pool."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from spade_core.config import SpadeConfig
from spade_core.evaluation import SuiteContext
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import SpadePlugins
from spade_core.sandbox_settings import SandboxSettings
from spade_core.seeds import open_trusted_env
from spade_core.store import EnvStore
from spade_sandbox.errors import SandboxTimeout

from .test_plugin_checks import run_spade, site  # noqa: F401 (the fixture)

HANG = "\\boxed{hang}"
TIGHT = "[spade.sandbox]\ncall_timeout_s = 1\n"


def _timeout_text(message: str) -> str:
    """A timeout message without the worker's pid."""
    return re.sub(r"worker \d+", "worker N", message)


def test_spade_play_reports_the_hung_step_and_goes_on(site: Path, tmp_path: Path) -> None:  # noqa: F811
    home = tmp_path / "home"
    home.mkdir()
    (home / "spade.toml").write_text(TIGHT, encoding="utf-8")
    started = time.monotonic()
    played = run_spade(site, home, "play", "regex_hang-v1", "--seed", "1", stdin="hang\n:quit\n")
    assert played.returncode == 0, played.stderr
    out = " ".join(played.stdout.split())
    assert "the environment failed: worker" in out and "did not answer within 1 s during step(); it was killed" in out
    assert "Traceback" not in played.stdout + played.stderr
    assert time.monotonic() - started < 60


def test_gym_make_of_a_seed_and_of_store_code_time_out_alike(site: Path, tmp_path: Path) -> None:  # noqa: F811
    home = tmp_path / "home"
    home.mkdir()
    (home / "spade.toml").write_text(TIGHT, encoding="utf-8")
    source = (site / "tmp_spade_regex" / "envs" / "regex_hang.py").read_text(encoding="utf-8")
    with EnvStore(f"sqlite:///{home / 'store.db'}") as store:
        # the same code from the store: its helper module is the domain's allowed module
        stored = store.add(source, EnvMetadata(name="stored_hang", domain="regexes", skill="pattern_writing",
                                               max_turns=8))
        store.set_status(stored.id, EnvStatus.admitted)
    made = run_spade(site, home, code=f"""
import gymnasium as gym, spade_core
for gym_id in ("spade/regex_hang-v1", "spade/{stored.id}"):
    env = gym.make(gym_id)
    env.reset(seed=1)
    try:
        env.step({HANG!r})
    except Exception as exc:
        print(type(exc).__name__, getattr(exc, "kind", None), exc)
""")
    assert made.returncode == 0, made.stderr
    seed_line, store_line = made.stdout.splitlines()
    assert seed_line.startswith("SandboxTimeout timeout worker ")
    assert _timeout_text(seed_line) == _timeout_text(store_line)
    assert "did not answer within 1 s during step()" in seed_line


def test_the_registry_suite_of_spade_eval_opens_seeds_under_the_deadline(site: Path) -> None:  # noqa: F811
    from spade_eval.suites import registry_items

    config = SpadeConfig(sandbox=SandboxSettings(call_timeout_s=1.0))
    context = SuiteContext(config, SpadePlugins())
    (item,) = registry_items(context, size=1, ids="regex_hang-v1")
    env = item.make_env()
    env.reset(seed=item.seed)
    started = time.monotonic()
    with pytest.raises(SandboxTimeout, match="did not answer within 1 s during step"):
        env.step(HANG)
    assert time.monotonic() - started < 10
    # a step that does not hang is answered as in-process code would answer it
    fresh = item.make_env()
    obs, _ = fresh.reset(seed=item.seed)
    assert obs.startswith("Find a pattern") and fresh.step("\\boxed{cat}")[1] in (0.0, 0.25, 0.5)
    fresh.close()


def test_a_trusted_seed_imports_its_plugin_modules_and_in_process_stays_available(site: Path) -> None:  # noqa: F811
    source = (site / "tmp_spade_regex" / "envs" / "regex_match.py").read_text(encoding="utf-8")
    settings = SandboxSettings(call_timeout_s=5.0)
    worker = open_trusted_env(source, source_name="regex_match", sandbox=settings)
    local = open_trusted_env(source, source_name="regex_match", in_process=True)
    assert type(worker).__name__ == "SandboxedEnv" and type(local).__name__ == "ReferenceEnvAdapter"
    for env in (worker, local):
        env.reset(seed=3)
        assert env.step(env.unwrapped.solution()[0])[1:3] == (1.0, True)
        env.close()
    # a module the seed imports that its worker cannot find is named, with what to do
    broken = source.replace("tmp_spade_regex.helpers", "tmp_spade_regex.no_such_helpers")
    with pytest.raises(Exception, match="No module named 'tmp_spade_regex.no_such_helpers'.*module path"):
        open_trusted_env(broken, source_name="broken", sandbox=settings)
