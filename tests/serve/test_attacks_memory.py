"""What a server keeps is bounded, and a refused request keeps nothing.

The attack: on a ``spade serve --all`` server, a client holds its one allowed session and
sends Task API resets, each naming another environment's knob task. Each is refused (429),
yet each used to leave behind the variant's whole source in the Task API's cache and the
environment in the catalog's (the red team: 378 refused resets grew a server by 192 MiB).
Here 168 refused resets of 48 environments of about 400 KiB, against a real ``spade serve``
process: its resident memory must not grow by more than a few MiB.

The bound: store environments resolved on first use and knob variants share one budget,
in entries and in bytes of source (:class:`spade_serve.kept.KeptEnvs`), however clients
name them.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from spade_serve.catalog import EnvCatalog, ServedEnv
from spade_serve.kept import KeptEnvs
from spade_serve.tasks import TaskCatalog

from .envs import served
from .knob_flood import KNOB_ENV, SETTINGS, TASKS_PER_SETTING, knob_home, refused_flood, rss_kib, serve_all

ENVS = 48
SOURCE_KIB = 400
REQUESTS = ENVS * (SETTINGS - 1) // 2
#: RSS growth allowed over the flood (allocator noise, the server's own caches of a few
#: requests' objects): far under one refused request in ten keeping its source.
GROWTH_KIB = 12 * 1024


def test_refused_task_resets_keep_nothing(tmp_path: Path) -> None:
    ids = knob_home(tmp_path / "home", ENVS, SOURCE_KIB)
    with serve_all(tmp_path / "home", "--max-sessions-per-client", "1") as (url, proc), \
            httpx.Client(base_url=url, timeout=60) as http:
        held = http.post(f"/envs/{ids[0]}/reset", json={"split": "train", "index": 0})
        assert held.status_code == 200, held.text
        refused_flood(http, ids[1:4], 6)  # the first requests' one-off costs (imports, pools)
        time.sleep(0.5)
        before, _ = rss_kib(proc.pid)
        statuses = refused_flood(http, ids, REQUESTS)
        after, _ = rss_kib(proc.pid)
        assert statuses == {429: REQUESTS}, statuses
        assert after - before < GROWTH_KIB, f"{REQUESTS} refused resets grew the server by {(after - before) / 1024:.1f} MiB"
        # the held session still plays, and the server answers
        sid = held.headers["X-Spade-Session"]
        assert http.post("/step", json={"action": {"message": "x"}, "session_id": sid}).status_code == 200


def _big(name: str, kib: int) -> ServedEnv:
    env = served(name, KNOB_ENV + "# pad\n" * (kib * 1024 // 6), kind="store")
    return ServedEnv("store", env.metadata.model_copy(update={"class_name": "KnobEnv"}), env.source, ())


def test_variants_and_resolved_environments_share_one_budget() -> None:
    """Played (not refused) tasks: however many environments and settings clients play,
    what is kept stays within the budget's bytes and entries."""
    kept = KeptEnvs(max_entries=20, max_bytes=4 << 20)
    envs = {f"big{i}-v1": _big(f"big{i}", 256) for i in range(30)}
    catalog = EnvCatalog([], lookup=envs.__getitem__, kept=kept)
    tasks = TaskCatalog(kept=kept)
    for env_id in envs:
        env = catalog.get(env_id)
        for setting in range(1, SETTINGS):
            tasks.resolve(env, "train", setting * TASKS_PER_SETTING, None)
        assert kept.bytes <= 4 << 20 and len(kept) <= 20
    assert kept.bytes > 2 << 20  # it does keep what fits
