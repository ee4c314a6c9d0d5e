"""The autograder on a hostile class: honest work earns its marks, every cheat scores what a blank notebook
scores, nothing outside a submission's scratch copy changes, no process survives, every file gets its row."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import hostile
import pytest

from scalebook.course.answers import GRADE_ANSWERS, check
from scalebook.course.grader import autograde, gradebook, sandbox, strictjson, submissions
from scalebook.course.grader.autograde import grade, question_points, read_answers
from scalebook.course.grader.limits import Limits
from scalebook.course.grader.submissions import find_submissions

ROOT = Path(__file__).resolve().parents[2]
# Honest work in three problem sets (numbers; the key's inputs; JAX under the sandbox's caps): every
# set's solutions run under nbval already, and the benchmark grades all of them in sandboxes.
HONEST = ["01_rooflines", "06_training_llama", "10_jax"]
CHEATERS = list(hostile.attacks(ROOT, ROOT, ROOT))


def _digest(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """{relative path: content hash, link target or file kind} of everything under `folder`, links unfollowed,
    walked without recursion; a path the system cannot name (over its length limit) is recorded as such."""
    found, todo = {}, [folder]
    while todo:
        parent = todo.pop()
        try:
            names = os.listdir(parent)
        except OSError as err:
            found[str(parent.relative_to(folder))] = f"unlistable: {err.strerror}"
            continue
        for name in names:
            path = parent / name
            rel = str(path.relative_to(folder))
            if name == "__pycache__" or rel in skip:
                continue
            try:
                mode = path.lstat().st_mode
            except OSError as err:
                found[rel] = f"unreadable: {err.strerror}"
                continue
            if stat.S_ISDIR(mode):
                todo.append(path)
                continue
            found[rel] = (hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(mode) else
                          f"-> {os.readlink(path)}" if stat.S_ISLNK(mode) else f"mode {stat.S_IFMT(mode)}")
    return found


def _survivors(uids: range, marker: str) -> list[str]:
    """Command lines of live processes of one grading run: those that carry its `marker` (every process a
    hostile submission of that run tries to leave behind does) or that run as one of its sandbox `uids`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            uid = int(Path(f"/proc/{pid}/status").read_text().split("\nUid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if marker in cmdline or uid in uids:
            found.append(f"{pid} uid {uid}: {cmdline}")
    return found


GRADE = """
import sys
from pathlib import Path
from scalebook.course.grader import sandbox
from scalebook.course.grader.limits import Limits
from scalebook.course.grader.autograde import grade
subs, out, root = map(Path, sys.argv[1:4])
sandbox.UIDS = range(int(sys.argv[4]), int(sys.argv[4]) + 100_000)  # this run's own uids
print(grade(subs, out, root=root, timeout=float(sys.argv[5]), jobs=2, limits=Limits(processes=256)))
"""
LIMITS = Limits(processes=256, jobs=2)
REFERENCE = 0.1  # seconds the workload of `_slowness` takes on a quiet 2-core machine of 2025


def _slowness() -> float:
    """How many times slower than REFERENCE this machine runs a fixed CPU workload now (at least 1): the
    median of three runs, taken when the class is graded, so that its time limits follow the machine."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        sum(i * i for i in range(2_000_000))
        times.append(time.perf_counter() - start)
    return max(1.0, sorted(times)[1] / REFERENCE)


def cell_limit(quiet: float = 60) -> float:
    """Seconds per cell: `quiet` on a quiet machine (60 for the class: the heaviest honest cell, JAX's, takes
    about 10 s there with one CPU), scaled by `_slowness` on a busy one. No notebook of the class runs to its
    limit (the cell that does is graded on its own), so the class takes its work's time, whatever the limit."""
    return quiet * _slowness()


def _run_grader(subs: Path, out: Path, root: Path, limit: float,
                cwd: Path) -> tuple[subprocess.CompletedProcess, range]:
    """Grade `subs` into `out` with the course at `root`, `limit` seconds per cell, in a process of its own
    (started in `cwd`) with its own sandbox uids (returned), so that no other grading run shares them."""
    uids = range(first := 3_000_000 + 100_000 * secrets.randbelow(10_000), first + 100_000)
    ran = subprocess.run([sys.executable, "-c", GRADE, str(subs), str(out), str(root), str(first), str(limit)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)},
                         cwd=cwd, timeout=3600)
    return ran, uids


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One grading run of the whole class (honest, blank, broken, hostile), shared by the tests below, with
    another grading run alive beside it (a teacher's, or a second `make test`) that it must not disturb, and
    JupyterLab's checkpoint folders beside the course's solutions (so test_gate.py need not grade it again).

    The grader runs on a copy of the repository's package and solutions (PYTHONPATH), so that their hashes
    before and after see only what grading did, not the edits of someone working in the checkout meanwhile.
    """
    if why := sandbox.available():
        pytest.skip(f"no sandbox here: {why}")
    base = tmp_path_factory.mktemp("class")
    root, subs, grades = base / "repo", base / "submissions", base / "grades"
    for name in ("scalebook", "solutions"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    hostile.jupyterlab_was_here(root)  # what a teacher's JupyterLab session leaves beside the solutions
    subs.mkdir()
    grades.mkdir()
    out = grades / "gradebook.csv"
    (grades / "notes.txt").write_text("the teacher's notes")
    (grades / "last-year.csv").write_text("student,total\nzed,22\n")
    capped = "memory of the whole" not in sandbox.describe()
    expected = hostile.write_class(root, subs, out, HONEST, memory_capped=capped)
    watched = {"submissions": (subs, ()), "package": (root / "scalebook", ()),
               "solutions": (root / "solutions", ()),
               "output": (grades, ("gradebook.csv", "gradebook-manual.csv", "feedback", "reasoning"))}
    before = {name: _digest(*where) for name, where in watched.items()}
    limit = cell_limit()
    with hostile.neighbour(root, base / "neighbour") as alive:
        start = time.monotonic()
        ran, uids = _run_grader(subs, out, root, limit, base)
        seconds = time.monotonic() - start
        deadline = time.monotonic() + 5  # the kernel needs a moment to reap a killed pid namespace
        while (survivors := _survivors(uids, hostile.marker(out))) and time.monotonic() < deadline:
            time.sleep(0.2)
        neighbour_alive = alive()
    assert ran.returncode == 0, ran.stderr[-3000:]
    after = {name: _digest(*where) for name, where in watched.items()}
    with open(out, newline="", encoding="utf-8") as f:
        rows = {r["file"]: r for r in csv.DictReader(f)}
    yield SimpleNamespace(subs=subs, out=out, rows=rows, expected=expected, before=before, after=after,
                          survivors=survivors, seconds=seconds, limit=limit, capped=capped,
                          neighbour_alive=neighbour_alive, summary=ran.stdout)
    for deep in ("nested", "longpath"):
        hostile.unnest(subs / deep)


def _row(graded: SimpleNamespace, student: str, problem_set: str = hostile.PROBLEM_SET) -> dict[str, str]:
    return graded.rows[gradebook.cell(f"{student}__{problem_set}.ipynb")]


@pytest.mark.slow
def test_a_cell_past_its_limit_gets_a_timeout_row_and_leaves_nothing_running(tmp_path):
    """A notebook whose cell never ends, graded in the sandbox on its own (in the class it would hold the run
    for the class's whole per-cell limit): its row says timeout and names the limit, and its process is gone."""
    if why := sandbox.available():
        pytest.skip(f"no sandbox here: {why}")
    subs, out = tmp_path / "submissions", tmp_path / "grades" / "gradebook.csv"
    subs.mkdir()
    out.parent.mkdir()
    (subs / f"cy__{hostile.PROBLEM_SET}.ipynb").write_text(hostile.notebook(f"while True:\n    pass  # {out}"))
    limit = cell_limit(5)
    ran, uids = _run_grader(subs, out, ROOT, limit, tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    with open(out, newline="", encoding="utf-8") as f:
        [row] = list(csv.DictReader(f))
    assert row["status"] == "timeout" and f"longer than {limit:g} s" in row["detail"], row
    deadline = time.monotonic() + 5  # the kernel needs a moment to reap a killed pid namespace
    while _survivors(uids, str(out)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _survivors(uids, str(out)) == []


@pytest.mark.slow
def test_every_file_found_gets_exactly_one_row(graded):
    entries = [f"{e}/{f}" if (graded.subs / e).is_dir() and not (graded.subs / e).is_symlink() else e
               for e in os.listdir(graded.subs) for f in (os.listdir(graded.subs / e) if (graded.subs / e).is_dir()
                                                          and not (graded.subs / e).is_symlink() else [""])]
    assert sorted(graded.rows) == sorted(map(gradebook.cell, entries)) and len(entries) > 40
    for name, status in graded.expected.items():
        assert graded.rows[gradebook.cell(name)]["status"] == status, name
    assert {r["sandbox"] for r in graded.rows.values()} == {f"{sandbox.backend()}; {sandbox.describe(LIMITS)}"}
    shared = {f"{name}__{hostile.PROBLEM_SET}.ipynb" for name in ("vic", "linker")}  # one file: graded, flagged
    assert {r["detail"] for r in graded.rows.values() if r["status"] == "graded" and r["file"] not in shared} == {""}
    assert all("hard links" in graded.rows[name]["detail"] for name in shared)


@pytest.mark.slow
def test_the_student_is_named_by_one_place_and_the_latest_file_counts(graded):
    mallory = graded.rows[f"mallory/alice__{hostile.PROBLEM_SET}.ipynb"]
    assert mallory["student"] == "mallory" and int(mallory["total"]) == 0
    assert "alice" not in {r["student"] for r in graded.rows.values()}
    assert not list((graded.out.parent / "feedback").glob("alice-*"))
    superseded = graded.rows[f"twice__{hostile.PROBLEM_SET}.ipynb"]
    assert superseded["student"] == "twice" and superseded["detail"].endswith(f"twice/{hostile.PROBLEM_SET}.ipynb")


@pytest.mark.slow
def test_no_text_of_a_submission_reaches_a_terminal_spreadsheet_or_page_raw(graded):
    csv_text = graded.out.read_text(encoding="utf-8")
    feedback = "".join(p.read_text(encoding="utf-8") for p in (graded.out.parent / "feedback").iterdir())
    for text in (csv_text.replace("\r\n", "\n"), feedback, graded.summary):
        assert not any(ch in text for ch in "\x00\x07\x1b\r\u202e\ufffd"), "a control character passed raw"
    assert not re.search(r"(?<!\\)[<>]|\]\(javascript|(?<!\\)\*b", feedback), "markup passed unescaped"
    assert "\\<img src\\=x" in feedback  # escaped, still readable


@pytest.mark.slow
def test_the_terminal_shows_a_student_per_row_and_fits(graded):
    lines = graded.summary.splitlines()
    assert max(map(len, lines[:-2])) <= 120
    assert sum(line.startswith("ada ") for line in lines) == 1
    assert all(hostile.PROBLEM_SET not in line for line in lines[1:])  # the per-question table is in the CSV


@pytest.mark.slow
def test_a_neighbouring_grading_run_is_left_alone(graded):
    assert graded.neighbour_alive


@pytest.mark.slow
@pytest.mark.parametrize("problem_set", HONEST)
def test_the_solutions_earn_full_marks(graded, problem_set):
    row = _row(graded, "ada", problem_set)
    assert row["status"] == "graded"
    assert int(row["total"]) == int(row["possible"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize("student", CHEATERS)
def test_every_cheat_scores_what_the_blank_notebook_scores(graded, student):
    if student == "glutton" and not graded.capped:
        pytest.skip(f"no cgroup caps a sandbox's memory here, so the attack on it is not run: {sandbox.describe()}")
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
    assert {"a b", "a_b", "'=1+2", "'@sum(a1)", "'-2+3", "\\xff\\xfe"} <= students  # names compared case-folded
    assert not any(s and s[0] in "=+-@\t\r" for r in graded.rows.values() for s in r.values())
    feedback = sorted(p.name for p in (graded.out.parent / "feedback").iterdir())
    assert len(feedback) == len(students)  # 'a b' and 'a_b' (and the rest) each have their own file
    assert "not answered" in (graded.out.parent / "feedback" / gradebook.feedback_name("bo")).read_text()


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
    # RFC 8259 section 6 (https://www.rfc-editor.org/rfc/rfc8259#section-6): "Numeric values that cannot be
    # represented in the grammar below (such as Infinity and NaN) are not permitted"; Python writes them anyway.
    b'{"qid": "01.1", "answer": NaN}', b'{"qid": "01.1", "answer": [1.0, -Infinity]}',
    b'{"qid": "01.1", "answer": 1e999}', b'{"qid": "01.1", "answer": ' + b"9" * 400 + b"}",
    b'{"cell": Infinity, "error": "forged"}', b'{"cell": 1e999, "error": "forged"}', b'{"cell": NaN, "error": "x"}',
    b'{"cell": 1e300, "error": "a cell number of 301 digits"}', b'{"cell": -3, "error": "x"}',
    b'{"qid": "01.1", "hint": Infinity}', b'{"qid": "01.1", "hint": 1e999}',
])
def test_a_malformed_forged_or_oversized_record_is_a_wrong_answer_not_a_crash(line):
    data = _records({"qid": "01.1", "answer": 1.0}, line)
    outcomes = read_answers(data, {"01.1": 1}, lambda q, a: "right")
    assert outcomes["01.1"] in ("wrong", "right") and (outcomes["01.1"] == "wrong") == (b"01.1" in line)
    assert autograde.records(data)[2] == []  # no forged crash report: a cell number is a small positive int


@pytest.mark.parametrize("text, name", [(b"[NaN]", "NaN"), (b'{"a": Infinity}', "Infinity"),
                                        (b"[-Infinity]", "-Infinity"), (b"[1e999]", "1e999"),
                                        (b"[" + b"9" * 400 + b"]", "9" * 400)])
def test_json_outside_the_standard_is_refused_by_name(text, name):
    with pytest.raises(ValueError, match=f"{name[:40]}.*not a JSON number"):
        strictjson.parse(text)


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
    assert gradebook.cell("=1+2") == "'=1+2" and gradebook.cell("\tx") == "\\x09x"
    assert gradebook.cell("ada") == "ada" and gradebook.cell("\udcffb") == "\\xffb"
    assert gradebook.clean("a\x1b[2J\r\x00\x07\u202eb\ud800") == "a\\x1b[2J\\x0d\\x00\\x07\\u202eb\\ud800"
    # invisible letters too (a Hangul filler is a letter, Lo; the Braille blank a symbol): escaped, never raw
    assert gradebook.cell("dup\u3164") == "dup\\u3164" and gradebook.clean("\u2800b\U000e0041") == "\\u2800b\\U000e0041"
    assert gradebook.markdown("<img src=x> [a](b) *c*") == "\\<img src\\=x\\> \\[a\\]\\(b\\) \\*c\\*"
    names = {gradebook.feedback_name(s) for s in ("a b", "a_b", "a/b", "../a", "\udcff")}
    assert len(names) == 5 and all("/" not in n and not n.startswith(".") for n in names)


def test_submissions_are_found_flat_or_per_student_and_links_are_refused(tmp_path):
    (tmp_path / "eve").mkdir()
    (tmp_path / "eve" / "02_tpus.ipynb").write_text("{}")
    (tmp_path / "eve" / "old").mkdir()
    (tmp_path / "fay__03_sharding.ipynb").write_text("{}")
    (tmp_path / "gus__03_sharding.ipynb").symlink_to(tmp_path / "fay__03_sharding.ipynb")
    (tmp_path / "hal__03_sharding.ipynb").write_text("{}")
    os.link(tmp_path / "hal__03_sharding.ipynb", tmp_path / "ivy__03_sharding.ipynb")
    (tmp_path / "mallory").mkdir()
    (tmp_path / "mallory" / "alice__02_tpus.ipynb").write_text("{}")
    (tmp_path / "03_sharding.ipynb").write_text("{}")
    found = {(s.student, s.problem_set, s.refused) for s in find_submissions(tmp_path)}
    assert found == {("eve", "02_tpus", ""), ("eve", None, "folder refused"), ("fay", "03_sharding", ""),
                     ("gus", "03_sharding", "symlink refused"), ("hal", "03_sharding", ""),
                     ("ivy", "03_sharding", ""), ("mallory", None, "misnamed"), ("03_sharding", None, "unrecognised")}


def test_a_hard_link_to_a_classmates_notebook_flags_both_and_refuses_neither(tmp_path, monkeypatch):
    """A hard link has no original: both names are one inode, with one owner, one set of times, one content, so
    nothing tells who made it. Refusing both (as a one-name rule does) fails the student whose work was taken;
    so each name is graded as its student's and both rows name the other, for the teacher to judge, as for any
    copy. A file with a name outside the submissions (the course's own solutions, say) is no one's own work: refused."""
    subs, elsewhere = tmp_path / "subs", tmp_path / "course"
    subs.mkdir()
    elsewhere.mkdir()
    (subs / "vic__01_rooflines.ipynb").write_text(hostile.notebook("1"))
    os.link(subs / "vic__01_rooflines.ipynb", subs / "linker__01_rooflines.ipynb")
    (elsewhere / "01_rooflines.ipynb").write_text(hostile.notebook("2"))
    os.link(elsewhere / "01_rooflines.ipynb", subs / "thief__01_rooflines.ipynb")
    monkeypatch.setattr(autograde, "run_notebook", lambda *args: ("graded", b"", ""))
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False)
    rows = {r["student"]: r for r in _csv_rows(tmp_path / "g.csv")}
    assert rows["vic"]["status"] == rows["linker"]["status"] == "graded"
    assert "linker__01_rooflines.ipynb" in rows["vic"]["detail"] and "vic__" in rows["linker"]["detail"]
    assert rows["thief"]["status"] == "hard link refused" and "outside" in rows["thief"]["detail"]


@pytest.mark.parametrize("swap", ["a link", "a classmate's folder"])
def test_a_folder_swapped_after_the_listing_never_gets_a_classmates_notebook_graded(tmp_path, monkeypatch, swap):
    """Every component below the submissions folder is opened relative to the folder above it, without following
    a link (openat with O_NOFOLLOW | O_DIRECTORY), and the file must be the one listed (its inode)."""
    for student in ("ada", "eve"):
        (tmp_path / student).mkdir()
        (tmp_path / student / "01_rooflines.ipynb").write_text(hostile.notebook(f"# {student}'s own work"))
    eve = next(s for s in find_submissions(tmp_path) if s.student == "eve")
    (tmp_path / "eve").rename(tmp_path / ".eve-was-here")
    if swap == "a link":
        (tmp_path / "eve").symlink_to(tmp_path / "ada", target_is_directory=True)
    else:
        (tmp_path / "ada").rename(tmp_path / "eve")
    ran: list[bytes] = []
    monkeypatch.setattr(autograde, "run_notebook", lambda content, *args: ran.append(content) or ("graded", b"", ""))
    result = autograde.grade_one(eve, ROOT, sandboxed=False)
    assert ran == [] and result.status in ("symlink refused", "replaced"), (result.status, result.detail)


def test_one_file_per_student_and_set_counts_the_latest(tmp_path):
    (tmp_path / "eve").mkdir()
    for path, when in ((tmp_path / "eve" / "02_tpus.ipynb", 2e9), (tmp_path / "eve__02_tpus.ipynb", 1e9),
                       (tmp_path / "eve__03_sharding.ipynb", 1e9)):
        path.write_text("{}")
        os.utime(path, (when, when))
    found = {str(s.path.relative_to(tmp_path)): (s.refused, s.why) for s in find_submissions(tmp_path)}
    assert found == {"eve/02_tpus.ipynb": ("", ""), "eve__03_sharding.ipynb": ("", ""),
                     "eve__02_tpus.ipynb": ("superseded", "the latest file counts: eve/02_tpus.ipynb")}


@pytest.mark.slow  # builds and walks folders 1,100 deep
def test_a_tree_of_any_depth_or_path_length_is_walked_without_harm(tmp_path):
    hostile.nest(tmp_path / "deep", 1100)
    hostile.nest(tmp_path / "long", 20, "l" * 250)
    try:
        found = {str(s.path.relative_to(tmp_path)): s.refused for s in find_submissions(tmp_path)}
    finally:
        hostile.unnest(tmp_path / "deep")
        hostile.unnest(tmp_path / "long")
    assert found == {"deep/a": "folder refused", f"long/{'l' * 250}": "folder refused"}


def test_a_file_that_vanishes_or_turns_into_a_pipe_gets_its_row_at_once(tmp_path):
    for name in ("gone", "pipe"):
        (tmp_path / f"{name}__01_rooflines.ipynb").write_text(hostile.notebook("1"))
    found = find_submissions(tmp_path)
    (tmp_path / "gone__01_rooflines.ipynb").unlink()
    (tmp_path / "pipe__01_rooflines.ipynb").unlink()
    os.mkfifo(tmp_path / "pipe__01_rooflines.ipynb")
    results: list = []
    worker = threading.Thread(target=lambda: results.extend(autograde.grade_one(s, ROOT, sandboxed=False)
                                                            for s in found), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert [r.status for r in results] == ["vanished", "special file refused"]
    assert submissions.submission_of(tmp_path / "never__01_rooflines.ipynb", None).refused == "vanished"


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_gradebook_costs_a_constant_per_row(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    for i in range(300):
        (subs / f"s{i % 30}__{i % 100:02d}_set{i}.ipynb").write_text("junk")
    rewrites = []
    real = gradebook.write_atomic
    monkeypatch.setattr(gradebook, "write_atomic", lambda path, text: rewrites.append(path) or real(path, text))
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False)
    assert len(_csv_rows(tmp_path / "g.csv")) == 300
    assert len(rewrites) == 1 + 1 + 30  # the header, the CSV at the end, each student's feedback at the end


def test_a_row_that_cannot_be_written_becomes_that_rows_status(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    for student in ("ada", "bo", "cy"):
        (subs / f"{student}__notes.txt").write_text("junk")
    real = gradebook.feedback_section

    def failing(result):
        if result.submission.student == "bo" and result.status != "grader error":
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        return real(result)

    monkeypatch.setattr(gradebook, "feedback_section", failing)
    table = grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False)
    rows = {r["student"]: r for r in _csv_rows(tmp_path / "g.csv")}
    assert rows["bo"]["status"] == "grader error" and "writing its row" in rows["bo"]["detail"]
    assert rows["ada"]["status"] == rows["cy"]["status"] == "unrecognised" and len(table.rows) == 4


@pytest.mark.slow
def test_a_lone_surrogate_in_a_notebook_is_its_rows_business(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada__01_rooflines.ipynb").write_text(hostile.notebook("1", kernel="\ud800", language="julia\ud800"))
    (subs / "bo__01_rooflines.ipynb").write_text(hostile.notebook("1", display="\ud800\x1b"))
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False, timeout=60)
    rows = _csv_rows(tmp_path / "g.csv")
    assert [r["status"] for r in rows] == ["not python (\\ud800)", "graded"]
    assert all(p.read_text(encoding="utf-8") for p in (tmp_path / "feedback").iterdir())


# The grader reads the file's bytes and hands them to the child that runs the notebook; nothing after reads the
# notebook again. The child spends minutes parsing these eleven million objects and is stopped at the notebook's
# limit either way, so the limit is cut to 1 + 5 s: what is measured is the grader, not the child.
# The peak is read as VmHWM (this process image's own high-water mark), not getrusage's ru_maxrss, which Linux
# keeps across execve: a child started from a large pytest process would report its parent's size.
MEASURE = """
import re, sys
from pathlib import Path
from scalebook.course.grader import autograde
autograde._GRACE = 5
autograde.grade(Path(sys.argv[1]), Path(sys.argv[2]), root=Path(sys.argv[3]), sandboxed=False, timeout=1)
print(int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024)
"""


@pytest.mark.slow
@pytest.mark.parametrize("item, count", [("{}", 11_000_000), ('"ab"', 6_500_000)])
def test_a_32_mib_notebook_costs_the_grader_only_its_bytes(tmp_path, item, count):
    subs = tmp_path / "subs"
    subs.mkdir()
    junk = ",".join([item] * count)  # eleven million objects, or six million short strings: 500-700 MiB parsed
    text = '{"cells": [], "metadata": {"junk": [' + junk + ']}, "nbformat": 4, "nbformat_minor": 5}'
    assert 30 * 2**20 < len(text) <= submissions.MAX_NOTEBOOK
    (subs / "ada__01_rooflines.ipynb").write_text(text)
    ran = subprocess.run([sys.executable, "-c", MEASURE, str(subs), str(tmp_path / "g.csv"), str(ROOT)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    peak = int(ran.stdout.split()[-1])
    # Parsed, the notebook costs the grader 700-900 MiB; unparsed about 84 MiB. (Whole-suite runs once saw 429 and
    # 951 MiB through ru_maxrss: the pytest parent's size, inherited across exec; VmHWM does not inherit it.)
    assert peak < 300 * 2**20, f"the grader peaked at {peak / 2**20:.0f} MiB"


def test_the_summary_is_a_row_per_student_and_a_column_per_set():
    def result(student: str, problem_set: str, total: int, status: str = "graded") -> submissions.Result:
        sub = submissions.Submission(student, problem_set, Path(f"{student}__{problem_set}.ipynb"))
        return submissions.Result(sub, status, points={"q": total}, possible={"q": 12})

    sets = [f"{n:02d}_set" for n in range(14)]
    table = gradebook.summary([result(s, p, 7) for s in ("ada", "bo\x1b[2J") for p in sets] +
                              [result("ada", sets[0], 3, "superseded"), result("cy", sets[1], 0, "timeout")], "t")
    assert [r["student"] for r in table.rows] == ["(points possible)", "ada", "bo\\x1b[2J", "cy"]
    assert table.rows[0]["00"] == 12 and table.rows[1]["total"] == 7 * 14 and table.rows[3]["01"] == "0!"
    assert max(map(len, str(table).splitlines())) <= 120


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
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False, force=True)
    rows = _csv_rows(tmp_path / "g.csv")
    assert [(r["status"], r["sandbox"]) for r in rows] == [("unrecognised", "none (--no-sandbox)")]


def test_a_grader_failure_on_one_file_becomes_its_row(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada__01_rooflines.ipynb").write_text(hostile.notebook(*hostile.blank(hostile.QIDS)))
    (subs / "bo__01_rooflines.ipynb").write_text("not a notebook")

    def broken(*args: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(autograde, "run_notebook", broken)
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False)
    rows = _csv_rows(tmp_path / "g.csv")
    assert [r["status"] for r in rows] == ["grader error", "corrupt"]
    assert "disk on fire" in rows[0]["detail"]


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
    outcomes = read_answers(_records({"qid": "01.99", "answer": 1.0}), {"01.99": 1}, autograde.AnswerKey().judge)
    assert outcomes == {"01.99": "no key"}


@pytest.mark.slow
def test_a_fractional_cell_limit_is_accepted(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada__01_rooflines.ipynb").write_text(hostile.notebook("x = 1"))
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False, timeout=62.5)
    assert [r["status"] for r in _csv_rows(tmp_path / "g.csv")] == ["graded"]


def test_a_forced_second_run_replaces_the_feedback_even_before_it_ends(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada__99_nothing.ipynb").write_text("junk")
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False)

    def crash(self: gradebook.Gradebook) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(gradebook.Gradebook, "finish", crash)
    with pytest.raises(KeyboardInterrupt):  # a run stopped before its final rewrite
        grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False, force=True)
    text = (tmp_path / "feedback" / gradebook.feedback_name("ada")).read_text(encoding="utf-8")
    assert text.count("# Feedback for ada") == 1 and text.count("## ") == 1


def test_the_sandboxes_of_a_run_share_the_hosts_tables_by_its_job_count(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada__01_rooflines.ipynb").write_text("junk")
    seen = []
    monkeypatch.setattr(autograde, "grade_one", lambda s, root, timeout, sandboxed, limits, *rest:
                        seen.append(limits) or submissions.Result(s, "graded"))
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False, jobs=3, limits=Limits(files=300))
    assert [(limits.jobs, limits.files) for limits in seen] == [(3, 300)]


@pytest.mark.slow
def test_outputs_of_cells_that_did_not_run_do_not_count(tmp_path):
    """nbclient does not run a code cell tagged `skip-execution` (NotebookClient.skip_cells_with_tag,
    https://nbclient.readthedocs.io/en/latest/reference/config_options.html): an error output saved in it was
    never raised by this run, and is not reported as a crash (nor is the cell run); the cell that did raise is."""
    nb = json.loads(hostile.notebook("1 / 0", "raise ValueError('a cell marked not to run')"))
    nb["cells"][1]["metadata"]["tags"] = ["skip-execution"]
    nb["cells"][1]["outputs"] = [{"output_type": "error", "ename": "ValueError", "evalue": "pre-filled",
                                  "traceback": []}]
    (tmp_path / "ada__01_rooflines.ipynb").write_text(json.dumps(nb))
    [found] = find_submissions(tmp_path)
    result = autograde.grade_one(found, ROOT, timeout=60, sandboxed=False)
    assert result.status == "graded" and result.errors == ["cell 1: ZeroDivisionError: division by zero"]


def test_no_two_students_share_a_feedback_file():
    """Two names found in a minute (a birthday search over 114,222 names): their feedback files were one."""
    first, second = "s" * 60 + "83162", "s" * 60 + "114221"
    assert gradebook.feedback_name(first) != gradebook.feedback_name(second)


def test_a_feedback_file_of_another_student_is_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.setattr(gradebook, "NAME_HASH", 0, raising=False)  # no hash: 'a b' and 'a!b' share a name
    subs = tmp_path / "subs"
    subs.mkdir()
    for student in ("a b", "a!b"):
        (subs / f"{student}__notes.txt").write_text("junk")
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=False)
    rows = {r["student"]: r for r in _csv_rows(tmp_path / "g.csv")}
    assert rows["a b"]["status"] == "unrecognised" and rows["a!b"]["status"] == "grader error"
    assert "is 'a b''s" in rows["a!b"]["detail"]
    [feedback] = (tmp_path / "feedback").iterdir()
    assert feedback.read_text(encoding="utf-8").startswith("# Feedback for a b\n")
