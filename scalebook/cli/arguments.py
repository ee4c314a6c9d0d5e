"""How the `scalebook` command reads its arguments: argument types that refuse a bad value in one line naming the
option, a parser whose errors are one line (exit status 2), and the option names that the package's errors are
rewritten in (`--batch=...`, not `batch_tokens=...`)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..units import check_choice, check_int, check_positive, parse_size

__all__ = ["count", "size", "seconds", "new_file", "one_of", "Parser", "value_options", "join_negative_values",
           "PARAMETER_OPTIONS", "sub_parser", "in_option_names"]


# --- argument types: each refuses a bad value in one line that argparse prefixes with the option's name ---------


def count(text: str) -> int:
    """A whole number ≥ 1 ('8' or '8.0'; not '2.5', '-1' or 'inf')."""
    try:
        return check_int("value", float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 1") from None


def size(text: str) -> float:
    """A positive size such as '32MiB', '1.5e9' or '4Mi' (finite, at most units.LARGEST)."""
    try:
        value = parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).replace("size=", "", 1)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive size")
    return value


def seconds(text: str) -> float:
    """A positive finite number of seconds ('120', '0.5'; not '0', '-1', 'nan' or 'inf')."""
    try:
        return check_positive("value", float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds") from None


def new_file(text: str) -> str:
    """A file that can be written: its folder exists and it is not itself a folder."""
    path = Path(text)
    if not text or path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file to write")
    if not path.resolve().parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: its folder {str(path.parent)!r} does not exist")
    return text


def one_of(allowed: Sequence[str]) -> Callable[[str], str]:
    """One of `allowed`, with the closest names suggested for a misspelling."""
    def name(text: str) -> str:
        try:
            return check_choice("value", text, allowed)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err).replace("value=", "", 1)) from None
    return name


class Parser(argparse.ArgumentParser):
    """argparse with whole option names only and a one-line error (exit status 2) instead of a usage block."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def value_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string, of the parser and its subcommands, that takes a value."""
    out: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                out |= value_options(child)
        elif action.option_strings and action.nargs is None:
            out.update(action.option_strings)
    return out


def join_negative_values(argv: list[str], options: set[str]) -> list[str]:
    """'--bytes -1e9' -> '--bytes=-1e9': argparse then reads the negative value, which the option's type refuses
    by name, rather than taking it for an option and saying 'expected one argument'."""
    out: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token in options:
            value = next(tokens, None)
            if value is not None and value.startswith("-") and not value.startswith("--"):
                out.append(f"{token}={value}")
                continue
            out.extend([token] if value is None else [token, value])
            continue
        out.append(token)
    return out


# The Python parameters behind the options whose names differ: an error raised by the package names the parameter,
# and the command line names the option instead.
PARAMETER_OPTIONS = {"batch_tokens": "--batch", "seq_len": "--seq", "n_chips": "--chips", "gpus": "--chips",
                      "nbytes": "--bytes", "efficiency": "--efficiency", "top_k": "--top-k",
                      "microbatch_tokens": "--microbatch", "global_batch_tokens": "--batch"}


def sub_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of sub-command `command` of `parser`."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[command]


def in_option_names(message: str, parser: argparse.ArgumentParser) -> str:
    """`message` with each 'parameter=' of the package's errors written as the option the user typed."""
    options = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings and a.nargs != 0}
    names = {**{p: o for p, o in PARAMETER_OPTIONS.items() if o in options.values()}, **options}
    return re.sub(r"(?<![\w\-'\[])(" + "|".join(map(re.escape, names)) + r")=", lambda m: f"{names[m[1]]}=", message)


