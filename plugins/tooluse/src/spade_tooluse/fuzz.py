r"""Hypothesis strategies of plausible tool-use actions, for property fuzzing.

The mix reaches deep into environments and probes their edges: well-formed
``<tool_call>`` tags with tool names and argument shapes tool environments use, several
calls per message, answers, reasoning around the tags, and near misses (malformed JSON,
unclosed tags, non-object payloads, double-encoded arguments, wrong argument types).
``hypothesis`` is imported only when :func:`actions` is called.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

#: Tool names common in tool-use environments (the seed pool's and designer favourites).
TOOL_NAMES: tuple[str, ...] = (
    "get_balance", "transfer", "list_accounts", "search_flights", "book_flight", "search_hotels", "book_hotel",
    "find_product", "create_order", "pay_order", "ship_order", "list_dir", "read_file", "write_file", "make_dir",
    "move", "delete", "list_events", "create_event", "cancel_event", "search_tickets", "update_ticket", "deploy",
    "set_config", "reserve", "store", "recall", "mean", "set_light", "lock_door", "checkout", "add_to_cart",
    "get", "search", "update", "list", "ls", "cd", "no_such_tool",
)
ARGUMENT_NAMES: tuple[str, ...] = (
    "account_id", "source", "target", "amount", "name", "path", "content", "query", "order_id", "sku",
    "quantity", "day", "start", "end", "event_id", "ticket_id", "status", "service", "version", "key",
    "value", "numbers", "room", "on", "folder", "id", "x",
)


def actions() -> SearchStrategy[str]:
    """A hypothesis strategy of plausible, possibly malformed, tool-use actions."""
    from hypothesis import strategies as st

    scalar = st.one_of(
        st.integers(-5, 50), st.integers(-10**9, 10**9), st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(), st.none(), st.text(max_size=12), st.sampled_from(["ACC-1000", "/tmp/app.log", "ORD-1", "R1", "T-102"]),
    )
    value = st.one_of(scalar, st.lists(scalar, max_size=4), st.dictionaries(st.text(max_size=5), scalar, max_size=3))
    arguments = st.dictionaries(st.sampled_from(ARGUMENT_NAMES), value, max_size=4)
    name = st.one_of(st.sampled_from(TOOL_NAMES), st.text(max_size=10))

    def tag(payload: Any) -> str:
        return "<tool_call>" + json.dumps(payload, ensure_ascii=False) + "</tool_call>"

    call = st.builds(lambda n, a: tag({"name": n, "arguments": a}), name, arguments)
    calls = st.lists(call, min_size=1, max_size=4).map("\n".join)
    answer = st.text(max_size=40).map(lambda t: f"<answer>{t}</answer>")
    thoughts = st.text(max_size=40)
    well_formed = st.one_of(
        calls,
        answer,
        st.tuples(thoughts, calls).map("\n".join),
        st.tuples(calls, answer).map("\n".join),
    )
    near_miss = st.one_of(
        st.text(max_size=40).map(lambda t: "<tool_call>" + t + "</tool_call>"),  # not JSON
        call.map(lambda c: c.replace("</tool_call>", "")),  # unclosed
        call.map(lambda c: c[: max(11, len(c) // 2)] + "</tool_call>"),  # truncated JSON
        st.builds(lambda n, a: tag({"name": n, "arguments": json.dumps(a)}), name, arguments),  # double-encoded
        st.builds(lambda v: tag(v), value),  # not an object
        st.builds(lambda n: tag({"name": n}), name),  # no arguments
        st.builds(lambda n, v: tag({"name": n, "arguments": v}), name, scalar),  # arguments not an object
        st.just("<answer></answer>"),
        st.just("<answer>unclosed"),
        st.text(max_size=80),
    )
    return st.one_of(well_formed, near_miss)
