"""Which environments a server offers: a selection of the one catalog
(:class:`spade_core.app.catalog.Catalog`, the plugins' seeds and the store's environments),
resolved once at start-up (or on first use for the whole registry), and what each session
needs to open one.

A :class:`ServedEnv` is everything the session layer needs: the code, where it may run
(seeds are trusted plugin code, store environments are untrusted), the domain's allowed
modules and the metadata clients see. Everything here reads the one catalog; nothing
resolves an id or reads the store on its own.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from spade_core.app.catalog import Catalog, CatalogEntry

from spade_core.errors import EnvNotFound
from spade_core.metadata import ActionFormat, EnvMetadata, EnvStatus

from .errors import UnknownEnv
from .kept import KeptEnvs, source_size


@dataclass(frozen=True)
class ServedEnv:
    """One environment a server offers."""

    kind: Literal["store", "seed"]
    metadata: EnvMetadata
    source: str
    allowed_modules: tuple[str, ...]
    #: The knob setting this variant plays (:func:`spade_serve.tasks.variant`): the knobs
    #: whose literals its source has rewritten. Empty: the environment as written.
    knobs: tuple[tuple[str, Any], ...] = ()

    @property
    def id(self) -> str:
        return self.metadata.id

    @property
    def group_id(self) -> str:
        """What sessions that may share a worker have in common: the id, and the knob
        setting of a variant (its code differs, so its sessions need workers of their own)."""
        if not self.knobs:
            return self.metadata.id
        return self.metadata.id + "[" + ",".join(f"{k}={v!r}" for k, v in self.knobs) + "]"

    @property
    def uses_tools(self) -> bool:
        return self.metadata.action_format == ActionFormat.tool_call

    def summary(self) -> dict[str, Any]:
        """The row of ``GET /envs`` (and the answer of ``GET /envs/<id>``)."""
        return summary_of(self.kind, self.metadata)


def summary_of(kind: Literal["store", "seed"], m: EnvMetadata) -> dict[str, Any]:
    """The ``GET /envs`` row of an environment, from its metadata alone (the listing of a
    whole registry reads no code)."""
    return {
        "id": m.id,
        "kind": kind,
        "name": m.name,
        "version": m.version,
        "domain": m.domain,
        "skill": m.skill,
        "description": m.description,
        "max_turns": m.max_turns,
        "action_format": m.action_format.value,
        "reward_range": list(m.reward_range),
    }


def served_env(entry: CatalogEntry, catalog: Catalog) -> ServedEnv:
    """The :class:`ServedEnv` of an entry of ``catalog`` (reads its code now)."""
    return ServedEnv(entry.kind, entry.metadata, catalog.source(entry), catalog.allowed_modules(entry))


#: Reads the registry's admitted environments for the listing: ``(domain, skill, after,
#: limit)`` -> at most ``limit`` of them, of that domain and skill when given, past the id
#: ``after`` in the store's order (:meth:`spade_core.store.EnvStore.find`).
RegistryReader = Callable[[str | None, str | None, str | None, int], list[EnvMetadata]]
class EnvCatalog:
    """The environments of one server.

    ``entries`` are resolved up front; ``lookup`` (the whole-registry mode) resolves any
    other admitted id on first use and keeps what it resolved in ``kept``, the server's one
    budget of what it keeps for clients (:class:`spade_serve.kept.KeptEnvs`: least recently
    used dropped first, read from the store again when next named; an open session keeps
    its own), and ``registry`` reads the admitted environments a page at a time for ``GET
    /envs`` (:mod:`spade_serve.listing`). Thread-safe: lookups run in the server's call
    threads.
    """

    def __init__(self, entries: Iterable[ServedEnv], *, lookup: Callable[[str], ServedEnv] | None = None,
                 registry: RegistryReader | None = None, kept: KeptEnvs | None = None) -> None:
        self._entries = {e.id: e for e in entries}
        self._listed = list(self._entries)
        #: What this server keeps for clients (this catalog's resolved environments, the
        #: Task API's settings and variants): one budget.
        self.kept = kept if kept is not None else KeptEnvs()
        self._lookup = lookup
        self.registry = registry if lookup is not None else None
        self._lock = threading.Lock()
        if not self._entries and lookup is None:
            raise UnknownEnv("no environment to serve: name ids, a --domain, or --all")
        #: What a listing cursor is bound to: the environments listed up front, in order,
        #: and whether the registry follows them (:mod:`spade_serve.listing`).
        self.fingerprint = hashlib.sha256(
            "\n".join([str(self.whole_registry), *self._listed]).encode()
        ).hexdigest()[:16]

    @property
    def whole_registry(self) -> bool:
        return self._lookup is not None

    def listed(self) -> list[ServedEnv]:
        """The environments resolved up front, in the order served: the ids named at
        start, a domain's, then (whole registry) every seed. A whole registry's store
        environments follow them in ``GET /envs`` (``registry``)."""
        return [self._entries[i] for i in self._listed]

    @property
    def default(self) -> ServedEnv | None:
        """The environment routes without an id use: the only one served, else none."""
        if len(self._listed) == 1 and self._lookup is None:
            return self._entries[self._listed[0]]
        return None

    def get(self, env_id: str) -> ServedEnv:
        """The served environment ``env_id`` (``name-vN``, ``name`` or ``spade/<id>``);
        :class:`UnknownEnv` otherwise."""
        ref = env_id.removeprefix("spade/")
        with self._lock:
            hit = self._entries.get(ref)
            if hit is None:
                hit = next((e for e in self._entries.values() if e.metadata.name == ref), None)
        if hit is None:
            hit = self.kept.get(("resolved", ref))  # type: ignore[assignment]
        if hit is not None:
            return hit
        if self._lookup is None:
            shown = ", ".join(self._listed[:8]) + (" ..." if len(self._listed) > 8 else "")
            raise UnknownEnv(f"this server does not serve {env_id!r} (it serves: {shown})", env_id=env_id)
        found = self._lookup(ref)  # a name is read from the store each time: its latest version
        return self.kept.keep(("resolved", found.id), found, source_size(found.source))


def build_catalog(
    catalog: Catalog,
    *,
    ids: Iterable[str] = (),
    domain: str | None = None,
    whole_registry: bool = False,
    kept: KeptEnvs | None = None,
) -> EnvCatalog:
    """What ``spade serve`` serves of ``catalog``: named ids (any status, as ``spade play``
    takes them), every admitted environment and seed of ``domain``, and with
    ``whole_registry`` every admitted one (the store's resolved on first use: a registry
    of 100,000 environments is not read at start-up), kept in ``kept`` (default: a budget of
    :data:`spade_serve.kept.MAX_ENTRIES` entries and :data:`spade_serve.kept.MAX_BYTES` bytes).

    Raises :class:`UnknownEnv` naming an id that resolves nowhere, or a domain with
    nothing admitted.
    """
    entries: list[ServedEnv] = []
    for ref in ids:
        try:
            entries.append(served_env(catalog.resolve(ref), catalog))
        except EnvNotFound as exc:
            raise UnknownEnv(str(exc), env_id=ref) from None
    if domain is not None:
        found = catalog.seeds(domain=domain) + catalog.stored(domain=domain, status=EnvStatus.admitted)
        if not found:
            raise UnknownEnv(f"domain {domain!r} has no admitted environment or seed to serve", domain=domain)
        entries.extend(served_env(e, catalog) for e in found)
    if not whole_registry:
        return EnvCatalog(entries, kept=kept)
    entries.extend(served_env(e, catalog) for e in catalog.seeds())

    def lookup(ref: str) -> ServedEnv:
        try:
            entry = catalog.resolve(ref, seeds=False)  # every seed is listed up front
        except EnvNotFound:
            raise UnknownEnv(f"no admitted environment {ref!r} in the registry", env_id=ref) from None
        if entry.metadata.status != EnvStatus.admitted:
            raise UnknownEnv(f"{entry.id} is {entry.metadata.status.value}, not admitted: it is not served", env_id=ref)
        return served_env(entry, catalog)

    def registry(of_domain: str | None, of_skill: str | None, after: str | None, limit: int) -> list[EnvMetadata]:
        found = catalog.stored(domain=of_domain, skill=of_skill, status=EnvStatus.admitted, after=after, limit=limit)
        return [e.metadata for e in found]

    return EnvCatalog(entries, lookup=lookup, registry=registry, kept=kept)


__all__ = ["EnvCatalog", "RegistryReader", "ServedEnv", "build_catalog", "served_env", "summary_of"]
