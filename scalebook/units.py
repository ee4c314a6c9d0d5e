"""SI units, human-readable formatting, size parsing, and the validators every public function uses.

Every quantity in scalebook is a float in SI base units (bytes, FLOPs, seconds, bytes/s, FLOP/s).
Formatting happens only at the edge, with the helpers below. The `check_*` validators run before any
arithmetic: each returns the value (as a float or int) or raises a `ValueError` that names the argument,
the value given and what is allowed. A public function declares its arguments' kinds once,

    @checks(B="size", n_chips="count", dtype="dtype", mfu="?fraction", strategy=STRATEGIES)

and a dataclass checks its fields in `__post_init__` with `check_fields(self, ...)`; the kinds are in `KINDS`
(count, size, non-negative, fraction, flag, text, dtype, lists of them, `is_a(SomeClass)`; '?' allows None).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = [
    "KB", "MB", "GB", "TB", "PB",
    "KiB", "MiB", "GiB", "TiB",
    "ns", "us", "ms", "DAY", "YEAR",
    "DTYPE_BYTES", "JAX_DTYPES", "dtype_bytes",
    "fmt_bytes", "fmt_time", "fmt_flops", "fmt_rate", "fmt_si", "parse_size", "geomspace",
    "LARGEST", "check_number", "check_positive", "check_non_negative", "check_int", "check_fraction",
    "check_choice", "closest", "check_kind", "checks", "check_fields", "is_a", "sequence_of",
    "KINDS",
]

KB, MB, GB, TB, PB = 1e3, 1e6, 1e9, 1e12, 1e15
# The largest number a calculator accepts: far beyond any real model, batch or cluster (a yotta-anything),
# small enough that products of a few such numbers stay finite floats.
LARGEST = 1e24
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
ns, us, ms = 1e-9, 1e-6, 1e-3

DTYPE_BYTES: dict[str, float] = {
    "fp32": 4, "f32": 4, "float32": 4,
    "bf16": 2, "bfloat16": 2, "fp16": 2, "f16": 2, "float16": 2,
    "fp8": 1, "f8": 1, "int8": 1, "i8": 1,
    "int4": 0.5, "i4": 0.5, "fp4": 0.5,
}


# The NumPy/JAX name of each dtype the live lab can run in (`runtime.jnp_dtype` turns it into a JAX dtype).
JAX_DTYPES: dict[str, str] = {
    "fp32": "float32", "f32": "float32", "float32": "float32",
    "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "f16": "float16", "float16": "float16",
    "int8": "int8", "i8": "int8",
}


def dtype_bytes(dtype: str) -> float:
    """Return the size of one element of `dtype` in bytes (0.5 for 4-bit types)."""
    key = str(dtype).lower()
    if key not in DTYPE_BYTES:
        raise ValueError(f"dtype={dtype!r} is not known; allowed: {sorted(DTYPE_BYTES)}")
    return DTYPE_BYTES[key]


# --- validators ------------------------------------------------------------------------------------------------


def check_number(name: str, value: object, *, low: float = -math.inf, high: float = LARGEST,
                 low_open: bool = False, what: str = "a finite number") -> float:
    """Return `value` as a float if it is a real number (not a bool) in [low, high] (or (low, high] when
    `low_open`); else raise `ValueError` naming `name`, the value given and what is allowed (`what`)."""
    if type(value) is not float and type(value) is not int and (  # the fast path skips the ABC checks
            isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise ValueError(f"{name}={value!r} must be {what}; got a {type(value).__name__}")
    number = float(value)
    too_low = number <= low if low_open else number < low
    if math.isnan(number) or too_low or number > high:
        raise ValueError(f"{name}={value!r} must be {what}")
    return number


_POSITIVE = f"a positive finite number (at most {LARGEST:g})"
_NON_NEGATIVE = f"a finite number ≥ 0 (at most {LARGEST:g})"


def check_positive(name: str, value: object, high: float = LARGEST) -> float:
    """Return `value` as a float if it is a finite number > 0 (at most `high`); else raise `ValueError`."""
    what = _POSITIVE if high == LARGEST else f"a positive finite number (at most {high:g})"
    return check_number(name, value, low=0.0, low_open=True, high=high, what=what)


def check_non_negative(name: str, value: object, high: float = LARGEST) -> float:
    """Return `value` as a float if it is a finite number ≥ 0 (at most `high`); else raise `ValueError`."""
    what = _NON_NEGATIVE if high == LARGEST else f"a finite number ≥ 0 (at most {high:g})"
    return check_number(name, value, low=0.0, high=high, what=what)


def check_int(name: str, value: object, low: int = 1, high: float = LARGEST) -> int:
    """Return `value` as an int if it is a whole number in [low, high] (2.0 counts, 2.5 and True do not)."""
    if type(value) is int:  # the fast path: a plain int
        whole = value
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={value!r} must be an integer ≥ {low}; got a {type(value).__name__}")
    elif isinstance(value, numbers.Integral):
        whole = int(value)
    elif math.isfinite(value) and float(value).is_integer():
        whole = int(value)
    else:
        raise ValueError(f"{name}={value!r} must be a whole number ≥ {low}")
    if not low <= whole <= high:
        raise ValueError(f"{name}={value!r} must be an integer in [{low}, {high:g}]")
    return whole


def check_fraction(name: str, value: object) -> float:
    """Return `value` as a float if it lies in (0, 1] (a share, an efficiency, an MFU); else raise `ValueError`."""
    return check_number(name, value, low=0.0, low_open=True, high=1.0, what="a fraction in (0, 1]")


def closest(name: object, known: Iterable[str], n: int = 3, cutoff: float = 0.5) -> list[str]:
    """Return up to `n` names of `known` closest in spelling to `name` (for 'did you mean' messages), each at least
    `cutoff` alike (difflib's ratio, 0-1)."""
    import difflib  # only an error message needs it: kept out of `import scalebook`

    return difflib.get_close_matches(str(name), list(known), n=n, cutoff=cutoff)


def check_choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """Return `value` if it is one of `allowed`; else raise `ValueError` naming the closest allowed names."""
    allowed = list(allowed)
    if isinstance(value, str) and value in allowed:
        return value
    near = closest(value, allowed)
    hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
    raise ValueError(f"{name}={value!r} is not one of {allowed}{hint}")


def _check_dtype(name: str, value: object) -> str:
    if isinstance(value, str) and value.lower() in DTYPE_BYTES:
        return value
    return check_choice(name, value, DTYPE_BYTES)


def _check_flag(name: str, value: object) -> bool:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return value
    raise ValueError(f"{name}={value!r} must be True or False; got a {type(value).__name__}")


def _check_text(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"{name}={value!r} must be a string; got a {type(value).__name__}")


def _check_any_number(name: str, value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={value!r} must be a number; got a {type(value).__name__}")
    return value


def _check_result(name: str, value: object) -> object:
    """A computed quantity (time, bytes, FLOPs): finite and ≥ 0 at any size; a NaN here is a bug upstream."""
    check_number(name, value, low=0.0, high=1.7e308, what="a finite number ≥ 0 (a computed count or time)")
    return value


def sequence_of(kind: str, what: str) -> Callable[[str, object], object]:
    """A kind for a list or tuple (not a string) whose every element is of `kind`; errors name `name[i]`."""
    def run(name: str, value: object) -> object:
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or isinstance(value, dict):
            raise ValueError(f"{name}={value!r} must be a list or tuple of {what}")
        for i, item in enumerate(value):
            check_kind(f"{name}[{i}]", item, kind)
        return value
    return run


def is_a(*types: type, what: str = "") -> Callable[[str, object], object]:
    """A kind for an object of one of `types` (e.g. `is_a(TpuMesh, GpuCluster)`)."""
    wanted = what or " or ".join(t.__name__ for t in types)

    def run(name: str, value: object) -> object:
        if not isinstance(value, types):
            raise ValueError(f"{name}={value!r} must be a {wanted}; got a {type(value).__name__}")
        return value
    return run


def _array_or(check: Callable[[str, object], object]) -> Callable[[str, object], object]:
    """Apply a scalar check to a number, or to every element of a NumPy array (first bad one reported)."""
    def run(name: str, value: object) -> object:
        if type(value).__name__ == "ndarray":
            for x in value.ravel():  # type: ignore[attr-defined]
                check(name, x.item())
            return value
        check(name, value)
        return value
    return run


# How each kind of argument is checked (`check_kind`, `checks`). Numbers are returned unchanged (an int stays an
# int, so no result moves); a whole float given for a count becomes an int.
KINDS: dict[str, Callable[[str, object], object]] = {
    "count": lambda n, v: check_int(n, v, 1),                    # a whole number ≥ 1
    "count0": lambda n, v: check_int(n, v, 0),                   # a whole number ≥ 0
    "size": _array_or(check_positive),                           # a positive finite number ≤ LARGEST
    "nonneg": _array_or(check_non_negative),                     # a finite number ≥ 0, ≤ LARGEST
    "fraction": lambda n, v: (check_fraction(n, v), v)[1],       # in (0, 1]
    "exponent": lambda n, v: (check_number(n, v, low=1.0, what="an exponent p >= 1 (None: the max)"), v)[1],
    "frac0": lambda n, v: (check_number(n, v, low=0.0, high=1.0, what="a fraction in [0, 1]"), v)[1],
    "number": _check_any_number,                                 # any real number (what a formatter prints)
    "finite": lambda n, v: (check_number(n, v, low=-LARGEST), v)[1],  # a finite number of either sign
    "result": _array_or(_check_result),                          # a computed count or time (no upper bound)
    "flag": _check_flag,                                         # True or False
    "text": _check_text,                                         # a string
    "dtype": _check_dtype,                                       # a dtype name of DTYPE_BYTES
    "names": sequence_of("text", "names"),                      # a list or tuple of names
    "sizes": sequence_of("size", "positive finite numbers"),    # a list or tuple of sizes
    "counts": sequence_of("count", "whole numbers ≥ 1"),        # a list or tuple of counts
}

_F = TypeVar("_F", bound=Callable[..., Any])
Kind = str | Iterable[str] | Callable[[str, object], object]


@functools.cache
def _named_check(kind: str) -> Callable[[str, object], object]:
    """The check of a kind named in `KINDS` (prefixed by '?' when None is allowed)."""
    if kind.startswith("?"):
        inner = _named_check(kind[1:])
        return lambda name, value: None if value is None else inner(name, value)
    if kind not in KINDS:
        raise KeyError(f"kind={kind!r} is not a kind of argument; allowed: {sorted(KINDS)}")
    return KINDS[kind]


def _compile(kind: Kind) -> Callable[[str, object], object]:
    """The check (name, value) -> value of any `Kind`."""
    if isinstance(kind, str):
        return _named_check(kind)
    if callable(kind):
        return kind
    allowed = list(kind)
    return lambda name, value: check_choice(name, value, allowed)


def check_kind(name: str, value: object, kind: Kind) -> object:
    """Check one argument against its kind and return it (a count as an int).

    `kind` is a key of `KINDS`, the same key prefixed by '?' when None is allowed, a collection of allowed names
    (`check_choice`), or a callable (name, value) -> value.
    """
    return _compile(kind)(name, value)


def _parameters(fn: Callable[..., Any]) -> tuple[list[str], list[str]]:
    """The names of `fn`'s positional and keyword-only parameters: read off a plain function's code object (a
    signature costs a hundred times more, and `checks` runs for every public function at import), else from
    `inspect.signature` (a wrapped or built-in callable)."""
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__"):
        params = inspect.signature(fn).parameters.values()
        return ([p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)],
                [p.name for p in params if p.kind == p.KEYWORD_ONLY])
    names = code.co_varnames
    return list(names[:code.co_argcount]), list(names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])


def checks(**kinds: Kind) -> Callable[[_F], _F]:
    """Decorate a public function so that each named argument is checked by its kind (see `check_kind`) before
    the body runs: the error names the argument, the value and what is allowed. Defaults are not re-checked."""
    def decorate(fn: _F) -> _F:
        positional, keyword_only = _parameters(fn)
        unknown = set(kinds) - set(positional) - set(keyword_only)
        if unknown:
            raise TypeError(f"checks: {fn.__qualname__} has no parameter(s) {sorted(unknown)}")
        # (name, position or -1 for keyword-only, check): compiled once, so a call costs a few dict lookups
        plan = [(name, positional.index(name) if name in positional else -1, _compile(kind))
                for name, kind in kinds.items()]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            args_list = None
            for name, position, check in plan:
                if 0 <= position < len(args):
                    args_list = args_list or list(args)
                    args_list[position] = check(name, args_list[position])
                elif name in kwargs:
                    kwargs[name] = check(name, kwargs[name])
            return fn(*(args if args_list is None else args_list), **kwargs)

        return wrapper  # type: ignore[return-value]
    return decorate


def check_fields(obj: object, **kinds: Kind) -> None:
    """Check the fields of a dataclass in its `__post_init__` (values are checked, not converted)."""
    for name, kind in kinds.items():
        try:
            _compile(kind)(name, getattr(obj, name))
        except (ValueError, TypeError, KeyError) as exc:
            raise type(exc)(f"{type(obj).__name__}: {exc.args[0] if exc.args else exc}") from None


_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


@checks(lo="size", hi="size", n=lambda name, v: check_int(name, v, 2))
def geomspace(lo: float, hi: float, n: int) -> list[float]:
    """Return `n` numbers from `lo` to `hi` evenly spaced on a log scale (NumPy's `geomspace`, in pure Python)."""
    a, b = math.log10(lo), math.log10(hi)
    step = (b - a) / (n - 1)
    return [float(lo), *(10.0 ** (i * step + a) for i in range(1, n - 1)), float(hi)]


@checks(value="number", unit="text", digits=lambda n, v: check_int(n, v, 1, 17))
def fmt_si(value: float, unit: str, digits: int = 3) -> str:
    """Format `value` with an SI prefix (k, M, G, T, P) and `digits` significant digits."""
    if value is None or not math.isfinite(value):
        return f"{value} {unit}"
    if value == 0:
        return f"0 {unit}"
    mag = abs(value)
    if mag >= 1e18:  # beyond peta, prefixes (E, Z, Y) read worse than a plain exponent
        return f"{value:.{digits}g} {unit}"
    for scale, prefix in _PREFIXES:
        if mag >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


@checks(nbytes="number", binary="flag", digits=lambda n, v: check_int(n, v, 1, 17))
def fmt_bytes(nbytes: float, binary: bool = False, digits: int = 3) -> str:
    """Format a byte count: decimal prefixes (GB = 1e9) by default, binary (GiB = 2**30) if asked."""
    if not binary:
        return fmt_si(nbytes, "B", digits)
    for scale, unit in [(TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")]:
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.{digits}g} {unit}"
    return f"{nbytes:.{digits}g} B"


DAY, YEAR = 86400.0, 365.25 * 86400.0


@checks(seconds="number", digits=lambda n, v: check_int(n, v, 1, 17))
def fmt_time(seconds: float, digits: int = 3) -> str:
    """Format a duration in seconds as ns, µs, ms, s, min, h, days or years, whichever reads best."""
    if seconds is None or not math.isfinite(seconds):
        return f"{seconds} s"
    mag = abs(seconds)
    if mag >= YEAR:
        return f"{seconds / YEAR:.{digits}g} years"
    if mag >= DAY:
        return f"{seconds / DAY:.{digits}g} days"
    if mag >= 3600:
        return f"{seconds / 3600:.{digits}g} h"
    if mag >= 60:
        return f"{seconds / 60:.{digits}g} min"
    for scale, unit in [(1.0, "s"), (ms, "ms"), (us, "µs"), (ns, "ns")]:
        if mag >= scale:
            return f"{seconds / scale:.{digits}g} {unit}"
    return f"{seconds / ns:.{digits}g} ns"


@checks(flops="number", digits=lambda n, v: check_int(n, v, 1, 17))
def fmt_flops(flops: float, digits: int = 3) -> str:
    """Format a FLOP count (not a rate), e.g. 2.1e12 -> '2.1 TFLOPs'."""
    return fmt_si(flops, "FLOPs", digits)


@checks(rate="number", unit="text", digits=lambda n, v: check_int(n, v, 1, 17))
def fmt_rate(rate: float, unit: str = "FLOP/s", digits: int = 3) -> str:
    """Format a rate such as FLOP/s or B/s, e.g. 1.97e14 -> '197 TFLOP/s'."""
    return fmt_si(rate, unit, digits)


_SIZE_UNITS = {
    "": 1.0, "b": 1.0,
    "k": KB, "kb": KB, "m": MB, "mb": MB, "g": GB, "gb": GB, "t": TB, "tb": TB, "p": PB, "pb": PB,
    "kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB,
    "ki": KiB, "mi": MiB, "gi": GiB, "ti": TiB,
}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str | float) -> float:
    """Return the number in a size such as '16GiB', '1.5 GB', '512k', '4Mi' (4·2**20) or 4096.

    Decimal prefixes (k, M, G, T, P) and binary ones (Ki, Mi, Gi, Ti), with or without a trailing B; the
    same parser reads token counts ('4Mi' tokens).
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return check_non_negative("size", text)
    if not isinstance(text, str):
        raise ValueError(f"size={text!r} must be a number or a string such as '16GiB'; got a {type(text).__name__}")
    match = _SIZE_RE.match(text)
    if not match or match.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(
            f"size={text!r} is not a size; write a number and a unit such as '16GiB', '1.5GB', '512KiB' "
            f"(units: {', '.join(u for u in _SIZE_UNITS if u)})"
        )
    value = float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
    if not value <= LARGEST:
        raise ValueError(f"size={text!r} is {value:g}, more than the {LARGEST:g} a calculator takes")
    return value
