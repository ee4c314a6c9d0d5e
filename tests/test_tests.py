"""Tests that cannot lie: the rules every test file keeps, read from its source with `ast` (nothing is imported).

- **No assert on wall time** outside `tests/speed.py`: a comparison inside an `assert` that reads a clock
  (`time.time()`, `perf_counter()`, `monotonic()` ..., a name or a function's result computed from one, or an
  explorer's `update()`, which returns the seconds it took) fails here. A test times a check through
  `speed.assert_fast` (a target it fails only far past) or `speed.assert_stopped` (a limit a run must end within).
- **No test module imports another.** Recipes and fixtures two test files share live in a helper module
  (`tests/fuzzing.py`, `tests/fuzz_recipes.py`, `tests/traces.py`, `tests/explorers.py`, `tests/course/lms.py` ...).
- **Explorers and figures are tested in `tests/upper/`** (and the built website in `tests/site/`): no test of the
  ground floor, the course or the chapters' pipeline builds an explorer or draws a figure.
- **An assert can fail:** none on constants alone, on a non-empty tuple (`assert (x, "why")`), or with a true
  constant in an `or`; and every test checks something (an assert, a raise, or a checker's call).

Each rule is first shown to catch what it names on a small fixture.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import speed

TESTS = Path(__file__).resolve().parent
FILES = sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)
TEST_MODULES = {p.stem for p in FILES if p.stem.startswith("test_")}
CLOCKS = {"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns"}
SECONDS = {"update"}  # `Explorer.update(...)` returns the seconds the explorer took to answer
TIMING_HOME = TESTS / "speed.py"
# The floors whose tests never build an explorer or draw a figure (those are tested in tests/upper/, the website in
# tests/site/; the house-wide checks at the top read the package's modules, explorers' included).
UNDRAWN = ("ground", "course", "chapters")
DRAWN = ("widgets", "plots")
EXPLORERS = ("explore", "explorer")  # what builds an explorer, besides an `*_explorer` function


def _rel(path: Path) -> str:
    return str(path.relative_to(TESTS.parent))


# --- clocks --------------------------------------------------------------------------------------------------------

def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr in SECONDS or (f.attr in CLOCKS and isinstance(f.value, ast.Name) and f.value.id == "time")
    return isinstance(f, ast.Name) and f.id in CLOCKS - {"time"}


def _reads_clock(node: ast.AST, names: set[str], functions: set[str]) -> bool:
    """Whether `node` reads a clock: a clock's call, a name bound to one, or a call of a function returning one."""
    return any(_is_clock(sub) or (isinstance(sub, ast.Name) and sub.id in names)
               or (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in functions)
               for sub in ast.walk(node))


def _clocked_names(scope: ast.AST, functions: dict[str, set[int] | None]) -> set[str]:
    """The names `scope` binds to a clock's reading, directly or through others (to a fixed point). A call of a
    function that returns a tuple binds only the positions that read a clock (`code, _, seconds = _run()`)."""
    names: set[str] = set()
    timed = {f for f, where in functions.items() if where is None}
    while True:
        before = len(names)
        for node in ast.walk(scope):
            if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            call = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
            for target in targets:
                if isinstance(target, ast.Tuple) and call in functions and functions[call] is not None:
                    names |= {e.id for i, e in enumerate(target.elts)
                              if i in functions[call] and isinstance(e, ast.Name)}
                elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    names |= {t.id for t, v in zip(target.elts, value.elts)
                              if isinstance(t, ast.Name) and _reads_clock(v, names, timed)}
                elif _reads_clock(value, names, timed | {f for f in functions if functions[f]}):
                    names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if len(names) == before:
            return names


def _clocked_functions(tree: ast.Module) -> dict[str, set[int] | None]:
    """{function: the positions of its returned tuple that read a clock, or None when its whole result does}."""
    found: dict[str, set[int] | None] = {}
    for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        names = _clocked_names(fn, {})
        for ret in (n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None):
            if isinstance(ret.value, ast.Tuple):
                where = {i for i, e in enumerate(ret.value.elts) if _reads_clock(e, names, set())}
                if where:
                    found[fn.name] = where
            elif _reads_clock(ret.value, names, set()):
                found[fn.name] = None
    return found


def timing_asserts(source: str) -> list[int]:
    """The lines of `source` whose `assert` compares a clock's reading."""
    tree = ast.parse(source)
    functions = _clocked_functions(tree)
    timed = {f for f, where in functions.items() if where is None}
    lines = set()
    module = ast.Module([n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                    ast.ClassDef))], [])
    for scope in [module, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        names = _clocked_names(scope, functions)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assert) and any(
                    isinstance(c, ast.Compare) and _reads_clock(c, names, timed) for c in ast.walk(node.test)):
                lines.add(node.lineno)
    return sorted(lines)


# Test code that reads the clock, kept as data (a test file holding it would itself hold raw timing asserts).
CLOCKED = (Path(__file__).parent / "data" / "clocked_tests.txt").read_text(encoding="utf-8")


def test_the_clock_rule_catches_raw_timing_asserts():
    assert timing_asserts(CLOCKED) == [7, 11, 13]  # not `code == 3`, nor a deadline's wait


def test_no_assert_reads_a_clock_outside_speed_py():
    found = [f"{_rel(p)}:{line}" for p in FILES if p != TIMING_HOME
             for line in timing_asserts(p.read_text(encoding="utf-8"))]
    assert not found, f"asserts on wall time (use speed.assert_fast or speed.assert_stopped): {found}"


def test_a_limit_check_fails_only_when_the_limit_did_not_stop_the_run():
    speed.assert_stopped(80, 3, "a run killed late on a busy machine", unstopped=300)
    with pytest.raises(AssertionError, match="did not stop"):
        speed.assert_stopped(300, 3, "a run left to its end", unstopped=300)
    with pytest.raises(ValueError, match="unstopped=60"):  # a check that a run left to its end would pass
        speed.assert_stopped(5, 3, "a run", unstopped=60)


# --- test modules import helpers, never one another -----------------------------------------------------------------

def imported_tests(source: str, test_modules: set[str]) -> list[str]:
    """The test modules `source` imports, at its top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in test_modules]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [node.module] if node.module.split(".")[0] in test_modules else []
    return found


def test_the_import_rule_catches_a_test_importing_a_test():
    source = "import fuzzing\nfrom test_fuzz import R\ndef f():\n    import test_figures_09_12\n"
    assert imported_tests(source, {"test_fuzz", "test_figures_09_12"}) == ["test_fuzz", "test_figures_09_12"]


def test_no_test_module_imports_another():
    found = {_rel(p): names for p in FILES if (names := imported_tests(p.read_text(encoding="utf-8"), TEST_MODULES))}
    assert not found, f"test modules importing test modules (move what they share to a helper module): {found}"


# --- explorers and figures in one place -----------------------------------------------------------------------------

def draws(source: str) -> list[int]:
    """The lines of `source` that reach `scalebook.widgets` or `scalebook.plots`: an import, or a call."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            hit = any(a.name.split(".")[:2] in (["scalebook", d] for d in DRAWN) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            hit = parts[0] == "scalebook" and (parts[1:2] in ([d] for d in DRAWN)
                                                or (len(parts) == 1 and any(a.name in DRAWN for a in node.names)))
        else:  # a call of sb.widgets.x(...), sb.plots.x.y(...) or an explorer's maker (`puzzle.explorer()`);
            # reading `sb.plots.x.__all__` draws nothing
            name = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
            hit = name.startswith(tuple(f"{root}.{d}." for root in ("sb", "scalebook") for d in DRAWN)) or (
                name.rpartition(".")[2] in EXPLORERS or name.endswith("_explorer"))
        if hit:
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_drawing_rule_catches_explorers_and_figures():
    source = ("import scalebook as sb\nfrom scalebook.widgets import web\nimport scalebook.plots.roofline\n"
              "from scalebook import widgets\nsb.widgets.roofline_explorer()\nsb.roofline.matmul(1, 2, 3, 'v5e')\n"
              "assert sb.plots.schedules.__all__\nget_puzzle('P1').explorer()\nexplorers = [1]\n")
    assert draws(source) == [2, 3, 4, 5, 8]


def test_explorers_and_figures_are_tested_in_the_upper_floor():
    found = {_rel(p): lines for p in FILES if p.relative_to(TESTS).parts[0] in UNDRAWN
             and (lines := draws(p.read_text(encoding="utf-8")))}
    assert not found, f"explorer or figure tests outside tests/upper/ (move them there): {found}"


# --- asserts that can fail ------------------------------------------------------------------------------------------

def hollow_asserts(source: str) -> list[int]:
    """The lines of `source` whose assert cannot fail: on constants alone, on a non-empty tuple, list, set or dict
    (`assert (x, "why")`), or an `or` with a true constant (`assert x < 0.1 or True`)."""
    lines = []
    for node in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Assert)):
        test = node.test
        constant = not any(isinstance(n, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) for n in ast.walk(test))
        container = isinstance(test, (ast.Tuple, ast.List, ast.Set)) and test.elts or (
            isinstance(test, ast.Dict) and test.keys)
        true_or = isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and any(
            isinstance(v, ast.Constant) and v.value for v in test.values)
        if constant or container or true_or:
            lines.append(node.lineno)
    return lines


def test_the_hollow_rule_catches_asserts_that_cannot_fail():
    source = ("assert True\nassert x < 0.1 or True\nassert 1 + 1 == 2\nassert (x == 1, 'why')\nassert x or y\n"
              "assert x == x  # NaN is not NaN\nassert f(x) == 2\nassert not x, 'why'\n")
    assert hollow_asserts(source) == [1, 2, 3, 4]


def test_every_assert_can_fail():
    found = [f"{_rel(p)}:{line}" for p in FILES for line in hollow_asserts(p.read_text(encoding="utf-8"))]
    assert not found, f"asserts that cannot fail: {found}"


CHECKS = ("assert", "raises", "warns", "fail", "check", "expect")  # what a call that checks is named


def silent_tests(source: str) -> list[str]:
    """The test functions of `source` that check nothing: no assert or raise, no call of a checker (`assert_fast`,
    `pytest.raises`, `sb.expect` ...), and no call of a function of the same file that checks."""
    functions = {n.name: n for n in ast.walk(ast.parse(source))
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def checks(fn: ast.AST, seen: frozenset[str]) -> bool:
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assert, ast.Raise)):
                return True
            name = ast.unparse(node.func).rpartition(".")[2] if isinstance(node, ast.Call) else ""
            if name.startswith(CHECKS) or (name in functions and name not in seen
                                           and checks(functions[name], seen | {name})):
                return True
        return False
    return [name for name, fn in functions.items() if name.startswith("test_") and not checks(fn, frozenset({name}))]


def test_the_silence_rule_catches_a_test_that_checks_nothing():
    source = ("def run(x):\n    assert x\ndef test_a():\n    run(1)\ndef test_b():\n    pytest.importorskip('jax')\n"
              "    print(1)\ndef test_c():\n    with pytest.raises(ValueError):\n        f()\n")
    assert silent_tests(source) == ["test_b"]


def test_every_test_checks_something():
    found = {_rel(p): names for p in FILES if (names := silent_tests(p.read_text(encoding="utf-8")))}
    assert not found, f"tests that check nothing: {found}"


def test_the_rules_read_every_floor():
    """A rule that reads no file passes vacuously: every floor's tests are read."""
    assert {p.relative_to(TESTS).parts[0] for p in FILES} >= {"ground", "upper", "course", "chapters", "site"}
