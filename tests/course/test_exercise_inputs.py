"""No exercise hands a student the book's inputs: every answer cell of a problem whose inputs vary between students
reads them from `p = sb.problem(qid)` and prints them (restating the problem with the student's values), and no
student-facing line types a varied input's book value, which a varied student's answer would silently inherit.

What counts as typing a book value (`typed_book_values`): a string constant equal to a varied input's book value
(a chip or model name); a number, or a constant expression such as `4 * 2048` or `405e9 * 2` and each number in it,
equal to a varied input's book value that is distinctive (above 16, or not a whole number: the small counts and
mesh sides such as `Z=4` or `Y=16` recur too often to tell); and any constant given to a name or keyword that is a
varied input's name (`X=4`, `E, k = 128, 4`). A constant a value is compared with (`p.chip in ("v6e", "v5e")`)
tests the student's value rather than replacing it, so it does not count.
"""

from __future__ import annotations

import ast
import operator
import re
from pathlib import Path
from typing import Any

import pytest

from scalebook.course.key import get_problem

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = sorted((ROOT / "exercises").glob("*.md"))
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)
CHECKED = re.compile(r"""sb\.check\(\s*["']([^"']+)["']""")


def answer_cells(path: Path) -> list[tuple[str, str]]:
    """(qid, code) of each code cell of a notebook's MyST source that checks an answer, cell options dropped."""
    cells = []
    for cell in CELL.findall(path.read_text(encoding="utf-8")):
        named = CHECKED.search(cell)
        if named:
            cells.append((named[1], "\n".join(line for line in cell.splitlines() if not line.startswith(":"))))
    return cells


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}


def _value(node: ast.AST) -> Any:
    """The value of a constant or of an arithmetic expression of constants; ValueError for anything else."""
    if isinstance(node, ast.Constant) and node.value is not ...:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    raise ValueError(f"not a constant: {ast.dump(node)[:60]}")


def _constant(node: ast.AST) -> tuple[bool, Any]:
    """(True, value) when `node` is a constant or an arithmetic expression of constants, else (False, None)."""
    try:
        return True, _value(node)
    except (ValueError, TypeError, ArithmeticError):
        return False, None


def _distinctive(value: Any) -> bool:
    """Whether a typed number is unlikely to be anything but the input it equals (above 16, or fractional)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and (
        abs(value) > 16 or value != int(value))


def _same(a: Any, b: Any) -> bool:
    """Whether a typed constant equals a book value (numbers within a part in a million, strings exactly)."""
    if isinstance(a, str) or isinstance(b, str) or isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return False
    return a == b or b != 0 and abs(a - b) <= 1e-6 * abs(b)


def typed_book_values(qid: str, code: str) -> list[str]:
    """Every place where `code` (an answer cell) types the book's value of one of problem `qid`'s varied inputs."""
    params = get_problem(qid).params
    names = {p.name for p in params}
    found = []
    tree = ast.parse(code)
    compared = {id(n) for c in ast.walk(tree) if isinstance(c, ast.Compare) for n in ast.walk(c)}

    def flag(node: ast.AST, why: str) -> None:
        found.append(f"line {node.lineno}: {ast.get_source_segment(code, node)!s} — {why}")

    for node in ast.walk(tree):
        targets: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.keyword) and node.arg in names:
            targets.append((node.arg, node.value))
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    targets.append((target.id, node.value))
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    targets += [(t.id, v) for t, v in zip(target.elts, node.value.elts) if isinstance(t, ast.Name)]
        for name, value in targets:
            if name in names and _constant(value)[0]:
                flag(value, f"types the varied input {name}; read it from p.{name}")
        if not isinstance(node, (ast.Constant, ast.BinOp)) or id(node) in compared:
            continue
        is_constant, value = _constant(node)
        if not is_constant:
            continue
        for p in params:
            if _same(value, p.book) and (isinstance(value, str) or _distinctive(value)):
                flag(node, f"is the book's {p.name} = {p.book!r}; read it from p.{p.name}")
    return sorted(set(found))


def _varied_cells() -> list[tuple[str, str, str]]:
    return [(path.name, qid, code) for path in EXERCISES for qid, code in answer_cells(path)
            if get_problem(qid).params]


VARIED_CELLS = _varied_cells()


def test_the_detector_catches_each_way_of_typing_a_book_value():
    assert typed_book_values("01.3", "B, V = 8192, 128256\nanswer = ...") != []  # T and V, both distinctive
    assert typed_book_values("02.7", "nbytes = 4 * 2048 * 4096 * 2") != []  # S and D inside a product
    assert typed_book_values("02.2", "state_bytes = 16 * 1e12") != []  # params = 1e12 as a float
    assert typed_book_values("03.4", 'mesh = sb.TpuMesh("v6e", X=16, Y=16)') != []  # chip, and X by name
    assert typed_book_values("03.4", 'mesh = sb.TpuMesh(p.chip, X=p.X, Y=16) if p.chip in ("v6e", "v5e") else 0') == []
    assert typed_book_values("03.1", 'mesh = sb.TpuMesh("v5p", X=4, Y=4, Z=4)') != []  # X=4 by name
    assert typed_book_values("01.9", 'h100 = sb.get_chip("h100")') != []  # the book's chip by name
    assert typed_book_values("04.10", "E, k = 128, 4") != []
    assert typed_book_values("03.1", 'mesh = sb.TpuMesh("v5p", X=p.X, Y=p.X, Z=4)') == []
    assert typed_book_values("01.3", "B, V = p.T, p.V\nanswer = ...  # YOUR CODE HERE") == []


def test_there_are_varied_answer_cells_in_every_problem_set_that_has_varied_problems():
    assert len(VARIED_CELLS) >= 200 and len(EXERCISES) >= 13


@pytest.mark.parametrize("name, qid, code", VARIED_CELLS, ids=[q for _, q, _ in VARIED_CELLS])
def test_a_varied_problems_cell_reads_and_restates_the_students_values(name, qid, code):
    lines = code.splitlines()
    assert lines[:2] == [f'p = sb.problem("{qid}")', "print(p)"], (
        f"exercises/{name}, {qid}: the answer cell must start by reading and printing this student's inputs: "
        f'p = sb.problem("{qid}") then print(p)')


@pytest.mark.parametrize("name, qid, code", VARIED_CELLS, ids=[q for _, q, _ in VARIED_CELLS])
def test_no_exercise_cell_types_a_varied_inputs_book_value(name, qid, code):
    typed = typed_book_values(qid, code)
    assert not typed, (f"exercises/{name}, {qid}: a student's answer would inherit the book's inputs:\n  "
                       + "\n  ".join(typed))
