"""Gradescope and the LMS, against Gradescope's documented contract:

- "Autograder Specifications", https://gradescope-autograders.readthedocs.io/en/latest/specs/: the zip's root holds
  `setup.sh` and `run_autograder`; it is unpacked into /autograder/source; the upload is in /autograder/submission;
  run_autograder runs in /autograder and writes /autograder/results/results.json, whose fields (`TOP_FIELDS`,
  `TEST_FIELDS`) and visibilities (`hidden`, `after_due_date`, `after_published`, `visible`, per test too) it lists.
- "Submission Metadata", https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/:
  /autograder/submission_metadata.json (`METADATA`, its documented sample) names the submitters in `users`.
- "Base Images", https://gradescope-autograders.readthedocs.io/en/latest/base_images/: Ubuntu 22.04 by default
  (python3 3.10, no `python`); "Python 3 issues", https://gradescope-autograders.readthedocs.io/en/latest/
  python3_issues/: Gradescope's harness runs on the system python3, which must stay as it is.
- "Best Practices", https://gradescope-autograders.readthedocs.io/en/latest/best_practices/: students' code runs
  without privileges, and results.json is written even when the autograder fails.

The slow tests unpack the zip into a fake /autograder laid out as above and run its `run_autograder` end to end.
`setup.sh` itself is not run: every step of it needs the network (apt-get, uv's download of Python, PyPI). What it
leaves, a virtual environment of a Python >= 3.11 holding the pinned requirements.txt and this package, is made
here from the system's python3 (3.11 on this machine) with the very distributions and versions the zip pins
(`_installed`); the zip's own test checks that setup.sh makes that environment and that run_autograder calls it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from scalebook import cli
from scalebook.course.grader.autograde import AnswerKey, question_points
from scalebook.course.grader.submissions import Result, Submission
from scalebook.course.gradescope import UV, VISIBILITIES, autograder_zip, choose_notebook, results_json, run
from scalebook.course.key import get_problem
from scalebook.course.roster import Roster, Student
from scalebook.course.variants import student_key

ROOT = Path(__file__).resolve().parents[2]
# The fields of results.json that Gradescope's "Autograder Specifications" page documents, and their types.
TOP_FIELDS = {"score": (int, float), "execution_time": (int, float), "output": str, "output_format": str,
              "test_output_format": str, "test_name_format": str, "visibility": str, "stdout_visibility": str,
              "extra_data": dict, "tests": list, "leaderboard": list}
TEST_FIELDS = {"score": (int, float), "max_score": (int, float), "status": str, "name": str, "name_format": str,
               "number": str, "output": str, "output_format": str, "tags": list, "visibility": str,
               "extra_data": dict}
FORMATS = ("text", "html", "simple_format", "md", "ansi")
# submission_metadata.json as "Submission Metadata" documents it (its sample's fields and values).
METADATA = {
    "id": 123456, "created_at": "2018-07-01T14:22:32.365935-07:00",
    "assignment": {"due_date": "2018-07-31T23:00:00.000000-07:00", "group_size": 4, "group_submission": True,
                   "id": 25828, "course_id": 1234, "late_due_date": None,
                   "release_date": "2018-07-02T00:00:00.000000-07:00", "title": "Programming Assignment 1",
                   "total_points": "20.0"},
    "submission_method": "upload",
    "users": [{"email": "student@example.com", "id": 1234, "name": "Student User"}],
    "previous_submissions": [],
}
SECRET = "course secret of CS 599, spring 2027"
ROSTER = [Student("ada.lovelace", "Ada Lovelace", "ada@uni.example", "S100"),
          Student("bo.chen", "Bo Chen", "bo@uni.example", "S200"),
          Student("cy.diaz", "Cy Díaz", "cy@uni.example", "S300")]
SET = "01_rooflines"


def _valid(results: dict) -> None:
    """Assert `results` uses only documented fields, each of its documented type, with legal values."""
    assert set(results) <= set(TOP_FIELDS) and "tests" in results
    for name, value in results.items():
        assert isinstance(value, TOP_FIELDS[name]), name
    assert results.get("visibility", "visible") in VISIBILITIES and results["stdout_visibility"] in VISIBILITIES
    assert results.get("output_format", "text") in FORMATS
    for test in results["tests"]:
        assert set(test) <= set(TEST_FIELDS) and {"score", "max_score", "name"} <= set(test)
        assert all(isinstance(v, TEST_FIELDS[k]) for k, v in test.items()), test
        assert test["status"] in ("passed", "failed") and test["visibility"] in VISIBILITIES
        assert 0 <= test["score"] <= test["max_score"]


def _result(student: str = "ada", problem_set: str = SET) -> Result:
    return Result(Submission(student, problem_set, Path(f"{student}__{problem_set}.ipynb")), "graded",
                  outcomes={"01.1": "right", "01.2": "wrong", "01.3": "unanswered"},
                  points={"01.1": 1, "01.2": 0, "01.3": 0}, possible={"01.1": 1, "01.2": 1, "01.3": 2},
                  hints={"01.2": 2}, advice={"01.2": "Your answer is too large by a factor of 8: bits against bytes?"})


def test_results_json_has_only_gradescopes_fields_and_never_the_expected_value():
    results = results_json(_result(), "after_published", note="Graded my <b>work</b>.ipynb for Ada.")
    _valid(results)
    assert results["score"] == 1 and [t["score"] for t in results["tests"]] == [1, 0, 0]
    assert [t["max_score"] for t in results["tests"]] == [1, 1, 2]
    wrong = results["tests"][1]
    assert wrong["status"] == "failed" and "factor of 8" in wrong["output"] and "2 hints taken" in wrong["output"]
    # A file name is the student's text: the output is shown as text, never rendered as HTML (the top level's
    # default format, "simple_format", would).
    assert results["output_format"] == "text" and results["output"].startswith("Graded my <b>work</b>.ipynb")
    with pytest.raises(ValueError, match="visibility='sometimes'"):
        results_json(_result(), "sometimes")


def test_each_question_carries_its_own_visibility():
    results = results_json(_result(), "after_published", {"01.3": "hidden", "01.1": "visible"})
    _valid(results)
    assert results["visibility"] == "after_published"
    assert [t["visibility"] for t in results["tests"]] == ["visible", "after_published", "hidden"]
    with pytest.raises(ValueError, match="visibility of 01.3='later'"):
        results_json(_result(), "visible", {"01.3": "later"})


def _upload(folder: Path, *names: str) -> Path:
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
    return folder


def test_saved_copies_and_hidden_files_are_never_the_notebook_graded(tmp_path):
    upload = _upload(tmp_path / "a", ".ipynb_checkpoints/01_rooflines-checkpoint.ipynb", ".draft.ipynb",
                     "__MACOSX/._01_rooflines.ipynb", "work/01_rooflines.ipynb", "notes.txt")
    (upload / "link.ipynb").symlink_to(upload / "work" / "01_rooflines.ipynb")
    chosen, why = choose_notebook(upload, SET)
    assert chosen == upload / "work" / "01_rooflines.ipynb"
    assert ".ipynb_checkpoints" in why and "never graded" in why
    assert choose_notebook(_upload(tmp_path / "b", ".ipynb_checkpoints/x-checkpoint.ipynb"), SET)[0] is None
    assert choose_notebook(_upload(tmp_path / "c", "only.ipynb"), SET) == (tmp_path / "c" / "only.ipynb", "")


def test_of_several_notebooks_the_one_named_for_the_set_is_graded_and_the_output_says_why(tmp_path):
    chosen, why = choose_notebook(_upload(tmp_path / "a", "scratch.ipynb", "My 01_Rooflines.ipynb", "z.ipynb"), SET)
    assert chosen.name == "My 01_Rooflines.ipynb"
    assert why.startswith("3 notebooks were uploaded (My 01_Rooflines.ipynb, scratch.ipynb, z.ipynb)")
    assert "is the one named for 01_rooflines" in why
    chosen, why = choose_notebook(_upload(tmp_path / "b", "b.ipynb", "a.ipynb"), SET)
    assert chosen.name == "a.ipynb" and "none is named for 01_rooflines: the first by name was graded" in why


def _unzip(zipped: Path, root: Path, metadata_: dict | None = None) -> Path:
    """Gradescope's layout under `root` (its "Autograder Specifications"): the zip unpacked into source/, its
    run_autograder copied to the root, the upload in submission/, results/ made, submission_metadata.json."""
    with zipfile.ZipFile(zipped) as archive:
        archive.extractall(root / "source")
        for info in archive.infolist():  # zipfile drops the modes; Gradescope's unpacking keeps them
            (root / "source" / info.filename).chmod(info.external_attr >> 16 & 0o777 or 0o644)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps(metadata_ or METADATA))
    return root


def _roster(folder: Path) -> Path:
    return Roster(ROSTER).write(folder / "roster.csv")


def test_the_zip_brings_its_own_python_and_pins_what_the_grader_runs(tmp_path):
    zipped = autograder_zip(tmp_path / "ag.zip", SET, root=ROOT)
    with zipfile.ZipFile(zipped) as archive:
        names = set(archive.namelist())
        assert {"setup.sh", "run_autograder", "requirements.txt", "course/course.json", f"course/solutions/{SET}.md",
                "course/pyproject.toml", "course/scalebook/course/gradescope.py"} <= names
        assert not any("__pycache__" in n for n in names)
        assert all(archive.getinfo(n).external_attr >> 16 & stat.S_IXUSR for n in ("setup.sh", "run_autograder"))
        setup, run_ = archive.read("setup.sh").decode(), archive.read("run_autograder").decode()
        pins = archive.read("requirements.txt").decode().split()
    commands = []
    for script in (setup, run_):
        assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
        commands += [shlex.split(line) for line in script.splitlines() if line.strip() and not line.startswith("#")]
    # Never `python` (Ubuntu has none), and the system's python3 (3.10 on Gradescope's Ubuntu 22.04) only to fetch
    # uv into a folder of its own: the grader runs on its own Python.
    assert [c for c in commands if c[0] in ("python", "python3", "pip", "pip3")] == [
        ["python3", "-m", "pip", "install", "--quiet", "--target", "$AUTOGRADER/uv", f"uv=={UV}"]]
    version = re.search(r'"\$UV" python install --no-bin "(3\.\d+)"', setup)[1]
    assert tuple(map(int, version.split("."))) >= (3, 11) and version == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert '"$PYTHON" -m venv --without-pip "$AUTOGRADER/venv"' in setup
    assert '-r "$AUTOGRADER/source/requirements.txt"' in setup and '--no-deps "$AUTOGRADER/source/course"' in setup
    assert run_.rstrip().endswith('exec "$PYTHON" -m scalebook.course.gradescope "$AUTOGRADER"')
    assert 'PYTHON="$AUTOGRADER/venv/bin/python"' in run_
    # Every distribution pinned, at the version the teacher's own grading runs (this environment's).
    installed = {n: metadata.version(n) for n in ("nbclient", "nbformat", "ipykernel", "numpy", "jupyter-client")}
    assert all(re.fullmatch(r"[a-z0-9.-]+==[\w.+!-]+", p) for p in pins), pins
    assert {f"{n}=={v}" for n, v in installed.items()} <= set(pins)
    assert not any(p.startswith(("jax==", "appnope", "pywin32")) for p in pins)  # no JAX in set 1; Linux's only


def test_run_autograder_says_so_when_setup_did_not_finish(tmp_path):
    root = _unzip(autograder_zip(tmp_path / "ag.zip", SET, root=ROOT), tmp_path / "autograder")
    done = subprocess.run([root / "run_autograder"], cwd=root, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "SCALEBOOK_AUTOGRADER_ROOT": str(root)})
    assert done.returncode == 0 and "setup.sh did not finish" in done.stdout
    results = json.loads((root / "results" / "results.json").read_text())
    _valid(results)
    assert results["score"] == 0 and "Not graded: the autograder was not set up" in results["output"]


def test_the_zip_carries_the_course_roster_and_each_questions_visibility(tmp_path):
    course = tmp_path / "course"  # a course folder outside the checkout: its solutions page and its roster
    (course / "solutions").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / f"{SET}.md", course / "solutions")
    _roster(course)
    zipped = autograder_zip(tmp_path / "ag.zip", SET, root=course, secret=SECRET, visibility="after_due_date",
                            questions={"01.16": "hidden"})
    with zipfile.ZipFile(zipped) as archive:
        config = json.loads(archive.read("course/course.json"))
        (tmp_path / "shipped.csv").write_bytes(archive.read("course/roster.csv"))
    assert Roster.read(tmp_path / "shipped.csv").students == tuple(ROSTER)
    assert config["visibility"] == "after_due_date" and config["question_visibility"] == {"01.16": "hidden"}
    with pytest.raises(ValueError, match=r"'01\.61' is not a question of this problem set .*did you mean .*'01\.16'"):
        autograder_zip(tmp_path / "x.zip", SET, root=ROOT, questions={"01.61": "hidden"})
    with pytest.raises(ValueError, match="visibility of 01.2='soon'"):
        autograder_zip(tmp_path / "x.zip", SET, root=ROOT, questions={"01.2": "soon"})
    with pytest.raises(ValueError, match="secret given but no roster"):
        autograder_zip(tmp_path / "x.zip", SET, root=ROOT, secret=SECRET)


@pytest.mark.parametrize(("users", "said"), [
    ([{"email": "eve@elsewhere.example", "id": 9, "name": "Eve Stranger"}], "'eve@elsewhere.example'"),
    ([{"email": "ada@uni.example", "id": 1, "name": "Ada Lovelace"},
      {"email": "bo@uni.example", "id": 2, "name": "Bo Chen"}], "a group submission of 2 users"),
    ([], "lists no users"),
])
def test_a_submitter_the_roster_does_not_know_gets_0_and_the_reason(tmp_path, users, said):
    zipped = autograder_zip(tmp_path / "ag.zip", SET, root=ROOT, secret=SECRET, roster=Roster(ROSTER))
    root = _unzip(zipped, tmp_path / "autograder", {**METADATA, "users": users})
    shutil.copy(ROOT / "solutions" / f"{SET}.ipynb", root / "submission" / f"{SET}.ipynb")
    results = run(root)
    assert json.loads((root / "results" / "results.json").read_text()) == results
    _valid(results)
    assert results["score"] == 0 and all(t["score"] == 0 for t in results["tests"])
    assert len(results["tests"]) == len(question_points(SET, ROOT))
    assert "(unmatched); not graded:" in results["output"] and said in results["output"]
    assert "roster" in results["output"]


def test_the_course_commands_issue_keys_and_zips(tmp_path, capsys):
    secret = tmp_path / "course.key"
    secret.write_text(f"{SECRET}\n")
    assert cli.main(["course", "keys", "--secret-file", str(secret), "alice", "bob"]) == 0
    shown = capsys.readouterr().out
    assert student_key(SECRET, "alice") in shown and student_key(SECRET, "bob") in shown
    course = tmp_path / "course"  # the course's folder, away from the checkout: a problem set and the roster
    (course / "solutions").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "02_tpus.md", course / "solutions")
    _roster(course)
    out = tmp_path / "ag.zip"
    assert cli.main(["course", "gradescope-zip", "02_tpus", "--out", str(out), "--secret-file", str(secret),
                     "--hint-cost", "0.25", "--visibility", "after_published", "--course", str(course),
                     "--question-visibility", "02.1=hidden", "--question-visibility", "02.2=visible"]) == 0
    with zipfile.ZipFile(out) as archive:
        config = json.loads(archive.read("course/course.json"))
        assert "course/roster.csv" in archive.namelist()
    assert config == {"problem_set": "02_tpus", "hint_cost": 0.25, "visibility": "after_published", "timeout": 120,
                      "question_visibility": {"02.1": "hidden", "02.2": "visible"}, "secret": SECRET}


@pytest.mark.parametrize("argv", [
    ["course", "gradescope-zip", "99_nothing"], ["course", "gradescope-zip", SET, "--hint-cost", "2"],
    ["course", "gradescope-zip", SET, "--visibility", "sometimes"],
    ["course", "gradescope-zip", SET, "--question-visibility", "01.1"],
    ["course", "gradescope-zip", SET, "--question-visibility", "01.99=hidden"], ["grade", ".", "--format", "pdf"],
])
def test_the_course_commands_refuse_bad_input_in_one_line(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = [*argv, "--out", str(tmp_path / "x.zip")] if argv[0] == "course" else argv
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("scalebook") and len(err.strip().splitlines()) <= 2 and "Traceback" not in err


def test_a_crashed_cells_error_reaches_the_feedback_and_results_json(tmp_path):
    import hostile

    from scalebook.course.grader import sandbox
    from scalebook.course.grader.autograde import grade

    subs = tmp_path / "subs"
    subs.mkdir()
    cells = ["import scalebook as sb", "answer = undefined_name * 2", "sb.check('01.1', answer)",
             "raise ValueError('<b>boom</b>')"]
    (subs / "ada__01_rooflines.ipynb").write_text(hostile.notebook(*cells))
    exported: list = []
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=sandbox.available() is None, on_results=exported.extend)
    feedback = next((tmp_path / "feedback").glob("ada-*.md")).read_text()
    assert "cell 2\\: NameError\\: name \\'undefined\\_name\\' is not defined" in feedback
    assert "cell 4\\: ValueError\\: \\<b\\>boom\\<\\/b\\>" in feedback and "cell 3\\: NameError" in feedback
    output = results_json(exported[0])["output"]
    assert "cell 2: NameError" in output and "cell 4: ValueError: <b>boom</b>" in output


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")
NOBODY = 65534
NO_NAMESPACES = """#!/bin/sh
# bubblewrap in a container without CAP_SYS_ADMIN or user namespaces
echo "bwrap: Creating new namespace failed: Operation not permitted" >&2
exit 1
"""


def _installed(venv: Path, zipped: Path) -> Path:
    """What setup.sh leaves, made offline (the module's docstring says why): a virtual environment of the system's
    python3, holding each distribution the zip's requirements.txt pins, copied from this test's environment at the
    pinned version, and this package as the zip holds it."""
    if SYSTEM_PYTHON is None:
        pytest.skip("no system python3 in /usr/bin or /bin to make setup.sh's virtual environment from")
    ours = f"{sys.version_info[0]}.{sys.version_info[1]}"
    theirs = subprocess.check_output([SYSTEM_PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                     text=True).strip()
    if theirs != ours:
        pytest.skip(f"the system's python3 is {theirs}; the zip pins builds for this test's Python {ours}")
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.check_output([venv / "bin" / "python", "-c",
                                         "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True).strip())
    with zipfile.ZipFile(zipped) as archive:
        pins = archive.read("requirements.txt").decode().split()
        for name in archive.namelist():
            if name.startswith("course/scalebook/"):
                (site / name.removeprefix("course/")).parent.mkdir(parents=True, exist_ok=True)
                (site / name.removeprefix("course/")).write_bytes(archive.read(name))
    for pin in pins:
        name, version = pin.split("==")
        dist = metadata.distribution(name)
        assert dist.version == version, f"requirements.txt pins {pin}, this environment holds {dist.version}"
        for file in dist.files or []:
            source, target = Path(dist.locate_file(file)), Path(os.path.normpath(site / file))
            if target.is_relative_to(site) and "__pycache__" not in file.parts and source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    return venv


@pytest.fixture(scope="module")
def autograders():
    """A folder any user may enter (pytest's own is root's alone), holding setup.sh's virtual environment (made
    once) and a zip without a secret; yields `make(name, zipped=None, metadata=None)`, which lays out a fake
    /autograder there with its own copy of the environment (hard links)."""
    folder = Path(tempfile.mkdtemp(prefix="scalebook-gradescope-"))
    folder.chmod(0o755)
    plain = autograder_zip(folder / "plain.zip", SET, root=ROOT, visibility="after_published",
                           questions={"01.16": "hidden"})
    venv = _installed(folder / "venv", plain)

    def make(name: str, zipped: Path = plain, metadata_: dict | None = None) -> Path:
        root = _unzip(zipped, folder / name, metadata_)
        shutil.copytree(venv, root / "venv", symlinks=True, copy_function=os.link)
        return root

    try:
        yield make
    finally:
        shutil.rmtree(folder)


def _solutions(root: Path) -> Path:
    """The solutions' notebook uploaded, beside Jupyter's saved copy of the blank exercise (which sorts first)."""
    shutil.copy(ROOT / "solutions" / f"{SET}.ipynb", root / "submission" / f"{SET}.ipynb")
    (root / "submission" / ".ipynb_checkpoints").mkdir()
    shutil.copy(ROOT / "exercises" / f"{SET}.ipynb",
                root / "submission" / ".ipynb_checkpoints" / f"{SET}-checkpoint.ipynb")
    return root


def _run_autograder(root: Path, prefix: tuple[str, ...] = (), path: str = "/usr/bin:/bin") -> tuple[str, dict]:
    """Run `root`'s run_autograder as Gradescope does (in the root, a bare environment); return its stdout (what
    instructors see) and results.json, checked against the documented fields."""
    env = {"PATH": path, "LANG": "C.UTF-8", "SCALEBOOK_AUTOGRADER_ROOT": str(root)}
    done = subprocess.run([*prefix, str(root / "run_autograder")], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((root / "results" / "results.json").read_text())
    _valid(results)
    return done.stdout, results


def _full_marks(results: dict) -> None:
    possible = question_points(SET, ROOT)
    assert [t["number"] for t in results["tests"]] == list(possible)
    assert all(t["status"] == "passed" and t["score"] == t["max_score"] for t in results["tests"]), results
    assert results["score"] == sum(possible.values()) == 28


@pytest.mark.slow  # runs the zip's run_autograder, a sandbox and a notebook kernel
def test_the_solutions_score_full_marks_in_gradescopes_layout_and_the_saved_copy_is_left_out(autograders):
    stdout, results = _run_autograder(_solutions(autograders("solutions")))
    _full_marks(results)
    assert results["output"].startswith(f"Graded {SET}.ipynb for Student User.")
    assert ".ipynb_checkpoints left out" in results["output"]
    assert {t["number"]: t["visibility"] for t in results["tests"]} == {
        **dict.fromkeys(question_points(SET, ROOT), "after_published"), "01.16": "hidden"}
    assert "sandbox: " in stdout  # the teacher's log says which sandbox ran it


@pytest.mark.slow  # runs the zip's run_autograder twice, with a sandbox and a notebook kernel each
def test_a_varied_student_named_by_email_scores_full_marks_under_their_own_key(autograders, tmp_path):
    import hostile

    zipped = autograder_zip(tmp_path / "course.zip", SET, root=ROOT, secret=SECRET, roster=Roster(ROSTER))
    possible, key = question_points(SET, ROOT), AnswerKey(SECRET)
    ada, bo = ROSTER[0], ROSTER[1]
    values = key.values(ada.uid, possible)
    answers = {q: get_problem(q).reference(values[q]) for q in possible}
    books = {q: get_problem(q).reference(v) for q, v in AnswerKey().values(ada.uid, possible).items()}
    # The book's answers (the solutions notebook's) earn her under half: her numbers are her own.
    assert sum(p for q, p in possible.items() if key.judge(q, books[q], values[q]) == "right") < 14
    notebook = hostile.notebook("import scalebook as sb", *[f"sb.check({q!r}, {a!r})" for q, a in answers.items()])
    earned = {}
    for student in (ada, bo):  # Ada's notebook, submitted by Ada, then by Bo (whose numbers are his own)
        user = {"email": f"  {student.email.upper()}", "id": 1234, "name": student.name}
        root = autograders(f"course-{student.uid}", zipped, {**METADATA, "users": [user]})
        (root / "submission" / "my work.ipynb").write_text(notebook)
        earned[student.uid] = _run_autograder(root)[1]
    _full_marks(earned[ada.uid])
    assert earned[ada.uid]["output"].startswith(f"Graded my work.ipynb for {ada.name} <{ada.email}>.")
    bos = key.values(bo.uid, possible)
    assert earned[bo.uid]["score"] == sum(p for q, p in possible.items() if key.judge(q, answers[q], bos[q]) == "right")
    assert earned[bo.uid]["score"] < 28


@pytest.mark.slow  # runs the zip's run_autograder as uid 65534, with a sandbox and a notebook kernel
def test_run_as_a_user_without_privileges_the_solutions_still_score_full_marks(autograders):
    root = _solutions(autograders("nobody"))
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        prefix = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--")
        subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
        os.chown(root / "results", NOBODY, NOBODY)
    probe = subprocess.run([*prefix, str(root / "venv" / "bin" / "python"), "-c",
                            "from scalebook.course.grader import sandbox; print(sandbox.available() or '')"],
                           env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120)
    if probe.returncode or probe.stdout.strip():
        pytest.skip(f"as uid {os.geteuid() if not prefix else NOBODY} no sandbox starts on this machine: "
                    f"{(probe.stdout + probe.stderr).strip()[-300:]}")
    _full_marks(_run_autograder(root, prefix)[1])


@pytest.mark.slow  # runs the zip's run_autograder and its sandbox probe
def test_where_no_sandbox_can_start_results_json_says_so_and_awards_nothing(autograders):
    root = _solutions(autograders("no-sandbox"))
    fake = root.parent / "no-namespaces"
    fake.mkdir()
    (fake / "bwrap").write_text(NO_NAMESPACES)
    (fake / "bwrap").chmod(0o755)
    _, results = _run_autograder(root, path=f"{fake}:/usr/bin:/bin")
    assert results["score"] == 0 and all(t["score"] == 0 and t["status"] == "failed" for t in results["tests"])
    assert results["output"].startswith(f"Found {SET}.ipynb for Student User.")
    assert "(no sandbox); not graded: the grader's sandbox cannot start on this machine" in results["output"]
    assert "bwrap: Creating new namespace failed: Operation not permitted" in results["output"]
