"""A real ``spade ui`` server on loopback over a store built for the test, and a real
headless browser (Debian's chromium driven by playwright's Python client; nothing is
downloaded). Without chromium the browser tests skip, except under ``CI=true``, where
they fail: CI installs it (.ci/run)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spade_core.config import load_config
from spade_core.metadata import EnvMetadata, EnvStatus, Finding, StatsSnapshot, ValidationReport
from spade_core.plugins import get_plugins
from spade_core.store import EnvStore

FIXTURES = Path(__file__).parents[1] / "core" / "fixtures" / "reference_envs"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def build_store(url: str) -> None:
    """Hanoi (admitted, validated, measured twice) and its edited child (candidate)."""
    hanoi = (FIXTURES / "tower_of_hanoi.py").read_text(encoding="utf-8")
    report = ValidationReport(
        passed=True, feasibility_proven=True,
        findings=[Finding(stage="contract", ok=True, message="reset and step return the right types"),
                  Finding(stage="feasibility", ok=True, message="the solution reaches reward 1.0 in 7 steps",
                          actions=["\\boxed{move A C}", "\\boxed{move A B}"], seed=3)],
    )
    with EnvStore(url) as store:
        parent = store.add(hanoi, EnvMetadata(name="hanoi_three", domain="games", skill="planning",
                                              description="Tower of Hanoi with three disks", max_turns=20,
                                              hint="Move the smallest disk every other turn."))
        store.set_validation(parent.id, report)
        store.set_status(parent.id, EnvStatus.admitted)
        store.record_stats(parent.id, StatsSnapshot(policy_snapshot="step-4", samples=16, win_rate=0.25, regret=0.31))
        store.record_stats(parent.id, StatsSnapshot(policy_snapshot="step-8", samples=16, win_rate=0.5, regret=0.12))
        store.add(hanoi.replace("n_disks=3", "n_disks=4"),
                  EnvMetadata(name="hanoi_four", domain="games", skill="planning", parent_ids=[parent.id],
                              description="Tower of Hanoi with four disks"))


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn
    from spade_serve.server import free_port

    from spade_ui import UiSettings, create_ui_app, ui_uvicorn_config

    root = tmp_path_factory.mktemp("ui")
    url = f"sqlite:///{root / 'store.db'}"
    build_store(url)
    runs = root / "runs"
    runs.mkdir()
    config = load_config(None, store_url=url)
    port = free_port()
    settings = UiSettings(port=port, runs_dir=runs)
    app = create_ui_app(config, get_plugins(), settings)
    server = uvicorn.Server(ui_uvicorn_config(app, settings))  # as `spade ui` runs it
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the ui server did not start"
        time.sleep(0.02)
    os.environ["SPADE_UI_TEST_RUNS"] = str(runs)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: chromium must be installed for the browser tests (.ci/run installs it)")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: playwright must be installed for the browser tests (requirements-dev.txt)")
        pytest.skip("playwright is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        pg.close()
