"""A typed client for ``spade serve``: OpenEnv's ``EnvClient`` over SPADE's models.

OpenEnv's own ``GenericEnvClient`` works against the server unchanged (actions are
``{"message": "..."}``, observations plain dicts with ``text``, ``terminated``,
``truncated``, ``info``, ``tool_schemas`` and ``metadata``). :class:`SpadeEnvClient` adds types,
a bearer token, the ``/envs/<id>`` route and :class:`~spade_serve.errors.RemoteError`
(with the server's code and the sandbox's error kind) instead of a bare RuntimeError::

    async with SpadeEnvClient("http://127.0.0.1:8000", env_id="polynomial_probe-v1") as env:
        result = await env.reset(seed=3)
        result = await env.step("\\boxed{2}")   # or SpadeAction(message=...)
        result.observation.terminated, result.observation.truncated

    with SpadeEnvClient(url, env_id=...).sync() as env:   # the blocking twin
        env.reset(seed=3)

The server is not trusted with the client's memory: a message over ``max_message_bytes``
(default :data:`MAX_MESSAGE_BYTES`) is refused by the WebSocket library as it arrives (its
``max_size``), and the call raises :class:`~spade_core.app.http_reads.AnswerTooLarge`.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from spade_core.app.http_reads import AnswerTooLarge

from .errors import RemoteError
from .models import SpadeAction, SpadeObservation, SpadeState

#: Default largest WebSocket message read from the server, in bytes (OpenEnv's is 100 MiB).
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
#: The close code a WebSocket library sends when a message passes its ``max_size``.
_MESSAGE_TOO_BIG = 1009


def env_base_url(url: str, env_id: str | None) -> str:
    """The base URL of one served environment: ``url/envs/<env_id>`` (``url`` itself when
    no id is given: a server of a single environment)."""
    base = url.rstrip("/")
    return f"{base}/envs/{env_id.removeprefix('spade/')}" if env_id else base


class SpadeEnvClient(EnvClient[SpadeAction, SpadeObservation, SpadeState]):
    """One session (one WebSocket) on a ``spade serve`` server."""

    def __init__(
        self,
        url: str,
        env_id: str | None = None,
        *,
        token: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int) or max_message_bytes < 1024:
            raise ValueError(f"max_message_bytes must be an integer >= 1024, got {max_message_bytes!r}")
        super().__init__(
            env_base_url(url, env_id),
            connect_timeout_s=connect_timeout_s,
            message_timeout_s=message_timeout_s,
            max_message_size_mb=max_message_bytes / (1024 * 1024),
            headers={"Authorization": f"Bearer {token}"} if token is not None else None,
        )
        self._max_message_size = max_message_bytes  # exact, not rounded through megabytes
        self.env_id = env_id

    async def _receive(self) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosedError

        try:
            return await super()._receive()
        except ConnectionClosedError as exc:
            if exc.sent is not None and exc.sent.code == _MESSAGE_TOO_BIG:
                raise AnswerTooLarge(f"{self._ws_url} (max_message_bytes)", self._max_message_size) from None
            raise

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        try:
            await self._send(message)
        except ConnectionClosed:
            pass  # a refused session sends its error frame, then closes: read the frame
        response = await self._receive()
        if response.get("type") == "error":
            raise RemoteError(response.get("data") or {})
        return response

    def _step_payload(self, action: SpadeAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            return {"message": action}
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SpadeObservation]:
        fields = dict(payload.get("observation") or {})
        obs = SpadeObservation(**fields, reward=payload.get("reward"), done=bool(payload.get("done", False)))
        return StepResult(observation=obs, reward=payload.get("reward"), done=obs.done)

    def _parse_state(self, payload: dict[str, Any]) -> SpadeState:
        return SpadeState.model_validate(payload)


__all__ = ["MAX_MESSAGE_BYTES", "SpadeEnvClient", "env_base_url"]
