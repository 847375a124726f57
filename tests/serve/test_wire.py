"""The server's restated wire models (spade_serve.wire) are OpenEnv 0.10's own: same
fields, types, defaults and constraints, and every answer the server gives parses with
OpenEnv's models. The server does not import OpenEnv (whose package import loads gradio
and mcp); these tests are what keeps the two in step."""

from __future__ import annotations

import enum
import subprocess
import sys

import openenv.core.env_server.types as theirs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from spade_serve.models import SpadeAction, SpadeObservation, SpadeState, wire_result

from spade_serve import wire


def _strip(node):
    """A JSON schema without its prose (descriptions, titles, examples)."""
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in ("description", "title", "examples")}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _shape(model: type[BaseModel]) -> dict:
    config = {k: model.model_config.get(k) for k in ("extra", "validate_assignment")}
    return {"schema": _strip(model.model_json_schema()), "config": config}


@pytest.mark.parametrize("ours,name", sorted(wire.OPENENV_NAMES.items(), key=lambda kv: kv[1]))
def test_every_wire_model_matches_openenvs(ours: type, name: str) -> None:
    other = getattr(theirs, name)
    if issubclass(ours, enum.Enum):
        assert {m.name: m.value for m in ours} == {m.name: m.value for m in other}
        return
    assert _shape(ours) == _shape(other)


def test_spade_models_are_valid_openenv_models_of_their_kind() -> None:
    # What OpenEnv's server-side code would accept as an action, observation, state.
    theirs.Action.model_validate({k: v for k, v in SpadeAction(message="a").model_dump().items() if k == "metadata"})
    obs = SpadeObservation(text="t", terminated=True, done=True, reward=1.0, metadata={"terminated": True})
    body = wire_result(obs)
    theirs.StepResponse.model_validate(body)
    theirs.ResetResponse.model_validate(body)
    theirs.WSObservationResponse.model_validate({"type": "observation", "data": body})
    theirs.State.model_validate(SpadeState(env_id="e", step_count=3).model_dump())


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(max_size=200),
    reward=st.floats(-10, 10, allow_nan=False),
    terminated=st.booleans(),
    truncated=st.booleans(),
    info=st.dictionaries(st.text(max_size=10), st.integers() | st.text(max_size=10), max_size=5),
)
def test_for_all_results_the_wire_body_round_trips_through_the_typed_client(
    text: str, reward: float, terminated: bool, truncated: bool, info: dict
) -> None:
    from spade_serve.client import SpadeEnvClient

    obs = SpadeObservation(
        text=text,
        reward=reward,
        terminated=terminated,
        truncated=truncated,
        done=terminated or truncated,
        info=info,
        metadata={"terminated": terminated, "truncated": truncated},
    )
    parsed = SpadeEnvClient("http://127.0.0.1:1")._parse_result(wire_result(obs))
    assert parsed.observation == obs
    assert parsed.done == (terminated or truncated) and parsed.reward == reward


def test_the_server_modules_do_not_import_openenv() -> None:
    code = "import sys, spade_serve.app, spade_serve.server; print(sorted(m for m in ('openenv', 'gradio', 'mcp') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_openenvs_own_runtime_validator_passes_the_server(serve) -> None:
    from openenv.cli._validation import validate_running_environment

    with serve() as (url, _):
        report = validate_running_environment(url, timeout_s=10)
    failed = [c for c in report["criteria"] if c.get("required", True) and not c["passed"]]
    assert report["passed"], failed
