"""Knob declarations (``KNOBS``): read statically, checked strictly, written literal by
literal; and the seed pool's declarations hold: every declared knob at either end of its
range still passes the whole validation pipeline in the sandbox."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_designer.knobs import (
    KnobDeclarationError,
    KnobValueError,
    apply_values,
    check_values,
    format_values,
    parse_values,
    read_knobs,
)

GAME = '''
class DiceEnv:
    """Roll dice."""

    SIDES = 6
    NOISE = 0.25
    MODE = "sum"
    STRICT = False
    KNOBS = {"SIDES": (int, 4, 20), "NOISE": (float, 0.0, 0.5), "MODE": (str, "sum", "max"), "STRICT": (bool,)}

    def reset(self, seed=None):
        return "roll %d" % self.SIDES, {}
'''


def test_knobs_are_read_with_their_types_ranges_and_current_values() -> None:
    knobs = read_knobs(GAME)
    assert knobs.class_name == "DiceEnv" and knobs.names == ("SIDES", "NOISE", "MODE", "STRICT")
    assert knobs.values() == {"SIDES": 6, "NOISE": 0.25, "MODE": "sum", "STRICT": False}
    assert knobs.get("SIDES").describe() == "int from 4 to 20"
    assert knobs.get("MODE").describe() == "one of 'sum', 'max'"


def test_an_inherited_constant_is_a_knob_only_where_the_subclass_assigns_it_again() -> None:
    base = "class ToolEnv:\n    max_steps = 20\n\n"
    inherited = base + 'class LedgerEnv(ToolEnv):\n    KNOBS = {"max_steps": (int, 5, 30)}\n'
    with pytest.raises(KnobDeclarationError, match="in its own body .* must be assigned again there"):
        read_knobs(inherited, "LedgerEnv")
    assigned = base + 'class LedgerEnv(ToolEnv):\n    max_steps = 12\n    KNOBS = {"max_steps": (int, 5, 30)}\n'
    assert read_knobs(assigned, "LedgerEnv").values() == {"max_steps": 12}


def test_a_class_without_knobs_has_an_empty_set() -> None:
    assert not read_knobs("class PlainEnv:\n    SIZE = 3\n")


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ('KNOBS = {"SIDES": (int, 20, 4)}', "must be below"),
        ('KNOBS = {"SIDES": (list, 1, 2)}', "is not int, float, bool or str"),
        ('KNOBS = {"SIDES": (int, 1.5, 9)}', "int bounds"),
        ('KNOBS = {"MISSING": (int, 1, 9)}', "has no class constant MISSING"),
        ('KNOBS = {"SIDES": (int, 7, 9)}', "does not fit its own declaration"),
        ("KNOBS = dict(SIDES=(int, 1, 9))", "must be a dict literal"),
        ('KNOBS = {"SIDES": (int, LOW, 9)}', "must be literals"),
    ],
)
def test_a_bad_declaration_is_a_clear_error(block: str, message: str) -> None:
    source = f"class DiceEnv:\n    SIDES = 6\n    {block}\n"
    with pytest.raises(KnobDeclarationError, match=message):
        read_knobs(source)


@given(st.integers(min_value=4, max_value=20), st.floats(min_value=0.0, max_value=0.5),
       st.sampled_from(["sum", "max"]), st.booleans())
def test_every_value_inside_the_declarations_is_written_and_read_back(sides, noise, mode, strict) -> None:
    knobs = read_knobs(GAME)
    child = apply_values(GAME, knobs, {"SIDES": sides, "NOISE": noise, "MODE": mode, "STRICT": strict})
    assert read_knobs(child).values() == {"SIDES": sides, "NOISE": noise, "MODE": mode, "STRICT": strict}
    # nothing else of the parent changed
    assert child.splitlines()[-2:] == GAME.splitlines()[-2:]
    assert child.count("\n") == GAME.count("\n")


@given(st.one_of(st.integers(max_value=3), st.integers(min_value=21)))
def test_every_int_outside_the_range_is_rejected_naming_knob_value_and_range(sides: int) -> None:
    with pytest.raises(KnobValueError) as info:
        check_values(read_knobs(GAME), {"SIDES": sides})
    assert f"knob SIDES (int from 4 to 20): {sides!r} is outside the declared range [4, 20]" in str(info.value)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"NOISE": 0.9}, "outside the declared range [0, 0.5]"),
        ({"NOISE": float("nan")}, "is not finite"),
        ({"SIDES": 6.5}, "not a whole number"),
        ({"SIDES": "six"}, "is not a number"),
        ({"MODE": "min"}, "is not one of the declared choices"),
        ({"STRICT": "maybe"}, "is not True or False"),
        ({"COLOR": 3}, "'COLOR' is not a knob of DiceEnv"),
        ({}, "sets no knob"),
    ],
)
def test_values_the_declarations_do_not_allow_are_rejected(values: dict, message: str) -> None:
    with pytest.raises(KnobValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_values(read_knobs(GAME), values)


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(KnobValueError) as info:
        check_values(read_knobs(GAME), {"SIDES": 99, "MODE": "min"})
    assert "SIDES" in str(info.value) and "MODE" in str(info.value)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("SIDES=8, NOISE=0.1", {"SIDES": 8, "NOISE": 0.1}),
        ("sides = 8; mode: 'max' strict=yes", {"SIDES": 8, "MODE": "max", "STRICT": True}),
        ("Sure! SIDES=12.\nnote: keep it fair", {"SIDES": 12}),
        ('MODE="max", SIDES=3, SIDES=9', {"MODE": "max", "SIDES": 3}),
        ("I would make it harder", {}),
    ],
)
def test_replies_are_read_leniently(reply: str, expected: dict) -> None:
    assert parse_values(reply, read_knobs(GAME)) == expected


# --- the seed pools' declarations ------------------------------------------------------

#: Seeds that declare no knobs, each with the reason (none at present). A new seed without
#: ``KNOBS`` fails ``test_every_seed_declares_knobs_or_says_why_not`` until it is listed here.
WITHOUT_KNOBS: dict[str, str] = {}

#: Seeds replayed at every value of every knob in the in-process check.
REPLAY_SEEDS = range(6)


def _seed_pool():
    from spade_core.plugins import get_plugins

    plugins = get_plugins()
    out = []
    for name in ("games", "tooluse"):
        if name not in set(plugins.domains()):
            continue  # a domain that is not installed has no seeds to check
        domain = plugins.domain(name)
        out.extend((domain, seed, read_knobs(seed.source(), seed.class_name)) for seed in domain.seed_envs)
    return out


POOL = _seed_pool()
SEEDS = [(d, s, k) for d, s, k in POOL if k]


def _value(knob, bound):
    return int(bound) if knob.type is int else bound


def _every_value(knob) -> list:
    """Every value a knob allows (ints up to 40 apart; wider ranges: both ends, their
    neighbours and the middle; floats: ends and middle)."""
    if knob.type is bool:
        return [False, True]
    if knob.type is str:
        return list(knob.choices)
    low, high = knob.low, knob.high
    if knob.type is int:
        low, high = int(low), int(high)
        if high - low <= 40:
            return list(range(low, high + 1))
        return sorted({low, low + 1, (low + high) // 2, high - 1, high})
    return [low, (low + high) / 2, high]


def _ends(knobs) -> list[dict]:
    """Each knob alone at either end of its range (choices: the first and the last; bools:
    flipped), then every knob at its low end and every knob at its high end at once."""
    ends: list[dict] = []
    for k in knobs.knobs:
        if k.type is bool:
            ends.append({k.name: not k.value})
        elif k.type is str:
            ends.extend({k.name: c} for c in (k.choices[0], k.choices[-1]) if c != k.value)
        else:
            ends.extend({k.name: v} for v in (_value(k, k.low), _value(k, k.high)) if v != k.value)
    numeric = [k for k in knobs.knobs if k.low is not None]
    if len(numeric) > 1:
        ends.append({k.name: _value(k, k.low) for k in numeric})
        ends.append({k.name: _value(k, k.high) for k in numeric})
    return ends


def test_the_games_seed_pool_declares_knobs() -> None:
    games = {s.name for d, s, _ in SEEDS if d.name == "games"}
    # every skill the quickstart designs for first has editable seeds
    assert {"remainder_oracle", "polynomial_probe", "code_breaker", "island_of_liars"} <= games


def test_every_seed_declares_knobs_or_says_why_not() -> None:
    names = {s.name for _, s, _ in POOL}
    without = {s.name for _, s, k in POOL if not k}
    assert without == set(WITHOUT_KNOBS), (
        f"seeds without KNOBS: {sorted(without - set(WITHOUT_KNOBS))} are not listed in WITHOUT_KNOBS with a reason; "
        f"listed seeds that declare knobs now: {sorted(set(WITHOUT_KNOBS) - without)}")
    assert set(WITHOUT_KNOBS) <= names
    assert all(reason.strip() for reason in WITHOUT_KNOBS.values())


@pytest.mark.parametrize(("domain", "seed", "knobs"), SEEDS, ids=[s.name for _, s, _ in SEEDS])
def test_a_seed_knob_read_statically_is_the_constant_its_class_uses(domain, seed, knobs) -> None:
    from spade_core.source import load_trusted_class

    assert knobs.class_name == seed.class_name
    cls = load_trusted_class(seed.source(), seed.class_name, source_name=seed.name)
    assert {name: getattr(cls, name) for name in knobs.names} == knobs.values()
    # a child at the other end of each range really runs with the new value
    for values in _ends(knobs):
        child = load_trusted_class(apply_values(seed.source(), knobs, values), seed.class_name, source_name=seed.name)
        assert {name: getattr(child, name) for name in values} == values


@pytest.mark.parametrize(("domain", "seed", "knobs"), SEEDS, ids=[s.name for _, s, _ in SEEDS])
def test_every_value_of_every_seed_knob_keeps_the_solution_winning(domain, seed, knobs) -> None:
    """In process (trusted seed code): each knob alone at every value it allows, then all
    at their lows and all at their highs; ``solution()`` replayed from ``reset(seed)``
    terminates with full reward on every replayed seed, and (tool use) none of its
    reference calls fails: the base class would take the unchanged state as the target,
    so a request the knob made impossible would still "win"."""
    from spade_core.env import ReferenceEnvAdapter
    from spade_core.source import load_trusted_class

    combos = [{k.name: v} for k in knobs.knobs for v in _every_value(k)]
    combos += _ends(knobs)[-2:] if len(knobs) > 1 else []
    for values in combos:
        cls = load_trusted_class(apply_values(seed.source(), knobs, values), seed.class_name, source_name=seed.name)
        for s in REPLAY_SEEDS:
            env = ReferenceEnvAdapter(cls(), max_turns=seed.max_turns)
            env.reset(seed=s)
            actions = env.inner.solution()
            env.reset(seed=s)
            failed_calls = 0
            for action in actions:
                _, reward, terminated, truncated, info = env.step(action)
                failed_calls += info.get("tool_errors", 0)
                if terminated or truncated:
                    break
            assert terminated and reward == 1.0, (values, s, reward, truncated)
            assert failed_calls == 0, (values, s, "a reference call failed")


@pytest.fixture(scope="module")
def edit_reports():
    """Every child of ``_ends`` of every seed, validated in one batch the way the designer
    validates edits: every configured stage but code novelty (a child is meant to be close
    to its parent; ``Designer._validate_edits``), in the validator's process pool."""
    from spade_core.metadata import EnvMetadata
    from spade_designer.validation import ValidationConfig, ValidationRequest, Validator

    config = ValidationConfig(fuzz_examples=4, call_time_bound_s=5.0, sandbox_call_timeout_s=20.0)
    config = config.model_copy(update={"stages": tuple(st for st in config.stages if st.value != "novelty")})
    keys, requests = [], []
    for domain, seed, knobs in SEEDS:
        meta = EnvMetadata(name=seed.name, domain=domain.name, skill=seed.skill, max_turns=seed.max_turns,
                           class_name=seed.class_name)
        for values in _ends(knobs):
            keys.append((seed.name, format_values(values)))
            requests.append(ValidationRequest(apply_values(seed.source(), knobs, values), metadata=meta, domain=domain))
    with Validator(config=config) as validator:
        reports = validator.validate_many(requests)
    return dict(zip(keys, reports, strict=True))


@pytest.mark.parametrize(("domain", "seed", "knobs"), SEEDS, ids=[s.name for _, s, _ in SEEDS])
def test_every_seed_knob_at_either_end_of_its_range_still_validates(domain, seed, knobs, edit_reports) -> None:
    for values in _ends(knobs):
        report = edit_reports[(seed.name, format_values(values))]
        assert report.passed, (values, report.failed_stage, report.reasons)
        # the feasibility stage ran and found the solution winning
        assert any(f.stage == "feasibility" and f.ok for f in report.findings), values
