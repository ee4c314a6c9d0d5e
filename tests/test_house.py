"""The package's shape stays as designed: no import circle, arrows only down the floors, short modules.

Read from the source with `ast`, so nothing is imported: module-level imports make the graph (imports under
`if TYPE_CHECKING:` are for annotations only and do not run); an import inside a function may load JAX,
matplotlib, ipywidgets or another optional library, and may load a sibling only inside a module's
`__getattr__`, where it serves an old public name (`sb.pipeline`, `sb.planner`); the one other late
import is the answer key (`problems`), which `grading.check` reaches only when called: the grader's sandbox hides
the key, and `import scalebook` must work there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "scalebook"
MAX_LINES = 450
# The upper floor: the live lab (JAX) and the edges (matplotlib, ipywidgets, the command line, the grader).
UPPER = ("runtime", "bench", "xla", "profiling", "multihost", "labs", "plots", "widgets", "autograde", "sandbox",
         "submissions", "gradebook", "cgroups", "namespaces", "notebooks", "cli", "arguments")


# Siblings a function may import when called, and why.
LATE_SIBLINGS = {"problems": "the answer key, absent inside the grader's sandbox"}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> list[str]:
    """The package modules an `from ... import ...` statement loads (a name may be a submodule)."""
    if node.level == 0:
        return [node.module] if node.module and node.module.startswith("scalebook") else []
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    target = ".".join([*base, *(node.module.split(".") if node.module else [])])
    found = [target] if target in MODULES else []
    found += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
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


def _top_level_imports(tree: ast.Module) -> list[ast.ImportFrom | ast.Import]:
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, (ast.If, ast.Try)) and not _type_checking(node):
            out += [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return out


def _graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = set()
        for node in _top_level_imports(tree):
            if isinstance(node, ast.ImportFrom):
                for target in _resolve(module, node, path.name == "__init__.py"):
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


def test_the_walker_finds_a_cycle_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_package_has_no_import_circle():
    assert _cycle(_graph()) is None, " → ".join(_cycle(_graph()))


def test_the_ground_floor_never_imports_the_upper_floor():
    def upper(module: str) -> bool:
        return module.split(".")[1] in UPPER if "." in module else False

    wrong = {m: sorted(t for t in targets if upper(t))
             for m, targets in _graph().items() if "." in m and not upper(m)}
    assert not {m: t for m, t in wrong.items() if t}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_siblings_are_imported_at_the_top_except_to_serve_an_old_name(module: str):
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    late = []
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        if function.name == "__getattr__":
            continue
        late += [f"line {n.lineno}" for n in ast.walk(function)
                 if isinstance(n, ast.ImportFrom) and (n.level > 0 or (n.module or "").startswith("scalebook"))
                 and (n.module or "").split(".")[-1] not in LATE_SIBLINGS]
    assert not late, f"{module} imports a sibling inside a function at {late}: import it at the top"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_longer_than_the_limit(module: str):
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it by idea (limit {MAX_LINES})"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_name_in_all_is_defined(module: str):
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    exported = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                     and any(getattr(t, "id", "") == "__all__" for t in n.targets)), [])
    defined = {t.id for n in tree.body if isinstance(n, ast.Assign) for target in n.targets
               for t in ast.walk(target) if isinstance(t, ast.Name)}
    defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {(a.asname or a.name).split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    defined |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(t := n.target, ast.Name)}
    lazy = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"}
    missing = [name for name in exported if name not in defined]
    assert not missing or lazy, f"{module}.__all__ names {missing}, which it does not define"


def test_the_readme_names_every_module_of_the_package():
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    entries = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    entries += [f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()]
    missing = [e for e in sorted(entries) if f"`{e}`" not in readme]
    assert not missing, f"README's package table lacks {missing}"
