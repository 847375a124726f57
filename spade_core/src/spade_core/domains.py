"""What a domain plugin contributes: skills, a prompt spec, seed environments, sandbox
helper modules, fuzz strategies and evaluation suites.

Domains are registered through the ``spade_register_domains`` hook. Everything heavy
(hypothesis strategies, evaluation suites) is behind a zero-argument callable so that
listing domains stays cheap.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .names import NAME_RE, ActionFormat

__all__ = [
    "PRELUDE_ATTRIBUTE",
    "ActionFormat",
    "DesignGuide",
    "Domain",
    "EvalSuite",
    "Mistake",
    "SeedEnv",
    "domain_for_source",
    "domain_problems",
    "seed_problems",
]


#: SeedEnv's fields, in the order its constructor takes them positionally.
SEED_FIELDS = ("name", "skill", "path", "description", "max_turns", "difficulty", "version", "class_name", "hint")
_MISSING: Any = object()


@dataclass(frozen=True, init=False)
class SeedEnv:
    """A hand-written environment shipped by a plugin (trusted code).

    Registered with Gymnasium as ``spade/<name>-v<version>``. Construction never raises:
    a plugin's mistakes (a bad value, a misspelt or unknown keyword, a missing field) are
    kept and reported, seed by seed, when the plugin set loads (:func:`seed_problems`), so
    one bad seed never takes its plugin, or any other, down with it.
    """

    name: str
    skill: str
    path: Path
    description: str = ""
    max_turns: int = 25
    difficulty: float | None = None
    version: int = 1
    class_name: str | None = None
    #: A hand-written privileged hint (1-3 sentences, never the answer), used where a hint
    #: is used (the hinted plays that measure regret, the served metadata) instead of one
    #: the designer writes.
    hint: str | None = None
    #: Keywords the constructor did not take, and required fields not given: reported by
    #: :func:`seed_problems`.
    unknown: Mapping[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    missing: tuple[str, ...] = field(default=(), init=False, compare=False, repr=False)

    def __init__(
        self,
        name: str = _MISSING,
        skill: str = _MISSING,
        path: Path | str = _MISSING,
        description: str = "",
        max_turns: int = 25,
        difficulty: float | None = None,
        version: int = 1,
        class_name: str | None = None,
        hint: str | None = None,
        **unknown: Any,
    ) -> None:
        given = {"name": name, "skill": skill, "path": path}
        missing = tuple(k for k, v in given.items() if v is _MISSING)
        if isinstance(path, str):
            path = Path(path)
        values = {**{k: (None if v is _MISSING else v) for k, v in given.items()}, "path": None if path is _MISSING else path,
                  "description": description, "max_turns": max_turns, "difficulty": difficulty, "version": version,
                  "class_name": class_name, "hint": hint, "unknown": dict(unknown), "missing": missing}
        for key, value in values.items():
            object.__setattr__(self, key, value)

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
class DesignGuide:
    """How a domain shapes its designer (``spade_register_design_guides``): its own example
    environments for the full design prompt and its own code scaffold for the compact one.

    * ``examples``: complete environment sources, good ones of the domain, shown to the
      designer under the domain's instructions (in place of nothing: the full prompt has
      only ``Domain.prompt_spec`` and the memory's examples without it);
    * ``scaffold``: the start of an environment file the compact prompt prefills and the
      model continues, usually a base class holding the domain's plumbing and ending with
      ``class ``, so the model writes only the game (its own scaffold instead of the
      action format's built-in one, or a scaffold where the format has none); with it
      ``scaffold_task`` says, in the compact prompt, what the model must write after it.
    """

    domain: str
    examples: tuple[str, ...] = ()
    scaffold: str | None = None
    scaffold_task: str | None = None


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


@dataclass(frozen=True)
class Mistake:
    """One mistake in what a plugin registered: the field, the value given and what is
    allowed (``spade plugins --check`` prints it in one line with the plugin and the seed)."""

    field: str
    value: Any
    allowed: str

    def __str__(self) -> str:
        shown = repr(self.value)
        if len(shown) > 200:  # the end of a long value (a path's file name) is kept
            shown = shown[:60] + "..." + shown[-137:]
        return f"{self.field} = {shown}: {self.allowed}"


#: What the metadata model accepts (``spade_core._metadata_models.EnvMetadata``), checked
#: here without pydantic: plugins are checked on ``import spade_core``'s path.
_MAX_TURNS = (1, 10_000)
_MAX_NAME = 120
_MAX_DESCRIPTION = 10_000
_MAX_HINT = 4_000
_TOP_CLASS = re.compile(r"^class\s+([A-Za-z_]\w*)", re.MULTILINE)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def seed_problems(seed: SeedEnv, skills: Iterable[str]) -> list[Mistake]:
    """Every mistake in ``seed`` as a seed of a domain with ``skills``: its fields against
    what the metadata allows, the keywords :class:`SeedEnv` does not take, the file (exists,
    UTF-8) and the class (``class_name`` defined at the file's top level, else a class whose
    name ends in ``Env``). The class is found by reading the file, not running it."""
    found = [Mistake(name, None, "required (SeedEnv needs name, skill and path)") for name in seed.missing]
    for keyword, value in seed.unknown.items():
        close = difflib.get_close_matches(keyword, SEED_FIELDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        found.append(Mistake(keyword, value, f"not a SeedEnv field{hint}; its fields: {', '.join(SEED_FIELDS)}"))
    if "name" not in seed.missing and not (isinstance(seed.name, str) and NAME_RE.match(seed.name)
                                           and len(seed.name) <= _MAX_NAME):
        found.append(Mistake("name", seed.name, f"a letter, then letters, digits, '_' or '.', at most {_MAX_NAME} "
                                                "characters (it becomes the Gymnasium id spade/<name>-v<version>)"))
    skills = tuple(skills)
    if "skill" not in seed.missing and seed.skill not in skills:
        found.append(Mistake("skill", seed.skill, f"one of the domain's skills: {', '.join(map(str, skills)) or 'none'}"))
    low, high = _MAX_TURNS
    if not (type(seed.max_turns) is int and low <= seed.max_turns <= high):
        found.append(Mistake("max_turns", seed.max_turns, f"a whole number from {low} to {high}"))
    if seed.difficulty is not None and not (_number(seed.difficulty) and 0.0 <= seed.difficulty <= 1.0):
        found.append(Mistake("difficulty", seed.difficulty, "a number from 0 (easiest) to 1 (hardest), or None"))
    if not (type(seed.version) is int and seed.version >= 1):
        found.append(Mistake("version", seed.version, "a whole number from 1"))
    if not (isinstance(seed.description, str) and len(seed.description) <= _MAX_DESCRIPTION):
        found.append(Mistake("description", seed.description, f"text of at most {_MAX_DESCRIPTION} characters"))
    if seed.hint is not None and not (isinstance(seed.hint, str) and seed.hint.strip() and len(seed.hint) <= _MAX_HINT):
        found.append(Mistake("hint", seed.hint, f"None, or non-empty text of at most {_MAX_HINT} characters"))
    if seed.class_name is not None and not (isinstance(seed.class_name, str) and seed.class_name.isidentifier()):
        found.append(Mistake("class_name", seed.class_name, "None, or the name of the environment class"))
    elif "path" not in seed.missing:
        found.extend(_file_problems(seed))
    return found


def _file_problems(seed: SeedEnv) -> list[Mistake]:
    if not isinstance(seed.path, Path):
        return [Mistake("path", seed.path, "the path of the seed's source file (a pathlib.Path or str)")]
    try:
        text = seed.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [Mistake("path", str(seed.path), "an existing file: no such file (is it in the package's data files?)")]
    except IsADirectoryError:
        return [Mistake("path", str(seed.path), "the seed's source file, not a folder")]
    except UnicodeDecodeError as exc:
        return [Mistake("path", str(seed.path), f"a UTF-8 text file (byte {exc.start} is not UTF-8)")]
    except OSError as exc:
        return [Mistake("path", str(seed.path), f"a readable file ({exc.strerror})")]
    classes = _TOP_CLASS.findall(text)
    if seed.class_name is not None:
        if seed.class_name not in classes:
            return [Mistake("class_name", seed.class_name,
                            f"a class defined at the top level of {seed.path.name}: {', '.join(classes) or 'it defines none'}")]
    elif not any(c.endswith("Env") for c in classes):
        return [Mistake("class_name", None, f"{seed.path.name} defines no top-level class whose name ends in 'Env' "
                                            f"({', '.join(classes) or 'no class at all'}): name it, or set class_name")]
    return []


def domain_problems(domain: Domain) -> list[Mistake]:
    """Mistakes in a domain's own fields that make every one of its seeds unusable (its
    seeds are checked by :func:`seed_problems`)."""
    found = []
    if not (isinstance(domain.name, str) and 1 <= len(domain.name) <= 64):
        found.append(Mistake("name", domain.name, "text of 1 to 64 characters"))
    if not isinstance(domain.action_format, ActionFormat):
        try:
            ActionFormat(domain.action_format)
        except ValueError:
            found.append(Mistake("action_format", domain.action_format,
                                 "one of " + ", ".join(f"ActionFormat.{f.name}" for f in ActionFormat)))
    if isinstance(domain.skills, str) or not all(isinstance(s, str) and s for s in domain.skills) or not domain.skills:
        found.append(Mistake("skills", domain.skills, "a non-empty tuple of skill names"))
    low_high = tuple(domain.reward_range) if isinstance(domain.reward_range, tuple | list) else ()
    if not (len(low_high) == 2 and all(map(_number, low_high)) and low_high[0] < low_high[1]):
        found.append(Mistake("reward_range", domain.reward_range, "(low, high): two finite numbers, low < high"))
    return found


#: Attribute of a domain helper module listing the names its environments may use without
#: importing them (``spade_sandbox.prelude`` binds them in the sandbox).
PRELUDE_ATTRIBUTE = "SANDBOX_PRELUDE"


def domain_for_source(source: str, domains: Iterable[Domain]) -> Domain | None:
    """The domain a source written for a domain plugin belongs to, or ``None`` when no
    domain claims it or the source does not parse. In order:

    * a domain that allows (``allowed_modules``) a module the source imports that is not
      part of the standard library (``from spade_regex.helpers import compile_safe``: the
      domain whose helpers these are); a helper package ``pkg.*`` covers its submodules;
    * a domain whose helper modules provide a base class that ``source`` subclasses
      without defining or importing it (a reference tool-use environment subclassing
      ``ToolUseBaseEnv``): each domain's allowed modules are imported (trusted plugin
      code) to read their :data:`PRELUDE_ATTRIBUTE`.

    The first domain, in the order given, that matches wins. This is how ``spade validate
    FILE``, ``spade fuzz FILE`` and the pytest fixture find the helpers of a file written
    for a plugin without ``--domain``.
    """
    import ast
    import importlib
    import sys

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    domains = list(domains)
    imported = {
        name
        for node in ast.walk(tree)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import)
            # ``from pkg import sub`` may import the module ``pkg.sub``
            else [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        )
        if name.partition(".")[0] not in sys.stdlib_module_names
    }
    for domain in domains:
        for module in domain.allowed_modules:
            package = module[:-2] if module.endswith(".*") else None
            if any(name == module or (package is not None and (name == package or name.startswith(package + ".")))
                   for name in imported):
                return domain
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
