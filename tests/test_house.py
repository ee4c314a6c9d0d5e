"""The package's shape stays as designed: no import circle, arrows only down the floors, no private name used across
modules, faces that show the contract.

Read from the source with `ast`, so nothing is imported to build the graph. Every import a reader sees makes an
arrow: at the top of a module, inside a function (a late import runs when the function does) and under `if
TYPE_CHECKING:` (a type checker follows it, and so does a reader). The one exception is a face's `if TYPE_CHECKING:`
imports of its own submodules, which repeat the face's table for type checkers: the face serves them lazily. A name
imported through a face (`from ..training import plan`) is an arrow to the module the face's table names
(`training.planner`). An import inside a function may load JAX, matplotlib, ipywidgets or another optional library;
the one late sibling is the answer key (`course.key`), which `course.answers.check` reaches only when called: the
grader's sandbox hides the key, and `import scalebook` must work there.

A private name (`_x`) is private to the module that defines it, in the package and in its tests: no module imports
one from another (`from .gradebook import _write_atomic`), reaches one on another module (`autograde._Key`,
`monkeypatch.setattr(autograde, "_execute", ...)`, `"scalebook.x._y"`) or on an object another module defines
(`model._mlp`). A helper two modules share has a public name in the module that owns it.

No module defines a module-level `__getattr__` except the faces, whose look-up is `scalebook.faces.face` serving one
table and one dated deprecation table. A module past `MAX_LINES` is a question for review, not a failure to split by
count (ARCHITECTURE.md, "split by idea"): it stays whole when `LONG` names the one idea it holds. Each check below is
first shown to fail on a small fixture.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import warnings
from pathlib import Path

import pytest

from scalebook import faces

PACKAGE = Path(__file__).resolve().parents[1] / "scalebook"
TESTS = Path(__file__).resolve().parent
MAX_LINES = 450
# Modules past MAX_LINES that a review kept whole: module → the one idea it holds (ARCHITECTURE.md, "split by idea").
LONG: dict[str, str] = {}
# The upper floor: the live lab (JAX) and the edges (matplotlib, ipywidgets, the command line, the grader).
UPPER = ("lab", "book", "plots", "widgets", "course", "cli", "notebooks")
# The faces: a package's `__init__.py` that readers import, served by `faces.face` from its table.
FACES = ("scalebook", "scalebook.hardware", "scalebook.training", "scalebook.inference",
         "scalebook.inference.serving", "scalebook.lab", "scalebook.book", "scalebook.cli",
         "scalebook.plots", "scalebook.widgets", "scalebook.course", "scalebook.course.grader")
# Packages whose `__init__.py` is code, not a face, and why.
NOT_FACES = {"scalebook.course.key": "the answer key's registry (`problem`, `get_problem`)",
             "scalebook.data": "the data files' loader (`load`)"}
# Siblings a function may import when called, and why.
LATE_SIBLINGS = {"key": "the answer key, absent inside the grader's sandbox"}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
PACKAGES = sorted(_name(p) for p in PACKAGE.rglob("__init__.py"))
# Every module of the package and of its tests, by the name an import uses (a test imports a helper by its bare
# name, `from fuzzing import ...`: tests/conftest.py puts every floor's folder on the path).
SOURCES = {**MODULES, **{p.stem: p for p in sorted(TESTS.rglob("*.py"))}}


def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _table(face: str) -> dict[str, str]:
    return faces.served(face)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool, tables: dict[str, dict[str, str]]) -> list[str]:
    """The package modules an `from ... import ...` statement loads (a name may be a submodule, or a name a face
    serves from the module its table names)."""
    if node.level == 0:
        return [node.module] if node.module and node.module.startswith("scalebook") else []
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    target = ".".join([*base, *(node.module.split(".") if node.module else [])])
    found = [target] if target in MODULES else []
    found += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
    found += [f"{target}.{tables[target][a.name]}" for a in node.names if a.name in tables.get(target, {})]
    return found


def _with_parents(target: str, importer: str) -> set[str]:
    """A module and the packages above it (loading a.b.c runs a.b's __init__), except the root package and the
    importer's own packages, which Python has already started to load."""
    parts, own = target.split("."), set(_packages_of(importer))
    return {".".join(parts[:i]) for i in range(2, len(parts) + 1)} - own


def _packages_of(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of `tree`, at the top, in a function or under `if TYPE_CHECKING:`, each with whether it
    sits under `if TYPE_CHECKING:`."""
    typing_only = {id(n) for block in ast.walk(tree) if _type_checking(block) for n in ast.walk(block)}
    return [(n, id(n) in typing_only) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _targets(module: str, node: ast.Import | ast.ImportFrom, tables: dict[str, dict[str, str]]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("scalebook.")]
    return _resolve(module, node, MODULES[module].name == "__init__.py", tables)


def _graph(trees: dict[str, ast.Module] | None = None) -> dict[str, set[str]]:
    """{module: the package modules it imports}, late and type-only imports included, a face's `if TYPE_CHECKING:`
    imports of its own submodules left out (the face serves them lazily)."""
    tables = {face: _table(face) for face in FACES}
    graph = {}
    for module, tree in (trees or {m: _tree(m) for m in MODULES}).items():
        edges = set()
        for node, typing_only in _imports(tree):
            for target in _targets(module, node, tables):
                if not (typing_only and module in FACES and target.startswith(f"{module}.")):
                    edges |= _with_parents(target, module)
        graph[module] = edges - {module}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one import cycle as a list of modules, or None (depth-first search, iterative colouring)."""
    colour, stack = {}, []

    def visit(node: str) -> list[str] | None:
        colour[node] = "grey"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if colour.get(nxt) == "grey":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in colour and (found := visit(nxt)):
                return found
        stack.pop()
        colour[node] = "black"
        return None

    for start in sorted(graph):
        if start not in colour and (found := visit(start)):
            return found
    return None


def _upper(module: str) -> bool:
    return module.split(".")[1] in UPPER if "." in module else False


def _upward(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """{ground module: the upper-floor modules it imports} (the root face, `scalebook`, is on neither floor)."""
    wrong = {m: sorted(t for t in targets if _upper(t)) for m, targets in graph.items() if "." in m and not _upper(m)}
    return {m: t for m, t in wrong.items() if t}


def _getattr_problems(module: str, tree: ast.Module) -> list[str]:
    """Why `tree` may not bind a module-level `__getattr__`: only a face may, and only as `face(...)` builds it."""
    binds = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__getattr__"]
    binds += [n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__getattr__" for target in n.targets for t in ast.walk(target))]
    if module not in FACES:
        return [f"{module} binds __getattr__ at line {n.lineno}: only a face may" for n in binds]
    built = [n for n in binds if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
             and getattr(n.value.func, "id", "") == "face"]
    return [] if binds and built == binds else [f"{module}: __getattr__ must be `__getattr__, __dir__ = face(...)`"]


def _declared(tree: ast.Module) -> dict[str, str]:
    """{name: module relative to the face} that a face's `if TYPE_CHECKING:` imports declare (`from . import x`:
    x → x; `from .hardware.chips import Chip`: Chip → hardware.chips)."""
    block = next((n for n in tree.body if _type_checking(n)), None)
    declared = {}
    for node in ast.walk(block) if block else ():
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                declared[alias.asname or alias.name] = node.module or alias.name
    return declared


def _face_disagreements(tree: ast.Module, table: dict[str, str], exported: list[str]) -> list[str]:
    """Where a face's table, its `__all__` and its `if TYPE_CHECKING:` imports disagree."""
    declared = _declared(tree)
    out = [f"__all__ is not the table: {sorted(set(exported) ^ set(table))}"] if list(exported) != list(table) else []
    out += [f"{n}: TYPE_CHECKING says {declared.get(n)!r}, the table {table.get(n)!r}"
            for n in sorted(set(declared) | set(table)) if declared.get(n) != table.get(n)
            and table.get(n) != f"{declared.get(n)}.{n}"]  # `from .lab import bench` declares "lab.bench"
    return out


def _deprecation_problems(face: object, deprecated: faces.Deprecations, version: str) -> list[str]:
    """Old names of the face's deprecation table `deprecated` that do not warn, name no removal release after
    `version`, or resolve to nothing."""
    out = []
    for name, (message, target, removal) in deprecated.items():
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", removal) or _release(removal) <= _release(version):
            out.append(f"{name}: removal release {removal!r} is not a release after {version}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(face, name, None)
        if not any(issubclass(w.category, DeprecationWarning) and removal in str(w.message) for w in caught):
            out.append(f"{name}: using it does not warn with its removal release")
        if value is None or not message:
            out.append(f"{name}: resolves to {value!r} (target {target!r}), message {message!r}")
    return out


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _through_a_face(module: str, tree: ast.Module, faces: dict[str, dict[str, str]]) -> list[str]:
    """Names `module` imports through a face rather than from the module that defines them (a face's submodule,
    `from .. import collectives`, is a module and may be imported so)."""
    out, is_package = [], MODULES.get(module, PACKAGE).name == "__init__.py"
    for node in (n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0):
        for face in (t for t in _resolve(module, node, is_package, {}) if t in faces):
            out += [f"line {node.lineno}: {a.name} (from {face}.{faces[face][a.name]})" for a in node.names
                    if faces[face].get(a.name, a.name) != a.name]
    return out


def _binds_module(dotted: str) -> bool:
    """Whether `import <dotted> as m` binds the module (a face that flattens a same-named function binds that)."""
    package, _, name = dotted.rpartition(".")
    importlib.import_module(dotted)
    return inspect.ismodule(getattr(sys.modules[package], name))


def _private(name: str) -> bool:
    """`_x` is private; a dunder (`__all__`) and IPython's display protocol (`_repr_html_`) are not."""
    return name.startswith("_") and not name.endswith("_")


def _source(module: str, node: ast.ImportFrom) -> str:
    """The module an `from ... import ...` statement of `module` reads from, absolute."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if SOURCES[module].name == "__init__.py" else module.split(".")[:-1]
    return ".".join([*base[: len(base) - (node.level - 1)], *([node.module] if node.module else [])])


def _bound_modules(module: str, tree: ast.Module) -> dict[str, str]:
    """{name: module} for each name `tree` binds to a module of the package or its tests (`import scalebook as sb`,
    `from ..grader import autograde`, `import fuzzing`)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in SOURCES or a.name.split(".")[0] == "scalebook":
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = _source(module, node)
            bound |= {a.asname or a.name: f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in SOURCES}
    return bound


def _owned(tree: ast.Module) -> set[str]:
    """The private names `tree` defines: functions, classes, assigned names and attributes it sets on `self`."""
    owned = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            owned.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                owned |= {t.id for t in ast.walk(target) if isinstance(t, ast.Name)}
                owned |= {t.attr for t in ast.walk(target) if isinstance(t, ast.Attribute)}
    return {name for name in owned if _private(name)}


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return [node.id, *parts] if isinstance(node, ast.Name) else None


_PRIVATE_PATH = re.compile(r"\b(?:sb|scalebook)(?:\.[A-Za-z]\w*)*\.(_\w*[A-Za-z0-9])\b")


def _private_reaches(module: str, tree: ast.Module, others: set[str]) -> list[str]:
    """Where `tree` (the module `module`) uses a private name of another module: imports it, reaches it on a module
    (`m._x`, `getattr(m, "_x")`, `monkeypatch.setattr(m, "_x", ...)`), names it in a string (`"scalebook.m._x"`, a
    program's text) or reaches it on an object when `others`, the private names other modules define, hold it and
    `tree` does not."""
    bound, own, out = _bound_modules(module, tree), _owned(tree), []

    def on_module(base: ast.AST, name: str, line: int) -> bool:
        path = _dotted(base)
        if path and path[0] in bound:
            out.append(f"line {line}: {'.'.join([bound[path[0]], *path[1:]])}.{name}")
            return True
        return False

    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (_source(module, node) in SOURCES
                                                 or _source(module, node).split(".")[0] == "scalebook"):
            out += [f"line {node.lineno}: from {_source(module, node)} import {a.name}" for a in node.names
                    if _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not on_module(node.value, node.attr, node.lineno) and node.attr in others - own \
                    and _dotted(node.value) not in (["self"], ["cls"]):
                out.append(f"line {node.lineno}: {ast.unparse(node)} (another module's {node.attr})")
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(name := node.args[1].value, str) and _private(name):
            if not on_module(node.args[0], name, node.lineno) and name in others - own:
                out.append(f"line {node.lineno}: {ast.unparse(node.func)}(..., {name!r}) (another module's {name})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            out += [f"line {node.lineno}: {found[0]!r} in a string" for found in _PRIVATE_PATH.finditer(node.value)]
    return sorted(out, key=lambda where: int(where.split()[1].rstrip(":")))


# --- each check fails on a fixture -------------------------------------------------------------------------------

def test_the_walker_finds_a_cycle_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_late_and_type_only_imports_are_arrows_but_a_face_s_own_type_checking_imports_are_not():
    trees = {"scalebook.units": ast.parse("def f():\n    from .plots.base import figure\n"),
             "scalebook.tables": ast.parse("if TYPE_CHECKING:\n    from .lab.bench import Sweep\n"),
             "scalebook.training": ast.parse("if TYPE_CHECKING:\n    from . import planner\n"
                                             "    from ..lab import bench\n"),
             "scalebook.svg": ast.parse("def f():\n    import scalebook.lab.xla\n")}
    graph = _graph(trees)
    assert graph["scalebook.units"] == {"scalebook.plots", "scalebook.plots.base"}
    assert graph["scalebook.tables"] == {"scalebook.lab", "scalebook.lab.bench"}
    assert graph["scalebook.training"] == {"scalebook.lab", "scalebook.lab.bench"}  # not its own planner
    assert graph["scalebook.svg"] == {"scalebook.lab", "scalebook.lab.xla"}
    assert _upward(graph) == {m: sorted(graph[m]) for m in trees}


def test_a_private_name_used_across_modules_is_found():
    private = "_" + "helper"  # spelt so this file's own strings reach no private name
    source = "\n".join([
        f"from .gradebook import clean, {private}",  # imported
        "from . import autograde",
        "import scalebook as sb",
        f"autograde.{private}()",  # reached on a module
        f"sb.course.grader.autograde.{private}",  # through the faces
        f"monkeypatch.setattr(autograde, {private!r}, None)",  # a monkeypatch's attribute
        f"monkeypatch.setattr('scalebook.course.{private}', None)",  # a monkeypatch's dotted path
        f"run('import scalebook as sb; sb.runtime.{private}(8)')",  # a program's text
        f"model.{private}(4)",  # an object's, which another module defines
        "self._mine, clean._repr_html_(), autograde.__name__, x._unknown",  # its own, a protocol, a dunder, nobody's
    ])
    found = _private_reaches("scalebook.course.grader.reasoning", ast.parse(source), {private, "_mine"})
    assert [f.split(":")[0] for f in found] == [f"line {n}" for n in (1, 4, 5, 6, 7, 8, 9)], found
    assert not _private_reaches("scalebook.course.grader.reasoning", ast.parse(f"def {private}():\n    pass\n"
                                                                                 f"x.{private}"), {private})


def test_an_import_from_the_ground_floor_up_is_found():
    graph = {"scalebook.units": {"scalebook.plots.base"}, "scalebook.plots.base": {"scalebook.units"}}
    assert _upward(graph) == {"scalebook.units": ["scalebook.plots.base"]}


def test_an_import_through_a_face_is_an_arrow_to_the_defining_module():
    node = ast.parse("from ..training import plan, Layout").body[0]
    tables = {"scalebook.training": {"plan": "planner", "Layout": "layout"}}
    found = _resolve("scalebook.problems.training", node, False, tables)
    assert {"scalebook.training.planner", "scalebook.training.layout"} <= set(found)


def test_a_getattr_outside_a_face_or_not_built_by_face_is_found():
    assert _getattr_problems("scalebook.xla", ast.parse("def __getattr__(name):\n    return name"))
    assert _getattr_problems("scalebook.plots", ast.parse("def __getattr__(name):\n    return name"))
    assert not _getattr_problems("scalebook.plots", ast.parse("__getattr__, __dir__ = face(__name__, {}, {})"))


def test_a_face_whose_table_all_and_type_checking_disagree_is_found():
    tree = ast.parse("if TYPE_CHECKING:\n    from . import roofline\n    from .hardware.chips import Chip\n")
    assert not _face_disagreements(tree, {"roofline": "roofline", "Chip": "hardware.chips"}, ["roofline", "Chip"])
    assert _face_disagreements(tree, {"roofline": "roofline", "Chip": "hardware"}, ["roofline", "Chip"])
    assert _face_disagreements(tree, {"roofline": "roofline", "Chip": "hardware.chips"}, ["roofline"])


def test_an_old_name_without_warning_or_removal_release_is_found():
    class Silent:  # a face that serves an old name without warning, and one dated before this release
        old = older = staticmethod(len)

    deprecated = {"old": ("use new", "units:fmt_time", "0.3"), "older": ("use new", "units:fmt_time", "0.1")}
    assert [p.split(":")[0] for p in _deprecation_problems(Silent, deprecated, "0.1.0")] == ["old", "older", "older"]


def test_a_name_imported_through_a_face_is_found():
    faces = {"scalebook.training": {"plan": "planner", "book": "book"}}
    tree = ast.parse("from ..training import plan, book\nfrom ..training.planner import plan as p\n")
    found = _through_a_face("scalebook.problems.training", tree, faces)
    assert found == ["line 1: plan (from scalebook.training.planner)"]


def test_a_face_that_flattens_a_same_named_function_binds_the_function(tmp_path, monkeypatch):
    (tmp_path / "flatface").mkdir()
    (tmp_path / "flatface" / "__init__.py").write_text("from .roofline import roofline\n")
    (tmp_path / "flatface" / "roofline.py").write_text("def roofline():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert not _binds_module("flatface.roofline")
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "flatface"]:
            del sys.modules[name]


# --- the package -------------------------------------------------------------------------------------------------

def test_no_circle_and_no_arrow_up_counting_late_and_type_only_imports():
    graph = _graph()
    assert _cycle(graph) is None, " → ".join(_cycle(graph))
    assert not _upward(graph)


def test_no_private_name_is_used_across_modules_in_the_package_or_its_tests():
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in SOURCES.items()}
    owned = {m: _owned(tree) for m, tree in trees.items()}
    found = {f"{SOURCES[m].relative_to(PACKAGE.parent)} {where}" for m, tree in trees.items()
             for where in _private_reaches(m, tree, set().union(*(o for n, o in owned.items() if n != m)))}
    assert not found, "give a helper two modules share a public name in the module that owns it:\n" + \
        "\n".join(sorted(found))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_level_getattr_except_a_face_s_table(module: str):
    assert not _getattr_problems(module, _tree(module))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_a_face_or_says_why_not(package: str):
    assert package in FACES or package in NOT_FACES, f"{package}: add it to FACES or say why in NOT_FACES"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_a_sibling_from_its_defining_file_not_a_face(module: str):
    faces = {face: _table(face) for face in FACES}
    assert not _through_a_face(module, _tree(module), faces), "import each name from the module the face names"


@pytest.mark.parametrize("face", FACES)
def test_a_face_s_all_table_and_type_checking_imports_agree(face: str):
    module = importlib.import_module(face)
    assert not _face_disagreements(_tree(face), faces.served(face), module.__all__)


@pytest.mark.parametrize("face", FACES)
def test_every_name_of_a_face_resolves_without_warning(face: str):
    module = importlib.import_module(face)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert not missing and set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("face", FACES)
def test_every_deprecated_name_warns_with_a_removal_release(face: str):
    import scalebook

    assert not _deprecation_problems(importlib.import_module(face), faces.deprecations(face), scalebook.__version__)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if "." in m))
def test_import_as_binds_the_module(module: str):
    assert _binds_module(module), f"`import {module} as m` binds something else than the module"


def test_the_plots_face_no_longer_flattens():
    import scalebook.plots.roofline as m

    assert inspect.ismodule(m) and callable(m.roofline)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_siblings_are_imported_at_the_top(module: str):
    late = []
    for function in (n for n in ast.walk(_tree(module)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        late += [f"line {n.lineno}" for n in ast.walk(function)
                 if isinstance(n, ast.ImportFrom) and (n.level > 0 or (n.module or "").startswith("scalebook"))
                 and (n.module or "").split(".")[-1] not in LATE_SIBLINGS]
    assert not late, f"{module} imports a sibling inside a function at {late}: import it at the top"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_past_the_limit_was_kept_whole_by_review(module: str):
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    if module in LONG:
        assert lines > MAX_LINES, f"{module} has {lines} lines: take it out of LONG"
    else:
        assert lines <= MAX_LINES, (f"{module} has {lines} lines (review past {MAX_LINES}): if it holds two ideas, "
                                    "split it by idea; if one, name that idea in LONG. Never split by count.")


@pytest.mark.parametrize("module", sorted(set(MODULES) - set(FACES)))
def test_every_name_in_all_is_defined(module: str):
    tree = _tree(module)
    exported = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                     and any(getattr(t, "id", "") == "__all__" for t in n.targets)), [])
    defined = {t.id for n in tree.body if isinstance(n, ast.Assign) for target in n.targets
               for t in ast.walk(target) if isinstance(t, ast.Name)}
    defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {(a.asname or a.name).split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    defined |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(t := n.target, ast.Name)}
    missing = [name for name in exported if name not in defined]
    assert not missing, f"{module}.__all__ names {missing}, which it does not define"


def test_the_readme_names_every_module_of_the_package():
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    entries = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    entries += [f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()]
    missing = [e for e in sorted(entries) if f"`{e}`" not in readme]
    assert not missing, f"README's package table lacks {missing}"
