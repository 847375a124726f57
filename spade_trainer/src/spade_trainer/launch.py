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

#: Distance between the seed streams of two ranks: far above any iteration count, so the
#: seeds of rank r never meet those of another rank within a run.
RANK_SEED_STRIDE = 1_000_003


def process_rank() -> tuple[int, int]:
    """``(rank, world_size)`` of this process under ``accelerate launch`` / ``torchrun``
    (which set ``RANK`` and ``WORLD_SIZE``); ``(0, 1)`` for a plain process."""
    try:
        return int(os.environ.get("RANK", "0")), max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 0, 1


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
