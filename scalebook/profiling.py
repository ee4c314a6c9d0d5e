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

from .hardware import Chip, chip_for_device_kind, get_chip
from .roofline import estimate
from .tables import Table
from .units import fmt_bytes, fmt_flops, fmt_time
from .xla import element_bytes

__all__ = ["HloOp", "OpEvent", "Trace", "parse_op", "parse_hlo", "padding", "op_costs", "read_trace", "capture",
           "timeline"]

# HLO element types and the scalebook dtype names their sizes and peaks are looked up under.
_HLO_DTYPES = {
    "f32": "fp32", "bf16": "bf16", "f16": "fp16", "s8": "int8", "u8": "int8", "f8e4m3fn": "fp8", "f8e5m2": "fp8",
    "s32": "fp32", "u32": "fp32", "f64": "fp32", "pred": "int8", "s4": "int4", "u4": "int4",
}

_LINE_RE = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[^\s=]+)\s*=\s*(?P<type>\(.*?\)|[a-z][a-z0-9]*\[[^\]]*\](?:\{[^}]*\})?)\s+"
    r"(?P<opcode>[a-z][a-z0-9\-_]*)\((?P<operands>.*?)\)(?:,|\s*$)"
)
_ARRAY_RE = re.compile(r"^(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\](?:\{(?P<layout>[^}]*)\})?$")
_TILE_RE = re.compile(r"\(([\d,\s]*)\)")
_SPACE_RE = re.compile(r"S\((\d+)\)")
_OPERAND_RE = re.compile(r"%([^\s,)]+)")
_CALLS_RE = re.compile(r"calls=%?([^\s,]+)")
_CONTRACT_RE = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
_COMPUTATION_RE = re.compile(r"^(?:ENTRY\s+)?%?(?P<name>[^\s(]+)\s*\(.*\)\s*->.*\{\s*$")
# Instructions that move or relabel data without arithmetic.
_NO_MATH = {"parameter", "constant", "bitcast", "copy", "reshape", "transpose", "broadcast", "slice",
            "dynamic-slice", "dynamic-update-slice", "concatenate", "tuple", "get-tuple-element", "iota", "pad",
            "convert", "all-gather", "all-gather-start", "all-gather-done", "collective-permute",
            "collective-permute-start", "collective-permute-done", "all-to-all", "gather", "scatter"}


@dataclass(frozen=True)
class HloOp:
    """One HLO instruction: `%name = dtype[shape]{layout:tiling memory-space} opcode(operands), ...`.

    layout: the minor-to-major dimension order, e.g. (1, 0) for a row-major matrix (None if not printed);
    tiling: the tile shapes in order, e.g. ((8, 128), (2, 1)) for `T(8,128)(2,1)`; memory_space: 0 for HBM
    (no `S(n)` printed), 1 for VMEM on a TPU; operands: the operand instruction names. A tuple-valued op has
    dtype 'tuple' and shape ().
    """

    name: str
    opcode: str
    dtype: str
    shape: tuple[int, ...]
    layout: tuple[int, ...] | None = None
    tiling: tuple[tuple[int, ...], ...] = ()
    memory_space: int = 0
    operands: tuple[str, ...] = ()
    line: str = field(default="", repr=False)

    @property
    def size(self) -> int:
        """Number of logical elements of the result."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> float:
        """Logical bytes of the result (tiling padding not counted; 0 for a tuple)."""
        return self.size * element_bytes(self.dtype) if self.dtype != "tuple" else 0.0

    @property
    def tile(self) -> str:
        """The tiling as HLO prints it, e.g. 'T(8,128)(2,1)' ('' if untiled)."""
        return "T" + "".join(f"({','.join(map(str, t))})" for t in self.tiling) if self.tiling else ""


def _parse_layout(text: str) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...], int]:
    """Split a layout like '2,1,0:T(8,128)(2,1)S(1)' into (minor-to-major, tiles, memory space)."""
    order, _, rest = text.partition(":")
    minor_to_major = tuple(int(d) for d in order.split(",") if d.strip())
    tiles_text = rest.split("S(")[0]
    tiles = tuple(tuple(int(d) for d in t.split(",") if d.strip()) for t in _TILE_RE.findall(tiles_text))
    space = _SPACE_RE.search(rest)
    return minor_to_major, tiles, int(space[1]) if space else 0


def parse_op(line: str) -> HloOp:
    """Return the `HloOp` an HLO instruction line describes; raise `ValueError` if `line` is not one."""
    if not isinstance(line, str):
        raise ValueError(f"line must be a string of HLO text, got {type(line).__name__}")
    match = _LINE_RE.match(line)
    if not match:
        raise ValueError(f"line is not an HLO instruction ('%name = type opcode(...)'): {line.strip()[:120]!r}")
    operands = tuple(_OPERAND_RE.findall(match["operands"]))
    kind = match["type"]
    if kind.startswith("("):
        return HloOp(match["name"], match["opcode"], "tuple", (), operands=operands, line=line.strip())
    array = _ARRAY_RE.match(kind)
    if not array:
        raise ValueError(f"cannot read the result type {kind!r} of {line.strip()[:120]!r}")
    shape = tuple(int(d) for d in array["dims"].split(",") if d.strip())
    layout, tiling, space = _parse_layout(array["layout"]) if array["layout"] is not None else (None, (), 0)
    return HloOp(match["name"], match["opcode"], array["dtype"], shape, layout, tiling, space, operands,
                 line.strip())


def parse_hlo(hlo: str) -> dict[str, list[HloOp]]:
    """Return every computation of an HLO module as {computation name: its ops}; the entry one is under 'ENTRY'."""
    computations: dict[str, list[HloOp]] = {}
    current: list[HloOp] | None = None
    for line in hlo.splitlines():
        header = _COMPUTATION_RE.match(line)
        if header:
            current = computations.setdefault("ENTRY" if line.startswith("ENTRY") else header["name"], [])
        elif line.strip() == "}":
            current = None
        elif current is not None and _LINE_RE.match(line):
            current.append(parse_op(line))
    if "ENTRY" not in computations:
        raise ValueError("hlo has no ENTRY computation; pass the text of a whole module (compiled.as_text())")
    return computations


def _tiles(tile: str | Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    if isinstance(tile, str):
        tiles = tuple(tuple(int(d) for d in t.split(",") if d.strip()) for t in _TILE_RE.findall(tile))
        if not tile.startswith("T") or not tiles:
            raise ValueError(f"tile must look like 'T(8,128)' or 'T(8,128)(2,1)', got {tile!r}")
        return tiles
    return tuple(tuple(int(d) for d in t) for t in tile)


def _pad(shape: Sequence[int], tile: Sequence[int]) -> tuple[int, ...]:
    """Pad the minor len(tile) dimensions of `shape` up to multiples of `tile`."""
    if len(tile) > len(shape) or any(t < 1 for t in tile):
        raise ValueError(f"tile {tuple(tile)} must be positive and have at most as many dims as shape {tuple(shape)}")
    head = tuple(shape[: len(shape) - len(tile)])
    return head + tuple(-(-s // t) * t for s, t in zip(shape[len(shape) - len(tile):], tile))


def padding(shape: Sequence[int], tile: str | Sequence[Sequence[int]], dtype: str = "f32") -> dict[str, Any]:
    """Return how a tiled layout stores an array: logical and stored elements and bytes, padded shape, wasted fraction.

    The first tile pads the array's minor dimensions to multiples of itself; each later tile (such as the
    (2,1) of bf16's T(8,128)(2,1), which packs row pairs into 32-bit words) pads the tile before it.
    f32[3,5] with T(2,2) is stored as 4 x 6 = 24 elements for 15: 37.5% of the storage is padding.
    """
    shape = tuple(int(s) for s in shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"shape must be a non-empty tuple of positive sizes, got {shape!r}")
    tiles = _tiles(tile)
    if not tiles:
        raise ValueError(f"tile must name at least one tile, got {tile!r}")
    padded = _pad(shape, tiles[0])
    inner = tiles[0]
    for sub in tiles[1:]:
        inner = _pad(inner, sub)
    n_tiles = math.prod(padded) // math.prod(tiles[0])
    stored = n_tiles * math.prod(inner)
    logical = math.prod(shape)
    size = element_bytes(dtype)
    return {"shape": shape, "padded_shape": padded, "logical": logical, "stored": stored,
            "logical_bytes": logical * size, "stored_bytes": stored * size,
            "waste": (stored - logical) / stored, "overhead": stored / logical}


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
    for candidate in (_HLO_DTYPES.get(dtype, "bf16"), "bf16", "fp32"):
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

    from .bench import calibrate

    return chip_for_device_kind(jax.devices()[0].device_kind) or calibrate(progress=False)


def capture(fn: Callable[..., Any], *args: Any, repeats: int = 3, chip: Chip | str | None = None) -> Trace:
    """Profile `repeats` warm calls of `jax.jit(fn)(*args)` and return the `Trace`, with one table row per op.

    Each row: the op's name and opcode, how many executions the trace holds (repeats x devices), the median
    measured time (s), FLOPs and bytes per device from the compiled HLO, the roofline time (s) on `chip`
    (default: this device's spec chip, or a calibrated one on a CPU) and the fraction of it achieved.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function, got {type(fn).__name__} {fn!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    import jax

    chip = get_chip(chip) if isinstance(chip, str) else chip or _default_chip()
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    hlo = jitted.lower(*args).compile().as_text()
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


def timeline(trace: Trace, run: int = -1) -> Any:
    """Return a matplotlib figure of one run of the trace (the last by default): one row of op bars per device."""
    from matplotlib.patches import Patch

    from .plots.base import figure

    if not isinstance(trace, Trace) or not trace.events:
        raise ValueError("trace must be a Trace with events (from profiling.capture)")
    runs = list(dict.fromkeys(e.run for e in trace.events))
    if not -len(runs) <= run < len(runs):
        raise ValueError(f"run={run!r} is out of range; the trace holds {len(runs)} runs")
    events = [e for e in trace.events if e.run == runs[run]]
    t0 = min(e.start for e in events)
    names = list(dict.fromkeys(e.name for e in events))
    fig, ax = figure((8.0, 0.4 * len({e.device for e in events}) + 2.0))
    colors = {name: f"C{i % 10}" for i, name in enumerate(names)}
    for e in events:
        ax.barh(e.device, e.duration * 1e3, left=(e.start - t0) * 1e3, color=colors[e.name], height=0.7)
    ax.set_xlabel("time since the run's first op (ms)")
    ax.set_ylabel("device")
    ax.set_title(f"Trace viewer, one run: {len(names)} XLA ops on {len({e.device for e in events})} device(s)")
    ax.invert_yaxis()
    handles = [Patch(color=colors[name], label=name) for name in names]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="HLO op")
    return fig
