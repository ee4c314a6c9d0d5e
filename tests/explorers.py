"""Shared checks for the chapters' explorers: after one warm-up, moving a control must answer quickly; and the
explorer fuzz, which sets every control of every explorer the built site offers to each value a reader can pick
and checks each answer (`settings`, `problems`)."""

from __future__ import annotations

import html
import itertools
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from speed import assert_fast

from scalebook.collectives import KINDS
from scalebook.widgets import web

FULL = 256  # menus and slider points multiplied out in full up to this many calls; past it, every pair of values
DESCRIPTION = re.compile(r"data-scalebook=\"([^\"]*)\"")
# A number written with more digits than a reader can use: a raw float (0.30000000000000004, 295.2238805970149), eight
# significant digits or more.
RAW_FLOAT = re.compile(r"(?<![\w.])(?:[1-9]\d*\.\d{7,}|0\.0*[1-9]\d{7,})")
COLLECTIVE = re.compile("|".join(KINDS) + r"|AllGather|ReduceScatter|AllReduce|AllToAll", re.IGNORECASE)
# A time shown as zero in a headline (a table's caption, a line of text) of an answer about a collective: a plan's
# row may rightly show a step that moves nothing, a headline may not (a group of one chip is free, and says so).
ZERO_TIME = re.compile(r"(?<![\d.,])0 (?:ns|µs|ms|s)\b")
HEADLINE = re.compile(r"<(caption|pre)\b[^>]*>(.*?)</\1>", re.S)


def assert_answers_fast(make: Callable[[], Any], change: dict[str, Any], limit: float = 0.05) -> None:
    """Open the explorer `make()`, move its controls to `change`, and check the answer without an error.

    `limit` is the target in seconds (widgets must answer well under 0.1 s), timed as the best of three moves
    after a warm-up. The test fails only past 10x the target (`speed.assert_fast`); `benchmarks/speed.py`
    reports every explorer against the target itself.
    """
    ex = make()
    ex.update(**change)  # the first move may import lazily
    seconds = min(ex.update(**change) for _ in range(3))
    assert not isinstance(ex.result, Exception), ex.result
    assert_fast(seconds, limit, f"{make.__name__}({change})")


def site_explorers(page: Path) -> list[dict[str, Any]]:
    """The descriptions (`web.describe`) of the explorers on one built page, in page order."""
    return [json.loads(html.unescape(m)) for m in DESCRIPTION.findall(page.read_text(encoding="utf-8"))]


def levels(control: Mapping[str, Any]) -> list[Any]:
    """The values fuzzed for one control, as the page sends them: every option of a menu (by index); a slider's
    two ends and its midpoint (a log slider's geometric midpoint), on its step; a text box's own value."""
    kind = control["kind"]
    if kind == "menu":
        return list(range(len(control["options"])))
    if kind == "text":
        return [control["value"]]
    lo, hi = control["min"], control["max"]
    if kind == "log" and control.get("factor"):
        steps = round(math.log(hi / lo, control["factor"]))
        return [lo, lo * control["factor"] ** (steps // 2), hi]
    if kind == "log":
        return list(dict.fromkeys([lo, math.sqrt(lo * hi), hi]))
    steps = round((hi - lo) / control["step"])
    mid = lo + (steps // 2) * control["step"]
    mid = round(mid) if kind == "int" else mid
    return list(dict.fromkeys([lo, mid, hi]))


def pairwise(factors: list[list[Any]]) -> list[tuple[Any, ...]]:
    """Rows covering every pair of values of every two factors (a greedy all-pairs design, deterministic)."""
    if len(factors) < 2:
        return [tuple(r) for r in itertools.product(*factors)]
    uncovered = {(i, a, j, b) for i, j in itertools.combinations(range(len(factors)), 2)
                 for a in range(len(factors[i])) for b in range(len(factors[j]))}
    rows: list[tuple[int, ...]] = []
    while uncovered:
        i, a, j, b = min(uncovered)
        row = [0] * len(factors)
        row[i], row[j] = a, b
        for k in (k for k in range(len(factors)) if k not in (i, j)):
            row[k] = max(range(len(factors[k])), key=lambda v, k=k: sum(
                (min(k, m), (v, row[m])[k > m], max(k, m), (row[m], v)[k > m]) in uncovered
                for m in range(len(factors)) if m in (i, j) or m < k))
        rows.append(tuple(row))
        uncovered -= {(p, row[p], q, row[q]) for p, q in itertools.combinations(range(len(factors)), 2)}
    return [tuple(f[v] for f, v in zip(factors, row)) for row in rows]


def settings(about: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """('full' or 'pairwise', the control values to try): every combination of every control's `levels` when
    there are at most FULL, else every pair of values of every two controls."""
    names = [c["name"] for c in about["controls"]]
    factors = [levels(c) for c in about["controls"]]
    full = math.prod(len(f) for f in factors) <= FULL
    rows = itertools.product(*factors) if full else pairwise(factors)
    return ("full" if full else "pairwise"), [dict(zip(names, row)) for row in rows]


def shown_text(markup: str) -> str:
    """The text a reader sees in `markup`, with a space between table cells and blocks (`web.text_of` joins them)."""
    return web.text_of(re.sub(r"<(?!/?(?:b|i|em|strong|code|span|sub|sup)\b)[^>]*>", " \\g<0>", markup))


def _walk(result: Any) -> Iterator[Any]:
    yield result
    if isinstance(result, (list, tuple)):
        for r in result:
            yield from _walk(r)


def problems(call: str, values: Mapping[str, Any]) -> list[str]:
    """What is wrong with one answer: an error (a red traceback on the page), a NaN, an infinite or a negative
    time, a collective over more than one chip that takes no time, a bare number without its unit or a raw float
    in the text a reader sees. A one-line "does not fit" answer (`web.Unfit`) is an answer."""
    shown = web.answer(call, values)
    if shown["error"]:
        return [f"error: {web.text_of(shown['html'])[:160]}"]
    fn = web.load(call)[0]
    result = fn(**web.inputs(call, values))
    found = []
    if any(not math.isfinite(x) for x in web.numbers(result)):
        found.append("a NaN or infinite number")
    for part in _walk(result):
        seconds = getattr(part, "time", None)
        if isinstance(seconds, (int, float)) and not 0 <= seconds < math.inf:
            found.append(f"time {seconds!r}")
        label = getattr(part, "label", "")
        if (seconds == 0 and isinstance(label, str) and COLLECTIVE.search(label)
                and "group of one" not in label and getattr(part, "bytes", 0) > 0):
            found.append(f"a collective in 0 s: {label}")
    text = shown_text(shown["html"])
    for _tag, headline in HEADLINE.findall(shown["html"]) if COLLECTIVE.search(text) else ():
        line = web.text_of(headline)
        if ZERO_TIME.search(line) and "group of one" not in line:
            found.append(f"a collective shown taking 0 time: {line[:120]}")
    if re.search(r"\b(nan|inf)\b", text, re.IGNORECASE):
        found.append("nan or inf in the text")
    if isinstance(result, (int, float)):
        found.append(f"a bare number without its unit: {text}")
    raw = RAW_FLOAT.findall(text)
    if raw:
        found.append(f"raw floats {raw[:3]}")
    return found
