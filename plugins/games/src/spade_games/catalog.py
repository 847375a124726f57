"""The seed pool: twenty hand-written games shipped with the plugin, three or more per skill.

Each game is a standalone reference-format source file under ``envs/`` (standard library
only, so it runs unchanged inside the sandbox). This table is the one place that says
which skill a game trains, how hard it is and how many turns it gets; the tests check
that every ``max_turns`` here equals the game's own default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spade_core.domains import SeedEnv

ENVS_DIR = Path(__file__).parent / "envs"

SKILLS: tuple[str, ...] = (
    "mathematical_reasoning",
    "logical_deduction",
    "spatial_reasoning",
    "pattern_recognition",
    "optimization",
    "causal_inference",
)


@dataclass(frozen=True)
class _Entry:
    name: str
    skill: str
    file: str
    class_name: str
    max_turns: int
    difficulty: float
    description: str


_ENTRIES: tuple[_Entry, ...] = (
    _Entry(
        "polynomial_probe",
        "mathematical_reasoning",
        "polynomial_probe.py",
        "PolynomialProbeEnv",
        12,
        0.3,
        "Evaluate a hidden integer quadratic at chosen points, then state its coefficients.",
    ),
    _Entry(
        "subset_scale",
        "mathematical_reasoning",
        "subset_scale.py",
        "SubsetScaleEnv",
        10,
        0.5,
        "Weigh groups of two or more boxes and solve the linear system for every box's weight.",
    ),
    _Entry(
        "remainder_oracle",
        "mathematical_reasoning",
        "remainder_oracle.py",
        "RemainderOracleEnv",
        10,
        0.75,
        "Ask three remainders of a secret number up to 2000 and reconstruct it (Chinese remainders).",
    ),
    _Entry(
        "island_of_liars",
        "logical_deduction",
        "island_of_liars.py",
        "IslandOfLiarsEnv",
        12,
        0.4,
        "Question knights and knaves about each other and classify all six islanders.",
    ),
    _Entry(
        "code_breaker",
        "logical_deduction",
        "code_breaker.py",
        "CodeBreakerEnv",
        12,
        0.6,
        "Break a four-digit code from exact/misplaced peg feedback (Mastermind rules).",
    ),
    _Entry(
        "height_ranking",
        "logical_deduction",
        "height_ranking.py",
        "HeightRankingEnv",
        16,
        0.5,
        "Sort six people by hidden height with a limited number of pairwise comparisons.",
    ),
    _Entry(
        "culprit_deduction",
        "logical_deduction",
        "culprit_deduction.py",
        "CulpritDeductionEnv",
        14,
        0.35,
        "Eliminate suspects, tools and rooms from refuted suggestions, then make one accusation.",
    ),
    _Entry(
        "higher_lower",
        "logical_deduction",
        "higher_lower.py",
        "HigherLowerEnv",
        4,
        0.05,
        "Find a secret among three listed numbers in two guesses, told higher or lower after a miss.",
    ),
    _Entry(
        "sonar_search",
        "spatial_reasoning",
        "sonar_search.py",
        "SonarSearchEnv",
        20,
        0.45,
        "Triangulate two sunken buoys on an 8x8 grid from Manhattan-distance pings.",
    ),
    _Entry(
        "battleship",
        "spatial_reasoning",
        "battleship.py",
        "BattleshipEnv",
        25,
        0.5,
        "Find and sink three hidden ships on a 6x6 sea by firing at cells.",
    ),
    _Entry(
        "fog_maze",
        "spatial_reasoning",
        "fog_maze.py",
        "FogMazeEnv",
        25,
        0.55,
        "Walk a hidden 5x5 maze to its exit, seeing only the openings of the current room.",
    ),
    _Entry(
        "affine_cipher",
        "pattern_recognition",
        "affine_cipher.py",
        "AffineCipherEnv",
        10,
        0.6,
        "Use an encryption oracle to recover an affine letter cipher and decode a message.",
    ),
    _Entry(
        "sequence_rule",
        "pattern_recognition",
        "sequence_rule.py",
        "SequenceRuleEnv",
        12,
        0.55,
        "Probe terms of a hidden integer sequence and extrapolate a far term.",
    ),
    _Entry(
        "secret_rule",
        "pattern_recognition",
        "secret_rule.py",
        "SecretRuleEnv",
        14,
        0.5,
        "Test numbers against a hidden property, then classify six challenge numbers in one go.",
    ),
    _Entry(
        "peak_finder",
        "optimization",
        "peak_finder.py",
        "PeakFinderEnv",
        14,
        0.45,
        "Locate the maximum of a hidden single-peaked function with few evaluations.",
    ),
    _Entry(
        "hidden_knapsack",
        "optimization",
        "hidden_knapsack.py",
        "HiddenKnapsackEnv",
        12,
        0.6,
        "Appraise bundles to learn hidden item values, then pack the optimal knapsack.",
    ),
    _Entry(
        "hidden_graph_route",
        "optimization",
        "hidden_graph_route.py",
        "HiddenGraphRouteEnv",
        9,
        0.65,
        "Scan towns to reveal weighted roads within a tight budget and submit the shortest route.",
    ),
    _Entry(
        "switch_circuit",
        "causal_inference",
        "switch_circuit.py",
        "SwitchCircuitEnv",
        20,
        0.6,
        "Toggle ten switches to learn hidden XOR wiring and light a target pattern.",
    ),
    _Entry(
        "growth_lab",
        "causal_inference",
        "growth_lab.py",
        "GrowthLabEnv",
        12,
        0.45,
        "Run controlled experiments to identify which of six factors causally affect growth.",
    ),
    _Entry(
        "causal_graph",
        "causal_inference",
        "causal_graph.py",
        "CausalGraphEnv",
        16,
        0.7,
        "Intervene on variables, blocking others, to recover the direct links of a hidden DAG.",
    ),
)


def seed_envs() -> tuple[SeedEnv, ...]:
    """Every seed game as a :class:`SeedEnv` (paths point into the installed package)."""
    return tuple(
        SeedEnv(
            name=e.name,
            skill=e.skill,
            path=ENVS_DIR / e.file,
            description=e.description,
            max_turns=e.max_turns,
            difficulty=e.difficulty,
            class_name=e.class_name,
        )
        for e in _ENTRIES
    )
