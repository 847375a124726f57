"""The environment contract and the optional-C loader have one home, in ``spade_core``: the
in-process adapter, the sandbox's worker and its pool apply the same rules, and a zygote
loads them without importing ``spade_core`` (whose initialiser registers environments)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.env import check_reset_result, check_step_result
from spade_core.errors import EnvContractError
from spade_sandbox.worker_replies import ContractBroken, wire_reset, wire_step
from spade_sandbox.zygote_process import zygote_path

from spade_core import c_extensions, contract
from spade_sandbox import core_rules

LIMIT = contract.MAX_TEXT_LENGTH

AS_ZYGOTE = """
import json, sys
sys.path.extend(p for p in sys.argv.pop(1).split(':') if p not in sys.path)
from spade_sandbox import native, worker
from spade_sandbox.core_rules import c_extensions, contract
before = {
    "core": "spade_core" in sys.modules,
    "gymnasium": "gymnasium" in sys.modules,
    "contract": sys.modules.get("spade_core.contract") is contract,
    "file": contract.__file__,
    "c": native.reason,
}
import spade_core
import spade_core.env
from spade_core import contract as again
before["same_after_import"] = again is contract and spade_core.env.contract is contract
print(json.dumps(before))
"""


def test_a_zygote_loads_the_rules_without_importing_spade_core():
    """As a zygote starts (``python -I -S``, the module path handed over): the worker gets
    ``spade_core.contract`` and the C loader, and neither spade_core's initialiser nor
    Gymnasium runs; a later ``import spade_core`` uses the same module, not a second copy."""
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", AS_ZYGOTE, ":".join(zygote_path())],
        capture_output=True, text=True, timeout=60, check=True,
    )
    seen = json.loads(out.stdout)
    assert seen["core"] is False and seen["gymnasium"] is False
    assert seen["contract"] is True and seen["file"] == contract.__file__
    assert seen["c"] in ("active",) or seen["c"].startswith("not built")
    assert seen["same_after_import"] is True


def test_only_modules_written_for_it_load_without_their_package():
    with pytest.raises(ValueError, match=r"spade_core.env is not written to load without its package"):
        core_rules.core_module("env")
    assert core_rules.contract is contract and core_rules.c_extensions is c_extensions


def test_the_c_loader_reports_why_the_python_path_runs(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SPADE_TEST_NO_C", "1")
    off = c_extensions.load("spade_sandbox._fast", "SPADE_TEST_NO_C", "spade_sandbox")
    assert (off.module, off.disabled, off.active) == (None, True, False)
    assert off.reason == "disabled by SPADE_TEST_NO_C=1"
    monkeypatch.setenv("SPADE_TEST_NO_C", "0")
    missing = c_extensions.load("spade_sandbox._no_such_extension", "SPADE_TEST_NO_C", "spade_sandbox")
    assert missing.module is None and not missing.disabled
    assert missing.reason.startswith("not built (No module named") and "reinstall spade_sandbox" in missing.reason


# --- one rule, wherever the environment runs ----------------------------------------------

_scalars = st.one_of(
    st.text(max_size=5),
    st.floats(),
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.none(),
    st.binary(max_size=3),
    st.fractions(max_denominator=7),
)
_infos = st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(0, 9) | st.text(max_size=3), max_size=3),
                   st.lists(st.integers(), max_size=2), st.text(max_size=2))
_steps = st.one_of(
    st.tuples(_scalars | st.text(max_size=8), _scalars, _scalars, _scalars, _infos),
    st.tuples(st.text(max_size=3), st.floats(), st.booleans(), _infos),  # the old Gym 4-tuple
    _scalars,
)


def _outcome(check: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", check(*args)
    except (EnvContractError, ContractBroken) as exc:
        return "error", str(exc)


@given(_steps)
def test_the_worker_and_the_in_process_adapter_apply_the_same_step_rules(result: Any) -> None:
    """For every step result: both reject it with the same message, or both accept it with
    the same values (the worker's converted for the wire: a tuple becomes a list)."""
    inproc = _outcome(check_step_result, result)
    worker = _outcome(wire_step, result, LIMIT)
    if inproc[0] == "ok" and worker[0] == "ok":
        assert list(inproc[1]) == worker[1]
    else:
        assert inproc == worker


@given(st.one_of(st.tuples(_scalars, _infos), st.tuples(st.text(max_size=3)), _scalars))
def test_the_worker_and_the_in_process_adapter_apply_the_same_reset_rules(result: Any) -> None:
    inproc = _outcome(check_reset_result, result)
    worker = _outcome(wire_reset, result, LIMIT)
    if inproc[0] == "ok" and worker[0] == "ok":
        assert list(inproc[1]) == worker[1]
    else:
        assert inproc == worker


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, "terminated=1 of type int"),
        ("yes", "terminated='yes' of type str"),
        ("x" * 100, "terminated='" + "x" * 36 + "... of type str"),
        (object(), "terminated of type object"),  # never the environment's own repr
    ],
)
def test_a_flag_must_be_a_bool_and_the_message_shows_only_builtin_values(value: Any, expected: str) -> None:
    with pytest.raises(EnvContractError) as err:
        contract.flag(value, "terminated", EnvContractError)
    assert str(err.value) == f"step() returned {expected}, expected bool" and err.value.method == "step"


def test_numbers_become_floats_and_numpy_bools_become_bools() -> None:
    np = pytest.importorskip("numpy")
    assert contract.reward(Fraction(1, 4), EnvContractError) == 0.25
    assert type(contract.reward(np.float32(0.5), EnvContractError)) is float
    assert contract.flag(np.bool_(True), "terminated", EnvContractError) is True
    with pytest.raises(EnvContractError, match="non-finite reward nan"):
        contract.reward(math.nan, EnvContractError)
