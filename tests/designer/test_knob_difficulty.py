"""Which way a knob is harder (``HARDER``), read without running the code, and the ladder of
settings from easiest to hardest that the adaptive fixed-pool baseline climbs."""

from __future__ import annotations

import pytest
from spade_designer.knobs import KnobDeclarationError, difficulty_ladder, read_knobs

SOURCE = '''
class SonarEnv:
    SIZE = 8
    PINGS = 6
    LOUD = False
    MODE = "b"
    SPEED = 1.5
    KNOBS = {"SIZE": (int, 5, 12), "PINGS": (int, 3, 10), "LOUD": (bool,), "MODE": (str, "a", "b", "c"),
             "SPEED": (float, 1.0, 2.0)}
    HARDER = {"SIZE": "higher", "PINGS": "lower", "LOUD": "higher", "MODE": "lower"}
'''


def test_directions_are_read_per_knob_and_an_undeclared_one_is_zero() -> None:
    knobs = read_knobs(SOURCE)
    assert {k.name: k.harder for k in knobs.knobs} == {"SIZE": 1, "PINGS": -1, "LOUD": 1, "MODE": -1, "SPEED": 0}


def test_the_ladder_runs_every_directed_knob_from_its_easy_end_to_its_hard_end() -> None:
    ladder = difficulty_ladder(read_knobs(SOURCE), 5)
    assert ladder[0] == {"SIZE": 5, "PINGS": 10, "LOUD": False, "MODE": "c", "SPEED": 1.5}
    assert ladder[-1] == {"SIZE": 12, "PINGS": 3, "LOUD": True, "MODE": "a", "SPEED": 1.5}
    assert [v["SIZE"] for v in ladder] == sorted(v["SIZE"] for v in ladder)  # monotone
    assert [v["PINGS"] for v in ladder] == sorted((v["PINGS"] for v in ladder), reverse=True)
    assert len(ladder) == 5 and all(v["SPEED"] == 1.5 for v in ladder)  # no direction: kept


def test_settings_that_come_out_alike_are_kept_once_and_no_direction_means_no_ladder() -> None:
    narrow = "class E:\n    N = 1\n    KNOBS = {'N': (int, 1, 2)}\n    HARDER = {'N': 'higher'}\n"
    assert difficulty_ladder(read_knobs(narrow), 9) == [{"N": 1}, {"N": 2}]
    undirected = "class E:\n    N = 1\n    KNOBS = {'N': (int, 1, 2)}\n"
    assert difficulty_ladder(read_knobs(undirected), 5) == []


@pytest.mark.parametrize(("block", "says"), [
    ("HARDER = {'M': 'higher'}", "'M' is not a declared knob"),
    ("HARDER = {'N': 'up'}", "must be 'higher' or 'lower'"),
    ("HARDER = ['N']", "must be a dict literal"),
    ("HARDER = {'N': WHICH}", "must be a dict literal"),
])
def test_a_bad_harder_block_is_a_declaration_error_naming_it(block: str, says: str) -> None:
    source = f"class E:\n    N = 1\n    KNOBS = {{'N': (int, 1, 2)}}\n    {block}\n"
    with pytest.raises(KnobDeclarationError, match=says):
        read_knobs(source)
