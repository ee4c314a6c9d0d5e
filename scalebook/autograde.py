"""Grade a folder of submitted exercise notebooks: one command for a course, safe whatever comes in.

    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs 2] [--force] [--no-sandbox]

**Who sent what.** The student is named from one place per file. A file at the top of the folder is
`<student>__NN_slug.ipynb`: its name names the student. A folder at the top is a student's: the folder names
the student, and its files are `NN_slug.ipynb`; a file in it named like another student's
(`mallory/alice__01_rooflines.ipynb`) is refused as misnamed, in Mallory's row. The walk looks two levels
deep and no further (a folder inside a student's folder is a refused row); hidden entries are skipped.
**One file per student and problem set counts: the latest** (the newest modification time, ties broken by
the path); each other one gets a row saying `superseded`, naming the file that counts, and is not run.

**What is read.** Each file is opened once, without following links and without blocking (`O_NOFOLLOW`,
`O_NONBLOCK`), and must be a regular file with one name: a symlink, a hard link (a second name of someone's
file, as unpacking an archive can make), a pipe or a device is refused in its row; a file over
`MAX_NOTEBOOK` bytes is refused unread, and reading is bounded in time. The grader never parses a notebook:
the sandbox does, so a hostile 32 MiB file costs the grader its bytes and no more.

**How it runs.** Each notebook runs in its own sandbox (`sandbox.py`: bubblewrap or namespaces, nothing of
the course or the grader visible, a cgroup capping its CPU share, memory and processes where the machine
allows one, rlimits always, every process it started killed at the end; `sandbox.describe` says which caps
apply, and every row's `sandbox` column repeats it), in a fresh kernel with a time limit per cell. Every
`sb.check(qid, answer)` it reaches only hands its answer out, as plain JSON data; the grader compares it
with the answer key (`scalebook.problems`) in its own process, where the submission cannot reach. A
question scores its points (the ★ count in its heading in `solutions/`) when its last recorded answer
is right.

**What comes out.** Each file found gets one row, whatever it did: a crash, a timeout, a corrupt or foreign
file, a link or a forged answer gives a status and zero for what could not be graded, and a failure of the
grader itself on one file (even in writing its row) becomes that row's status. Rows are appended to the CSV
as results arrive (constant cost per row), and the CSV and each student's `feedback/` file are rewritten
once, atomically, at the end. Text that comes from a submission (names, kernel names, error lines) is
escaped for each place it goes: control and bidirectional characters and undecodable bytes shown as
escapes everywhere, a leading `= + - @` quoted in the CSV, Markdown and HTML syntax escaped in the feedback.
`grade` returns the terminal's summary: one row per student, a column per problem set.
"""

from __future__ import annotations

import csv
import errno
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
import textwrap
import threading
import time
import traceback
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from . import sandbox
from .grading import GRADE_ANSWERS, MAX_DEPTH, MAX_RECORD, Comparison
from .tables import Table

__all__ = ["Submission", "Result", "find_submissions", "question_points", "read_answers", "grade_one", "grade",
           "main"]

_FLAT = re.compile(r"^(?P<student>.+?)__(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
_IN_FOLDER = re.compile(r"^(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
_HEADING = re.compile(r"^## Problem (\d+) (★+)", re.M)
_QID = re.compile(rb'"qid"\s*:\s*"([0-9.]{1,16})"')
_NOTEBOOK = "submission.ipynb"  # its name inside the sandbox, whatever the student called it
MAX_NOTEBOOK = 32 * 2**20  # bytes; larger files are not notebooks a problem set produces
MAX_ANSWERS = 4 * 2**20  # bytes of answer records read back from one submission
_READ_SECONDS = 30  # to read one submitted file
_GRACE = 60  # seconds beyond the per-cell limit for starting the kernel and the whole notebook
_EXITS = {0: "graded", 3: "timeout", 5: "corrupt"}  # the sandboxed child's exit codes; 6: not python


@dataclass(frozen=True)
class Submission:
    """One entry found in the submissions folder: who sent it, which problem set it claims to be (None if
    unrecognisable), its path, its modification time (ns), and, when it is not run, the row's status
    (`refused`) and why."""

    student: str
    problem_set: str | None
    path: Path
    refused: str = ""
    why: str = ""
    mtime: int = 0


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


def _lstat(path: Path) -> tuple[str, str, int]:
    """(kind, why, mtime in ns) of an entry, links unfollowed: kind is 'file', 'folder', or a refusal."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "vanished", "the file was gone when it was looked at", 0
    except OSError as err:
        return "unreadable", f"{err.strerror} (errno {err.errno})", 0
    if stat.S_ISLNK(info.st_mode):
        return "symlink refused", "links are not followed", info.st_mtime_ns
    if stat.S_ISDIR(info.st_mode):
        return "folder", "", info.st_mtime_ns
    if not stat.S_ISREG(info.st_mode):
        return "special file refused", "pipes, sockets and devices are not read", info.st_mtime_ns
    if info.st_nlink != 1:
        return "hard link refused", f"{info.st_nlink} names share this file; each submission must be its own", 0
    return "file", "", info.st_mtime_ns


def _entries(folder: Path) -> tuple[list[str], str]:
    """The names in `folder`, sorted, hidden ones left out; and why it could not be listed ('' if it could)."""
    try:
        return sorted(n for n in os.listdir(folder) if not n.startswith(".")), ""
    except OSError as err:
        return [], f"{err.strerror} (errno {err.errno})"


def _found(path: Path, owner: str | None) -> Submission:
    """The Submission of one entry: at the top of the submissions (`owner` None: its name names the
    student) or in the folder of student `owner`."""
    kind, why, mtime = _lstat(path)
    if kind == "folder":
        kind, why = "folder refused", "a student's folder holds notebooks, not folders"
    match = (_FLAT if owner is None else _IN_FOLDER).match(path.name)
    if owner is not None:
        student = owner
    elif match:
        student = match["student"]
    else:
        student = path.name.split("__")[0] if "__" in path.name else path.stem
    if kind == "file" and match is None:
        kind, why = (("misnamed", "in a student's folder, name the file NN_slug.ipynb (the folder names the "
                      "student)") if owner is not None and _FLAT.match(path.name) else
                     ("unrecognised", "name it <student>__NN_slug.ipynb, or NN_slug.ipynb in <student>/"))
    return Submission(student, match["set"] if match else None, path, "" if kind == "file" else kind, why, mtime)


def _latest_counts(found: list[Submission], folder: Path) -> list[Submission]:
    """Mark every submission in `folder` but the latest of each student and problem set as superseded."""
    latest: dict[tuple[str, str], Submission] = {}
    for s in found:
        key = (s.student, s.problem_set or "")
        if not s.refused and s.problem_set and (key not in latest or (s.mtime, str(s.path)) >
                                                 (latest[key].mtime, str(latest[key].path))):
            latest[key] = s
    marked = []
    for s in found:
        counted = latest.get((s.student, s.problem_set or ""), s)
        if counted is not s and not s.refused:
            s = Submission(s.student, s.problem_set, s.path, "superseded",
                           f"the latest file counts: {counted.path.relative_to(folder)}", s.mtime)
        marked.append(s)
    return marked


def find_submissions(folder: Path) -> list[Submission]:
    """List every entry of `folder` and of its per-student folders (two levels, never deeper), each a
    Submission; links, special files, hard links and misnamed files are marked refused, and all but the
    latest file of a student and problem set superseded (the rules are in the module's docstring)."""
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        raise ValueError(f"submissions={str(folder)!r} is not a folder")
    names, why = _entries(folder)
    if why:
        raise ValueError(f"submissions={str(folder)!r} cannot be listed: {why}")
    found = []
    for name in names:
        path = folder / name
        kind, why, mtime = _lstat(path)
        if kind != "folder":
            found.append(_found(path, None))
            continue
        inner, why = _entries(path)
        if why:
            found.append(Submission(name, None, path, "unreadable folder", why, mtime))
        found += [_found(path / n, name) for n in inner]
    return _latest_counts(found, folder)


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


def _read_once(path: Path) -> tuple[str, str, bytes]:
    """Open a submitted file once, without following a link or blocking on a pipe, check it is a regular
    file with one name, and read it within `_READ_SECONDS`; return (status, detail, content), status ''
    when it was read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "vanished", "the file was gone when it was read", b""
    except OSError as err:
        return ("symlink refused", "links are not followed", b"") if err.errno == errno.ELOOP else (
            "unreadable", f"{err.strerror} (errno {err.errno})", b"")
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "special file refused", "pipes, sockets and devices are not read", b""
        if info.st_nlink != 1:
            return "hard link refused", f"{info.st_nlink} names share this file; each submission must be its own", b""
        if info.st_size > MAX_NOTEBOOK:
            return "too large", f"{info.st_size} bytes; at most {MAX_NOTEBOOK} are accepted", b""
        chunks, size, deadline = [], 0, time.monotonic() + _READ_SECONDS
        while size <= MAX_NOTEBOOK and (chunk := f.read(2**20)):
            chunks.append(chunk)
            size += len(chunk)
            if time.monotonic() > deadline:
                return "unreadable", f"reading it took over {_READ_SECONDS} s", b""
    if size > MAX_NOTEBOOK:
        return "too large", f"over {MAX_NOTEBOOK} bytes; at most {MAX_NOTEBOOK} are accepted", b""
    return "", "", b"".join(chunks)


def _check_notebook(path: str) -> tuple[int, str]:
    """In the sandboxed child, before any of it runs: (exit code, detail) for a file that is not a readable
    Python notebook (5 corrupt, 6 another language), or (0, '')."""
    try:
        with open(path, "rb") as f:
            notebook = json.loads(f.read().decode("utf-8"))
        if not isinstance(notebook["cells"], list):
            raise TypeError("cells")
        meta = notebook.get("metadata") or {}
        spec = meta.get("kernelspec") or {}
        language = str(spec.get("language") or (meta.get("language_info") or {}).get("name") or "python")
        name = str(spec.get("name") or language)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, UnicodeDecodeError, MemoryError):
        return 5, "not a readable notebook"
    if not language.lower().startswith("python"):
        return 6, name[:40].encode("unicode_escape").decode("ascii")  # one line of ASCII, whatever it holds
    return 0, ""


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


def _execute(content: bytes, limits: sandbox.Limits, timeout: float, sandboxed: bool, key: _Key,
             possible: dict[str, int], hide: tuple[str, ...]) -> tuple[str, dict[str, str], str]:
    """Run one notebook (its `content`); return its status, its outcomes and a detail line."""
    with tempfile.TemporaryDirectory(prefix="scalebook-grade-") as tmp:
        answers = Path(tmp) / "answers.jsonl"
        answers.touch()
        if sandboxed:
            argv = ["python", "-m", "scalebook.autograde", "_run", f"{sandbox.HOME}/{_NOTEBOOK}", str(timeout)]
            ran = sandbox.run(argv, {_NOTEBOOK: content}, answers, limits, timeout + _GRACE,
                              env={GRADE_ANSWERS: sandbox.ANSWERS}, hide=hide)
        else:
            copy = Path(tmp) / "work" / _NOTEBOOK
            copy.parent.mkdir()
            copy.write_bytes(content)
            ran = _run_unsandboxed(copy, answers, limits, timeout)
        with open(answers, "rb") as f:
            data = f.read(MAX_ANSWERS)
    last = (ran.output.strip().splitlines() or [""])[-1][:200]
    status = "timeout" if ran.timed_out else _EXITS.get(ran.returncode, "error")
    if ran.returncode == 6:
        return f"not python ({last[:40]})", {}, "only Python notebooks are graded"
    detail = {"graded": "", "corrupt": "not a readable notebook",
              "timeout": f"a cell ran longer than {timeout:g} s, or the notebook longer than {timeout + _GRACE:g} s"
              }.get(status, last)
    return status, read_answers(data, possible, key.judge), detail


def grade_one(submission: Submission, root: Path, timeout: float = 120, sandboxed: bool = True,
              limits: sandbox.Limits | None = None, key: _Key | None = None, hide: tuple[str, ...] = ()) -> Result:
    """Grade one submission; never raises: anything that goes wrong becomes the row's status. `hide` names
    host folders its sandbox must not see (the course root, the submissions, the gradebook's folder)."""
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
        status, detail, content = _read_once(submission.path)
        if not status and not content.lstrip()[:1] == b"{":
            status, detail = "corrupt", "not a readable notebook"
        if status:
            return Result(submission, status, possible=possible, points=zero, detail=detail)
        status, outcomes, detail = _execute(content, limits or sandbox.Limits(), timeout, sandboxed, key or _Key(),
                                            possible, hide)
        points = {q: (p if outcomes.get(q) == "right" else 0) for q, p in possible.items()}
        return Result(submission, status, outcomes, points, possible, detail)
    except Exception as err:  # noqa: BLE001 - the error boundary: one file never stops the class's grading
        return _grader_error(submission, err)


def _grader_error(submission: Submission, err: BaseException, where: str = "") -> Result:
    """The row of a file on which the grader itself failed: the error and the line it came from."""
    frame = traceback.extract_tb(err.__traceback__)[-1] if err.__traceback__ else None
    at = f" ({frame.name}:{frame.lineno})" if frame else ""
    return Result(submission, "grader error", detail=f"{where}{type(err).__name__}: {err}{at}")


_UNSAFE = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}  # control, format (bidi overrides), surrogates, private, breaks


def _clean(value: str) -> str:
    """`value` as text that is safe to print anywhere: an undecodable byte of a file name (a lone surrogate
    from surrogateescape) as \\xNN, and every control, format or bidirectional character (ESC, CR, NUL,
    BEL, the right-to-left override ...) and any other lone surrogate as a \\xNN or \\uNNNN escape."""
    out = []
    for ch in str(value):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif unicodedata.category(ch) in _UNSAFE:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def _text(value: str) -> str:
    """A value as a CSV cell: cleaned (`_clean`), and a leading = + - @ quoted with ' so a spreadsheet
    shows it instead of running it."""
    value = _clean(value)
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value


def _markdown(value: str) -> str:
    """A value as Markdown text: cleaned (`_clean`), with every ASCII punctuation character escaped, so no
    markup, link or HTML tag of a submission's reaches the rendered feedback."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", _clean(value))


def _feedback_name(student: str) -> str:
    """A file name for a student's feedback: safe characters, plus a hash so 'a b' and 'a_b' differ."""
    raw = student.encode("utf-8", "surrogatepass")
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', _clean(student))[:60]}-{hashlib.sha256(raw).hexdigest()[:8]}.md"


_HINTS = {"right": "✓", "wrong": "✗ wrong — rerun the cell to see the expected value and compare units",
          "unanswered": "… not answered — replace the `...`", "missing": "? never checked — did the cell run?",
          "no key": "! not graded: the answer key has no reference for it — tell your teacher"}


def _feedback_section(r: Result) -> str:
    """One result as a section of a student's feedback (Markdown; the submission's text escaped)."""
    name = r.submission.problem_set or _markdown(r.submission.path.name)
    lines = [f"## {name}: {r.total} / {sum(r.possible.values())} points ({_markdown(r.status)})", ""]
    if r.detail:
        lines.append(f"{_markdown(r.detail)}\n")
    lines += [f"- {q}: {r.points.get(q, 0)}/{p} {_HINTS[r.outcomes.get(q, 'missing')]}"
              for q, p in r.possible.items()]
    return "\n".join(lines) + "\n\n"


def _feedback_title(student: str) -> str:
    return f"# Feedback for {_markdown(student)}\n\n"


def _write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: readers see the old or the new file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class _Gradebook:
    """The CSV and the feedback files: each result appended as it arrives (constant cost per row), and
    everything rewritten once, atomically and in order, by `finish`."""

    def __init__(self, out: Path, folder: Path, submissions: list[Submission], root: Path, mode: str) -> None:
        self.out, self.folder, self.mode = out, folder, mode
        self.feedback = out.parent / "feedback"
        self.lock = threading.Lock()
        self.results: list[Result | None] = [None] * len(submissions)
        self.submissions = submissions
        sets = {s.problem_set for s in submissions if s.problem_set and not s.refused}
        qids = set()
        for name in sets:
            try:
                qids |= set(question_points(name, root))
            except ValueError:
                continue
        self.columns = ["student", "problem set", "file", *sorted(qids, key=lambda q: [int(x) for x in q.split(".")]),
                        "total", "possible", "status", "sandbox", "detail"]
        self.feedback.mkdir(exist_ok=True)
        _write_atomic(out, ",".join(self.columns) + "\r\n")
        self.csv: TextIO = open(out, "a", newline="", encoding="utf-8")  # closed by finish
        self.writer = csv.DictWriter(self.csv, fieldnames=self.columns, restval="")

    def row(self, r: Result) -> dict[str, Any]:
        """The CSV row of one result, every text cell escaped."""
        return {"student": _text(r.submission.student), "problem set": r.submission.problem_set or "",
                "file": _text(str(r.submission.path.relative_to(self.folder))), **r.points, "total": r.total,
                "possible": sum(r.possible.values()), "status": _text(r.status), "sandbox": self.mode,
                "detail": _text(r.detail)}

    def record(self, index: int, result: Result) -> None:
        """Store one result and append its row and its feedback section; a failure to write them becomes
        the row's status."""
        with self.lock:
            try:
                self._append(result)
            except Exception as err:  # noqa: BLE001 - one row's failure stays in its row
                result = _grader_error(result.submission, err, "writing its row: ")
                self._append(result)
            self.results[index] = result

    def _append(self, result: Result) -> None:
        self.writer.writerow(self.row(result))
        self.csv.flush()
        path = self.feedback / _feedback_name(result.submission.student)
        with open(path, "a", encoding="utf-8") as f:
            f.write(("" if f.tell() else _feedback_title(result.submission.student)) + _feedback_section(result))

    def finish(self) -> list[Result]:
        """Rewrite the CSV (every file's row, in order) and each student's feedback, atomically; return the
        results (a file no result came for is a grader error)."""
        self.csv.close()
        results = [r or Result(s, "grader error", detail="no result came back")
                   for r, s in zip(self.results, self.submissions)]
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=self.columns, restval="")
        writer.writeheader()
        writer.writerows(self.row(r) for r in results)
        _write_atomic(self.out, text.getvalue())
        students: dict[str, list[Result]] = {}
        for r in results:
            students.setdefault(r.submission.student, []).append(r)
        for student, mine in students.items():
            _write_atomic(self.feedback / _feedback_name(student),
                          _feedback_title(student) + "".join(map(_feedback_section, mine)))
        return results


_WIDE = 24  # characters of a student's name in the terminal's summary (the CSV has all of it)


def summary(results: list[Result], title: str) -> Table:
    """The terminal's gradebook: a first row of the points possible, then one row per student with a column
    per problem set, headed by its number (the points of the file that counts, '!' when it was not graded in
    full), the total, and how many of the student's files were not graded; the CSV has every question."""
    sets = sorted({_number(r.submission.problem_set) for r in results if r.submission.problem_set})
    top = {"student": "(points possible)", **dict.fromkeys(sets, ""), "total": 0, "not graded": ""}
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        name = _clean(r.submission.student)
        row = rows.setdefault(name, {"student": name if len(name) <= _WIDE else name[:_WIDE - 1] + "…",
                                     **dict.fromkeys(sets, ""), "total": 0, "not graded": 0})
        if r.status == "superseded" or not r.submission.problem_set:
            row["not graded"] += r.status != "superseded"
            continue
        number = _number(r.submission.problem_set)
        row[number] = f"{r.total}" + ("" if r.status == "graded" else "!")
        row["total"] += r.total
        row["not graded"] += r.status != "graded"
        top[number] = max(top[number] or 0, sum(r.possible.values()))
    top["total"] = sum(top[n] or 0 for n in sets)
    columns = ["student", *sets, "total", "not graded"]
    return Table([top, *rows.values()], columns=columns, title=title)


def _number(problem_set: str) -> str:
    return problem_set.split("_")[0]


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
    if force and feedback.is_dir():
        for old in feedback.glob("*.md"):
            old.unlink()


def grade(folder: Path, out: Path, root: Path | None = None, timeout: float = 120, jobs: int = 1,
          sandboxed: bool = True, force: bool = False, limits: sandbox.Limits | None = None) -> Table:
    """Grade every file in `folder`; write the CSV gradebook `out` (a row per file, a column per question) and
    `feedback/<student>-<hash>.md` beside it; return the summary (a row per student, a column per problem set).

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
    limits = limits or sandbox.Limits()
    out.parent.mkdir(parents=True, exist_ok=True)
    mode = f"{sandbox.backend()}; {sandbox.describe(limits)}" if sandboxed else "none (--no-sandbox)"
    book = _Gradebook(out, folder, submissions, root, mode)
    key, hide = _Key(), tuple(str(p.resolve()) for p in (root, folder, out.parent))

    def one(index: int) -> None:
        try:
            result = grade_one(submissions[index], root, timeout, sandboxed, limits, key, hide)
        except Exception as err:  # noqa: BLE001 - grade_one never raises; should it, the row says so
            result = _grader_error(submissions[index], err)
        book.record(index, result)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, range(len(submissions))))
    results = book.finish()
    students = len({r.submission.student for r in results})
    title = (f"gradebook: {len(results)} file(s) of {students} student(s); a column per problem set (! = not fully "
             f"graded); every question, status and file in {out.name}, feedback/ beside it. Sandbox: {mode}")
    return summary(results, "\n".join(textwrap.wrap(title, 120)))


def _run_in_kernel(notebook: str, timeout: str) -> int:
    """Sandboxed child: check the notebook (`_check_notebook`), then execute every cell (errors allowed) with
    a per-cell time limit; outputs are discarded. Exits 0, 3 (a cell timed out), 5 (corrupt), 6 (another
    language, named on its last line) or 1 (the kernel failed)."""
    import nbclient
    import nbformat

    sandbox.hold_lifeline()
    code, detail = _check_notebook(notebook)
    if code:
        print(detail, file=sys.stderr)
        return code
    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:  # noqa: BLE001 - whatever nbformat refuses is a corrupt notebook
        return 5
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
