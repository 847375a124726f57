"""One knob value cannot break every reader of the declarations: a bound of a 401-digit
integer (or any value a float cannot hold) is refused where the block is read, as a
``KnobDeclarationError`` naming the knob, never an ``OverflowError`` in whoever reads it
next. Before, it raised ``OverflowError`` in ``read_knobs``: the designer's frontier for
the whole skill failed and the Task API answered 500 for the environment. Now the frontier
keeps the skill's other environments, and the Task API serves the environment as written
(``tests/serve/test_attacks_knob_bounds.py``)."""

from __future__ import annotations

import pytest
from spade_core.knobs import KnobDeclarationError, KnobValueError, check_values, difficulty_ladder, read_knobs
from spade_core.metadata import EnvMetadata, EnvStatus

from ..cli_support import open_store

HUGE = "9" * 401


def knobbed(name: str, declaration: str, value: str = "8") -> str:
    return f'''
import random


class {name}Env:
    SIZE = {value}
    KNOBS = {{"SIZE": {declaration}}}
    HARDER = {{"SIZE": "higher"}}

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, self.SIZE)
        return f"guess 1..{{self.SIZE}}", {{}}

    def step(self, action):
        right = action.strip() == str(self.secret)
        return ("right" if right else "wrong"), float(right), True, False, {{}}

    def solution(self):
        return [str(self.secret)]
'''


UNREADABLE = {
    "huge int high": ("(int, 1, " + HUGE + ")", "8"),
    "huge int low": ("(int, -" + HUGE + ", 10)", "8"),
    "huge float knob bound": ("(float, 0.0, " + HUGE + ")", "8.0"),
    "infinite float bound": ("(float, 0.0, 1e999)", "8.0"),
    "range past a float": ("(float, -1.7e308, 1.7e308)", "8.0"),
    "huge current value": ("(float, 0.0, 10.0)", HUGE),
    "unhashable literal": ("(int, 1, {[1]: 2})", "8"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_declaration_no_float_holds_is_refused_naming_its_knob(case: str) -> None:
    declaration, value = UNREADABLE[case]
    with pytest.raises(KnobDeclarationError, match="SIZE"):
        read_knobs(knobbed("Huge", declaration, value))


def test_a_value_no_float_holds_is_a_knob_value_error() -> None:
    knobs = read_knobs(knobbed("Fine", "(float, 0.0, 10.0)", "8.0"))
    with pytest.raises(KnobValueError, match="SIZE .*beyond a float's range"):
        check_values(knobs, {"SIZE": int(HUGE)})
    ints = read_knobs(knobbed("Fine", "(int, -9007199254740992, 9007199254740992)"))
    assert [step["SIZE"] for step in difficulty_ladder(ints, 3)] == [-(2**53), 0, 2**53]


def _add(store, name: str, source: str, skill: str = "guessing") -> str:
    meta = EnvMetadata(name=name, domain="games", skill=skill, description="guess", class_name=f"{name.title()}Env",
                       status=EnvStatus.admitted)
    return store.add(source, meta).id


def test_the_frontier_of_a_skill_keeps_its_other_environments(spade_home) -> None:
    from spade_designer.editing import frontier

    with open_store() as store:
        _add(store, "huge", knobbed("Huge", "(int, 1, " + HUGE + ")"))
        _add(store, "fine", knobbed("Fine", "(int, 2, 20)"))
        parents = frontier(store, "games", "guessing", band=(0.2, 0.6), size=5)
        assert sorted(p.metadata.name for p in parents) == ["fine", "huge"]
        with_knobs = frontier(store, "games", "guessing", band=(0.2, 0.6), size=5, need_knobs=True)
        assert [p.metadata.name for p in with_knobs] == ["fine"]
