"""One reader of compiled HLO text (no JAX needed): its ops, their shapes, layouts, tiling and replica groups.

XLA prints each instruction as `%name = type opcode(operands), attributes`. This module reads such lines
into `HloOp`s, a whole module into its computations, and the collective ops into `Collective`s (kind,
replica-group size, bytes per device). `xla` filters its collectives from here and `profiling` its op
table; `padding` says how much a tiled layout pads an array.

    from scalebook import hlo
    op = hlo.parse_op("%dot.1 = bf16[8,128]{1,0:T(8,128)(2,1)} dot(%a, %b), lhs_contracting_dims={1}")
    op.shape, op.layout, op.tile           # (8, 128), (1, 0), 'T(8,128)(2,1)'
    hlo.collectives(compiled.as_text())    # every collective, with its replica groups
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .units import check_kind, checks, dtype_bytes

__all__ = [
    "KINDS", "COLLECTIVE_OPCODES", "HloOp", "Collective", "element_bytes", "scalebook_dtype", "parse_op",
    "iter_ops", "parse_hlo", "module_devices", "replica_groups", "collectives", "padding",
    "memory_order",
]

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "collective_permute")

# HLO opcodes of collectives and the kind each one is; an async `-done` half is not listed (its start counts).
COLLECTIVE_OPCODES = {
    "all-gather": "all_gather", "all-gather-start": "all_gather",
    "reduce-scatter": "reduce_scatter",
    "all-reduce": "all_reduce", "all-reduce-start": "all_reduce",
    "all-to-all": "all_to_all",
    "collective-permute": "collective_permute", "collective-permute-start": "collective_permute",
}
# These async starts return (operand, result, ...): the result is the tuple's second element.
_RESULT_IN_SECOND = {"all-gather-start", "collective-permute-start"}

# HLO element types and the scalebook dtype names their sizes and peak FLOP/s are looked up under.
_SCALEBOOK_DTYPES = {
    "f32": "fp32", "bf16": "bf16", "f16": "fp16", "s8": "int8", "u8": "int8", "f8e4m3fn": "fp8", "f8e5m2": "fp8",
    "s32": "fp32", "u32": "fp32", "f64": "fp32", "pred": "int8", "s4": "int4", "u4": "int4",
}

_LINE_RE = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[^\s=]+)\s*=\s*(?P<type>\(.*?\)|[a-z][a-z0-9]*\[[^\]]*\](?:\{[^}]*\})?)\s+"
    r"(?P<opcode>[a-z][a-z0-9\-_]*)\((?P<operands>.*?)\)(?:,|\s*$)"
)
_ARRAY_RE = re.compile(r"^(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\](?:\{(?P<layout>[^}]*)\})?$")
_ARRAYS_RE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_BITS_RE = re.compile(r"^(?:s|u|f|bf|c)(\d+)(?:e\d+m\d+[a-z0-9]*)?$")
_TILE_RE = re.compile(r"\(([\d,\s]*)\)")
_SPACE_RE = re.compile(r"S\((\d+)\)")
_OPERAND_RE = re.compile(r"%([^\s,)]+)")
_COMPUTATION_RE = re.compile(r"^(?:ENTRY\s+)?%?(?P<name>[^\s(]+)\s*\(.*\)\s*->.*\{\s*$")
_LIST_RE = re.compile(r"replica_groups=\{((?:\{[\d,]*\},?)*)\}")
_IOTA_RE = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=")
_MESH_RE = re.compile(r"replica_groups=mesh\[(?P<axes>[^\]]*)\][^{]*\{(?P<group>[^}]*)\}")
_MESH_AXIS_RE = re.compile(r"'?([^'=,\s]+)'?=(\d+)")
_GROUP_AXIS_RE = re.compile(r"'?([^':,\s]+)'?(?::\((\d+)\)(\d+))?")
_PAIRS_RE = re.compile(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")
_DIMS_RE = re.compile(r"dimensions=\{([\d,]*)\}")


@checks(dtype="text", context="text")
def element_bytes(dtype: str, context: str = "") -> float:
    """Return the bytes of one element of an HLO type ('bf16' → 2, 'pred' → 1, 's4' → 0.5, 'f8e4m3fn' → 1),
    or of a scalebook dtype name ('fp32', 'int8'); `context` (an HLO line) goes into the error message."""
    if dtype == "pred":
        return 1.0
    if dtype in ("token", "opaque"):
        return 0.0
    if bits := _BITS_RE.match(dtype):
        return int(bits[1]) / 8
    try:
        return dtype_bytes(dtype)
    except ValueError:
        where = f", in: {context}" if context else ""
        raise ValueError(f"dtype={dtype!r} is not an HLO element type of known size{where}") from None


@checks(hlo_dtype="text")
def scalebook_dtype(hlo_dtype: str) -> str:
    """Return the scalebook dtype name ('bf16', 'fp32', 'int8' …) whose peak FLOP/s bounds an HLO element type."""
    element_bytes(hlo_dtype)  # an HLO element type of known size, or a ValueError naming it
    return _SCALEBOOK_DTYPES.get(hlo_dtype, "bf16")


def _strip_layouts(kind: str) -> str:
    """Drop the layout braces of an HLO type: 'f32[8,4]{1,0}' → 'f32[8,4]'."""
    return re.sub(r"\{[^{}]*\}", "", kind).strip()


def _tuple_elements(kind: str) -> list[str]:
    """Split a tuple type '(a, (b, c))' into its top-level elements ['a', '(b, c)']."""
    inner, parts, depth, start = kind[1:-1], [], 0, 0
    for i, char in enumerate(inner):
        depth += (char in "([") - (char in ")]")
        if char == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    return [*parts, inner[start:].strip()]


def _parse_layout(text: str) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...], int]:
    """Split a layout like '2,1,0:T(8,128)(2,1)S(1)' into (minor-to-major, tiles, memory space)."""
    order, _, rest = text.partition(":")
    minor_to_major = tuple(int(d) for d in order.split(",") if d.strip())
    tiles_text = rest.split("S(")[0]
    tiles = tuple(tuple(int(d) for d in t.split(",") if d.strip()) for t in _TILE_RE.findall(tiles_text))
    space = _SPACE_RE.search(rest)
    return minor_to_major, tiles, int(space[1]) if space else 0


@dataclass(frozen=True)
class HloOp:
    """One HLO instruction: `%name = dtype[shape]{layout:tiling memory-space} opcode(operands), ...`.

    layout: the minor-to-major dimension order, e.g. (1, 0) for a row-major matrix (None if not printed);
    tiling: the tile shapes in order, e.g. ((8, 128), (2, 1)) for `T(8,128)(2,1)`; memory_space: 0 for HBM
    (no `S(n)` printed), 1 for VMEM on a TPU; operands: the operand instruction names; result_type: the
    result's HLO type as printed. A tuple-valued op has dtype 'tuple' and shape ().
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
    result_type: str = field(default="", repr=False)

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


@checks(line="text")
def parse_op(line: str) -> HloOp:
    """Return the `HloOp` an HLO instruction line describes; raise `ValueError` if `line` is not one."""
    match = _LINE_RE.match(line)
    if not match:
        raise ValueError(f"line is not an HLO instruction ('%name = type opcode(...)'): {line.strip()[:120]!r}")
    operands = tuple(_OPERAND_RE.findall(match["operands"]))
    kind, text = match["type"], line.strip()
    if kind.startswith("("):
        return HloOp(match["name"], match["opcode"], "tuple", (), operands=operands, line=text, result_type=kind)
    array = _ARRAY_RE.match(kind)
    if not array:
        raise ValueError(f"cannot read the result type {kind!r} of {text[:120]!r}")
    shape = tuple(int(d) for d in array["dims"].split(",") if d.strip())
    layout, tiling, space = _parse_layout(array["layout"]) if array["layout"] is not None else (None, (), 0)
    return HloOp(match["name"], match["opcode"], array["dtype"], shape, layout, tiling, space, operands, text, kind)


@checks(hlo="text")
def iter_ops(hlo: str) -> Iterator[HloOp]:
    """Yield every instruction of the HLO text `hlo`, in every computation, in the order printed."""
    for line in hlo.splitlines():
        if _LINE_RE.match(line):
            yield parse_op(line)


@checks(hlo="text")
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


@checks(hlo="text")
def module_devices(hlo: str) -> int:
    """Return the number of devices a module runs on: num_partitions × replica_count of its header."""
    header = hlo.split("\n", 1)[0]
    counts = [re.search(rf"{name}=(\d+)", header) for name in ("num_partitions", "replica_count")]
    return math.prod(int(m[1]) for m in counts if m)


# --- collectives and their replica groups ---------------------------------------------------------------------


@dataclass(frozen=True)
class Collective:
    """One collective op of a compiled HLO module.

    kind: one of `KINDS`; group_size: devices that take part in each replica group; groups: how many
    groups run side by side; nbytes: bytes of the op's result on one device; shape and dtype: the
    result's HLO type without layouts (e.g. 'f32[256,1024]'); dimensions: the gathered, scattered or
    exchanged array dimensions where the op names them; line: the HLO instruction as compiled.
    """

    kind: str
    group_size: int
    groups: int
    nbytes: float
    shape: str
    dtype: str
    dimensions: tuple[int, ...] | None = None
    line: str = field(default="", repr=False)


def _permute_groups(pairs: Iterable[tuple[str, str]]) -> tuple[int, int]:
    """Groups of a permute: the devices its source→target pairs connect (a ring over 4 devices is one group of 4)."""
    parent: dict[str, str] = {}

    def root(device: str) -> str:
        while parent.setdefault(device, device) != device:
            device = parent[device]
        return device

    for source, target in pairs:
        parent[root(source)] = root(target)
    sizes: dict[str, int] = {}
    for device in parent:
        sizes[root(device)] = sizes.get(root(device), 0) + 1
    return max(sizes.values(), default=0), len(sizes)


def _mesh_groups(axes: str, group: str) -> tuple[int, int]:
    """Groups of the mesh form `mesh['a'=4,'b'=2] {'a'}`: the group spans the named axes (or sub-axes)."""
    sizes = {name: int(size) for name, size in _MESH_AXIS_RE.findall(axes)}
    group_size = 1
    for name, _pre, sub_size in _GROUP_AXIS_RE.findall(group):
        group_size *= int(sub_size) if sub_size else sizes[name]
    return group_size, math.prod(sizes.values()) // group_size


@checks(line="text", n_devices="count")
def replica_groups(line: str, n_devices: int) -> tuple[int, int]:
    """Return (devices per group, number of groups) of a collective from its replica groups or permute pairs."""
    if pairs := _PAIRS_RE.search(line):
        return _permute_groups(re.findall(r"\{(\d+),(\d+)\}", pairs[1]))
    if mesh := _MESH_RE.search(line):
        return _mesh_groups(mesh["axes"], mesh["group"])
    if iota := _IOTA_RE.search(line):
        return int(iota[2]), int(iota[1])
    listed = _LIST_RE.search(line)
    members = re.findall(r"\{([\d,]*)\}", listed[1]) if listed else []
    if not members:
        return n_devices, 1
    return len(members[0].split(",")), len(members)


def _collective(op: HloOp, n_devices: int) -> Collective:
    """Return the `Collective` of one collective op (its result: the second element of an async start's tuple)."""
    kind = _strip_layouts(op.result_type)
    if op.opcode in _RESULT_IN_SECOND and kind.startswith("("):
        kind = _tuple_elements(kind)[1]
    arrays = _ARRAYS_RE.findall(kind)
    group_size, groups = replica_groups(op.line, n_devices)
    dims = _DIMS_RE.search(op.line)
    nbytes = sum(element_bytes(dtype, op.line) * math.prod(int(d) for d in re.findall(r"\d+", dims_text))
                 for dtype, dims_text in arrays)
    return Collective(
        kind=COLLECTIVE_OPCODES[op.opcode], group_size=group_size, groups=groups, nbytes=nbytes, shape=kind,
        dtype=arrays[0][0] if arrays else "",
        dimensions=tuple(int(d) for d in dims[1].split(",") if d) if dims else None, line=op.line,
    )


@checks(hlo="text")
def collectives(hlo: str) -> list[Collective]:
    """Return one `Collective` per collective op in the HLO text `hlo` (the `-done` halves of async pairs skipped)."""
    n_devices = module_devices(hlo)
    return [_collective(op, n_devices) for op in iter_ops(hlo) if op.opcode in COLLECTIVE_OPCODES]


# --- tiled layouts ---------------------------------------------------------------------------------------------


def parse_tiles(tile: str | Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """Return a layout's tiles, outermost first: 'T(8,128)(2,1)' or ((8, 128), (2, 1)) gives ((8, 128), (2, 1))."""
    if isinstance(tile, str):
        tiles = tuple(tuple(int(d) for d in t.split(",") if d.strip()) for t in _TILE_RE.findall(tile))
        if not tile.startswith("T") or not tiles:
            raise ValueError(f"tile must look like 'T(8,128)' or 'T(8,128)(2,1)', got {tile!r}")
        return tiles
    if not isinstance(tile, Sequence) or not all(isinstance(t, Sequence) and not isinstance(t, str) for t in tile):
        raise ValueError(f"tile={tile!r} must be a string such as 'T(8,128)' or tiles such as ((8, 128), (2, 1))")
    for i, t in enumerate(tile):
        check_kind(f"tile[{i}]", t, "counts")
    return tuple(tuple(int(d) for d in t) for t in tile)


def _pad(shape: Sequence[int], tile: Sequence[int]) -> tuple[int, ...]:
    """Pad the minor len(tile) dimensions of `shape` up to multiples of `tile`."""
    if len(tile) > len(shape) or any(t < 1 for t in tile):
        raise ValueError(f"tile {tuple(tile)} must be positive and have at most as many dims as shape {tuple(shape)}")
    head = tuple(shape[: len(shape) - len(tile)])
    return head + tuple(-(-s // t) * t for s, t in zip(shape[len(shape) - len(tile):], tile))


@checks(dtype="text")
def padding(shape: Sequence[int], tile: str | Sequence[Sequence[int]], dtype: str = "f32") -> dict[str, Any]:
    """Return how a tiled layout stores an array: logical and stored elements and bytes, padded shape, wasted fraction.

    The first tile pads the array's minor dimensions to multiples of itself; each later tile (such as the
    (2,1) of bf16's T(8,128)(2,1), which packs row pairs into 32-bit words) pads the tile before it.
    f32[3,5] with T(2,2) is stored as 4 x 6 = 24 elements for 15: 37.5% of the storage is padding.
    """
    shape = tuple(check_kind("shape", shape, "counts"))
    if not shape:
        raise ValueError(f"shape={shape!r} must be a non-empty tuple of positive sizes")
    tiles = parse_tiles(tile)
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


@checks(shape="counts")
def memory_order(shape: Sequence[int], tile: str | Sequence[Sequence[int]]) -> list[list[int]]:
    """Return, for a 2-D array stored with tiling `tile` (e.g. 'T(2,4)(2,1)'), the position in linear memory
    (in elements from the array's start) of every element of the padded array, row by row (shape padded up to
    whole tiles): tiles row-major, and inside each tile its sub-tiles row-major, down to row-major elements.
    f32[3,5] with T(2,2) is a 4 x 6 grid whose last slot, a padding one, is element 23."""
    if len(shape) != 2:
        raise ValueError(f"shape must have two dimensions, got {tuple(shape)!r}")
    tiles = list(parse_tiles(tile))
    if not tiles or any(len(t) != 2 for t in tiles):
        raise ValueError(f"tile must be 2-D tiles such as 'T(2,2)', got {tile!r}")
    a, b = tiles[0]
    return _order(-(-shape[0] // a) * a, -(-shape[1] // b) * b, tiles)


def _order(h: int, w: int, rest: list[tuple[int, ...]]) -> list[list[int]]:
    """Memory positions of an h x w block laid out by the tiles `rest` (outermost first)."""
    if not rest:
        return [[i * w + j for j in range(w)] for i in range(h)]
    a, b = min(rest[0][0], h), min(rest[0][1], w)
    inner = _order(a, b, rest[1:])
    per_row = w // b
    return [[((i // a) * per_row + j // b) * a * b + inner[i % a][j % b] for j in range(w)] for i in range(h)]
