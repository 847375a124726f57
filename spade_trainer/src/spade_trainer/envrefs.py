"""An environment named by a run: a seed or a stored environment, at a knob setting.

``NAME[:KNOB=VALUE,KNOB=VALUE]``, for instance ``higher_lower`` (the seed as written) or
``higher_lower:CANDIDATES=15,GUESSES=4``: the name is looked up as ``spade show`` looks it
up (seeds first, then a store: :func:`spade_core.app.catalog.resolve`), the setting is read
leniently and checked strictly against the class's ``KNOBS`` declarations
(:func:`spade_core.knobs.parse_values`, :func:`~spade_core.knobs.check_values`) and
written into the source literal by literal (:func:`~spade_core.knobs.apply_values`), as a
parameter edit would be. This is how a run's starting pool (``pool``) and the environment
its learning curve measures (``learning.target``) are named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from spade_core.metadata import EnvMetadata
    from spade_core.plugins import SpadePlugins
    from spade_core.store import EnvStore

    from .rollout import PlayableEnv


@dataclass(frozen=True)
class EnvRef:
    """A name and the knob values to change (empty: the environment as written)."""

    name: str
    setting: str = ""

    @classmethod
    def parse(cls, text: str) -> EnvRef:
        name, _, setting = str(text).strip().partition(":")
        if not name.strip():
            raise ConfigError(f"{text!r}: name an environment, e.g. higher_lower or higher_lower:CANDIDATES=15")
        return cls(name.strip(), setting.strip())

    def __str__(self) -> str:
        return f"{self.name}:{self.setting}" if self.setting else self.name


@dataclass(frozen=True)
class ResolvedEnv:
    """What a reference names: the metadata and source to store or play (the knob setting
    applied, recorded as a parameter edit of ``parent``), and where it came from."""

    ref: EnvRef
    metadata: EnvMetadata
    source: str
    #: ``seed`` or ``store``.
    kind: str
    #: The environment as written (its id), when a knob setting changed it.
    parent: str | None = None
    #: The changed knob values.
    values: dict[str, Any] | None = None


def variant_name(name: str, values: dict[str, Any]) -> str:
    """The stored name of ``name`` at a knob setting: ``higher_lower.candidates15.guesses4``."""
    import re

    parts = [re.sub(r"[^A-Za-z0-9_]", "_", f"{k.lower()}{v}") for k, v in sorted(values.items())]
    return ".".join([name, *parts])


def resolve_env(ref: EnvRef | str, plugins: SpadePlugins, store: EnvStore) -> ResolvedEnv:
    """Look ``ref`` up (seeds first, then ``store``) and apply its knob setting;
    :class:`ConfigError` naming what is wrong (no such environment, a setting the
    declarations refuse)."""
    from spade_core.app.catalog import resolve
    from spade_core.errors import EnvNotFound
    from spade_core.knobs import KnobDeclarationError, KnobValueError, apply_values, parse_values, read_knobs
    from spade_core.metadata import EnvEdit

    ref = EnvRef.parse(ref) if isinstance(ref, str) else ref
    try:
        entry = resolve(ref.name, plugins, store)
    except EnvNotFound as exc:
        raise ConfigError(str(exc)) from None
    meta, source = entry.metadata, entry.source(store)
    if not ref.setting:
        return ResolvedEnv(ref, meta, source, entry.kind)
    try:
        knobs = read_knobs(source, meta.class_name)
        wanted = parse_values(ref.setting.replace(",", ", "), knobs)
        if not wanted:
            raise KnobValueError(f"no knob of {meta.name} in {ref.setting!r} (declared: "
                                 f"{', '.join(k.name for k in knobs.knobs) or 'none'})")
        child = apply_values(source, knobs, wanted)
    except (KnobDeclarationError, KnobValueError) as exc:
        raise ConfigError(f"{ref}: {exc}") from None
    current = knobs.values()
    values = {k: v for k, v in wanted.items() if current.get(k) != v}
    if not values:
        return ResolvedEnv(ref, meta, source, entry.kind)
    data = meta.model_dump(mode="json", exclude={"id", "code_hash", "stats", "validation", "created_at",
                                                 "updated_at", "edit", "hint", "status"})
    data.update(name=variant_name(meta.name, values), version=1, parent_ids=[meta.id],
                edit=EnvEdit(kind="parameter", parent_id=meta.id, values=values,
                             previous={k: current[k] for k in values}).model_dump(mode="json"))
    from spade_core.metadata import EnvMetadata

    return ResolvedEnv(ref, EnvMetadata.model_validate(data), child, entry.kind, meta.id, values)


def playable(env: ResolvedEnv, plugins: SpadePlugins, *, env_id: str | None = None,
             max_turns: int | None = None) -> PlayableEnv:
    """``env`` as the rollout engine plays it (its domain's allowed modules, its turn limit
    capped at ``max_turns``)."""
    from .rollout import PlayableEnv

    meta = env.metadata
    turns = meta.max_turns if max_turns is None else min(meta.max_turns, max_turns)
    return PlayableEnv(env_id=env_id or meta.id, source=env.source, domain=meta.domain, skill=meta.skill,
                       action_format=meta.action_format,
                       allowed_modules=frozenset(plugins.domain(meta.domain).allowed_modules),
                       class_name=meta.class_name, max_turns=turns)


def seed_playable(ref: str, *, env_id: str | None = None) -> PlayableEnv:
    """A seed environment (at a knob setting) of the installed plugins, playable: for
    benchmarks and tests, which run trusted seed code in-process."""
    from spade_core.plugins import get_plugins
    from spade_core.store import EnvStore

    plugins = get_plugins()
    with EnvStore("sqlite://") as empty:
        env = resolve_env(ref, plugins, empty)
    if env.kind != "seed":
        raise ConfigError(f"{ref!r} is not a seed environment")
    return playable(env, plugins, env_id=env_id)


__all__ = ["EnvRef", "ResolvedEnv", "playable", "resolve_env", "seed_playable", "variant_name"]
