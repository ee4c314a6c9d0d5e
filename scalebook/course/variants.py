"""Per-student variants of the problem sets: each student of a course gets their own inputs to every problem.

A reference solution declares its inputs as keyword parameters whose defaults are the book's values,
marked with their ranges: `def f(V: float = vary(3e12, 1e12, 1e13))`. Called as usual, `f()` is the
book's problem. For a named student the inputs are drawn from a seed, the student's *key*:
HMAC-SHA256(course secret, student name), so the teacher (who holds the secret) and the grader can
recompute any student's values, a student knows only their own, and two students' keys are unrelated.

Who the student is: `enrol(student, key)` (`sb.setup(student=..., key=...)`), or, under the grader, the
variant the grader put in the sandbox's environment (`VARIANT`): the student the submission's file name
names, with their values already drawn, so the sandbox never sees the secret and a notebook cannot ask
for anyone else's values. With no student named, every problem shows the book's values.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import math
import os
import random
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["vary", "Param", "parameters", "canonical", "student_key", "draw", "enrol", "enrolled", "key_in_session",
           "Variant", "values_for", "problem", "VARIANT", "SECRET"]

VARIANT = "SCALEBOOK_VARIANT"  # set by the grader in the sandbox: {"student": name, "values": {qid: {...}}}
SECRET = "SCALEBOOK_COURSE_SECRET"  # a course's secret, where the teacher's machine or hub provides it
_KEY_HEX = 32  # hex digits of a student's key (128 bits)


class _Varied:
    """Marks a default value as a problem input that varies between students (see `vary`)."""

    low: Any
    high: Any
    step: Any
    choices: tuple


def vary(book: Any, low: Any = None, high: Any = None, *, step: Any = None, choices: Sequence | None = None) -> Any:
    """Return `book` (the book's value: a float, int or str) marked as an input drawn per student.

    Numbers are drawn from [`low`, `high`] (ints in multiples of `step`, floats to two significant figures,
    log-uniformly when `high / low` is 4 or more); `choices` lists the values a name or a choice may take.
    The result is still `book` to any code that uses it.
    """
    if choices is not None:
        if book not in choices or len(choices) < 2:
            raise ValueError(f"choices={choices!r} must hold book={book!r} and at least one other value")
    elif not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and low <= book <= high and low < high):
        raise ValueError(f"vary({book!r}, low={low!r}, high={high!r}): need low <= book <= high, low < high")
    elif isinstance(book, int) and not (step is None or isinstance(step, int) and step > 0):
        raise ValueError(f"step={step!r} must be a positive int for an int input")
    base = {bool: None, int: int, float: float, str: str}.get(type(book))
    if base is None:
        raise ValueError(f"book={book!r} must be an int, a float or a str")
    marked = type(f"varied_{base.__name__}", (base, _Varied), {})(book)
    marked.low, marked.high, marked.choices = low, high, tuple(choices or ())
    marked.step = (step or 1) if base is int else step
    return marked


@dataclass(frozen=True)
class Param:
    """One varied input of a problem: its name, the book's value, and its range or choices."""

    name: str
    book: Any
    low: Any = None
    high: Any = None
    step: Any = None
    choices: tuple = ()

    def draw(self, rng: random.Random) -> Any:
        """One value of this input, drawn with `rng`: a choice, a multiple of `step`, or a 2-figure float."""
        if self.choices:
            return rng.choice(self.choices)
        if isinstance(self.book, int):
            first, last = -(-self.low // self.step), self.high // self.step
            return rng.randint(first, last) * self.step
        if self.high / self.low >= 4 and self.low > 0:
            value = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            value = rng.uniform(self.low, self.high)
        return min(max(float(f"{value:.2g}"), self.low), self.high)

    def holds(self, value: Any) -> bool:
        """Whether `value` is one this input may take."""
        if self.choices:
            return value in self.choices
        return self.low <= value <= self.high and (not isinstance(self.book, int) or value % self.step == 0)


def parameters(solve: Callable[..., Any]) -> tuple[Param, ...]:
    """The varied inputs of a reference solution: its keyword parameters whose defaults `vary` marked."""
    found = []
    for name, p in inspect.signature(solve).parameters.items():
        if isinstance(p.default, _Varied):
            d = p.default
            book = type(d).__mro__[1](d)
            found.append(Param(name, book, d.low, d.high, d.step, d.choices))
    return tuple(found)


def canonical(student: str) -> str:
    """A student's name as the seed sees it: Unicode-normalised, trimmed, case-folded ('Alice ' is 'alice')."""
    if not isinstance(student, str) or not student.strip():
        raise ValueError(f"student={student!r} must be a non-empty name")
    return unicodedata.normalize("NFC", student).strip().casefold()


def student_key(secret: str | bytes, student: str) -> str:
    """The student's key: HMAC-SHA256 of their name (`canonical`) under the course's `secret`, in hex."""
    if not secret:
        raise ValueError("secret must be a non-empty course secret")
    raw = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(raw, canonical(student).encode(), hashlib.sha256).hexdigest()[:_KEY_HEX]


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


def enrol(student: str | None, key: str | None = None) -> None:
    """Name the student working in this session (None: self-study), with the key their teacher gave them.

    Without `key`, the course secret in the environment (`SECRET`) derives it; with neither, the student
    works on the book's values but in course mode (answers are never shown). Under the grader this is
    ignored: the grader names the student.
    """
    if student is None:
        if key is not None:
            raise ValueError(f"key={key!r} was given without a student: name the student the key was issued to")
        _ENROLLED.student = _ENROLLED.key = None
        return
    canonical(student)
    if key is not None and not (isinstance(key, str) and len(key) == _KEY_HEX
                                and all(c in "0123456789abcdef" for c in key)):
        raise ValueError(f"key={key!r} must be the {_KEY_HEX}-hex-digit key your teacher issued")
    secret = os.environ.get(SECRET)
    _ENROLLED.student, _ENROLLED.key = student, key or (student_key(secret, student) if secret else None)


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
    """Problem `qid` as one student sees it: their values of its inputs (`v.V` or `v["V"]`)."""

    qid: str
    title: str
    student: str | None
    values: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self.__dict__.get("values", {}):
            raise AttributeError(f"problem {self.qid} has no input {name!r}; its inputs: {sorted(self.values)}")
        return self.values[name]

    def __str__(self) -> str:
        who = f"{self.student}'s values" if self.student else "the book's values"
        inputs = ", ".join(f"{k} = {v!r}" for k, v in self.values.items()) or "none that vary"
        return f"{self.qid} {self.title} — {who}: {inputs}"

    __repr__ = __str__


def values_for(qid: str, key: str | None) -> dict[str, Any]:
    """Problem `qid`'s input values for the student with `key` (None: the book's); needs the answer key."""
    from .key import get_problem

    return draw(get_problem(qid).params, key, qid)


def problem(qid: str) -> Variant:
    """Problem `qid` with this session's student's values (`sb.problem("03.4")`)."""
    graded = _graded()
    if graded:
        return Variant(str(qid), "", graded.get("student"), dict(graded.get("values", {}).get(qid, {})))
    from .key import get_problem

    p = get_problem(qid)
    return Variant(p.qid, p.title, _ENROLLED.student, draw(p.params, _ENROLLED.key, p.qid))


def key_in_session() -> str | None:
    """The key of the session's student (None: the book's values or self-study)."""
    return _ENROLLED.key

