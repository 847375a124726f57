"""A scripted design stage (test double) shared by the self-play tests and the
multi-process worker: a tiny random model cannot write working environments."""

from __future__ import annotations

from collections.abc import Sequence

from spade_core.metadata import EnvMetadata, EnvStatus
from spade_trainer.design_protocol import DesignedCandidate
from spade_trainer.selfplay import SelfPlayRun

from .envs import GUESS_ENV


class ScriptedDesignStage:
    """Each round admits one working environment and produces one invalid one."""

    def __init__(self, run: SelfPlayRun) -> None:
        self.run = run
        self.remembered: list[tuple[str, float, float]] = []
        self.rounds = 0

    def design(self, skill: str, n: int, *, seed: int, agent_stats: dict[str, float] | None = None
               ) -> Sequence[DesignedCandidate]:
        self.rounds += 1
        tok = self.run.tokenizer
        prompt = tok(f"Design a {skill} game.", add_special_tokens=False)["input_ids"]
        good = tok("class GuessEnv:", add_special_tokens=False)["input_ids"]
        bad = tok("print(1)", add_special_tokens=False)["input_ids"]
        name = f"guess_{seed}"
        source = GUESS_ENV + f"\n# variant {seed}\n"
        meta = self.run.store.add(source, EnvMetadata(name=name, domain="games", skill=skill, max_turns=3))
        self.run.store.set_status(meta.id, EnvStatus.admitted)
        return [
            DesignedCandidate(skill, True, True, meta.id, None, ("static", "load"), 0.8, prompt, good, [-1.0] * len(good)),
            DesignedCandidate(skill, False, False, None, "load", ("static",), None, prompt, bad, [-1.0] * len(bad)),
        ][:n]

    def write_hint(self, source: str, *, seed: int) -> str:
        return "Try small numbers first."

    def remember(self, env_id: str, *, win_rate: float, regret: float) -> None:
        self.remembered.append((env_id, win_rate, regret))
