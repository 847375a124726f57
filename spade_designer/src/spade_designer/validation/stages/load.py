"""Stage 2, load: the class instantiates inside the sandbox and ``reset(seed)`` runs on
every configured seed.

What ``reset`` returns is the contract stage's to judge: a bare observation (the old Gym
``reset``) or any other shape than ``(str, dict)`` is rejected there, with the method and
what it returned, as every other contract violation is."""

from __future__ import annotations

from ..codes import Reason
from ..context import Run
from ..runner import Rejection


def check(run: Run) -> str:
    env = run.env()  # instantiation errors surface here as init_error
    lengths = []
    misshapen = 0
    for seed in run.config.seeds:
        try:
            obs, _info = env.reset(seed)
        except Rejection as rej:
            if rej.code is not Reason.reset_wrong_types:
                raise
            misshapen += 1  # it ran; its value is judged by the contract stage
            continue
        lengths.append(len(obs))
    if misshapen:
        return f"instantiated; reset() ran on seeds {list(run.config.seeds)} ({misshapen} returned another shape than (str, dict))"
    return f"instantiated; reset() on seeds {list(run.config.seeds)} gave observations of {lengths} characters"
