r"""A person playing an environment, one typed line per turn (``spade play``).

:class:`PlaySession` is the game logic without any terminal: it turns a typed line into
an action (wrapping it as ``\boxed{...}`` for boxed domains when the player did not) or a
session command, and returns what happened as a :class:`Turn`. The terminal loop lives
in :func:`play_in_terminal`.

Where the environment runs is decided by :func:`open_env`: seed environments are trusted
and run in a worker process under the sandbox's call deadline (``--in-process``: in this
process); store environments run in the env runner the configuration's
``store_envs_run`` names (``"sandbox"``: spade-sandbox's ``SandboxedEnv``, reached through
the ``spade_register_env_runners`` hook, see :mod:`spade_core.runners`) unless the user
explicitly opts in to in-process execution (``--in-process`` or ``store_envs_run =
"in-process"`` in the config).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..actions import format_boxed, parse_boxed
from ..config import SpadeConfig
from ..env import ReferenceEnvAdapter, TextEnv
from ..errors import EnvContractError, SpadeError, UntrustedCodeError
from ..metadata import ActionFormat
from ..seeds import open_trusted_env
from ..source import instantiate, load_trusted_class
from .catalog import CatalogEntry

if TYPE_CHECKING:
    from ..plugins import SpadePlugins
    from ..store import EnvStore

COMMANDS_HELP = {
    ":quit": "leave",
    ":reset [SEED]": "start a new episode (same seed unless one is given)",
    ":solution": "reveal the environment's reference solution",
    ":help": "show these commands",
}


def open_env(
    entry: CatalogEntry,
    config: SpadeConfig,
    *,
    in_process: bool = False,
    store: EnvStore | None = None,
    plugins: SpadePlugins | None = None,
) -> TextEnv:
    """A Gymnasium text environment for ``entry``, run where its trust level allows: a
    seed (trusted plugin code) by :func:`~spade_core.seeds.open_trusted_env`, in a
    worker process under ``config``'s call deadline (in this process with
    ``in_process``); store code by the env runner of ``plugins`` (default: the
    process-wide set) that ``config.store_envs_run`` names, in this process only when
    opted in; :class:`~spade_core.errors.UntrustedCodeError` when no runner provides it."""
    meta = entry.metadata
    source = entry.source(store)
    if entry.kind == "seed":
        return open_trusted_env(source, source_name=meta.id, class_name=meta.class_name, max_turns=meta.max_turns,
                                reward_range=meta.reward_range, sandbox=config.sandbox, in_process=in_process)
    if in_process or config.store_envs_run == "in-process":
        cls = load_trusted_class(source, meta.class_name, source_name=meta.id)
        return ReferenceEnvAdapter(lambda: instantiate(cls), max_turns=meta.max_turns, reward_range=meta.reward_range)
    if plugins is None:
        from ..plugins import get_plugins

        plugins = get_plugins()
    runner = plugins.env_runners().get(config.store_envs_run)
    if runner is None:
        raise UntrustedCodeError(
            f"{meta.id} is store code and the {config.store_envs_run} is not available (no loaded plugin "
            f"provides the {config.store_envs_run!r} env runner: spade-sandbox is not installed, or "
            "SPADE_PLUGINS / the config's 'plugins' leaves it out); refusing to run it in this process. "
            'Pass --in-process (or set store_envs_run = "in-process" in spade.toml) only for code you trust.'
        )
    allowed: frozenset[str] = frozenset()
    try:
        allowed = plugins.domain(meta.domain).allowed_modules
    except SpadeError:
        pass  # an uninstalled domain gets the sandbox's standard allow-list only
    env: TextEnv = runner.make_env(
        source,
        max_turns=meta.max_turns,
        allowed_modules=tuple(sorted(allowed)),
        reward_range=meta.reward_range,
        class_name=meta.class_name,
        render_mode=None,
        sandbox=config.sandbox,
    )
    return env


@dataclass(frozen=True)
class Turn:
    """What one typed line did."""

    kind: Literal["step", "reset", "solution", "help", "quit", "ignored", "error"]
    observation: str = ""
    action: str | None = None
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    solution: list[str] | str | None = None
    message: str = ""


class PlaySession:
    """One person's session on one environment: episodes, returns and commands."""

    def __init__(self, env: TextEnv, action_format: ActionFormat = ActionFormat.boxed, seed: int | None = None) -> None:
        self.env = env
        self.action_format = action_format
        self.seed = seed
        self.turns = 0
        self.total_reward = 0.0
        self.last_reward = 0.0
        self.over = False

    def reset(self, seed: int | None = None) -> Turn:
        """Start an episode; an environment that cannot start raises :class:`SpadeError`."""
        if seed is not None:
            self.seed = seed
        try:
            obs, info = self.env.reset(seed=self.seed)
        except SpadeError:
            raise
        except Exception as exc:  # in-process env code may raise anything: say what, no traceback
            raise EnvContractError(f"reset() raised {type(exc).__name__}: {exc}", method="reset") from exc
        if self.seed is None:  # remember the drawn seed so ":reset" replays the same episode
            self.seed = getattr(self.env, "last_seed", None)
        self.turns, self.total_reward, self.last_reward, self.over = 0, 0.0, 0.0, False
        return Turn("reset", observation=obs, info=info, message=f"seed {self.seed}")

    def to_action(self, line: str) -> str:
        r"""The action sent for a typed line: boxed domains get ``\boxed{line}`` unless the
        player already boxed it."""
        if self.action_format == ActionFormat.boxed and parse_boxed(line) is None:
            return format_boxed(line)
        return line

    def handle(self, line: str) -> Turn:
        text = line.strip()
        if not text:
            return Turn("ignored")
        if text.startswith(":"):
            return self._command(text)
        if self.over:
            return Turn("error", message="the episode is over: :reset to play again, :quit to leave")
        action = self.to_action(text)
        try:
            obs, raw_reward, terminated, truncated, info = self.env.step(action)
        except SpadeError as exc:
            return Turn("error", action=action, message=f"the environment failed: {exc}")
        except Exception as exc:  # in-process env code: report and let the player :reset
            return Turn("error", action=action, message=f"the environment failed: {type(exc).__name__}: {exc}")
        reward = float(raw_reward)
        self.turns += 1
        self.total_reward += reward
        self.last_reward = reward
        self.over = terminated or truncated
        return Turn("step", obs, action, reward, terminated, truncated, info)

    def _command(self, text: str) -> Turn:
        name, _, arg = text.partition(" ")
        if name in (":quit", ":q", ":exit"):
            return Turn("quit")
        if name in (":help", ":h", ":?"):
            return Turn("help", message="\n".join(f"{k:16} {v}" for k, v in COMMANDS_HELP.items()))
        if name == ":reset":
            seed: int | None = None
            if arg.strip():
                try:
                    seed = int(arg)
                except ValueError:
                    return Turn("error", message=f":reset takes an integer seed, got {arg.strip()!r}")
            try:
                return self.reset(seed)
            except SpadeError as exc:
                return Turn("error", message=str(exc))
        if name == ":solution":
            try:
                sol = self.env.solution()
            except NotImplementedError:
                return Turn("error", message="this environment does not provide solution()")
            except SpadeError as exc:
                return Turn("error", message=f"solution() failed: {exc}")
            except Exception as exc:
                return Turn("error", message=f"solution() failed: {type(exc).__name__}: {exc}")
            return Turn("solution", solution=sol)
        return Turn("error", message=f"unknown command {name!r} (:help lists them)")


def play_in_terminal(session: PlaySession, read_line: Callable[[], str | None], console: Any) -> PlaySession:
    """Run ``session`` until ``:quit`` or end of input; print every turn on ``console``.

    ``read_line`` returns the next typed line, or ``None`` at end of input.
    """
    from rich.panel import Panel

    from spade_core.terminal import escape

    def show_obs(turn: Turn, title: str) -> None:
        console.print(Panel(escape(turn.observation), title=title, title_align="left"))

    first = session.reset()
    show_obs(first, f"episode start ({first.message})")
    console.print("[dim]type an action, or :help[/]")
    while True:
        line = read_line()
        if line is None:
            break
        turn = session.handle(line)
        if turn.kind == "quit":
            break
        if turn.kind == "ignored":
            continue
        if turn.kind == "error":
            console.print(f"[red]{escape(turn.message)}[/]")
        elif turn.kind == "help":
            console.print(escape(turn.message))
        elif turn.kind == "reset":
            show_obs(turn, f"episode start ({turn.message})")
        elif turn.kind == "solution":
            sol = turn.solution
            steps = sol if isinstance(sol, list) else [str(sol)]
            console.print("[yellow]solution:[/]")
            for i, a in enumerate(steps, 1):
                console.print(f"  {i}. {escape(a)}", highlight=False)
        elif turn.kind == "step":
            show_obs(turn, f"turn {session.turns}: {escape(turn.action or '')}")
            flags = []
            if turn.terminated:
                flags.append("[bold]terminated[/]")
            if turn.truncated:
                flags.append("[bold]truncated[/] (turn limit)")
            console.print(f"reward [bold]{turn.reward:.3f}[/]  " + "  ".join(flags), highlight=False)
            if session.over:
                console.print(
                    f"[green]episode over[/] after {session.turns} turns: final reward "
                    f"{session.last_reward:.3f}. :reset to play again, :quit to leave",
                    highlight=False,
                )
    console.print(f"bye: {session.turns} turns, final reward {session.last_reward:.3f}", highlight=False)
    return session
