"""The fuzzer seeds itself from the environment: its solution, the commands it prints,
and near misses of both; it finds the bugs users write (real sandbox, default settings).

Each target in ``user_bugs/`` has one bug; replacing the marked line (``FIXES``) gives the
control, which must pass the same stages, so a finding is the bug and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_designer.validation import Stage, ValidationConfig, Validator, fuzz
from spade_designer.validation.mutations import boxed_mutations, derived_actions, templates, tool_mutations
from spade_designer.validation.strategies import ActionProgram, generic_pool

BUGS = Path(__file__).parent / "user_bugs"
#: (target, what the fuzz must report, the bug's line, its fix)
TARGETS = {
    "hop_dropped_argument": (
        "step_exception", "IndexError",
        "k = parts[1]  # BUG: no check that the length was given", 'k = parts[1] if len(parts) == 2 else ""',
    ),
    "dial_digit_like": (
        "step_exception", "ValueError",
        "not parts[1].isdigit()", 'parts[1] not in tuple("123456789")',
    ),
    "track_overshoot": (
        "reward_out_of_range", "outside the declared range",
        "self.pos += int(parts[1])", "self.pos = min(self.length, self.pos + int(parts[1]))",
    ),
}
UP_TO_FEASIBILITY = tuple(s for s in Stage if s not in (Stage.degenerate, Stage.novelty))


def source(name: str, *, fixed: bool = False) -> str:
    text = (BUGS / f"{name}.py").read_text(encoding="utf-8")
    _, _, bug, fix = TARGETS[name]
    assert text.count(bug) == 1
    return text.replace(bug, fix) if fixed else text


@pytest.fixture(scope="module")
def validator():
    with Validator() as v:
        yield v


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_default_validation_finds_the_bug_with_a_replay(validator, name):
    code, words, _, _ = TARGETS[name]
    report = validator.validate(source(name))
    assert report.failed_stage == "fuzz", report.reasons
    (finding,) = [f for f in report.findings if not f.ok]
    assert finding.code == code and words in finding.message, finding.message
    assert finding.seed is not None and finding.actions, "a replayable (seed, actions) pair"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_replay_of_a_finding_reproduces_it(validator, name):
    """The reported actions, replayed from reset(seed) through a fresh instance, fail the
    same way: the report is something a user can act on."""
    from spade_designer.validation.context import Candidate, Run
    from spade_designer.validation.runner import Rejection

    report = validator.validate(source(name))
    (finding,) = [f for f in report.findings if not f.ok]
    run = Run(Candidate(source(name), max_turns=25, reward_range=(0.0, 1.0)), ValidationConfig(), validator.pool)
    try:
        with pytest.raises(Rejection) as caught:
            run.env().play(finding.seed, finding.actions)
    finally:
        run.close()
    assert caught.value.code.value == finding.code


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_fixed_control_passes_the_same_stages(validator, name):
    config = ValidationConfig(stages=UP_TO_FEASIBILITY)
    report = validator.validate(source(name, fixed=True), config=config)
    assert report.passed and report.feasibility_proven, report.reasons


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_spade_fuzz_default_finds_it_too(name):
    report = fuzz(source(name))
    assert report.failed_stage == "fuzz" and TARGETS[name][0] in report.reasons[0]


# --- the derived actions, unit by unit ---------------------------------------------------


def test_templates_come_from_boxed_commands_the_environment_prints():
    found = templates(["Hop with \\boxed{hop K}; look with \\boxed{look}.", "Use \\boxed{place <row> <col>}."])
    assert "\\boxed{hop K}" in found and "\\boxed{hop 1}" in found and "\\boxed{hop -1}" in found
    assert "\\boxed{look}" in found
    assert "\\boxed{place 0 0}" in found and "\\boxed{place 99 99}" in found


def test_mutations_drop_and_add_arguments_change_numbers_and_use_lookalikes():
    muts = boxed_mutations("\\boxed{move 5 2}")
    assert "\\boxed{move}" in muts  # every argument dropped
    assert "\\boxed{move 5}" in muts and "\\boxed{move 2}" in muts  # one dropped
    assert "\\boxed{move 5 2 1}" in muts  # one added
    assert "\\boxed{move 6 2}" in muts and "\\boxed{move -1 2}" in muts  # numbers changed
    assert "\\boxed{move 2 5}" in muts  # reordered
    assert "\\boxed{move ⁵ ²}" in muts and "\\boxed{move ٥ ٢}" in muts and "\\boxed{move ５ ２}" in muts
    assert "\\boxed{mоvе 5 2}" in muts  # Cyrillic о and е
    assert "\\boxed{move 5 2}" not in muts


def test_digit_like_characters_pass_isdigit_and_some_fail_int():
    muts = boxed_mutations("\\boxed{set 7}")
    digits = [m[len("\\boxed{set ") : -1] for m in muts if m.startswith("\\boxed{set ")]
    odd = [d for d in digits if d.isdigit() and not d.isascii()]
    assert odd, digits
    failing_int = []
    for d in odd:
        try:
            int(d)
        except ValueError:
            failing_int.append(d)
    assert failing_int and len(failing_int) < len(odd)  # both kinds: '⁷' fails int(), '٧' does not


def test_tool_call_mutations_drop_retype_and_add_arguments():
    call = '<tool_call>{"name": "transfer", "arguments": {"amount": 5, "to": "B"}}</tool_call>'
    muts = tool_mutations(call)
    assert '<tool_call>{"name": "transfer", "arguments": {"to": "B"}}</tool_call>' in muts
    assert any('"amount": 60' in m for m in muts) and any('"unexpected": 1' in m for m in muts)
    assert call not in muts


actions = st.one_of(
    st.builds(lambda v, a: "\\boxed{" + v + (" " + a if a else "") + "}", st.sampled_from(["go", "hop", "set"]), st.text(max_size=12)),
    st.text(max_size=30),
)


@given(st.lists(actions, max_size=6), st.lists(st.text(max_size=60), max_size=3))
def test_derived_actions_are_deterministic_distinct_bounded_and_new(known, texts):
    out = derived_actions(known, texts, limit=50)
    assert out == derived_actions(known, texts, limit=50)
    assert len(out) == len(set(out)) <= 50
    assert not set(out) & set(known)


@given(st.binary(max_size=120), st.integers(1, 30), st.sampled_from([0, 1, 2, 9]))
def test_decoding_with_derived_actions_and_plans_is_bounded_and_draws_from_the_program(data, max_steps, seed):
    prog = ActionProgram(
        pool=generic_pool(200), known=("\\boxed{a}",), derived=("\\boxed{b}", "\\boxed{c}"),
        plans=((0, ("\\boxed{p1}", "\\boxed{p2}")), (1, ("\\boxed{q1}",))),
    )
    acts = prog.decode(data, max_steps, seed)
    assert len(acts) <= max_steps and acts == prog.decode(data, max_steps, seed)
    if seed not in (0, 1):
        assert not {"\\boxed{p1}", "\\boxed{p2}", "\\boxed{q1}"} & set(acts)
    if seed == 1:
        assert not {"\\boxed{p1}", "\\boxed{p2}"} & set(acts)  # another seed's plan is never drawn


def test_without_environment_seeding_the_generic_fuzzer_misses_these_bugs(validator):
    """``fuzz_from_environment = false`` is the earlier fuzzer: 2,000 examples of it pass
    all three targets (measured); here the default count shows the switch works."""
    config = ValidationConfig(stages=UP_TO_FEASIBILITY, fuzz_from_environment=False)
    for name in TARGETS:
        assert validator.validate(source(name), config=config).passed, name
