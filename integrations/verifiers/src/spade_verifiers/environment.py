"""SPADE registry environments as a verifiers 0.4 taskset, played through ``spade serve``.

verifiers 0.4 composes an evaluation from plugins found by id (``verifiers.v1.utils.loaders``):
the taskset id ``spade-verifiers`` imports this package, whose ``__all__`` exports one
``Taskset`` (the rows), one ``Env`` (how a row becomes an episode) and one ``Harness``
(the program in the model's seat; a taskset that ships one makes it its default).

* :class:`SpadeTaskset`: one task per (environment id, seed), in ``spade eval --suite
  registry``'s order and seed rule; each carries its turn cap, as the server reports it.
  The environments are the ids named, or without ids every one the server serves (its
  ``GET /envs`` listing, page after page: a ``--all`` server's whole registry), kept to a
  domain and a skill when given. They are checked against the server when the tasks are
  loaded, so an unreachable server, an unknown id or an empty selection stops the run
  before any rollout, naming what to do.
* :class:`SpadeEnv`: one episode. It resets a session of its own on the server (its own
  :class:`~spade_verifiers.client.RemoteEpisode`: verifiers runs many episodes at once, and
  they share no session, connection or conversation) at the task's seed,
  opens the model's conversation with the first observation (``Agent.interaction``: the
  env is the conversation's user), steps the session with each reply as it came, and
  answers with the next observation until the environment terminates or truncates or the
  turn cap is reached. The episode's return (``spade_return``, verifiers' reward) and
  ``success`` follow ``spade eval``'s rules (:mod:`spade_verifiers.protocol`).
* :class:`SpadeChatHarness`: the seat. It runs in verifiers' process (verifiers 0.4
  allows a harness whose loop runs in-process when every model call goes through the
  rollout's interception endpoint) and keeps the conversation as ``spade eval`` builds it:
  the system prompt, then observation and reply in turn, each as one plain message; one
  chat completion per turn, with ``spade eval``'s request body (``max_tokens`` 256,
  ``temperature`` 0, ``top_p`` 1, ``n`` 1) under the run's ``--sampling.*``, which the
  interception overlays. verifiers' built-in chat harnesses (``null``, ``bash``) instead
  install a script with uv from the package index at every run and stream.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import verifiers.v1 as vf
from pydantic import Field, field_validator
from verifiers.v1.errors import HarnessError
from verifiers.v1.types import AssistantMessage, content_text

from .client import (
    LISTING_DEADLINE_S,
    MAX_ANSWER_BYTES,
    EnvironmentFailed,
    RemoteEpisode,
    SpadeServeError,
    read_bounded,
    served_environments,
)
from .protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TOP_P,
    SYSTEM_PROMPT,
    episode_return,
    episode_seeds,
    is_win,
    parse_ids,
    turn_cap,
)

#: The taskset id: ``vf-eval spade-verifiers ...`` (verifiers imports ``spade_verifiers``).
TASKSET_ID = "spade-verifiers"
#: Where the server's bearer token is read from when no token file is named.
TOKEN_VAR = "SPADE_SERVE_TOKEN"


class SpadeTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: which server, which environments, how many episodes."""

    base_url: str = "http://127.0.0.1:8000"
    """Address of a running ``spade serve`` (its root, not an ``/envs/<id>`` URL)."""
    ids: list[str] = Field(default_factory=list)
    """Environment ids the server serves (a list, or one comma-separated string); none:
    every environment the server serves, in its listing's order (``spade eval`` without
    ``-o ids``; a ``spade serve --all`` server's whole registry)."""
    domain: str | None = None
    """Only environments of this domain (``spade eval -o domain=``)."""
    skill: str | None = None
    """Only environments of this skill (``spade eval -o skill=``)."""
    size: int = Field(4, ge=1)
    """Episodes per environment (``spade eval --size``)."""
    seed: int = 0
    """First episode seed: an environment's episodes have seeds seed, seed + 1, ..."""
    max_turns: int | None = Field(None, ge=1)
    """Cap on turns per episode (``spade eval --max-turns``); None: each environment's own."""
    token_file: Path | None = None
    """File holding the server's bearer token (its ``--token-file``); else ``$SPADE_SERVE_TOKEN``."""
    timeout_s: float = Field(120.0, gt=0)
    """Deadline of one request to the server, as a whole (its own call deadline applies inside)."""
    max_answer_bytes: int = Field(MAX_ANSWER_BYTES, ge=1024)
    """Largest answer read from the server (a row, a listing page, an observation)."""
    listing_deadline_s: float = Field(LISTING_DEADLINE_S, gt=0)
    """Deadline of every request that reads what the server serves (ids, listing pages) together."""

    @field_validator("ids", mode="before")
    @classmethod
    def _split_ids(cls, value: Any) -> list[str]:
        return parse_ids(value)


class SpadeData(vf.TaskData):
    env_id: str
    """The environment, as the server names it."""
    seed: int
    """The seed its session is reset with."""
    max_turns: int | None
    """The episode's turn cap (None: the server's truncation ends it)."""


class SpadeTask(vf.Task[SpadeData]):
    @property
    def key(self) -> str:
        return f"{self.data.env_id}#{self.data.seed}"


class SpadeTaskset(vf.Taskset[SpadeTask, SpadeTasksetConfig]):
    def __init__(self, config: SpadeTasksetConfig) -> None:
        super().__init__(config)
        #: The server's bearer token: ``load_environment(token=)``, else the token file,
        #: else ``$SPADE_SERVE_TOKEN``. Kept off the config so that no saved config or
        #: trace holds it.
        self.token: str | None = None
        if config.token_file is not None:
            self.token = config.token_file.read_text(encoding="utf-8").strip() or None
        else:
            self.token = os.environ.get(TOKEN_VAR) or None

    def load(self) -> Iterator[SpadeTask]:
        config = self.config
        served = served_environments(config.base_url, config.ids, domain=config.domain, skill=config.skill,
                                     token=self.token, timeout_s=config.timeout_s,
                                     max_answer_bytes=config.max_answer_bytes, deadline_s=config.listing_deadline_s)
        caps = {env.id: turn_cap(env.max_turns, config.max_turns) for env in served}
        for env_id, seed in episode_seeds([env.id for env in served], config.size, config.seed):
            yield SpadeTask(
                SpadeData(
                    id=f"{env_id}#{seed}",
                    name=f"{env_id}#{seed}",
                    prompt=None,  # the environment's first observation opens the conversation
                    system_prompt=SYSTEM_PROMPT,
                    env_id=env_id,
                    seed=seed,
                    max_turns=caps[env_id],
                ),
                config.task,
            )


# --- the seat ---------------------------------------------------------------------------


class SpadeChatHarnessConfig(vf.HarnessConfig):
    request_timeout_s: float = Field(600.0, gt=0)
    """Deadline of one model call through the interception server, as a whole."""
    max_answer_bytes: int = Field(MAX_ANSWER_BYTES, ge=1024)
    """Largest model answer read."""


def _wire(messages: vf.Messages) -> list[dict[str, str]]:
    """Messages as plain ``{"role", "content"}`` dicts, the shape ``spade eval`` sends."""
    out = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            out.append({"role": "assistant", "content": message.content or ""})
        else:
            out.append({"role": message.role, "content": content_text(message.content)})
    return out


class SpadeChatSession(vf.HarnessSession):
    """One conversation, kept as plain messages across the episode's turns."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        system = self.data.system_prompt
        self.conversation: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []

    async def _run(self, messages: vf.Messages | None) -> vf.ProgramResult:
        if messages is None:  # a task with its own prompt speaks first
            prompt = self.data.prompt
            messages = [vf.UserMessage(content=prompt)] if isinstance(prompt, str) else list(prompt or [])
        self.conversation.extend(_wire(messages))
        body = {
            "messages": self.conversation,
            "max_tokens": DEFAULT_MAX_TOKENS,
            "temperature": DEFAULT_TEMPERATURE,
            "top_p": DEFAULT_TOP_P,
            "n": 1,
        }
        config = self.harness.config
        assert isinstance(config, SpadeChatHarnessConfig)
        url = f"{self.endpoint.rstrip('/')}/chat/completions"
        async with httpx.AsyncClient(timeout=config.request_timeout_s) as http:
            try:  # bounded in bytes and time, as every answer this package reads
                answer = await read_bounded(http, "POST", url, limit=config.max_answer_bytes,
                                            deadline_s=config.request_timeout_s, base="", json=body,
                                            headers={"Authorization": f"Bearer {self.secret}"})
            except SpadeServeError as exc:
                raise HarnessError(f"the model call failed: {exc}") from None
        if answer.status != 200:
            raise HarnessError(f"the model call failed: HTTP {answer.status}: {answer.text[:500]}")
        try:
            text = answer.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            raise HarnessError(f"the model's answer has no choices[0].message.content: {answer.text[:300]}") from None
        self.conversation.append({"role": "assistant", "content": text})
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


class SpadeChatHarness(vf.Harness[SpadeChatHarnessConfig]):
    """A chat loop in verifiers' process: no program, no tools (see the module doc)."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def session(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        return SpadeChatSession(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url)

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        session = await self.session(ctx, trace, runtime, endpoint, secret, mcp_urls, data)
        return await session._run(None)


# --- the episode ------------------------------------------------------------------------


class SpadeEnvConfig(vf.EnvConfig):
    # The seat's loop runs in this process and executes nothing, so the local runtime
    # (verifiers' default is a remote Prime sandbox).
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


def _reply(segment: vf.Segment) -> str:
    """The model's reply of a segment as it came (``Segment.last_reply`` strips it;
    ``spade eval`` steps the environment with the text unchanged)."""
    for message in reversed(segment.messages):
        if isinstance(message, AssistantMessage):
            return message.content or ""
    return ""


class SpadeEnv(vf.Env[SpadeEnvConfig]):
    async def run(self, task: SpadeTask, agents: vf.Agents) -> None:
        data = task.data
        taskset = self.taskset
        assert isinstance(taskset, SpadeTaskset)
        config = taskset.config
        turns = 0
        reward: float | None = None
        terminated = truncated = False
        error: str | None = None
        session: str | None = None
        replies: list[str] = []
        # A session and a connection of this episode's own: verifiers plays episodes
        # concurrently (vf-eval -c), and nothing here is shared between them.
        async with RemoteEpisode(config.base_url, data.env_id, token=taskset.token, timeout_s=config.timeout_s,
                                 max_answer_bytes=config.max_answer_bytes) as remote:
            async with agents.player.interaction(task) as interaction:
                try:
                    obs = await remote.reset(data.seed)
                except EnvironmentFailed as exc:  # spade eval: the episode ends with its error, return 0
                    error = f"reset: {exc}"
                else:
                    session = remote.session_id
                    segment = await interaction.turn(obs.text)
                    while not segment.terminated:
                        reply = _reply(segment)
                        replies.append(reply)
                        try:
                            obs = await remote.step(reply)
                        except EnvironmentFailed as exc:
                            error = f"step {turns + 1}: {exc}"
                            terminated = False
                            break
                        turns += 1
                        reward, terminated, truncated = obs.reward, obs.terminated, obs.truncated
                        if terminated or truncated or (data.max_turns is not None and turns >= data.max_turns):
                            break
                        segment = await interaction.turn(obs.text)
        trace = interaction.trace
        value = episode_return(reward, terminated)
        trace.record_reward("spade_return", value)
        trace.record_metric("success", float(is_win(value)))
        trace.record_metric("turns", float(turns))
        trace.record_metric("terminated", float(terminated))
        trace.record_metric("env_error", float(error is not None))
        trace.info["spade"] = {
            "env_id": data.env_id,
            "seed": data.seed,
            "return": value,
            "success": is_win(value),
            "turns": turns,
            "terminated": terminated,
            "truncated": truncated,
            "last_reward": reward,
            "error": error,
            "session": session,
            "replies": replies,
        }


def load_environment(
    base_url: str = "http://127.0.0.1:8000",
    ids: str | list[str] | None = None,
    size: int = 4,
    seed: int = 0,
    max_turns: int | None = None,
    token: str | None = None,
    domain: str | None = None,
    skill: str | None = None,
    **env: Any,
) -> SpadeEnv:
    """The verifiers env of ``ids`` on the ``spade serve`` at ``base_url`` (what ``vf-eval
    spade-verifiers --env.taskset.base-url ... --env.taskset.ids ...`` builds); without
    ``ids``, of every environment the server serves; either kept to ``domain`` and ``skill``.
    ``env``: further ``EnvConfig`` fields (``player=vf.AgentConfig(...)``, ``timeout=``...).

    The selection is checked against the server now: :class:`~spade_verifiers.client.ServerUnreachable`,
    :class:`~spade_verifiers.client.UnknownEnvironment` or :class:`~spade_verifiers.client.EmptySelection`
    otherwise."""
    taskset = {"id": TASKSET_ID, "base_url": base_url, "ids": parse_ids(ids), "size": size, "seed": seed,
               "max_turns": max_turns, "domain": domain, "skill": skill}
    config = vf.resolve_env_config({**env, "taskset": taskset})
    assert isinstance(config, SpadeEnvConfig)
    made = SpadeEnv(config)
    assert isinstance(made.taskset, SpadeTaskset)
    if token is not None:
        made.taskset.token = token
    for _ in made.taskset:  # checks the server and the ids now
        pass
    return made


__all__ = [
    "TASKSET_ID",
    "SpadeChatHarness",
    "SpadeChatHarnessConfig",
    "SpadeData",
    "SpadeEnv",
    "SpadeEnvConfig",
    "SpadeTask",
    "SpadeTaskset",
    "SpadeTasksetConfig",
    "load_environment",
]
