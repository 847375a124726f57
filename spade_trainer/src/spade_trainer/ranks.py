"""The processes of one self-play launch: who this process is, where its own state lives,
which seed its collection uses, and a fingerprint of its random number generators.

Under ``accelerate launch`` (DDP / DeepSpeed, also DDP on CPU with gloo) every process runs
its own self-play collection and TRL averages the gradients of all processes' samples in
one update. For that to add data rather than repeat it, each process must collect
*different* samples: :func:`collection_seed` gives every rank its own seed stream (rank 0
keeps the single-process seeds, so a one-process run is unchanged by this).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import random

from .errors import TrainerError

#: Distance between the seed streams of two ranks: far above any iteration count, so the
#: seeds of rank r never meet those of another rank within a run.
RANK_SEED_STRIDE = 1_000_003


#: Where launchers put this process's rank and the number of processes: torchrun /
#: accelerate / DeepSpeed, then MPI (accelerate's multi-CPU launch through ``mpirun`` sets
#: ``RANK`` only once its state is built, after a run has chosen its folders).
RANK_VARIABLES = ("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")
SIZE_VARIABLES = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


def _first_int(names: tuple[str, ...], default: int) -> tuple[int, str | None]:
    for name in names:
        raw = os.environ.get(name)
        if raw is not None and raw.strip():
            try:
                return int(raw), name
            except ValueError:
                raise TrainerError(f"{name}={raw!r} is not an integer: the launcher's process settings are "
                                   "broken (every process would take the same run folder)") from None
    return default, None


def process_rank() -> tuple[int, int]:
    """``(rank, world_size)`` of this process under ``accelerate launch`` / ``torchrun`` /
    ``mpirun`` (see :data:`RANK_VARIABLES`); ``(0, 1)`` for a plain process. Raises
    :class:`~.errors.TrainerError` for settings that are not integers or not a rank of
    the world."""
    rank, rank_name = _first_int(RANK_VARIABLES, 0)
    size, size_name = _first_int(SIZE_VARIABLES, 1)
    if size < 1 or not 0 <= rank < size:
        raise TrainerError(f"process rank {rank} ({rank_name or 'unset'}) is not a rank of a world of {size} "
                           f"process(es) ({size_name or 'unset'})")
    return rank, size


def rank_folder(rank: int) -> str:
    """Sub-folder of a process's own state (store, metrics) under the run folder and under
    each checkpoint: none for rank 0, ``rank-<r>`` for the others."""
    return "" if rank == 0 else f"rank-{rank}"


def collection_seed(seed: int, iteration: int, rank: int = 0) -> int:
    """The seed of one process's collection in ``iteration`` (1-based): design, the choice
    of environments, hints and rollouts all derive from it.

    Distinct for distinct ``(iteration, rank)`` of one run; rank 0's seeds are those of a
    single-process run.
    """
    return seed * 100_003 + iteration + rank * RANK_SEED_STRIDE


def rng_digest() -> str:
    """A short fingerprint of this process's global random number generators (torch CPU,
    Python ``random``, NumPy): equal digests mean the same random state, so a resumed
    process can be checked against a straight run (the iteration records carry it)."""
    import numpy as np
    import torch

    h = hashlib.sha256()
    h.update(torch.get_rng_state().numpy().tobytes())
    h.update(pickle.dumps(random.getstate()))
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    h.update(np.asarray(keys).tobytes())
    h.update(repr((kind, pos, has_gauss, gauss)).encode())
    return h.hexdigest()[:16]
