"""Profiles read back as numbers: a captured trace as a table of ops, each beside its roofline time.

`capture` runs a jitted function under `jax.profiler.trace`, reads the trace-viewer JSON the profiler
writes (`plugins/profile/<run>/<host>.trace.json.gz`: one event per XLA op execution, tagged with its
`hlo_op` name and device), and joins each op with its instruction in the compiled HLO, whose shapes give
the op's FLOPs and the bytes it moves. The HLO helpers read one instruction (`parse_op`) and say how much
a tiled layout pads an array (`padding`).

    import scalebook as sb
    sb.setup()
    trace = sb.profiling.capture(f, x, w, chip=sb.bench.calibrate())
    trace.table                                 # op, count, measured time, FLOPs, bytes, roofline, fraction
    sb.profiling.timeline(trace)                # one run, one row per device

On emulated CPU devices the times describe the host CPU and are only indicative. JAX is imported only when
`capture` is called; matplotlib only when `timeline` is.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bench import calibrate
from .hardware.chips import Chip, chip_for_device_kind, get_chip
from .hlo import HloOp, padding, parse_hlo, parse_op, scalebook_dtype
from .plots.profile import timeline
from .roofline import estimate
from .runtime import compile_jit
from .tables import Table
from .units import check_int, fmt_bytes, fmt_flops, fmt_time

# `HloOp`, `parse_op`, `parse_hlo`, `padding` (from `hlo`) and `timeline` (from `plots.profile`) are
# re-exported under the names chapter 9 uses.
__all__ = ["HloOp", "OpEvent", "Trace", "parse_op", "parse_hlo", "padding", "op_costs", "read_trace", "capture",
           "timeline"]

_CALLS_RE = re.compile(r"calls=%?([^\s,]+)")
_CONTRACT_RE = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
# Instructions that move or relabel data without arithmetic.
_NO_MATH = {"parameter", "constant", "bitcast", "copy", "reshape", "transpose", "broadcast", "slice",
            "dynamic-slice", "dynamic-update-slice", "concatenate", "tuple", "get-tuple-element", "iota", "pad",
            "convert", "all-gather", "all-gather-start", "all-gather-done", "collective-permute",
            "collective-permute-start", "collective-permute-done", "all-to-all", "gather", "scatter"}


def _dot_flops(op: HloOp, by_name: dict[str, HloOp]) -> float:
    """FLOPs of a dot: 2 x output elements x contracted size (read from the lhs operand's shape)."""
    match = _CONTRACT_RE.search(op.line)
    lhs = by_name.get(op.operands[0]) if op.operands else None
    if not match or lhs is None:
        return 2.0 * op.size
    contracted = math.prod(lhs.shape[int(d)] for d in match[1].split(",") if d)
    return 2.0 * op.size * contracted


def _op_flops(op: HloOp, by_name: dict[str, HloOp], computations: dict[str, list[HloOp]]) -> float:
    """FLOPs of one op: dots by their shapes, a fusion by the ops it calls, other arithmetic at one per element."""
    if op.opcode in ("dot", "convolution"):
        return _dot_flops(op, by_name)
    if op.opcode == "fusion":
        called = _CALLS_RE.search(op.line)
        body = computations.get(called[1], []) if called else []
        inner = {o.name: o for o in body}
        return sum(_op_flops(o, inner, computations) for o in body)
    if op.opcode in _NO_MATH or op.opcode.endswith("-done"):
        return 0.0
    return float(op.size)


def op_costs(hlo: str) -> dict[str, dict[str, Any]]:
    """Return {op name: {'opcode', 'dtype', 'flops', 'bytes'}} for each op of the entry computation.

    FLOPs come from the op's shapes (a fusion: the ops it calls); bytes are what the op reads and writes
    in memory: its operands' and its result's logical sizes. Counts are per device (the HLO is partitioned).
    """
    computations = parse_hlo(hlo)
    entry = computations["ENTRY"]
    by_name = {op.name: op for op in entry}
    return {
        op.name: {"opcode": op.opcode, "dtype": op.dtype, "flops": _op_flops(op, by_name, computations),
                  "bytes": sum(by_name[o].nbytes for o in op.operands if o in by_name) + op.nbytes}
        for op in entry if op.opcode not in ("parameter", "constant", "tuple", "get-tuple-element", "bitcast")
    }


@dataclass(frozen=True)
class OpEvent:
    """One execution of one XLA op on one device: start and duration in seconds from the trace's start."""

    name: str
    device: int
    start: float
    duration: float
    run: str


def read_trace(path: str | Path) -> list[OpEvent]:
    """Return the XLA op executions (events that carry an `hlo_op`) of a trace-viewer `.trace.json.gz` file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path={str(path)!r} is not a file; expected a *.trace.json.gz written by jax.profiler")
    with gzip.open(path, "rt") as handle:
        events = json.load(handle).get("traceEvents", [])
    ops = [
        OpEvent(e["args"]["hlo_op"], int(e["args"].get("device_ordinal", 0)), e["ts"] * 1e-6, e["dur"] * 1e-6,
                str(e["args"].get("run_id", "")))
        for e in events if e.get("ph") == "X" and "hlo_op" in e.get("args", {})
    ]
    return sorted(ops, key=lambda e: e.start)


@dataclass(frozen=True)
class Trace:
    """A captured profile: the op executions, the compiled HLO they ran, and the per-op table (`table`)."""

    events: tuple[OpEvent, ...]
    hlo: str = field(repr=False)
    table: Table = field(repr=False)
    chip: Chip | None = None

    def _repr_html_(self) -> str:
        return self.table._repr_html_()

    def __str__(self) -> str:
        return str(self.table)


def _peak_dtype(chip: Chip, dtype: str) -> str:
    """The dtype whose peak FLOP/s bounds an op of HLO type `dtype` on `chip` (its own, else bf16, else fp32)."""
    for candidate in (scalebook_dtype(dtype), "bf16", "fp32"):
        try:
            chip.peak_flops(candidate)
            return candidate
        except ValueError:
            continue
    raise ValueError(f"{chip.name} has no peak FLOP/s figure to bound an op in {dtype}")


def _op_table(events: Sequence[OpEvent], hlo: str, chip: Chip) -> Table:
    costs = op_costs(hlo)
    rows = []
    for name in dict.fromkeys(e.name for e in events):
        durations = [e.duration for e in events if e.name == name]
        cost = costs.get(name, {"opcode": "?", "dtype": "f32", "flops": 0.0, "bytes": 0.0})
        roof = estimate(cost["flops"], cost["bytes"], chip, _peak_dtype(chip, cost["dtype"])).time
        measured = statistics.median(durations)
        rows.append({"op": name, "opcode": cost["opcode"], "count": len(durations), "measured": measured,
                     "flops": cost["flops"], "bytes": cost["bytes"], "roofline": roof,
                     "fraction": roof / measured if measured else None})
    rows.sort(key=lambda r: -r["measured"] * r["count"])
    formats = {"measured": fmt_time, "roofline": fmt_time, "flops": fmt_flops, "bytes": fmt_bytes,
               "fraction": lambda f: f"{f:.1%}"}
    return Table(rows, formats=formats, title=f"XLA ops: median measured time vs roofline on {chip.name}")


def _default_chip() -> Chip:
    import jax

    return chip_for_device_kind(jax.devices()[0].device_kind) or calibrate(progress=False)


def capture(fn: Callable[..., Any], *args: Any, repeats: int = 3, chip: Chip | str | None = None) -> Trace:
    """Profile `repeats` warm calls of `jax.jit(fn)(*args)` and return the `Trace`, with one table row per op.

    Each row: the op's name and opcode, how many executions the trace holds (repeats x devices), the median
    measured time (s), FLOPs and bytes per device from the compiled HLO, the roofline time (s) on `chip`
    (default: this device's spec chip, or a calibrated one on a CPU) and the fraction of it achieved.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function, got {type(fn).__name__} {fn!r}")
    repeats = check_int("repeats", repeats)
    import jax

    chip = get_chip(chip) if isinstance(chip, str) else chip or _default_chip()
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    hlo = compile_jit(jitted, *args).as_text()
    jax.block_until_ready(jitted(*args))
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder):
            for _ in range(repeats):
                jax.block_until_ready(jitted(*args))
        files = sorted(Path(folder).rglob("*.trace.json.gz"))
        if not files:
            raise RuntimeError(f"jax.profiler wrote no *.trace.json.gz under {folder}")
        events = read_trace(files[-1])
    return Trace(tuple(events), hlo, _op_table(events, hlo, chip), chip)
