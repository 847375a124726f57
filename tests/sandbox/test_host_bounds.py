"""Host-side bounds on what a worker sends back, as properties.

* The pool's own check of a decoded info accepts exactly what the worker's conversion
  accepts (same depth, value count and text budget), so re-checking on the pool side never
  rejects a good environment and catches a worker that skipped the conversion.
* The decode budget counts every container and its members: a frame decodes exactly as
  msgpack decodes it when it holds at most the budget's values, and stops otherwise.
* Every valid reply to a single call fits the per-request frame limit.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spade_sandbox.errors import EnvContractViolation
from spade_sandbox.replies import check_info_size

from spade_sandbox import protocol, worker_replies

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False),
    st.text(max_size=12), st.binary(max_size=12),
)
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=6), inner, max_size=5)),
    max_leaves=60,
)
#: Deep chains, to reach the depth limit from both sides.
chains = st.integers(0, 24).flatmap(
    lambda n: st.sampled_from(["list", "dict"]).map(lambda kind: _chain(n, kind))
)


def _chain(depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def _roundtrip(value: Any) -> Any:
    return protocol.decode_untrusted(msgpack.packb(value, use_bin_type=True), max_str_len=1 << 20)


def _worker_accepts(info: dict[str, Any], limit: int) -> bool:
    try:
        worker_replies.wire_value(info, text_limit=limit)
    except worker_replies.ContractBroken:
        return False
    return True


def _pool_accepts(info: dict[str, Any], limit: int) -> bool:
    try:
        check_info_size(_roundtrip(info), "step", limit)
    except EnvContractViolation:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(info=st.dictionaries(st.text(max_size=6), st.one_of(plain, chains), max_size=4), limit=st.integers(0, 40))
def test_the_pool_accepts_an_info_exactly_when_the_worker_does(info, limit):
    assert _pool_accepts(info, limit) == _worker_accepts(info, limit)


@pytest.mark.parametrize("extra", [0, 1])
def test_the_value_count_limit_is_the_same_on_both_sides(extra):
    # The dict itself is one value: MAX_INFO_ITEMS - 1 members fill the budget exactly.
    info = {"k": list(range(protocol.MAX_INFO_ITEMS - 2 + extra))}
    assert _pool_accepts(info, 65_536) == _worker_accepts(info, 65_536) == (extra == 0)


def _values(value: Any) -> int:
    """What :class:`protocol.DecodeBudget` spends on a decoded value (reference)."""
    if isinstance(value, list):
        return len(value) + 1 + sum(_values(v) for v in value)
    if isinstance(value, dict):
        return len(value) + 1 + sum(_values(v) for v in value.values())
    return 0


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(plain, chains), budget=st.integers(0, 80))
def test_the_decode_budget_stops_exactly_past_its_limit(value, budget):
    data = msgpack.packb(value, use_bin_type=True)
    if _values(value) <= budget:
        decoded = protocol.decode_untrusted_budgeted(data, max_str_len=1 << 20, max_values=budget)
        assert decoded == msgpack.unpackb(data, raw=False)
    else:
        with pytest.raises(protocol.DecodeBudgetExceeded):
            protocol.decode_untrusted_budgeted(data, max_str_len=1 << 20, max_values=budget)


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(16, 400),
    data=st.data(),
)
def test_every_valid_single_reply_fits_the_frame_limit(limit, data):
    # The widest characters UTF-8 has (4 bytes each), at the observation's limit, and an
    # info whose text is at the limit too.
    wide = st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF)
    obs = data.draw(st.text(wide, min_size=limit, max_size=limit))
    note = data.draw(st.text(wide, min_size=limit, max_size=limit))
    info = worker_replies.wire_value({"note": note, "more": list(range(100))}, text_limit=limit)
    frame = protocol.encode(["ok", [obs, 1.0, False, False, info]])
    assert len(frame) <= protocol.reply_bytes_limit(limit)
    solution = protocol.encode(["ok", [note[i : i + 1] for i in range(limit)]])
    assert len(solution) <= protocol.reply_bytes_limit(limit)
