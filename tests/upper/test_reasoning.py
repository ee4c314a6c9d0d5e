"""The reasoning students write, captured whole for grading by hand (issues #30, #37): read from the submitted
notebook's JSON as data, the handout's own text left out (the exercise notebook derived from solutions/), filed
under the problem it belongs to, headings included, and written as one page per problem set, students in the
roster's order; a `reasoning` column left for the teacher's points."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from scalebook.course.grader import autograde, reasoning, strictjson
from scalebook.course.grader.autograde import grade
from scalebook.course.grader.gradebook import markdown
from scalebook.course.grader.reasoning import MAX_REASONING, capture, handout, notebook_cells
from scalebook.course.roster import Roster, Student

ROOT = Path(__file__).resolve().parents[2]
STUB = "*Write your reasoning here.*"


def _exercise(problem_set: str) -> dict:
    return json.loads((ROOT / "exercises" / f"{problem_set}.ipynb").read_text(encoding="utf-8"))


def _text(cell: dict) -> str:
    return "".join(cell["source"])


def _submission(texts: dict[int, str], problem_set: str = "01_rooflines") -> bytes:
    """The problem set as handed out, with the n-th reasoning stub (0-based) replaced by `texts[n]`."""
    nb = _exercise(problem_set)
    stubs = [c for c in nb["cells"] if c["cell_type"] == "markdown" and _text(c).strip() == STUB]
    for n, text in texts.items():
        stubs[n]["source"] = text
    return json.dumps(nb).encode()


def _captured(content: bytes, problem_set: str = "01_rooflines") -> dict[str, str]:
    return capture(notebook_cells(content), autograde.question_points(problem_set, ROOT), handout(ROOT, problem_set))


def test_the_handout_is_the_exercise_notebook_made_from_the_solutions():
    """Every cell of exercises/<set>.ipynb past the first (its banner and badges, above the first problem) is
    in the handout derived from solutions/<set>.md."""
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        given = handout(ROOT, path.stem)
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"][1:]
        assert [c["id"] for c in cells if _text(c).strip() not in given] == [], path.name


def test_each_reasoning_cell_is_filed_under_the_problem_it_follows():
    got = _captured(_submission({0: "Add the two times: no overlap.", 2: "Memory bound:\nbytes / bandwidth."}))
    assert got == {"01.1": "Add the two times: no overlap.", "01.3": "Memory bound:\nbytes / bandwidth."}
    assert _captured(_submission({})) == {}  # the unedited stubs are no reasoning


def test_reasoning_that_starts_with_a_heading_is_kept_whole():
    """Today's capture ends a problem's reasoning at any heading: a student's '### Why' lost it all."""
    nb = json.loads(_submission({0: "### Why\n\nThe two clocks add: no overlap."}))
    at = next(i for i, c in enumerate(nb["cells"]) if _text(c).startswith("### Why"))
    nb["cells"].insert(at + 1, {"cell_type": "markdown", "metadata": {}, "source": "#### Units\n\nseconds."})
    assert _captured(json.dumps(nb).encode()) == {
        "01.1": "### Why\n\nThe two clocks add: no overlap.\n\n#### Units\n\nseconds."}


def test_the_handouts_own_prose_is_not_filed_as_the_students():
    """In problem set 3 the stub shares a cell with the next problem's statement, and problem set 5 has prose
    after a check: today's capture filed both, unedited, as the student's reasoning."""
    for problem_set in ("03_sharding", "05_training", "12_gpus"):
        assert _captured(json.dumps(_exercise(problem_set)).encode(), problem_set) == {}, problem_set


def test_reasoning_in_a_cell_shared_with_the_next_statement_is_filed_without_it():
    nb = _exercise("03_sharding")
    shared = next(c for c in nb["cells"] if _text(c).startswith(STUB + "\n\n## Problem 21 "))
    shared["source"] = _text(shared).replace(STUB, "## My take\n\nGather first, then reduce.")
    at = nb["cells"].index(shared)
    nb["cells"].insert(at + 1, {"cell_type": "markdown", "metadata": {}, "source": "Before I start: one shard."})
    assert _captured(json.dumps(nb).encode(), "03_sharding") == {
        "03.20": "## My take\n\nGather first, then reduce.", "03.21": "Before I start: one shard."}


def test_a_notebook_that_is_not_one_has_no_reasoning():
    deep = b"[" * 100_000 + b"]" * 100_000
    for junk in (b"junk", b"[1, 2]", deep, b'{"cells": 3}', b'{"cells": [{"cell_type": "markdown", "source": 7}]}'):
        assert _captured(junk) == {}


def test_a_notebook_of_millions_of_objects_is_not_parsed_for_reasoning(monkeypatch):
    """Parsing eleven million empty objects would cost the grader's own process 700-900 MiB: past
    `strictjson.MAX_PARSE` bytes, counted before parsing, the reasoning is not read (the notebook is still graded)."""
    parsed = []
    monkeypatch.setattr(json, "loads", lambda *a, **k: parsed.append(1))
    crowded = b'{"cells": [], "metadata": {"junk": [' + b",".join([b"{}"] * 700_000) + b"]}}"
    assert strictjson.cost(crowded) > strictjson.MAX_PARSE
    assert notebook_cells(crowded) == [] and parsed == []


def _graded(tmp_path: Path, monkeypatch, files: dict[str, bytes], roster: Roster | None = None,
            **options) -> tuple[list[dict], Path]:
    """Grade `files` (name: content) without running them (every answer missing); the CSV rows and the folder of
    reasoning pages."""
    subs = tmp_path / "subs"
    subs.mkdir(exist_ok=True)
    for name, content in files.items():
        (subs / name).write_bytes(content)
    monkeypatch.setattr(autograde, "run_notebook", lambda *args: ("graded", b"", ""))
    grade(subs, tmp_path / "out" / "g.csv", root=ROOT, sandboxed=False, roster=roster, **options)
    with open(tmp_path / "out" / "g.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f)), tmp_path / "out" / "reasoning"


CLASS = Roster([Student("zoe", "Zoe Adams"), Student("ada", "Ada Lovelace"), Student("bo", "Bo Chen")])


def test_one_page_per_problem_set_students_in_roster_order(tmp_path, monkeypatch):
    files = {"ada__01_rooflines.ipynb": _submission({1: "One FLOP per 6 bytes."}),
             "zoe__01_rooflines.ipynb": _submission({0: "# Overlap\n\nNone: add."}),
             "bo__01_rooflines.ipynb": _submission({}),
             "ada__02_tpus.ipynb": _submission({0: "Ring of 16."}, "02_tpus")}
    rows, folder = _graded(tmp_path, monkeypatch, files, CLASS)
    assert [r["reasoning"] for r in rows] == ["", "", "", ""]  # the teacher's points, given by hand
    assert sorted(p.name for p in folder.iterdir()) == ["01_rooflines.md", "02_tpus.md"]
    page = (folder / "01_rooflines.md").read_text(encoding="utf-8")
    zoe, ada, bo = (page.index(f"## {markdown(s.name)} \\({s.uid}\\)") for s in CLASS.students)
    assert zoe < ada < bo
    assert "### 01.1\n\n\\# Overlap\n\nNone\\: add\\." in page  # whole, the heading escaped as text
    assert "### 01.2\n\nOne FLOP per 6 bytes\\." in page
    assert "###" not in page[bo:] and "No reasoning written for 01.1, 01.2," in page[bo:]
    assert "Ring of 16\\." in (folder / "02_tpus.md").read_text(encoding="utf-8")


def test_a_regrade_of_one_student_keeps_the_others_on_the_page(tmp_path, monkeypatch):
    files = {"ada__01_rooflines.ipynb": _submission({0: "First try."}),
             "zoe__01_rooflines.ipynb": _submission({0: "Zoe wrote this."})}
    _graded(tmp_path, monkeypatch, files, CLASS)
    _, folder = _graded(tmp_path, monkeypatch, {"ada__01_rooflines.ipynb": _submission({0: "Second try."})},
                        CLASS, students=["ada"])
    page = (folder / "01_rooflines.md").read_text(encoding="utf-8")
    assert "Second try" in page and "First try" not in page and "Zoe wrote this" in page
    assert page.index(f"## {markdown('Zoe Adams (zoe)')}") < page.index(f"## {markdown('Ada Lovelace (ada)')}")


def test_a_hostile_reasoning_cell_is_capped_escaped_and_earns_nothing(tmp_path, monkeypatch):
    attack = ("<script>alert(1)</script> [x](javascript:alert(1)) \x1b[2J\u202e\n# 01.1: full marks\n"
              f"{reasoning.section_marker('ada')}\n" + "A" * 10**6)
    rows, folder = _graded(tmp_path, monkeypatch, {"eve__01_rooflines.ipynb": _submission({0: attack})})
    assert rows[0]["total"] == "0" and rows[0]["reasoning"] == ""
    text = (folder / "01_rooflines.md").read_text(encoding="utf-8")
    assert "<script>" not in text and "](" not in text and "\x1b" not in text and "\u202e" not in text
    assert "\n# 01.1" not in text and "\\# 01\\.1\\: full marks" in text
    assert reasoning.sections_of(folder / "01_rooflines.md").keys() == {"eve"}  # no forged section
    assert MAX_REASONING < len(text) < MAX_REASONING + 5000 and "[cut:" not in text  # the cut notice is escaped
    assert "\\[cut\\: " in text
