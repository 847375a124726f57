"""Stage 3, contract: Gymnasium's ``check_env`` on the candidate wrapped as a ``TextEnv``.

The wrapper is :class:`spade_core.env.ReferenceEnvAdapter` over a proxy that forwards to
the sandboxed instance through the pipeline's checked calls, so a value that breaks an
invariant is reported with its specific reason rather than as a generic assertion.
Determinism is left to stage 4 (longer trajectories, several seeds), so ``check_env``
sees a spec marked nondeterministic; the action space is bounded and seeded so the check
itself is reproducible.
"""

from __future__ import annotations

import warnings
from typing import Any

from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env
from spade_core.env import ReferenceEnvAdapter, UnicodeText

from ..codes import Reason
from ..context import Run
from ..runner import Instance, Rejection


class _Proxy:
    """Reference-format facade over a sandboxed instance (what the adapter wraps)."""

    def __init__(self, env: Instance) -> None:
        self._env = env

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        return self._env.reset(seed)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        s = self._env.step(action)
        return s.observation, s.reward, s.terminated, s.truncated, s.info


def check(run: Run) -> str:
    adapter = ReferenceEnvAdapter(_Proxy(run.env()), max_turns=None, reward_range=run.candidate.reward_range)
    adapter.spec = EnvSpec("spade/candidate-v0", nondeterministic=True)
    adapter.action_space = UnicodeText(max_length=200, seed=run.config.seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_env(adapter, skip_render_check=True, skip_close_check=True)
        except Rejection:
            raise
        except AssertionError as exc:
            raise Rejection(Reason.check_env_failed, f"gymnasium check_env: {exc}") from None
        except Exception as exc:
            raise Rejection(Reason.check_env_failed, f"gymnasium check_env raised {type(exc).__name__}: {exc}") from None
    notes = sorted({str(w.message) for w in caught})
    if notes:
        run.findings.append(
            _warning_finding(notes)
        )
    return "gymnasium check_env passed" + (f" with {len(notes)} warning(s)" if notes else "")


def _warning_finding(notes: list[str]) -> Any:
    from spade_core.metadata import Finding

    return Finding(stage="contract", ok=True, message="check_env warnings", details={"warnings": notes[:10]})
