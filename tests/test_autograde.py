"""The autograder on a hostile class: honest work earns its marks, every cheat scores what a blank notebook
scores, nothing outside a submission's scratch copy changes, no process survives, every file gets its row."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import hostile
import pytest

from scalebook import autograde, sandbox
from scalebook.autograde import find_submissions, grade, question_points, read_answers
from scalebook.grading import GRADE_ANSWERS, check

ROOT = Path(__file__).resolve().parents[1]
# Honest work in three problem sets (numbers; the key's inputs; JAX under the sandbox's caps): every
# set's solutions run under nbval already, and the benchmark grades all of them in sandboxes.
HONEST = ["01_rooflines", "06_training_llama", "10_jax"]
CHEATERS = [*hostile.attacks(ROOT, ROOT, ROOT), "\udcff\udcfe"]


def _digest(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """{relative path: content hash, link target or file kind} of everything under `folder`, links unfollowed."""
    found = {}
    for parent, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__" and d not in skip]
        for name in dirs + files:
            path = Path(parent) / name
            rel = str(path.relative_to(folder))
            mode = path.lstat().st_mode
            if rel in skip or stat.S_ISDIR(mode) and not path.is_symlink():
                continue
            found[rel] = (hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(mode) else
                          f"-> {os.readlink(path)}" if stat.S_ISLNK(mode) else f"mode {stat.S_IFMT(mode)}")
    return found


def _survivors() -> list[str]:
    """Command lines of live processes a submission started (its marker) or that run as a sandbox's uid."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            uid = int(Path(f"/proc/{pid}/status").read_text().split("\nUid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if hostile.MARKER in cmdline or uid >= sandbox._FIRST_UID:
            found.append(f"{pid} uid {uid}: {cmdline}")
    return found


GRADE = """
import sys
from pathlib import Path
from scalebook import sandbox
from scalebook.autograde import grade
subs, out, root = map(Path, sys.argv[1:])
grade(subs, out, root=root, timeout=20, jobs=2, limits=sandbox.Limits(processes=256))
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One grading run of the whole class (honest, blank, broken, hostile), shared by the tests below.

    The grader runs on a copy of the repository's package and solutions (PYTHONPATH), so that their hashes
    before and after see only what grading did, not the edits of someone working in the checkout meanwhile.
    """
    if why := sandbox.available():
        pytest.skip(f"no sandbox here: {why}")
    base = tmp_path_factory.mktemp("class")
    root, subs, grades = base / "repo", base / "submissions", base / "grades"
    for name in ("scalebook", "solutions"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    subs.mkdir()
    grades.mkdir()
    out = grades / "gradebook.csv"
    (grades / "notes.txt").write_text("the teacher's notes")
    (grades / "last-year.csv").write_text("student,total\nzed,22\n")
    expected = hostile.write_class(root, subs, out, HONEST)
    watched = {"submissions": (subs, ()), "package": (root / "scalebook", ()),
               "solutions": (root / "solutions", ()), "output": (grades, ("gradebook.csv", "feedback"))}
    before = {name: _digest(*where) for name, where in watched.items()}
    start = time.monotonic()
    ran = subprocess.run([sys.executable, "-c", GRADE, str(subs), str(out), str(root)], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(root)}, cwd=base, timeout=900)
    assert ran.returncode == 0, ran.stderr[-3000:]
    seconds = time.monotonic() - start
    deadline = time.monotonic() + 5  # the kernel needs a moment to reap a killed pid namespace
    while (survivors := _survivors()) and time.monotonic() < deadline:
        time.sleep(0.2)
    after = {name: _digest(*where) for name, where in watched.items()}
    with open(out, newline="", encoding="utf-8") as f:
        rows = {r["file"]: r for r in csv.DictReader(f)}
    return SimpleNamespace(subs=subs, out=out, rows=rows, expected=expected, before=before, after=after,
                           survivors=survivors, seconds=seconds)


def _row(graded: SimpleNamespace, student: str, problem_set: str = hostile.PROBLEM_SET) -> dict[str, str]:
    name = f"{student}__{problem_set}.ipynb".encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return graded.rows[name if name[:1] not in "=+-@" else "'" + name]


@pytest.mark.slow
def test_every_file_found_gets_exactly_one_row(graded):
    entries = [e for e in os.listdir(graded.subs) if e != "cy"] + [f"cy/{e}" for e in os.listdir(graded.subs / "cy")]
    assert len(graded.rows) == len(entries) > 30
    for name, status in graded.expected.items():
        assert graded.rows[autograde._text(name)]["status"] == status, name
    assert {r["sandbox"] for r in graded.rows.values()} == {sandbox.backend()}
    assert {r["detail"] for r in graded.rows.values() if r["status"] == "graded"} == {""}


@pytest.mark.slow
@pytest.mark.parametrize("problem_set", HONEST)
def test_the_solutions_earn_full_marks(graded, problem_set):
    row = _row(graded, "ada", problem_set)
    assert row["status"] == "graded"
    assert int(row["total"]) == int(row["possible"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize("student", CHEATERS)
def test_every_cheat_scores_what_the_blank_notebook_scores(graded, student):
    blank = _row(graded, "bo")
    assert blank["status"] == "graded" and int(blank["total"]) == 0
    row = _row(graded, student)
    qids = [q for q in blank if q.startswith("01.")]
    assert len(qids) >= len(hostile.QIDS) and [row[q] for q in qids] == [blank[q] for q in qids]
    assert row["total"] == blank["total"]


@pytest.mark.slow
@pytest.mark.parametrize("where", ["submissions", "package", "solutions", "output"])
def test_nothing_outside_the_scratch_copy_changes(graded, where):
    assert graded.after[where] == graded.before[where]


@pytest.mark.slow
def test_no_process_survives_the_run(graded):
    assert graded.survivors == []


@pytest.mark.slow
def test_names_are_kept_but_cannot_run_in_a_spreadsheet(graded):
    students = {r["student"] for r in graded.rows.values()}
    assert {"a b", "a_b", "'=1+2", "'@SUM(A1)", "'-2+3", "\\xff\\xfe"} <= students
    assert not any(s and s[0] in "=+-@\t\r" for r in graded.rows.values() for s in r.values())
    feedback = sorted(p.name for p in (graded.out.parent / "feedback").iterdir())
    assert len(feedback) == len(students)  # 'a b' and 'a_b' (and the rest) each have their own file
    assert "not answered" in (graded.out.parent / "feedback" / autograde._feedback_name("bo")).read_text()


def _records(*records: object) -> bytes:
    return b"\n".join(r if isinstance(r, bytes) else json.dumps(r).encode() for r in records)


def test_the_last_record_of_a_question_counts_and_verdicts_are_ignored():
    possible = {"01.1": 1, "01.2": 1, "01.3": 1, "01.4": 2}
    data = _records({"qid": "01.1", "answer": 5.0}, {"qid": "01.1", "answer": 1.0},
                    {"qid": "01.2", "answer": 1.0}, {"qid": "01.2", "outcome": "right"},
                    {"qid": "01.3", "unanswered": True})
    outcomes = read_answers(data, possible, lambda q, a: "right" if a == 1.0 else "wrong")
    assert outcomes == {"01.1": "right", "01.2": "wrong", "01.3": "unanswered", "01.4": "missing"}


@pytest.mark.parametrize("line", [
    b"garbage", b"\xff\xfe", b"[1, 2]", b'{"qid": 5}', b'{"qid": "01.1", "answer": {"a": 1}}',
    b'{"qid": "01.1", "answer": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"qid": "01.1", "answer": "' + b"x" * 200_000 + b'"}',
    b'{"qid": "01.1", "answer": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}',
    b'{"qid": "01.1", "answer": 1.0, "invalid": "a forged answer beside an invalid one"}',
])
def test_a_malformed_forged_or_oversized_record_is_a_wrong_answer_not_a_crash(line):
    data = _records({"qid": "01.1", "answer": 1.0}, line)
    outcomes = read_answers(data, {"01.1": 1}, lambda q, a: "right")
    assert outcomes["01.1"] in ("wrong", "right") and (outcomes["01.1"] == "wrong") == (b"01.1" in line)


def test_check_in_grading_mode_only_hands_out_plain_data(tmp_path, monkeypatch):
    import numpy as np

    channel = tmp_path / "answers.jsonl"
    monkeypatch.setenv(GRADE_ANSWERS, str(channel))

    class Always:
        def __eq__(self, other):
            return True

    for qid, answer in [("01.1", np.float32(2.5)), ("01.2", np.arange(3)), ("01.3", ...), ("01.4", Always()),
                        ("01.5", 10**5000), ("01.6", [[1, "a"], (2.0, None)]), ("99.9", "no key needed")]:
        assert check(qid, answer) is None
    records = [json.loads(line) for line in channel.read_text().splitlines()]
    assert records[:3] == [{"qid": "01.1", "answer": 2.5}, {"qid": "01.2", "answer": [0, 1, 2]},
                           {"qid": "01.3", "unanswered": True}]
    assert "invalid" in records[3] and "invalid" in records[4] and "answer" not in records[3]
    assert records[5]["answer"] == [[1, "a"], [2.0, None]] and records[6]["answer"] == "no key needed"


def test_names_are_escaped_and_feedback_files_unique():
    assert autograde._text("=1+2") == "'=1+2" and autograde._text("\tx") == "'\tx"
    assert autograde._text("ada") == "ada" and autograde._text("\udcffb") == "\\xffb"
    names = {autograde._feedback_name(s) for s in ("a b", "a_b", "a/b", "../a", "\udcff")}
    assert len(names) == 5 and all("/" not in n and not n.startswith(".") for n in names)


def test_submissions_are_found_flat_or_per_student_and_links_are_refused(tmp_path):
    (tmp_path / "eve").mkdir()
    (tmp_path / "eve" / "02_tpus.ipynb").write_text("{}")
    (tmp_path / "fay__03_sharding.ipynb").write_text("{}")
    (tmp_path / "gus__03_sharding.ipynb").symlink_to(tmp_path / "fay__03_sharding.ipynb")
    found = {(s.student, s.problem_set, s.refused) for s in find_submissions(tmp_path)}
    assert found == {("eve", "02_tpus", ""), ("fay", "03_sharding", ""), ("gus", "03_sharding", "symlink refused")}


def test_points_are_the_stars_of_each_heading():
    points = question_points("01_rooflines", ROOT)
    assert points["01.1"] == 1 and points["01.9"] == 3 and set(points.values()) == {1, 2, 3}


def test_grader_arguments_are_checked(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    with pytest.raises(ValueError, match="not a folder"):
        find_submissions(tmp_path / "nope")
    with pytest.raises(ValueError, match="timeout"):
        grade(subs, tmp_path / "g.csv", root=ROOT, timeout=0)
    with pytest.raises(ValueError, match="solutions/"):
        grade(subs, tmp_path / "g.csv", root=tmp_path)
    with pytest.raises(ValueError, match="is a folder"):
        grade(subs, tmp_path, root=ROOT)
    with pytest.raises(ValueError, match="inside the submissions"):
        grade(subs, subs / "g.csv", root=ROOT)
    (tmp_path / "old.csv").write_text("last term's grades")
    with pytest.raises(ValueError, match="force"):
        grade(subs, tmp_path / "old.csv", root=ROOT)
    assert (tmp_path / "old.csv").read_text() == "last term's grades"
    (tmp_path / "feedback").mkdir()
    (tmp_path / "feedback" / "ada-0.md").write_text("last term's feedback")
    with pytest.raises(ValueError, match="earlier feedback"):
        grade(subs, tmp_path / "new.csv", root=ROOT)
    assert (tmp_path / "feedback" / "ada-0.md").read_text() == "last term's feedback"
    monkeypatch.setattr(sandbox, "available", lambda: "bwrap is not installed")
    with pytest.raises(ValueError, match="no-sandbox"):
        grade(subs, tmp_path / "elsewhere" / "g.csv", root=ROOT)


def test_without_a_sandbox_every_row_says_so_and_force_overwrites(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "homework.txt").write_text("wrong file")
    (tmp_path / "g.csv").write_text("old")
    table = grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False, force=True)
    assert [(r["status"], r["sandbox"]) for r in table.rows] == [("unrecognised", "none (--no-sandbox)")]


def test_a_grader_failure_on_one_file_becomes_its_row(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada__01_rooflines.ipynb").write_text(hostile.notebook(*hostile.blank(hostile.QIDS)))
    (subs / "bo__01_rooflines.ipynb").write_text("not a notebook")

    def broken(*args: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(autograde, "_execute", broken)
    table = grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False)
    assert [r["status"] for r in table.rows] == ["grader error", "corrupt"]
    assert "disk on fire" in table.rows[0]["detail"]


def test_the_cli_refuses_to_overwrite_and_says_so(tmp_path, capsys):
    from scalebook import cli

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "homework.txt").write_text("wrong file")
    (tmp_path / "g.csv").write_text("old")
    assert cli.main(["grade", str(subs), "--out", str(tmp_path / "g.csv")]) == 2
    assert "--force" in capsys.readouterr().err and (tmp_path / "g.csv").read_text() == "old"
    assert cli.main(["grade", str(subs), "--out", str(tmp_path / "g.csv"), "--force", "--no-sandbox"]) == 0
    assert "none (--no-sandbox)" in (tmp_path / "g.csv").read_text()


def test_a_question_missing_from_the_key_is_marked_not_wrong():
    outcomes = read_answers(_records({"qid": "01.99", "answer": 1.0}), {"01.99": 1}, autograde._Key().judge)
    assert outcomes == {"01.99": "no key"}
