"""The checks a plugin's domains and seeds get when the plugin set loads
(:meth:`SpadePlugins.problems <spade_core.plugins.SpadePlugins.problems>`): each seed's own
mistakes (:func:`spade_core.domains.seed_problems`), its domain's
(:func:`~spade_core.domains.domain_problems`), and seed names two seeds take. A bad seed or
domain is left out and becomes one :class:`PluginProblem`; the rest registers.

Standard library only: plugins load on ``import spade_core``'s path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .domains import Domain, SeedEnv, domain_problems, seed_problems
from .names import NAME_RE

__all__ = ["PluginProblem", "checked_seeds", "refuse_shared_names"]


@dataclass(frozen=True)
class PluginProblem:
    """One thing a plugin registered wrongly, as ``spade list`` and ``spade plugins
    --check`` report it, in one line (``str()``): the plugin, the domain and seed where
    there is one, and what is wrong (each field, the value given and what is allowed)."""

    plugin: str
    message: str
    domain: str | None = None
    #: The seed's name as written (``#N``, its place in ``seed_envs``, when it has none).
    seed: str | None = None
    #: The Gymnasium id the refused seed would have had; ``gymnasium.make`` of it raises
    #: this problem (``None``: the seed has no valid id).
    gym_id: str | None = None

    def __str__(self) -> str:
        where = [f"plugin {self.plugin!r}"]
        if self.domain is not None:
            where.append(f"domain {self.domain!r}")
        if self.seed is not None:
            where.append(f"seed {self.seed!r}")
        return f"{', '.join(where)}: {self.message}"

    def to_json(self) -> dict[str, str | None]:
        return {"plugin": self.plugin, "domain": self.domain, "seed": self.seed, "gym_id": self.gym_id,
                "message": self.message, "line": str(self)}


def _gym_id(seed: Any) -> str | None:
    """``spade/<name>-v<version>`` of a seed whose name and version make a valid id."""
    if isinstance(seed, SeedEnv) and isinstance(seed.name, str) and NAME_RE.match(seed.name) \
            and type(seed.version) is int and seed.version >= 1:
        return seed.gym_id
    return None


def _seed_label(seed: Any, index: int) -> str:
    name = getattr(seed, "name", None)
    return name if isinstance(name, str) and name else f"#{index + 1}"


def checked_seeds(plugin: str, domain: Domain, problems: list[PluginProblem]) -> list[SeedEnv]:
    """The seeds of ``domain`` without mistakes; a problem for each other one (and for the
    domain itself when its own fields are wrong: then none is kept)."""
    try:
        seeds = list(domain.seed_envs)
    except TypeError:
        problems.append(PluginProblem(plugin, f"seed_envs = {domain.seed_envs!r}: a tuple of SeedEnv",
                                      domain=str(domain.name)))
        return []
    wrong = domain_problems(domain)
    if wrong:
        problems.append(PluginProblem(
            plugin, "; ".join(map(str, wrong)) + f" (the domain is not registered, nor its {len(seeds)} seed(s))",
            domain=str(domain.name)))
        for index, seed in enumerate(seeds):
            if (gym_id := _gym_id(seed)) is not None:
                problems.append(PluginProblem(plugin, "not registered: its domain is wrong (see the domain's line)",
                                              domain=str(domain.name), seed=_seed_label(seed, index), gym_id=gym_id))
        return []
    good = []
    for index, seed in enumerate(seeds):
        if not isinstance(seed, SeedEnv):
            problems.append(PluginProblem(plugin, f"seed_envs[{index}] is a {type(seed).__name__}, not a SeedEnv",
                                          domain=domain.name, seed=f"#{index + 1}"))
            continue
        mistakes = seed_problems(seed, domain.skills)
        if mistakes:
            problems.append(PluginProblem(plugin, "; ".join(map(str, mistakes)), domain=domain.name,
                                          seed=_seed_label(seed, index), gym_id=_gym_id(seed)))
        else:
            good.append(seed)
    return good


def refuse_shared_names(owner: dict[str, str], kept: dict[str, list[SeedEnv]], problems: list[PluginProblem]) -> None:
    """Take out of ``kept`` every seed whose name another seed has too (in its domain or
    another), with a problem naming every holder."""
    holders: dict[str, list[str]] = {}
    for name, seeds in kept.items():
        for seed in seeds:
            holders.setdefault(seed.name, []).append(name)
    for seed_name, domains in holders.items():
        if len(domains) < 2:
            continue
        where = ", ".join(sorted(f"plugin {owner[d]!r} domain {d!r}" for d in domains))
        for name in dict.fromkeys(domains):
            for seed in [s for s in kept[name] if s.name == seed_name]:
                problems.append(PluginProblem(
                    owner[name], f"name = {seed_name!r}: a name no other seed has; {len(domains)} seeds have it "
                                 f"({where}), so none of them is registered", domain=name, seed=seed_name,
                    gym_id=seed.gym_id))
            kept[name] = [s for s in kept[name] if s.name != seed_name]
