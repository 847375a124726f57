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


def _seeds_with_knobs():
    from spade_core.plugins import get_plugins

    plugins = get_plugins()
    out = []
    for name in ("games", "tooluse"):
        if name not in set(plugins.domains()):
            continue  # a domain that is not installed has no seeds to check
        domain = plugins.domain(name)
        for seed in domain.seed_envs:
            knobs = read_knobs(seed.source(), seed.class_name)
            if knobs:
                out.append((domain, seed, knobs))
    return out


SEEDS = _seeds_with_knobs()


def test_the_games_seed_pool_declares_knobs() -> None:
    games = {s.name for d, s, _ in SEEDS if d.name == "games"}
    # every skill the quickstart designs for first has editable seeds
    assert {"remainder_oracle", "polynomial_probe", "code_breaker", "island_of_liars"} <= games


@pytest.mark.parametrize(("domain", "seed", "knobs"), SEEDS, ids=[s.name for _, s, _ in SEEDS])
def test_every_seed_knob_at_either_end_of_its_range_still_validates(domain, seed, knobs, validator) -> None:
    from spade_core.metadata import EnvMetadata

    ends: list[dict] = []
    for k in knobs.knobs:
        if k.type is bool:
            ends.append({k.name: not k.value})
        elif k.type is str:
            ends.extend({k.name: c} for c in (k.choices[0], k.choices[-1]) if c != k.value)
        else:
            for v in (k.low, k.high):
                v = int(v) if k.type is int else v
                if v != k.value:
                    ends.append({k.name: v})
    lows = {k.name: (int(k.low) if k.type is int else k.low) for k in knobs.knobs if k.low is not None}
    highs = {k.name: (int(k.high) if k.type is int else k.high) for k in knobs.knobs if k.high is not None}
    ends += [v for v in (lows, highs) if v]
    meta = EnvMetadata(name=seed.name, domain=domain.name, skill=seed.skill, max_turns=seed.max_turns,
                       class_name=seed.class_name)
    for values in ends:
        child = apply_values(seed.source(), knobs, values)
        report = validator.validate(child, metadata=meta, domain=domain)
        assert report.passed, (values, report.failed_stage, report.reasons)
