"""What a domain plugin contributes: skills, a prompt spec, seed environments, sandbox
helper modules, fuzz strategies and evaluation suites.

Domains are registered through the ``spade_register_domains`` hook. Everything heavy
(hypothesis strategies, evaluation suites) is behind a zero-argument callable so that
listing domains stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .names import NAME_RE, ActionFormat

__all__ = ["PRELUDE_ATTRIBUTE", "ActionFormat", "Domain", "EvalSuite", "SeedEnv", "domain_for_source"]


@dataclass(frozen=True)
class SeedEnv:
    """A hand-written environment shipped by a plugin (trusted code).

    Registered with Gymnasium as ``spade/<name>-v<version>``.
    """

    name: str
    skill: str
    path: Path
    description: str = ""
    max_turns: int = 25
    difficulty: float | None = None
    version: int = 1
    class_name: str | None = None

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"seed environment name {self.name!r} is not a valid environment name")

    @property
    def id(self) -> str:
        return f"{self.name}-v{self.version}"

    @property
    def gym_id(self) -> str:
        return f"spade/{self.id}"

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class EvalSuite:
    """A named evaluation suite: ``run(**options)`` returns a JSON-serialisable result."""

    name: str
    description: str
    run: Callable[..., Any]


@dataclass(frozen=True)
class Domain:
    """One domain of environments (games, tool use, ...)."""

    name: str
    description: str
    skills: tuple[str, ...]
    #: The designer's instructions for this domain: format, rules, an example.
    prompt_spec: str
    action_format: ActionFormat = ActionFormat.boxed
    seed_envs: tuple[SeedEnv, ...] = ()
    #: Modules (beyond the sandbox's standard allow-list) this domain's code may import.
    #: Applies to this domain's environments only.
    allowed_modules: frozenset[str] = frozenset()
    #: Returns a hypothesis ``SearchStrategy[str]`` of plausible actions (imported lazily).
    fuzz_strategy: Callable[[], Any] | None = None
    eval_suites: Mapping[str, EvalSuite] = field(default_factory=dict)
    #: Action text that means "give up / no-op" for degenerate-reward probes.
    garbage_actions: tuple[str, ...] = ("", "hello", "\\boxed{}", "\\boxed{asdf qwerty}")
    #: Range of the rewards this domain's environments give, where an environment does
    #: not declare its own (a class attribute ``reward_range``); the validator enforces it.
    reward_range: tuple[float, float] = (0.0, 1.0)

    def seed(self, name: str) -> SeedEnv:
        for s in self.seed_envs:
            if s.name == name or s.id == name:
                return s
        raise KeyError(f"domain {self.name!r} has no seed environment {name!r}")


#: Attribute of a domain helper module listing the names its environments may use without
#: importing them (``spade_sandbox.prelude`` binds them in the sandbox).
PRELUDE_ATTRIBUTE = "SANDBOX_PRELUDE"


def domain_for_source(source: str, domains: Iterable[Domain]) -> Domain | None:
    """The domain whose helper modules provide a base class that ``source`` subclasses
    without defining or importing it (a reference tool-use environment subclassing
    ``ToolUseBaseEnv``), or ``None`` when no domain does or the source does not parse.

    Imports each domain's allowed modules (trusted plugin code) to read their
    :data:`PRELUDE_ATTRIBUTE`; the first domain, in the order given, that provides one of
    the free base names wins.
    """
    import ast
    import importlib

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
    free = {
        b.id
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        for b in node.bases
        if isinstance(b, ast.Name) and b.id not in bound
    }
    if not free:
        return None
    for domain in domains:
        for module in sorted(domain.allowed_modules):
            if module.endswith(".*"):
                continue
            try:
                provided = getattr(importlib.import_module(module), PRELUDE_ATTRIBUTE, ())
            except Exception:  # a broken helper module is the plugin's problem, reported elsewhere
                continue
            if free & set(provided):
                return domain
    return None
