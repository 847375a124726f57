"""The fuzzer draws a domain plugin's strategy for real: many distinct actions, more with
more examples, and the rare inputs a plugin author lists are reached (real sandbox)."""

from __future__ import annotations

from hypothesis import strategies as st
from spade_core.domains import Domain
from spade_core.plugins import get_plugins
from spade_designer.validation import fuzz
from spade_designer.validation.strategies import domain_samples


def _domain(name: str, strategy) -> Domain:
    return Domain(name=name, description="test", skills=("s",), prompt_spec="", fuzz_strategy=lambda: strategy)


def test_the_games_strategy_gives_many_distinct_actions_and_more_with_more_examples():
    games = get_plugins().domain("games")
    few, many = domain_samples(games, 32), domain_samples(games, 400)
    assert len(few) >= 25, few[:5]
    assert len(many) >= 300, len(many)


def test_the_draw_is_reproducible_and_its_seed_changes_it():
    games = get_plugins().domain("games")
    assert domain_samples(games, 64, seed=3) == domain_samples(games, 64, seed=3)
    assert domain_samples(games, 64, seed=3) != domain_samples(games, 64, seed=4)


#: A plugin author's strategy: ordinary commands, plus the one odd input the author knows
#: breaks things, listed once among many.
ORDINARY = [f"\\boxed{{probe {i}}}" for i in range(40)]
ODD = "\\boxed{probe -7}"
STRATEGY = st.one_of(st.sampled_from(ORDINARY), st.sampled_from(ORDINARY + [ODD]), st.text(max_size=20))

#: Pays 2.0 (outside [0, 1]) on that input only.
ENV = '''
import re


class ProbeEnv:
    def reset(self, seed=None):
        self.turn = 0
        self.over = False
        return "Probe with \\\\boxed{probe N}.", {}

    def step(self, action):
        if self.over:
            return "over", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"probe (-?[0-9]+)", action)
        reward = 2.0 if m and int(m.group(1)) < -5 else 0.0
        self.over = self.turn >= 5
        return "ok", reward, False, self.over, {}
'''


def test_the_odd_input_of_a_plugin_strategy_is_found_by_default():
    domain = _domain("probes_odd", STRATEGY)
    assert ODD in domain_samples(domain, 200)
    report = fuzz(ENV, domain=domain, examples=200)
    assert not report.passed
    failing = next(f for f in report.findings if not f.ok)
    assert failing.code == "reward_out_of_range" and ODD in (failing.actions or [])
