"""``GET /envs`` pages through everything a server serves, a ``--all`` server's admitted
store environments included, in ``spade eval --suite registry``'s order; ``GET
/envs/<id>`` answers one environment's row, resolved on first use or not
(:mod:`spade_serve.listing`, docs/serving.md).

Real parts: a SQLite store with more environments than one page, the installed plugins'
seeds, :func:`build_catalog` as ``spade serve --all`` builds it, the app under uvicorn on
loopback. No session is opened, so no sandbox starts."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from spade_core.app.catalog import Catalog
from spade_core.config import load_config
from spade_core.evaluation import SuiteContext
from spade_core.metadata import EnvMetadata, EnvStatus
from spade_core.plugins import SpadePlugins, get_plugins
from spade_core.store import EnvStore
from spade_eval.suites import registry_items
from spade_serve.catalog import EnvCatalog, build_catalog
from spade_serve.kept import KeptEnvs
from spade_serve.server import running
from spade_serve.sessions import SessionManager
from spade_serve.settings import ServeSettings

from spade_serve import listing

from .envs import COUNTER, served

#: The cursor secret of the ``everything`` server, so that its cursors can be read in process.
SECRET = "the-listing-tests-cursor-secret-0123456789"
KEY = listing.cursor_key(SECRET)
#: Admitted store environments besides the featured ones: more than one default page.
FILLER = 1000
#: (name, domain, skill, status) of the featured store environments, in insertion order;
#: the filler is inserted between the first half and the second.
FEATURED = [(f"feat{i}", "tooluse" if i % 3 == 0 else "games", "alpha" if i % 2 else "beta",
             EnvStatus.candidate if i % 5 == 4 else EnvStatus.retired if i % 7 == 6 else EnvStatus.admitted)
            for i in range(30)]


def _meta(name: str, domain: str, skill: str, status: EnvStatus) -> EnvMetadata:
    return EnvMetadata(name=name, domain=domain, skill=skill, description=f"{name} counts", max_turns=3 + len(name) % 5,
                       class_name="CounterEnv", status=status)


@pytest.fixture(scope="module")
def plugins() -> SpadePlugins:
    return get_plugins()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvStore]:
    path = Path(tmp_path_factory.mktemp("listing")) / "store.db"
    with EnvStore(f"sqlite:///{path}") as opened:
        half = len(FEATURED) // 2
        opened.add_many([(COUNTER, _meta(*row)) for row in FEATURED[:half]])
        opened.add_many([(COUNTER, _meta(f"filler{i}", "games", "filler", EnvStatus.admitted)) for i in range(FILLER)])
        opened.add_many([(COUNTER, _meta(*row)) for row in FEATURED[half:]])
        yield opened


@pytest.fixture(scope="module")
def everything(plugins: SpadePlugins, store: EnvStore) -> Iterator[str]:
    """``spade serve --all`` over the store (in this process)."""
    settings = ServeSettings(port=0, cursor_secret=SECRET)
    manager = SessionManager(build_catalog(Catalog(plugins, store), whole_registry=True), settings)
    with running(manager) as url:
        yield url


def _spade_eval_order(plugins: SpadePlugins, store: EnvStore, **chosen: Any) -> list[str]:
    """The environments ``spade eval --suite registry`` plays, in its order (``-o
    domain=``, ``-o skill=``)."""
    items = registry_items(SuiteContext(load_config(), plugins, store), size=1, **chosen)
    return [item.label for item in items]


def _pages(url: str, **params: Any) -> list[list[dict[str, Any]]]:
    """Every page of ``GET /envs`` with ``params``, following ``next`` to the end."""
    pages, cursor = [], None
    with httpx.Client(base_url=url, timeout=30) as http:
        while True:
            answer = http.get("/envs", params={**params, **({"cursor": cursor} if cursor else {})})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert set(body) == {"envs", "whole_registry", "next"} and body["whole_registry"] is True
            pages.append(body["envs"])
            cursor = body["next"]
            if cursor is None:
                return pages
            assert len(pages) < 1000, "the listing does not end"


def _ids(pages: list[list[dict[str, Any]]]) -> list[str]:
    return [row["id"] for page in pages for row in page]


def test_pages_list_the_whole_registry_once_in_spade_evals_order(everything: str, plugins: SpadePlugins,
                                                                   store: EnvStore) -> None:
    expected = _spade_eval_order(plugins, store)
    seeds = [e.id for e in build_catalog(Catalog(plugins, store), whole_registry=True).listed()]
    admitted = [m.id for m in store.find(status=EnvStatus.admitted)]
    assert expected == seeds + admitted
    assert len(admitted) == FILLER + sum(status == EnvStatus.admitted for *_, status in FEATURED)

    # without parameters: the first page of the default size, and next (a registry of
    # more than one page); the rows keep their fields
    first = httpx.get(f"{everything}/envs").json()
    assert len(first["envs"]) == listing.DEFAULT_LIMIT and first["next"]
    assert set(first["envs"][0]) == {"id", "kind", "name", "version", "domain", "skill", "description", "max_turns",
                                     "action_format", "reward_range"}
    assert _ids(_pages(everything)) == expected
    small = _pages(everything, limit=97)
    assert {len(p) for p in small[:-1]} == {97} and 0 < len(small[-1]) <= 97
    assert _ids(small) == expected  # no duplicate, no gap, spade eval's order
    rows = {row["id"]: row for page in small for row in page}
    assert {rows[i]["kind"] for i in seeds} == {"seed"} and {rows[i]["kind"] for i in admitted} == {"store"}

    # filters: spade eval's -o domain= and -o skill= (seeds of the domain, then the store's)
    for chosen in ({"domain": "tooluse"}, {"skill": "alpha"}, {"domain": "games", "skill": "beta"}):
        pages = _pages(everything, limit=4, **chosen)
        assert _ids(pages) == _spade_eval_order(plugins, store, **chosen), chosen
        assert all(len(p) <= 4 for p in pages) and len(pages) >= 2
    # a domain and a skill that each exist, but not together: an empty listing, not an error
    answer = httpx.get(f"{everything}/envs", params={"domain": "tooluse", "skill": "filler"}).json()
    assert answer["envs"] == [] and answer["next"] is None


def test_a_lazily_resolved_environment_answers_its_row_and_metadata_by_id(everything: str, store: EnvStore) -> None:
    row = next(r for r in httpx.get(f"{everything}/envs", params={"skill": "alpha", "domain": "tooluse"}).json()["envs"]
               if r["kind"] == "store")
    with httpx.Client(base_url=everything, timeout=30) as http:
        assert http.get(f"/envs/{row['id']}").json() == row  # ServedEnv.summary(), as the listing's row
        assert row["max_turns"] == store.get(row["id"]).max_turns
        assert {row["domain"], row["skill"], row["action_format"]} == {"tooluse", "alpha", "boxed"}
        assert http.get(f"/envs/{row['name']}").json() == row  # a name: its latest version
        meta = http.get(f"/envs/{row['id']}/metadata").json()  # OpenEnv's EnvironmentMetadata
        assert (meta["name"], meta["description"], meta["version"]) == (row["id"], row["description"], "1")
        assert http.get("/envs/code_breaker-v1").json()["kind"] == "seed"
        for ref, reason in (("feat4-v1", "feat4-v1 is candidate, not admitted: it is not served"),
                            ("feat6-v1", "feat6-v1 is retired, not admitted: it is not served"),
                            ("nope-v1", "no admitted environment 'nope-v1' in the registry")):
            for route in (f"/envs/{ref}", f"/envs/{ref}/metadata"):
                answer = http.get(route)
                assert answer.status_code == 404, route
                assert answer.json()["data"] == {"code": "UNKNOWN_ENV", "message": reason, "env_id": ref}


def test_the_trl_adapter_pages_a_domain_and_looks_up_ids_it_is_not_listed(
        everything: str, plugins: SpadePlugins, store: EnvStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_serve.trl_env import TrlEnvError, TrlEnvironments

    from spade_serve import remote_listing

    monkeypatch.setattr(remote_listing, "PAGE_LIMIT", 4)  # several pages of a small domain
    with TrlEnvironments(domain="games", skill="beta", url=everything) as chosen:
        assert chosen.env_ids == _spade_eval_order(plugins, store, domain="games", skill="beta")
        assert len(chosen.env_ids) > 4
    with TrlEnvironments(["filler999-v1", "feat1"], url=everything) as chosen:  # resolved on first use
        assert chosen.env_ids == ["filler999-v1", "feat1-v1"]
    with pytest.raises(TrlEnvError, match="does not serve 'feat4-v1': feat4-v1 is candidate, not admitted"):
        TrlEnvironments(["feat4-v1"], url=everything)
    with pytest.raises(TrlEnvError, match="answered 422 .*nowhere"):
        TrlEnvironments(domain="nowhere", url=everything)


def test_a_whole_registry_server_keeps_a_bounded_number_of_resolved_environments(
        plugins: SpadePlugins, store: EnvStore) -> None:
    kept = KeptEnvs(max_entries=3)
    served_catalog = build_catalog(Catalog(plugins, store), whole_registry=True, kept=kept)
    first = served_catalog.get("filler0-v1")
    for i in range(1, 6):  # a client naming ids one after another
        served_catalog.get(f"filler{i}-v1")
    assert kept.keys() == [("resolved", f"filler{i}-v1") for i in (3, 4, 5)]
    served_catalog.get("filler3-v1")  # used again: the most recent
    assert kept.keys() == [("resolved", f"filler{i}-v1") for i in (4, 5, 3)]
    again = served_catalog.get("filler0-v1")  # dropped: read from the store again, the same
    assert again == first and again is not first
    assert len(kept) == 3
    seeds = [e.id for e in served_catalog.listed()]
    assert all(served_catalog.get(i).id == i for i in seeds)  # those resolved up front stay


def _refused(url: str, params: dict[str, Any], param: str, message: str) -> None:
    answer = httpx.get(f"{url}/envs", params=params)
    assert answer.status_code == 422, (params, answer.text)
    data = answer.json()["data"]
    assert data["code"] == "VALIDATION_ERROR" and data["param"] == param, (params, data)
    assert message in data["message"], (params, data["message"])


def _forged(cursor: str, **changes: Any) -> str:
    """``cursor`` with its content changed but its check value kept."""
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    payload = {**json.loads(raw[16:]), **changes}
    return base64.urlsafe_b64encode(raw[:16] + json.dumps(payload).encode()).rstrip(b"=").decode()


def test_bad_parameters_are_refused_naming_them(everything: str, plugins: SpadePlugins) -> None:
    for limit in ("-1", "0", "1001", "10" * 20, "abc", "1e3", " 5", "+5", "٣"):
        _refused(everything, {"limit": limit}, "limit", "limit must be")
    _refused(everything, {"limt": "5"}, "limt", "unknown query parameter 'limt': GET /envs takes domain, skill, "
                                                "limit, cursor")
    _refused(everything, {"domain": ["games", "tooluse"]}, "domain", "given twice")
    _refused(everything, {"skill": ""}, "skill", "is empty")
    _refused(everything, {"skill": "x" * 121}, "skill", "over 120 characters")
    _refused(everything, {"domain": "nope"}, "domain", "no environment this server serves is of domain 'nope': no "
                                                       "seed or environment listed at start is (their domains: games, "
                                                       "tooluse), and no admitted environment of its registry")
    _refused(everything, {"skill": "nope", "domain": "games"}, "skill", "of skill 'nope'")

    cursor = httpx.get(f"{everything}/envs", params={"limit": 3, "domain": "games"}).json()["next"]
    store_cursor = httpx.get(f"{everything}/envs", params={"limit": 3, "cursor": _pages_to_store(everything)}).json()
    assert store_cursor["next"]
    altered = "cut, altered or made up"
    for bad in ("garbage!", "AAAA", cursor[:-3], cursor[:20] + ("A" if cursor[20] != "A" else "B") + cursor[21:],
                _forged(cursor, i=10**6), _forged(cursor, i=0), _forged(store_cursor["next"], a="filler3-v1")):
        _refused(everything, {"cursor": bad, "domain": "games"}, "cursor", altered)
    _refused(everything, {"cursor": "A" * 5000}, "cursor", "over 4096 characters")
    _refused(everything, {"cursor": cursor}, "cursor", "issued for domain='games' and skill=None, not domain=None")
    _refused(everything, {"cursor": cursor, "domain": "games", "skill": "filler"}, "cursor", "send the same filters")

    # a cursor of another server's listing (one started with other environments)
    other = EnvCatalog([served()])
    with pytest.raises(listing.InvalidQuery, match="cursor pages another listing"):
        listing.page(other, listing.Query(domain="games", cursor=cursor), KEY)


def _pages_to_store(url: str) -> str:
    """A cursor past the seeds (into the store's part of the listing)."""
    seeds = len([r for r in httpx.get(f"{url}/envs").json()["envs"] if r["kind"] == "seed"])
    return str(httpx.get(f"{url}/envs", params={"limit": seeds + 2}).json()["next"])


def test_paging_holds_while_statuses_change_and_lists_named_ids_once(plugins: SpadePlugins, tmp_path: Path) -> None:
    """In process (no server): an id named at start is listed up front and not again
    among the store's; between two pages, an environment admitted behind the cursor is not
    listed in that pass, one retired ahead of it is not listed, and nothing repeats."""
    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        store.add_many([(COUNTER, _meta(f"env{i}", "games", "paging", EnvStatus.candidate if i == 1 else
                                        EnvStatus.admitted)) for i in range(8)])
        catalog = build_catalog(Catalog(plugins, store), ids=["env5-v1", "env1"], whole_registry=True)
        ids = [e.id for e in catalog.listed()]
        assert ids[:2] == ["env5-v1", "env1-v1"]  # named at start, any status, first
        first = listing.page(catalog, listing.Query(skill="paging", limit=3), KEY)
        assert [r["id"] for r in first["envs"]] == ["env5-v1", "env1-v1", "env0-v1"]
        second = listing.page(catalog, listing.Query(skill="paging", limit=3, cursor=first["next"]), KEY)
        assert [r["id"] for r in second["envs"]] == ["env2-v1", "env3-v1", "env4-v1"]
        store.set_status("env1-v1", EnvStatus.admitted)  # behind the cursor (and listed up front)
        store.set_status("env7-v1", EnvStatus.retired)  # ahead of it
        third = listing.page(catalog, listing.Query(skill="paging", limit=3, cursor=second["next"]), KEY)
        assert [r["id"] for r in third["envs"]] == ["env6-v1"] and third["next"] is None  # env5: listed up front


def test_a_server_of_ids_pages_what_it_serves() -> None:
    envs = [served(f"counter{i}") for i in range(5)]
    manager = SessionManager(EnvCatalog(envs), ServeSettings(port=0))
    with running(manager) as url, httpx.Client(base_url=url) as http:
        whole = http.get("/envs").json()
        assert [r["id"] for r in whole["envs"]] == [e.id for e in envs] and whole["next"] is None
        assert whole["whole_registry"] is False
        first = http.get("/envs", params={"limit": 2}).json()
        second = http.get("/envs", params={"limit": 2, "cursor": first["next"]}).json()
        third = http.get("/envs", params={"limit": 2, "cursor": second["next"]}).json()
        assert [r["id"] for p in (first, second, third) for r in p["envs"]] == [e.id for e in envs]
        assert third["next"] is None
        assert http.get("/envs/counter3-v1").json() == whole["envs"][3]
        missing = http.get("/envs/nope-v1")
        assert missing.status_code == 404 and "it serves: counter0-v1" in missing.json()["data"]["message"]
        _refused(url, {"domain": "games"}, "domain", "no environment this server serves is of domain 'games' (its "
                                                     "domains: testing)")
