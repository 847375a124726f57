"""Single steps travel as binary step frames; they answer exactly what msgpack did.

``SandboxPool.step`` sends a binary request (``protocol.STEP_MARK``, instance id, UTF-8
action) and a worker answers a result that needs no conversion with a binary reply
(mark, flags, float64 reward, UTF-8 observation). Everything else (errors, results the
worker converts) still comes back as msgpack. These tests pin down that the encoding
loses nothing, that every unusual result still reaches its specific error, and that a
worker forging a binary reply gets the same treatment as one forging msgpack.
"""

from __future__ import annotations

import json
import math

import pytest
from envsrc import COUNTER, step_body
from hypothesis import example, given, settings
from hypothesis import strategies as st
from spade_sandbox.errors import EnvContractViolation, SandboxCrash

from spade_sandbox import SandboxPool, protocol

# Text the UTF-8 codec can carry (msgpack refuses lone surrogates the same way).
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)

# --- the encoding ---------------------------------------------------------------------------


@given(iid=st.integers(-(2**63), 2**63 - 1), action=_text)
def test_a_step_request_decodes_to_the_instance_and_action_it_encodes(iid: int, action: str):
    frame = protocol.encode_step_request(iid, action)
    (size,) = protocol.HEADER.unpack_from(frame)
    assert size == len(frame) - protocol.HEADER.size
    assert frame[protocol.HEADER.size] == protocol.STEP_MARK
    assert protocol.decode_step_request(memoryview(frame)[protocol.HEADER.size :]) == (iid, action)


@given(obs=_text, reward=st.floats(allow_nan=False, allow_infinity=False), terminated=st.booleans(),
       truncated=st.booleans())
def test_a_step_reply_carries_its_fields_bit_for_bit(obs: str, reward: float, terminated: bool, truncated: bool):
    frame = protocol.encode_step_reply(obs, reward, terminated, truncated)
    (size,) = protocol.HEADER.unpack_from(frame)
    assert size == len(frame) - protocol.HEADER.size
    mark, flags, decoded = protocol.STEP_REPLY.unpack_from(frame, protocol.HEADER.size)
    assert mark == protocol.STEP_MARK
    assert (flags & 1 == 1, flags & 2 == 2) == (terminated, truncated)
    assert math.copysign(1.0, decoded) == math.copysign(1.0, reward) and decoded == reward
    assert frame[protocol.HEADER.size + protocol.STEP_REPLY.size :].decode("utf-8") == obs


def test_no_msgpack_value_starts_with_the_step_mark():
    # The mark is how both sides tell the two kinds of frame apart.
    with pytest.raises(Exception):  # noqa: B017 (msgpack raises its own error types)
        protocol.decode_trusted(bytes([protocol.STEP_MARK]))


# --- a real worker, end to end ----------------------------------------------------------------

SCRIPTED = '''
import json


class ScriptedEnv:
    """Returns the step result the action spells out in JSON."""

    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        obs, reward, terminated, truncated = json.loads(action)
        return obs, reward, terminated, truncated, {}
'''


@pytest.fixture(scope="module")
def scripted(pool: SandboxPool):
    handle = pool.spawn(SCRIPTED)
    pool.reset(handle)
    return handle


@settings(max_examples=60, deadline=None)
@given(obs=st.one_of(_text, st.text(st.characters(blacklist_categories=("Cs",)), min_size=2000, max_size=6000)),
       reward=st.floats(allow_nan=False, allow_infinity=False), terminated=st.booleans(), truncated=st.booleans())
@example(obs="é" * 40_000, reward=-0.0, terminated=True, truncated=True)  # a reply longer than the read buffer
@example(obs="", reward=1e308, terminated=False, truncated=True)
def test_a_single_step_returns_exactly_what_the_environment_returned(
    pool: SandboxPool, scripted, obs: str, reward: float, terminated: bool, truncated: bool
):
    result = pool.step(scripted, json.dumps([obs, reward, terminated, truncated], ensure_ascii=False))
    assert result == (obs, reward, terminated, truncated, {})
    assert math.copysign(1.0, result[1]) == math.copysign(1.0, reward)
    assert [type(v) for v in result] == [str, float, bool, bool, dict]


def test_each_step_gets_a_new_info_dict(pool: SandboxPool, scripted):
    first = pool.step(scripted, json.dumps(["a", 0.0, False, False]))
    first[4]["mine"] = 1
    assert pool.step(scripted, json.dumps(["a", 0.0, False, False]))[4] == {}


LENGTH = '''
class LengthEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return f"{len(action)} {action[:1]}{action[-1:]}", 0.0, False, False, {}
'''


def test_a_long_action_crosses_in_several_writes(pool: SandboxPool):
    # Over 4 KiB the request no longer fits one atomic pipe write: the worker reads the rest.
    h = pool.spawn(LENGTH)
    assert pool.step(h, "a" + "ü" * 30_000 + "z")[0] == "30002 az"
    assert pool.step(h, "short")[0] == "5 st"


UNUSUAL = '''
class UnusualEnv:
    """Returns, for each action, a result the binary reply cannot carry as it is."""

    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return {
            "nan": ("o", float("nan"), False, False, {}),
            "inf": ("o", float("inf"), False, False, {}),
            "huge": ("x" * 70_000, 0.0, False, False, {}),
            "bytes-obs": (b"o", 0.0, False, False, {}),
            "list-info": ("o", 0.0, False, False, [1]),
            "str-reward": ("o", "1.0", False, False, {}),
            "int-flag": ("o", 0.0, 2.5, False, {}),
            "int-reward": ("o", 3, False, False, {}),
            "four": ("o", 0.5, True, {}),
            "info": ("o", 0.0, False, False, {"k": [1, 2]}),
            "int-flags": ("o", 0.0, 1, 0, {}),
        }[action]
'''


@pytest.fixture(scope="module")
def unusual(pool: SandboxPool):
    return pool.spawn(UNUSUAL)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("nan", "non-finite reward"),
        ("inf", "non-finite reward"),
        ("huge", "70000 characters"),
        ("bytes-obs", "observation of type bytes"),
        ("list-info", "info of type list"),
        ("str-reward", "reward of type str"),
        ("int-flag", "terminated=2.5 of type float"),
        ("int-flags", "terminated=1 of type int"),  # the contract's rule, as in-process (spade_core.contract)
        ("four", r"4-tuple .*the old Gym API"),  # reported, not converted: done mixes the two flags
    ],
)
def test_a_result_the_binary_reply_cannot_carry_still_gets_its_specific_error(
    pool: SandboxPool, unusual, action: str, message: str
):
    with pytest.raises(EnvContractViolation, match=message):
        pool.step(unusual, action)
    assert pool.step(unusual, "int-reward")[1] == 3.0  # the worker carries on


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("int-reward", ("o", 3.0, False, False, {})),
        ("info", ("o", 0.0, False, False, {"k": [1, 2]})),
    ],
)
def test_a_result_that_needs_conversion_comes_back_converted(pool: SandboxPool, unusual, action: str, expected):
    result = pool.step(unusual, action)
    assert result == expected
    assert [type(v) for v in result] == [str, float, bool, bool, dict]


def test_an_action_that_is_not_valid_unicode_is_refused_as_before(pool: SandboxPool, scripted):
    with pytest.raises(UnicodeEncodeError):
        pool.step(scripted, "\ud800")
    assert pool.step(scripted, json.dumps(["fine", 0.0, False, False]))[0] == "fine"


# --- a worker forging binary replies (static layer off: env code writes to its reply pipe) ---

FORGE = '''
import os, stat, struct

def _reply_pipe():
    # The worker answers on the write end of a pipe (an empty write succeeds only there).
    for f in range(64):
        try:
            if stat.S_ISFIFO(os.fstat(f).st_mode) and os.write(f, b"") == 0:
                return f
        except OSError:
            pass

def _forge(flags, reward, body):
    frame = struct.pack(">BBd", 0xC1, flags, reward) + body
    os.write(_reply_pipe(), struct.pack(">I", len(frame)) + frame)
    os._exit(0)
'''


@pytest.mark.parametrize(
    ("forged", "error", "message"),
    [
        ("_forge(0, float('nan'), b'o')", EnvContractViolation, "invalid reward nan"),
        ("_forge(0, float('-inf'), b'o')", EnvContractViolation, "invalid reward -inf"),
        ("_forge(0, 0.0, b'x' * 70_000)", EnvContractViolation, "70000 characters"),
        ("_forge(7, 0.0, b'o')", SandboxCrash, "undecodable"),
        ("_forge(0, 0.0, b'\\xff\\xfe')", SandboxCrash, "undecodable"),
        ("_forge(0, 0.0, b'\\xff' * 70_000)", SandboxCrash, "undecodable"),
        ("os.write(_reply_pipe(), struct.pack('>IBB', 2, 0xC1, 0)); os._exit(0)", SandboxCrash, "undecodable"),
    ],
)
def test_a_forged_binary_reply_is_checked_like_any_reply(os_layer_pool: SandboxPool, forged: str, error, message):
    h = os_layer_pool.spawn(FORGE + step_body(forged, name="ForgerEnv"))
    with pytest.raises(error, match=message):
        os_layer_pool.step(h, "forge")
    # Whatever the verdict, the pool goes on serving other environments.
    assert os_layer_pool.reset(os_layer_pool.spawn(COUNTER), seed=1)[0].startswith("secret ")
