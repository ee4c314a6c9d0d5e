"""A teacher following only the guide: the walkthrough block of teachers_guide.md, run as it is written.

The block's commands run in a shell, in a home folder of their own, with the checkout's `.venv/bin` on PATH (as
the guide says), between the two things a teacher does outside a shell: download the class list from Canvas
(before step 1) and the students' uploads (step 3). The class list is written as Canvas's exporter writes it
(https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-export-grades-in-the-Gradebook/ta-p/809;
instructure/canvas-lms, lib/gradebook_exporter.rb), the uploads are named as Canvas's *Download Submissions* names
them (lib/content_zipper.rb: `lastfirst[_LATE]_<user id>_<file id>_<name>`), and the file the block writes is read
through Canvas's own import rules (`lms.canvas_reads`, restated from lib/gradebook_importer.rb).
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lms import canvas_reads, csv_rows

from scalebook.course.key import list_problems
from scalebook.course.variants import values_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "teachers_guide.md"
MARKER = "<!-- walkthrough:"
# Canvas > Grades > Export > Export Entire Gradebook: identity columns, an assignment titled with its id, the
# totals, the "Points Possible" row, students by sortable name, the test student (Student View) last.
CANVAS_EXPORT = """\
Student,ID,SIS User ID,SIS Login ID,Section,Problem set 1 (48213),Current Score,Unposted Current Score,\
Final Score,Unposted Final Score
    Points Possible,,,,,28.00,(read only),(read only),(read only),(read only)
"Smith, Jane",12345,S0001,jsmith,Section 01,,,,,
"Øster, Åsa",12346,S0002,aoster,Section 02,,,,,
"Lee, Ann",12347,S0003,alee,Section 01,,,,,
"Student, Test",12399,,,Section 01,,,,,
"""
COURSE = [{"id": "12345", "sis": "S0001", "login": "jsmith", "name": "Jane Smith", "sortable_name": "Smith, Jane"},
          {"id": "12346", "sis": "S0002", "login": "aoster", "name": "Åsa Øster", "sortable_name": "Øster, Åsa"},
          {"id": "12347", "sis": "S0003", "login": "alee", "name": "Ann Lee", "sortable_name": "Lee, Ann"},
          {"id": "12399", "sis": "", "login": "", "name": "Test Student", "sortable_name": "Student, Test"}]


def walkthrough() -> list[str]:
    """The lines of the guide's walkthrough block (the ```bash block after the marker), continuations joined."""
    text = GUIDE.read_text(encoding="utf-8")
    assert MARKER in text, f"teachers_guide.md has no {MARKER!r} block"
    block = re.search(r"```bash\n(.*?)```", text[text.index(MARKER):], re.S)
    assert block, "the walkthrough marker is not followed by a ```bash block"
    return block[1].replace("\\\n", " ").splitlines()


def steps(lines: list[str]) -> tuple[str, str]:
    """The block's commands before the students work (its first line to step 3's comment) and after (its first
    line, which enters the course folder, then step 4 on)."""
    three = next(i for i, line in enumerate(lines) if line.startswith("# 3."))
    four = next(i for i, line in enumerate(lines) if line.startswith("# 4."))
    return "\n".join(lines[:three]), "\n".join([lines[0], *lines[four:]])


def shell(script: str, home: Path) -> str:
    """Run `script` as the guide's reader would: bash, stopping at the first failure, the venv's commands first."""
    env = {**os.environ, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=home, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    return done.stdout


def handed_in(uid: str, key: str, typed: dict[str, object]) -> dict:
    """The solutions notebook as a student hands it in: set up with their key, each answer cell of `typed`
    holding a typed number instead of the computation."""
    notebook = copy.deepcopy(json.loads((ROOT / "solutions" / "01_rooflines.ipynb").read_text(encoding="utf-8")))
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if "sb.setup(" in source:
            cell["source"] = f'import scalebook as sb\n\nrt = sb.setup(student="{uid}", key="{key}")'
        for qid, value in typed.items():
            if f'sb.check("{qid}"' in source:
                cell["source"] = f'answer = {value!r}\nsb.check("{qid}", answer)'
    return notebook


def book_answer_that_differs(key: str) -> tuple[str, float]:
    """A problem of set 1 whose answer for this key differs from the book's: its id and the book's answer (what a
    student who kept the book's numbers types)."""
    for problem in list_problems("01."):
        book = problem.reference(values_for(problem.qid, None))
        if isinstance(book, float) and problem.reference(values_for(problem.qid, key)) != pytest.approx(book,
                                                                                                       rel=0.05):
            return problem.qid, book
    raise AssertionError("no problem of set 1 varies for this key")


def test_the_guides_walkthrough_takes_a_canvas_class_from_its_export_to_canvas_s_import(tmp_path):
    home = tmp_path / "home"
    (home / "course").mkdir(parents=True)
    (home / "course" / "canvas-export.csv").write_text(CANVAS_EXPORT, encoding="utf-8")
    before, after = steps(walkthrough())
    shell(before, home)
    course = home / "course"
    keys = {row["uid"]: row["key"] for row in csv.DictReader((course / "keys.csv").open(encoding="utf-8"))}
    assert set(keys) == {"jsmith", "aoster", "alee", "canvas-12399"}
    assert oct((course / "course.key").stat().st_mode & 0o777) == "0o600"

    # The students: Jane works with her key; Ann keeps the book's numbers on one problem; Åsa and the test
    # student send nothing; someone outside the class uploads too.
    qid, book = book_answer_that_differs(keys["alee"])
    uploads = course / "submissions"
    uploads.mkdir()
    for name, notebook in {"smithjane_12345_900001_01_rooflines.ipynb": handed_in("jsmith", keys["jsmith"], {}),
                           "leeann_LATE_12347_900002_01_rooflines.ipynb": handed_in("alee", keys["alee"], {qid: book}),
                           "doejohn_99999_900003_01_rooflines.ipynb": handed_in("jsmith", keys["jsmith"], {})}.items():
        (uploads / name).write_text(json.dumps(notebook), encoding="utf-8")
    shell(after, home)

    rows = {row["file"]: row for row in csv.DictReader((course / "grades" / "gradebook.csv").open(encoding="utf-8"))}
    jane, ann = rows["smithjane_12345_900001_01_rooflines.ipynb"], rows["leeann_LATE_12347_900002_01_rooflines.ipynb"]
    stranger = rows["doejohn_99999_900003_01_rooflines.ipynb"]
    assert (jane["student"], jane["status"], float(jane["total"]), jane["possible"]) == ("jsmith", "graded", 28, "28")
    points = float(jane[qid])
    assert (ann["student"], ann["status"], float(ann["total"])) == ("alee", "graded", 28 - points)
    assert stranger["status"] == "unmatched" and "99999" in stranger["detail"] and stranger["total"] == "0"
    feedback = "".join(p.read_text(encoding="utf-8") for p in (course / "grades" / "feedback").glob("alee-*.md"))
    assert f"{qid}: 0/{points:g} ✗ wrong — right for the book" in feedback
    assert (course / "grades" / "reasoning" / "01_rooflines.md").is_file()

    text = (course / "grades" / "canvas-import.csv").read_text(encoding="utf-8")
    assert csv_rows(text)[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Problem set 1 (48213)"]
    imported = canvas_reads(text, COURSE)
    assert imported["assignments"] == {"Problem set 1 (48213)": {"title": "Problem set 1", "id": "48213",
                                                                 "points_possible": "28"}}
    grades = {row["student"]: row["grades"]["Problem set 1 (48213)"] for row in imported["rows"]}
    assert None not in grades, "every row of the import is a student Canvas finds"
    assert {s: float(g) if g else None for s, g in grades.items()} == {
        "12345": 28, "12346": None, "12347": 28 - points, "12399": None}
