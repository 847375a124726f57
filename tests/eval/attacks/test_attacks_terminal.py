"""What ``spade eval`` and ``spade compare --paper`` print from data is shown, never obeyed: a
benchmark's problem ids, the errors they raise, a run's folder, its suites, groups and
snapshot may hold terminal control sequences (``ESC ] 52`` writes the clipboard, ``ESC ] 0``
retitles the window, ``ESC ] 8`` makes a hyperlink, 8-bit ``CSI``) and rich markup
(``[link=...]``). Before, both commands printed them raw: the sanitizer that ``spade show``
and ``list`` use (``spade_core.terminal``) never reached spade-eval.

``spade eval`` plays a LiveCodeBench file against a real OpenAI-compatible server (a small
one on loopback, answering every turn with the same program); ``spade compare --paper``
reads runs stored as ``spade eval --run`` stores them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from spade_core.app.cli import build_app
from spade_core.app.eval_harness import append_to_run, evaluate
from spade_core.evaluation import EvalItem
from spade_designer.llm.replay import ReplayBackend
from typer.testing import CliRunner

#: Clipboard write, window title, a hyperlink, an 8-bit CSI, a bell, a right-to-left
#: override and rich markup: each a way for data to act on the terminal that shows it.
HOSTILE = "x\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\\x9b2J\u202e[link=http://evil.example/]y[/link]"
#: Characters that must never reach the terminal from data.
OBEYED = ("\x1b", "\x9b", "\x07", "\u202e")
SUM = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


class _Completions(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": SUM}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def completion_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Completions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _cli(*args: str) -> tuple[int, str]:
    run = CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "400"})
    if run.exception is not None and not isinstance(run.exception, SystemExit):
        raise run.exception
    return run.exit_code, run.stdout + run.stderr


def _obeyed(text: str) -> list[str]:
    """What of :data:`HOSTILE` the terminal would obey: its control characters, and its rich
    markup when rich read it as markup (the tag is then gone from the text)."""
    return [c for c in OBEYED if c in text] + ([] if "[link=" in text else ["rich markup"])


def test_spade_eval_prints_problem_ids_and_their_errors_as_visible_escapes(tmp_path: Path, spade_home: Path) -> None:
    tests = json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}])
    rows = [{"question_id": f"good{HOSTILE}", "question_content": "Print a + b.", "starter_code": "",
             "contest_date": "2025-03-01", "public_test_cases": tests, "private_test_cases": tests, "metadata": "{}"},
            {"question_id": f"broken{HOSTILE}", "question_content": "Print a + b.", "starter_code": "",
             "contest_date": "2025-03-01", "public_test_cases": tests, "private_test_cases": f"not tests {HOSTILE}",
             "metadata": "{}"}]
    data = tmp_path / "lcb.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with completion_server() as url:
        for extra in ((), ("--json",)):
            code, out = _cli("eval", "--suite", "livecodebench", "-o", f"data={data}", "-o", "time_limit=3",
                             "--policy", f"openai:{url}#m{HOSTILE}", "--size", "1", *extra)
            assert code == 0, out
            assert not _obeyed(out), (extra, _obeyed(out), out[-2000:])
            assert "good" in out and "broken" in out and "\\x1b]0;pwned\\x07" in out.replace("\\u001b", "\\x1b") \
                .replace("\\u0007", "\\x07"), out[-2000:]


def test_spade_compare_paper_prints_run_data_as_visible_escapes(tmp_path: Path) -> None:
    class Answered:
        def reset(self, seed: int | None = None) -> tuple[str, dict]:
            return "Say yes.", {}

        def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
            return "ok", 1.0, True, False, {}

        def close(self) -> None:
            pass

    runs = []
    for name in ("base", "spade" + HOSTILE.replace("/", "|")):  # a folder's name: no slash
        items = [EvalItem(group=f"Math/{HOSTILE}", seed=0, label=f"task{HOSTILE}", max_turns=1, column="RG-Math",
                          make_env=Answered)]
        result = evaluate(ReplayBackend(rules=[(".", "yes")]), items, suite=f"reasoning_gym_hard{HOSTILE}",
                          snapshot=f"embedded:SmolLM2-135M-Instruct{HOSTILE}", size=1)
        folder = tmp_path / name
        folder.mkdir()
        append_to_run(result, folder)
        runs.append(str(folder))
    code, out = _cli("compare", *runs, "--baseline", "base", "--paper", "--out", str(tmp_path / "out"))
    assert code == 0, out
    assert not _obeyed(out), (_obeyed(out), out[-3000:])
    assert "\\x1b]0;pwned\\x07" in out


@pytest.fixture
def spade_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home
