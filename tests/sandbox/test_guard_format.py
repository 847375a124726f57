"""The runtime guard's str.format: format strings built at run time may not walk to
dunder or frame attributes; every other use of str.format / format_map behaves as usual."""

from __future__ import annotations

import string

import pytest
from envsrc import step_body
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_sandbox.allowlist import FRAME_ATTRIBUTES, SAFE_DUNDER_ATTRIBUTES
from spade_sandbox.errors import EnvCodeError
from spade_sandbox.guard_format import check_format_string, checked_attribute, checked_format, checked_format_map

from spade_sandbox import SandboxPool

identifier = st.text(string.ascii_lowercase + "_", min_size=1, max_size=8).filter(
    lambda n: not n.startswith("__") and n not in FRAME_ATTRIBUTES
)
forbidden = st.sampled_from(sorted(FRAME_ATTRIBUTES)) | identifier.map(lambda n: f"__{n.strip('_') or 'x'}__").filter(
    lambda n: n not in SAFE_DUNDER_ATTRIBUTES
)


class Box:
    def __init__(self) -> None:
        self.value = 7
        self.name = "box"


@settings(max_examples=200, deadline=None)
@given(literal=st.text(max_size=20).map(lambda t: t.replace("{", "{{").replace("}", "}}")),
       attrs=st.lists(st.sampled_from(["value", "name"]), min_size=1, max_size=1),
       spec=st.sampled_from(["", ":>6", "!r", ":^{1}"]))
def test_allowed_fields_format_exactly_like_str_format(literal: str, attrs: list[str], spec: str):
    field = "0" + "".join("." + a for a in attrs)
    fmt = literal + "{" + field + spec + "}" + literal
    args = (Box(), 9)
    assert checked_format(fmt, *args) == fmt.format(*args)
    assert checked_attribute(fmt.format)(*args) == fmt.format(*args)
    assert checked_attribute(str.format)(fmt, *args) == fmt.format(*args)


@settings(max_examples=200, deadline=None)
@given(prefix=st.sampled_from(["0.", "0.value.", "x.", "0[1].", "0:{1.", "0:>{x."]), bad=forbidden)
def test_a_field_reaching_a_forbidden_attribute_is_refused(prefix: str, bad: str):
    fmt = "{" + prefix + bad + ("}}" if ":" in prefix else "}")
    with pytest.raises(AttributeError, match="not accessible in the sandbox"):
        check_format_string(fmt)
    with pytest.raises(AttributeError):
        checked_format(fmt, Box(), x=Box())
    with pytest.raises(AttributeError):
        checked_format_map(fmt, {"x": Box()})


def test_index_fields_and_malformed_strings_are_left_to_str_format():
    assert checked_format("{0[__class__]}", {"__class__": "a key, not an attribute"}) == "a key, not an attribute"
    with pytest.raises(ValueError):
        checked_format("{0", 1)


def test_other_objects_pass_through_unchanged():
    def own_format() -> str:
        return "mine"

    assert checked_attribute(own_format) is own_format
    assert checked_attribute(len) is len


RUNTIME_FORMATS = step_body(
    "import random\n"
    "u = '_' * 2\n"
    "ok = '{0.value:>4}|{name}|{1:{2}}'.format(self, 3.5, '.2f', name='n')\n"
    "ok += '|' + 'x={x}'.format_map({'x': 1}) + '|' + str.format('{}', 2)\n"
    "if action == 'walk':\n"
    "    return ('{0.seed.' + u + 'globals' + u + '}').format(random.Random), 0.0, False, False, {}\n"
    "return ok, 0.0, False, False, {}",
    name="FormatEnv",
).replace("def reset(self, seed=None):", "def reset(self, seed=None):\n        self.value = 5")


def test_in_the_sandbox_plain_formatting_works_and_a_runtime_walk_is_refused(pool: SandboxPool):
    h = pool.spawn(RUNTIME_FORMATS)
    pool.reset(h)
    assert pool.step(h, "plain")[0] == "   5|n|3.50|x=1|2"
    with pytest.raises(EnvCodeError, match="format field .* not accessible"):
        pool.step(h, "walk")
    assert pool.step(h, "plain")[0] == "   5|n|3.50|x=1|2"
