"""The machinery of the hostile-but-honest fuzz (issue #16), shared by tests/ground/test_fuzz.py (the analytic
model) and tests/upper/test_fuzz_upper.py (figures, explorers and the JAX lab).

A recipe table maps 'module.attr' (under `scalebook.`) to (a callable returning one valid call as kwargs,
{parameter: kind}). A kind is a key of `BAD` ("?kind" when None is allowed, so None is not a bad value), "-" for a
parameter not fuzzed (free text, a display option), or a list: that parameter's own bad values. Each bad call must
raise a ValueError, TypeError or KeyError whose message names the argument, within the time limit of `guarded`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import math
import numbers
import resource
import signal
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import scalebook as sb

Recipes = dict[str, tuple[Callable[[], dict[str, Any]], dict[str, Any]]]

NAN, INF = float("nan"), float("inf")
HUGE = 10**30
BAD = {
    "count": [0, -1, NAN, INF, -INF, HUGE, 2.5, "abc", None, True],     # a whole number ≥ 1
    "count0": [-1, NAN, INF, HUGE, 2.5, "abc", None],                   # a whole number ≥ 0
    "size": [0, -1, NAN, INF, -INF, HUGE, "abc", None],                 # a positive finite number
    "nonneg": [-1, NAN, INF, -INF, HUGE, "abc", None],                  # a finite number ≥ 0
    "fraction": [0, -1, 1.5, NAN, INF, "abc", None],                    # in (0, 1]
    "frac0": [-1, 1.5, NAN, INF, "abc", None],                          # in [0, 1]
    "exponent": [0, 0.5, -1, NAN, INF, "abc", None],                    # a finite exponent p >= 1
    "real": ["abc", None],                                              # any number (a formatter's input)
    "result": [-1, NAN, INF, -INF, "abc", None],                        # a computed quantity: ≥ 0, finite, any size
    "name": ["misspelt", 3, None],                                      # one of a set of names
    "obj": [3, "abc", None],                                            # an object of a given class
    "sizes": [[1.0, NAN], [1.0, -1.0], [1.0, INF], "abc", None],        # a sequence of positive numbers
    "counts": [[1, 0], [1, 2.5], [1, -1], "abc", None],                 # a sequence of whole numbers ≥ 1
    "text": [3, None],                                                  # free text
    "flag": ["yes", 2.5, None],                                         # a bool
    "array": ["abc", None, [[NAN]]],                                    # a numeric array
}
# Words that name the argument in an error besides its own name (a `name` that is a chip's, a `hardware` that is one).
ALIASES = {"hardware": ("chip",), "name": ("chip", "model", "cluster", "name", "dtype"), "text": ("size", "spec"),
           "hlo_dtype": ("dtype",), "run": ("run",), "config": ("config",), "mode": ("efficiency",),
           # a list's error may name the element: expr='A[I' for exprs, chip='v5ex' for chips
           **{f"{one}s": (one,) for one in ("expr", "spec", "chip", "model", "dtype", "cluster", "context", "kind",
                                            "shape", "generation", "batch", "size")}}
OUTCOMES = ("named", "generic", "accepted", "nan", "inf", "negative", "hang", "memory")


def misspell(value: Any) -> str:
    return f"{value}x" if isinstance(value, str) else "misspelt"


def reach(dotted: str) -> Any:
    """The module or face a reader reaches as `sb.<dotted>`: imported by its path, else through the faces (`sb.serving`
    is `scalebook.inference.serving`), else the class or object of that name (`sb.models.TransformerConfig`)."""
    try:
        return importlib.import_module(f"scalebook.{dotted}")
    except ModuleNotFoundError:
        owner = importlib.import_module("scalebook")
        for part in dotted.split("."):
            owner = getattr(owner, part)
        return owner


def resolve(name: str) -> Any:
    """The callable a recipe names, looked up as a reader would: 'module.attr' (sb.training.predict) or
    'module.Class.method' (sb.models.TransformerConfig.flops_per_token, called with the instance as `self`)."""
    module, _, attr = name.rpartition(".")
    return getattr(reach(module), attr)


def public_callables(modules: list[str]) -> dict[str, Any]:
    """{'module.name': callable} over the `__all__` of every module in `modules` (each object once, under the
    module that defines it or, for re-exports, under every module that lists it)."""
    found = {}
    for mod_name in modules:
        module = reach(mod_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if callable(obj) and not isinstance(obj, type(np)) and not name.isupper():
                found[f"{mod_name}.{name}"] = obj
    return found


def public_methods(modules: list[str]) -> dict[str, Any]:
    """{'module.Class.method': function} for every public method (static and class methods included) that a public
    class of `modules` defines itself; an inherited method is listed under the class that defines it. Properties
    are read, not called, and are left out."""
    found = {}
    for name, obj in public_callables(modules).items():
        if isinstance(obj, type) and obj.__module__.startswith("scalebook"):
            for attr, member in vars(obj).items():
                member = getattr(member, "__func__", member)
                if not attr.startswith("_") and inspect.isfunction(member):
                    found[f"{name}.{attr}"] = member
    return found


def missing_recipes(recipes: Recipes, exempt: Mapping[str, str], modules: list[str],
                    public: Callable[[list[str]], dict[str, Any]] = public_callables) -> list[str]:
    """Public callables of `modules` (or what `public` lists, e.g. `public_methods`) with neither a recipe nor an
    exemption. Coverage is by identity: a re-export uses the recipe of the object it re-exports."""
    covered = {id(getattr(resolve(name), "__func__", resolve(name))) for name in [*recipes, *exempt]}
    return sorted(n for n, obj in public(modules).items() if id(obj) not in covered)


def kind_gaps(recipes: Recipes) -> list[str]:
    """Parameters a recipe gives no kind ('name(param)'), and kinds naming no parameter (a `**changes` method's
    keywords count as parameters when the valid call passes them)."""
    gaps = []
    for name, (valid, kinds) in recipes.items():
        params = inspect.signature(resolve(name)).parameters
        gaps += [f"{name}({p.name})" for p in params.values()
                 if p.name not in kinds and p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        keywords = any(p.kind == p.VAR_KEYWORD for p in params.values())
        gaps += [f"{name}: no parameter {extra}" for extra in set(kinds) - set(params)
                 if not (keywords and extra in valid())]
    return gaps


class Hang(Exception):
    pass


@contextlib.contextmanager
def guarded(seconds: int = 2, extra_bytes: int = 2 * 2**30):
    """Run a block with a time limit (SIGALRM) and an address-space cap of `extra_bytes` above today's use."""
    def on_alarm(signum, frame):
        raise Hang()
    old = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    cap = used + extra_bytes if hard == resource.RLIM_INFINITY else min(hard, used + extra_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def numbers_in(obj: Any, depth: int = 0) -> list[float]:
    """Every number reachable in a result (floats, arrays, dataclass fields, dicts, sequences, properties of
    Estimates), to check that none is NaN, inf or negative."""
    if depth > 4 or obj is None or isinstance(obj, (str, bool, type)):
        return []
    if isinstance(obj, numbers.Real):
        return [float(obj)]
    if isinstance(obj, np.ndarray):
        return [float(x) for x in obj.ravel()[:1000]] if obj.dtype.kind in "fiu" else []
    if isinstance(obj, Mapping):
        return [x for v in obj.values() for x in numbers_in(v, depth + 1)]
    if isinstance(obj, (list, tuple)):
        return [x for v in obj[:200] for x in numbers_in(v, depth + 1)]
    if isinstance(obj, sb.Table):
        return [x for row in obj.rows[:200] for x in numbers_in(row, depth + 1)]
    if dataclasses.is_dataclass(obj):
        out = [x for f in dataclasses.fields(obj) if not f.name.startswith("_")
               for x in numbers_in(getattr(obj, f.name), depth + 1)]
        for prop in ("time", "upper", "t_link"):
            if isinstance(getattr(type(obj), prop, None), property):
                out += numbers_in(getattr(obj, prop), depth + 1)
        return out
    return []


def bad_numbers(result: Any, signed: bool = False) -> str:
    """'' if every number in `result` is finite (and non-negative unless `signed`), else which."""
    values = numbers_in(result)
    if any(math.isnan(v) for v in values):
        return "nan"
    if any(math.isinf(v) for v in values):
        return "inf"
    if not signed and any(v < 0 for v in values):
        return "negative"
    return ""


def bad_values(kind: Any, example: Any) -> list[Any]:
    """The bad values of one parameter of `kind` whose valid value is `example` (a misspelling of it for names)."""
    if isinstance(kind, list):
        return kind
    optional = kind.startswith("?")
    values = list(BAD[kind.lstrip("?")])
    if optional:
        values = [v for v in values if v is not None]
    if kind.lstrip("?") == "name":
        values = [misspell(example) if v == "misspelt" else v for v in values]
    return values


def bad_cases(recipes: Recipes) -> list[tuple[str, str, Any]]:
    """(callable, parameter, bad value) for every recipe, parameter and bad value of its kind."""
    cases = []
    for name, (valid, kinds) in sorted(recipes.items()):
        example = valid()
        for param, kind in kinds.items():
            if kind != "-":
                cases += [(name, param, v) for v in bad_values(kind, example.get(param, ""))]
    return cases


def short(result: Any) -> str:
    try:
        return repr(result)[:120]
    except Exception:  # noqa: BLE001
        return object.__repr__(result)


def classify(fn: Callable[..., Any], kwargs: dict[str, Any], param: str,
             judge: Callable[[Any], str] = bad_numbers, seconds: int = 2) -> tuple[str, str]:
    """Run one bad call `fn(**kwargs)` (kwargs[param] the bad value); return (outcome, detail). Outcomes: 'named'
    (the wanted error), 'generic' (another exception, or one not naming the argument), 'accepted', 'nan'/'inf'/
    'negative' (a silent bad result, as `judge` finds it), 'hang', 'memory'."""
    try:
        with guarded(seconds):
            result = fn(**kwargs)
    except Hang:
        return "hang", ""
    except MemoryError:
        return "memory", ""
    except (ValueError, TypeError, KeyError) as exc:
        text = str(exc)
        if param in text or any(a in text for a in ALIASES.get(param, ())):
            return "named", text
        return "generic", f"{type(exc).__name__}: {text}"
    except Exception as exc:  # noqa: BLE001 - any other exception type is what the fuzz counts
        return "generic", f"{type(exc).__name__}: {exc}"
    try:
        problem = judge(result)
    except Exception:  # noqa: BLE001 - a result too broken to read was still accepted
        problem = ""
    return (problem or "accepted"), short(result)


def fuzz(recipes: Recipes, judge: Callable[[str, Any], str],
         after_each: Callable[[str, str, Any, str], None] | None = None) -> tuple[int, Counter[str], list[str]]:
    """Run every bad call of `recipes`, each result judged by `judge(name, result)` ('' when fine), and
    `after_each(name, param, value, outcome)` after each call: (how many calls, each outcome's count, the
    calls not refused by name)."""
    outcomes: Counter[str] = Counter()
    failures = []
    cases = bad_cases(recipes)
    for name, param, value in cases:
        kwargs = recipes[name][0]()
        kwargs[param] = value
        outcome, detail = classify(resolve(name), kwargs, param, judge=lambda result, name=name: judge(name, result))
        outcomes[outcome] += 1
        if outcome != "named":
            failures.append(f"{outcome:9s} {name}({param}={value!r}): {detail[:160]}")
        if after_each is not None:
            after_each(name, param, value, outcome)
    return len(cases), outcomes, failures


def summary(what: str, n_cases: int, n_callables: int, outcomes: Mapping[str, int],
            callables: str = "public callables") -> str:
    """The one line a fuzz prints: how many bad calls, over how many callables, and each outcome's count."""
    return (f"\n{what}: {n_cases} bad calls over {n_callables} {callables}: "
            + ", ".join(f"{k} {outcomes.get(k, 0)}" for k in OUTCOMES))


def invalid_recipes(recipes: Recipes, judge: Callable[[str, Any], str]) -> list[str]:
    """The recipes whose valid call raises, or whose result `judge(name, result)` finds fault with ('' when
    fine): each as 'name: what went wrong'."""
    broken = []
    for name, (valid, _kinds) in sorted(recipes.items()):
        try:
            with guarded(20):
                result = resolve(name)(**valid())
        except Exception as exc:  # noqa: BLE001
            broken.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        if (problem := judge(name, result)):
            broken.append(f"{name}: {problem} in {result!r:.200}")
    return broken
