"""The dependency rules of ``docs/architecture.md``, checked against the source statically.

Every ``import`` of every module of every package (module level, inside functions, under
``TYPE_CHECKING``: a type import is a dependency too) is parsed with :mod:`ast`, never
executed. Two rules:

* a package imports only the packages its row of the table allows, and none of the
  libraries the row forbids;
* no module reaches itself through imports (no cycle between modules). The cycles still
  present are named in :data:`KNOWN_CYCLES` (none today; a broken one must be deleted
  from it); any other cycle, or a module joining a known one, fails.
* no module imports another module's private name (``from .worker import _Fatal``): what
  another module needs gets an exported name. The ones still present are named in
  :data:`KNOWN_PRIVATE_IMPORTS`.
* no module imports another package's private module (``spade_core._metadata_models``,
  ``from spade_sandbox import _fast``), statically or through ``importlib.import_module``
  of a literal name: a private module is its own package's business.
* the sandbox settings have one type (one ``class SandboxSettings`` in the packages) and
  pools have one maker (``SandboxPool(`` is called only by ``spade_sandbox.launcher``).
* the serving edge (``spade_serve``, ``spade_ui``) opens environments only through
  ``spade_sandbox.opener.open_env``, from ``spade_serve.env_factory`` alone.
* sizes: no module over :data:`MAX_MODULE_LINES` lines and no function over
  :data:`MAX_FUNCTION_LINES` beyond the known ones (:data:`KNOWN_LONG_MODULES`,
  :data:`KNOWN_LONG_FUNCTIONS`, being split), which may only shrink, and at most
  :data:`MAX_LONG_MODULES` modules over the limit.

The checker itself is tested on throwaway package trees, so a rule it cannot see fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"

#: Cycles present when this test was written, in other engineers' files; each is listed
#: with why it exists and is to be removed (its xfail test then passes: delete the entry).
KNOWN_CYCLES: dict[str, frozenset[str]] = {}

#: ``importer -> (module, private name)`` still present, each to be given an exported name.
KNOWN_PRIVATE_IMPORTS: frozenset[tuple[str, str, str]] = frozenset()


# --- the checker ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """One imported module, as written in ``module`` at ``line``."""

    module: str
    target: str
    line: int


@dataclass
class SourceTree:
    """The modules of a set of packages: dotted name -> file; compiled extensions by name."""

    modules: dict[str, Path]
    extensions: set[str]

    @classmethod
    def scan(cls, package_dirs: Iterable[Path]) -> SourceTree:
        modules: dict[str, Path] = {}
        extensions: set[str] = set()
        for package in package_dirs:
            for file in sorted(package.rglob("*.py")):
                parts = list(file.relative_to(package.parent).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                modules[".".join(parts)] = file
            for file in sorted(package.rglob("*.so")):
                parts = list(file.relative_to(package.parent).parts)
                parts[-1] = parts[-1].split(".", 1)[0]  # name.cpython-311-....so
                extensions.add(".".join(parts))
        return cls(modules, extensions)

    def imports(self, module: str) -> list[Import]:
        """Every import statement of ``module``, relative ones resolved; ``from p import n``
        names the module ``p.n`` when that is a module, else ``p``."""
        file = self.modules[module]
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        package = module if file.name == "__init__.py" else module.rpartition(".")[0]
        found: list[Import] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.extend(Import(module, alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    known = full in self.modules or full in self.extensions
                    found.append(Import(module, full if known else source, node.lineno))
        return found

    def private_imports(self, module: str) -> list[tuple[str, str, int]]:
        """``(module, name, line)`` for each ``from module import _name`` of ``module`` where
        ``_name`` is no module itself (a private module of a package is its own business)
        and ``module`` is another module of this tree."""
        file = self.modules[module]
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        package = module if file.name == "__init__.py" else module.rpartition(".")[0]
        found: list[tuple[str, str, int]] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")
                source = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                if f"{source}.{name}" in self.modules or f"{source}.{name}" in self.extensions:
                    continue
                owner = self.resolve(source)
                if owner is not None and owner != module:
                    found.append((owner, name, node.lineno))
        return found

    def private_module_imports(self, module: str) -> list[tuple[str, int]]:
        """``(target, line)`` for each import of ``module`` that names a private module
        (a dotted part starting with one ``_``) of another top-level package: the import
        statements of :meth:`imports` and ``importlib.import_module("literal")`` calls."""
        own = module.split(".")[0]
        file = self.modules[module]
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        targets = [(imp.target, imp.line) for imp in self.imports(module)]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and not node.args[0].value.startswith(".")  # relative: its own package
            ):
                targets.append((node.args[0].value, node.lineno))
        found = []
        for target, line in targets:
            parts = target.split(".")
            if parts[0] != own and any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
                found.append((target, line))
        return found

    def resolve(self, target: str) -> str | None:
        """The module of this tree that importing ``target`` runs last (its longest known
        prefix), or ``None`` for a module outside the tree (or a compiled extension)."""
        name = target
        while name:
            if name in self.extensions:
                return None
            if name in self.modules:
                return name
            name = name.rpartition(".")[0]
        return None

    def graph(self) -> dict[str, set[str]]:
        edges: dict[str, set[str]] = {module: set() for module in self.modules}
        for module in self.modules:
            for imp in self.imports(module):
                target = self.resolve(imp.target)
                if target is not None and target != module:
                    edges[module].add(target)
        return edges


def cycles(edges: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


@dataclass(frozen=True)
class Rule:
    package: str
    may_import: frozenset[str]
    never_imports: frozenset[str]


def read_rules(markdown: str) -> dict[str, Rule]:
    """The table under ``### Dependency rules``: package | may import | never imports."""
    section = markdown.split("### Dependency rules", 1)
    if len(section) != 2:
        raise AssertionError(f"{DOC.name} has no '### Dependency rules' section")
    rules: dict[str, Rule] = {}
    for line in section[1].splitlines():
        if not line.startswith("|"):
            if rules:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] == "package" or set(cells[0]) <= {"-"}:
            continue
        names = [re.findall(r"[A-Za-z_][\w.]*", cell) for cell in cells]
        package = names[0][0]
        rules[package] = Rule(package, frozenset(names[1]), frozenset(names[2]))
    if not rules:
        raise AssertionError(f"the '### Dependency rules' table of {DOC.name} has no rows")
    return rules


def row_of(module: str, rules: Mapping[str, Rule]) -> str | None:
    """The row a module belongs to: the longest row name that is the module or a package
    above it (``spade_core.app.cli`` -> ``spade_core.app``, ``spade_core.store`` ->
    ``spade_core``), or ``None`` for a module outside the table (a library)."""
    name = module
    while name:
        if name in rules:
            return name
        name = name.rpartition(".")[0]
    return None


def violations(tree: SourceTree, rules: Mapping[str, Rule], package: str | None = None) -> list[str]:
    """``file:line: a imports b`` for every import that a package's rule does not allow (of
    one package, or all); the file is named from its package folder (``pkg/mod.py``)."""
    found: list[str] = []
    for module in sorted(tree.modules):
        own = row_of(module, rules)
        if package is not None and own != package:
            continue
        rule = rules[own]
        file = tree.modules[module]
        shown = file.relative_to(file.parents[module.count(".") + (file.name == "__init__.py")]).as_posix()
        for imp in tree.imports(module):
            top = row_of(imp.target, rules)
            if top is None:
                top = imp.target.split(".")[0]
                allowed = top not in rule.never_imports
            else:
                allowed = top == own or top in rule.may_import
            if not allowed:
                found.append(f"{shown}:{imp.line}: {module} imports {imp.target}")
    return found


def package_dirs(root: Path) -> list[Path]:
    """Every importable package of the monorepo: ``<dist>/src/<pkg>``, ``plugins/*/src/<pkg>``,
    ``integrations/*/src/<pkg>``."""
    sources = [*root.glob("*/src"), *root.glob("plugins/*/src"), *root.glob("integrations/*/src")]
    return sorted(pkg for src in sources for pkg in src.iterdir() if (pkg / "__init__.py").is_file())


# --- the rules, on this repository ----------------------------------------------------------

RULES = read_rules(DOC.read_text(encoding="utf-8"))
PACKAGES = package_dirs(ROOT)
TREE = SourceTree.scan(PACKAGES)


def test_every_package_of_the_repository_has_a_row_in_the_table() -> None:
    missing = sorted({pkg.name for pkg in PACKAGES} - set(RULES))
    assert not missing, f"add a row for {missing} to the dependency table of {DOC.name}"
    assert {"spade_core", "spade_sandbox", "spade_designer", "spade_trainer"} <= {pkg.name for pkg in PACKAGES}


def test_an_integration_may_import_no_spade_package() -> None:
    """``integrations/*`` run under other frameworks' environments, where SPADE cannot be
    installed (verifiers 0.4's mcp pin): their rows allow no package of the table."""
    integrations = [pkg.name for pkg in PACKAGES if pkg.parents[2].name == "integrations"]
    assert "spade_verifiers" in integrations
    for name in integrations:
        assert RULES[name].may_import == frozenset(), name


def test_the_table_points_one_way() -> None:
    """A package allowed to import another is never imported by it (no cycle in the table)."""
    allowed = {name: set(rule.may_import) for name, rule in RULES.items()}
    assert cycles(allowed) == []
    assert RULES["spade_core"].may_import == frozenset()


@pytest.mark.parametrize("package", sorted(RULES))
def test_a_package_imports_only_what_its_row_allows(package: str) -> None:
    found = violations(TREE, RULES, package)
    assert not found, "imports against the dependency table:\n" + "\n".join(found)


def test_no_import_cycle_between_modules_beyond_the_known_ones() -> None:
    unknown = [sorted(c) for c in cycles(TREE.graph()) if not any(c <= known for known in KNOWN_CYCLES.values())]
    assert not unknown, "modules that import each other (directly or through others):\n" + "\n".join(
        " <-> ".join(c) for c in unknown
    )


def test_no_module_imports_another_modules_private_names_beyond_the_known_ones() -> None:
    found = {
        (module, owner, name): line for module in TREE.modules for owner, name, line in TREE.private_imports(module)
    }
    unknown = sorted(
        f"{TREE.modules[m].name}:{line}: {m} imports {o}.{n}"
        for (m, o, n), line in found.items()
        if (m, o, n) not in KNOWN_PRIVATE_IMPORTS
    )
    assert not unknown, "private names imported from another module (export them):\n" + "\n".join(unknown)
    gone = sorted(KNOWN_PRIVATE_IMPORTS - set(found))
    assert not gone, f"no longer imported, delete from KNOWN_PRIVATE_IMPORTS: {gone}"


def test_no_module_imports_another_packages_private_module() -> None:
    found = sorted(
        f"{TREE.modules[m].relative_to(ROOT).as_posix()}:{line}: {m} imports {target}"
        for m in TREE.modules
        for target, line in TREE.private_module_imports(m)
    )
    assert not found, "private modules of another package imported (export what is needed):\n" + "\n".join(found)


def test_the_sandbox_settings_have_one_type_and_pools_one_maker() -> None:
    classes, makers = [], []
    for module, file in TREE.modules.items():
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name == "SandboxSettings":
                classes.append(module)
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "SandboxPool":
                makers.append(module)
    assert classes == ["spade_core.sandbox_settings"]
    assert sorted(set(makers)) == ["spade_sandbox.launcher"], "make pools with spade_sandbox.launcher.SandboxLauncher"


#: What builds or runs an environment by itself, past the one opener.
OPENING_ON_ITS_OWN = frozenset({"SandboxedEnv", "SandboxPool", "load_trusted_class", "instantiate", "ReferenceEnvAdapter"})


def calls_in(module: str, names: Iterable[str]) -> list[str]:
    """``module:line: name(`` for every call of one of ``names`` (a name or an attribute) in ``module``."""
    wanted = set(names)
    found = []
    for node in ast.walk(ast.parse(TREE.modules[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name in wanted:
                found.append(f"{module}:{node.lineno}: {name}(")
    return found


def test_the_serving_edge_opens_environments_only_through_the_opener() -> None:
    """``spade serve``, the ui and the TRL adapter open every instance through
    ``spade_sandbox.opener.open_env``, called in one place (``spade_serve.env_factory``, the
    factory a server is handed): none builds a sandboxed environment or a pool, or loads a
    trusted class and runs it in its own process."""
    edge = sorted(m for m in TREE.modules if m.split(".")[0] in ("spade_serve", "spade_ui"))
    assert "spade_serve.env_factory" in edge
    found = [hit for module in edge for hit in calls_in(module, OPENING_ON_ITS_OWN)]
    assert not found, "open environments through spade_serve.env_factory.SandboxEnvFactory:\n" + "\n".join(found)
    openers = sorted({hit.split(":")[0] for module in edge for hit in calls_in(module, {"open_env"})})
    assert openers == ["spade_serve.env_factory"]


#: The trainer's modules that read what ``spade_designer`` hands over (its records).
DESIGN_SEAM = ("spade_trainer.designer_stage", "spade_trainer.edit_stage")


def test_the_designer_hands_the_trainer_typed_records() -> None:
    """The trainer reads the designer's ``CandidateResult`` and ``Attempt`` through their
    types: no ``getattr`` probing in the seam's modules, and every function of them that takes
    a candidate is annotated with the designer's record or the trainer's ``DesignedCandidate``,
    never ``Any``."""
    probing = [hit for module in DESIGN_SEAM for hit in calls_in(module, {"getattr"})]
    assert not probing, "read the designer's records through their types:\n" + "\n".join(probing)
    untyped = []
    for module in DESIGN_SEAM:
        for node in ast.walk(ast.parse(TREE.modules[module].read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                for arg in node.args.args:
                    if arg.arg in ("c", "candidate", "attempt") and (
                            arg.annotation is None or ast.unparse(arg.annotation) == "Any"):
                        untyped.append(f"{module}:{node.lineno}: {node.name}({arg.arg})")
    assert not untyped, "annotate the designer's records:\n" + "\n".join(untyped)


def test_every_known_cycle_is_still_there() -> None:
    """A known cycle that was broken is deleted from KNOWN_CYCLES (empty today), so the list
    says what is left, as KNOWN_PRIVATE_IMPORTS does."""
    present = cycles(TREE.graph())
    gone = sorted(name for name, known in KNOWN_CYCLES.items() if not any(c & known for c in present))
    assert not gone, f"no longer a cycle, delete from KNOWN_CYCLES: {gone}"


# --- sizes -----------------------------------------------------------------------------------

#: A module has one reason to change: at most this many lines.
MAX_MODULE_LINES = 500
#: At most this many lines in a function (``end_lineno - lineno``, nested ones counted apart).
MAX_FUNCTION_LINES = 150
#: At most this many modules over :data:`MAX_MODULE_LINES`, the known ones included.
MAX_LONG_MODULES = 10

#: Modules still over :data:`MAX_MODULE_LINES`, being split, with the lines each had when it
#: was listed: one may only shrink (lower its number when it does), and one that is down to
#: the limit is deleted from here.
KNOWN_LONG_MODULES: dict[str, int] = {
    "spade_designer.designer": 724,
    "spade_trainer.report": 545,
    "spade_trainer.selfplay": 709,
}
#: Functions still over :data:`MAX_FUNCTION_LINES` (``module:qualified name`` -> lines),
#: likewise (none today).
KNOWN_LONG_FUNCTIONS: dict[str, int] = {}


def long_modules(tree: SourceTree, limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    """Every module of ``tree`` over ``limit`` lines, with its lines."""
    sizes = {module: len(file.read_text(encoding="utf-8").splitlines()) for module, file in tree.modules.items()}
    return {module: n for module, n in sizes.items() if n > limit}


def long_functions(tree: SourceTree, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """Every function of ``tree`` (methods and nested functions included) over ``limit``
    lines, as ``module:qualified name`` -> lines."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, module: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef) and (lines := child.end_lineno - child.lineno) > limit:
                    found[f"{module}:{name}"] = lines
                visit(child, module, f"{name}.")
            else:
                visit(child, module, prefix)

    for module, file in tree.modules.items():
        visit(ast.parse(file.read_text(encoding="utf-8"), filename=str(file)), module, "")
    return found


def test_no_module_is_over_the_size_limit_beyond_the_known_ones_and_none_grows() -> None:
    over = long_modules(TREE)
    unknown = sorted(f"{m} ({n} lines)" for m, n in over.items() if m not in KNOWN_LONG_MODULES)
    assert not unknown, f"split by job, {MAX_MODULE_LINES} lines at most each: {unknown}"
    grown = sorted(f"{m} ({n} lines, listed at {KNOWN_LONG_MODULES[m]})" for m, n in over.items()
                   if n > KNOWN_LONG_MODULES.get(m, n))
    assert not grown, f"a module being split may only shrink: {grown}"
    assert len(over) <= MAX_LONG_MODULES, sorted(over)


def test_every_known_long_module_is_still_over_the_limit() -> None:
    """A module split under the limit is deleted from KNOWN_LONG_MODULES, so the list says
    what is left, as KNOWN_CYCLES does."""
    over = long_modules(TREE)
    gone = sorted(m for m in KNOWN_LONG_MODULES if m not in over)
    assert not gone, f"{MAX_MODULE_LINES} lines at most now, delete from KNOWN_LONG_MODULES: {gone}"
    assert len(KNOWN_LONG_MODULES) <= MAX_LONG_MODULES


def test_no_function_is_over_the_size_limit_beyond_the_known_ones_and_none_grows() -> None:
    found = long_functions(TREE)
    unknown = sorted(f"{f} ({n} lines)" for f, n in found.items() if f not in KNOWN_LONG_FUNCTIONS)
    assert not unknown, f"split, {MAX_FUNCTION_LINES} lines at most each: {unknown}"
    grown = sorted(f for f, n in found.items() if n > KNOWN_LONG_FUNCTIONS.get(f, n))
    assert not grown, f"a function being split may only shrink: {grown}"
    gone = sorted(f for f in KNOWN_LONG_FUNCTIONS if f not in found)
    assert not gone, f"{MAX_FUNCTION_LINES} lines at most now, delete from KNOWN_LONG_FUNCTIONS: {gone}"


# --- the checker, on throwaway trees --------------------------------------------------------


def _write(root: Path, files: Mapping[str, str]) -> SourceTree:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return SourceTree.scan(sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()))


LAYERS = {
    "low": Rule("low", frozenset(), frozenset({"torch"})),
    "high": Rule("high", frozenset({"low"}), frozenset()),
}


def test_the_checker_sees_imports_inside_functions_and_under_type_checking(tmp_path: Path) -> None:
    tree = _write(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/a.py": "def f():\n    from high import b\n",
            "low/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import high.b\n",
            "low/d.py": "import torch.nn\n",
            "high/__init__.py": "",
            "high/b.py": "from low import a\nimport torch\n",
        },
    )
    found = violations(tree, LAYERS)
    assert found == [
        "low/a.py:2: low.a imports high.b",
        "low/c.py:3: low.c imports high.b",
        "low/d.py:1: low.d imports torch.nn",
    ]


def test_a_row_can_be_a_layer_inside_a_package(tmp_path: Path) -> None:
    """``low.app`` has its own row: ``low`` (the kernel) may not import it, by absolute or
    relative import, even though both live in one distribution; ``high`` may import both."""
    rules = {
        **LAYERS,
        "low.app": Rule("low.app", frozenset({"low"}), frozenset()),
        "high": Rule("high", frozenset({"low", "low.app"}), frozenset()),
        "side": Rule("side", frozenset({"low"}), frozenset()),
    }
    tree = _write(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/k.py": "from .app import cli\n",
            "low/m.py": "def f():\n    import low.app.cli\n",
            "low/app/__init__.py": "",
            "low/app/cli.py": "from ..k import x\nfrom low import m\n",
            "high/__init__.py": "from low.app.cli import main\nfrom low.k import x\n",
            "side/__init__.py": "from low.app import cli\n",
        },
    )
    assert row_of("low.app.cli", rules) == "low.app"
    assert row_of("low.k", rules) == "low"
    assert row_of("numpy.linalg", rules) is None
    assert violations(tree, rules) == [
        "low/k.py:1: low.k imports low.app.cli",
        "low/m.py:2: low.m imports low.app.cli",
        "side/__init__.py:1: side imports low.app.cli",
    ]


def test_the_kernel_imports_no_application_module() -> None:
    """``spade_core.app`` is a row of its own above the kernel; the kernel's row allows
    nothing, so its modules reach the application layer by no import at all; the sandbox
    and the plugins stand on the kernel alone."""
    assert "spade_core.app" in RULES and RULES["spade_core.app"].may_import == {"spade_core"}
    kernel = [m for m in TREE.modules if row_of(m, RULES) == "spade_core"]
    assert "spade_core.registry" in kernel and "spade_core.app.cli" not in kernel
    reaching = sorted(
        f"{m} imports {imp.target}"
        for m in kernel
        for imp in TREE.imports(m)
        if row_of(imp.target, RULES) == "spade_core.app"
    )
    assert not reaching, "the kernel imports the application layer:\n" + "\n".join(reaching)
    for row in ("spade_sandbox", "spade_games", "spade_tooluse", "spade_reasoning_gym"):
        assert "spade_core.app" not in RULES[row].may_import, row


def test_the_checker_resolves_relative_imports_and_finds_a_cycle_through_them(tmp_path: Path) -> None:
    tree = _write(
        tmp_path,
        {
            "low/__init__.py": "from .x import X\n",
            "low/x.py": "X = 1\ndef f():\n    from .sub import y\n",
            "low/sub/__init__.py": "",
            "low/sub/y.py": "from .. import X\nfrom ..z import Z\nfrom . import _ext\n",
            "low/sub/_ext.cpython-311-x86_64-linux-gnu.so": "",
            "low/z.py": "Z = 2\n",
        },
    )
    graph = tree.graph()
    assert graph["low.sub.y"] == {"low", "low.z"}  # the extension is no module of the graph
    assert cycles(graph) == [frozenset({"low", "low.x", "low.sub.y"})]


def test_the_checker_finds_private_names_imported_from_another_module(tmp_path: Path) -> None:
    tree = _write(
        tmp_path,
        {
            "low/__init__.py": "from ._impl import Public\n",
            "low/_impl.py": "from .worker import _Fatal, Public as Public\n",
            "low/worker.py": "class _Fatal(Exception): ...\nclass Public: ...\n",
            "low/sub/__init__.py": "from .. import _impl\nfrom ..worker import __doc__\n",
            "low/own.py": "def _helper(): ...\ndef f():\n    from low.own import _helper\n",
            "low/ext.py": "from os import _exit\nfrom . import _fast\n",
            "low/_fast.cpython-311-x86_64-linux-gnu.so": "",
        },
    )
    found = {module: tree.private_imports(module) for module in tree.modules}
    # a private module, a dunder, the module's own name, a library's name and a compiled
    # extension are not reach-ins
    assert {m: f for m, f in found.items() if f} == {"low._impl": [("low.worker", "_Fatal", 1)]}


def test_the_checker_finds_private_modules_of_another_package(tmp_path: Path) -> None:
    tree = _write(
        tmp_path,
        {
            "low/__init__.py": "from ._hidden import X\n",
            "low/_hidden.py": "X = 1\n",
            "low/own.py": "from low._hidden import X\nimport importlib\nimportlib.import_module('low._hidden')\n",
            "high/__init__.py": "",
            "high/a.py": "from low._hidden import X\n",
            "high/b.py": "import low._hidden\n",
            "high/c.py": "from low import _hidden\n",
            "high/d.py": "import importlib\ndef f():\n    return importlib.import_module('low._hidden')\n",
            "high/e.py": "from low import X\nfrom . import _mine\nfrom low import __doc__\n"
            "import importlib\nimportlib.import_module('._mine', 'high')\n",
            "high/_mine.py": "",
        },
    )
    found = {m: tree.private_module_imports(m) for m in tree.modules}
    assert {m: f for m, f in found.items() if f} == {
        "high.a": [("low._hidden", 1)],
        "high.b": [("low._hidden", 1)],
        "high.c": [("low._hidden", 1)],
        "high.d": [("low._hidden", 3)],
    }


def test_the_size_checker_measures_modules_and_every_function_by_its_lines(tmp_path: Path) -> None:
    six = [f"x{i} = {i}" for i in range(6)]
    big = ["class C:", "    def m(self):", "        def inner():", *(" " * 12 + x for x in six), "        return inner",
           "", "", "async def g():", *(" " * 4 + x for x in six)]
    tree = _write(tmp_path, {"pkg/__init__.py": "", "pkg/small.py": "def f():\n    return 1\n",
                             "pkg/big.py": "\n".join(big) + "\n"})
    assert long_modules(tree, limit=5) == {"pkg.big": 19}
    assert long_functions(tree, limit=5) == {"pkg.big:C.m": 8, "pkg.big:C.m.inner": 6, "pkg.big:g": 6}
    assert long_functions(tree, limit=6) == {"pkg.big:C.m": 8}


def test_the_rules_are_read_from_the_table(tmp_path: Path) -> None:
    text = (
        "intro\n### Dependency rules\n\ntext\n\n| package | may import | never imports |\n|---|---|---|\n"
        "| `a` | — | torch, ray |\n| `b` | `a` | |\n\nafter\n| `c` | `a` | |\n"
    )
    assert read_rules(text) == {
        "a": Rule("a", frozenset(), frozenset({"torch", "ray"})),
        "b": Rule("b", frozenset({"a"}), frozenset()),
    }
    with pytest.raises(AssertionError, match="no '### Dependency rules' section"):
        read_rules("# nothing here\n")


def _reaches(edges: Mapping[int, set[int]], start: int) -> set[int]:
    seen: set[int] = set()
    todo = [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@given(st.dictionaries(st.integers(0, 12), st.sets(st.integers(0, 12), max_size=4), max_size=13))
def test_cycles_are_exactly_the_sets_of_nodes_that_reach_each_other(edges: dict[int, set[int]]) -> None:
    nodes = set(edges) | {n for targets in edges.values() for n in targets}
    graph = {node: edges.get(node, set()) - {node} for node in nodes}
    found = cycles(graph)
    member = {node: component for component in found for node in component}
    assert sum(len(c) for c in found) == len(member)  # disjoint
    for u in nodes:
        for v in nodes - {u}:
            mutual = v in _reaches(graph, u) and u in _reaches(graph, v)
            assert mutual == (u in member and v in member.get(u, ()))


def test_the_core_version_module_agrees_with_the_distribution() -> None:
    import tomllib

    from spade_core._version import __version__

    project = tomllib.loads((ROOT / "spade_core" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert __version__ == project["version"]
