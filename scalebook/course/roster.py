"""The class list, the one source of identity in a course: who the students are, as the teacher's platform
knows them, and which of them sent each upload.

**Importing.** `Roster.from_export(path)` reads the class list a teacher already has, known by its header:

- Canvas's gradebook export (https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-export-grades-in-the-
  Gradebook/ta-p/809), as Canvas's exporter writes it (instructure/canvas-lms, lib/gradebook_exporter.rb):
  `Student, ID, SIS User ID, SIS Login ID, Section`, a column per assignment and the totals, then a
  `    Points Possible` row (after a `Manual Posting` row where grades are posted by hand) before the students.
  `Student` is "Last, First" (or `LastName, FirstName` as two columns); `SIS User ID` is absent for a user who
  may not see SIS ids, `Integration ID` and `Root Account` may follow `SIS Login ID`, a name starting `=` comes
  as `="..."`.
- Moodle's participants download (`First name`, `Last name`, then the site's identity fields: `Email address`
  by default, `ID number`, `Username`...; moodle/moodle, user/action_redir.php) or grade export (`First name`,
  `Last name`, `ID number`, `Institution`, `Department`, `Email address`, the grade items;
  https://docs.moodle.org/en/Grade_export). Older Moodles say `Surname`.
- A Gradescope roster CSV (https://guides.gradescope.com/hc/en-us/articles/21926598776333): a unique `Email`
  per member, the name in one column (`Name`, `Full Name`) or two (`First Name`, `Last Name`), an optional
  `SID`, section columns (a header holding "section"); a downloaded roster's `Role` keeps only students.

Each student's `uid` is fixed at import: their login, else email, else SIS id, else the platform's id. Their key
(`variants.student_key(secret, uid)`) derives from it and the grader files their rows under it. The course keeps
the roster as `roster.csv` (`Roster.write`, `Roster.read`, `find_roster`).

**Who is who.** Text is compared after `normalise` (NFC, whitespace trimmed and collapsed, case folded), so
`Dup`, `dup ` and `dup` with a combining accent are one student; a name holding an invisible, control or
formatting character is refused by name. `Roster.match(text)` finds the one student whose uid, email, SIS id,
LMS id, login or name (either order; "Smith, Jane" too) it is; a name two students share matches neither, and
`Roster.explain(text)` says why.

**Who sent an upload** (`Roster.resolve_upload`, `sender`): a file named as the book asks,
`<student>__NN_slug.ipynb`, or a folder `<student>/`; a file from Canvas's "Download Submissions",
`<lastfirst>[_LATE]_<user id>_<file id>_<the student's file name>`, the user id deciding (Canvas's
ContentZipper, lib/content_zipper.rb: the name is the sortable name lower-cased, non-word characters dropped;
anonymous grading writes `anon_<id>`, which names nobody); a folder from Moodle's "Download all submissions",
`<Full Name>_<participant id>_assignsubmission_file_` (3.1-4.0), `..._file` (4.1 on), or a file
`..._file_<the student's file name>` without folders (mod/assign/classes/downloader.php: the participant id is
per assignment, so the name decides; blind marking names everyone `Participant`). `Roster.resolve_gradescope`
finds the one user of Gradescope's submission_metadata.json, by email, then SID, then name
(https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/). Each gives one student or None
with the reason: an upload is filed under its sender or reported unmatched, never graded under a guessed name.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..units import closest
from .files import write_atomic
from .letters import invisible

__all__ = ["Student", "Roster", "Found", "Upload", "normalise", "read_upload_name", "sender", "find_roster",
           "ROSTER_FILE"]

ROSTER_FILE = "roster.csv"  # the course's roster, in the course folder
_REFUSED = {"Cc": "a control character", "Cf": "an invisible formatting character", "Cs": "an undecodable byte",
            "Co": "a private-use character", "Cn": "an unassigned code point", "Zl": "a line separator",
            "Zp": "a paragraph separator"}
_IDS = ("email", "sis_id", "lms_id", "login", "uid")  # each names at most one student
_FORMULA = ("=", "+", "-", "@")  # a spreadsheet runs a cell that starts so


@dataclass(frozen=True)
class Student:
    """One student of the roster: `uid` (fixed at import: keys derive from it), their name as the platform
    shows it, email, SIS id (Canvas's SIS User ID, Moodle's ID number, Gradescope's SID), LMS id (Canvas's
    ID), login (Canvas's SIS Login ID, Moodle's username) and section ('' where the export has none)."""

    uid: str
    name: str
    email: str = ""
    sis_id: str = ""
    lms_id: str = ""
    login: str = ""
    section: str = ""


@dataclass(frozen=True)
class Found:
    """The outcome of a look-up: the one student found, or None and why not."""

    student: Student | None
    why: str = ""


@dataclass(frozen=True)
class Upload:
    """What an upload's name says of its sender: the naming it follows ('plain', 'canvas', 'moodle'), the sender
    as it gives them (a name, '' when only an id), the Canvas user id, the rest of the name (the student's own
    file name; '' for a folder) and, when the platform hid who sent it, why."""

    platform: str
    claimed: str
    rest: str
    lms_id: str = ""
    hidden: str = ""


def normalise(text: str, what: str = "name") -> str:
    """`text` as it is compared: Unicode NFC, whitespace trimmed and collapsed to one space, case folded.
    Raises ValueError naming `what` and the value when it is empty or holds a control, invisible formatting,
    private-use, unassigned or line-breaking character (two spellings that look alike must not name two
    people, nor one look like another)."""
    if not isinstance(text, str):
        raise ValueError(f"{what}={text!r} must be text")
    for ch in text:
        kind = unicodedata.category(ch)
        if kind in _REFUSED or invisible(ch):
            label = unicodedata.name(ch, "") if kind != "Cs" else ""
            why = _REFUSED.get(kind, "an invisible character")
            raise ValueError(f"{what} {text!r} holds {why} (U+{ord(ch):04X}{' ' + label if label else ''});"
                             f" it is refused: retype the {what} without it")
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", " ".join(text.split())).casefold())
    if not folded:
        raise ValueError(f"{what} {text!r} is empty")
    return folded


def _display(text: str) -> str:
    """A name as shown: NFC, whitespace trimmed and collapsed (case kept)."""
    return unicodedata.normalize("NFC", " ".join(text.split()))


def _rotated(key: str) -> str:
    """A normalised name with its last word first ('jane smith' -> 'smith jane'): the other order of a name."""
    words = key.split(" ")
    return " ".join(words[-1:] + words[:-1])


def _letters(key: str) -> str:
    """A normalised name as Canvas spells it in a download's file name: every non-word character dropped."""
    return re.sub(r"[\W_]", "", key)


def _unformula(value: str) -> str:
    """A cell read back: the ' that `_cell` put before a leading = + - @ removed; Canvas's ="..." unwrapped."""
    if value.startswith('="') and value.endswith('"'):
        value = value[2:-1]
    return value[1:] if value[:1] == "'" and value[1:2] in _FORMULA else value


def _cell(value: str) -> str:
    """A value as a CSV cell a spreadsheet shows rather than runs: a leading = + - @ quoted with '."""
    return "'" + value if value[:1] in _FORMULA else value


class Roster:
    """The students of a course (`students`, a tuple of `Student`), indexed by every id and name they go by.

    Raises ValueError when two students share a uid, email, SIS id, LMS id or login, or a name is refused
    by `normalise`."""

    def __init__(self, students: Iterable[Student], source: str = "roster") -> None:
        self.students = tuple(students)
        self.source = source
        self._index: dict[str, dict[str, list[Student]]] = {f: {} for f in (*_IDS, "name", "canvas")}
        for s in self.students:
            for field in _IDS:
                value = getattr(s, field)
                if value:
                    self._add(field, normalise(value, field), s, unique=True)
            key = normalise(s.name, "name")
            for name in {key, _rotated(key)}:
                self._add("name", name, s)
                self._add("canvas", _letters(name), s)

    def _add(self, field: str, key: str, student: Student, unique: bool = False) -> None:
        """File `student` under `key` in the index of `field`; refuse a second student where ids are unique."""
        known = self._index[field].setdefault(key, [])
        if unique and known:
            raise ValueError(f"two students of the roster have {field} {key!r}: {known[0].name!r} "
                             f"(uid {known[0].uid!r}) and {student.name!r} (uid {student.uid!r})")
        if student not in known:
            known.append(student)

    # --- the course's own file ------------------------------------------------------------------------------

    @classmethod
    def read(cls, path: str | Path) -> Roster:
        """The roster saved at `path` by `write` (columns: uid, name, email, sis_id, lms_id, login, section)."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"roster={str(path)!r} is not a file; import one with "
                             "`scalebook course roster EXPORT.csv --out roster.csv`")
        header, rows = _read_csv(path)
        columns = [f.name for f in fields(Student)]
        if header[:2] != ["uid", "name"]:
            raise ValueError(f"roster={str(path)!r} is not a course roster: its header is {header[:7]}, not "
                             f"{columns}; import the platform's export with `scalebook course roster` instead")
        students = [Student(**{c: _unformula(row.get(c) or "") for c in columns}) for row in rows]
        return cls(students, "roster")

    def write(self, path: str | Path) -> Path:
        """Save the roster as a CSV at `path` (a row per student, `Student`'s fields as columns); return it."""
        path = Path(path)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([f.name for f in fields(Student)])
        writer.writerows([_cell(v) for v in asdict(s).values()] for s in self.students)
        write_atomic(path, out.getvalue())
        return path

    # --- a platform's export --------------------------------------------------------------------------------

    @classmethod
    def from_export(cls, path: str | Path) -> Roster:
        """The roster of a Canvas gradebook export, a Moodle participants or grade export, or a Gradescope
        roster CSV at `path`, recognised by its header (see the module's docstring)."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"export={str(path)!r} is not a file: give the CSV that Canvas, Moodle or Gradescope "
                             "exported")
        header, rows = _read_csv(path)
        keys = {h.strip().casefold() for h in header}
        for platform, recognise, student in _PLATFORMS:
            if recognise(keys):
                found = []
                for number, row in enumerate(rows, start=2):
                    row = {k.strip().casefold(): (v or "").strip() for k, v in row.items() if k is not None}
                    try:
                        entry = student(row)
                    except ValueError as err:
                        raise ValueError(f"{path.name}, row {number}: {err}") from None
                    if entry:
                        found.append(entry)
                return cls(found, platform)
        raise ValueError(f"export={str(path)!r} has the header {header[:8]}, which is none of the exports read: "
                         "Canvas's gradebook export (Student, ID, SIS User ID, SIS Login ID, Section, ...), Moodle's "
                         "participants or grade export (First name, Last name, Email address or ID number, ...) "
                         "or a Gradescope roster (Name or First Name and Last Name, Email, SID, ...)")

    # --- look-ups -------------------------------------------------------------------------------------------

    def find(self, text: str, fields_: tuple[str, ...] = (*_IDS, "name")) -> Found:
        """The one student whose uid, email, SIS id, LMS id, login or name (either order) `text` is."""
        try:
            key = normalise(text, "student")
        except ValueError as err:
            return Found(None, str(err))
        keys = {key, " ".join(key.replace(",", " ").split())}
        found = {s.uid: s for f in fields_ for k in keys
                 for s in self._index[f].get(_letters(k) if f == "canvas" else k, [])}
        if len(found) == 1:
            return Found(next(iter(found.values())))
        if found:
            return Found(None, f"{text!r} names {len(found)} students of the roster (uids {', '.join(sorted(found))}):"
                               " name the file by the student's uid or email instead")
        near = closest(key, [k for f in fields_ for k in self._index[f]])
        hint = f"; the closest are {', '.join(map(repr, near))}" if near else ""
        return Found(None, f"no student of the roster is {text!r} (by {', '.join(fields_)}){hint}")

    def match(self, text: str) -> Student | None:
        """The one student `text` names (uid, email, SIS id, LMS id, login or name), or None (`explain` says why)."""
        return self.find(text).student

    def explain(self, text: str) -> str:
        """Why `match(text)` found nobody ('' when it found one student)."""
        return self.find(text).why

    def find_upload(self, name: str, folder: bool = False) -> Found:
        """The one student who sent the upload `name` (a file's name, or a folder's when `folder`)."""
        return self._sent(read_upload_name(name, folder))

    def _sent(self, upload: Upload) -> Found:
        """The one student who sent `upload`: by Canvas user id (or Canvas's spelling of the name where the
        roster has no Canvas ids), by name for Moodle, by any id or name for a plain name."""
        if upload.hidden:
            return Found(None, upload.hidden)
        if upload.platform == "canvas":
            if any(s.lms_id for s in self.students):
                found = self.find(upload.lms_id, ("lms_id",))
                why = f"no student of the roster has Canvas ID {upload.lms_id} (the download names {upload.claimed!r})"
                return found if found.student else Found(None, why)
            return self.find(upload.claimed, ("canvas",))
        return self.find(upload.claimed, ("name",) if upload.platform == "moodle" else (*_IDS, "name"))

    def resolve_upload(self, name: str, folder: bool = False) -> Student | None:
        """The one student who sent the upload `name`, or None (`find_upload(name).why` says why)."""
        return self.find_upload(name, folder).student

    def find_gradescope(self, metadata: Any) -> Found:
        """The one student who submitted, by the `users` of Gradescope's submission_metadata.json: their email,
        else their SID, else their name. A group submission names several students and is refused: each
        student's notebook has their own numbers."""
        users = metadata.get("users") if isinstance(metadata, dict) else None
        if not isinstance(users, list) or not users or not all(isinstance(u, dict) for u in users):
            return Found(None, "submission_metadata.json lists no users")
        if len(users) > 1:
            return Found(None, f"a group submission of {len(users)} users: each student submits their own notebook "
                               "(their own numbers)")
        user = users[0]
        ids = [(str(user.get(k) or ""), f) for k, f in (("email", ("email",)), ("sid", ("sis_id", "login")))]
        found = {r.student.uid: r.student for text, f in ids if text and (r := self.find(text, f)).student}
        if len(found) > 1:
            return Found(None, f"Gradescope's email and SID name different students ({', '.join(sorted(found))})")
        if found:
            return Found(next(iter(found.values())))
        name = str(user.get("name") or "")
        found_by_name = self.find(name, ("name",)) if name else Found(None, "")
        if found_by_name.student:
            return found_by_name
        said = ", ".join(f"{k} {user.get(k)!r}" for k in ("email", "sid", "name") if user.get(k))
        return Found(None, f"no student of the roster is Gradescope's submitter ({said or 'no email, SID or name'})")

    def resolve_gradescope(self, metadata: Any) -> Student | None:
        """The one student Gradescope's submission_metadata.json names, or None (`find_gradescope` says why)."""
        return self.find_gradescope(metadata).student


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows (dicts) of the CSV at `path`, read as UTF-8 (a byte-order mark allowed)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{str(path)!r} is not UTF-8 text (byte {err.start}): save it as 'CSV UTF-8'") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = [row for row in reader if any((v or "").strip() for v in row.values() if isinstance(v, str))]
    return list(reader.fieldnames or []), rows


def _student(name: str, platform: str, email: str = "", sis_id: str = "", lms_id: str = "", login: str = "",
             section: str = "") -> Student:
    """A roster entry from an export's row, its uid the login, else the email, else the SIS id, else
    `platform`-<its id>; refuses a row without a name or any id, or a refused name."""
    name = _display(_unformula(name))
    normalise(name, "name")
    uid = login or email.casefold() or sis_id or (f"{platform}-{lms_id}" if lms_id else "")
    if not uid:
        raise ValueError(f"{name!r} has no login, email, SIS id or {platform} id to know them by")
    return Student(normalise(uid, "uid"), name, email.casefold(), sis_id, lms_id, login, section)


def _canvas(row: dict[str, str]) -> Student | None:
    """A Canvas gradebook export's row as a Student; None for the Points Possible and Manual Posting rows."""
    if not row.get("id"):
        return None
    if "student" in row:
        last, _, first = _unformula(row["student"]).partition(",")
        name = f"{first} {last}" if first else last
    else:
        name = f"{_unformula(row.get('firstname', ''))} {_unformula(row.get('lastname', ''))}"
    return _student(name, "canvas", sis_id=row.get("sis user id", ""), lms_id=row["id"],
                    login=row.get("sis login id", ""), section=row.get("section", ""))


def _moodle(row: dict[str, str]) -> Student:
    """A Moodle participants or grade export's row as a Student."""
    last = row.get("last name") or row.get("surname", "")
    return _student(f"{row.get('first name', '')} {last}", "moodle", email=row.get("email address", ""),
                    sis_id=row.get("id number", ""), login=row.get("username", ""))


def _gradescope(row: dict[str, str]) -> Student | None:
    """A Gradescope roster's row as a Student; None for staff (a Role other than Student)."""
    if row.get("role", "student").casefold() not in ("student", ""):
        return None
    name = row.get("name") or row.get("full name") or f"{row.get('first name', '')} {row.get('last name', '')}"
    sections = "; ".join(v for k, v in row.items() if "section" in k and v)
    return _student(name, "gradescope", email=row.get("email", ""), sis_id=row.get("sid", ""), section=sections)


_PLATFORMS = (
    ("canvas", lambda h: {"id", "sis login id", "section"} <= h and ("student" in h or {"lastname", "firstname"} <= h),
     _canvas),
    ("moodle", lambda h: "first name" in h and h & {"last name", "surname"} and h & {"email address", "id number"},
     _moodle),
    ("gradescope", lambda h: "email" in h and ("name" in h or "full name" in h or {"first name", "last name"} <= h),
     _gradescope),
)

_CANVAS_ANONYMOUS = re.compile(r"^(?:late_)?anon_(?P<anon>[^_]+)_(?P<file>\d+)_(?P<rest>.+)$", re.I)
_CANVAS = re.compile(r"^(?P<name>.+?)(?:_late)?_(?P<user>\d+)_(?P<file>\d+)_(?P<rest>.+)$", re.I)
_MOODLE = re.compile(r"^(?P<name>[^_]+)_(?P<id>\d+)_assignsubmission_file(?:_(?P<rest>.*))?$")
_BLIND = "participant"  # the name Moodle gives every student under blind marking


def _own(rest: str) -> str:
    """The student's own file name inside a platform's download name, less any `<name>__` they put before it
    (the platform's id, not that name, says who sent it)."""
    return rest.rpartition("__")[2]


def read_upload_name(name: str, folder: bool = False) -> Upload:
    """What the name of an upload (a file at the top of the submissions, or a student's folder when `folder`)
    says of its sender: Moodle's download naming, Canvas's, or the book's own `<student>__NN_slug.ipynb`
    (a name without `__` is all sender, and names no file of a problem set)."""
    if m := _MOODLE.match(name):
        if m["name"].strip().casefold() == _BLIND:
            return Upload("moodle", m["name"], _own(m["rest"] or ""), hidden="Moodle's blind marking hides who sent it "
                          f"({name!r}): reveal identities, then download the submissions again")
        return Upload("moodle", m["name"], _own(m["rest"] or ""))
    if folder:
        return Upload("plain", name, "")
    if m := _CANVAS_ANONYMOUS.match(name):
        return Upload("canvas", "", _own(m["rest"]), hidden=f"Canvas's anonymous grading hides who sent it ({name!r}): "
                      "download the submissions again once anonymity is lifted")
    if m := _CANVAS.match(name):
        return Upload("canvas", m["name"], _own(m["rest"]), lms_id=m["user"])
    claimed, _, rest = name.rpartition("__")
    return Upload("plain", claimed, rest) if claimed else Upload("plain", Path(name).stem, "")


def sender(name: str, roster: Roster | None, folder: bool = False) -> tuple[str, str, str]:
    """(student, rest, why) of the upload named `name` (a file at the top of the submissions, or a student's
    folder when `folder`): `student` is its sender's roster uid, or without a roster the name it gives,
    normalised; `rest` is the student's own file name within it ('' for a folder); `why`, when not '', says
    why it names no student (the row is then `unmatched`, and `student` is the name as given)."""
    upload = read_upload_name(name, folder)
    if roster is not None:
        found = roster._sent(upload)
        return (found.student.uid, upload.rest, "") if found.student else (upload.claimed or name, upload.rest,
                                                                            found.why)
    if upload.hidden:
        return name, upload.rest, upload.hidden
    if upload.platform == "canvas":
        return upload.claimed, upload.rest, (f"{name!r} is named as Canvas's download names files, by Canvas user "
                                             f"id ({upload.lms_id}): grade with the class roster (`--roster`) to know "
                                             "whose")
    try:
        return normalise(upload.claimed, "student"), upload.rest, ""
    except ValueError as err:
        return upload.claimed, upload.rest, str(err)


def find_roster(course_root: str | Path) -> Roster | None:
    """The course's roster, `roster.csv` in the folder `course_root`, or None where there is none."""
    path = Path(course_root) / ROSTER_FILE
    return Roster.read(path) if path.is_file() else None
