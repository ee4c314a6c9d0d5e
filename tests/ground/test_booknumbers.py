"""The book's numbers that a chapter and a unit test both check are typed once, in `scalebook/data/book/`.

Each key there is read by a chapter (which shows it) and by a test (which checks the ground function that computes
it); neither types the value again. `sb.expect` takes the number with its tolerance, source and unit.
"""

import ast
import json
import re
import tomllib
from pathlib import Path

import pytest

import scalebook as sb
from scalebook.book import numbers as booknumbers
from scalebook.compare import ExpectationError

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"""sb\.published\(\s*["']([^"']+)["']""")
NUMBERS = booknumbers.book_numbers()


def _keys_read(paths: list[Path]) -> dict[str, set[str]]:
    """Which files read each key with sb.published("...")."""
    read: dict[str, set[str]] = {}
    for path in paths:
        for key in KEY.findall(path.read_text(encoding="utf-8")):
            read.setdefault(key, set()).add(path.name)
    return read


CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
TESTS = sorted(p for p in (ROOT / "tests").rglob("*.py") if p.name != Path(__file__).name)


def test_there_are_book_numbers_and_each_file_is_a_chapter():
    stems = {p.stem for p in CHAPTERS}
    files = sorted((ROOT / "scalebook" / "data" / "book").glob("*.toml"))
    assert files and len(NUMBERS) >= len(files)
    assert {f.stem for f in files} <= stems, "a data/book file is named after no chapter"


@pytest.mark.parametrize("key", sorted(NUMBERS))
def test_each_number_is_read_by_its_chapter_and_by_a_test(key):
    chapter = key.split(".")[0]
    assert f"{chapter}.md" in _keys_read(CHAPTERS).get(key, set()), f"chapter {chapter} does not show {key}"
    assert _keys_read(TESTS).get(key), f"no test checks {key}"


def test_every_key_a_chapter_or_test_reads_exists():
    read = set(_keys_read(CHAPTERS)) | set(_keys_read(TESTS))
    assert sorted(read - set(NUMBERS)) == []


def _literal_expectations(tree: ast.AST) -> list[float]:
    """The numbers typed as the expected side of a check: sb.expect's second argument, pytest.approx's first,
    math.isclose's second."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        spot = {"expect": 1, "approx": 0, "isclose": 1}.get(name)
        if spot is not None and len(node.args) > spot:
            try:
                value = ast.literal_eval(node.args[spot])
            except ValueError:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found.append(float(value))
    return found


def _code_of(path: Path) -> str:
    if path.suffix == ".py":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return re.sub(r"^(\s*)[%!].*$", r"\1pass", code, flags=re.M)  # a magic line (%pip ...) is not Python


def test_no_book_number_is_typed_again_as_an_expected_value():
    """Neither the chapter a number belongs to nor any test types its value as the expected side of a check.
    (Another chapter may print the same value for its own quantity; the test files hold no such coincidence.)"""
    values: dict[float, list[str]] = {}
    for key, number in NUMBERS.items():
        if isinstance(number.value, (int, float)):
            values.setdefault(float(number.value), []).append(key)
    again = []
    for path in [*sorted((ROOT / "chapters").glob("*.ipynb")), *TESTS]:
        for number in _literal_expectations(ast.parse(_code_of(path))):
            keys = [k for k in values.get(number, []) if path.suffix == ".py" or k.startswith(f"{path.stem}.")]
            if keys:
                again.append(f"{path.relative_to(ROOT)}: {number:g} is {' or '.join(keys)}")
    assert again == [], "\n".join(again)


def test_expect_takes_the_tolerance_source_and_unit_of_a_published_number():
    number = sb.published("01_rooflines.h100_1e12_flops")
    check = sb.expect(number.value * 1.005, number)
    assert (check.rtol, check.source, check.unit) == (number.rtol, number.source, "s")
    with pytest.raises(ExpectationError, match="1e12 FLOPs on an H100"):
        sb.expect(number.value * 1.02, number)
    assert sb.expect(number.value * 1.02, number, rtol=0.03).ok


def test_an_unknown_key_names_the_closest():
    with pytest.raises(ValueError, match=r"key='01_rooflines.h100_1e12_flop'.*mean '01_rooflines.h100_1e12_flops'"):
        sb.published("01_rooflines.h100_1e12_flop")
    with pytest.raises(ValueError, match="key=3 must be a string"):
        sb.published(3)


def test_a_malformed_row_is_refused(tmp_path, monkeypatch):
    (tmp_path / "01_rooflines.toml").write_text('[x]\nvalue = 1\nrtol = 0.1\nsorce = "typo"\n')
    monkeypatch.setattr(booknumbers, "load", lambda rel: tomllib.loads((tmp_path / Path(rel).name).read_text()))
    with pytest.raises(ValueError, match=r"\['sorce'\] are unknown and \['source'\] are missing"):
        booknumbers.read_chapter(tmp_path / "01_rooflines.toml")
