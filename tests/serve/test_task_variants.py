"""A Task API knob task runs the one variant of its environment at those knob values: the
source :func:`spade_core.knobs.apply_values` makes, which is what the designer's parameter
edits and the trainer's adaptive pool make too. Checked on the source itself, on the source
a real server's session runs, and on what playing it answers."""

from __future__ import annotations

import random

import httpx
import pytest
from spade_core.knobs import apply_values, read_knobs
from spade_core.metadata import EnvMetadata
from spade_core.source import load_trusted_class
from spade_core.store import EnvStore
from spade_serve.catalog import ServedEnv
from spade_serve.tasks import SEEDS_PER_SETTING, TEST_SEED_BASE, TaskCatalog, TaskError, variant

from .envs import served

#: A seed environment with knobs (and which way is harder, so the adaptive pool adapts it):
#: its observations show its class constants. The comment and the spacing after SIZE are
#: there to be kept: a variant changes the knob's literal and nothing else.
DIAL = '''
import random


class DialEnv:
    SIZE = 3  # how many positions the dial has
    MODE  =  "a"
    KNOBS = {"SIZE": (int, 2, 5), "MODE": (str, "a", "b")}
    HARDER = {"SIZE": "lower"}

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(0, 10**9)
        return f"size {self.SIZE} mode {self.MODE} secret {self.secret}", {}

    def step(self, action):
        return f"{action} at size {self.SIZE} mode {self.MODE}", 1.0, True, False, {}

    def solution(self):
        return ["x"]
'''


def dial() -> ServedEnv:
    env = served("dial", DIAL, kind="seed")
    return ServedEnv(env.kind, env.metadata.model_copy(update={"class_name": "DialEnv"}), env.source, ())


def test_every_knob_tasks_source_is_apply_values_of_its_setting() -> None:
    env = dial()
    declared = read_knobs(env.source, "DialEnv")
    settings = TaskCatalog().knob_settings(env)
    assert settings == [(), (("SIZE", 2),), (("SIZE", 5),), (("MODE", "b"),)]
    assert variant(env, ()) is env
    for setting in settings[1:]:
        played = variant(env, setting)
        assert played.source == apply_values(env.source, declared, dict(setting))
        assert read_knobs(played.source, "DialEnv").values() == {**declared.values(), **dict(setting)}
        assert played.knobs == setting and played.group_id != env.group_id
    # the literal changed in place: nothing appended, the comment and spacing kept
    assert variant(env, (("SIZE", 5),)).source == env.source.replace("SIZE = 3  #", "SIZE = 5  #")
    assert variant(env, (("MODE", "b"),)).source == env.source.replace('MODE  =  "a"', "MODE  =  'b'")
    with pytest.raises(TaskError, match="outside the declared range"):
        variant(env, (("SIZE", 9),))


def test_a_knob_task_played_on_the_server_is_the_adaptive_pools_variant(serve, tmp_path) -> None:
    from spade_trainer.adaptive import AdaptivePool
    from spade_trainer.config import AdaptiveSettings

    env = dial()
    # the adaptive pool's child at its easiest level (SIZE 5: fewer positions are harder)
    with EnvStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        parent = store.add(env.source, EnvMetadata(name="dial", domain="games", skill="s", class_name="DialEnv"))
        child = AdaptivePool(AdaptiveSettings(enabled=True, levels=4), store).instance(parent, random.Random(0))
        assert child.edit is not None and child.edit.values == {"SIZE": 5}
        adaptive_source = store.get_source(child.id)
    assert adaptive_source == apply_values(env.source, read_knobs(env.source, "DialEnv"), {"SIZE": 5})

    index = 2 * SEEDS_PER_SETTING + 3  # setting 2 (SIZE at its upper bound), seed TEST_SEED_BASE + 3
    with serve([env]) as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        task = http.post("/dial-v1/task", json={"split": "test", "index": index}).json()["task"]
        assert (task["knobs"], task["seed"]) == ({"SIZE": 5}, TEST_SEED_BASE + 3)
        reset = http.post("/reset", json={"split": "test", "index": index})
        assert reset.status_code == 200, reset.text
        sid = reset.headers["x-spade-session"]
        assert manager.sessions[sid].env.source == adaptive_source  # what the session's sandbox worker runs
        first = reset.json()["observation"]["text"]
        stepped = http.post("/step", json={"action": {"message": "x"}}, headers={"X-Spade-Session": sid}).json()

    instance = load_trusted_class(adaptive_source, "DialEnv", source_name="dial.level0")()
    assert instance.reset(seed=TEST_SEED_BASE + 3)[0] == first
    assert first.startswith("size 5 mode a secret ")
    assert instance.step("x")[0] == stepped["observation"]["text"] == "x at size 5 mode a"


def test_a_store_environment_gets_its_knob_tasks_played_in_the_sandbox(serve) -> None:
    """Designed environments declare knobs too: a store environment's declaration is read
    with ``ast`` (nothing runs in the server) and its knob task plays sandboxed."""
    store_env = ServedEnv("store", dial().metadata, DIAL, ())
    settings = TaskCatalog().knob_settings(store_env)
    assert settings == [(), (("SIZE", 2),), (("SIZE", 5),), (("MODE", "b"),)]
    index = 3 * SEEDS_PER_SETTING  # setting 3: MODE "b", the first train seed
    with serve([store_env]) as (url, manager), httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/dial-v1/num_tasks", json={"split": "train"}).json()["num_tasks"] == 4 * SEEDS_PER_SETTING
        reset = http.post("/reset", json={"split": "train", "index": index})
        assert reset.status_code == 200, reset.text
        assert reset.json()["observation"]["text"].startswith("size 3 mode b secret ")
        session = manager.sessions[reset.headers["x-spade-session"]]
        assert session.env.kind == "store" and session.env.knobs == (("MODE", "b"),)
        assert manager.pool.worker_of(session.instance.handle) is not None, "played by a sandbox worker"


@pytest.mark.parametrize("declaration", [
    '{"N": (int, 1, 2), ' + ", ".join(f'"C{i}": (str, "a", "b{i}", "c{i}")' for i in range(60)) + "}",
    "{name: (int, 1, 2) for name in NAMES}",  # not a literal: the environment as written only
])
def test_a_declaration_offers_a_bounded_list_of_settings(declaration: str) -> None:
    from spade_serve.tasks import MAX_KNOB_SETTINGS

    source = DIAL.replace('KNOBS = {"SIZE": (int, 2, 5), "MODE": (str, "a", "b")}',
                          "N = 1\n    " + "\n    ".join(f'C{i} = "a"' for i in range(60)) + f"\n    KNOBS = {declaration}")
    source = source.replace('HARDER = {"SIZE": "lower"}', "")
    env = ServedEnv("store", dial().metadata, source, ())
    settings = TaskCatalog().knob_settings(env)
    if declaration.startswith("{name"):
        assert settings == [()]
    else:
        assert len(settings) == MAX_KNOB_SETTINGS and settings[:2] == [(), (("N", 2),)]
        assert settings[-1] == (("C30", "c30"),), "the first ones in declaration order"
