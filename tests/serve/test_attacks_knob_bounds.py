"""The Task API of an environment whose knob declaration no float holds (a bound of a
401-digit integer): before, reading it raised ``OverflowError`` and the server answered 500
for the environment; now the declaration is refused where it is read (a
``KnobDeclarationError``, which the task catalog already takes as "no knob settings"), so
the environment is served as written: its tasks answered 200, an index past them 400, an
unknown environment 404, and a reset by task plays it."""

from __future__ import annotations

import httpx

from .envs import served

HUGE = "9" * 401

SOURCE = f'''
import random


class HugeEnv:
    SIZE = 8
    KNOBS = {{"SIZE": (int, 1, {HUGE})}}

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, self.SIZE)
        return f"guess 1..{{self.SIZE}}", {{}}

    def step(self, action):
        right = action.strip() == str(self.secret)
        return ("right" if right else "wrong"), float(right), True, False, {{}}

    def solution(self):
        return [str(self.secret)]
'''


def test_the_task_api_serves_the_environment_as_written_never_500(serve) -> None:
    env = served("huge", SOURCE, kind="seed")
    env = type(env)(env.kind, env.metadata.model_copy(update={"class_name": "HugeEnv"}), env.source, ())
    with serve([env]) as (url, _), httpx.Client(base_url=url, timeout=30) as http:
        count = http.post("/huge-v1/num_tasks", json={"split": "train"})
        assert count.status_code == 200, count.text
        tasks = count.json()["num_tasks"]
        first = http.post("/huge-v1/task", json={"split": "train", "index": 0})
        assert first.status_code == 200 and first.json()["task"]["knobs"] == {}, first.text
        assert http.post("/huge-v1/task", json={"split": "train", "index": tasks}).status_code == 400
        assert http.post("/huge-v1/tasks", json={"split": "train"}).status_code == 200
        assert http.post("/nothing-v1/num_tasks", json={"split": "train"}).status_code == 404
        played = http.post("/reset", json={"split": "train", "index": 1})
        assert played.status_code == 200, played.text
