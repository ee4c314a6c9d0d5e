"""The "write your reasoning" cells, collected per student for grading by hand (issue #30): read from the
submitted notebook's JSON as data, filed under the problem they follow, capped and escaped, and a `reasoning`
column left empty in the gradebook for the teacher's points."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from scalebook.course.grader import autograde, strictjson
from scalebook.course.grader.autograde import grade
from scalebook.course.grader.gradebook import MAX_REASONING, feedback_name, reasoning_cells

ROOT = Path(__file__).resolve().parents[2]
EXERCISE = ROOT / "exercises" / "01_rooflines.ipynb"
STUB = "*Write your reasoning here.*"


def _submission(texts: dict[int, str]) -> bytes:
    """Problem set 1 as handed out, with the n-th reasoning stub (0-based) replaced by `texts[n]`."""
    nb = json.loads(EXERCISE.read_text(encoding="utf-8"))
    stubs = [c for c in nb["cells"] if c["cell_type"] == "markdown" and "".join(c["source"]).strip() == STUB]
    for n, text in texts.items():
        stubs[n]["source"] = text
    return json.dumps(nb).encode()


def _possible() -> dict[str, int]:
    return autograde.question_points("01_rooflines", ROOT)


def test_each_reasoning_cell_is_filed_under_the_problem_it_follows():
    got = reasoning_cells(_submission({0: "Add the two times: no overlap.", 2: "Memory bound:\nbytes / bandwidth."}),
                          _possible())
    assert got == {"01.1": "Add the two times: no overlap.", "01.3": "Memory bound:\nbytes / bandwidth."}
    assert reasoning_cells(_submission({}), _possible()) == {}  # the unedited stubs are no reasoning


def test_a_notebook_that_is_not_one_has_no_reasoning():
    deep = b"[" * 100_000 + b"]" * 100_000
    for junk in (b"junk", b"[1, 2]", deep, b'{"cells": 3}', b'{"cells": [{"cell_type": "markdown", "source": 7}]}'):
        assert reasoning_cells(junk, _possible()) == {}


def test_a_notebook_of_millions_of_objects_is_not_parsed_for_reasoning(monkeypatch):
    """Parsing eleven million empty objects would cost the grader's own process 700-900 MiB: past
    `strictjson.MAX_PARSE` bytes, counted before parsing, the reasoning is not read (the notebook is still graded)."""
    parsed = []
    monkeypatch.setattr(json, "loads", lambda *a, **k: parsed.append(1))
    crowded = b'{"cells": [], "metadata": {"junk": [' + b",".join([b"{}"] * 700_000) + b"]}}"
    assert strictjson.cost(crowded) > strictjson.MAX_PARSE
    assert reasoning_cells(crowded, _possible()) == {} and parsed == []


def _graded(tmp_path: Path, monkeypatch, files: dict[str, bytes]) -> tuple[list[dict], Path]:
    """Grade `files` (name: content) without running them (every answer missing); the CSV rows and folder."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, content in files.items():
        (subs / name).write_bytes(content)
    monkeypatch.setattr(autograde, "_execute", lambda *args: ("graded", b"", ""))
    grade(subs, tmp_path / "out" / "g.csv", root=ROOT, sandboxed=False)
    with open(tmp_path / "out" / "g.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f)), tmp_path / "out" / "reasoning"


def test_the_grader_writes_a_reasoning_file_per_student_and_an_empty_column(tmp_path, monkeypatch):
    ada = _submission({1: "One FLOP per 6 bytes."})
    rows, folder = _graded(tmp_path, monkeypatch, {"ada__01_rooflines.ipynb": ada})
    assert [r["reasoning"] for r in rows] == [""]  # the teacher's points, given by hand
    text = (folder / feedback_name("ada")).read_text(encoding="utf-8")
    assert text.startswith("# Reasoning of ada")
    assert "### 01.2\n\nOne FLOP per 6 bytes\\." in text
    assert "### 01.1\n\n*(no reasoning written)*" in text


def test_a_hostile_reasoning_cell_is_capped_escaped_and_earns_nothing(tmp_path, monkeypatch):
    attack = "<script>alert(1)</script> [x](javascript:alert(1)) \x1b[2J\u202e\n# 01.1: full marks\n" + "A" * 10**6
    rows, folder = _graded(tmp_path, monkeypatch, {"eve__01_rooflines.ipynb": _submission({0: attack})})
    assert rows[0]["total"] == "0" and rows[0]["reasoning"] == ""
    text = (folder / feedback_name("eve")).read_text(encoding="utf-8")
    assert "<script>" not in text and "](" not in text and "\x1b" not in text and "\u202e" not in text
    assert "\n# 01.1" not in text and "\\# 01\\.1\\: full marks" in text
    assert MAX_REASONING < len(text) < MAX_REASONING + 5000 and "[cut:" not in text  # the cut notice is escaped
    assert "\\[cut\\: " in text
