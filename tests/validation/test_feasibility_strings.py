r"""Feasibility from the reference format's string solutions: a ``solution()`` string that
spells out actions in the domain's format is replayed from ``reset(seed)`` on every seed."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from spade_designer.validation import Stage, ValidationConfig, Validator
from spade_designer.validation.solutions import solution_plans

STAGES = ValidationConfig(stages=(Stage.static, Stage.load, Stage.feasibility))

#: A corridor of cells 0..n; the agent must step right n times. ``SOLUTION`` is filled in
#: per test (an expression over ``moves``, the list of remaining boxed commands).
CORRIDOR = '''
import random


class CorridorEnv:
    def reset(self, seed=None):
        self.n = random.Random(seed).randint(2, 4)
        self.pos = 0
        self.over = False
        return f"Walk right {self.n} times with \\\\boxed{{right}}.", {}

    def step(self, action):
        if self.over:
            return "Over.", 0.0, True, False, {}
        if action.strip().endswith("\\\\boxed{right}"):
            self.pos += 1
        elif action.strip().endswith("\\\\boxed{left}"):
            self.pos = max(0, self.pos - 1)
        done = self.over = self.pos >= self.n
        return f"At {self.pos} of {self.n}.", 1.0 if done else 0.0, done, False, {}

    def solution(self):
        moves = ["\\\\boxed{right}"] * (self.n - self.pos)
        return SOLUTION
'''


def corridor(solution_expr: str) -> str:
    return CORRIDOR.replace("SOLUTION", solution_expr)


def validate(source: str, runner, **kw):
    return Validator(runner, STAGES).validate(source, **kw)


def test_a_string_of_boxed_commands_is_replayed_and_proves_feasibility(inprocess_runner):
    report = validate(corridor('"Go: " + " then ".join(moves) + ". Done."'), inprocess_runner)
    assert report.passed and report.feasibility_proven
    (f,) = [f for f in report.findings if f.stage == "feasibility"]
    assert "read from its string" in f.message


def test_a_string_that_walks_the_wrong_way_is_rejected_with_the_replay(inprocess_runner):
    report = validate(corridor('" ".join(m.replace("right", "left") for m in moves)'), inprocess_runner)
    assert report.failed_stage == "feasibility"
    (f,) = [f for f in report.findings if not f.ok]
    assert f.code == "solution_fails" and "read from the solution() string" in f.message
    assert f.seed == 0 and f.actions and all(a == "\\boxed{left}" for a in f.actions)
    assert f.details["rewards"] == [0.0] * len(f.actions) and f.details["last_observation"].startswith("At 0")


def test_a_prose_string_stays_unproven(inprocess_runner):
    report = validate(corridor('"Keep walking right until the end."'), inprocess_runner)
    assert report.passed and not report.feasibility_proven
    assert any(f.code == "feasibility_unproven" for f in report.findings)


def test_tool_call_strings_are_read_per_block_and_per_tag():
    def call(name: str) -> str:
        return '<tool_call>{"name": "' + name + '", "arguments": {}}</tool_call>'

    text = f"Turn 1:\n{call('a')}\n{call('b')}\n\nTurn 2:\n<answer>42</answer>"
    assert solution_plans(text, "tool_call") == [
        [f"{call('a')}\n{call('b')}", "<answer>42</answer>"],
        [call("a"), call("b"), "<answer>42</answer>"],
    ]
    assert solution_plans("the answer is 42", "tool_call") == []
    assert solution_plans(call("a"), None) == [[call("a")]]  # format read from the text


TOOL_ENV = '''
import json
import re


class LedgerEnv:
    """One message may carry several calls; the reference base would take only the first."""

    def reset(self, seed=None):
        self.balance = 10 + (seed or 0)
        self.seen = set()
        self.over = False
        return "Read the balance with get_balance, then answer it.", {}

    def step(self, action):
        if self.over:
            return "Over.", 0.0, True, False, {}
        calls = [json.loads(c) for c in re.findall(r"<tool_call>(.*?)</tool_call>", action, re.S)]
        answer = re.search(r"<answer>(.*?)</answer>", action, re.S)
        for c in calls:
            self.seen.add(c.get("name"))
        if answer:
            ok = "get_balance" in self.seen and answer.group(1).strip() == str(self.balance)
            self.over = True
            return ("Correct." if ok else "Wrong."), 1.0 if ok else 0.0, True, False, {}
        return f"balance: {self.balance}" if "get_balance" in self.seen else "ok", 0.0, False, False, {}

    def solution(self):
        return (
            '<tool_call>{"name": "get_balance", "arguments": {}}</tool_call>\\n\\n'
            f"<answer>{self.balance}</answer>"
        )
'''


def test_a_tool_use_solution_string_proves_feasibility(inprocess_runner):
    from spade_core.metadata import EnvMetadata

    meta = EnvMetadata(name="ledger", domain="test", skill="test", action_format="tool_call")
    report = validate(TOOL_ENV, inprocess_runner, metadata=meta)
    assert report.passed and report.feasibility_proven, report.reasons


# --- for all: whitespace between boxed commands does not matter -----------------------

payloads = st.text(st.characters(blacklist_characters="{}\\", blacklist_categories=("Cs",)), min_size=1, max_size=10)
spaces = st.text(" \t\n\r\f\v", max_size=6)


@given(st.lists(payloads, min_size=1, max_size=8), st.data())
def test_any_whitespace_between_boxed_commands_reads_as_the_list(commands, data):
    boxed = ["\\boxed{" + c + "}" for c in commands]
    gaps = [data.draw(spaces) for _ in range(len(boxed) + 1)]
    text = gaps[0] + "".join(b + g for b, g in zip(boxed, gaps[1:], strict=True))
    assert solution_plans(text, "boxed") == [boxed]
    assert solution_plans(text, None) == [boxed]


@settings(max_examples=25, deadline=None)
@given(st.lists(spaces, min_size=5, max_size=5), st.booleans())
def test_a_solution_string_with_any_whitespace_replays_the_same_as_the_list(gaps, wrong_way):
    r"""The same corridor with solution() as a list and as a string with arbitrary
    whitespace between the commands: the same verdict, the same replayed actions."""
    from inprocess import InProcessRunner

    moves = "[m.replace('right', 'left') for m in moves]" if wrong_way else "moves"
    as_list = validate(corridor(moves), InProcessRunner())
    gaps_literal = json.dumps(gaps)
    as_string = validate(
        corridor(f"(lambda g: g[0] + ''.join(m + g[1 + i % 4] for i, m in enumerate({moves})))({gaps_literal})"),
        InProcessRunner(),
    )
    assert (as_list.passed, as_list.feasibility_proven) == (as_string.passed, as_string.feasibility_proven)
    assert as_list.passed is not wrong_way
    fail_list = [(f.code, f.seed, f.actions, f.details.get("rewards")) for f in as_list.findings if not f.ok]
    fail_string = [(f.code, f.seed, f.actions, f.details.get("rewards")) for f in as_string.findings if not f.ok]
    assert fail_list == fail_string


# --- tool calls written in Python call syntax ---------------------------------------------

def tag(tool: str, /, **arguments) -> str:
    from spade_core.actions import ToolCall

    return ToolCall(tool, arguments).to_tag()


FS_PARAMS = {"cd": ["path"], "ls": [], "cat": ["name", "lines"]}


def test_python_calls_are_read_in_every_numbering_and_separator_style():
    cd, ls = tag("cd", path="/home/document"), tag("ls")
    for text in (
        "1. cd(path='/home/document')\n2. ls()",
        "1) cd(path='/home/document')\n2) ls()",
        "- cd(path='/home/document')\n- ls()",
        "* `cd(path='/home/document')`\n* `ls()`",
        "Step 1: cd(path='/home/document')\nStep 2: ls()",
        ">>> cd(path='/home/document')\n>>> ls()",
        "First go there, then look:\n```python\ncd(path='/home/document')  # go\nls()\n```\nThat lists it.",
        'cd(path="/home/document")\nls()\n',
    ):
        assert solution_plans(text, "tool_call") == [[cd, ls]], text
    same_line = solution_plans("cd(path='/home/document'); ls()", "tool_call")
    assert same_line == [[f"{cd}\n{ls}"], [cd, ls]]  # one turn for the line, or one per call


def test_positional_arguments_take_the_schemas_order_and_need_it():
    text = "1. cd('/srv')\n2. cat('a.txt', 3)"
    assert solution_plans(text, "tool_call", FS_PARAMS) == [[tag("cd", path="/srv"), tag("cat", name="a.txt", lines=3)]]
    assert solution_plans(text, "tool_call") == []  # no schema: not readable, as before
    assert solution_plans("cat('a', 1, 2)", "tool_call", FS_PARAMS) == []  # more than it takes
    assert solution_plans("cat('a', name='b')", "tool_call", FS_PARAMS) == []  # given twice


def test_answers_and_tags_keep_their_place_among_python_calls():
    cd = tag("cd", path="/x")
    assert solution_plans("1. cd(path='/x')\n2. answer('42')", "tool_call", FS_PARAMS) == [[cd, "<answer>42</answer>"]]
    assert solution_plans("cd(path='/x')\n<answer>7</answer>", "tool_call") == [[cd, "<answer>7</answer>"]]
    # a tool really named answer is a tool call
    assert solution_plans("answer(text='hi')", "tool_call", {"answer": ["text"]}) == [[tag("answer", text="hi")]]


def test_what_is_not_a_readable_call_keeps_todays_reading():
    old = '<tool_call>{"name": "ls", "arguments": {}}</tool_call>'
    assert solution_plans("Keep calling ls until you see it.", "tool_call") == []
    both = f"1. {old}\n2. <answer>3</answer>"
    assert solution_plans(both, "tool_call") == [[f"{old}\n<answer>3</answer>"], [old, "<answer>3</answer>"]]
    # an argument that is not a literal, an unknown tool while the tools are known, a value
    # JSON cannot hold: no Python reading, the tags (here none) decide as before
    for text in ("cd(path=home)", "rm(path='/')", "cd(path={1, 2})", "cd(path=float('nan'))", "cd(**kw)"):
        assert solution_plans(text, "tool_call", FS_PARAMS) == [], text
    assert solution_plans("cd(path='/x')\nsudo_rm(path='/')\n" + old, "tool_call", FS_PARAMS) == [[old]]
    # without a format, Python calls are read only when the environment has tools
    assert solution_plans("1. reset()\n2. look()", None) == []
    assert solution_plans("1. ls()", None, FS_PARAMS) == [[tag("ls")]]
    assert solution_plans("\\boxed{ls()}", None, FS_PARAMS) == [["\\boxed{ls()}"]]  # boxed first, as before


_IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(lambda s: not __import__("keyword").iskeyword(s))
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_LITERAL = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                             max_size=3), max_leaves=8)
_STYLE = st.sampled_from(["{i}. ", "{i}) ", "- ", "* ", "Step {i}: ", "", ">>> "])


@settings(deadline=None)
@given(st.lists(st.tuples(_IDENT.filter(lambda n: n != "answer"), st.dictionaries(_IDENT, _LITERAL, max_size=4)),
                min_size=1, max_size=5),
       _STYLE, st.booleans(), st.booleans())
def test_any_calls_with_literal_arguments_rendered_in_python_read_back_equal(calls, style, fenced, positional):
    lines = []
    for i, (name, args) in enumerate(calls, 1):
        rendered = [repr(v) for v in args.values()] if positional else [f"{k}={v!r}" for k, v in args.items()]
        lines.append(style.format(i=i) + f"{name}({', '.join(rendered)})")
    text = "\n".join(lines)
    if fenced:
        text = f"Do this:\n```python\n{text}\n```\n"
    expected = [tag(name, **args) for name, args in calls]
    known = {name: list(args) for name, args in calls}
    if positional and any(known[n] != list(a) for n, a in calls):
        return  # one name called with two argument lists: positions are ambiguous
    assert solution_plans(text, "tool_call", known) == [expected]
    if not positional or all(not a for _, a in calls):
        assert solution_plans(text, "tool_call") == [expected]  # keywords need no schema


def test_a_tool_environment_with_a_python_call_solution_is_proven_end_to_end(inprocess_runner):
    from spade_core.metadata import EnvMetadata

    head = TOOL_ENV[: TOOL_ENV.index("    def solution(self):")]
    source = head + '    def solution(self):\n        return f"1. get_balance()\\n2. answer({self.balance})"\n'
    meta = EnvMetadata(name="ledger", domain="test", skill="test", action_format="tool_call")
    report = validate(source, inprocess_runner, metadata=meta)
    assert report.passed and report.feasibility_proven, report.reasons
