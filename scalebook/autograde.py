"""Grade a folder of submitted exercise notebooks: one command for a course, safe whatever comes in.

    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs 2] [--force] [--no-sandbox]

A submission is `<student>__NN_slug.ipynb` in the folder, or `NN_slug.ipynb` inside a per-student folder.
Each runs in its own sandbox (`sandbox.py`: bubblewrap or namespaces, nothing of the grader's visible,
resources capped, every process it started killed at the end), in a fresh kernel with a time limit per
cell. Every
`sb.check(qid, answer)` it reaches only hands its answer out, as plain JSON data; the grader compares it
with the answer key (`scalebook.problems`) in its own process, where the submission cannot reach. A
question scores its points (the ★ count in its heading in `solutions/`) when its last recorded answer
is right. Each file found gets one row, whatever it did: a crash, a timeout, a corrupt or foreign file,
a link or a forged answer gives a status and zero for what could not be graded, and the gradebook is
rewritten (atomically) as each result comes in.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import resource
import stat
import subprocess
import sys
import tempfile
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import sandbox
from .grading import GRADE_ANSWERS, MAX_DEPTH, MAX_RECORD, Comparison
from .tables import Table

__all__ = ["Submission", "Result", "find_submissions", "question_points", "read_answers", "grade_one", "grade",
           "main"]

_NAME = re.compile(r"^(?:(?P<student>.+?)__)?(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
_HEADING = re.compile(r"^## Problem (\d+) (★+)", re.M)
_QID = re.compile(rb'"qid"\s*:\s*"([0-9.]{1,16})"')
_NOTEBOOK = "submission.ipynb"  # its name inside the sandbox, whatever the student called it
MAX_NOTEBOOK = 32 * 2**20  # bytes; larger files are not notebooks a problem set produces
MAX_ANSWERS = 4 * 2**20  # bytes of answer records read back from one submission
_GRACE = 60  # seconds beyond the per-cell limit for starting the kernel and the whole notebook


@dataclass(frozen=True)
class Submission:
    """One file found in the submissions folder: who sent it, which problem set it claims to be (None if
    unrecognisable), its path, and why it is refused unread (a symlink, a special file), if it is."""

    student: str
    problem_set: str | None
    path: Path
    refused: str = ""


@dataclass
class Result:
    """The grade of one submission: points per question, and a status ('graded', 'timeout', 'error' ...)."""

    submission: Submission
    status: str
    outcomes: dict[str, str] = field(default_factory=dict)
    points: dict[str, int] = field(default_factory=dict)
    possible: dict[str, int] = field(default_factory=dict)
    detail: str = ""

    @property
    def total(self) -> int:
        return sum(self.points.values())


def find_submissions(folder: Path) -> list[Submission]:
    """List every entry in `folder` (flat `<student>__NN_slug.ipynb` files and per-student folders), links
    and special files included, marked refused; hidden files are skipped. Links are never followed."""
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        raise ValueError(f"submissions={str(folder)!r} is not a folder")
    found = []
    for parent, dirs, files in os.walk(folder, followlinks=False):
        names = files + [d for d in dirs if os.path.islink(os.path.join(parent, d))]
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in names)
        for name in sorted(names):
            path = Path(parent) / name
            if name.startswith("."):
                continue
            mode = path.lstat().st_mode
            refused = ("symlink refused" if stat.S_ISLNK(mode) else
                       "" if stat.S_ISREG(mode) else "special file refused")
            rel = path.relative_to(folder)
            match = _NAME.match(name)
            student = (match and match["student"]) or (rel.parts[0] if len(rel.parts) > 1 else path.stem)
            found.append(Submission(student, match["set"] if match else None, path, refused))
    return sorted(found, key=lambda s: str(s.path))


def question_points(problem_set: str, root: Path) -> dict[str, int]:
    """Return {qid: points} of a problem set: one point per ★ in each question's heading in `solutions/`."""
    source = Path(root) / "solutions" / f"{problem_set}.md"
    if not source.exists():
        raise ValueError(f"problem set {problem_set!r} has no solutions/{problem_set}.md")
    prefix = problem_set.split("_")[0]
    return {f"{prefix}.{n}": len(stars) for n, stars in _HEADING.findall(source.read_text(encoding="utf-8"))}


class _Key:
    """The answer key, in the grader's process only: each reference computed once, shared by the threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Any, float]] = {}

    def judge(self, qid: str, answer: Any) -> str:
        """'right' or 'wrong' for a plain-data `answer` to `qid`, by the comparison `sb.check` uses; 'no key'
        when the key has no working reference for `qid` (the course's fault, not the student's)."""
        from .problems import get_problem  # the key: absent inside the sandbox, where this module also runs

        with self._lock:
            if qid not in self._cache:
                try:
                    problem = get_problem(qid)
                    self._cache[qid] = (problem.reference(), problem.rtol)
                except Exception:  # noqa: BLE001 - a broken key entry marks its question, not the run
                    self._cache[qid] = (None, -1.0)
        reference, rtol = self._cache[qid]
        if rtol < 0:
            return "no key"
        try:
            return "right" if Comparison(answer, reference, rtol).ok else "wrong"
        except (TypeError, ValueError, OverflowError):
            return "wrong"


def _is_plain(value: Any, depth: int = 0) -> bool:
    """Whether decoded JSON is an answer `sb.check` could have sent: numbers, strings, lists (no objects)."""
    if isinstance(value, list):
        return depth < MAX_DEPTH and all(_is_plain(v, depth + 1) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def read_answers(data: bytes, possible: dict[str, int], judge: Any) -> dict[str, str]:
    """Return {qid: outcome} from the answer records a submission sent, for the qids in `possible`.

    The last record of a question counts. A record is only a question id and an answer: any other field
    (an 'outcome', say) is ignored, and a record that is malformed, oversized or holds anything but plain
    data makes its question 'wrong'. `judge(qid, answer)` returns 'right' or 'wrong'.
    """
    last: dict[str, Any] = {}
    for line in data[:MAX_ANSWERS].splitlines():
        try:
            if len(line) > MAX_RECORD:
                raise ValueError("oversized")
            record = json.loads(line)
            qid = record["qid"]
            if "unanswered" in record and "answer" not in record:
                last[qid] = ...
            elif _is_plain(record["answer"]) and "invalid" not in record:
                last[qid] = ("answer", record["answer"])
            else:
                last[qid] = None
        except (ValueError, KeyError, TypeError, RecursionError):
            named = _QID.search(line[:200])
            if named:
                last[named[1].decode()] = None
    outcomes = {}
    for qid in possible:
        if qid not in last:
            outcomes[qid] = "missing"
        elif last[qid] is ...:
            outcomes[qid] = "unanswered"
        else:
            outcomes[qid] = "wrong" if last[qid] is None else judge(qid, last[qid][1])
    return outcomes


def _read_notebook(path: Path) -> tuple[str, str]:
    """Check a submitted file without following links or blocking on a pipe; return (status, detail), with
    status '' for a readable Python notebook."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "special file refused", ""
        if info.st_size > MAX_NOTEBOOK:
            return "too large", f"{info.st_size} bytes; at most {MAX_NOTEBOOK} are accepted"
        data = f.read(MAX_NOTEBOOK + 1)
    try:
        notebook = json.loads(data.decode("utf-8"))
        if not isinstance(notebook["cells"], list):
            raise TypeError("cells")
        meta = notebook.get("metadata") or {}
        spec = meta.get("kernelspec") or {}
        language = str(spec.get("language") or (meta.get("language_info") or {}).get("name") or "python")
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, UnicodeDecodeError):
        return "corrupt", "not a readable notebook"
    if not language.lower().startswith("python"):
        return f"not python ({str(spec.get('name') or language)[:40]})", "only Python notebooks are graded"
    return "", ""


def _run_unsandboxed(notebook: Path, answers: Path, limits: sandbox.Limits, timeout: float) -> sandbox.SandboxResult:
    """Run the notebook in a plain child process (--no-sandbox): a clean environment and rlimits, no isolation."""
    def cap() -> None:
        for kind, value in ((resource.RLIMIT_AS, limits.memory), (resource.RLIMIT_FSIZE, limits.file_size),
                            (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(kind, (value, value))

    env = {"HOME": str(notebook.parent), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "LANG": "C.UTF-8", "PYDEVD_DISABLE_FILE_VALIDATION": "1", "JAX_PLATFORMS": "cpu",
           "MPLBACKEND": "Agg", GRADE_ANSWERS: str(answers)}
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "scalebook.autograde", "_run", str(notebook), str(timeout)],
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


def _execute(submission: Submission, limits: sandbox.Limits, timeout: float, sandboxed: bool,
             key: _Key, possible: dict[str, int]) -> tuple[str, dict[str, str], str]:
    """Run one notebook; return its status, its outcomes and a detail line."""
    with tempfile.TemporaryDirectory(prefix="scalebook-grade-") as tmp:
        answers = Path(tmp) / "answers.jsonl"
        answers.touch()
        if sandboxed:
            argv = ["python", "-m", "scalebook.autograde", "_run", f"{sandbox.HOME}/{_NOTEBOOK}", str(timeout)]
            ran = sandbox.run(argv, {_NOTEBOOK: submission.path}, answers, limits, timeout + _GRACE,
                              env={GRADE_ANSWERS: sandbox.ANSWERS})
        else:
            copy = Path(tmp) / "work" / _NOTEBOOK
            copy.parent.mkdir()
            copy.write_bytes(submission.path.read_bytes())
            ran = _run_unsandboxed(copy, answers, limits, timeout)
        with open(answers, "rb") as f:
            data = f.read(MAX_ANSWERS)
    status = "timeout" if ran.timed_out else {0: "graded", 3: "timeout"}.get(ran.returncode, "error")
    if status == "graded":
        detail = ""
    elif status == "timeout":
        detail = f"a cell ran longer than {timeout:g} s, or the notebook longer than {timeout + _GRACE:g} s"
    else:
        detail = (ran.output.strip().splitlines() or [""])[-1][:200]
    return status, read_answers(data, possible, key.judge), detail


def grade_one(submission: Submission, root: Path, timeout: float = 120, sandboxed: bool = True,
              limits: sandbox.Limits | None = None, key: _Key | None = None) -> Result:
    """Grade one submission; never raises: anything that goes wrong becomes the row's status."""
    try:
        if submission.refused:
            return Result(submission, submission.refused, detail="links and special files are not read")
        if submission.problem_set is None:
            return Result(submission, "unrecognised", detail="name it <student>__NN_slug.ipynb")
        try:
            possible = question_points(submission.problem_set, root)
        except ValueError as err:
            return Result(submission, "unknown problem set", detail=str(err))
        zero = dict.fromkeys(possible, 0)
        status, detail = _read_notebook(submission.path)
        if status:
            return Result(submission, status, possible=possible, points=zero, detail=detail)
        status, outcomes, detail = _execute(submission, limits or sandbox.Limits(), timeout, sandboxed,
                                            key or _Key(), possible)
        points = {q: (p if outcomes[q] == "right" else 0) for q, p in possible.items()}
        return Result(submission, status, outcomes, points, possible, detail)
    except Exception as err:  # noqa: BLE001 - the error boundary: one file never stops the class's grading
        where = traceback.extract_tb(err.__traceback__)[-1]
        return Result(submission, "grader error", detail=f"{type(err).__name__}: {err} ({where.name}:{where.lineno})")


def _text(value: str) -> str:
    """A name as it can be written: undecodable bytes shown as \\xNN, and a leading = + - @ tab or CR
    quoted with ' so a spreadsheet shows it instead of running it."""
    value = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _feedback_name(student: str) -> str:
    """A file name for a student's feedback: safe characters, plus a hash so 'a b' and 'a_b' differ."""
    raw = student.encode("utf-8", "surrogateescape")
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', _text(student))[:60]}-{hashlib.sha256(raw).hexdigest()[:8]}.md"


def _feedback(student: str, results: list[Result]) -> str:
    lines = [f"# Feedback for {_text(student)}", ""]
    hints = {"right": "✓", "wrong": "✗ wrong — rerun the cell to see the expected value and compare units",
             "unanswered": "… not answered — replace the `...`", "missing": "? never checked — did the cell run?",
             "no key": "! not graded: the answer key has no reference for it — tell your teacher"}
    for r in results:
        name = r.submission.problem_set or _text(r.submission.path.name)
        lines += [f"## {name}: {r.total} / {sum(r.possible.values())} points ({r.status})", ""]
        if r.detail:
            lines.append(f"{_text(r.detail)}\n")
        lines += [f"- {q}: {r.points.get(q, 0)}/{p} {hints[r.outcomes.get(q, 'missing')]}"
                  for q, p in r.possible.items()]
        lines.append("")
    return "\n".join(lines)


def _write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: readers see the old or the new file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class _Gradebook:
    """The CSV and the feedback files, rewritten as each result arrives; one row per file from the start."""

    def __init__(self, out: Path, folder: Path, submissions: list[Submission], root: Path, mode: str) -> None:
        self.out, self.folder, self.mode = out, folder, mode
        self.feedback = out.parent / "feedback"
        self.lock = threading.Lock()
        self.results = [Result(s, "pending") for s in submissions]
        sets = {s.problem_set for s in submissions if s.problem_set and not s.refused}
        qids = set()
        for name in sets:
            try:
                qids |= set(question_points(name, root))
            except ValueError:
                continue
        self.columns = ["student", "problem set", "file", *sorted(qids, key=lambda q: [int(x) for x in q.split(".")]),
                        "total", "possible", "status", "sandbox", "detail"]

    def rows(self) -> list[dict[str, Any]]:
        return [{"student": _text(r.submission.student), "problem set": r.submission.problem_set or "",
                 "file": _text(str(r.submission.path.relative_to(self.folder))), **r.points, "total": r.total,
                 "possible": sum(r.possible.values()), "status": _text(r.status), "sandbox": self.mode,
                 "detail": _text(r.detail)} for r in self.results]

    def record(self, index: int, result: Result) -> None:
        """Store one result; rewrite the CSV and its student's feedback."""
        with self.lock:
            self.results[index] = result
            self.write_csv()
            student = result.submission.student
            mine = [r for r in self.results if r.submission.student == student and r.status != "pending"]
            self.feedback.mkdir(exist_ok=True)
            _write_atomic(self.feedback / _feedback_name(student), _feedback(student, mine))

    def write_csv(self) -> None:
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=self.columns, restval="")
        writer.writeheader()
        writer.writerows(self.rows())
        _write_atomic(self.out, text.getvalue())


def _check_out(out: Path, folder: Path, force: bool) -> None:
    """Refuse an output path that is a folder, lies in the submissions, or would overwrite a gradebook or its
    feedback without `force`."""
    if out.is_dir():
        raise ValueError(f"out={str(out)!r} is a folder; give the path of the CSV file to write")
    if out.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"out={str(out)!r} lies inside the submissions folder; write the gradebook elsewhere")
    if (out.exists() or out.is_symlink()) and not force:
        raise ValueError(f"out={str(out)!r} exists; pass force=True (--force) to overwrite that gradebook")
    feedback = out.parent / "feedback"
    if feedback.is_dir() and any(feedback.iterdir()) and not force:
        raise ValueError(f"{str(feedback)!r} holds earlier feedback; pass force=True (--force) to overwrite it")


def grade(folder: Path, out: Path, root: Path | None = None, timeout: float = 120, jobs: int = 1,
          sandboxed: bool = True, force: bool = False, limits: sandbox.Limits | None = None) -> Table:
    """Grade every file in `folder`; write the CSV gradebook `out` and `feedback/<student>-<hash>.md` beside it.

    `timeout` is in seconds per cell; `jobs` notebooks run at once. Each runs in a sandbox (see `sandbox`);
    without one (`sandbox.available()` says why) grading is refused unless `sandboxed=False`, which runs
    the notebooks as plain processes (trusted work only) and says so in every row.
    """
    if not timeout > 0 or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"timeout must be positive and jobs at least 1, got timeout={timeout!r}, jobs={jobs!r}")
    root = Path(root) if root else Path.cwd()
    if not (root / "solutions").is_dir():
        raise ValueError(f"root={str(root)!r} has no solutions/ folder (run from the repository root)")
    folder, out = Path(folder), Path(out)
    submissions = find_submissions(folder)
    _check_out(out, folder, force)
    if sandboxed and (why := sandbox.available()):
        raise ValueError(f"sandboxed=True, but no sandbox works here: {why}. Pass --no-sandbox (sandboxed=False) "
                         "only to grade work you trust.")
    out.parent.mkdir(parents=True, exist_ok=True)
    book = _Gradebook(out, folder, submissions, root, sandbox.backend() if sandboxed else "none (--no-sandbox)")
    book.write_csv()
    key, limits = _Key(), limits or sandbox.Limits()

    def one(index: int) -> None:
        book.record(index, grade_one(submissions[index], root, timeout, sandboxed, limits, key))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, range(len(submissions))))
    return Table(book.rows(), columns=book.columns, title=f"gradebook: {len(submissions)} submission(s)")


def _run_in_kernel(notebook: str, timeout: str) -> int:
    """Sandboxed child: execute every cell (errors allowed) with a per-cell time limit; outputs are discarded."""
    import nbclient
    import nbformat

    sandbox.hold_lifeline()

    nb = nbformat.read(notebook, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=float(timeout), allow_errors=True, kernel_name="python3",
                                     resources={"metadata": {"path": str(Path(notebook).parent)}})
    try:
        client.execute()
    except nbclient.exceptions.CellTimeoutError:
        return 3
    except Exception as err:  # noqa: BLE001 - a kernel that dies is the submission's problem: its row says so
        print(f"{type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m scalebook.autograde _run NOTEBOOK TIMEOUT` is the process a sandbox runs."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 3 and argv[0] == "_run":
        return _run_in_kernel(argv[1], argv[2])
    print("usage: scalebook grade SUBMISSIONS_DIR --out gradebook.csv", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
