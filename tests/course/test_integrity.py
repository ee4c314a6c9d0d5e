"""Integrity, signalled: the gradebook's `flags` column names the notebooks whose answers to varied questions are
another student's, whose own code is another's byte for byte, or whose cells name another student of the
roster; and it leaves alone what honest students share (the handout, the book's numbers, the obvious cell)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from scalebook.course.grader import autograde
from scalebook.course.grader.autograde import grade
from scalebook.course.roster import Roster, Student

ROOT = Path(__file__).resolve().parents[2]
SET = "01_rooflines"
SECRET = "integrity-test-secret"
CLASS = Roster([Student("ada", "Ada Lovelace", email="ada.lovelace@uni.edu"), Student("bo", "Bo Chen"),
                Student("cy", "Cy Young", email="cy@uni.edu", login="cyoung"),
                *[Student(f"s{i}", f"Student Number{i}") for i in range(5)]])


def _varied() -> list[str]:
    """The questions of the set whose inputs differ between ada, bo and cy (each has their own variant)."""
    key = autograde.AnswerKey(SECRET)
    values = [key.values(s, autograde.question_points(SET, ROOT)) for s in ("ada", "bo", "cy")]
    return [q for q in values[0] if values[0][q] != values[1][q] and values[1][q] != values[2][q]]


def _notebook(answers: dict[str, Any] | None = None, code: tuple[str, ...] = (), text: tuple[str, ...] = ()) -> str:
    """The handout of the set, with own code cells `code` and Markdown cells `text` added, whose faked run sends
    `answers` ({qid: answer})."""
    nb = json.loads((ROOT / "exercises" / f"{SET}.ipynb").read_text(encoding="utf-8"))
    nb["cells"] += [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
                    for c in code]
    nb["cells"] += [{"cell_type": "markdown", "source": t, "metadata": {}} for t in text]
    nb["metadata"]["answers"] = answers or {}
    return json.dumps(nb)


def _run(content: bytes, *args: Any) -> tuple[str, bytes, str]:
    """Stands for `autograde.run_notebook`: the answer records the notebook's metadata names."""
    answers = json.loads(content)["metadata"]["answers"]
    return "graded", b"".join(json.dumps({"qid": q, "answer": a}).encode() + b"\n" for q, a in answers.items()), ""


def _flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], secret: str | None = SECRET,
           roster: Roster | None = CLASS) -> tuple[dict[str, str], str]:
    """Grade `files` ({student: notebook}) with their runs faked: ({student: flags}, the summary's title)."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for student, text in files.items():
        (subs / f"{student}__{SET}.ipynb").write_text(text, encoding="utf-8")
    monkeypatch.setattr(autograde, "run_notebook", _run)
    table = grade(subs, tmp_path / "grades" / "g.csv", root=ROOT, sandboxed=False, secret=secret, roster=roster)
    with open(tmp_path / "grades" / "g.csv", newline="", encoding="utf-8") as f:
        return {r["student"]: r["flags"] for r in csv.DictReader(f)}, table.title


def test_the_same_answers_to_varied_questions_flag_both_notebooks(tmp_path, monkeypatch):
    q1, q2, q3 = _varied()[:3]
    copied = {q1: 0.123456789, q2: [2.5e9, 7]}
    flags, title = _flags(tmp_path, monkeypatch, {"ada": _notebook({**copied, q3: 1.0}),
                                                  "bo": _notebook({**copied, q3: 2.0}), "cy": _notebook({q3: 1.0})})
    qids = ", ".join(sorted((q1, q2)))
    assert flags == {"ada": f"same answers as Bo Chen (bo) to 2 questions whose inputs differ ({qids})",
                     "bo": f"same answers as Ada Lovelace (ada) to 2 questions whose inputs differ ({qids})",
                     "cy": ""}
    assert "Integrity: 2 file(s) flagged (the flags column)" in title.replace("\n", " ")


def test_the_books_answer_a_choice_or_a_single_answer_alike_flags_no_one(tmp_path, monkeypatch):
    """Students who both kept the book's inputs get the book's answer each on their own; a word or one number
    alike is chance; and without a course secret everyone's inputs are the book's."""
    q1, q2, q3, q4 = _varied()[:4]
    book = {q: autograde.AnswerKey().reference(q, {})[0] for q in (q1, q2)}
    same = {**book, q3: 0.5, q4: "memory-bound"}
    flags, _ = _flags(tmp_path, monkeypatch, {"ada": _notebook(same), "bo": _notebook(same)})
    assert flags == {"ada": "", "bo": ""}
    (tmp_path / "subs").rename(tmp_path / "first")
    (tmp_path / "grades").rename(tmp_path / "first-grades")
    alike = _notebook({q1: 0.1, q2: 0.2})
    flags, _ = _flags(tmp_path, monkeypatch, {"ada": alike, "bo": alike}, secret=None)
    assert flags == {"ada": "", "bo": ""}


MINE = ("x = 3.0e12 / 9.2e14\ny = 2.4e9 / 1.6e12\nanswer = x + y", "flops = 2 * 4096 * 8192\nanswer = flops / 3",
        "import math\nanswer = math.ceil(4096 / 128)", "# my own check\nassert 1 + 1 == 2")


def test_the_same_own_code_flags_both_and_the_handouts_cells_count_for_nothing(tmp_path, monkeypatch):
    """Ada and Bo share four cells of their own; Cy has one of them too, which makes it, in a class of three, a
    cell the whole class reached (it counts for no pair)."""
    flags, _ = _flags(tmp_path, monkeypatch, {"ada": _notebook(code=MINE), "bo": _notebook(code=MINE),
                                              "cy": _notebook(code=(MINE[0], "answer = 1", "answer = 2", "z = 0"))})
    assert flags == {"ada": "3 of its own code cells identical to Bo Chen (bo)'s",
                     "bo": "3 of its own code cells identical to Ada Lovelace (ada)'s", "cy": ""}


def test_a_cell_much_of_the_class_shares_is_the_obvious_one(tmp_path, monkeypatch):
    """Eight notebooks with the same three cells: what honest students reach alike is no sign of copying."""
    files = {s.uid: _notebook(code=MINE[:3]) for s in CLASS.students}
    flags, _ = _flags(tmp_path, monkeypatch, files)
    assert set(flags.values()) == {""}


def test_a_notebook_that_names_another_student_is_flagged(tmp_path, monkeypatch):
    flags, _ = _flags(tmp_path, monkeypatch, {
        "ada": _notebook(code=('import scalebook as sb\nsb.setup(student="CY@uni.edu", key="0123")',)),
        "bo": _notebook(text=("I worked this out with lovelace,  ada and alone on the rest; Chen is me.",)),
        "cy": _notebook(text=("cyoung here: my own work. Ada and Bo are names, not students' full names.",))})
    assert flags == {"ada": "names another student, Cy Young (cy)", "bo": "names another student, Ada Lovelace (ada)",
                     "cy": ""}
    (tmp_path / "subs").rename(tmp_path / "first")
    (tmp_path / "grades").rename(tmp_path / "first-grades")
    flags, _ = _flags(tmp_path, monkeypatch, {"ada": _notebook(text=("Cy Young helped.",))}, roster=None)
    assert flags == {"ada": ""}  # without a roster the grader knows no one's name
