"""SPADE eval: ``spade eval`` plays a policy on an evaluation suite (registry
environments, Reasoning-Gym, ... from plugins) and stores the result with the policy
snapshot it measured; ``spade compare`` puts several runs' results side by side."""

from .harness import EpisodeResult, EvalResult, GroupStats, evaluate

__all__ = ["EpisodeResult", "EvalResult", "GroupStats", "evaluate"]
