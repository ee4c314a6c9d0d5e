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

**What is read.** The folders are listed, and each file opened once (`read_once`), through folder
descriptors: every folder below the submissions folder is opened relative to the one above it (openat) with
`O_NOFOLLOW | O_DIRECTORY`, and the file with `O_NOFOLLOW | O_NONBLOCK`, so a student's folder swapped for a
link to a classmate's after the listing is refused, not followed; and the file opened must be the one listed
(its inode), or the row says `replaced`. It must be a regular file: a symlink, a pipe or a device is refused in
its row; a file over `MAX_NOTEBOOK` bytes is refused unread, reading is bounded in time, and a file that
vanished is a row too.

**Hard links** are judged across the class (`_shared`). A hard link has no original: its names are one inode,
with one owner, one set of times and one content, so nothing tells which student made it, and refusing every
name (as a one-name rule does) fails the student whose work was taken. So a file whose names all lie in the
submissions is run under each name, as that student's, and each row names the others' files for the teacher
to judge, as for any copy; a file with a name outside the submissions (the course's own solutions, say) is no
one's own work and is refused under every name, as is one that gains a name after the listing.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..roster import Roster, sender

__all__ = ["Submission", "Result", "find_submissions", "read_once", "MAX_NOTEBOOK"]

_FLAT = re.compile(r"^(?P<student>.+?)__(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
_IN_FOLDER = re.compile(r"^(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
MAX_NOTEBOOK = 32 * 2**20  # bytes; larger files are not notebooks a problem set produces
_READ_SECONDS = 30  # to read one submitted file
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # a folder below the submissions folder
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Submission:
    """One entry found in the submissions folder: who sent it, which problem set it claims to be (None if
    unrecognisable), its path, its modification time (ns), and, when it is not run, the row's status
    (`refused`) and why; when it is run, `why` is a note for the teacher ('', or the classmates' files it is one
    file with). `top` is the submissions folder it was listed in (None: the folder holding it), `inode` the
    (device, inode) of the file listed (None: not checked) and `names` how many names it may have."""

    student: str
    problem_set: str | None
    path: Path
    refused: str = ""
    why: str = ""
    mtime: int = 0
    top: Path | None = None
    inode: tuple[int, int] | None = None
    names: int = 1


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
    work: Any = None  # what integrity compares of the notebook (`integrity.Work`), once it ran
    flags: list[str] = field(default_factory=list)  # what integrity found (`integrity.flag`), for the teacher

    @property
    def total(self) -> float:
        return sum(self.points.values())


def _lstat(name: str | Path, at: int | None) -> tuple[str, str, os.stat_result | None]:
    """(kind, why, its status) of the entry `name` of the folder open at `at` (or of the path `name`), links
    unfollowed: kind is 'file', 'folder', or a refusal."""
    try:
        info = os.stat(name, dir_fd=at, follow_symlinks=False)
    except FileNotFoundError:
        return "vanished", "the file was gone when it was looked at", None
    except OSError as err:
        return "unreadable", f"{err.strerror} (errno {err.errno})", None
    if stat.S_ISLNK(info.st_mode):
        return "symlink refused", "links are not followed", info
    if stat.S_ISDIR(info.st_mode):
        return "folder", "", info
    if not stat.S_ISREG(info.st_mode):
        return "special file refused", "pipes, sockets and devices are not read", info
    return "file", "", info


def _entries(folder: int) -> tuple[list[str], str]:
    """The names in the folder open at `folder`, sorted, hidden ones left out; and why it could not be listed
    ('' if it could)."""
    try:
        return sorted(n for n in os.listdir(folder) if not n.startswith(".")), ""
    except OSError as err:
        return [], f"{err.strerror} (errno {err.errno})"


def submission_of(path: Path, owner: str | None, roster: Roster | None = None, at: int | None = None) -> Submission:
    """The Submission of one entry (`path`, looked at in the folder open at `at`): at the top of the
    submissions (`owner` None: its name names the student) or in the folder `owner`. The student is who that
    name names (`roster.sender`: the roster's uid, or the name normalised without a roster); a name that names
    no one makes the row `unmatched`."""
    kind, why, info = _lstat(path if at is None else path.name, at)
    mtime = info.st_mtime_ns if info else 0
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
    inode, names = ((info.st_dev, info.st_ino), info.st_nlink) if info and stat.S_ISREG(info.st_mode) else (None, 1)
    return Submission(student, match["set"] if match else None, path, "" if kind == "file" else kind, why, mtime,
                      inode=inode, names=names)


def _shared(found: list[Submission], folder: Path) -> list[Submission]:
    """Judge hard links across the class (the module's docstring says why): a file whose names all lie in
    `found` is run under each, and each row names the classmates' files it is one file with; a file with a
    name outside them is refused under every name."""
    names: dict[tuple[int, int], list[Submission]] = {}
    for s in found:
        if s.inode:
            names.setdefault(s.inode, []).append(s)
    judged = []
    for s in found:
        same = names.get(s.inode, [s]) if s.inode else [s]
        others = [str(o.path.relative_to(folder)) for o in same if o is not s and o.student != s.student]
        if s.refused or s.names == 1:
            judged.append(s)
        elif s.names > len(same):
            judged.append(dataclasses.replace(s, refused="hard link refused", why=(
                f"this file also has {s.names - len(same)} name(s) outside the submissions folder: a submission "
                "must be a file of its own")))
        else:
            judged.append(dataclasses.replace(s, why=(
                f"one file with {', '.join(others)} (hard links): whose work it is, the grader cannot tell")
                if others else ""))
    return judged


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
            s = dataclasses.replace(s, refused="superseded",
                                    why=f"the latest file counts: {counted.path.relative_to(folder)}")
        marked.append(s)
    return marked


def find_submissions(folder: Path, roster: Roster | None = None) -> list[Submission]:
    """List every entry of `folder` and of its per-student folders (two levels, never deeper), each a
    Submission of the student its name names (in `roster`, where there is one); links, special files, hard
    links to files outside the submissions, misnamed files and names of no one are marked refused, and all
    but the latest file of a student and problem set superseded (the rules are in the module's docstring).
    Each folder is listed through a descriptor, the students' opened relative to `folder`'s, links unfollowed."""
    folder = Path(folder)
    try:
        top = os.open(folder, _FOLDER)
    except OSError as err:
        raise ValueError(f"submissions={str(folder)!r} is not a folder ({err.strerror})") from None
    try:
        names, why = _entries(top)
        if why:
            raise ValueError(f"submissions={str(folder)!r} cannot be listed: {why}")
        found = []
        for name in names:
            found += _listed(folder, name, top, roster)
    finally:
        os.close(top)
    found = [dataclasses.replace(s, top=folder) for s in found]
    return _latest_counts(_shared(found, folder), folder)


def _listed(folder: Path, name: str, top: int, roster: Roster | None) -> list[Submission]:
    """The Submissions of the entry `name` of the submissions folder (open at `top`): itself, or, for a
    student's folder (opened relative to `top`, never through a link), each entry in it."""
    kind, _, info = _lstat(name, top)
    if kind != "folder":
        return [submission_of(folder / name, None, roster, top)]
    try:
        inner = os.open(name, _FOLDER, dir_fd=top)
    except OSError as err:
        return [Submission(name, None, folder / name, *_unopened(err), info.st_mtime_ns if info else 0)]
    try:
        names, why = _entries(inner)
        found = [Submission(name, None, folder / name, "unreadable folder", why, info.st_mtime_ns)] if why else []
        return found + [submission_of(folder / name / n, name, roster, inner) for n in names]
    finally:
        os.close(inner)


def _unopened(err: OSError) -> tuple[str, str]:
    """(status, why) of an entry that could not be opened, links unfollowed."""
    if err.errno == errno.ENOENT:
        return "vanished", "the file was gone when it was read"
    if err.errno in (errno.ELOOP, errno.ENOTDIR):
        return "symlink refused", "links are not followed, nor folders that became links after the listing"
    return "unreadable", f"{err.strerror} (errno {err.errno})"


def _open_below(top: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of the file `parts` below the folder `top`: each folder on the way opened relative to the
    one above it (openat), with `O_NOFOLLOW | O_DIRECTORY`, and the file with `O_NOFOLLOW | O_NONBLOCK`."""
    at = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _FOLDER, dir_fd=at)
            os.close(at)
            at = inner
        return os.open(parts[-1], _FILE, dir_fd=at)
    finally:
        os.close(at)


def read_once(submission: Submission) -> tuple[str, str, bytes]:
    """Open a submitted file once, from the submissions folder down (`_open_below`: no link followed at any
    step, no pipe blocked on), check it is the regular file that was listed with no more names than it had
    then, and read it within `_READ_SECONDS`; return (status, detail, content), status '' when it was read."""
    top = submission.top or submission.path.parent
    try:
        fd = _open_below(top, submission.path.relative_to(top).parts)
    except OSError as err:
        return (*_unopened(err), b"")
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "special file refused", "pipes, sockets and devices are not read", b""
        if submission.inode and (info.st_dev, info.st_ino) != submission.inode:
            return "replaced", "this is not the file listed: it, or its folder, was replaced since", b""
        if info.st_nlink > submission.names:
            return "hard link refused", f"{info.st_nlink} names share this file, {submission.names} when listed", b""
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
