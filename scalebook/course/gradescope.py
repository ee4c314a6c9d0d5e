"""Grades where a course keeps them: Gradescope's autograder, and a CSV that Canvas or Moodle imports.

**Gradescope's contract**, as it documents it and as this module follows it:

- "Autograder Specifications" (https://gradescope-autograders.readthedocs.io/en/latest/specs/): the zip holds
  `setup.sh` (run once, as root, when Gradescope builds the autograder's image) and `run_autograder` (run for every
  submission, in the working directory `/autograder`) at its root, and is unpacked into `/autograder/source`; the
  upload is in `/autograder/submission`; `run_autograder` must write `/autograder/results/results.json`: `score`,
  `output` (with its `output_format`), `visibility`, `stdout_visibility` and `tests`, each test with its `score`,
  `max_score`, `status` (`passed` or `failed`), `name`, `number`, `output` and its own `visibility` (`hidden`,
  `after_due_date`, `after_published` or `visible`), which overrides the top level's. What `run_autograder` prints
  goes to `/autograder/results/stdout`, which only instructors see.
- "Submission Metadata" (https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/):
  `/autograder/submission_metadata.json` names who submitted, `"users": [{"email", "id", "name"}]` (several for a
  group submission), beside `id`, `created_at`, `assignment`, `submission_method` and `previous_submissions`.
- "Base Images" (https://gradescope-autograders.readthedocs.io/en/latest/base_images/): the default image is Ubuntu
  22.04, whose `python3` is 3.10 and which has no `python`; Gradescope's own harness runs on that `python3`, which
  must not be replaced ("Python 3 issues", https://gradescope-autograders.readthedocs.io/en/latest/python3_issues/).
- "Best Practices" (https://gradescope-autograders.readthedocs.io/en/latest/best_practices/): run the students'
  code without privileges, and write results.json even when the autograder fails.

**The zip** (`autograder_zip`). `setup.sh` installs bubblewrap and uv (pinned, `UV`) beside the system's Python,
which it leaves alone; uv installs the teacher's own Python version (at least 3.11) under `/autograder/python`;
`setup.sh` makes the virtual environment `/autograder/venv` from it and installs `requirements.txt` there (every
distribution the grader runs, pinned to the versions the teacher's environment holds: `pinned_requirements`), then
this package from `course/`. `run_autograder` runs `/autograder/venv/bin/python` by its path, never `python`, and
writes a results.json that says so when `setup.sh` did not finish. `course/` also holds the problem set's
solutions page (its ★ points), the course's `roster.csv` when it has one, and `course.json`: the problem set, the
secret, the cost per hint, the time per cell, the tests' visibility and each question's own where the teacher set
one.

**A submission** (`run`). Who submitted is read from submission_metadata.json: with a roster, the one student it
names (`Roster.find_gradescope`: by email, then SID, then name), whose key their numbers derive from; a submitter
the roster does not know gets 0 and the reason. The notebook graded is the upload's one `.ipynb`; saved copies
(`.ipynb_checkpoints/`), hidden files and `__MACOSX/` are left out, and of several notebooks the one named for the
problem set, else the first by name (`choose_notebook`); results.json names the file graded and why. It is graded
in a sandbox (`grader.sandbox`) or not at all: where none can start (no bubblewrap, or a container without
CAP_SYS_ADMIN), results.json says so and awards nothing, since a notebook run without one could read the answer
key and the course secret.

Canvas's and Moodle's imports, and Gradescope's results from a gradebook, are `exports.py`'s.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from ..units import closest
from .grader import sandbox
from .grader.autograde import AnswerKey, course_root, grade_one, question_points
from .grader.gradebook import clean
from .grader.submissions import Result, Submission
from .roster import ROSTER_FILE, Roster, find_roster

__all__ = ["VISIBILITIES", "UV", "results_json", "choose_notebook", "pinned_requirements", "run", "autograder_zip",
           "main"]

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")  # Gradescope's, least visible first
UV = "0.13.9"  # the uv (https://docs.astral.sh/uv/) setup.sh installs: it brings the grader's own Python
GRADER_NEEDS = ("nbclient", "nbformat", "ipykernel")  # what runs a notebook, beside this package's dependencies
_PACKAGE = Path(__file__).resolve().parents[1]  # scalebook/, above this wing
_IMAGE = {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
          "implementation_name": "cpython", "platform_python_implementation": "CPython"}  # Gradescope's images
_LEFT_OUT = re.compile(r"^(\..*|__MACOSX)$")  # folders and files of an upload that are never the notebook
_VERDICTS = {"right": "✓ right", "wrong": "✗ wrong", "unanswered": "… not answered (still `...`)",
             "missing": "? never checked: did the cell run?", "no key": "! not graded: tell your teacher"}
_NOT_YOURS = "Tell your teacher: nothing in your notebook caused this."
SETUP_SH = """#!/usr/bin/env bash
# scalebook's autograder. Gradescope runs this once, as root, when it builds the autograder's image
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/). Its default image, Ubuntu 22.04, has python3
# 3.10 and no `python`, and Gradescope's harness runs on that python3, so it is left as it is: the grader gets
# its own Python @PYTHON@ from uv, a virtual environment holding the pinned requirements.txt, and bubblewrap.
set -euo pipefail
AUTOGRADER="${SCALEBOOK_AUTOGRADER_ROOT:-/autograder}"
export DEBIAN_FRONTEND=noninteractive UV_PYTHON_INSTALL_DIR="$AUTOGRADER/python" UV_NO_CONFIG=1
apt-get update -q
apt-get install -y -q --no-install-recommends bubblewrap python3-pip ca-certificates
python3 -m pip install --quiet --target "$AUTOGRADER/uv" "uv==@UV@"
UV="$AUTOGRADER/uv/bin/uv"
"$UV" python install --no-bin "@PYTHON@"
# The interpreter by its real path, so the virtual environment and the sandbox see the same folders.
PYTHON="$(realpath "$("$UV" python find --managed-python --no-project "@PYTHON@")")"
"$PYTHON" -m venv --without-pip "$AUTOGRADER/venv"
"$UV" pip install --python "$AUTOGRADER/venv/bin/python" -r "$AUTOGRADER/source/requirements.txt"
"$UV" pip install --python "$AUTOGRADER/venv/bin/python" --no-deps "$AUTOGRADER/source/course"
"$AUTOGRADER/venv/bin/python" -c "import nbclient, nbformat, ipykernel, scalebook.course.gradescope"
"""
RUN_AUTOGRADER = """#!/usr/bin/env bash
# scalebook's autograder. Gradescope runs this for every submission, as root, in /autograder
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/): the grader's own Python, by its path.
set -euo pipefail
AUTOGRADER="${SCALEBOOK_AUTOGRADER_ROOT:-/autograder}"
PYTHON="$AUTOGRADER/venv/bin/python"
if [ ! -x "$PYTHON" ]; then
    echo "setup.sh did not finish: $PYTHON is missing (see the autograder's build log)"
    mkdir -p "$AUTOGRADER/results"
    cat > "$AUTOGRADER/results/results.json" <<'JSON'
{"score": 0, "output_format": "text", "stdout_visibility": "hidden", "tests": [],
 "output": "Not graded: the autograder was not set up (its setup.sh did not finish). Tell your teacher."}
JSON
    exit 0
fi
exec "$PYTHON" -m scalebook.course.gradescope "$AUTOGRADER"
"""


def _check_visibility(visibility: str, what: str = "visibility") -> str:
    if visibility not in VISIBILITIES:
        raise ValueError(f"{what}={visibility!r} is not one of Gradescope's: {', '.join(VISIBILITIES)}")
    return visibility


def _test(r: Result, qid: str, visibility: str) -> dict[str, Any]:
    """One question as a Gradescope test: name, number, score, max_score, status, output, visibility."""
    outcome = r.outcomes.get(qid, "missing")
    output = _VERDICTS[outcome] + (f": {r.advice[qid]}" if r.advice.get(qid) else "")
    taken = r.hints.get(qid, 0)
    output += f" ({taken} hint{'s' * (taken > 1)} taken)" if taken else ""
    return {"name": f"Problem {qid}", "number": qid, "score": r.points.get(qid, 0), "max_score": r.possible[qid],
            "status": "passed" if outcome == "right" else "failed", "output": clean(output),
            "visibility": visibility}


def results_json(r: Result, visibility: str = "visible", questions: dict[str, str] | None = None,
                 note: str = "") -> dict[str, Any]:
    """Gradescope's results.json for one submission: the total, `note` (which file was graded, for whom) and a
    line on the run, as plain text, then a test per question, each with its own visibility (`questions`:
    {qid: visibility}, else `visibility`)."""
    _check_visibility(visibility)
    own = {q: _check_visibility(v, f"visibility of {q}") for q, v in (questions or {}).items()}
    line = f"{r.submission.problem_set or 'submission'}: {r.total} / {sum(r.possible.values())} points ({r.status})"
    lines = [*note.splitlines(), line + (f"; {r.detail}" if r.detail else ""), *r.errors]
    return {"score": r.total, "output": "\n".join(clean(x) for x in lines if x), "output_format": "text",
            "visibility": visibility, "stdout_visibility": "hidden",
            "tests": [_test(r, q, own.get(q, visibility)) for q in r.possible]}


def _names(paths: list[Path], folder: Path, most: int = 5) -> str:
    shown = [clean(str(p.relative_to(folder))) for p in paths[:most]]
    return ", ".join(shown) + (f" and {len(paths) - most} more" if len(paths) > most else "")


def choose_notebook(folder: Path, problem_set: str) -> tuple[Path | None, str]:
    """The notebook to grade in an upload `folder`, and a sentence on the choice ('' when there was none): every
    `.ipynb` that is a file, links not followed, but for those in a hidden folder (`.ipynb_checkpoints/`, which
    Jupyter fills with saved copies), hidden files and `__MACOSX/`; of several, the one whose name holds
    `problem_set`, else the first by name."""
    folder = Path(folder)
    found, left_out = [], []
    for top, dirs, files in os.walk(folder):
        here = Path(top)
        left_out += [here / d for d in dirs if _LEFT_OUT.match(d)]
        dirs[:] = sorted(d for d in dirs if not _LEFT_OUT.match(d))
        found += [here / f for f in files if f.endswith(".ipynb") and not _LEFT_OUT.match(f)
                  and not (here / f).is_symlink() and (here / f).is_file()]
    found.sort(key=lambda p: str(p.relative_to(folder)))
    skipped = f" ({_names(left_out, folder)} left out: saved copies and hidden files are never graded)" \
        if left_out else ""
    if not found:
        return None, f"no notebook (.ipynb) in the upload{skipped}: upload your {problem_set}.ipynb"
    if len(found) == 1:
        return found[0], f"{found[0].name} is the upload's notebook{skipped}." if skipped else ""
    named = [p for p in found if problem_set.casefold() in p.name.casefold()]
    if len(named) == 1:
        return named[0], (f"{len(found)} notebooks were uploaded ({_names(found, folder)}): "
                          f"{clean(named[0].name)} is the one named for {problem_set}{skipped}.")
    which = "several are" if named else "none is"
    return (named or found)[0], (f"{len(found)} notebooks were uploaded ({_names(found, folder)}) and {which} "
                                 f"named for {problem_set}: the first by name was graded{skipped}. "
                                 "Upload one notebook.")


def _metadata(root: Path) -> dict[str, Any]:
    """submission_metadata.json, or {} where it is missing or unreadable (the roster then finds no user)."""
    try:
        data = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _submitter(course: Path, metadata: dict[str, Any], secret: bool) -> tuple[str | None, str]:
    """(the student id the submission is graded under, who that is in words), or (None, why nobody): with the
    course's roster, the one student submission_metadata.json names; without one (and no secret, so everyone
    has the book's numbers), Gradescope's name for the submitter, a label only."""
    if (course / ROSTER_FILE).is_file():
        found = Roster.read(course / ROSTER_FILE).find_gradescope(metadata)
        if found.student is None:
            return None, (f"not graded: {found.why}. Only students on the course's roster are graded, each with "
                          "their own numbers: ask your teacher to add you to it.")
        student = found.student
        return student.uid, f"{student.name}" + (f" <{student.email}>" if student.email else "")
    if secret:
        return None, ("not graded: this autograder holds a course secret but no roster, so it cannot tell whose "
                      f"numbers to grade. {_NOT_YOURS}")
    users = [u for u in metadata.get("users") or [] if isinstance(u, dict)]
    label = next((str(u.get(k)) for u in users for k in ("name", "email") if u.get(k)), "student")
    return label, label


def _ungraded(problem_set: str, possible: dict[str, int], folder: Path, status: str, why: str) -> Result:
    """A submission awarded nothing, with the reason."""
    return Result(Submission("", problem_set, folder), status, possible=possible, points=dict.fromkeys(possible, 0),
                  detail=why)


def _grade(root: Path) -> dict[str, Any]:
    """results.json for the submission in Gradescope's layout under `root`."""
    course = root / "source" / "course"
    config = json.loads((course / "course.json").read_text(encoding="utf-8"))
    problem_set = config["problem_set"]
    possible = question_points(problem_set, course)
    upload = root / "submission"

    def shown(result: Result, note: str = "") -> dict[str, Any]:
        return results_json(result, config.get("visibility", "visible"), config.get("question_visibility"), note)

    student, who = _submitter(course, _metadata(root), bool(config.get("secret")))
    if student is None:
        return shown(_ungraded(problem_set, possible, upload, "unmatched", who))
    notebook, why = choose_notebook(upload, problem_set)
    if notebook is None:
        return shown(_ungraded(problem_set, possible, upload, "no notebook", why), f"Submitted by {who}.")
    graded = f"Graded {notebook.relative_to(upload)} for {who}." + (f" {why}" if why else "")
    reason = sandbox.available()
    if reason:
        return shown(_ungraded(problem_set, possible, notebook, "no sandbox", (
            f"not graded: the grader's sandbox cannot start on this machine ({reason}). Nothing is awarded without "
            f"one: a notebook run outside it could read the answer key and the course secret. {_NOT_YOURS}")),
            graded.replace("Graded", "Found", 1))
    print(f"sandbox: {sandbox.backend()}; {sandbox.describe()}")
    hide = tuple(str((root / d).resolve()) for d in ("source", "submission", "results"))
    result = grade_one(Submission(student, problem_set, notebook), course, float(config.get("timeout", 120)), True,
                       key=AnswerKey(config.get("secret")), hide=hide, hint_cost=float(config.get("hint_cost", 0.0)))
    return shown(result, graded)


def run(root: Path) -> dict[str, Any]:
    """Grade the submission in Gradescope's layout under `root` (`/autograder`); write and return
    `results/results.json`, which says what went wrong, awarding nothing, when anything did."""
    root = Path(root)
    try:
        results = _grade(root)
    except Exception as err:  # noqa: BLE001 - without results.json Gradescope shows the student nothing
        results = {"score": 0, "output": clean(f"Not graded: the grader failed ({type(err).__name__}: {err}). "
                                               f"{_NOT_YOURS}"), "output_format": "text",
                   "stdout_visibility": "hidden", "tests": []}
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


def pinned_requirements(extras: tuple[str, ...] = ()) -> list[str]:
    """`name==version` of every distribution the grader runs on Gradescope's Linux: this package's dependencies
    (with `extras`), nbclient, nbformat and ipykernel, and all of theirs, at the versions installed here (what the
    teacher's own grading runs); one that is not installed here is left as its requirement asks."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((_PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    image = {**_IMAGE, "python_version": f"{sys.version_info.major}.{sys.version_info.minor}",
             "python_full_version": ".".join(map(str, sys.version_info[:3])), "platform_release": "",
             "platform_version": "", "implementation_version": ".".join(map(str, sys.version_info[:3]))}
    todo = [Requirement(r) for r in (*project["dependencies"], *GRADER_NEEDS,
                                     *(r for e in extras for r in project["optional-dependencies"][e]))]
    pins: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        wanted = todo.pop()
        name = canonicalize_name(wanted.name)
        if (name, frozenset(wanted.extras)) in seen:
            continue
        seen.add((name, frozenset(wanted.extras)))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pins.setdefault(name, f"{name}{wanted.specifier}")
            continue
        pins[name] = f"{name}=={dist.version}"
        for text in dist.requires or []:
            need = Requirement(text)
            if need.marker is None or any(need.marker.evaluate({**image, "extra": e}) for e in ("", *wanted.extras)):
                todo.append(need)
    return sorted(pins.values())


def _package_files(package: Path) -> list[Path]:
    """The package's source files, caches left out."""
    return sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in (".pyc", ".so"))


def _add(archive: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (0o755 if executable else 0o644) << 16 | stat.S_IFREG << 16
    archive.writestr(info, text)


def _question_visibility(questions: dict[str, str] | None, possible: dict[str, int]) -> dict[str, str]:
    """Each question's own visibility, its qid and value checked (the closest qids named for a typo)."""
    for qid, visibility in (questions or {}).items():
        if qid not in possible:
            near = closest(qid, possible)
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise ValueError(f"questions: {qid!r} is not a question of this problem set ({', '.join(possible)}){hint}")
        _check_visibility(visibility, f"visibility of {qid}")
    return dict(questions or {})


def autograder_zip(out: Path, problem_set: str, root: Path | None = None, secret: str | None = None,
                   hint_cost: float = 0.0, visibility: str = "visible", timeout: float = 120,
                   questions: dict[str, str] | None = None, roster: Roster | None = None) -> Path:
    """Write Gradescope's autograder zip for `problem_set` ('01_rooflines') to `out` and return its path: `setup.sh`,
    `run_autograder` and `requirements.txt` at the root, `course/` holding this package, `solutions/<problem_set>.md`,
    `course.json` and the course's roster (`roster`, default `find_roster(root)`). `root` is the course's folder
    (`course_root`: default here, else this package's checkout). With the course `secret` a roster is required:
    Gradescope names a submitter by email, and a key is made for a roster entry. `visibility` is the tests'
    (Gradescope's `VISIBILITIES`), `questions` ({qid: visibility}) a question's own. The zip holds the secret: it
    is the teacher's to keep."""
    root = course_root(root)
    possible = question_points(problem_set, root)  # the problem set exists and has points
    _check_visibility(visibility)
    questions = _question_visibility(questions, possible)
    if not 0 <= hint_cost <= 1:
        raise ValueError(f"hint_cost={hint_cost!r} must be a fraction of a question's points, 0 to 1")
    roster = roster or find_roster(root)
    if roster is None and secret:
        raise ValueError(f"secret given but no roster ({root / ROSTER_FILE} does not exist): Gradescope names each "
                         "submitter by email, and each key is made for a roster entry; import the class list with "
                         "`scalebook course roster EXPORT.csv` first, or pass roster=")
    solutions = (root / "solutions" / f"{problem_set}.md").read_text(encoding="utf-8")
    extras = ("lab",) if re.search(r"\bjax\b", solutions) else ()  # the problem sets that run JAX
    version = f"{sys.version_info.major}.{sys.version_info.minor}"  # the pins are this Python's
    config = {"problem_set": problem_set, "hint_cost": hint_cost, "visibility": visibility, "timeout": timeout,
              **({"question_visibility": questions} if questions else {}), **({"secret": secret} if secret else {})}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        _add(archive, "setup.sh", SETUP_SH.replace("@PYTHON@", version).replace("@UV@", UV), executable=True)
        _add(archive, "run_autograder", RUN_AUTOGRADER, executable=True)
        _add(archive, "requirements.txt", "".join(f"{r}\n" for r in pinned_requirements(extras)))
        _add(archive, "course/course.json", json.dumps(config, indent=1))
        _add(archive, f"course/solutions/{problem_set}.md", solutions)
        if roster is not None:
            with tempfile.TemporaryDirectory() as folder:
                _add(archive, f"course/{ROSTER_FILE}", roster.write(Path(folder) / ROSTER_FILE).read_text("utf-8"))
        for name in ("pyproject.toml", "README.md"):
            _add(archive, f"course/{name}", (_PACKAGE.parent / name).read_text(encoding="utf-8"))
        for path in _package_files(_PACKAGE):
            archive.write(path, f"course/scalebook/{path.relative_to(_PACKAGE)}")
    return Path(out)


def main(argv: list[str] | None = None) -> int:
    """`python -m scalebook.course.gradescope ROOT`: grade the submission in Gradescope's layout under ROOT."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m scalebook.course.gradescope /autograder", file=sys.stderr)
        return 2
    results = run(Path(argv[0]))
    print(results["output"])
    print(f"{results['score']} points; results.json written under {os.fspath(argv[0])}/results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
