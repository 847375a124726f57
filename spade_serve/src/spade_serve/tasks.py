"""OpenEnv's Task API over registry environments: an environment's tasks are its seeds
and, for a seed environment that declares ``KNOBS``, its knob settings.

OpenEnv 0.10 lets a server list an environment's *splits* and *tasks* and fetch a task by
index or by range (``/{env_name}/splits``, ``/tasks``, ``/num_tasks``, ``/task``,
``/task_range``); a client then starts an episode of a task with ``reset(split=,
index=)``. A SPADE environment is procedural, so a task is a ``(knob setting, seed)``
pair:

* two splits, ``train`` (seeds ``0 ..``) and ``test`` (held-out seeds from
  :data:`TEST_SEED_BASE`, the base the trainer's experiments evaluate on), each of
  :data:`SEEDS_PER_SETTING` seeds per knob setting;
* the knob settings of an environment whose class declares ``KNOBS`` (the designer's
  declaration, ``{"NAME": (type, low, high)}`` or ``(str, choice, ...)`` or ``(bool,)``):
  the class as written first, then each knob at each declared bound or choice with the
  others as written, at most :data:`MAX_KNOB_SETTINGS` in declaration order. A grid of
  every combination would be unbounded (a float range) or far too large; these settings
  are the ones the declaration names. Seeds and store environments alike: the
  declaration is read with ``ast`` (nothing of the environment runs here) and every
  variant runs in the sandbox. An environment without ``KNOBS``, or whose declaration
  cannot be read, has one setting: the environment as written;
* index ``i`` of a split is setting ``i // SEEDS_PER_SETTING`` at the split's seed
  ``base + i % SEEDS_PER_SETTING``, so the first :data:`SEEDS_PER_SETTING` tasks are the
  environment as written.

A knob setting is played by a variant of the environment: its source with the literal of
each changed knob replaced (:func:`spade_core.knobs.apply_values`, ``LENGTH = 4`` becomes
``LENGTH = 5`` in the class body), byte for byte the child the designer's parameter edits
and the trainer's adaptive pool make for the same values, so a task served here is the
environment training played. It runs in the sandbox like any code, and its sessions get
workers of their own (:attr:`ServedEnv.group_id`).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

from spade_core.knobs import Knob, KnobDeclarationError, KnobValueError, apply_values, read_knobs
from spade_core.returns import HELD_OUT_SEED_BASE

from .catalog import ServedEnv
from .errors import InvalidRequest
from .kept import KeptEnvs, source_size

#: Seeds per knob setting in each split.
SEEDS_PER_SETTING = 1000
#: The first seed of the ``test`` split (held out from ``train``: the kernel's rule).
TEST_SEED_BASE = HELD_OUT_SEED_BASE
SPLITS: dict[str, int] = {"train": 0, "test": TEST_SEED_BASE}
#: Most tasks one ``/tasks`` (a preview: ``num_tasks`` is the true count) or
#: ``/task_range`` answer holds.
MAX_TASKS_PER_ANSWER = 1000
#: Most knob settings an environment offers (the one as written included): a declaration
#: with more bounds and choices than this keeps its first ones, so an environment cannot
#: make a server hold an unbounded list or cache of variants.
MAX_KNOB_SETTINGS = 64

KnobSetting = tuple[tuple[str, Any], ...]


class TaskError(InvalidRequest, http_status=400):
    """An unknown split, an index out of range, a range too long (HTTP 400, as OpenEnv's
    server answers an invalid task index)."""


@dataclass(frozen=True)
class Task:
    """One task: an environment at a knob setting and a seed."""

    env_id: str
    split: str
    index: int
    seed: int
    #: The changed knobs (empty: the environment as written).
    knobs: KnobSetting

    def spec(self) -> dict[str, Any]:
        """The task as the Task API answers it."""
        return {
            "id": f"{self.env_id}/{self.split}/{self.index}",
            "index": self.index,
            "split": self.split,
            "env_id": self.env_id,
            "seed": self.seed,
            "knobs": dict(self.knobs),
        }


def _declared_values(knob: Knob) -> list[Any]:
    """The values a knob declaration names: its bounds, its choices, or both booleans."""
    if knob.type is bool:
        return [False, True]
    if knob.type is str:
        return list(knob.choices)
    return [knob.type(knob.low), knob.type(knob.high)]


class TaskCatalog:
    """The tasks of a server's environments. An environment's knob settings and the variants
    that play them are kept in ``kept``, the server's one budget of what it keeps for clients
    (:class:`spade_serve.kept.KeptEnvs`, shared with its catalog's resolved environments):
    read and made again when dropped, never more than the budget, whatever clients name."""

    def __init__(self, *, seeds_per_setting: int = SEEDS_PER_SETTING, kept: KeptEnvs | None = None) -> None:
        self.seeds_per_setting = seeds_per_setting
        self.kept = kept if kept is not None else KeptEnvs()

    def splits(self) -> list[dict[str, Any]]:
        return [{"name": name, "type": name} for name in SPLITS]

    def knob_settings(self, env: ServedEnv) -> list[KnobSetting]:
        """The environment's settings, the one as written first (see the module doc), read
        from its source (:func:`spade_core.knobs.read_knobs`) and kept in the budget."""
        known = self.kept.get(("knob settings", env.id))
        if known is not None:
            return known  # type: ignore[return-value]
        settings: list[KnobSetting] = [()]
        try:  # the kernel's one reader of the declarations (ast: nothing runs, store code too)
            knobs = read_knobs(env.source, env.metadata.class_name).knobs
        except KnobDeclarationError:
            knobs = ()  # undeclarable knobs: the environment as written only
        for knob in knobs:
            for value in _declared_values(knob):
                if len(settings) < MAX_KNOB_SETTINGS and value != knob.value and ((knob.name, value),) not in settings:
                    settings.append(((knob.name, value),))
        return self.kept.keep(("knob settings", env.id), settings, _settings_size(settings))

    def num_tasks(self, env: ServedEnv, split: str) -> int:
        self._base(split)
        return len(self.knob_settings(env)) * self.seeds_per_setting

    def task(self, env: ServedEnv, split: str, index: Any) -> Task:
        base = self._base(split)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TaskError(f"a task index is an integer, got {index!r}")
        settings = self.knob_settings(env)
        count = len(settings) * self.seeds_per_setting
        if not 0 <= index < count:
            raise TaskError(f"task index {index} is out of range: split {split!r} of {env.id} has {count} tasks (0..{count - 1})")
        setting, offset = divmod(index, self.seeds_per_setting)
        return Task(env.id, split, index, base + offset, settings[setting])

    def task_range(self, env: ServedEnv, split: str, start: int | None, stop: int | None) -> list[Task]:
        """Tasks ``[start, stop)`` with Python's slice rules (negative counts from the end)."""
        indices = range(self.num_tasks(env, split))[slice(start, stop)]
        if len(indices) > MAX_TASKS_PER_ANSWER:
            raise TaskError(
                f"{len(indices)} tasks asked for; one answer holds at most {MAX_TASKS_PER_ANSWER}: ask for a shorter range"
            )
        return [self.task(env, split, i) for i in indices]

    def for_reset(self, env: ServedEnv, split: Any, index: Any, seed: int | None) -> Task:
        """The task a reset names with ``split`` and ``index`` (a seed, if given too, must
        be the task's)."""
        if split is None or index is None:
            raise TaskError("a reset picks a task with both split and index")
        task = self.task(env, split, index)
        if seed is not None and seed != task.seed:
            raise TaskError(f"task {index} of split {split!r} plays seed {task.seed}, not {seed}: send one or the other")
        return task

    def variant(self, env: ServedEnv, knobs: KnobSetting) -> ServedEnv:
        """:func:`variant`, kept in the server's budget once made (its source is parsed
        twice: not on every reset while it is kept)."""
        if not knobs:
            return env
        key = ("variant", env.id, knobs)
        known = self.kept.get(key)
        if known is not None:
            return known  # type: ignore[return-value]
        made = variant(env, knobs)
        return self.kept.keep(key, made, source_size(made.source))

    def resolve(self, env: ServedEnv, split: Any, index: Any, seed: int | None) -> tuple[Task, ServedEnv]:
        """The task a reset names (:meth:`for_reset`) and the environment that plays it (its
        variant at the task's knob setting)."""
        task = self.for_reset(env, split, index, seed)
        return task, self.variant(env, task.knobs)

    def preview(self, env: ServedEnv, split: str) -> list[Task]:
        """What ``/tasks`` lists: the first tasks of the split (``num_tasks`` counts all)."""
        return self.task_range(env, split, 0, MAX_TASKS_PER_ANSWER)

    def _base(self, split: Any) -> int:
        if split not in SPLITS:
            raise TaskError(f"unknown split {split!r}: the splits are {', '.join(SPLITS)}")
        return SPLITS[split]


def _settings_size(settings: list[KnobSetting]) -> int:
    """About what a list of settings costs kept (its tuples, names and values)."""
    return sys.getsizeof(settings) + sum(200 * len(setting) + 64 for setting in settings)


def variant(env: ServedEnv, knobs: KnobSetting) -> ServedEnv:
    """``env`` at a knob setting: its source with the changed knobs' literals replaced by
    :func:`spade_core.knobs.apply_values` (the one way a variant at knob values is made:
    the designer's and the adaptive pool's too, so the source is byte for byte theirs);
    ``env`` itself for the setting as written. Raises :class:`TaskError` for a setting the
    declarations do not allow (never one :class:`TaskCatalog` lists)."""
    if not knobs:
        return env
    try:
        declared = read_knobs(env.source, env.metadata.class_name)
        source = apply_values(env.source, declared, dict(knobs))
    except (KnobDeclarationError, KnobValueError) as exc:
        raise TaskError(f"{env.id} cannot be played at {dict(knobs)}: {exc}") from None
    return dataclasses.replace(env, source=source, knobs=knobs)


__all__ = ["MAX_KNOB_SETTINGS", "MAX_TASKS_PER_ANSWER", "SEEDS_PER_SETTING", "SPLITS", "TEST_SEED_BASE", "Task", "TaskCatalog", "TaskError", "variant"]
