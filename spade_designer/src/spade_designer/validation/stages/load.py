"""Stage 2, load: the class instantiates inside the sandbox and ``reset(seed)`` returns
``(str, dict)`` for every configured seed."""

from __future__ import annotations

from ..context import Run


def check(run: Run) -> str:
    env = run.env()  # instantiation errors surface here as init_error
    lengths = []
    for seed in run.config.seeds:
        obs, _info = env.reset(seed)
        lengths.append(len(obs))
    return f"instantiated; reset() on seeds {list(run.config.seeds)} gave observations of {lengths} characters"
