"""The BFCL-v4 multi-turn benchmark served as tool-use environments and as a ``spade eval`` suite.

Every one of the 800 multi-turn entries of the installed ``bfcl-eval`` package (categories
``base``, ``miss_func``, ``miss_param``, ``long_context``) becomes a :class:`BfclEnv` in
the reference format. One module per reason to change:

* :mod:`.loader` — the data: entries, ground truth, function documents (another data folder
  with ``root=``);
* :mod:`.execution` — the benchmark's API classes, called by name as its executor calls them;
* :mod:`.grading` — the multi-turn checker restated turn by turn;
* :mod:`.env` — :class:`BfclEnv`, the episode protocol;
* :mod:`.trajectories` — trajectories played in an environment (ground truth, scoring);
* :mod:`.mutation` — deliberate changes to a trajectory;
* :mod:`.official` — the installed benchmark's own checker on a trajectory;
* :mod:`.selfcheck` — ground-truth replay and agreement with the official checker;
* :mod:`.agent` — an agent function played entry by entry;
* :mod:`.suite` — the ``bfcl`` episode suite of ``spade eval``;
* :mod:`.cli` — ``python -m spade_tooluse.bfcl`` (the self-check as a table).

Everything is re-exported here, so ``from spade_tooluse import bfcl; bfcl.BfclEnv`` is the
public path.
"""

from .agent import Agent, AgentReport, evaluate_agent, play_entry, suite_for_plugin
from .cli import main
from .env import REVEAL_MESSAGE, STEP_LIMIT, BfclEnv, Trajectory
from .execution import REFUSED_NAMES, STATELESS, ApiSet, call_string, parse_call
from .grading import TurnVerdict, grade_turn, missing_results, state_differences
from .loader import (
    CATEGORIES,
    BfclDataError,
    BfclEntry,
    data_dir,
    function_docs,
    get_entry,
    load_entries,
    openai_schema,
)
from .mutation import MUTATIONS, mutate
from .official import checkable, official_verdict
from .selfcheck import SuiteReport, run_suite
from .suite import SUITE, OfficiallyScoredEnv, bfcl_items
from .trajectories import ground_truth_trajectory, score_trajectory, trajectory_actions

__all__ = [
    "CATEGORIES", "MUTATIONS", "REFUSED_NAMES", "REVEAL_MESSAGE", "STATELESS", "STEP_LIMIT", "SUITE",
    "Agent", "AgentReport", "ApiSet", "BfclDataError", "BfclEntry", "BfclEnv", "OfficiallyScoredEnv",
    "SuiteReport", "Trajectory", "TurnVerdict",
    "bfcl_items", "call_string", "checkable", "data_dir", "evaluate_agent", "function_docs", "get_entry",
    "grade_turn", "ground_truth_trajectory", "load_entries", "main", "missing_results", "mutate",
    "official_verdict", "openai_schema", "parse_call", "play_entry", "run_suite", "score_trajectory",
    "state_differences", "suite_for_plugin", "trajectory_actions",
]
