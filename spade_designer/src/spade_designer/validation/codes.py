"""Stage names and machine-readable reason codes of the validation pipeline.

A rejected environment's failing :class:`~spade_core.metadata.Finding` carries one of
these codes in ``Finding.code``; tools (the designer's repair loop, the labelled-corpus
evaluation, dashboards) branch on the code, people read the message.
"""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    """The pipeline's stages, in the order they run; the first failure stops it."""

    static = "static"
    load = "load"
    contract = "contract"
    determinism = "determinism"
    fuzz = "fuzz"
    feasibility = "feasibility"
    degenerate = "degenerate"
    novelty = "novelty"


STAGE_ORDER: tuple[Stage, ...] = tuple(Stage)


class Reason(StrEnum):
    """Why a stage rejected an environment (``Finding.code``)."""

    # static
    syntax_error = "syntax_error"
    #: the class attribute ``reward_range`` is not a (low, high) pair of finite numbers
    invalid_reward_range = "invalid_reward_range"
    banned_import = "banned_import"
    forbidden_construct = "forbidden_construct"
    no_env_class = "no_env_class"
    multiple_env_classes = "multiple_env_classes"
    source_too_large = "source_too_large"
    # load
    init_error = "init_error"
    reset_error = "reset_error"
    reset_wrong_types = "reset_wrong_types"
    # contract
    check_env_failed = "check_env_failed"
    step_wrong_types = "step_wrong_types"
    # determinism
    nondeterministic = "nondeterministic"
    #: an episode depends on what earlier episodes of the same instance did
    state_across_resets = "state_across_resets"
    #: the same seed and actions give another trajectory in another process (hash order)
    process_dependent = "process_dependent"
    # fuzz (also used by any stage whose call trips the same invariant)
    step_exception = "step_exception"
    non_finite_reward = "non_finite_reward"
    reward_out_of_range = "reward_out_of_range"
    exceeds_max_turns = "exceeds_max_turns"
    #: a step after the episode ended paid a reward or said the episode goes on
    step_after_end = "step_after_end"
    observation_too_large = "observation_too_large"
    slow_call = "slow_call"
    call_timeout = "call_timeout"
    worker_crash = "worker_crash"
    memory_limit = "memory_limit"
    policy_violation = "policy_violation"
    #: any stage: the candidate's whole validation ran past ``candidate_budget_s``
    time_budget_exceeded = "time_budget_exceeded"
    # feasibility
    solution_fails = "solution_fails"
    solution_invalid = "solution_invalid"
    #: the winning step pays full reward without ending the episode (``terminated``)
    win_not_terminated = "win_not_terminated"
    # degenerate
    single_shot = "single_shot"
    solved_at_reset = "solved_at_reset"
    not_interactive = "not_interactive"
    rewards_garbage = "rewards_garbage"
    unseeded_randomness = "unseeded_randomness"
    hint_leakage = "hint_leakage"
    reward_hacking = "reward_hacking"
    #: an observation shows the solution's answer before the agent has sent it
    answer_leak = "answer_leak"
    #: every seed gives the same game (and the metadata does not declare a fixed instance)
    ignores_seed = "ignores_seed"
    #: a constant or garbage policy earns a large share of the solution's return
    gameable = "gameable"
    # novelty
    near_duplicate = "near_duplicate"
    # not a rejection: recorded on a passing report
    feasibility_unproven = "feasibility_unproven"
