"""Extracting environment code from model replies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_designer.errors import ExtractionError
from spade_designer.extract import code_blocks, extract_env

ENV = '''class CountEnv:
    """Count to three.

    Second paragraph is not the description."""

    def __init__(self):
        self.max_turns = 7

    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "ok", 1.0, True, False, {}
'''


def test_fenced_block_with_prose_around_it():
    ext = extract_env(f"Sure! Here it is:\n```python\n{ENV}```\nHope this helps.")
    assert ext.source == ENV
    assert ext.class_name == "CountEnv"
    assert ext.description == "Count to three."
    assert ext.max_turns == 7


def test_last_qualifying_block_wins_over_sketches_and_other_code():
    sketch = "class SketchEnv:\n    pass\n"
    reply = f"```python\n{sketch}```\nUsage:\n```\nenv = CountEnv()\n```\nFinal:\n```python\n{ENV}```\n```bash\npip install x\n```"
    assert extract_env(reply).class_name == "CountEnv"


def test_unclosed_fence_from_a_truncated_generation_is_used():
    assert extract_env("```python\n" + ENV).class_name == "CountEnv"


def test_bare_code_without_fences():
    assert extract_env(ENV).source == ENV


@pytest.mark.parametrize(
    "reply, match",
    [
        ("I cannot write that.", "no usable environment class"),
        ("", "no code"),
        ("```python\nclass Foo:\n    pass\n```", "ends in 'Env'"),
        ("```python\nclass BrokenEnv:\n    def reset(self:\n```", "syntax error at line 2"),
    ],
)
def test_replies_without_an_environment_say_why(reply, match):
    with pytest.raises(ExtractionError, match=match):
        extract_env(reply)


@given(st.text(alphabet=st.characters(blacklist_characters="`"), max_size=200),
       st.text(alphabet=st.characters(blacklist_characters="`"), max_size=200))
def test_a_valid_env_block_is_found_whatever_prose_surrounds_it(before, after):
    ext = extract_env(f"{before}\n```python\n{ENV}```\n{after}")
    assert ext.source == ENV


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="`"), max_size=40), min_size=1, max_size=5))
def test_code_blocks_returns_each_fenced_body(bodies):
    text = "".join(f"prose\n```python\n{b}\n```\n" for b in bodies)
    assert code_blocks(text) == [b + "\n" for b in bodies]


def test_max_turns_from_an_init_default():
    src = "class AEnv:\n    def __init__(self, size=3, max_turns=9):\n        self.max_turns = max_turns\n"
    assert extract_env(src).max_turns == 9
