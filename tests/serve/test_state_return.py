"""``/state`` tells an episode's return as SPADE defines it (the last reward once the
environment ended the episode, else 0: ``spade_core.returns``) beside ``total_reward``, the
sum of the step rewards, which counts partial progress at every step (the issue: a client
reading ``total_reward`` as the return got 1.6 for an episode worth 1.0)."""

from __future__ import annotations

import httpx
from spade_serve.models import SpadeState

from .envs import served

#: Pays 0.3 per "step", 1.0 and ends on "win"; "stop" cuts the episode with partial reward.
PARTIAL = '''
class PartialEnv:
    def reset(self, seed=None):
        self.turn = 0
        return "go", {}

    def step(self, action):
        self.turn += 1
        if action == "win":
            return "won", 1.0, True, False, {}
        return "step", 0.3, False, action == "stop", {}

    def solution(self):
        return ["win"]
'''


def test_state_reports_the_episode_return_beside_the_sum_of_rewards(serve) -> None:
    env = served("partial", PARTIAL.replace("PartialEnv", "CounterEnv"))
    with serve(envs=[env]) as (url, _), httpx.Client(base_url=url) as http:
        def play(actions: list[str]) -> SpadeState:
            sid = http.post("/reset", json={"seed": 1}).headers["X-Spade-Session"]
            before = SpadeState.model_validate(http.get("/state", params={"session_id": sid}).json())
            assert before.last_reward is None and before.episode_return == 0.0
            for action in actions:
                assert http.post("/step", json={"action": {"message": action}, "session_id": sid}).status_code == 200
            return SpadeState.model_validate(http.get("/state", params={"session_id": sid}).json())

        won = play(["a", "b", "win"])
        assert won.terminated and won.last_reward == 1.0 and won.episode_return == 1.0
        assert abs(won.total_reward - 1.6) < 1e-9
        cut = play(["a", "stop"])
        assert cut.truncated and not cut.terminated and cut.last_reward == 0.3 and cut.episode_return == 0.0
