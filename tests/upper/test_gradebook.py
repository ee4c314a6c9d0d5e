"""The teacher's work is kept: the reasoning points typed into the manual-points file survive a forced regrade and a
regrade of some students; a regrade stopped at any moment (Ctrl-C) leaves the earlier gradebook or the new one,
every row present; `--out`'s folder is made; the grader runs from anywhere."""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
from pathlib import Path

import fakeclass
import pytest

from scalebook import cli
from scalebook.course.grader import autograde, gradebook
from scalebook.course.grader.autograde import grade

ROOT = fakeclass.ROOT


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def graded(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A class graded once (Ada with reasoning on 01.2, Grace): its submissions folder and gradebook."""
    fakeclass.fake_runs(monkeypatch)
    subs = fakeclass.submissions(tmp_path / "subs", {
        "ada__01_rooflines.ipynb": fakeclass.notebook(["01.1"], {"01.2": "Bytes per FLOP.", "01.5": "Ridge."}),
        "grace__01_rooflines.ipynb": fakeclass.notebook(["01.1", "01.3"])})
    grade(subs, tmp_path / "grades" / "g.csv", root=ROOT, sandboxed=False)
    return subs, tmp_path / "grades" / "g.csv"


def test_the_reasoning_points_typed_by_hand_survive_a_forced_regrade(graded):
    subs, out = graded
    manual = out.with_name("g-manual.csv")
    assert manual.read_text(encoding="utf-8").splitlines() == ["student,qid,points,note", "ada,01.2,,", "ada,01.5,,"]
    typed = "student,qid,points,note\nada,01.2,2.5,names the ridge point\nada,01.5,1,\n"
    manual.write_text(typed, encoding="utf-8")
    grade(subs, out, root=ROOT, sandboxed=False, force=True)
    assert manual.read_text(encoding="utf-8") == typed
    assert [(r["student"], r["reasoning"]) for r in _rows(out)] == [("ada", "3.5"), ("grace", "")]


def test_points_typed_into_the_gradebook_itself_stop_a_regrade_that_would_lose_them(graded):
    subs, out = graded
    text = out.read_text(encoding="utf-8")
    rows = _rows(out)
    rows[1]["reasoning"] = "4"
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    typed = out.read_text(encoding="utf-8")
    assert typed != text
    with pytest.raises(ValueError, match="grace, 01_rooflines: 4.*g-manual.csv"):
        grade(subs, out, root=ROOT, sandboxed=False, force=True)
    assert out.read_text(encoding="utf-8") == typed


def test_a_regrade_of_one_student_rewrites_only_their_rows_and_keeps_every_point(graded, tmp_path):
    subs, out = graded
    out.with_name("g-manual.csv").write_text("student,qid,points,note\nada,01.2,2,\n", encoding="utf-8")
    before = _rows(out)
    ada_feedback = (out.parent / "feedback" / gradebook.feedback_name("ada")).read_text(encoding="utf-8")
    (subs / "grace__01_rooflines.ipynb").write_text(fakeclass.notebook(["01.1", "01.3", "01.9"]), encoding="utf-8")
    (subs / "grace__03_sharding.ipynb").write_text(fakeclass.notebook(["03.1"]), encoding="utf-8")
    grade(subs, out, root=ROOT, sandboxed=False, students=["grace"])
    after = _rows(out)
    assert {k: after[0][k] for k in before[0]} == {**before[0], "reasoning": "2"}  # as it was, her points shown
    assert {after[0][k] for k in set(after[0]) - set(before[0])} == {""}  # and blank for Grace's new set
    assert [(r["student"], r["problem set"], r["total"]) for r in after] == [
        ("ada", "01_rooflines", "1"), ("grace", "01_rooflines", "6"), ("grace", "03_sharding", "1")]
    assert (out.parent / "feedback" / gradebook.feedback_name("ada")).read_text(encoding="utf-8") == ada_feedback
    with pytest.raises(ValueError, match="student='gracie' has no file.*closest: 'grace'"):
        grade(subs, out, root=ROOT, sandboxed=False, students=["gracie"])
    with pytest.raises(ValueError, match="no gradebook"):
        grade(subs, tmp_path / "elsewhere" / "g.csv", root=ROOT, sandboxed=False, students=["grace"])


def test_a_malformed_manual_points_file_stops_the_run_before_anything_is_graded(graded, monkeypatch):
    subs, out = graded
    out.with_name("g-manual.csv").write_text("student,qid,points,note\nada,1.2,2,\n", encoding="utf-8")
    monkeypatch.setattr(autograde, "grade_one", None)
    with pytest.raises(ValueError, match=r"g-manual.csv, line 2: qid='1.2' is not a question id"):
        grade(subs, out, root=ROOT, sandboxed=False, force=True)


def test_the_out_folder_is_made(tmp_path, monkeypatch):
    fakeclass.fake_runs(monkeypatch)
    subs = fakeclass.submissions(tmp_path / "subs", {"ada__01_rooflines.ipynb": fakeclass.notebook(["01.1"])})
    out = tmp_path / "term" / "week 3" / "g.csv"
    assert cli.main(["grade", str(subs), "--out", str(out), "--no-sandbox", "--course", str(ROOT)]) == 0
    assert [r["total"] for r in _rows(out)] == ["1"]


@pytest.mark.slow
def test_the_grader_runs_from_a_folder_far_from_the_checkout(tmp_path):
    away = tmp_path / "somewhere" / "else"
    subs = fakeclass.submissions(away / "subs", {"ada__01_rooflines.ipynb": "not a notebook"})
    ran = subprocess.run([sys.executable, "-m", "scalebook.cli.command", "grade", "subs", "--out", "out/g.csv",
                          "--no-sandbox"], cwd=away, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert [(r["student"], r["status"], r["possible"]) for r in _rows(away / "out" / "g.csv")] == [
        ("ada", "corrupt", "28")]
    assert subs.is_dir() and not (away / "solutions").exists()


# The regrade runs in a child process that stops at every step it takes (a file about to be graded, a row written,
# a file about to replace another) until the test says go on; at each step in turn, a run is interrupted with
# SIGINT, as Ctrl-C does. The steps are events, not times: nothing here depends on the machine's speed.
DRIVER = """
import os, signal, sys
from pathlib import Path
from scalebook.course.grader import autograde, gradebook

# Ctrl-C raises KeyboardInterrupt here whatever this process inherited: a shell without job control starts its
# background jobs with SIGINT ignored, and Python then installs no handler of its own.
signal.signal(signal.SIGINT, signal.default_int_handler)

def step(what):
    print(what, flush=True)
    sys.stdin.readline()

real_one, real_record, real_replace = autograde.grade_one, gradebook.Gradebook.record, os.replace

def grade_one(submission, *args):
    step(f"grading {submission.path.name}")
    return real_one(submission, *args)

def record(self, index, result):
    real_record(self, index, result)
    step(f"row {index}")

def replace(source, target):
    step(f"replacing {Path(target).name}")
    real_replace(source, target)

autograde.grade_one, gradebook.Gradebook.record, os.replace = grade_one, record, replace
autograde.grade(Path(sys.argv[1]), Path(sys.argv[2]), root=Path(sys.argv[3]), sandboxed=False, force=True, jobs=1)
print("done", flush=True)
"""


def _regrade(subs: Path, out: Path, stop: int | None) -> tuple[list[str], subprocess.Popen]:
    """Run the regrade, going on at every step but the `stop`-th, where it sends SIGINT; return the steps seen."""
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(subs), str(out), str(ROOT)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    steps = []
    for line in proc.stdout:
        steps.append(line.strip())
        if len(steps) - 1 == stop:
            proc.send_signal(signal.SIGINT)
            break
        if line.strip() != "done":
            proc.stdin.write("\n")
            proc.stdin.flush()
    proc.stdin.close()
    proc.wait(timeout=120)
    return steps, proc


@pytest.mark.slow
def test_a_regrade_stopped_at_any_step_leaves_the_old_gradebook_or_the_new_one_whole(tmp_path):
    subs = fakeclass.submissions(tmp_path / "subs", {f"{s}__01_rooflines.ipynb": "not a notebook"
                                                     for s in ("ada", "bo", "cy")})
    out = tmp_path / "grades" / "g.csv"
    grade(subs, out, root=ROOT, sandboxed=False)
    manual = out.with_name("g-manual.csv")
    manual.write_text("student,qid,points,note\nada,01.2,2,\n", encoding="utf-8")
    old = out.read_bytes()
    (subs / "dee__01_rooflines.ipynb").write_text("not a notebook")
    (subs / "ada__01_rooflines.ipynb").write_text("still not a notebook")
    steps, proc = _regrade(subs, out, None)
    assert steps[-1] == "done" and proc.returncode == 0, proc.stderr.read()
    new = out.read_bytes()
    assert sorted(r["file"] for r in _rows(out)) == sorted(p.name for p in subs.iterdir())
    assert "replacing g.csv" in steps and len(steps) > 8
    out.write_bytes(old)
    for stop in range(len(steps) - 1):
        seen, proc = _regrade(subs, out, stop)
        assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr.read(), seen
        replaced = "replacing g.csv" in seen[:-1]  # the step itself stops before the rename
        assert out.read_bytes() == (new if replaced else old), seen
        assert manual.read_text(encoding="utf-8") == "student,qid,points,note\nada,01.2,2,\n"
        assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == [], seen
        out.write_bytes(old)
