"""A Gymnasium environment whose episodes run in a session on a ``spade serve`` server.

``gym.make("spade/remote", url="http://host:8000", env_id="polynomial_probe-v1")`` (the id
is registered by ``import spade_serve``) gives a :class:`RemoteTextEnv`: the same
``reset``/``step`` contract as a local SPADE environment (``terminated`` and ``truncated``
apart, the seed honoured, ``info`` as the environment returned it), over one WebSocket.
"""

from __future__ import annotations

from typing import Any

from spade_core.env import TextEnv

from .client import MAX_MESSAGE_BYTES, SpadeEnvClient


class RemoteTextEnv(TextEnv):
    """A ``gymnasium.Env[str, str]`` backed by one remote session (its own WebSocket).

    ``close()`` ends the session on the server (its worker is freed). Errors from the
    server are :class:`~spade_serve.errors.RemoteError` (``code``, ``kind``)."""

    def __init__(
        self,
        url: str,
        env_id: str | None = None,
        *,
        token: str | None = None,
        message_timeout_s: float = 60.0,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        render_mode: str | None = None,
    ) -> None:
        self.url = url
        self.env_id = env_id
        self.render_mode = render_mode
        self._client = SpadeEnvClient(
            url, env_id, token=token, message_timeout_s=message_timeout_s, max_message_bytes=max_message_bytes
        ).sync()
        self._client.connect()
        self._last_obs = ""
        self.tools: list[dict[str, Any]] = []
        self.last_seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        result = self._client.reset(**({"seed": seed} if seed is not None else {}))
        obs = result.observation
        self._last_obs = obs.text
        self.last_seed = obs.metadata.get("seed")
        if obs.tools:
            self.tools = list(obs.tools)
        return obs.text, dict(obs.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"action must be str, got {type(action).__name__}")
        result = self._client.step(action)
        obs = result.observation
        self._last_obs = obs.text
        return obs.text, float(result.reward or 0.0), obs.terminated, obs.truncated, dict(obs.info)

    def state(self) -> Any:
        """The session's :class:`~spade_serve.models.SpadeState` (episode, step count, flags)."""
        return self._client.state()

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()
        super().close()


__all__ = ["RemoteTextEnv"]
