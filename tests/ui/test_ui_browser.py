"""``spade ui`` in a real headless browser: the registry page and its filters, an
environment page (code, report, stats, lineage, hint), a game played to the end through
sandboxed sessions, and a run's report. Screenshots are taken and checked by what the
page holds (DOM), not by pixels."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from spade_core.source import load_trusted_class

from .conftest import FIXTURES

pytestmark = pytest.mark.slow


def test_registry_lists_store_and_seed_environments_and_filters_them(ui_server: str, page: Any, tmp_path: Path) -> None:
    page.goto(ui_server + "/")
    ids = page.locator("#envs tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert {"hanoi_three-v1", "hanoi_four-v1"} <= set(ids)
    assert any(i.startswith("code_breaker") for i in ids)  # the games plugin's seeds
    page.screenshot(path=str(tmp_path / "registry.png"))
    assert (tmp_path / "registry.png").stat().st_size > 10_000

    page.fill("input[name=q]", "hanoi")
    page.select_option("select[name=status]", "admitted")
    page.click("#apply")
    page.wait_for_url("**/?q=hanoi*")
    shown = page.locator("#envs tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert shown == ["hanoi_three-v1"]
    assert page.inner_text("#count").startswith("1 of ")

    page.goto(ui_server + "/?regret_min=0.1&win_max=0.6")
    assert page.locator("#envs tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)") == ["hanoi_three-v1"]


def test_environment_page_shows_code_report_stats_lineage_and_hint(ui_server: str, page: Any, tmp_path: Path) -> None:
    page.goto(ui_server + "/env/hanoi_three-v1")
    page.screenshot(path=str(tmp_path / "env.png"), full_page=True)
    assert "def solution" in page.inner_text("#code")
    assert page.locator("#code .highlight span").count() > 50  # highlighted, token by token
    report = page.inner_text("#validation")
    assert "passed" in report and "feasibility proven" in report and "reaches reward 1.0" in report
    assert page.locator("button.replay").count() == 1
    assert "step-4" in page.inner_text("#stats") and "0.310" in page.inner_text("#stats")
    assert "Move the smallest disk" in page.inner_text("#hint")
    child = page.locator("#lineage svg a[href='/env/hanoi_four-v1']")
    assert child.count() == 1
    child.click()
    page.wait_for_url("**/env/hanoi_four-v1")
    assert page.locator("#lineage svg a[href='/env/hanoi_three-v1']").count() == 1
    assert "candidate code is not run" in page.inner_text("#play")  # candidates are not played


def test_a_game_is_played_to_the_end_in_the_browser(ui_server: str, page: Any, tmp_path: Path) -> None:
    cls = load_trusted_class((FIXTURES / "tower_of_hanoi.py").read_text(encoding="utf-8"))
    env = cls()
    env.reset(seed=0)
    moves = env.solution()
    page.goto(ui_server + "/env/hanoi_three-v1")
    page.click("#reset")
    page.locator("#player[data-state='playing']").wait_for()  # selectors, not eval: the ui's CSP forbids it
    assert "Tower of Hanoi with 3 disks" in page.inner_text("#transcript")
    for i, move in enumerate(moves, 1):
        page.fill("#action", move)
        page.click("#send")
        page.locator(f"#play-status:text-matches('^step {i}'), #player:not([data-state='playing'])").first.wait_for()
    page.screenshot(path=str(tmp_path / "played.png"))
    assert page.get_attribute("#player", "data-state") == "over"
    assert page.inner_text("#play-status") == "episode over (terminated), last reward 1.000"
    assert "Solved!" in page.inner_text("#transcript")
    assert page.is_disabled("#action")


def test_a_wrong_action_is_shown_and_the_game_goes_on(ui_server: str, page: Any) -> None:
    page.goto(ui_server + "/env/hanoi_three-v1")
    page.click("#reset")
    page.locator("#player[data-state='playing']").wait_for()  # selectors, not eval: the ui's CSP forbids it
    page.fill("#action", "let me think")
    page.click("#send")
    page.locator("#transcript", has_text="Invalid action").wait_for()
    assert page.get_attribute("#player", "data-state") == "playing"


def test_a_run_report_is_shown_with_its_plots(ui_server: str, page: Any) -> None:
    from spade_trainer.metrics import MetricsLog

    run = Path(os.environ["SPADE_UI_TEST_RUNS"]) / "tiny-run"
    log = MetricsLog(run)
    for i in (1, 2):
        log.write({"iteration": i, "designed": 2, "admitted": 1, "rejected_at": {"contract": 1}, "regret_mean": 0.1,
                   "win_rate": 0.5, "hinted_win_rate": 0.6, "pool_size": 20 + i, "envs_played": 1, "episodes": 4})
    page.goto(ui_server + "/runs")
    page.click("text=tiny-run")
    page.wait_for_url("**/runs/tiny-run")
    assert "2 iterations (1 to 2)" in page.inner_text("#headline")
    assert "live" in page.inner_text("body")  # written just now: the page refreshes itself
    widths = page.locator("figure img").evaluate_all("imgs => imgs.map(i => i.naturalWidth)")
    assert len(widths) == 10 and all(w > 0 for w in widths)


def test_unknown_pages_answer_with_a_page_not_a_traceback(ui_server: str, page: Any) -> None:
    response = page.goto(ui_server + "/env/no_such_env-v9")
    assert response.status == 404
    assert "no_such_env" in page.inner_text("#error")
    response = page.goto(ui_server + "/?regret_min=lots")
    assert response.status == 400 and "regret_min must be a number" in page.inner_text("#error")


#: Run folder names a person might be handed (a copied run, an unpacked archive): markup in
#: the page's text, an attribute's end, and characters that change a URL's meaning.
HOSTILE_RUN_NAMES = ['"><svg onload=window.__pwned=2>', '<img src=x onerror=window.__pwned=1> #?%41']
#: What the page would hold had a name been parsed as markup.
INJECTED = "img[src='x'], svg[onload], [onerror], [onload]"


def test_a_run_named_like_markup_is_shown_as_text_and_runs_no_script(ui_server: str, page: Any) -> None:
    from spade_trainer.metrics import MetricsLog

    for name in HOSTILE_RUN_NAMES:
        MetricsLog(Path(os.environ["SPADE_UI_TEST_RUNS"]) / name).write(
            {"iteration": 1, "designed": 1, "admitted": 1, "regret_mean": 0.1, "win_rate": 0.5, "pool_size": 3})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    response = page.goto(ui_server + "/runs")
    assert response.headers["content-security-policy"] == "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    links = page.locator("#runs a").evaluate_all("links => links.map(a => a.textContent)")
    assert set(HOSTILE_RUN_NAMES) <= set(links)
    assert page.locator(INJECTED).count() == 0
    for name in HOSTILE_RUN_NAMES:
        page.goto(ui_server + "/runs")
        page.locator("#runs a", has_text=name).click()  # its link leads to its own report
        page.wait_for_load_state()
        assert name in page.inner_text("#headline")
        assert page.locator(INJECTED).count() == 0, page.content()[:2000]
        widths = page.locator("figure img").evaluate_all("imgs => imgs.map(i => i.naturalWidth)")
        assert widths and all(w > 0 for w in widths)  # the plots' URLs carry the name encoded
        assert page.evaluate("window.__pwned") is None
    assert dialogs == []
