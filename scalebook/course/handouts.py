"""Handouts: the student version of a problem set, made from its solution source.

`strip_solutions` replaces the code between `# BEGIN SOLUTION` and `# END SOLUTION` (the nbgrader markers) by
stubs (`name = ...  # YOUR CODE HERE`), and a Markdown solution by a prompt for the student's reasoning.
"""

from __future__ import annotations

import re

__all__ = ["strip_solutions"]

_BEGIN = re.compile(r"^\s*(?:#+|<!--)?\s*BEGIN SOLUTION\b")
_END = re.compile(r"^\s*(?:#+|<!--)?\s*END SOLUTION\b")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*=[^=]")
_FENCE_OPEN = re.compile(r"^```\{code-cell\}")


def _stub(block: list[str], in_code: bool, indent: str) -> list[str]:
    """The student version of a solution block: one `name = ...` line per top-level assignment."""
    if not in_code:
        return [f"{indent}*Write your reasoning here.*"]
    names: list[str] = []
    for line in block:
        m = _ASSIGN.match(line[len(indent):]) if line.startswith(indent) else None
        if m and not line[len(indent):].startswith((" ", "\t")):
            # `a, b = f()` becomes one stub per name, so the student version still runs
            names += [n.strip() for n in m.group(1).split(",") if n.strip() not in names]
    if not names:
        return [f"{indent}# YOUR CODE HERE"]
    return [f"{indent}{name} = ...  # YOUR CODE HERE" for name in names]


def strip_solutions(text: str) -> str:
    """Return the student version of a MyST notebook or script: solution blocks replaced by stubs.

    Raises `ValueError` when a BEGIN SOLUTION marker has no matching END SOLUTION.
    """
    out: list[str] = []
    block: list[str] | None = None
    in_code = False
    indent = ""
    for number, line in enumerate(text.splitlines(), start=1):
        if block is None:
            if _FENCE_OPEN.match(line):
                in_code = True
            elif line.startswith("```") and in_code:
                in_code = False
            if _BEGIN.match(line):
                block, indent, start = [], line[: len(line) - len(line.lstrip())], number
                continue
            out.append(line)
        elif _END.match(line):
            out.extend(_stub(block, in_code, indent))
            block = None
        else:
            block.append(line)
    if block is not None:
        raise ValueError(f"BEGIN SOLUTION on line {start} has no matching END SOLUTION")
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
