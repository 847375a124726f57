"""What ``spade list`` / ``spade show`` print from a pool is shown, never obeyed: a pool's
texts (written by an LLM, imported from elsewhere) may hold terminal control sequences
(``ESC ] 52`` writes the clipboard, ``ESC ] 0`` retitles the window, ``ESC [ 2K`` and ``\\r``
erase what was printed, ``BEL`` rings, 8-bit ``CSI``), and a terminal obeys them."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text
from spade_core.metadata import EnvMetadata, StatsSnapshot, ValidationReport
from spade_core.terminal import escape, printable, terminal_json

from .cli_support import open_store, spade
from .conftest import REFERENCE_ENVS

#: Clipboard write, window title, erased line, bell, 8-bit CSI, carriage return, a
#: right-to-left override: each a way for data to act on the terminal that shows it.
HOSTILE = "ok\x1b]52;c;cm0gLXJmIH4=\x07 \x1b]0;pwned\x07\x1b[2K\x9b2J\rfake\u202eedoc"
#: Characters that must never reach the terminal from data.
OBEYED = ("\x1b", "\x9b", "\x07", "\r", "\u202e")


def _hostile_env() -> str:
    source = (REFERENCE_ENVS / "tower_of_hanoi.py").read_text(encoding="utf-8")
    source += f"\n# {HOSTILE}\nBANNER = {HOSTILE!r}\nRAW = '''{HOSTILE}'''\n"
    meta = EnvMetadata(
        name="hostile", domain="games", skill=f"planning {HOSTILE}", description=f"A puzzle. {HOSTILE}",
        hint=f"Think. {HOSTILE}", tags=[HOSTILE], designer_model=HOSTILE, class_name="TowerOfHanoi",
        validation=ValidationReport(passed=False, failed_stage="contract", reasons=[HOSTILE]),
        stats=[StatsSnapshot(policy_snapshot=HOSTILE, samples=4, win_rate=0.5, regret=0.1)],
    )
    with open_store() as store:
        return store.add(source, meta).id


def test_list_and_show_print_control_characters_as_visible_escapes(spade_home: Path) -> None:
    env_id = _hostile_env()
    for args in (["list"], ["list", "--json"], ["show", env_id], ["show", env_id, "--code"],
                 ["show", env_id, "--json", "--code"]):
        run = spade(*args)
        assert run.exit_code == 0, run.output
        reached = [c for c in OBEYED if c in run.stdout]
        assert not reached, (args, reached)
    shown = spade("show", env_id, "--code").stdout
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in shown and "\\x9b2J\\rfake\\u202eedoc" in shown
    data = json.loads(spade("show", env_id, "--json", "--code").stdout)
    assert data["metadata"]["description"] == f"A puzzle. {HOSTILE}"  # the JSON value is unchanged
    assert "\x1b]52;c;cm0gLXJmIH4=\x07" in data["source"]  # and so is the code's


_TEXT = st.text(st.characters(codec="utf-8"), max_size=60)


@given(_TEXT)
def test_printable_leaves_nothing_a_terminal_obeys(text: str) -> None:
    out = printable(text)
    assert not any(ord(c) < 0x20 and c not in "\t\n" or 0x7F <= ord(c) <= 0x9F for c in out)
    assert not any(c in "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069" for c in out)
    # rich shows exactly the printable text (rich's escape doubles a final backslash, so
    # that a tag after it stays a tag: with none after it, both show)
    assert Text.from_markup(escape(text)).plain == (out + "\\" if out.endswith("\\") else out)


@given(st.recursive(st.none() | st.booleans() | st.integers() | _TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4)))
def test_terminal_json_is_the_same_json_value(value: object) -> None:
    text = terminal_json(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(text) == value
    assert not any(ord(c) < 0x20 and c not in "\n" or 0x7F <= ord(c) <= 0x9F for c in text)
