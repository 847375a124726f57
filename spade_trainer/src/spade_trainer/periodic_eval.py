"""The evaluation a self-play run makes every N iterations (``[selfplay.eval]``).

The suite comes from the plugins (``spade_register_eval_suites``, the same registry ``spade
eval`` reads) and is played by the core's harness (:mod:`spade_core.app.eval_harness`) with the
policy being trained, through the same :class:`~.chat_backend.PolicyChatBackend` the
designer generates with (transformers or vLLM). Each result is appended to the run's
``evals.jsonl`` in the format ``spade compare`` reads, with the iteration it measured and
the episodes and environment steps the run had played by then.

The suite is given no store: it sees the seed environments and what its options name
(``ids``; ``run`` for a run's held-out designs), never the run's own growing pool, so every
evaluation of every run measures the same episodes.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from spade_core.app.eval_harness import EvalResult, append_to_run, evaluate
from spade_core.evaluation import EpisodeSuite, SuiteContext

from .errors import ConfigError

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.plugins import SpadePlugins
    from spade_designer.llm.base import LLMBackend

    from .config import EvalSettings


def eval_suite(settings: EvalSettings, plugins: SpadePlugins) -> EpisodeSuite:
    """The suite ``settings`` names, its options checked; :class:`ConfigError` otherwise."""
    suites = plugins.eval_suites()
    if settings.suite not in suites:
        raise ConfigError(f"eval.suite = {settings.suite!r} is not an installed evaluation suite "
                          f"(installed: {', '.join(sorted(suites)) or 'none'}; `spade eval --list` describes them)")
    suite = suites[settings.suite]
    unknown = sorted(set(settings.options) - set(suite.options))
    if unknown:
        raise ConfigError(f"eval.options: suite {suite.name!r} takes no option {', '.join(unknown)} "
                          f"(it takes: {', '.join(suite.options) or 'none'})")
    return suite


class PeriodicEvaluation:
    """Plays ``settings.suite`` every ``settings.every`` iterations and keeps each result."""

    def __init__(self, settings: EvalSettings, *, plugins: SpadePlugins, spade_config: SpadeConfig,
                 max_new_tokens: int) -> None:
        self.settings = settings
        self.suite = eval_suite(settings, plugins)
        self.plugins = plugins
        self.spade_config = spade_config
        self.max_new_tokens = settings.max_new_tokens or max_new_tokens

    def due(self, iteration: int) -> bool:
        """Whether the policy after ``iteration`` (0: the initial one) is evaluated."""
        s = self.settings
        if s.every == 0:
            return False
        return s.at_start if iteration == 0 else iteration % s.every == 0

    def run(self, backend: LLMBackend, *, run_dir: Path, iteration: int, episodes: int, env_steps: int,
            policy: str, snapshot: str) -> EvalResult:
        """Evaluate ``backend`` now and append the result to ``run_dir/evals.jsonl``."""
        s = self.settings
        with contextlib.ExitStack() as resources:
            context = SuiteContext(self.spade_config, self.plugins, None, resources)
            items = list(self.suite.items(context, size=s.size, seed=s.seed, **s.options))
            result = evaluate(backend, items, suite=s.suite, policy=policy, snapshot=snapshot, size=s.size,
                              seed=s.seed, concurrency=s.concurrency, max_new_tokens=self.max_new_tokens,
                              temperature=s.temperature, options=dict(s.options), max_turns=s.max_turns)
        result.iteration = iteration
        append_to_run(result, run_dir, run_episodes=episodes, run_env_steps=env_steps)
        return result
