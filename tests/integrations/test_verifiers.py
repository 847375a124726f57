"""verifiers 0.4 plays SPADE registry environments through ``spade serve``
(``integrations/verifiers``, docs/verifiers.md).

The integration cannot be installed beside SPADE (verifiers 0.4 pins mcp 2.0.0; spade-serve's
openenv 0.10 holds mcp below 2), so it runs under another interpreter:
``SPADE_VERIFIERS_PYTHON`` names a Python with verifiers 0.4 and ``integrations/verifiers``
installed. Without it those tests skip, saying so; the rules the integration restates from
SPADE are checked here either way.

With it: the taskset's rows are ``spade eval --suite registry``'s episodes, with ids or
without (every environment the server lists, kept to a domain or a skill); an unreachable
server, an unknown id and an empty selection stop ``vf-eval`` naming them (the model there
is a hand-written OpenAI-compatible double that is never reached: error paths only);
``vf-eval`` at its default concurrency plays stateful environments, several episodes of
each at once, every episode in a session of its own, as ``spade eval`` plays them (a double
that copies the box each observation asks for: the same replies for both runners); and,
with the embedded model behind ``transformers serve`` (offline), verifiers' own runner
(``vf-eval``) and ``spade eval`` play the same episodes (a seed environment and a store
environment, both sandboxed by the server) to the same returns and successes, sending the
model the same conversations and getting the same replies (a pass-through proxy records
both runners' requests).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from processes import stop, wait_healthy
from spade_serve.server import free_port

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "integrations" / "verifiers" / "src" / "spade_verifiers" / "protocol.py"
HANOI = ROOT / "tests" / "core" / "fixtures" / "reference_envs" / "tower_of_hanoi.py"
VERIFIERS_PYTHON = os.environ.get("SPADE_VERIFIERS_PYTHON")
needs_verifiers = pytest.mark.skipif(
    not VERIFIERS_PYTHON and os.environ.get("CI") != "true",  # CI builds it (.ci/run): never skipped there
    reason="SPADE_VERIFIERS_PYTHON does not name a Python with verifiers 0.4 and integrations/verifiers "
    'installed (eval "$(bash scripts/setup-verifiers.sh)" makes one and sets it; CI does)',
)
#: A seed environment and a store environment (admitted in the fixture's registry).
IDS = ["code_breaker-v1", "hanoi-v1"]
#: A store environment whose second step raises (the error path of an episode).
BROKEN = "broken-v1"
BROKEN_SOURCE = '''\
class BrokenEnv:
    """Asks for anything in a box; its second step raises."""

    def reset(self, seed=None):
        self.turn = 0
        return f"Reply with anything in a box, e.g. \\\\boxed{{go}} (episode {seed}).", {}

    def step(self, action):
        self.turn += 1
        if self.turn >= 2:
            raise RuntimeError("the environment broke on purpose")
        return "Once more.", 0.5, False, False, {}

    def solution(self):
        return ["\\\\boxed{go}"]
'''
#: Two store environments with state: each turn asks for the episode's seed and the turn's
#: number in a box; three right answers win, a wrong one ends the episode at 0. An episode
#: that shared a session (or a conversation) with another would be asked for, or answer,
#: the other's numbers. ``tally-v1`` may take 5 turns (it is won in 3), ``relay-v1`` only
#: 2 (its episodes end at the cap, return 0, not terminated).
TALLY, RELAY = "tally-v1", "relay-v1"
STATEFUL_SKILL = "recall"
STATEFUL_SOURCE = r'''
class StatefulEnv:
    """Asks for its episode's seed and the turn's number in a box; three right answers win."""

    def reset(self, seed=None):
        self.seed, self.turn = seed, 0
        return self._ask(), {}

    def _want(self):
        return "\\boxed{" + f"{self.seed}-{self.turn}" + "}"

    def _ask(self):
        return f"Episode {self.seed}, turn {self.turn}: reply {self._want()}."

    def step(self, action):
        if action.strip() != self._want():
            return f"Wrong: {action.strip()!r} is not {self._want()}.", 0.0, True, False, {}
        self.turn += 1
        if self.turn == 3:
            return "Three right.", 1.0, True, False, {}
        return self._ask(), 0.0, False, False, {}
'''
#: What the fixture's server serves, in its listing's order.
SERVED = [*IDS, BROKEN, TALLY, RELAY]


def _protocol() -> ModuleType:
    """``spade_verifiers.protocol``, loaded by path: the package itself imports verifiers."""
    spec = importlib.util.spec_from_file_location("spade_verifiers_protocol", PROTOCOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the rules the integration restates (no verifiers needed) --------------------------------


def test_the_rules_the_integration_restates_are_spade_evals() -> None:
    from spade_core.app.eval_harness import SYSTEM_PROMPT, evaluate
    from spade_core.returns import WIN_THRESHOLD, episode_return, is_win
    from spade_designer.llm.base import DEFAULT_TOP_P
    from spade_eval.suites import REGISTRY_SUITE

    proto = _protocol()
    assert proto.SYSTEM_PROMPT == SYSTEM_PROMPT
    assert proto.WIN_THRESHOLD == WIN_THRESHOLD
    defaults = inspect.signature(evaluate).parameters
    assert REGISTRY_SUITE.defaults == {}  # so spade eval falls back to evaluate's own
    assert proto.DEFAULT_MAX_TOKENS == defaults["max_new_tokens"].default == 256
    assert proto.DEFAULT_TEMPERATURE == defaults["temperature"].default == 0.0
    assert proto.DEFAULT_TOP_P == DEFAULT_TOP_P
    for reward in (None, -3.0, -1.0, 0.0, 0.25, WIN_THRESHOLD, 1.0, 1.5, math.nan, math.inf):
        for terminated in (True, False):
            try:  # what spade eval scores: a non-finite reward is 0 (_Live.result)
                expected = episode_return(reward, terminated)
            except ValueError:
                expected = 0.0
            assert proto.episode_return(reward, terminated) == expected, (reward, terminated)
            assert proto.is_win(expected) == is_win(expected)
    assert proto.parse_ids("a-v1, b-v1 c") == ["a-v1", "b-v1", "c"]
    assert proto.parse_ids(["a-v1,b-v1", "c"]) == ["a-v1", "b-v1", "c"]
    assert proto.turn_cap(12, 3) == 3 and proto.turn_cap(4, 30) == 4 and proto.turn_cap(None, 3) == 3
    assert proto.turn_cap(7, None) == 7 and proto.turn_cap(None, None) is None


@pytest.fixture(scope="module")
def registry_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SPADE_HOME whose store holds ``hanoi-v1`` (admitted, max_turns 12), ``broken-v1``
    (admitted, max_turns 5), ``tally-v1`` and ``relay-v1`` (admitted, skill ``recall``,
    max_turns 5 and 2), all of domain ``games``."""
    home = tmp_path_factory.mktemp("verifiers-home")
    code = (
        "from pathlib import Path\n"
        "from spade_core.config import load_config\n"
        "from spade_core.metadata import EnvMetadata, EnvStatus\n"
        "from spade_core.store import EnvStore\n"
        "with EnvStore(load_config().resolved_store_url) as store:\n"
        f"    m = store.add(Path({str(HANOI)!r}).read_text(), EnvMetadata(name='hanoi', domain='games', "
        "skill='planning', max_turns=12))\n"
        "    store.set_status(m.id, EnvStatus.admitted)\n"
        "    assert m.id == 'hanoi-v1', m.id\n"
        f"    b = store.add({BROKEN_SOURCE!r}, EnvMetadata(name='broken', domain='games', skill='planning', "
        "max_turns=5))\n"
        "    store.set_status(b.id, EnvStatus.admitted)\n"
        f"    assert b.id == {BROKEN!r}, b.id\n"
        f"    for name, cap, want in (('tally', 5, {TALLY!r}), ('relay', 2, {RELAY!r})):\n"
        f"        s = store.add({STATEFUL_SOURCE!r}, EnvMetadata(name=name, domain='games', "
        f"skill={STATEFUL_SKILL!r}, max_turns=cap))\n"
        "        store.set_status(s.id, EnvStatus.admitted)\n"
        "        assert s.id == want, s.id\n"
    )
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "SPADE_HOME": str(home)}, cwd=home, check=True)
    return home


def _registry_items(home: Path, ids: str | None, size: int, seed: int, max_turns: int | None, *,
                    domain: str | None = None, skill: str | None = None) -> list[tuple[str, int, int]]:
    """``(label, seed, turn cap)`` of each episode ``spade eval --suite registry`` plays
    (``-o ids=``, ``-o domain=``, ``-o skill=``)."""
    return _registry_runs(home, [{"ids": ids, "size": size, "seed": seed, "max_turns": max_turns, "domain": domain,
                                  "skill": skill}])[0]


def _registry_runs(home: Path, runs: list[dict[str, Any]]) -> list[list[tuple[str, int, int]]]:
    """:func:`_registry_items` of several runs (its keywords each), in one process."""
    code = (
        "import json, sys\n"
        "from spade_core.config import load_config\n"
        "from spade_core.evaluation import SuiteContext\n"
        "from spade_core.plugins import get_plugins\n"
        "from spade_core.store import EnvStore\n"
        "from spade_eval.suites import registry_items\n"
        "config = load_config()\n"
        "out = []\n"
        "with EnvStore(config.resolved_store_url) as store:\n"
        "    context = SuiteContext(config, get_plugins(), store)\n"
        "    for run in json.loads(sys.argv[1]):\n"
        "        cap = run['max_turns']\n"
        "        items = registry_items(context, size=run['size'], seed=run['seed'], ids=run['ids'], "
        "domain=run['domain'], skill=run['skill'])\n"
        "        out.append([[i.label, i.seed, min(i.max_turns, cap) if cap else i.max_turns] for i in items])\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, json.dumps(runs)], env={**os.environ, "SPADE_HOME": str(home)},
                          cwd=home, capture_output=True, text=True, check=True)
    return [[tuple(row) for row in items] for items in json.loads(done.stdout)]


def test_the_restated_episode_order_is_the_registry_suites(registry_home: Path) -> None:
    proto = _protocol()
    items = _registry_items(registry_home, ",".join(IDS), 3, 5, 3)
    own = {"code_breaker-v1": 12, "hanoi-v1": 12}
    assert [(i, s, proto.turn_cap(own[i], 3)) for i, s in proto.episode_seeds(IDS, 3, 5)] == items
    assert [s for _, s, _ in items] == [5, 6, 7, 5, 6, 7]
    with pytest.raises(ValueError, match="size must be at least 1"):
        list(proto.episode_seeds(IDS, 0, 0))


# --- servers -----------------------------------------------------------------------------------


def _spade_serves(home: Path, *commands: list[str]) -> Iterator[list[str]]:
    """``spade serve`` with each of ``commands`` (its ids and options), started at once:
    their URLs."""
    started = []
    try:
        for args in commands:
            port = free_port()
            cmd = [sys.executable, "-m", "spade_core.app.cli", "serve", *args, "--port", str(port),
                   "--log-level", "warning"]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=home,
                                    env={**os.environ, "SPADE_HOME": str(home)})
            started.append((proc, f"http://127.0.0.1:{port}"))
        for proc, url in started:
            wait_healthy(url + "/health", proc, "spade serve", 60)
        yield [url for _, url in started]
    finally:
        for proc, _ in started:
            stop(proc, 30)


def _spade_serve(home: Path, *args: str) -> Iterator[str]:
    for urls in _spade_serves(home, [*SERVED, *args]):
        yield urls[0]


@pytest.fixture(scope="module")
def serve(registry_home: Path) -> Iterator[str]:
    """``spade serve code_breaker-v1 hanoi-v1 broken-v1 tally-v1 relay-v1`` on loopback
    (every session sandboxed)."""
    yield from _spade_serve(registry_home)


@pytest.fixture(scope="module")
def listing_servers(registry_home: Path) -> Iterator[tuple[str, str]]:
    """``spade serve --domain games`` and ``spade serve --all``: ``(games, everything)``."""
    for urls in _spade_serves(registry_home, ["--domain", "games"], ["--all"]):
        yield urls[0], urls[1]


#: A double's reply: always the same text, or made from the request's body.
Reply = str | Callable[[dict[str, Any]], str]


class _Recorder(ThreadingHTTPServer):
    """Records every model call (its tag: the first path segment), and the most calls of
    a tag it held at once (``peak``). ``upstream``: passes each call on, one at a time (a
    model server may not answer a batch of concurrent requests exactly as it answers each
    alone, and the runners' replies are compared); else a double answers ``reply``."""

    daemon_threads = True

    def __init__(self, upstream: str | None, reply: Reply | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.reply = reply
        self.records: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.upstream_lock = threading.Lock()
        self.in_flight: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Recorder

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        tag, _, rest = self.path.lstrip("/").partition("/")
        with self.server.lock:
            self.server.in_flight[tag] += 1
            self.server.peak[tag] = max(self.server.peak[tag], self.server.in_flight[tag])
        try:
            status, answer = self._answer(body, rest)
        finally:
            with self.server.lock:
                self.server.in_flight[tag] -= 1
        with self.server.lock:
            self.server.records.append({"tag": tag, "request": body, "status": status, "answer": answer})
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, body: dict[str, Any], rest: str) -> tuple[int, Any]:
        server = self.server
        if server.upstream is not None:
            with server.upstream_lock:
                reply = httpx.post(f"{server.upstream}/{rest}", json=body, timeout=600)
            return reply.status_code, reply.json()
        if server.reply is None:  # a double that refuses every call
            return 500, {"error": {"message": "this double answers no model call"}}
        content = server.reply if isinstance(server.reply, str) else server.reply(body)
        return 200, {
            "id": "double", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _recording(upstream: str | None, reply: Reply | None = None) -> Iterator[_Recorder]:
    server = _Recorder(upstream, reply)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def double() -> Iterator[_Recorder]:
    """An OpenAI-compatible double for the error paths: it records and refuses every call."""
    yield from _recording(None)


@pytest.fixture
def parrot() -> Iterator[_Recorder]:
    """An OpenAI-compatible double for the environment's error path: it always replies
    `` \\boxed{go} `` (spaces kept: the reply reaches the environment as it came)."""
    yield from _recording(None, " \\boxed{go} ")


def _copy_the_box(body: dict[str, Any]) -> str:
    """Replies with the last box the last observation shows, a moment later (so that
    concurrent episodes' turns interleave)."""
    time.sleep(0.05)
    boxes = re.findall(r"\\boxed\{[^}]*\}", body["messages"][-1]["content"])
    return boxes[-1] if boxes else "no box"


@pytest.fixture
def copycat() -> Iterator[_Recorder]:
    """An OpenAI-compatible double that copies the box each observation asks for."""
    yield from _recording(None, _copy_the_box)


@pytest.fixture(scope="module")
def model(model_server: tuple[str, str]) -> Iterator[tuple[_Recorder, str]]:
    """The session's ``transformers serve`` holding the embedded SmolLM2 model (offline)
    behind a recording pass-through proxy: ``(proxy, model id)``; ``{proxy.url}/<tag>/v1``
    reaches the model (one request at a time) and records the request under ``tag``."""
    base, model_id = model_server
    for proxy in _recording(base):
        yield proxy, model_id


# --- verifiers' runner -------------------------------------------------------------------------


def _vf_eval(serve_url: str, model_url: str, model_id: str, out: Path, *, ids: str | None, size: int = 2,
             seed: int = 0, max_turns: int | None = 3, max_tokens: int = 24, concurrency: int | None = 1,
             extra: tuple[str, ...] = (), env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """verifiers' own runner, ``vf-eval``, on the ``spade-verifiers`` taskset (``ids`` None:
    no ``--env.taskset.ids``; ``max_turns`` None: each environment's own cap;
    ``concurrency`` None: vf-eval's default ``-c``)."""
    assert VERIFIERS_PYTHON, "SPADE_VERIFIERS_PYTHON is not set: CI makes it with scripts/setup-verifiers.sh (.ci/run)"
    script = Path(VERIFIERS_PYTHON).parent / "vf-eval"
    runner = [str(script)] if script.is_file() else [
        VERIFIERS_PYTHON, "-c", "import sys; from verifiers.v1.cli.eval.main import main; sys.exit(main())"]
    cmd = [*runner, "spade-verifiers", "--env.taskset.base-url", serve_url,
           *(["--env.taskset.ids", ids] if ids is not None else []),
           "--env.taskset.size", str(size), "--env.taskset.seed", str(seed),
           *(["--env.taskset.max-turns", str(max_turns)] if max_turns is not None else []),
           "-m", model_id, "--client.base-url", model_url, "--sampling.temperature", "0",
           "--sampling.max-tokens", str(max_tokens), "--no-push", "--no-rich", "-o", str(out), "--run.name", "run",
           *(["-c", str(concurrency)] if concurrency is not None else []), *extra]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SPADE_")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=out.parent,
                          env={**clean, **(env or {})}, check=False)


def _verifiers_python(code: str, *args: str) -> subprocess.CompletedProcess:
    assert VERIFIERS_PYTHON, "SPADE_VERIFIERS_PYTHON is not set: CI makes it with scripts/setup-verifiers.sh (.ci/run)"
    return subprocess.run([VERIFIERS_PYTHON, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          check=False)


def _episodes(out: Path) -> list[dict[str, Any]]:
    lines = (out / "run" / "traces.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@needs_verifiers
def test_the_taskset_rows_are_the_registry_suites_episodes(serve: str, registry_home: Path) -> None:
    """One row per (environment, seed), in spade eval's order and seed rule, with its turn
    cap and spade eval's system prompt; an environment's name resolves to its id."""
    code = (
        "import json, sys\n"
        "import spade_verifiers\n"
        "env = spade_verifiers.load_environment(base_url=sys.argv[1], ids='code_breaker, spade/hanoi-v1', "
        "size=3, seed=5, max_turns=3)\n"
        "rows = [t.data for t in env.taskset]\n"
        "print(json.dumps([[d.env_id, d.seed, d.max_turns, d.prompt, d.system_prompt, t.key] "
        "for d, t in zip(rows, env.taskset)]))\n"
    )
    done = _verifiers_python(code, serve)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    from spade_core.app.eval_harness import SYSTEM_PROMPT

    assert [tuple(r[:3]) for r in rows] == _registry_items(registry_home, ",".join(IDS), 3, 5, 3)
    assert all(r[3] is None and r[4] == SYSTEM_PROMPT for r in rows)  # the first observation opens it
    assert [r[5] for r in rows][:2] == ["code_breaker-v1#5", "code_breaker-v1#6"]


@needs_verifiers
def test_without_ids_the_taskset_plays_what_the_server_serves(serve: str, registry_home: Path,
                                                               listing_servers: tuple[str, str]) -> None:
    """No ids: every environment the server serves, in its listing's order, page after
    page, which is ``spade eval``'s without ``-o ids``: for a server of one domain (its
    seeds, then its admitted store environments in the store's order) and for a ``--all``
    server (every seed, then the registry's admitted environments); a domain or a skill
    keeps to it, with ids or without. Named ids, on a ``--all`` server too, have the turn
    cap, domain and skill the server reports. What selects nothing and an id not served
    stop the load, naming what was asked and what there is."""
    games, everything = listing_servers
    code = (
        "import json, sys\n"
        "import spade_verifiers\n"
        "from spade_verifiers.client import served_environments\n"
        "out = []\n"
        "for case in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        if 'page_size' in case:\n"
        "            found = served_environments(**case)\n"
        "            out.append([[e.id, e.max_turns] for e in found])\n"
        "            continue\n"
        "        env = spade_verifiers.load_environment(**case)\n"
        "        out.append([[t.data.env_id, t.data.seed, t.data.max_turns] for t in env.taskset])\n"
        "    except spade_verifiers.SelectionError as e:\n"
        "        out.append([type(e).__name__, str(e)])\n"
        "print(json.dumps(out))\n"
    )
    cases = [
        {"base_url": serve, "size": 1},
        {"base_url": games, "size": 2, "seed": 3, "max_turns": 10},
        {"base_url": games, "skill": "logical_deduction"},
        {"base_url": serve, "ids": "code_breaker,spade/hanoi-v1", "skill": "planning", "size": 2},
        {"base_url": everything, "size": 1},
        {"base_url": everything, "ids": "hanoi,relay-v1", "skill": "planning", "size": 1},
        {"base_url": everything, "skill": STATEFUL_SKILL, "size": 1, "max_turns": 4},
        {"base_url": games, "skill": "nope"},
        {"base_url": serve, "domain": "tooluse"},
        {"base_url": serve, "ids": "code_breaker-v1", "domain": "games", "skill": STATEFUL_SKILL},
        {"base_url": games, "ids": "nope-v1"},
        {"base_url": everything, "ids": "nope-v1"},
        {"base_url": everything, "domain": "nope"},
        {"base_url": everything, "page_size": 5},
        {"base_url": everything, "page_size": 1000},
    ]
    done = _verifiers_python(code, json.dumps(cases))
    assert done.returncode == 0, done.stderr[-4000:]
    got = [r if r and isinstance(r[0], str) else [tuple(row) for row in r] for r in json.loads(done.stdout)]
    listed = httpx.get(f"{games}/envs").json()["envs"]
    runs = [(",".join(SERVED), 1, 0, None, None, None), (None, 2, 3, 10, "games", None),
            (None, 4, 0, None, "games", "logical_deduction"), ("code_breaker,spade/hanoi-v1", 2, 0, None, None, "planning"),
            (None, 1, 0, None, None, None), ("hanoi,relay-v1", 1, 0, None, None, "planning"),
            (None, 1, 0, 4, None, STATEFUL_SKILL)]
    spade = _registry_runs(registry_home, [dict(zip(("ids", "size", "seed", "max_turns", "domain", "skill"), run,
                                                     strict=True)) for run in runs])
    assert got[:7] == spade
    assert [i for i, *_ in got[1][::2]] == [e["id"] for e in listed]  # the server's order
    assert [i for i, *_ in got[1][-8::2]] == ["hanoi-v1", BROKEN, TALLY, RELAY]  # seeds first, then the store's
    assert got[3] == [("hanoi-v1", 0, 12), ("hanoi-v1", 1, 12)]
    # --all: every seed, then the store's admitted environments, which it resolves on use
    assert [i for i, *_ in got[4][-4:]] == ["hanoi-v1", BROKEN, TALLY, RELAY] and len(got[4]) > len(listed)
    assert got[5] == [("hanoi-v1", 0, 12)] and got[6] == [(TALLY, 0, 4), (RELAY, 0, 2)]  # the store's own caps
    skills = ", ".join(sorted({e["skill"] for e in listed}))
    assert got[7] == ["EmptySelection", f"nothing to play: {games}: no environment this server serves is of skill "
                      f"'nope' (its skills: {skills})"]
    assert got[8] == ["EmptySelection", f"nothing to play: {serve}: no environment this server serves is of domain "
                      "'tooluse' (its domains: games)"]
    assert got[9] == ["EmptySelection", "nothing to play: none of the ids code_breaker-v1 is of domain 'games' and "
                      f"skill '{STATEFUL_SKILL}' (domains: games; skills of domain 'games': logical_deduction)"]
    shown = ", ".join(e["id"] for e in listed[:8])
    assert got[10] == ["UnknownEnvironment", f"{games}: this server does not serve 'nope-v1' (it serves: {shown} ...)"]
    assert got[11] == ["UnknownEnvironment", f"{everything}: no admitted environment 'nope-v1' in the registry"]
    assert got[12][0] == "EmptySelection"
    assert got[12][1].startswith(f"nothing to play: {everything}: no environment this server serves is of domain "
                                 "'nope': no seed or environment listed at start is")
    # the client pages: 5 at a time, the same environments as in one page
    assert got[13] == got[14] and [i for i, _ in got[13]] == [i for i, *_ in got[4]]


@needs_verifiers
def test_vf_eval_without_ids_plays_a_whole_registry_servers_store_environments(
    listing_servers: tuple[str, str], copycat: _Recorder, tmp_path: Path
) -> None:
    """``vf-eval`` without ids against ``spade serve --all``, kept to one skill: the two
    stateful store environments, which the server lists from its registry and resolves on
    first use, each played to its own turn cap (tally is won in 3 turns; relay stops at
    its cap of 2, which the run learnt from the server)."""
    everything = listing_servers[1]
    done = _vf_eval(everything, f"{copycat.url}/verifiers/v1", "copycat", tmp_path / "vf", ids=None, size=1, seed=4,
                    max_turns=None, max_tokens=16, extra=("--env.taskset.skill", STATEFUL_SKILL))
    assert done.returncode == 0, done.stderr[-4000:]
    got = _outcomes(_episodes(tmp_path / "vf"))
    assert got == {
        (TALLY, 4): {"episode_return": 1.0, "success": True, "turns": 3, "terminated": True, "error": None},
        (RELAY, 4): {"episode_return": 0.0, "success": False, "turns": 2, "terminated": False, "error": None},
    }


@needs_verifiers
def test_an_unreachable_server_stops_the_run_naming_it(double: _Recorder, tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    done = _vf_eval(nowhere, f"{double.url}/m/v1", "double", tmp_path / "out", ids="code_breaker-v1")
    assert done.returncode != 0
    assert f"spade_verifiers.client.ServerUnreachable: spade serve is not reachable at {nowhere}" in done.stderr
    assert "start it with `spade serve ID [ID...]`" in done.stderr
    assert not (tmp_path / "out" / "run" / "traces.jsonl").exists() and double.records == []
    code = ("import sys, spade_verifiers\n"
            "try:\n    spade_verifiers.load_environment(base_url=sys.argv[1], ids=['code_breaker-v1'])\n"
            "except spade_verifiers.ServerUnreachable as e:\n    print(e)\n")
    loaded = _verifiers_python(code, nowhere)
    assert loaded.returncode == 0 and f"not reachable at {nowhere}" in loaded.stdout, loaded.stderr


@needs_verifiers
def test_an_unknown_id_stops_the_run_naming_it(serve: str, double: _Recorder, tmp_path: Path) -> None:
    done = _vf_eval(serve, f"{double.url}/m/v1", "double", tmp_path / "out", ids="code_breaker-v1,nope-v1")
    assert done.returncode != 0
    assert (f"spade_verifiers.client.UnknownEnvironment: {serve}: this server does not serve 'nope-v1' "
            "(it serves: code_breaker-v1, hanoi-v1, broken-v1, tally-v1, relay-v1)") in done.stderr
    assert not (tmp_path / "out" / "run" / "traces.jsonl").exists() and double.records == []
    # no ids, and a skill that no environment the server lists has: nothing to play
    done = _vf_eval(serve, f"{double.url}/m/v1", "double", tmp_path / "empty", ids=None,
                    extra=("--env.taskset.skill", "nope"))
    assert done.returncode != 0
    assert (f"spade_verifiers.client.EmptySelection: nothing to play: {serve}: no environment this server serves "
            f"is of skill 'nope' (its skills: logical_deduction, planning, {STATEFUL_SKILL})") in done.stderr
    assert not (tmp_path / "empty" / "run" / "traces.jsonl").exists() and double.records == []
    code = ("import sys, spade_verifiers\n"
            "try:\n    spade_verifiers.load_environment(base_url=sys.argv[1], ids='nope-v1')\n"
            "except spade_verifiers.UnknownEnvironment as e:\n    print(e)\n")
    loaded = _verifiers_python(code, serve)
    assert loaded.returncode == 0 and "does not serve 'nope-v1'" in loaded.stdout, loaded.stderr


@needs_verifiers
def test_a_server_with_a_token_refuses_a_run_without_it(registry_home: Path, double: _Recorder,
                                                       tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token-42\n")
    for url in _spade_serve(registry_home, "--token-file", str(token)):
        done = _vf_eval(url, f"{double.url}/m/v1", "double", tmp_path / "out", ids="code_breaker-v1")
        assert done.returncode != 0
        assert "ServerRefused" in done.stderr and "UNAUTHORIZED" in done.stderr
        assert "pass the token of its --token-file" in done.stderr
        code = ("import sys, spade_verifiers\n"
                "env = spade_verifiers.load_environment(base_url=sys.argv[1], ids='code_breaker-v1', size=2, "
                "token='s3cret-token-42')\n"
                "print(len(list(env.taskset)))\n")
        loaded = _verifiers_python(code, url)
        assert loaded.returncode == 0 and loaded.stdout.strip() == "2", loaded.stderr
    assert double.records == []


def _spade_eval(home: Path, model_url: str, model_id: str, *, ids: str | None, size: int, seed: int,
                max_turns: int | None, max_tokens: int, concurrency: int = 1,
                options: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """``spade eval --suite registry ... --json``'s episodes (``options``: further ``-o KEY=VALUE``)."""
    chosen = [*([f"ids={ids}"] if ids is not None else []), *options]
    done = subprocess.run(
        [sys.executable, "-m", "spade_core.app.cli", "eval", "--suite", "registry", "--policy",
         f"openai:{model_url}#{model_id}", *(a for o in chosen for a in ("-o", o)), "--size", str(size),
         "--seed", str(seed), *(["--max-turns", str(max_turns)] if max_turns is not None else []),
         "--temperature", "0", "--max-new-tokens", str(max_tokens), "--concurrency", str(concurrency), "--json"],
        capture_output=True, text=True, timeout=900, cwd=home, env={**os.environ, "SPADE_HOME": str(home)},
        check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout[done.stdout.index("{"):])["episodes"]


def _outcome_rows(ran: list[dict[str, Any]]) -> list[tuple[tuple[str, int], dict[str, Any]]]:
    """Each episode verifiers recorded, in its file's (completion) order: its (environment,
    seed) and its outcome in spade eval's terms."""
    rows = []
    for episode in ran:
        assert episode["ok"] and len(episode["traces"]) == 1
        trace = episode["traces"][0]
        info = trace["info"]["spade"]
        assert episode["task"]["key"] == f"{info['env_id']}#{info['seed']}"  # the episode played its own task
        rows.append(((info["env_id"], info["seed"]), {
            "episode_return": sum(r["score"] * r["weight"] for r in trace["rewards"].values()),
            "success": bool(trace["metrics"]["success"]), "turns": int(trace["metrics"]["turns"]),
            "terminated": info["terminated"], "error": info["error"],
        }))
        assert trace["metrics"]["success"] == float(info["success"])
    return rows


def _outcomes(ran: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (environment, seed): what verifiers recorded, in spade eval's terms."""
    rows = _outcome_rows(ran)
    got = dict(rows)
    assert len(got) == len(rows), "one episode per (environment, seed)"
    return got


@needs_verifiers
def test_an_environment_failure_ends_its_episode_as_spade_eval_records_it(
    serve: str, registry_home: Path, parrot: _Recorder, tmp_path: Path
) -> None:
    done = _vf_eval(serve, f"{parrot.url}/verifiers/v1", "parrot", tmp_path / "vf", ids=BROKEN, size=2, seed=0,
                    max_turns=3)
    assert done.returncode == 0, done.stderr[-4000:]
    got = _outcomes(_episodes(tmp_path / "vf"))
    expected = _spade_eval(registry_home, f"{parrot.url}/spade/v1", "parrot", ids=BROKEN, size=2, seed=0,
                           max_turns=3, max_tokens=8)
    assert [(e["label"], e["seed"]) for e in expected] == list(got) == [(BROKEN, 0), (BROKEN, 1)]
    for e in expected:
        mine = got[(e["label"], e["seed"])]
        # the first step was played (reward 0.5, not terminated), the second raised
        assert e["error"] and "the environment broke on purpose" in e["error"]
        assert mine["error"].startswith("step 2: EXECUTION_ERROR") and "the environment broke on purpose" in mine["error"]
        assert {k: v for k, v in mine.items() if k != "error"} == {
            "episode_return": e["episode_return"], "success": e["success"], "turns": e["turns"],
            "terminated": e["terminated"]} == {"episode_return": 0.0, "success": False, "turns": 1, "terminated": False}
    sent = [r["request"]["messages"] for r in parrot.records]
    assert sorted(map(json.dumps, (m for m, r in zip(sent, parrot.records, strict=True) if r["tag"] == "verifiers"))) \
        == sorted(map(json.dumps, (m for m, r in zip(sent, parrot.records, strict=True) if r["tag"] == "spade")))
    assert {m[2]["content"] for m in sent if len(m) > 2} == {" \\boxed{go} "}  # the reply as it came, unstripped


@needs_verifiers
def test_concurrent_rollouts_each_play_a_session_of_their_own_as_spade_eval_does(
    serve: str, registry_home: Path, copycat: _Recorder, tmp_path: Path
) -> None:
    """``vf-eval`` with 4 episodes in flight (``-c 4``: each starts while others are under
    way, as under the default ``-c`` 128 once a run has more episodes than that), two
    rollouts of each task (``-r 2``), no ids (the server's listing kept to one skill): two
    stateful environments, three seeds each, 12 episodes. Each episode has a session of its
    own, is asked for its own seed and turns and answers them, keeps its own turn cap, and
    ends as ``spade eval`` (4 at once) ends it for the same replies; a session or a
    conversation shared between episodes would be asked for another's numbers, and end at 0.
    (With every episode started at once, a session handed on from one episode to the next
    would go unnoticed: all resets are in flight before the first answers.)"""
    size, seed = 3, 7
    started = time.monotonic()
    done = _vf_eval(serve, f"{copycat.url}/verifiers/v1", "copycat", tmp_path / "vf", ids=None, size=size,
                    seed=seed, max_turns=None, max_tokens=16, concurrency=4,
                    extra=("--env.taskset.skill", STATEFUL_SKILL, "-r", "2"))
    vf_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-4000:]
    ran = _episodes(tmp_path / "vf")
    started = time.monotonic()
    expected = _spade_eval(registry_home, f"{copycat.url}/spade/v1", "copycat", ids=None, size=size, seed=seed,
                           max_turns=None, max_tokens=16, concurrency=4, options=(f"skill={STATEFUL_SKILL}",))
    spade_s = time.monotonic() - started
    print(f"\nvf-eval {vf_s:.1f} s ({len(ran)} episodes, up to {copycat.peak['verifiers']} model calls at once), "
          f"spade eval {spade_s:.1f} s")

    episodes = [(env_id, seed + k) for env_id in (TALLY, RELAY) for k in range(size)]
    want = {(e["label"], e["seed"]): {k: e[k] for k in ("episode_return", "success", "turns", "terminated", "error")}
            for e in expected}
    assert sorted(want) == sorted(episodes)
    for key in episodes:  # tally is won in 3 turns; relay stops at its cap of 2, not terminated
        won = key[0] == TALLY
        assert want[key] == {"episode_return": 1.0 if won else 0.0, "success": won, "turns": 3 if won else 2,
                             "terminated": won, "error": None}, key
    rows = _outcome_rows(ran)
    assert sorted(key for key, _ in rows) == sorted(episodes * 2)  # matched by (environment, seed), any order
    for key, outcome in rows:
        assert outcome == want[key], key
    sessions = [e["traces"][0]["info"]["spade"]["session"] for e in ran]
    assert None not in sessions and len(set(sessions)) == len(ran) == 12  # a session per episode
    assert copycat.peak["verifiers"] >= 2  # episodes did overlap

    # every conversation is one episode's own (one seed, its turns in order), and both
    # runners sent the same ones (verifiers each twice)
    def conversations(tag: str) -> Counter[str]:
        found: Counter[str] = Counter()
        for record in (r for r in copycat.records if r["tag"] == tag):
            messages = record["request"]["messages"]
            asked = [a for m in messages if m["role"] == "user" for a in re.findall(r"Episode (\d+), turn (\d+)",
                                                                                    m["content"])]
            assert len({s for s, _ in asked}) == 1 and [int(t) for _, t in asked] == list(range(len(asked)))
            found[json.dumps(messages)] += 1
        return found

    theirs = conversations("spade")
    assert conversations("verifiers") == Counter({c: 2 * n for c, n in theirs.items()})
    assert sum(theirs.values()) == size * (3 + 2)


@needs_verifiers
@pytest.mark.model
@pytest.mark.slow
def test_verifiers_runner_scores_registry_episodes_as_spade_eval_does(
    serve: str, registry_home: Path, model: tuple[_Recorder, str], tmp_path: Path
) -> None:
    """Both runners at their own concurrency (vf-eval's default, spade eval's 4 episodes at
    once); the proxy hands the model one request at a time, so that each reply is the one
    the request gets alone."""
    proxy, model_id = model
    ids, size, seed, max_turns, max_tokens = ",".join(IDS), 1, 3, 3, 24

    started = time.monotonic()
    done = _vf_eval(serve, f"{proxy.url}/verifiers/v1", model_id, tmp_path / "vf", ids=ids, size=size,
                    seed=seed, max_turns=max_turns, max_tokens=max_tokens, concurrency=None)
    vf_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-4000:]
    ran = _episodes(tmp_path / "vf")
    started = time.monotonic()
    expected = _spade_eval(registry_home, f"{proxy.url}/spade/v1", model_id, ids=ids, size=size, seed=seed,
                           max_turns=max_turns, max_tokens=max_tokens, concurrency=4)
    spade_s = time.monotonic() - started

    # every episode: verifiers' reward is the episode's return, its success metric spade eval's
    got = _outcomes(ran)
    want = {(e["label"], e["seed"]): {k: e[k] for k in ("episode_return", "success", "turns", "terminated", "error")}
            for e in expected}
    print(f"\nvf-eval {vf_s:.1f} s, spade eval {spade_s:.1f} s, {len(proxy.records)} model calls "
          f"(up to {proxy.peak['verifiers']} of vf-eval's at once); {want}")
    assert sorted(got) == sorted(want) == sorted((i, seed + k) for i in IDS for k in range(size))
    assert got == want
    for episode in ran:
        trace = episode["traces"][0]
        assert len(trace["calls"]) == len(trace["info"]["spade"]["replies"]) == trace["metrics"]["turns"]

    # the same conversations went to the model, and the same replies came back
    def calls(tag: str) -> list[tuple[str, Any, Any, str]]:
        rows = [r for r in proxy.records if r["tag"] == tag]
        assert rows and all(r["status"] == 200 for r in rows)
        return sorted(
            (json.dumps(r["request"]["messages"]), r["request"].get("max_tokens"), r["request"].get("temperature"),
             r["answer"]["choices"][0]["message"]["content"])
            for r in rows
        )

    theirs, ours = calls("spade"), calls("verifiers")
    assert len(ours) == sum(w["turns"] for w in want.values())
    assert ours == theirs
    assert {(m, t) for _, m, t, _ in ours} == {(max_tokens, 0.0)}
    replies = sorted(reply for e in ran for reply in e["traces"][0]["info"]["spade"]["replies"])
    assert replies == sorted(reply for *_, reply in ours)
    assert any(reply.strip() for reply in replies)  # the model said something
