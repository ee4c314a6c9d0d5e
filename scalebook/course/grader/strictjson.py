"""JSON that a submission wrote, read as the standard defines it and within a memory budget counted beforehand.

**The standard.** RFC 8259 permits no NaN and no Infinity ("Numeric values that cannot be represented in the
grammar below (such as Infinity and NaN) are not permitted", https://www.rfc-editor.org/rfc/rfc8259#section-6),
but Python's `json` reads both, and reads `1e999` as infinity. `parse` refuses each by name through the hooks
the `json` module documents for it (https://docs.python.org/3/library/json.html#json.loads: `parse_constant`
"can be used to raise an exception if invalid JSON numbers are encountered"; `parse_float`, `parse_int`), and
any number a double cannot hold: a record `{"cell": Infinity}` is refused, not turned into a crash later.

**The budget.** Parsed, a short text costs many times its size (a 32 MiB file of short strings costs CPython
about 500 MiB: 77 bytes per `"ab",`), and the parser gives no way to stop it midway. So `cost` bounds what a
parse would allocate before it starts, from counts of the bytes that can begin a value, and `parse` refuses
text over its budget.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["parse", "cost", "MAX_PARSE"]

MAX_PARSE = 128 * 2**20  # bytes the grader may spend to parse one file a submission wrote
# Bytes CPython spends per value, its slot in a list or dict included: at most 77 measured (a 2-letter string,
# an empty list, a dict entry counted at its ':' and ','), with room for a list's spare slots.
_PER_VALUE = 100


def cost(data: bytes) -> int:
    """An upper bound on the bytes `json.loads(data)` allocates, from counts, without parsing: the decoded text
    and its strings (4 bytes per character where anything beyond ASCII may occur, as a `\\u` escape can
    widen a whole string), and `_PER_VALUE` for each place a value can start (after ',', ':', '[' or '{')."""
    width = 1 if data.isascii() and b"\\u" not in data else 4
    starts = data.count(b",") + data.count(b":") + data.count(b"[") + data.count(b"{") + 1
    return 2 * width * len(data) + _PER_VALUE * starts


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (RFC 8259 permits no NaN and no Infinity)")


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is not a JSON number a double can hold (it overflows to infinity)")
    return value


def _int(text: str) -> int:
    value = int(text)  # over 4,300 digits this raises ValueError itself
    if abs(value) > sys.float_info.max:
        raise ValueError(f"{text[:40]}… ({len(text)} digits) is not a JSON number a double can hold")
    return value


def parse(data: bytes, budget: int = MAX_PARSE) -> Any:
    """`data` (JSON text) as Python data; raises ValueError, naming what it refused, for a NaN, an Infinity, a
    number beyond a double's range, nesting deeper than the parser goes, text that is not JSON, or text whose
    parse would cost more than `budget` bytes (`cost`)."""
    if (needed := cost(data)) > budget:
        raise ValueError(f"parsing these {len(data)} bytes would cost up to {needed >> 20} MiB; "
                         f"at most {budget >> 20} MiB is spent on one")
    try:
        return json.loads(data, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except RecursionError:
        raise ValueError("the JSON nests deeper than the parser goes") from None
