"""Environments written for the reference implementation: the names its loader provides,
the tool-use base it provides, reward ranges declared the old Gym way, no silent repairs of
contract violations, verdicts that read what the agent reads, and a total time budget.

Real sandbox workers throughout; the corpus files are in ``corpus_ext/``."""

from __future__ import annotations

import pytest
from conftest import HERE
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from spade_core.domains import Domain, domain_for_source
from spade_core.env import declared_reward_range
from spade_core.errors import EnvContractError
from spade_core.metadata import EnvMetadata
from spade_core.plugins import get_plugins
from spade_designer.validation import ValidationConfig, Validator, fuzz
from spade_designer.validation.pipeline import reward_range_for
from spade_sandbox.allowlist import DEFAULT_ALLOWED_MODULES
from spade_sandbox.launcher import SandboxLauncher
from spade_sandbox.prelude import REFERENCE_ATTRIBUTES, REFERENCE_MODULES, prelude_names

from spade_sandbox import SandboxedEnv, SandboxPool

EXT = HERE / "corpus_ext"


def ext(kind: str, name: str) -> str:
    return (EXT / kind / f"{name}.py").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def validator():
    with Validator() as v:
        yield v


@pytest.fixture(scope="module")
def pool():
    with SandboxLauncher().pool() as p:
        yield p


# --- 1. the reference loader's namespace -------------------------------------------------------


def _identity_probe(names: list[str]) -> str:
    """An environment whose reset reports, for each prelude name, whether it is the very
    object an import inside the sandbox hands out."""
    checks = []
    for name in names:
        if name in REFERENCE_MODULES:
            checks.append(f"    import {REFERENCE_MODULES[name]} as _m\n    out.append({name} is _m)")
        else:
            mod, attr = REFERENCE_ATTRIBUTES[name]
            checks.append(f"    from {mod} import {attr} as _a\n    out.append({name} is _a)")
    return (
        "def _probe():\n    out = []\n" + "\n".join(checks) + "\n    return out\n\n\n"
        "class ProbeEnv:\n"
        "    def reset(self, seed=None):\n"
        "        return ','.join(str(x) for x in _probe()), {}\n\n"
        "    def step(self, action):\n"
        "        return 'o', 0.0, True, False, {}\n"
    )


def test_the_prelude_holds_about_forty_reference_names_and_np_only_where_numpy_is_allowed():
    names = prelude_names(DEFAULT_ALLOWED_MODULES)
    assert {"random", "re", "math", "json", "string", "itertools", "functools", "collections", "heapq", "copy"} <= set(names)
    assert {"deque", "defaultdict", "Counter", "OrderedDict", "namedtuple", "List", "Dict", "Optional", "Any"} <= set(names)
    assert "np" not in names and 35 <= len(names) <= 45
    assert "np" in prelude_names(DEFAULT_ALLOWED_MODULES | {"numpy"})


def test_every_prelude_name_is_the_object_an_import_in_the_sandbox_gives(pool: SandboxPool):
    names = prelude_names(DEFAULT_ALLOWED_MODULES)
    h = pool.spawn(_identity_probe(names))
    obs, _ = pool.reset(h, 0)
    assert obs.split(",") == ["True"] * len(names)
    pool.close_env(h)


def test_np_is_missing_where_the_domain_does_not_allow_numpy(pool: SandboxPool):
    src = "class NpEnv:\n    def reset(self, seed=None):\n        return str(np.arange(3).sum()), {}\n    def step(self, a):\n        return 'o', 0.0, True, False, {}\n"
    without = pool.spawn(src)
    with pytest.raises(Exception, match="name 'np' is not defined"):
        pool.reset(without, 0)


def test_the_source_s_own_names_shadow_the_prelude(pool: SandboxPool):
    src = (
        "random = 'mine'\n\nclass ShadowEnv:\n    def reset(self, seed=None):\n        return random, {}\n"
        "    def step(self, a):\n        return 'o', 0.0, True, False, {}\n"
    )
    h = pool.spawn(src)
    assert pool.reset(h, 0)[0] == "mine"


def test_a_name_outside_the_prelude_is_still_a_load_error(validator: Validator):
    report = validator.validate(ext("bad", "l_name_outside_prelude"))
    assert report.failed_stage == "load" and "name 'time' is not defined" in report.reasons[0]


# --- 2. tool-use subclasses of the reference base, unimported ---------------------------------


def test_a_tool_use_source_is_recognised_by_its_unimported_base():
    domains = list(get_plugins().domains().values())
    assert domain_for_source(ext("good", "tool_ref_lookup"), domains).name == "tooluse"
    assert domain_for_source(ext("good", "ref_high_low"), domains) is None
    defines_it = "class ToolUseBaseEnv:\n    pass\n\nclass XEnv(ToolUseBaseEnv):\n    pass\n"
    assert domain_for_source(defines_it, domains) is None  # its own base, not the domain's


def test_a_reference_tool_use_source_validates_unchanged_without_a_domain(validator: Validator):
    report = validator.validate(ext("good", "tool_ref_inventory"))
    assert report.passed and report.feasibility_proven, report.reasons
    static = next(f for f in report.findings if f.stage == "static")
    assert "[-0.1, 1] (domain)" in static.message


def test_a_reference_tool_use_source_fuzzes_unchanged():
    report = fuzz(ext("good", "tool_ref_notes"), examples=8)
    assert report.passed, report.reasons


def test_a_reference_tool_use_source_runs_as_gymnasium_makes_a_stored_one():
    # what stored_envs.make_stored_env builds for a store entry of the tool-use domain
    allowed = sorted(get_plugins().domain("tooluse").allowed_modules)
    env = SandboxedEnv(ext("good", "tool_ref_lookup"), allowed_modules=allowed, reward_range=(-0.1, 1.0), max_turns=10)
    try:
        obs, _ = env.reset(seed=3)
        assert "Use the tools" in obs
        assert env.step("no tags at all")[1] == -0.1  # the reference base's format penalty
        assert [t["function"]["name"] for t in env.tools] == ["get_price"]
    finally:
        env.close()


# --- 3. reward ranges ----------------------------------------------------------------------------

_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(lo=_finite, width=st.floats(min_value=1e-3, max_value=1e6), inherited=st.booleans(), annotated=st.booleans())
def test_a_declared_reward_range_is_read_for_all_finite_pairs_inherited_or_not(lo, width, inherited, annotated):
    hi = lo + width
    decl = f"reward_range: Tuple[float, float] = ({lo!r}, {hi!r})" if annotated else f"reward_range = ({lo!r}, {hi!r})"
    if inherited:
        src = f"class Base:\n    {decl}\n\nclass GameEnv(Base):\n    def reset(self, seed=None): ...\n    def step(self, a): ...\n"
    else:
        src = f"class GameEnv:\n    {decl}\n    def reset(self, seed=None): ...\n    def step(self, a): ...\n"
    assert declared_reward_range(src) == (float(lo), float(hi))


@pytest.mark.parametrize("value", ["(1.0, 0.0)", "(0.0, 0.0)", "(0, float('inf'))", "('a', 1)", "(0.0, 1.0, 2.0)"])
def test_a_malformed_declaration_is_a_contract_error_naming_the_class(value):
    src = f"class GameEnv:\n    reward_range = {value}\n    def reset(self, seed=None): ...\n    def step(self, a): ...\n"
    if value == "(0, float('inf'))":  # computed, not a literal: only a run can tell
        assert declared_reward_range(src) is None
        return
    with pytest.raises(EnvContractError, match="class GameEnv declares reward_range"):
        declared_reward_range(src)


def test_the_enforced_range_comes_from_class_then_metadata_then_domain_then_default():
    cfg = ValidationConfig()
    plain = "class GameEnv:\n    def reset(self, seed=None): ...\n    def step(self, a): ...\n"
    declared = plain.replace("class GameEnv:\n", "class GameEnv:\n    reward_range = (-1, 2)\n")
    dom = Domain(name="d", description="", skills=("s",), prompt_spec="", reward_range=(-0.1, 1.0))
    meta = EnvMetadata(name="m", domain="d", skill="s", reward_range=(0.0, 5.0))
    unset = EnvMetadata(name="m", domain="d", skill="s")
    assert reward_range_for(declared, meta, dom, cfg) == ((-1.0, 2.0), "class attribute")
    assert reward_range_for(plain, meta, dom, cfg) == ((0.0, 5.0), "metadata")
    assert reward_range_for(plain, unset, dom, cfg) == ((-0.1, 1.0), "domain")
    assert reward_range_for(plain, None, None, cfg) == ((0.0, 1.0), "default")


def test_a_declared_range_is_enforced_on_every_step(validator: Validator):
    assert validator.validate(ext("good", "format_penalty_declared")).passed
    report = validator.validate(ext("bad", "c_penalty_undeclared"))
    # the penalty is a literal in the source: found before anything runs
    assert (report.failed_stage, report.findings[-1].code) == ("static", "reward_out_of_range")


# --- 4. no silent repairs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("c_bare_reset_obs", "reset() returned str; expected the pair (observation: str, info: dict)"),
        ("c_old_gym_step", "step() returned a 4-tuple (str, float, bool, dict) (the old Gym API"),
    ],
)
def test_old_gym_shapes_fail_the_contract_stage_naming_the_method_and_the_value(validator: Validator, name, needle):
    report = validator.validate(ext("bad", name))
    assert report.failed_stage == "contract" and needle in report.reasons[0]


# --- 6, 8. verdicts on what the agent reads ------------------------------------------------------


def test_an_observation_that_ignores_the_action_is_not_interactive_with_a_string_solution(validator: Validator):
    report = validator.validate(ext("bad", "g_stale_observation_string"))
    assert (report.failed_stage, report.findings[-1].code) == ("degenerate", "not_interactive")


def test_ending_on_malformed_actions_is_not_single_shot_when_well_formed_ones_continue(validator: Validator):
    report = validator.validate(ext("good", "strict_grammar_multiturn"))
    assert report.passed, report.reasons
    report = validator.validate(ext("bad", "g_single_shot_string"))
    assert (report.failed_stage, report.findings[-1].code) == ("degenerate", "single_shot")


def test_all_malformed_probes_say_nothing_about_single_shot_without_a_known_action(validator: Validator):
    src = (
        "class TerseEnv:\n"
        "    def reset(self, seed=None):\n"
        "        self.t = 0\n        return 'Say the word ' + 'abc'[(seed or 0) % 3] + '.', {}\n"
        "    def step(self, action):\n"
        "        return 'Bye.', 0.0, True, False, {}\n"
    )
    report = validator.validate(src)
    assert report.passed and not report.feasibility_proven, report.reasons
    assert any("single-shot not judged" in f.message for f in report.findings)


# --- 10. unsolvable / unproven -------------------------------------------------------------------


def test_a_prose_solution_is_admitted_unproven_and_a_wrong_string_replay_is_rejected(validator: Validator):
    unproven = validator.validate(ext("good", "prose_riddle_unproven"))
    assert unproven.passed and not unproven.feasibility_proven
    assert any(f.code == "feasibility_unproven" for f in unproven.findings)
    for name in ("fe_unsolvable_seed", "fe_wrong_replay_string"):
        report = validator.validate(ext("bad", name))
        assert (report.failed_stage, report.findings[-1].code) == ("feasibility", "solution_fails")


# --- issue 16, class 5: a total time budget per candidate ---------------------------------------


def test_a_candidate_whose_calls_use_up_the_budget_is_rejected_in_about_the_budget():
    import time

    # the per-call bound as high as the deadline: on a loaded machine a 0.1 s step must not read as slow_call
    with Validator(config=ValidationConfig(candidate_budget_s=2.0, call_time_bound_s=2.0)) as v:
        t0 = time.perf_counter()
        # every step slow (the corpus entry is slow past turn 12 only): ~80 steps before the fuzz stage
        report = v.validate(ext("bad", "t_slow_steps_budget").replace("if self.turn > 12:", "if self.turn > 0:"))
        elapsed = time.perf_counter() - t0
    finding = report.findings[-1]
    assert finding.code == "time_budget_exceeded" and "2 s" in finding.message
    assert elapsed < 2.0 + 2 * ValidationConfig().sandbox_call_timeout_s + 3.0  # no stage runs on past it


def test_the_budget_is_configurable_and_must_hold_one_call():
    assert ValidationConfig.from_section({"candidate_budget_s": 12}).candidate_budget_s == 12
    with pytest.raises(ValidationError, match="candidate_budget_s must be at least sandbox_call_timeout_s"):
        ValidationConfig(candidate_budget_s=1.0)


def test_a_typical_environment_stays_far_inside_the_default_budget(validator: Validator):
    report = validator.validate(ext("good", "typed_stacks"))
    assert report.passed and sum(report.timings.values()) < ValidationConfig().candidate_budget_s / 10

