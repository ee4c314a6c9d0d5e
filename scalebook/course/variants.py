"""Per-student variants of the problem sets: each student of a course gets their own inputs to every problem.

A reference solution declares its inputs as keyword parameters whose defaults are the book's values,
marked with their ranges (`inputs.vary`): `def f(V: float = vary(3e12, 1e12, 1e13))`. Called as usual, `f()` is the
book's problem. For a named student the inputs are drawn from a seed, the student's *key*:
HMAC-SHA256(course secret, student id) in 32 hex digits, then one check character, so the teacher (who holds
the secret) and the grader can recompute any student's values, a student knows only their own, and two
students' keys are unrelated. The check character is Damm's (https://en.wikipedia.org/wiki/Damm_algorithm)
over the 16 hex digits: the quasigroup x * y = 2 (x XOR y) in GF(16) is totally anti-symmetric, so every
single changed character and every swap of two neighbours is caught (`check_key`) before a student works on
the wrong numbers.

Who the student is: `enrol(student, key)` (`sb.setup(student=..., key=...)`), or, under the grader, the
variant the grader put in the sandbox's environment (`VARIANT`): the student the submission's file name
names, with their values already drawn, so the sandbox never sees the secret and a notebook cannot ask
for anyone else's values. With no student named, every problem shows the book's values.

A session is *in a course* (`in_course`) when the course secret (`SECRET`) or the course's name (`COURSE`, which
the teacher's hub or the handout sets) is in its environment: there a student named without a key is refused,
so nobody works a whole problem set on the book's numbers believing they are their own. Outside a course a
name without a key keeps the book's values, and says so.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .inputs import Param

__all__ = ["canonical", "student_key", "check_key", "draw", "in_course", "enrol", "enrolled", "key_in_session",
           "Variant", "values_for", "problem", "VARIANT", "SECRET", "COURSE"]

VARIANT = "SCALEBOOK_VARIANT"  # set by the grader in the sandbox: {"student": name, "values": {qid: {...}}}
SECRET = "SCALEBOOK_COURSE_SECRET"  # a course's secret, where the teacher's machine or hub provides it
COURSE = "SCALEBOOK_COURSE"  # the course's name, set by the students' hub or the handout: keys are required
_KEY_HEX = 32  # hex digits of a student's key (128 bits), before its check character
_HEX = "0123456789abcdef"


def canonical(student: str) -> str:
    """A student's name as the seed sees it: Unicode-normalised, trimmed, case-folded ('Alice ' is 'alice')."""
    if not isinstance(student, str) or not student.strip():
        raise ValueError(f"student={student!r} must be a non-empty name")
    return unicodedata.normalize("NFC", student).strip().casefold()


def _check_character(digits: str) -> str:
    """Damm's check character of hex `digits`: the interim after folding them with x * y = 2 (x XOR y) in
    GF(16) (modulus x^4 + x + 1). Its diagonal is 0, so appending the interim brings the fold to 0."""
    interim = 0
    for c in digits:
        x = interim ^ _HEX.index(c)
        interim = ((x << 1) ^ (0b10011 if x & 0b1000 else 0)) & 0xF
    return _HEX[interim]


def student_key(secret: str | bytes, student: str) -> str:
    """The student's key: HMAC-SHA256 of their id (`canonical`) under the course's `secret`, 32 hex digits,
    then a check character (`check_key`)."""
    if not secret:
        raise ValueError("secret must be a non-empty course secret")
    raw = secret.encode() if isinstance(secret, str) else secret
    digits = hmac.new(raw, canonical(student).encode(), hashlib.sha256).hexdigest()[:_KEY_HEX]
    return digits + _check_character(digits)


def check_key(key: str) -> str:
    """Return `key` normalised (lower case, spaces and hyphens dropped), or raise ValueError naming it and the
    slip: a character that is not a hex digit, a missing or extra character, or a check character that does not
    match (one character changed, or two neighbours swapped)."""
    again = "copy it again from the list your teacher gave you, or ask them for it"
    if not isinstance(key, str):
        raise ValueError(f"key={key!r} must be the text your teacher issued ({_KEY_HEX + 1} characters, 0-9 a-f)")
    text = "".join(key.split()).replace("-", "").lower()
    bad = next((i for i, c in enumerate(text) if c not in _HEX), None)
    if bad is not None:
        raise ValueError(f"key {key!r} is mistyped: {text[bad]!r} (character {bad + 1}) is not one of 0-9, a-f; "
                         f"{again}")
    if len(text) != _KEY_HEX + 1:
        raise ValueError(f"key {key!r} has {len(text)} characters, not {_KEY_HEX + 1}: one is missing or extra "
                         f"(a key issued before keys had a check character has {_KEY_HEX}); {again}")
    if _check_character(text[:-1]) != text[-1]:
        raise ValueError(f"key {key!r} is mistyped: its check character does not match (a character was changed "
                         f"or two were swapped), so its numbers would not be yours; {again}")
    return text


def draw(params: Sequence[Param], key: str | None, qid: str) -> dict[str, Any]:
    """The values of `params` of problem `qid` for the student whose key is `key` (None: the book's)."""
    if key is None:
        return {p.name: p.book for p in params}
    values = {}
    for p in params:
        digest = hmac.new(key.encode(), f"{qid}/{p.name}".encode(), hashlib.sha256).digest()
        values[p.name] = p.draw(random.Random(int.from_bytes(digest, "big")))
    return values


@dataclass
class _Enrolment:
    student: str | None = None
    key: str | None = None


_ENROLLED = _Enrolment()


def in_course() -> bool:
    """Whether this session belongs to a course: the course secret (`SECRET`) or name (`COURSE`) is set."""
    return bool(os.environ.get(SECRET) or os.environ.get(COURSE))


def _course_key(student: str, key: str | None) -> str | None:
    """The key `student` works with: `key` checked (and, where the secret is here, checked to be theirs), else
    derived from the secret; None outside a course; ValueError for a bad key, or for none in a course."""
    secret = os.environ.get(SECRET)
    if key is not None:
        key = check_key(key)
        if secret and key != student_key(secret, student):
            raise ValueError(f"key {key!r} was not issued to student={student!r}: check both against your "
                             f"teacher's list")
        return key
    if secret:
        return student_key(secret, student)
    if in_course():
        raise ValueError(f"student={student!r} needs key=: this is a course ({COURSE}={os.environ[COURSE]!r}), "
                         f"where each student works on their own numbers. Start with "
                         f"sb.setup(student={student!r}, key='...') and the key your teacher issued you.")
    return None


def enrol(student: str | None, key: str | None = None) -> str:
    """Name the student working in this session (None: self-study), with the key their teacher gave them, and
    return one line saying whose values the problems now show.

    A mistyped key is refused (`check_key`). Without `key`, the course secret in the environment (`SECRET`)
    derives it; in a course without one (`in_course`) a missing key is refused; outside a course the student
    works on the book's values, in course mode (answers are never shown), and the line says so. Under the
    grader this is ignored: the grader names the student.
    """
    if _graded():
        return ""
    if student is None:
        if key is not None:
            raise ValueError(f"key={key!r} was given without a student: name the student the key was issued to")
        _ENROLLED.student = _ENROLLED.key = None
        return ""
    canonical(student)
    _ENROLLED.student, _ENROLLED.key = student, _course_key(student, key)
    if _ENROLLED.key is None:
        return (f"{student}: no key given, so every problem shows the book's values, not numbers of your own. "
                f"If your teacher gave you a key, run sb.setup(student={student!r}, key='...').")
    return f"{student}: every problem shows your own values; sb.problem('NN.N') lists them."


def _graded() -> dict[str, Any] | None:
    """The variant the grader set for this sandbox, or None outside the grader."""
    text = os.environ.get(VARIANT)
    return json.loads(text) if text else None


def enrolled() -> str | None:
    """The student this session works for (the grader's, under the grader), or None in self-study."""
    graded = _graded()
    return graded.get("student") if graded else _ENROLLED.student


@dataclass(frozen=True)
class Variant:
    """Problem `qid` as one student sees it: their values of its inputs (`v.V` or `v["V"]`). `own` says whether
    they are the student's own (drawn from their key) or the book's; `book` holds the book's, where known.
    `print(v)` restates the problem's inputs with these values, marking each that differs from the text's."""

    qid: str
    title: str
    student: str | None
    values: dict[str, Any] = field(default_factory=dict)
    book: dict[str, Any] = field(default_factory=dict)
    own: bool = False

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self.__dict__.get("values", {}):
            raise AttributeError(f"problem {self.qid} has no input {name!r}; its inputs: {sorted(self.values)}")
        return self.values[name]

    def __str__(self) -> str:
        head = f"Problem {self.qid}" + (f", {self.title}" if self.title else "")
        if not self.values:
            return f"{head}: no input varies between students; work with the numbers in the text."
        if self.own:
            whose = f"{self.student}'s own values (use these, not the numbers in the text)"
        else:
            whose = "the book's values, the ones in the text" + (f" ({self.student} has no key)" if self.student
                                                                  else "")
        lines = [f"{head}, with {whose}:"]
        for name, value in self.values.items():
            text = name in self.book and self.book[name] != value
            lines.append(f"    {name} = {shown(value)}" + (f"    (the text says {shown(self.book[name])})" if text
                                                              else ""))
        return "\n".join(lines)

    __repr__ = __str__


def shown(value: Any) -> str:
    """An input's value as a student reads it: 1.5e+12 rather than 1500000000000.0, names quoted."""
    return f"{value:g}" if isinstance(value, float) else repr(value)


def values_for(qid: str, key: str | None) -> dict[str, Any]:
    """Problem `qid`'s input values for the student with `key` (None: the book's); needs the answer key."""
    from .key import get_problem

    return draw(get_problem(qid).params, key, qid)


def problem(qid: str) -> Variant:
    """Problem `qid` with this session's student's values (`sb.problem("03.4")`)."""
    graded = _graded()
    if graded:
        return Variant(str(qid), "", graded.get("student"), dict(graded.get("values", {}).get(qid, {})), own=True)
    from .key import get_problem

    p = get_problem(qid)
    key = _ENROLLED.key
    return Variant(p.qid, p.title, _ENROLLED.student, draw(p.params, key, p.qid), draw(p.params, None, p.qid),
                   own=key is not None)


def key_in_session() -> str | None:
    """The key of the session's student (None: the book's values or self-study)."""
    return _ENROLLED.key

