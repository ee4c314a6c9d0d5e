"""The reasoning students write in a problem set's notebook, captured whole for grading by hand: one readable
page per problem set, `reasoning/<set>.md` beside the gradebook.

**Whose text.** A submitted notebook is read as data, never run (`notebook_cells`: JSON within `strictjson`'s
memory budget). A paragraph of a Markdown cell (a block between blank lines) is the student's unless the handout
holds it: the exercise notebook `make exercises` derives from `solutions/<set>.md` (`handout`: the problem
statements, the headings, the "Write your reasoning here" stub, which some cells share with the next problem's
statement). What a student wrote is kept whole, their own headings included, each cell's paragraphs together.

**Which problem.** Reasoning belongs to the problem whose stretch of the notebook holds it: a stretch begins at
the problem's heading (`## Problem N ★...`, wherever it stands in a cell) or at a code cell that checks it
(`sb.check("NN.N", ...)`), and ends where the next begins. What a student wrote above the first problem is not
filed under any. Each problem's text is capped at `MAX_REASONING` characters.

**The page** (`write_pages`). A section per student, in the roster's order (then anyone the roster lacks, by
name), naming the file read; under it, a subsection per problem with reasoning, its text escaped line by line
(`gradebook.markdown`: no markup or HTML of a submission's reaches the rendered page), and one line naming the
problems without any. A regrade of some students replaces their sections and keeps the others'.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..files import write_atomic
from ..handouts import strip_solutions
from ..roster import Roster
from . import strictjson
from .gradebook import clean, markdown
from .submissions import Result

__all__ = ["MAX_REASONING", "notebook_cells", "handout", "capture", "naming", "write_pages"]

MAX_REASONING = 4000  # characters of one problem's reasoning kept for the teacher; the rest is cut
_HEADING = re.compile(r"\s*## Problem (\d+) ★")
_CHECKED = re.compile(r"""\bcheck\(\s*["']([0-9]{1,3}(?:\.[0-9]{1,3}){1,2})["']""")
_SECTION = re.compile(r"^<!-- student ((?:[0-9a-f]{2})*) -->$", re.M)  # opens a student's section of a page

Cells = list[tuple[str, str]]  # (cell type, source) of each cell of a notebook


def _source(cell: Any) -> str:
    """A notebook cell's source as text ('' when the JSON holds anything else there)."""
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else ""


def notebook_cells(content: bytes) -> Cells:
    """(cell type, source) of each cell of a submitted notebook, read as data; [] for one that cannot be read or
    whose parse would cost the grader more than `strictjson.MAX_PARSE` bytes (counted before parsing)."""
    try:
        cells = strictjson.parse(content).get("cells", [])
    except (ValueError, AttributeError):
        return []
    return [(str(c.get("cell_type")), _source(c)) for c in cells if isinstance(c, dict)] if isinstance(cells, list) \
        else []


def _paragraphs(text: str) -> list[str]:
    """The paragraphs of Markdown `text` (blocks between blank lines), each stripped, none empty."""
    return [block.strip() for block in re.split(r"\n[ \t]*\n", text) if block.strip()]


def handout(root: Path, problem_set: str) -> frozenset[str]:
    """What the problem set's handout holds: the text of each of its cells and each paragraph of its Markdown
    cells, stripped, derived from `solutions/<problem_set>.md` as `make exercises` derives the exercise notebook
    (needs jupytext)."""
    source = Path(root) / "solutions" / f"{problem_set}.md"
    return _handout(str(source), source.stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _handout(source: str, mtime: int) -> frozenset[str]:
    """`handout` of the solutions at `source` as of its modification time `mtime` (ns)."""
    try:
        import jupytext
    except ImportError:
        raise ValueError("reading the handout a student was given needs jupytext: pip install jupytext") from None
    notebook = jupytext.reads(strip_solutions(Path(source).read_text(encoding="utf-8")), fmt="md:myst")
    texts = {cell.source.strip() for cell in notebook.cells}
    texts |= {p for cell in notebook.cells if cell.cell_type == "markdown" for p in _paragraphs(cell.source)}
    return frozenset(texts - {""})


def _checked(text: str, possible: dict[str, int]) -> str | None:
    """The last problem of `possible` a code cell checks (`sb.check("NN.N", ...)`), if any."""
    return next((q for q in reversed(_CHECKED.findall(text)) if q in possible), None)


def capture(cells: Cells, possible: dict[str, int], given: frozenset[str]) -> dict[str, str]:
    """{qid: the student's reasoning} for the problems of `possible`: the paragraphs of the Markdown cells of
    `cells` that are not the handout's (`given`), each cell's kept together, its headings included, under the
    problem whose stretch holds them (a problem's heading, even inside a cell, begins its stretch), at most
    `MAX_REASONING` characters each."""
    prefix = next(iter(possible), "").split(".")[0]
    found: dict[str, list[str]] = {}
    qid = None
    for kind, text in cells:
        if kind == "code":
            qid = _checked(text, possible) or qid
            continue
        own: list[tuple[str | None, str]] = []
        for paragraph in _paragraphs(text) if kind == "markdown" else []:
            heading = _HEADING.match(paragraph)
            if heading and f"{prefix}.{heading[1]}" in possible:
                qid = f"{prefix}.{heading[1]}"
            if paragraph not in given:
                own.append((qid, paragraph))
        for q, paragraphs in itertools.groupby(own, key=lambda pair: pair[0]):
            if q:
                found.setdefault(q, []).append("\n\n".join(p for _, p in paragraphs))
    return {q: _capped("\n\n".join(texts)) for q, texts in found.items()}


def _capped(text: str) -> str:
    """`text` cut to `MAX_REASONING` characters, saying so."""
    if len(text) <= MAX_REASONING:
        return text
    return text[:MAX_REASONING] + f"\n\n[cut: {len(text) - MAX_REASONING} more characters not kept]"


def section_marker(student: str) -> str:
    """The line that opens `student`'s section of a page: their name as hex, so nothing they wrote can forge it."""
    return f"<!-- student {student.encode('utf-8', 'surrogatepass').hex()} -->"


def _section(r: Result, name: str) -> str:
    """One student's reasoning on one problem set: a subsection per problem with reasoning, every line escaped."""
    lines = [section_marker(r.submission.student), f"## {markdown(name)}", "",
             f"*{markdown(str(r.submission.path.name))}*", ""]
    for q in r.possible:
        if r.reasoning.get(q):
            lines += [f"### {q}", "", *[markdown(line) for line in r.reasoning[q].splitlines()], ""]
    if silent := [q for q in r.possible if not r.reasoning.get(q)]:
        lines += [f"No reasoning written for {', '.join(silent)}.", ""]
    return "\n".join(lines) + "\n"


def sections_of(page: Path) -> dict[str, str]:
    """{student: their section} of a page written before ({} when there is none)."""
    try:
        text = page.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    starts = [(m.start(), bytes.fromhex(m[1]).decode("utf-8", "surrogatepass")) for m in _SECTION.finditer(text)]
    ends = [start for start, _ in starts[1:]] + [len(text)]
    return {student: text[start:end] for (start, student), end in zip(starts, ends)}


_INTRO = ("Each student's own Markdown cells, whole, under the problem they follow; the handout's text is left "
          "out. The points go in the manual-points file beside the gradebook.")


def naming(roster: Roster | None) -> Callable[[str], str]:
    """How pages and flags name a student (a uid with a roster): 'Name (uid)', or the student's text, cleaned."""
    names = {s.uid: f"{s.name} ({s.uid})" for s in roster.students} if roster else {}
    return lambda student: names.get(student) or clean(student)


def write_pages(results: list[Result], folder: Path, roster: Roster | None = None, keep: bool = False) -> list[Path]:
    """Write `folder/<set>.md` for each problem set graded in `results` (files superseded or refused left out):
    a section per student in `roster`'s order, then the rest by name; with `keep` (a regrade of some students), the
    sections of students not in `results` stay as the earlier page had them. Returns the pages written."""
    order = {s.uid: i for i, s in enumerate(roster.students)} if roster else {}
    name = naming(roster)
    graded: dict[str, list[Result]] = {}
    for r in results:
        if r.possible and r.submission.problem_set and r.status != "superseded":
            graded.setdefault(r.submission.problem_set, []).append(r)
    folder.mkdir(parents=True, exist_ok=True)
    for problem_set, mine in graded.items():
        page = folder / f"{problem_set}.md"
        sections = sections_of(page) if keep else {}
        for r in mine:
            sections[r.submission.student] = _section(r, name(r.submission.student))
        ranked = sorted(sections, key=lambda s: (order.get(s, len(order)), name(s).casefold(), s))
        head = f"# Reasoning, problem set {problem_set}\n\n{_INTRO}\n\n"
        write_atomic(page, head + "".join(sections[s] for s in ranked))
    return sorted(folder / f"{problem_set}.md" for problem_set in graded)
