"""Grade a folder of submitted exercise notebooks: one command for a course, safe whatever comes in.

    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs 2] [--force] [--no-sandbox]

Which files are found, whose they are and which one counts (the latest), and how each is read, are the rules
of `submissions.py`; what is written, and how it is escaped, those of `gradebook.py`. The grader never parses
a notebook: the sandbox does, so a hostile 32 MiB file costs the grader its bytes and no more.

**How it runs.** Each notebook runs in its own sandbox (`sandbox.py`: bubblewrap or namespaces, nothing of
the course or the grader visible, a cgroup capping its CPU share, memory and processes where the machine
allows one, rlimits always, every process it started killed at the end; `sandbox.describe` says which caps
apply, and every row's `sandbox` column repeats it), in a fresh IPython shell (`runner`) with a time limit
per cell. Every `sb.check(qid, answer)` it reaches only hands its answer out, as plain JSON data; the grader
compares it with the answer key (`scalebook.course.key`) in its own process, where the submission cannot reach. A
question scores its points (the ★ count in its heading in `solutions/`) when its last recorded answer
is right.

**What comes out.** Each file found gets one row, whatever it did: a crash, a timeout, a corrupt or foreign
file, a link or a forged answer gives a status and zero for what could not be graded, and a failure of the
grader itself on one file (even in writing its row) becomes that row's status. `grade` returns the
terminal's summary: one row per student, a column per problem set; the CSV has every question.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ...tables import Table
from ...units import closest
from ..answers import GRADE_ANSWERS, MAX_DEPTH, MAX_RECORD, agrees, right_for_other_values
from ..hints import MAX_HINTS, hint_text
from ..mistakes import likely_mistake
from ..roster import Roster
from ..variants import VARIANT, student_key, values_for
from . import integrity, reasoning, runner, sandbox, strictjson
from .gradebook import Gradebook, check_out, grader_error, summary
from .limits import Limits
from .runner import MAX_ERRORS
from .submissions import Result, Submission, find_submissions, read_once

__all__ = ["question_points", "read_answers", "grade_one", "grade", "course_root", "cores"]


_HEADING = re.compile(r"^## Problem (\d+) (★+)", re.M)
_QID = re.compile(rb'"qid"\s*:\s*"([0-9.]{1,16})"')
_NOTEBOOK = "submission.ipynb"  # its name inside the sandbox, whatever the student called it
MAX_ANSWERS = 4 * 2**20  # bytes of answer records read back from one submission
_MAX_CELLS = 100_000  # cells a notebook may number in a crash report
_GRACE = 60  # seconds beyond the per-cell limit for starting the kernel and the whole notebook


def question_points(problem_set: str, root: Path) -> dict[str, int]:
    """Return {qid: points} of a problem set: one point per ★ in each question's heading in `solutions/`."""
    source = Path(root) / "solutions" / f"{problem_set}.md"
    if not source.exists():
        raise ValueError(f"problem set {problem_set!r} has no solutions/{problem_set}.md")
    prefix = problem_set.split("_")[0]
    return {f"{prefix}.{n}": len(stars) for n, stars in _HEADING.findall(source.read_text(encoding="utf-8"))}


class AnswerKey:
    """The answer key, in the grader's process only: each reference computed once per variant (the inputs'
    values of one student, `scalebook.course.variants`), shared by the threads. `secret` is the course's: each
    student's values are drawn from HMAC(secret, name); without it everyone has the book's values.
    `classmates` names the students whose variants a wrong answer is also compared with, to tell a student
    who worked with another key's numbers (`advice`)."""

    def __init__(self, secret: str | None = None, classmates: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[Any, float]] = {}
        self.secret = secret
        self.classmates = tuple(sorted(set(classmates))) if secret else ()

    def values(self, student: str | None, qids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """{qid: the input values of `student`'s variant} (the book's without a secret or a student; {} for a qid
        the key does not know)."""
        key = student_key(self.secret, student) if self.secret and student else None
        out = {}
        for qid in qids:
            try:
                out[qid] = values_for(qid, key)
            except Exception:  # noqa: BLE001 - an unknown or broken question has no inputs; judge says 'no key'
                out[qid] = {}
        return out

    def reference(self, qid: str, values: dict[str, Any]) -> tuple[Any, float]:
        """(reference, rtol) of `qid` for `values`, or (None, -1) when the key has no working reference."""
        from ..key import get_problem  # the key: absent inside the sandbox, where this module also runs

        cache_key = (qid, json.dumps(values, sort_keys=True))
        with self._lock:
            if cache_key not in self._cache:
                try:
                    problem = get_problem(qid)
                    self._cache[cache_key] = (problem.reference(values), problem.rtol)
                except Exception:  # noqa: BLE001 - a broken key entry marks its question, not the run
                    self._cache[cache_key] = (None, -1.0)
            return self._cache[cache_key]

    def judge(self, qid: str, answer: Any, values: dict[str, Any] | None = None) -> str:
        """'right' or 'wrong' for a plain-data `answer` to `qid` with the inputs `values` (default the
        book's), by the comparison `sb.check` uses; 'no key' when the key has no working reference for
        `qid` (the course's fault, not the student's)."""
        reference, rtol = self.reference(qid, values or {})
        if rtol < 0:
            return "no key"
        return "right" if agrees(answer, reference, rtol) else "wrong"

    def _right_for(self, qid: str, answer: Any, values: dict[str, Any]) -> str:
        """Whose values other than `values` a wrong `answer` is right for: "the book's", "another key's"
        (a classmate's variant), or '' when none."""
        if values != self.values(None, [qid])[qid] and self.judge(qid, answer) == "right":
            return "the book's"
        for classmate in self.classmates:
            theirs = self.values(classmate, [qid])[qid]
            if theirs != values and self.judge(qid, answer, theirs) == "right":
                return "another key's"
        return ""

    def advice(self, qid: str, answer: Any, values: dict[str, Any]) -> str:
        """What the feedback says beside a wrong answer: that it is right for the book's or another key's
        values where it is (`right_for_other_values`), else the likely mistake, if one is computable, and the
        question's first hint; never the expected value."""
        whose = self._right_for(qid, answer, values)
        if whose:
            return right_for_other_values(qid, whose)
        reference, rtol = self.reference(qid, values)
        try:
            first = f"Hint: {hint_text(qid, 1, values)}" if rtol >= 0 else ""
        except (ValueError, KeyError):
            first = ""
        return " ".join(filter(None, (likely_mistake(answer, reference, max(rtol, 0.0)), first)))


def _is_plain(value: Any, depth: int = 0) -> bool:
    """Whether decoded JSON is an answer `sb.check` could have sent: numbers, strings, lists (no objects)."""
    if isinstance(value, list):
        return depth < MAX_DEPTH and all(_is_plain(v, depth + 1) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _cell(number: Any) -> int:
    """A crash report's cell number, which only a small positive integer can be."""
    if type(number) is not int or not 0 < number <= _MAX_CELLS:
        raise ValueError(f"cell={str(number)[:20]!r} is not a cell number (1 to {_MAX_CELLS})")
    return number


def records(data: bytes) -> tuple[dict[str, Any], dict[str, int], list[str]]:
    """The last answer of each question a submission sent (`...` unanswered, None malformed, else
    ('answer', value)), the hints it took per question (the highest level recorded, 0 to MAX_HINTS) and the
    error lines of its crashed cells ('cell 4: NameError: ...', at most MAX_ERRORS)."""
    last: dict[str, Any] = {}
    hints: dict[str, int] = {}
    errors: list[str] = []
    for line in data[:MAX_ANSWERS].splitlines():
        try:
            if len(line) > MAX_RECORD:
                raise ValueError("oversized")
            record = strictjson.parse(line)
            if "error" in record and "qid" not in record:
                errors += [f"cell {_cell(record['cell'])}: {str(record['error'])[:200]}"][:MAX_ERRORS - len(errors)]
                continue
            qid = record["qid"]
            if "hint" in record and "answer" not in record:
                level = record["hint"] if type(record["hint"]) is int else MAX_HINTS
                hints[qid] = max(hints.get(qid, 0), min(max(level, 1), MAX_HINTS))
            elif "unanswered" in record and "answer" not in record:
                last[qid] = ...
            elif _is_plain(record["answer"]) and "invalid" not in record:
                last[qid] = ("answer", record["answer"])
            else:
                last[qid] = None
        except (ValueError, KeyError, TypeError):
            named = _QID.search(line[:200])
            if named:
                last[named[1].decode()] = None
    return last, hints, errors


def read_answers(data: bytes, possible: dict[str, int], judge: Any) -> dict[str, str]:
    """Return {qid: outcome} from the answer records a submission sent, for the qids in `possible`.

    The last record of a question counts. A record is only a question id and an answer (or a hint taken):
    any other field (an 'outcome', a 'seed', a 'student') is ignored, and a record that is malformed,
    oversized or holds anything but plain data (a NaN, an Infinity or a number beyond a double's range too:
    `strictjson`) makes its question 'wrong'. `judge(qid, answer)` returns
    'right' or 'wrong'.
    """
    last = records(data)[0]
    outcomes = {}
    for qid in possible:
        if qid not in last:
            outcomes[qid] = "missing"
        elif last[qid] is ...:
            outcomes[qid] = "unanswered"
        else:
            outcomes[qid] = "wrong" if last[qid] is None else judge(qid, last[qid][1])
    return outcomes


def _run_unsandboxed(notebook: Path, answers: Path, limits: Limits, timeout: float,
                     variant: str) -> sandbox.SandboxResult:
    """Run the notebook in a plain child process (--no-sandbox): a clean environment and rlimits, no isolation."""
    def cap() -> None:
        for kind, value in ((resource.RLIMIT_AS, limits.memory), (resource.RLIMIT_FSIZE, limits.file_size),
                            (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(kind, (value, value))

    env = {"HOME": str(notebook.parent), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "LANG": "C.UTF-8", "PYDEVD_DISABLE_FILE_VALIDATION": "1", "JAX_PLATFORMS": "cpu",
           "MPLBACKEND": "Agg", GRADE_ANSWERS: str(answers), VARIANT: variant}
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", runner.__name__, str(notebook), str(timeout)],
                                env=env, cwd=notebook.parent, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=cap)
        try:
            code: int | None = proc.wait(timeout=timeout + _GRACE)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            sandbox.kill_group(proc)
        log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
        return sandbox.SandboxResult(code, log.read().decode("utf-8", "replace"))


def run_notebook(content: bytes, limits: Limits, timeout: float, sandboxed: bool, variant: str,
                 hide: tuple[str, ...]) -> tuple[str, bytes, str]:
    """Run one notebook (its `content`) with the student's `variant` (`VARIANT`'s JSON: their name and input
    values, never the secret) in its environment; return its status, the records it sent and a detail line."""
    with tempfile.TemporaryDirectory(prefix="scalebook-grade-") as tmp:
        answers = Path(tmp) / "answers.jsonl"
        answers.touch()
        if sandboxed:
            argv = ["python", "-m", runner.__name__, f"{sandbox.HOME}/{_NOTEBOOK}", str(timeout)]
            ran = sandbox.run(argv, {_NOTEBOOK: content}, answers, limits, timeout + _GRACE,
                              env={GRADE_ANSWERS: sandbox.ANSWERS, VARIANT: variant}, hide=hide)
        else:
            copy = Path(tmp) / "work" / _NOTEBOOK
            copy.parent.mkdir()
            copy.write_bytes(content)
            ran = _run_unsandboxed(copy, answers, limits, timeout, variant)
        with open(answers, "rb") as f:
            data = f.read(MAX_ANSWERS)
    last = (ran.output.strip().splitlines() or [""])[-1][:200]
    status = "timeout" if ran.timed_out else runner.EXITS.get(ran.returncode, "error")
    if ran.returncode == 6:
        return f"not python ({last[:40]})", b"", "only Python notebooks are graded"
    detail = {"graded": "", "corrupt": "not a readable notebook",
              "timeout": f"a cell ran longer than {timeout:g} s, or the notebook longer than {timeout + _GRACE:g} s"
              }.get(status, last)
    return status, data, detail


def scored(possible: dict[str, int], outcomes: dict[str, str], hints: dict[str, int], hint_cost: float) -> dict:
    """Points per question: its points when right, less `hint_cost` of them per hint taken (never below 0)."""
    return {q: (round(p * max(0.0, 1 - hint_cost * hints.get(q, 0)), 3) if hint_cost else p)
            if outcomes.get(q) == "right" else 0 for q, p in possible.items()}


def grade_one(submission: Submission, root: Path, timeout: float = 120, sandboxed: bool = True,
              limits: Limits | None = None, key: AnswerKey | None = None, hide: tuple[str, ...] = (),
              hint_cost: float = 0.0, handout: frozenset[str] = frozenset()) -> Result:
    """Grade one submission; never raises: anything that goes wrong becomes the row's status. `hide` names
    host folders its sandbox must not see (the course root, the submissions, the gradebook's folder). The
    student the file's name names is the one whose variant (`key`'s secret) it is graded against, whatever
    the notebook claims; `hint_cost` is the fraction of a question's points each hint taken costs. `handout`
    holds the text of the handout's cells (`reasoning.handout`): the student's own cells are the others."""
    try:
        if submission.refused:
            return Result(submission, submission.refused, detail=submission.why)
        if submission.problem_set is None:
            return Result(submission, "unrecognised", detail="name it <student>__NN_slug.ipynb")
        try:
            possible = question_points(submission.problem_set, root)
        except ValueError as err:
            return Result(submission, "unknown problem set", detail=str(err))
        zero = dict.fromkeys(possible, 0)
        status, detail, content = read_once(submission)
        if not status and not content.lstrip()[:1] == b"{":
            status, detail = "corrupt", "not a readable notebook"
        if status:
            return Result(submission, status, possible=possible, points=zero, detail=detail)
        key = key or AnswerKey()
        values = key.values(submission.student, possible)
        variant = json.dumps({"student": submission.student, "values": values})
        status, data, detail = run_notebook(content, limits or Limits(), timeout, sandboxed, variant, hide)
        detail = "; ".join(filter(None, (detail, submission.why)))  # with the note for the teacher, if any
        last, hints, errors = records(data)
        outcomes = read_answers(data, possible, lambda q, a: key.judge(q, a, values[q]))
        advice = {q: key.advice(q, last[q][1], values[q]) for q, o in outcomes.items() if o == "wrong" and last[q]}
        cells = reasoning.notebook_cells(content)
        answers = {q: last[q][1] for q in possible if last.get(q) not in (None, ...)}
        return Result(submission, status, outcomes, scored(possible, outcomes, hints, hint_cost), possible, detail,
                      {q: n for q, n in hints.items() if q in possible}, advice, errors,
                      reasoning.capture(cells, possible, handout), integrity.work(cells, handout, answers))
    except Exception as err:  # noqa: BLE001 - the error boundary: one file never stops the class's grading
        return grader_error(submission, err)


def _flag(results: list[Result], key: AnswerKey, roster: Roster | None) -> None:
    """Add what `integrity` finds to each result's flags, with the key's view of each student's inputs."""
    def differ(qid: str, a: str, b: str) -> bool:
        return key.values(a, [qid])[qid] != key.values(b, [qid])[qid]

    integrity.flag(results, differ, lambda qid, answer: key.judge(qid, answer) == "right", roster,
                   reasoning.naming(roster))


def _handouts(submissions: list[Submission], root: Path) -> dict[str, frozenset[str]]:
    """{problem set: its handout's cell texts (`reasoning.handout`)} of each set the submissions claim that the
    course has."""
    sets = {s.problem_set for s in submissions if s.problem_set and not s.refused}
    return {name: reasoning.handout(root, name) for name in sets if (root / "solutions" / f"{name}.md").is_file()}


def _questions(submissions: list[Submission], root: Path) -> set[str]:
    """The question ids of every problem set the submissions claim (unknown sets have none)."""
    qids: set[str] = set()
    for name in {s.problem_set for s in submissions if s.problem_set and not s.refused}:
        try:
            qids |= set(question_points(name, root))
        except ValueError:
            continue
    return qids


def course_root(root: Path | None = None) -> Path:
    """The course's folder, the one holding `solutions/` (the problem sets and their points): `root` when given, else
    the current folder, else the checkout this package runs from, so the grader runs from anywhere."""
    if root is not None:
        if not (Path(root) / "solutions").is_dir():
            raise ValueError(f"root={str(root)!r} has no solutions/ folder: give the course's folder (--course), "
                             "the one holding solutions/")
        return Path(root)
    for place in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (place / "solutions").is_dir():
            return place
    raise ValueError(f"neither the current folder ({Path.cwd()}) nor this package's checkout holds solutions/: "
                     "give the course's folder with --course (root=...)")


def _regraded(submissions: list[Submission], students: Collection[str], folder: Path) -> list[Submission]:
    """The submissions of `students` only; ValueError naming a student with no file in `folder`."""
    found = {s.student for s in submissions}
    for name in students:
        if name not in found:
            near = closest(name, sorted(found))
            raise ValueError(f"student={name!r} has no file in {str(folder)!r}"
                             + (f"; closest: {', '.join(map(repr, near))}" if near else ""))
    return [s for s in submissions if s.student in set(students)]


def cores() -> int:
    """The CPUs this process may run on (its affinity, which a container or `taskset` narrows): how many notebooks
    `grade` runs at once unless told."""
    return len(os.sched_getaffinity(0))


def grade(folder: Path, out: Path, root: Path | None = None, timeout: float = 120, jobs: int | None = None,
          sandboxed: bool = True, force: bool = False, limits: Limits | None = None,
          secret: str | None = None, hint_cost: float = 0.0,
          on_results: Callable[[list[Result]], None] | None = None, students: Collection[str] | None = None,
          roster: Roster | None = None) -> Table:
    """Grade every file in `folder`; write the CSV gradebook `out` (a row per file, a column per question) and
    `feedback/<student>-<hash>.md` beside it; return the summary (a row per student, a column per problem set).

    `timeout` is in seconds per cell; `jobs` notebooks run at once (default `cores()`). Each runs in a sandbox
    (see `sandbox`); without one (`sandbox.available()` says why) grading is refused unless `sandboxed=False`,
    which runs the notebooks as plain processes (trusted work only) and says so in every row. With the course's
    `secret`, each student is graded against their own variant (`scalebook.course.variants`); `hint_cost` (0 to 1)
    is the fraction of a question's points each hint taken costs; `on_results` is called with every file's
    result once the gradebook is written.

    `root` is the course's folder (`course_root`: by default here, else this package's checkout). `out`'s folder is
    created. The gradebook is written whole or not at all: until the run ends the earlier one stays as it was, and a
    run stopped at any moment (Ctrl-C) leaves it so. `students` regrades those students' files only, into the
    gradebook already at `out` (the other students' rows kept); the teacher's manual points (`manual.py`) are never
    written over.
    With the course's `roster`, each file is filed under its sender's uid, or is a row `unmatched` saying why.
    """
    jobs = cores() if jobs is None else jobs
    if not timeout > 0 or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"timeout must be positive and jobs at least 1, got timeout={timeout!r}, jobs={jobs!r}")
    if not (isinstance(hint_cost, (int, float)) and 0 <= hint_cost <= 1):
        raise ValueError(f"hint_cost={hint_cost!r} must be a fraction of a question's points, 0 to 1")
    root = course_root(root)
    folder, out = Path(folder), Path(out)
    submissions = find_submissions(folder, roster)
    earlier = check_out(out, folder, force, students is not None)
    if students is not None:
        submissions = _regraded(submissions, students, folder)
    if sandboxed and (why := sandbox.available()):
        raise ValueError(f"sandboxed=True, but no sandbox works here: {why}. Pass --no-sandbox (sandboxed=False) "
                         "only to grade work you trust.")
    limits = dataclasses.replace(limits or Limits(), jobs=jobs)  # `jobs` sandboxes share the host's tables
    out.parent.mkdir(parents=True, exist_ok=True)
    mode = f"{sandbox.backend()}; {sandbox.describe(limits)}" if sandboxed else "none (--no-sandbox)"
    book = Gradebook(out, folder, submissions, _questions(submissions, root), mode,
                     earlier if students is not None else None)
    key = AnswerKey(secret, {s.student for s in submissions if s.student})
    hide = tuple(str(p.resolve()) for p in (root, folder, out.parent))
    given = _handouts(submissions, root)

    def one(index: int) -> None:
        try:
            result = grade_one(submissions[index], root, timeout, sandboxed, limits, key, hide, hint_cost,
                               given.get(submissions[index].problem_set or "", frozenset()))
        except Exception as err:  # noqa: BLE001 - grade_one never raises; should it, the row says so
            result = grader_error(submissions[index], err)
        book.record(index, result)

    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        list(pool.map(one, range(len(submissions))))
        pool.shutdown()
        _flag([r for r in book.results if r], key, roster)
        results = book.finish()
    except BaseException:  # Ctrl-C included: the earlier gradebook stays as it was
        pool.shutdown(wait=False, cancel_futures=True)
        book.abandon()
        raise
    reasoning.write_pages(results, out.parent / "reasoning", roster, keep=students is not None)
    if on_results:
        on_results(results)
    students = len({r.submission.student for r in results})
    flagged = sum(bool(r.flags) for r in results)
    title = (f"gradebook: {len(results)} file(s) of {students} student(s); a column per problem set (! = not fully "
             f"graded); every question, status and file in {out.name}, feedback/ and reasoning/ beside it. Sandbox: "
             f"{mode}" + (f". Integrity: {flagged} file(s) flagged (the flags column)" if flagged else ""))
    return summary(results, "\n".join(textwrap.wrap(title, 120)))
