"""An explorer's second front end: the website, where the reader's browser runs the calculation in Pyodide.

An explorer is a function plus its controls (`core.explore`). In a kernel its controls are ipywidgets; on the
website its snapshot carries a JSON description (`describe`): the controls with the values the worked answer
uses, and the function with its fixed inputs, pickled (a function defined in a notebook or inside a factory
travels as its code and the values it refers to, so the page needs no kernel). The bridge served with the site
(`_ext/static/scalebook-live.js`) draws HTML controls from the description and, in a Web Worker, calls `answer`
with the values a reader chose; it draws the HTML that `answer` returns in place of the snapshot's.

This module is standard library only: it is what Pyodide imports, where NumPy and ipywidgets do not exist.
"""

from __future__ import annotations

import base64
import builtins
import html
import importlib
import importlib.util
import io
import json
import marshal
import math
import pickle
import re
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

__all__ = ["Log", "Text", "Unfit", "Fitting", "control", "render", "numbers", "text_of", "numbers_in",
           "displayed_numbers", "describe", "load", "inputs", "answer", "open_faceless"]

MAX_CALL = 200_000  # characters of pickled inputs a page may carry per explorer (a profile's trace would not fit)
PYTHON = "{}.{}".format(*sys.version_info[:2])  # a pickled function's code runs only on the same Python minor


@dataclass(frozen=True)
class Log:
    """A log-scale slider from `lo` to `hi` starting at `value` (for sizes spanning decades). With `factor` (say 2)
    it moves in whole steps of that factor from `lo`, so a matrix size stays a whole power-of-two multiple."""

    lo: float
    hi: float
    value: float
    factor: float = 0.0

    def step_of(self, x: float) -> int:
        """The whole `factor` steps from `lo` nearest to `x` (0 for a continuous slider)."""
        return round(math.log(x / self.lo, self.factor)) if self.factor else 0

    def on_steps(self, x: float) -> bool:
        """Whether `x` is a whole number of `factor` steps above `lo` (always, for a continuous slider)."""
        return not self.factor or math.isclose(x, self.lo * self.factor ** self.step_of(x))


@dataclass(frozen=True)
class Unfit:
    """An explorer's answer for a combination its controls offer but that has no answer (a slice larger than the
    pod, a number format the chip has no published figure for): one line saying why, not an error."""

    why: str

    def __str__(self) -> str:
        return f"does not fit: {self.why}"

    def _repr_html_(self) -> str:
        return f"<p class='scalebook-unfit'><b>does not fit:</b> {html.escape(self.why)}</p>"


@dataclass(frozen=True)
class Fitting:
    """`fn`, answering `Unfit` where it raises a `ValueError` naming one of the phrases `unfit` (what the explorer's
    own combinations can run into); any other error is still an error."""

    fn: Callable[..., Any]
    unfit: tuple[str, ...]

    def __call__(self, **values: Any) -> Any:
        try:
            return self.fn(**values)
        except ValueError as err:
            if any(phrase in str(err) for phrase in self.unfit):
                return Unfit(str(err))
            raise


@dataclass(frozen=True)
class Text:
    """A text box starting at `value` (an expression in the book's notation, say)."""

    value: str


def control(name: str, spec: Any) -> dict[str, Any] | None:
    """Return the description of one control spec, or None when `spec` is a fixed value.

    A slider `(min, max[, step[, value]])` (integer when all are ints), a menu `[option, ...]` (the first is the
    start; the description holds the options' labels, the chosen one by index), a `Log(lo, hi, value)` slider,
    a `Text(value)` box.
    Raises `ValueError` naming the control when a spec cannot start on its value.
    """
    if isinstance(spec, Text):
        return {"name": name, "kind": "text", "value": spec.value}
    if isinstance(spec, Log):
        if not 0 < spec.lo <= spec.value <= spec.hi:
            raise ValueError(f"{name}: Log needs 0 < lo <= value <= hi, got {spec}")
        if spec.factor and not (spec.factor > 1 and spec.on_steps(spec.hi) and spec.on_steps(spec.value)):
            raise ValueError(f"{name}: Log with factor={spec.factor!r} needs hi and value whole factor steps above "
                             f"lo, got {spec}")
        about = {"name": name, "kind": "log", "min": spec.lo, "max": spec.hi, "value": spec.value}
        return {**about, "factor": spec.factor} if spec.factor else about
    if isinstance(spec, list):
        if not spec:
            raise ValueError(f"{name}: a menu needs at least one option")
        return {"name": name, "kind": "menu", "options": [str(o) for o in spec], "value": 0}
    if isinstance(spec, tuple):
        if len(spec) not in (2, 3, 4):
            raise ValueError(f"{name}: a slider is (min, max), (min, max, step) or (min, max, step, value), "
                             f"got {spec!r}")
        lo, hi = spec[0], spec[1]
        step = spec[2] if len(spec) > 2 else None
        value = spec[3] if len(spec) > 3 else lo
        if not lo <= value <= hi:
            raise ValueError(f"{name}: value {value!r} is outside [{lo!r}, {hi!r}]")
        if all(isinstance(v, int) for v in (lo, hi, value)) and (step is None or isinstance(step, int)):
            return {"name": name, "kind": "int", "min": lo, "max": hi, "step": step or 1, "value": value}
        return {"name": name, "kind": "float", "min": lo, "max": hi, "step": step or (hi - lo) / 100, "value": value}
    return None


def render(result: Any) -> str:
    """Return HTML for a calculation's result: figures as SVG images (vector: sharp at any width and in print),
    objects through their HTML repr, else text."""
    if isinstance(result, (list, tuple)):
        return "".join(render(r) for r in result)
    if hasattr(result, "savefig"):
        buf = io.BytesIO()
        result.savefig(buf, format="svg", bbox_inches="tight")
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        return f"<img style='max-width:100%' src='data:image/svg+xml;base64,{data}'/>"
    if hasattr(result, "_repr_html_"):
        return result._repr_html_()
    return f"<pre>{html.escape(str(result))}</pre>"


def numbers(result: Any) -> list[float]:
    """Return the numbers a result holds, in order: an `Estimate`'s FLOPs, bytes and time, a table's numeric
    cells, plain numbers; text and pictures hold none (their numbers are read off the displayed text)."""
    if isinstance(result, bool):
        return []
    if isinstance(result, (int, float)):
        return [float(result)]
    if isinstance(result, (list, tuple)):
        return [x for r in result for x in numbers(r)]
    if all(hasattr(result, a) for a in ("flops", "bytes", "time")):
        return [float(result.flops), float(result.bytes), float(result.time)]
    rows = getattr(result, "rows", None)
    if isinstance(rows, list) and all(isinstance(r, Mapping) for r in rows):
        return [x for r in rows for v in r.values() for x in numbers(v)]
    if isinstance(result, Mapping):
        return [x for v in result.values() for x in numbers(v)]
    return []


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._skip += tag in ("style", "script")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("style", "script") and self._skip > 0

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def text_of(markup: str) -> str:
    """Return the text a browser shows for `markup` (its `textContent`, whitespace collapsed)."""
    parser = _Text()
    parser.feed(markup)
    return " ".join("".join(parser.parts).split())


# --- moving a function to the browser ------------------------------------------------------------------------


def _importable(fn: Callable[..., Any]) -> bool:
    """True when `fn` is what its module and qualified name lead to (so it travels by name)."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if module is None or fn.__module__ == "__main__" or "<" in fn.__qualname__:
        return False
    obj: Any = module
    for part in fn.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is fn


def _names(code: types.CodeType) -> set[str]:
    """Every global name `code` and the functions nested in it may read."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _function(code: bytes, module: str | None, names: dict[str, Any] | None, name: str, qualname: str,
              defaults: tuple | None, kwdefaults: dict | None, closure: tuple | None) -> types.FunctionType:
    """Rebuild a function pickled by `_Pickler` (its code, its module's globals or the names it reads)."""
    scope = importlib.import_module(module).__dict__ if names is None else {"__builtins__": builtins, **names}
    cells = None if closure is None else tuple(types.CellType(v) for v in closure)
    fn = types.FunctionType(marshal.loads(code), scope, name, defaults, cells)
    fn.__kwdefaults__, fn.__qualname__ = kwdefaults, qualname
    return fn


class _Pickler(pickle.Pickler):
    """Pickles modules by name, and functions that no import reaches (lambdas, closures, a notebook's own) by
    value: their code (marshal) and what they read. Everything else pickles as usual."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if not isinstance(obj, types.FunctionType) or _importable(obj):
            return NotImplemented
        module = obj.__module__
        if module in sys.modules and module != "__main__" and getattr(sys.modules[module], "__file__", None):
            names = None
        else:
            module = None
            names = {k: obj.__globals__[k] for k in sorted(_names(obj.__code__)) if k in obj.__globals__}
        closure = None if obj.__closure__ is None else tuple(c.cell_contents for c in obj.__closure__)
        return _function, (marshal.dumps(obj.__code__), module, names, obj.__name__, obj.__qualname__,
                           obj.__defaults__, obj.__kwdefaults__, closure)


def _pack(value: Any) -> str:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=4).dump(value)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _explores_a_measurement(fn: Callable[..., Any]) -> bool:
    """Whether `fn` closes over a profile (`scalebook.lab.profiling`) measured when its page was built: what it shows
    depends on that machine and that run, so the page keeps its snapshot rather than a live copy of it."""
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            if type(cell.cell_contents).__module__ == "scalebook.lab.profiling":
                return True
        except ValueError:  # an empty cell
            continue
    return False


def describe(fn: Callable[..., Any], specs: Mapping[str, Any], title: str = "") -> dict[str, Any]:
    """Return the JSON-ready description of an explorer: its controls at their starting values, and the function
    with its fixed inputs and menus' options pickled (`call`; absent, with `why`, when they cannot travel)."""
    controls, fixed, menus = [], {}, {}
    shown = fn.fn if isinstance(fn, Fitting) else fn
    for name, spec in specs.items():
        c = control(name, spec)
        if c is None:
            fixed[name] = spec
            continue
        controls.append(c)
        if c["kind"] == "menu":
            menus[name] = list(spec)
    about = {"title": title, "python": PYTHON, "controls": controls,
             "function": f"{getattr(shown, '__module__', '?')}.{getattr(shown, '__qualname__', repr(shown))}"}
    if _explores_a_measurement(shown):
        about["why"] = "it explores a profile measured on the machine that built the page"
        return about
    try:
        call = _pack((fn, fixed, menus))
    except Exception as err:  # noqa: BLE001 (an unpicklable input keeps the explorer a snapshot, and says why)
        about["why"] = f"{type(err).__name__}: {err}"
        return about
    if len(call) > MAX_CALL:
        about["why"] = f"its inputs take {len(call):,} characters on the page, more than {MAX_CALL:,}"
    else:
        about["call"] = call
    return about


_LOADED: dict[str, tuple[Callable[..., Any], dict[str, Any], dict[str, list]]] = {}


def load(call: str) -> tuple[Callable[..., Any], dict[str, Any], dict[str, list]]:
    """Return (function, fixed inputs, menus' options) from a description's `call` (unpickled once per page)."""
    if call not in _LOADED:
        _LOADED[call] = pickle.loads(base64.b64decode(call))
    return _LOADED[call]


def inputs(call: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the keyword arguments of one calculation: fixed inputs, sliders' values, menus' chosen options."""
    _fn, fixed, menus = load(call)
    chosen = {k: menus[k][int(v)] if k in menus else v for k, v in values.items()}
    return {**fixed, **chosen}


def answer(call: str, values: Mapping[str, Any] | str) -> dict[str, Any]:
    """Run one calculation; return {'html': what to draw, 'numbers': the result's numbers, 'error': bool}.

    `values` maps each control's name to its value (a menu: the chosen option's index), or is that mapping as
    JSON (what the bridge sends). A `ValueError` or `KeyError` is drawn as the kernel's explorer draws it.
    """
    values = json.loads(values) if isinstance(values, str) else values
    fn = load(call)[0]
    try:
        result = fn(**inputs(call, values))
    except (ValueError, KeyError) as err:
        return {"html": f"<pre style='color:#cf222e'>{html.escape(str(err))}</pre>", "numbers": [], "error": True}
    found = [x for x in numbers(result) if math.isfinite(x)]
    return {"html": render(result), "numbers": found, "error": False}


def open_faceless(*packages: str) -> None:
    """Let submodules of `packages` import without running the packages' `__init__` (their faces import every
    figure, and NumPy and matplotlib with them); for Pyodide, where an explorer needs only its own module."""
    for name in packages:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(name)
        module = importlib.util.module_from_spec(spec)
        module.__getattr__ = _submodule(name)  # so that `sb.plots.chip` still finds its module
        sys.modules[name] = module


def _submodule(package: str) -> Callable[[str], types.ModuleType]:
    def find(attr: str) -> types.ModuleType:
        if attr.startswith("__") or importlib.util.find_spec(f"{package}.{attr}") is None:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        return importlib.import_module(f"{package}.{attr}")
    return find


NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def numbers_in(text: str) -> list[float]:
    """Return the numbers written in `text`, in order (thousands separators dropped)."""
    return [float(m.replace(",", "")) for m in NUMBER.findall(text) if any(ch.isdigit() for ch in m)]


def displayed_numbers(markup: str) -> list[float]:
    """Return the numbers a reader sees in `markup`'s text."""
    return numbers_in(text_of(markup))
