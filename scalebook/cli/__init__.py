"""The `scalebook` command: the calculators from a terminal, and the teacher's commands.

    command.py     the command and the calculators' subcommands (`roofline`, `plan`, `serve` ...); `main`
    arguments.py   the option types, each refusing a bad value in one line that names the option
    teacher.py     `scalebook grade` and `scalebook course ...`: a class graded, its roster, keys and exports

The console script is `scalebook.cli:main`. Each name loads its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import arguments, command, teacher
    from .command import main

_TABLE = {"main": "command", **{name: name for name in ("command", "arguments", "teacher")}}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
