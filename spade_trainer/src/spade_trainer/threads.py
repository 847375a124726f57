"""Torch intra-op threads chosen per phase of an iteration from what the rest of the
machine is doing.

On a small CPU the best thread count depends on the neighbours: measured on a 2-core
machine (docs/trainer.md, ``python -m bench.bench_trainer``), two threads took 0.57x the
wall time of one for a 400-token forward pass when the machine was otherwise idle (load
average ~2), and about 5x *more* when other processes kept it busy (load 5-7), because
idle-spinning OpenMP workers then starve each other. ``"auto"`` therefore looks at the
load average before each phase (design, hints, rollouts, update) and uses every core only
when the rest of the machine is nearly idle.
"""

from __future__ import annotations

import os
from typing import Literal

ThreadSetting = int | Literal["auto"] | None

#: Runnable tasks besides this process's own threads (1-minute load average minus the
#: threads we ran) below which ``"auto"`` uses every core.
IDLE_NEIGHBOURS = 0.5


def auto_threads(load_average: float, own_threads: int, cores: int) -> int:
    """Threads for the next phase: all ``cores`` when the load beyond our own
    ``own_threads`` is under :data:`IDLE_NEIGHBOURS`, else one."""
    neighbours = max(0.0, load_average - own_threads)
    return cores if neighbours < IDLE_NEIGHBOURS else 1


def apply_threads(setting: ThreadSetting) -> int | None:
    """Set torch's intra-op threads for the next phase; returns the count set, or ``None``
    when ``setting`` is ``None`` (torch's default is left alone) or ``"auto"`` cannot read
    a load average on this platform."""
    if setting is None:
        return None
    import torch

    if setting == "auto":
        if not hasattr(os, "getloadavg"):
            return None
        wanted = auto_threads(os.getloadavg()[0], torch.get_num_threads(), os.cpu_count() or 1)
    else:
        wanted = int(setting)
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
    return wanted
