r"""Preparing one raw item into a store-ready ``(source, EnvMetadata)`` pair (:func:`prepare`).

A row holds the code in a column named ``code`` / ``env_code`` / ``source`` / ``env_source``
/ ``program`` and metadata either as flat columns (``name`` / ``env_name`` / ``env_id``,
``skill``, ``description``, ``domain``, ``difficulty``, ``max_turns``...), possibly nested in
a ``metadata`` object, or as a full :class:`~spade_core.metadata.EnvMetadata` document (with
``schema_version``) in a ``metadata`` column (what ``spade export`` writes).

Every row is judged on its own: missing code, a syntax error, no class ending in ``Env``,
metadata that fails validation, a row too large or nested too deeply becomes an
:class:`ItemError` naming the row and the reason.

A row's own status is the data's word, not the user's: unless ``ImportOptions.trust``
(``spade import --trust``) or ``ImportOptions.status`` (``--status``, which replaces it;
``admitted`` is then validated by the CLI), a row recorded as ``admitted`` is read as a
``candidate`` with a note. :func:`prepare` applies this rule, for every path (files,
folders, ``hf:`` datasets) alike.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import EnvLoadError, SpadeError, field_errors
from ..metadata import EnvMetadata, EnvStatus, code_hash
from ..source import env_class_node, parse_source
from .dataset_files import MAX_SOURCE_BYTES, JSONSyntaxError, load_json, nesting_error
from .import_sources import RawItem

if TYPE_CHECKING:
    from ..domains import Domain

#: Column names that may hold the environment's code, in order of preference.
CODE_KEYS = ("code", "env_code", "source", "env_source", "program")


#: Column names that may hold the environment's name, in order of preference.
NAME_KEYS = ("name", "env_name", "env_id", "id")


SKILL_KEYS = ("skill", "skill_name", "category")


DESCRIPTION_KEYS = ("description", "env_description", "desc")


DOMAIN_KEYS = ("domain", "setting")


#: Flat columns copied into the metadata as they are (validated by the model).
PASSTHROUGH_KEYS = (
    "difficulty",
    "max_turns",
    "reward_range",
    "action_format",
    "designer_model",
    "hint",
    "tags",
    "parent_ids",
    "nondeterministic",
    "status",
)


#: Skill given to environments whose row names none and no ``--skill`` was passed.
DEFAULT_SKILL = "general"


#: The note of a row whose recorded ``admitted`` was read as ``candidate`` (see the module docstring).
UNTRUSTED_STATUS_NOTE = (
    "recorded as admitted in the dataset, read as a candidate (--status admitted validates it; "
    "--trust keeps the dataset's status)"
)


class ItemError(SpadeError):
    """One item of an import batch is unusable; ``origin`` names it (file, file:line)."""

    def __init__(self, origin: str, reason: str) -> None:
        super().__init__(f"{origin}: {reason}")
        self.origin = origin
        self.reason = reason


@dataclass(frozen=True)
class ImportOptions:
    """Values given on the command line; when set they apply to every item."""

    domain: str | None = None
    skill: str | None = None
    #: Replaces every row's status (``admitted`` is validated by the CLI unless ``trust``).
    status: EnvStatus | None = None
    #: Take the statuses the data records as they are (``spade import --trust``); without
    #: it (and without ``status``) a row recorded as ``admitted`` is read as a ``candidate``.
    trust: bool = False
    #: Action format (``"boxed"``, ``"tool_call"``) -> the one installed domain that uses
    #: it: the domain of a ``.py`` file whose metadata names none is inferred from its code.
    format_domains: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedItem:
    """A validated item: the code, its metadata, and how the name was obtained."""

    origin: str
    source: str
    metadata: EnvMetadata
    #: ``True`` when the name came from the class name rather than the data.
    name_derived: bool
    #: Columns of the row that were not understood (reported, not stored).
    ignored: tuple[str, ...] = ()
    #: What preparing decided that the user should hear (an inferred domain).
    notes: tuple[str, ...] = ()


def sanitize_name(raw: str) -> str:
    """Turn any label into a valid environment name (``NAME_RE``), keeping it readable.

    ``spade/foo-v3`` -> ``foo``; ``tower-of-hanoi 3`` -> ``tower_of_hanoi_3``; a label that
    does not start with a letter gets the prefix ``env_``.
    """
    s = raw.strip()
    s = re.sub(r"^spade/", "", s)
    s = re.sub(r"-v\d+$", "", s)
    s = re.sub(r"[^A-Za-z0-9_.]+", "_", s).strip("_.")
    if not s:
        s = "env"
    elif not s[0].isalpha():
        s = "env_" + s
    return s[:120]


def name_from_class(class_name: str) -> str:
    """``TowerOfHanoiEnv`` -> ``TowerOfHanoi`` (a bare ``Env`` stays ``Env``)."""
    stem = class_name[: -len("Env")] if class_name.endswith("Env") and len(class_name) > 3 else class_name
    return sanitize_name(stem)


def _first(row: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for k in keys:
        v = row.get(k)
        if v is not None and v != "":
            return k, v
    return None, None


def _validation_reason(exc: ValidationError) -> str:
    return "invalid metadata: " + "; ".join(field_errors(exc, root="metadata"))


def prepare(item: RawItem, options: ImportOptions = ImportOptions()) -> PreparedItem:
    """Validate one item; raise :class:`ItemError` with the reason when it is unusable.

    Whatever the row holds, the outcome is a :class:`PreparedItem` or an :class:`ItemError`:
    an unexpected failure on odd data is that row's failure, never the batch's. The status
    it gets follows the one rule of the module docstring (:func:`_status_rule`)."""
    try:
        prepared = _prepare(item, options)
    except ItemError:
        raise
    except RecursionError:
        raise ItemError(item.origin, "the row is nested too deeply to read") from None
    except Exception as exc:  # odd data a check above missed: still this row's outcome only
        raise ItemError(item.origin, f"unreadable row ({type(exc).__name__}: {exc})") from None
    prepared = _status_rule(prepared, options)
    if item.notes:
        prepared = replace(prepared, notes=item.notes + prepared.notes)
    return prepared


def _status_rule(item: PreparedItem, options: ImportOptions) -> PreparedItem:
    """The one place that decides which status a row's own record may give it: a dataset
    is someone else's word, so without ``trust`` (and without ``status``, which replaced
    the row's status already) a recorded ``admitted`` becomes ``candidate``, with a note.
    Every import path (``.py`` + sidecar, JSONL, Parquet, folders, ``hf:``) goes through here."""
    if options.status is not None or options.trust or item.metadata.status is not EnvStatus.admitted:
        return item
    meta = item.metadata.model_copy(update={"status": EnvStatus.candidate})
    return replace(item, metadata=meta, notes=(*item.notes, UNTRUSTED_STATUS_NOTE))


def _prepare(item: RawItem, options: ImportOptions) -> PreparedItem:
    if item.error is not None:
        raise ItemError(item.origin, item.error)
    row = item.row
    if not isinstance(row, Mapping):
        raise ItemError(item.origin, f"a row must be an object, got {type(row).__name__}")
    deep = nesting_error(row)
    if deep is not None:
        raise ItemError(item.origin, f"the row is {deep}")
    code_key, code = _first(row, CODE_KEYS)
    if code is None:
        raise ItemError(item.origin, f"no code (looked for a column named {', '.join(CODE_KEYS)})")
    if not isinstance(code, str):
        raise ItemError(item.origin, f"column {code_key!r} holds {type(code).__name__}, expected the source text")
    size = len(code.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:
        raise ItemError(item.origin, f"code is {size} bytes (limit {MAX_SOURCE_BYTES})")
    try:
        class_node = env_class_node(parse_source(code))  # the only parse of this code
    except EnvLoadError as exc:
        raise ItemError(item.origin, str(exc).removeprefix("<env>: ")) from None
    class_name = class_node.name
    docstring = " ".join((ast.get_docstring(class_node) or "").split())[:2000]

    nested = row.get("metadata")
    if nested is not None:
        if isinstance(nested, str):
            try:
                nested = load_json(nested)
            except JSONSyntaxError as exc:
                raise ItemError(item.origin, f"column 'metadata' is not valid JSON: {exc}") from None
            except ValueError as exc:
                raise ItemError(item.origin, f"column 'metadata' is JSON {exc}") from None
        if not isinstance(nested, dict):
            raise ItemError(item.origin, "column 'metadata' must hold a JSON object")
        if "schema_version" in nested:  # our own document (an export)
            return _prepare_full(item.origin, code, nested, options)
        # Someone else's metadata object: its keys count as flat columns; the row's own
        # columns win where both name the same thing.
        row = {**nested, **{k: v for k, v in row.items() if k != "metadata"}}
    if "schema_version" in row:  # a full metadata document flattened into the row (sidecar)
        meta = {k: v for k, v in row.items() if k not in CODE_KEYS}
        return _prepare_full(item.origin, code, meta, options)
    return _prepare_flat(
        item.origin, code, code_key or "code", class_name, docstring, row, options,
        from_file=item.from_file, class_node=class_node, infer_domain=item.infer_domain,
    )


def _apply_options(data: dict[str, Any], options: ImportOptions) -> None:
    if options.domain is not None:
        data["domain"] = options.domain
    if options.skill is not None:
        data["skill"] = options.skill
    if options.status is not None:
        data["status"] = options.status


def _prepare_full(
    origin: str, code: str, data: dict[str, Any], options: ImportOptions
) -> PreparedItem:
    """A complete metadata document (an export): validated strictly and kept as it is
    (nothing renamed or filled in), so export -> import reproduces the record."""
    data = dict(data)
    recorded = data.get("code_hash")
    actual = code_hash(code)
    if recorded and recorded != actual:
        raise ItemError(origin, "code_hash in the metadata does not match the code (was the code edited?)")
    data["code_hash"] = actual
    _apply_options(data, options)
    try:
        meta = EnvMetadata.model_validate(data)
    except ValidationError as exc:
        raise ItemError(origin, _validation_reason(exc)) from None
    return PreparedItem(origin, code, meta, name_derived=False)


def _prepare_flat(
    origin: str,
    code: str,
    code_key: str,
    class_name: str,
    docstring: str,
    row: Mapping[str, Any],
    options: ImportOptions,
    *,
    from_file: bool = False,
    class_node: ast.ClassDef | None = None,
    infer_domain: bool = False,
) -> PreparedItem:
    """Flat columns of a published pool: aliases resolved, the name sanitised or derived."""
    used = {code_key}
    notes: list[str] = []
    name_key, raw_name = _first(row, NAME_KEYS)
    if raw_name is not None:
        used.add(name_key or "")
        name = sanitize_name(str(raw_name))
        derived = False
    else:
        name = name_from_class(class_name)
        derived = True
    data: dict[str, Any] = {"name": name, "class_name": class_name, "code_hash": code_hash(code)}

    for target, keys in (("domain", DOMAIN_KEYS), ("skill", SKILL_KEYS), ("description", DESCRIPTION_KEYS)):
        key, value = _first(row, keys)
        if key is not None:
            used.add(key)
            data[target] = value
    for key in PASSTHROUGH_KEYS:
        if key in row and row[key] is not None:
            used.add(key)
            data[key] = row[key]
    _apply_options(data, options)
    if "domain" not in data and (from_file or infer_domain):
        data["domain"] = _infer_domain(origin, code, class_node, options, from_file=from_file)
        notes.append(f"domain {data['domain']!r} inferred from the code")
    if "domain" not in data:
        raise ItemError(origin, "no domain: the data has no 'domain' column; pass --domain")
    data.setdefault("skill", DEFAULT_SKILL)
    if "reward_range" not in data:
        found = _reward_range(code, class_name, str(data["domain"]))
        if found is not None:
            data["reward_range"] = found
    if "action_format" not in data:
        domain = _installed_domain(str(data["domain"]))
        if domain is not None:  # a tool-use environment reads tool calls, not boxed commands
            data["action_format"] = domain.action_format
    if not data.get("description"):
        data["description"] = docstring
    try:
        meta = EnvMetadata.model_validate(data)
    except ValidationError as exc:
        raise ItemError(origin, _validation_reason(exc)) from None
    ignored = tuple(sorted(k for k in row if k not in used and k not in NAME_KEYS))
    return PreparedItem(origin, code, meta, name_derived=derived, ignored=ignored, notes=tuple(notes))


def _reward_range(code: str, class_name: str | None, domain: str) -> tuple[float, float] | None:
    """The range an item without one in its data gets (what the validator enforces and
    ``gymnasium.make`` checks): the class attribute ``reward_range`` the code declares,
    else its domain's (tool use: [-0.1, 1]); ``None`` leaves the metadata's default."""
    from ..env import declared_reward_range

    try:
        declared = declared_reward_range(code, class_name)
    except (SyntaxError, ValueError, SpadeError):
        declared = None  # a malformed declaration is the validator's to report
    if declared is not None:
        return declared
    found = _installed_domain(domain)
    return tuple(found.reward_range) if found is not None else None  # type: ignore[return-value]


def _installed_domain(name: str) -> Domain | None:
    """The installed domain plugin called ``name`` (``None``: none, or plugins failed to load)."""
    from ..plugins import get_plugins

    try:
        return get_plugins().domains().get(name)
    except SpadeError:
        return None


#: Base classes that make an environment a tool-use one (the reference base and ours).
TOOL_BASES = frozenset({"ToolUseBaseEnv", "ToolEnv"})


def infer_action_format(code: str, class_node: ast.ClassDef | None = None) -> str | None:
    r"""The action format an environment's code reads: ``"tool_call"`` when its class
    subclasses a tool-use base or the code parses ``<tool_call>`` tags, ``"boxed"`` when
    it reads ``oxed{...}`` commands; ``None`` when the code says neither."""
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", None) for b in (class_node.bases if class_node else ())}
    if bases & TOOL_BASES or "<tool_call>" in code:
        return "tool_call"
    if "boxed{" in code:
        return "boxed"
    return None


def _infer_domain(
    origin: str, code: str, class_node: ast.ClassDef | None, options: ImportOptions, *, from_file: bool = True
) -> str:
    stem = origin.rsplit(".", 1)[0]
    unnamed = f"no metadata file ({stem}.json) names one" if from_file else "the data has no 'domain' column"
    fmt = infer_action_format(code, class_node)
    if fmt is None:
        raise ItemError(
            origin,
            f"no domain: {unnamed}, and the code neither reads "
            "\\boxed{...} commands nor subclasses a tool-use base; pass --domain",
        )
    what = "tool calls" if fmt == "tool_call" else "\\boxed{...} commands"
    domain = options.format_domains.get(fmt)
    if domain is None:
        raise ItemError(
            origin,
            f"no domain: {unnamed}, and no single installed domain "
            f"takes {what}, which the code reads; pass --domain",
        )
    return domain
