"""The serving errors' wire codes and HTTP statuses, declared once per class."""

from __future__ import annotations

import pytest
from spade_serve.errors import ERRORS_BY_CODE, EnvFailed, ServeError, UnknownEnv

from spade_serve import errors

WIRE = {
    "SESSION_ERROR": ("ServeError", 400),
    "UNKNOWN_ENV": ("UnknownEnv", 404),
    "SESSION_NOT_FOUND": ("SessionNotFound", 404),
    "CAPACITY_REACHED": ("CapacityReached", 429),
    "BUSY": ("ServerBusy", 503),
    "VALIDATION_ERROR": ("InvalidRequest", 422),
    "REQUEST_TOO_LARGE": ("RequestTooLarge", 413),
    "UNAUTHORIZED": ("Unauthorized", 401),
    "FORBIDDEN": ("Forbidden", 403),
    "UNSUPPORTED_MEDIA_TYPE": ("UnsupportedMediaType", 415),
    "EPISODE_STATE": ("EpisodeStateError", 409),
    "EXECUTION_ERROR": ("EnvFailed", 500),
}


def test_every_error_class_answers_with_its_code_and_status() -> None:
    found = {code: (cls.__name__, cls.http_status) for code, cls in ERRORS_BY_CODE.items()}
    assert found == WIRE
    for code, (name, status) in WIRE.items():
        cls = getattr(errors, name)
        assert (cls.code, cls.http_status) == (code, status)
        if cls is not EnvFailed:  # EnvFailed needs kind and session_closed (below)
            assert cls("m").payload() == {"code": code, "message": "m"}


def test_the_payload_carries_the_details() -> None:
    assert UnknownEnv("no such env", env_id="x").payload() == {
        "code": "UNKNOWN_ENV", "message": "no such env", "env_id": "x"}
    failed = EnvFailed("boom", kind="crash", session_closed=True)
    assert failed.payload() == {"code": "EXECUTION_ERROR", "message": "boom", "kind": "crash", "session_closed": True}
    assert (failed.kind, failed.session_closed, failed.http_status) == ("crash", True, 500)


def test_a_wire_code_is_declared_once() -> None:
    with pytest.raises(TypeError, match="wire code 'BUSY' is already ServerBusy's"):
        type("AlsoBusy", (ServeError,), {}, code="BUSY", http_status=503)
    assert ERRORS_BY_CODE["BUSY"] is errors.ServerBusy


def test_a_subclass_without_a_code_inherits_it() -> None:
    class Lost(errors.SessionNotFound):
        """A variant of SessionNotFound."""

    assert (Lost.code, Lost.http_status) == ("SESSION_NOT_FOUND", 404)
    assert ERRORS_BY_CODE["SESSION_NOT_FOUND"] is errors.SessionNotFound
