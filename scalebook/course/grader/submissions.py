"""The files of a class's submissions folder: who sent each, which problem set it claims, which one counts,
and its bytes, read safely.

**Who sent what.** The student is named from one place per file. A file at the top of the folder is
`<student>__NN_slug.ipynb`: its name names the student. A folder at the top is a student's: the folder names
the student, and its files are `NN_slug.ipynb`; a file in it named like another student's
(`mallory/alice__01_rooflines.ipynb`) is refused as misnamed, in Mallory's row. The walk looks two levels
deep and no further (a folder inside a student's folder is a refused row); hidden entries are skipped.
Whom a name names is `roster.sender`'s rule: with the course's roster, the uid of the one student it names
(Canvas's and Moodle's download names too), or the row is `unmatched` with the reason; without a roster, the
name normalised (`Dup`, `dup ` and `dup` are one student).
**One file per student and problem set counts: the latest** (the newest modification time, ties broken by
the path); each other one gets a row saying `superseded`, naming the file that counts, and is not run.

**What is read.** Each file is opened once (`read_once`), without following links and without blocking
(`O_NOFOLLOW`, `O_NONBLOCK`), and must be a regular file with one name: a symlink, a hard link (a second name
of someone's file, as unpacking an archive can make), a pipe or a device is refused in its row; a file over
`MAX_NOTEBOOK` bytes is refused unread, reading is bounded in time, and a file that vanished is a row too.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..roster import Roster, sender

__all__ = ["Submission", "Result", "find_submissions", "read_once", "MAX_NOTEBOOK"]

_FLAT = re.compile(r"^(?P<student>.+?)__(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
_IN_FOLDER = re.compile(r"^(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
MAX_NOTEBOOK = 32 * 2**20  # bytes; larger files are not notebooks a problem set produces
_READ_SECONDS = 30  # to read one submitted file


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
    """The grade of one submission: points per question, a status ('graded', 'timeout', 'error' ...), the
    hints taken and the advice its feedback gives beside each wrong answer."""

    submission: Submission
    status: str
    outcomes: dict[str, str] = field(default_factory=dict)
    points: dict[str, int] = field(default_factory=dict)
    possible: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    hints: dict[str, int] = field(default_factory=dict)  # hints taken per question
    advice: dict[str, str] = field(default_factory=dict)  # per wrong answer: the likely mistake and a hint
    errors: list[str] = field(default_factory=list)  # the error line of each crashed cell ('cell 4: NameError: ...')
    reasoning: dict[str, str] = field(default_factory=dict)  # per question: the reasoning cells' text, for the teacher

    @property
    def total(self) -> float:
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


def _found(path: Path, owner: str | None, roster: Roster | None = None) -> Submission:
    """The Submission of one entry: at the top of the submissions (`owner` None: its name names the
    student) or in the folder `owner`. The student is who that name names (`roster.sender`: the roster's
    uid, or the name normalised without a roster); a name that names no one makes the row `unmatched`."""
    kind, why, mtime = _lstat(path)
    if kind == "folder":
        kind, why = "folder refused", "a student's folder holds notebooks, not folders"
    student, rest, unmatched = sender(path.name if owner is None else owner, roster, folder=owner is not None)
    match = _IN_FOLDER.match(path.name if owner is not None else rest)
    if kind == "file" and match is None:
        kind, why = (("misnamed", "in a student's folder, name the file NN_slug.ipynb (the folder names the "
                      "student)") if owner is not None and _FLAT.match(path.name) else
                     ("unrecognised", "name it <student>__NN_slug.ipynb, or NN_slug.ipynb in <student>/"))
    elif kind == "file" and unmatched:
        kind, why = "unmatched", unmatched
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


def find_submissions(folder: Path, roster: Roster | None = None) -> list[Submission]:
    """List every entry of `folder` and of its per-student folders (two levels, never deeper), each a
    Submission of the student its name names (in `roster`, where there is one); links, special files, hard
    links, misnamed files and names of no one are marked refused, and all but the latest file of a student
    and problem set superseded (the rules are in the module's docstring)."""
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
            found.append(_found(path, None, roster))
            continue
        inner, why = _entries(path)
        if why:
            found.append(Submission(name, None, path, "unreadable folder", why, mtime))
        found += [_found(path / n, name, roster) for n in inner]
    return _latest_counts(found, folder)


def read_once(path: Path) -> tuple[str, str, bytes]:
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
