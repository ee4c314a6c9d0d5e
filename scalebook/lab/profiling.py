"""Profiles read back as numbers: a captured trace as a table of ops, each beside its roofline time.

`capture` runs a jitted function under `jax.profiler.trace`, reads the trace-viewer JSON the profiler
writes (`plugins/profile/<run>/<host>.trace.json.gz`: one event per XLA op execution, tagged with its
`hlo_op` name and device), and joins each op with its instruction in the compiled HLO, whose shapes give
the op's FLOPs and the bytes it moves. Reading one instruction (`hlo.parse_op`) and how much a tiled layout
pads an array (`hlo.padding`) are `scalebook.hlo`'s.

    import scalebook as sb
    sb.setup()
    trace = sb.profiling.capture(f, x, w, chip=sb.bench.calibrate())
    trace.table                                 # op, count, measured time, FLOPs, bytes, roofline, fraction
    sb.plots.profile.timeline(trace)            # the figure: one run, one row per device

On emulated CPU devices the times describe the host CPU and are only indicative. JAX is imported only when
`capture` is called.
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

from ..hardware.chips import Chip, chip_for_device_kind, get_chip
from ..hlo import HloOp, parse_hlo, scalebook_dtype
from ..roofline import estimate
from ..tables import Table
from ..units import checks, fmt_bytes, fmt_flops, fmt_time, is_a
from .bench import calibrate
from .runtime import a_function
from .xla import compiled

# Each name here is defined here: reading one HLO instruction and a tiled layout's padding are `hlo`'s.
__all__ = ["OpEvent", "Trace", "op_costs", "op_kind", "op_scope", "fusion_text", "parameters", "read_trace", "capture",
           "KINDS"]

_CALLS_RE = re.compile(r"calls=%?([^\s,]+)")
_OP_NAME_RE = re.compile(r'op_name="([^"]*)"')
_SHARDING_RE = re.compile(r"sharding=\{devices=\[([\d,]+)\][^}]*?(last_tile_dim_replicate)?\}")
_JVP_RE = re.compile(r"jvp\(((?:[^()]|\([^()]*\))*)\)")
_COLLECTIVE_OPCODES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all",
                       "ragged-all-to-all")
# What an op spends its time on, as the trace viewer's colours would say: the kinds a timeline distinguishes.
# 'control flow' (a while loop, a call) contains other ops' executions: it is listed, never summed or drawn.
KINDS = ("matmul", "collective", "elementwise", "data movement", "control flow")
_MOVES = ("copy", "transpose", "broadcast", "slice", "dynamic-slice", "dynamic-update-slice", "concatenate", "pad",
          "gather", "scatter", "reshape", "bitcast", "iota", "convert", "select-and-scatter", "sort")
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


def _called_opcodes(op: HloOp, computations: dict[str, list[HloOp]]) -> set[str]:
    """Return the opcodes an op runs: its own, and for a fusion (or a call) those of the computation it calls."""
    called = _CALLS_RE.search(op.line)
    body = computations.get(called[1], []) if called else []
    return {op.opcode}.union(*(_called_opcodes(o, computations) for o in body))


@checks(opcodes=is_a(str, set, frozenset, list, tuple))
def op_kind(opcodes: set[str] | str) -> str:
    """Return what an op spends its time on, one of `KINDS`, from the opcodes it runs (a fusion's included):
    'collective' if it communicates, 'matmul' if it contains a dot or convolution, 'data movement' if it only
    copies, slices or re-lays out data, else 'elementwise'."""
    codes = {opcodes} if isinstance(opcodes, str) else set(opcodes)
    bare = {c.removesuffix("-start").removesuffix("-done") for c in codes}
    if bare & {"while", "conditional", "call"}:
        return "control flow"
    if bare & set(_COLLECTIVE_OPCODES):
        return "collective"
    if bare & {"dot", "convolution"}:
        return "matmul"
    if bare - {"fusion", "parameter", "constant", "tuple", "get-tuple-element"} <= set(_MOVES):
        return "data movement"
    return "elementwise"


@checks(line="text")
def op_scope(line: str) -> str:
    """Return the `jax.named_scope` an HLO instruction came from, read from its `op_name` metadata, with
    ' (bwd)' for the backward pass: 'jit(step)/transpose(jvp(layer0/ffw))/dot_general' -> 'layer0/ffw (bwd)'.
    A fusion of ops from several scopes is named after its first; an op outside any scope gets ''."""
    match = _OP_NAME_RE.search(line)
    if not match:
        return ""
    name = match[1]
    while name.startswith("jit(") and "/" in name:  # the jitted functions around the op
        name = name.split("/", 1)[1]
    name = name.lstrip("(").split(":")[0]
    inside = _JVP_RE.search(name)
    scope = inside[1] if inside else (name.rsplit("/", 1)[0] if "/" in name else "")
    scope = re.sub(r"^jit\((.*)\)$", r"\1", scope)
    return f"{scope} (bwd)".strip() if name.startswith("transpose(") else scope


def op_costs(hlo: str) -> dict[str, dict[str, Any]]:
    """Return {op name: {'opcode', 'kind', 'scope', 'dtype', 'flops', 'bytes'}} for each op of the program: the
    entry computation's and those of the computations it calls (a while loop's body runs ops the trace shows).

    FLOPs come from the op's shapes (a fusion: the ops it calls); bytes are what the op reads and writes
    in memory: its operands' and its result's logical sizes. Counts are per device (the HLO is partitioned).
    `kind` is `op_kind` of what the op runs, `scope` the named scope it came from (`op_scope`).
    """
    computations = parse_hlo(hlo)
    costs = {}
    for ops in computations.values():
        by_name = {op.name: op for op in ops}
        for op in ops:
            if op.opcode in ("parameter", "constant", "tuple", "get-tuple-element", "bitcast"):
                continue
            costs[op.name] = {"opcode": op.opcode, "kind": op_kind(_called_opcodes(op, computations)),
                              "scope": op_scope(op.line), "dtype": op.dtype,
                              "flops": _op_flops(op, by_name, computations),
                              "bytes": sum(by_name[o].nbytes for o in op.operands if o in by_name) + op.nbytes}
    return costs


def parameters(hlo: str) -> Table:
    """Return the entry computation's parameters as a table: the name JAX gave each (from its metadata), its
    per-device shape, how many pieces its sharding cuts each dimension into, and the global shape they imply
    (per-device size x pieces). This is how a dump's per-device shapes are read back into a model's shapes."""
    rows = []
    for op in parse_hlo(hlo)["ENTRY"]:
        if op.opcode != "parameter":
            continue
        name = _OP_NAME_RE.search(op.line)
        sharding = _SHARDING_RE.search(op.line)
        pieces = [int(d) for d in sharding[1].split(",")] if sharding else [1] * len(op.shape)
        pieces = pieces[:len(op.shape)] if sharding and sharding[2] else pieces
        pieces = pieces if len(pieces) == len(op.shape) else [1] * len(op.shape)
        rows.append({"name": re.sub(r"[\\']", "", name[1]) if name else op.name, "dtype": op.dtype,
                     "per device": op.shape, "pieces": tuple(pieces),
                     "global": tuple(d * k for d, k in zip(op.shape, pieces))})
    return Table(rows, title="parameters: per-device shapes and the global shapes their shardings imply")


def fusion_text(hlo: str, name: str) -> str:
    """Return the instruction `name` of the entry computation and, for a fusion, the computation it calls:
    the HLO the graph viewer draws for one op, layouts included."""
    computations = parse_hlo(hlo)
    op = next((o for o in computations["ENTRY"] if o.name == name), None)
    if op is None:
        raise ValueError(f"name={name!r} is not an instruction of the entry computation")
    called = _CALLS_RE.search(op.line)
    body = computations.get(called[1], []) if called else []
    return "\n".join([op.line, *(f"  {o.line}" for o in body)])


@dataclass(frozen=True)
class OpEvent:
    """One execution of one XLA op on one device: start and duration in seconds from the trace's start."""

    name: str
    device: int
    start: float
    duration: float
    run: str


@checks(path=is_a(str, Path))
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

    @property
    def devices(self) -> int:
        """Number of devices the trace holds events for."""
        return len({e.device for e in self.events})

    @property
    def runs(self) -> int:
        """Number of profiled calls (runs) the trace holds."""
        return len({e.run for e in self.events})

    def breakdown(self, by: str = "kind") -> dict[str, float]:
        """Return the measured time per call and device (s) summed by a column of the table ('kind', 'scope',
        'opcode'), largest first: where the time went (control-flow ops, which contain others, left out)."""
        if by not in self.table.columns:
            raise ValueError(f"by={by!r} is not a column of the op table; columns: {self.table.columns}")
        share = max(1, self.devices * self.runs)
        totals: dict[str, float] = {}
        for row in self.table:
            if row["kind"] == "control flow":
                continue
            key = row[by] or "(none)"
            totals[key] = totals.get(key, 0.0) + row["measured"] * row["count"] / share
        return dict(sorted(totals.items(), key=lambda kv: -kv[1]))

    def row(self, op: str) -> dict[str, Any]:
        """Return the table row of one op by name."""
        found = next((r for r in self.table if r["op"] == op), None)
        if found is None:
            raise ValueError(f"op={op!r} is not in this trace; ops: {self.table.column('op')[:8]} ...")
        return found

    def _repr_html_(self) -> str:
        return self.table._repr_html_()

    def __str__(self) -> str:
        return str(self.table)


def _peak_dtype(chip: Chip, dtype: str) -> str:
    """The dtype whose peak FLOP/s bounds an op of HLO type `dtype` on `chip` (its own, else bf16, else fp32);
    an op without one element type (a tuple, such as a while loop's state) is bounded by bf16, else fp32."""
    own = (scalebook_dtype(dtype),) if dtype != "tuple" else ()
    for candidate in (*own, "bf16", "fp32"):
        try:
            chip.peak_flops(candidate)
            return candidate
        except ValueError:
            continue
    raise ValueError(f"{chip.name} has no peak FLOP/s figure to bound an op in {dtype}")


def op_table(events: Sequence[OpEvent], hlo: str, chip: Chip) -> Table:
    """Return a table of the traced ops, one row per op: its median measured time beside its roofline on `chip`."""
    costs = op_costs(hlo)
    rows = []
    for name in dict.fromkeys(e.name for e in events):
        durations = [e.duration for e in events if e.name == name]
        cost = costs.get(name, {"opcode": "?", "kind": "elementwise", "scope": "", "dtype": "f32", "flops": 0.0,
                                "bytes": 0.0})
        roof = estimate(cost["flops"], cost["bytes"], chip, _peak_dtype(chip, cost["dtype"])).time
        measured = statistics.median(durations)
        rows.append({"op": name, "opcode": cost["opcode"], "kind": cost["kind"], "scope": cost["scope"],
                     "count": len(durations), "measured": measured,
                     "flops": cost["flops"], "bytes": cost["bytes"], "roofline": roof,
                     "fraction": roof / measured if measured else None})
    rows.sort(key=lambda r: -r["measured"] * r["count"])
    formats = {"measured": fmt_time, "roofline": fmt_time, "flops": fmt_flops, "bytes": fmt_bytes,
               "fraction": lambda f: f"{f:.1%}"}
    return Table(rows, formats=formats, title=f"XLA ops: median measured time vs roofline on {chip.name}")


def _default_chip() -> Chip:
    import jax

    return chip_for_device_kind(jax.devices()[0].device_kind) or calibrate(progress=False)


@checks(repeats="count", fn=a_function, chip=is_a(str, Chip, type(None)))
def capture(fn: Callable[..., Any], *args: Any, repeats: int = 3, chip: Chip | str | None = None) -> Trace:
    """Profile `repeats` warm calls of `jax.jit(fn)(*args)` and return the `Trace`, with one table row per op.

    Each row: the op's name and opcode, how many executions the trace holds (repeats x devices), the median
    measured time (s), FLOPs and bytes per device from the compiled HLO, the roofline time (s) on `chip`
    (default: this device's spec chip, or a calibrated one on a CPU) and the fraction of it achieved.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function, got {type(fn).__name__} {fn!r}")
    import jax

    chip = get_chip(chip) if isinstance(chip, str) else chip or _default_chip()
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    hlo = compiled(jitted, *args).as_text()
    jax.block_until_ready(jitted(*args))
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder):
            for _ in range(repeats):
                jax.block_until_ready(jitted(*args))
        files = sorted(Path(folder).rglob("*.trace.json.gz"))
        if not files:
            raise RuntimeError(f"jax.profiler wrote no *.trace.json.gz under {folder}")
        events = read_trace(files[-1])
    return Trace(tuple(events), hlo, op_table(events, hlo, chip), chip)
