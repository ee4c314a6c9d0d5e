"""What the XLA compiler really emits for a function: its HLO, its cost analysis and its collectives.

A chapter predicts a sharding plan on paper (which collectives, over which mesh axes, how many bytes);
this module compiles the same computation with JAX and reads the compiled HLO back — after optimisation
and SPMD partitioning, so every collective the partitioner inserted is there — to set the two side by side.

    import scalebook as sb
    sb.setup()                                  # 8 emulated CPU devices, before JAX starts
    from scalebook import xla
    colls = xla.collectives(f, x)               # x: an array or a jax.ShapeDtypeStruct with a sharding
    xla.summarize(colls)                        # kind, group size, groups, shape, bytes per device

How to read the list: one `Collective` per collective op in the HLO text (an async start/done pair counts
once; an op inside a loop body is listed once however often the loop runs). Its `nbytes` is the size of
the op's result on one device: the gathered array for an all-gather, the scattered shard for a
reduce-scatter, the whole reduced array for an all-reduce, the local shard for an all-to-all or a permute.
JAX is imported only when a function here is called.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .tables import Table
from .units import dtype_bytes, fmt_bytes

if TYPE_CHECKING:
    import jax

__all__ = [
    "KINDS", "Collective", "compile", "hlo_text", "cost_analysis", "collectives", "parse_collectives",
    "summarize", "kinds", "element_bytes", "device_mesh", "matmul_collectives", "mlp_train_step",
    "mlp_argument_bytes",
]

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "collective_permute")

_OPCODES = {
    "all-gather": "all_gather", "all-gather-start": "all_gather",
    "reduce-scatter": "reduce_scatter",
    "all-reduce": "all_reduce", "all-reduce-start": "all_reduce",
    "all-to-all": "all_to_all",
    "collective-permute": "collective_permute", "collective-permute-start": "collective_permute",
}
# These async starts return (operand, result, ...): the result is the tuple's second element.
_RESULT_IN_SECOND = {"all-gather-start", "collective-permute-start"}

_OP_RE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[^\s=]+\s*=\s*(?P<shape>.*?)\s(?P<op>"
    + "|".join(sorted(_OPCODES, key=len, reverse=True)) + r")\("
)
_ARRAY_RE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_BITS_RE = re.compile(r"^(?:s|u|f|bf|c)(\d+)")
_LIST_RE = re.compile(r"replica_groups=\{((?:\{[\d,]*\},?)*)\}")
_IOTA_RE = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=")
_MESH_RE = re.compile(r"replica_groups=mesh\[(?P<axes>[^\]]*)\][^{]*\{(?P<group>[^}]*)\}")
_MESH_AXIS_RE = re.compile(r"'?([^'=,\s]+)'?=(\d+)")
_GROUP_AXIS_RE = re.compile(r"'?([^':,\s]+)'?(?::\((\d+)\)(\d+))?")
_PAIRS_RE = re.compile(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")
_DIMS_RE = re.compile(r"dimensions=\{([\d,]*)\}")


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


def _check_callable(fn: Any) -> None:
    if not callable(fn):
        raise ValueError(f"fn must be a function (or a jitted or compiled one), got {type(fn).__name__} {fn!r}")


def compile(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> jax.stages.Compiled:
    """Return `jax.jit(fn)` lowered for `args` (arrays or `jax.ShapeDtypeStruct`s with shardings) and compiled.

    A function that is already jitted is used as it is (its own shardings stay); a `jax.stages.Compiled`
    is returned unchanged, so one compilation can serve `hlo_text`, `cost_analysis` and `collectives`.
    """
    _check_callable(fn)
    import jax

    if isinstance(fn, jax.stages.Compiled):
        return fn
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    return jitted.lower(*args, **kwargs).compile()


def hlo_text(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """Return the compiled HLO of `fn(*args)`: after XLA's optimisations and SPMD partitioning (per-device shapes)."""
    return compile(fn, *args, **kwargs).as_text()


def cost_analysis(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, float]:
    """Return XLA's cost analysis of `fn(*args)` as one dict of floats: 'flops' (FLOPs), 'bytes accessed' (bytes) …

    The counts are per device, for the partitioned program. JAX versions that return one dict per
    program are summed into one.
    """
    raw = compile(fn, *args, **kwargs).cost_analysis()
    entries = raw if isinstance(raw, (list, tuple)) else [raw]
    totals: dict[str, float] = {}
    for entry in entries:
        for key, value in (entry or {}).items():
            if isinstance(value, (int, float)):
                totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def collectives(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Collective]:
    """Return the collectives XLA emitted when compiling `fn(*args)`, in the order of the HLO text."""
    return parse_collectives(hlo_text(fn, *args, **kwargs))


def parse_collectives(hlo: str) -> list[Collective]:
    """Return one `Collective` per collective op in the HLO text `hlo` (the `-done` halves of async pairs skipped)."""
    n_devices = _module_devices(hlo)
    found = []
    for line in hlo.splitlines():
        match = _OP_RE.match(line)
        if match:
            found.append(_collective(match["op"], match["shape"], line.strip(), n_devices))
    return found


def _module_devices(hlo: str) -> int:
    """Return the number of devices the module runs on: num_partitions × replica_count of its header."""
    header = hlo.split("\n", 1)[0]
    counts = [re.search(rf"{name}=(\d+)", header) for name in ("num_partitions", "replica_count")]
    return math.prod(int(m[1]) for m in counts if m)


def _collective(op: str, shape: str, line: str, n_devices: int) -> Collective:
    shape = _strip_layouts(shape)
    if op in _RESULT_IN_SECOND and shape.startswith("("):
        shape = _tuple_elements(shape)[1]
    arrays = _ARRAY_RE.findall(shape)
    group_size, groups = _groups(line, n_devices)
    dims = _DIMS_RE.search(line)
    return Collective(
        kind=_OPCODES[op], group_size=group_size, groups=groups,
        nbytes=sum(_array_bytes(dtype, dims_text, line) for dtype, dims_text in arrays),
        shape=shape, dtype=arrays[0][0] if arrays else "",
        dimensions=tuple(int(d) for d in dims[1].split(",") if d) if dims else None,
        line=line,
    )


def _strip_layouts(shape: str) -> str:
    """Drop the layout braces of an HLO type: 'f32[8,4]{1,0}' → 'f32[8,4]'."""
    return re.sub(r"\{[^{}]*\}", "", shape).strip()


def _tuple_elements(shape: str) -> list[str]:
    """Split a tuple type '(a, (b, c))' into its top-level elements ['a', '(b, c)']."""
    inner, parts, depth, start = shape[1:-1], [], 0, 0
    for i, char in enumerate(inner):
        depth += (char in "([") - (char in ")]")
        if char == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    return [*parts, inner[start:].strip()]


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


def _array_bytes(dtype: str, dims: str, line: str) -> float:
    """Return the bytes of an HLO array type from its element type and dimension list ('256,1024')."""
    return element_bytes(dtype, line) * math.prod(int(d) for d in re.findall(r"\d+", dims))


def _groups(line: str, n_devices: int) -> tuple[int, int]:
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


def _mesh_groups(axes: str, group: str) -> tuple[int, int]:
    """Groups of the mesh form `mesh['a'=4,'b'=2] {'a'}`: the group spans the named axes (or sub-axes)."""
    sizes = {name: int(size) for name, size in _MESH_AXIS_RE.findall(axes)}
    group_size = 1
    for name, _pre, sub_size in _GROUP_AXIS_RE.findall(group):
        group_size *= int(sub_size) if sub_size else sizes[name]
    return group_size, math.prod(sizes.values()) // group_size


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


def kinds(colls: Iterable[Collective]) -> list[str]:
    """Return the sorted distinct kinds of `colls`, e.g. ['all_gather', 'reduce_scatter'], to compare with a plan."""
    return sorted({c.kind for c in colls})


def summarize(colls: Iterable[Collective], title: str = "collectives XLA emitted") -> Table:
    """Return a table of `colls`: kind, group size, groups, dimensions, result shape and bytes per device."""
    rows = [
        {"kind": c.kind, "group size": c.group_size, "groups": c.groups,
         "dimensions": ",".join(map(str, c.dimensions)) if c.dimensions else None,
         "shape": c.shape, "bytes per device": c.nbytes}
        for c in colls
    ]
    columns = ["kind", "group size", "groups", "dimensions", "shape", "bytes per device"]
    return Table(rows, columns=columns, formats={"bytes per device": fmt_bytes}, title=title)


def device_mesh(axes: dict[str, int]) -> jax.sharding.Mesh:
    """Return a JAX mesh with named axes of these sizes, e.g. {"X": 4, "Y": 2}, on the first devices.

    On a laptop these are the emulated CPU devices; on a TPU or GPU runtime with too few chips the CPU
    devices are used, so the compiled program (and its collectives) is the same as on a real slice.
    """
    import jax
    import numpy as np

    n = math.prod(axes.values())
    if not axes or any(not isinstance(v, int) or v < 1 for v in axes.values()):
        raise ValueError(f"axes={axes!r} must map axis names to positive sizes, e.g. {{'X': 4, 'Y': 2}}")
    devices = jax.devices() if jax.device_count() >= n else jax.devices("cpu")
    if len(devices) < n:
        raise ValueError(f"axes={axes!r} needs {n} devices but only {len(devices)} exist; run sb.setup() first")
    return jax.sharding.Mesh(np.array(devices[:n]).reshape(tuple(axes.values())), tuple(axes))


def matmul_collectives(expr: str, axes: dict[str, int], dtype: str = "bf16", **sizes: int) -> list[Collective]:
    """Compile the sharded matmul `expr` (the notation of `scalebook.sharding`) and return XLA's collectives.

    Example: `matmul_collectives("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", {"X": 4, "Y": 2}, I=512, J=256,
    K=1024)`. A and B arrive sharded as written and the output is requested with C's sharding, which is
    exactly the question `sharding.sharded_matmul` answers on paper.
    """
    import jax
    import jax.numpy as jnp

    from .sharding import _parse_expr, local_shape, partition_spec

    A, B, C = _parse_expr(expr)
    mesh = device_mesh(axes)
    names = {a: n for a, n in axes.items()}
    for spec in (A, B, C):
        unknown = sorted(set(spec.used_axes) - set(names))
        if unknown:
            raise ValueError(f"{spec} uses axes {unknown} that axes={axes!r} does not define")
        local_shape(spec, names, sizes)
    letters = {d: chr(ord("a") + i) for i, d in enumerate(dict.fromkeys((*A.dim_names, *B.dim_names)))}
    subscripts = ",".join("".join(letters[d] for d in s.dim_names) for s in (A, B))
    subscripts += "->" + "".join(letters[d] for d in C.dim_names)
    dt = {"bf16": jnp.bfloat16, "fp32": jnp.float32, "f32": jnp.float32}.get(dtype)
    if dt is None:
        raise ValueError(f"dtype={dtype!r}; allowed: bf16, fp32")

    def sharding(spec):
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*partition_spec(spec)))

    args = [jax.ShapeDtypeStruct(tuple(sizes[d] for d in s.dim_names), dt, sharding=sharding(s)) for s in (A, B)]
    fn = jax.jit(lambda a, b: jnp.einsum(subscripts, a, b), out_shardings=sharding(C))
    return collectives(fn, *args)



# --- one training step of a sharded MLP (chapter 5's live lab) --------------------------------------------------

# Per strategy, the PartitionSpecs of: the input In[B, D] (also the target), W_in[D, F] and W_out[F, D] as stored,
# the two weights as used in the matmuls (FSDP gathers them over X just before use), and the hidden
# activations [B, F]. X is the data/FSDP axis and Y the tensor-parallel axis; "tp" shards over X alone.
_MLP_LAYOUTS = {
    "dp": (("X", None), (), (), (), (), ("X", None)),
    "fsdp": (("X", None), ("X", None), ("X", None), (), (), ("X", None)),
    "tp": ((), (None, "X"), ("X", None), (None, "X"), ("X", None), (None, "X")),
    "fsdp_tp": (("X", None), ("X", "Y"), ("Y", "X"), (None, "Y"), ("Y", None), ("X", "Y")),
}


def _mlp_axes(strategy: str, axes: dict[str, int] | None) -> dict[str, int]:
    if strategy not in _MLP_LAYOUTS:
        raise ValueError(f"strategy={strategy!r}; allowed: {list(_MLP_LAYOUTS)}")
    axes = dict(axes or ({"X": 4, "Y": 2} if strategy == "fsdp_tp" else {"X": 8}))
    needed = ["X", "Y"] if strategy == "fsdp_tp" else ["X"]
    if sorted(axes) != needed:
        raise ValueError(f"axes={axes!r}: strategy {strategy!r} needs exactly the mesh axes {needed}")
    return axes


def mlp_argument_bytes(strategy: str, axes: dict[str, int] | None = None, B: int = 256, D: int = 128,
                       F: int = 512, dtype: str = "fp32") -> dict[str, float]:
    """Return the predicted bytes per device of `mlp_train_step`'s inputs: {'weights': …, 'batch': …}.

    The weights W_in and W_out (2·D·F values) are split over the axes that shard them as stored; the
    batch In[B, D] over the axes that shard B. No JAX involved: this is the paper side of the lab.
    """
    from .units import dtype_bytes

    axes = _mlp_axes(strategy, axes)
    x, w_in = _MLP_LAYOUTS[strategy][:2]
    b = dtype_bytes(dtype)
    return {"weights": 2 * D * F * b / _split(w_in, axes), "batch": B * D * b / _split(x, axes)}


def _split(spec: tuple, axes: dict[str, int]) -> int:
    """How many pieces a PartitionSpec-like tuple cuts an array into on a mesh of these axis sizes."""
    return math.prod(axes[a] for a in spec if a)


def mlp_train_step(strategy: str, axes: dict[str, int] | None = None, B: int = 256, D: int = 128, F: int = 512,
                   dtype: str = "fp32") -> tuple[list[Collective], dict[str, float]]:
    """Compile one SGD training step of Out = relu(In · W_in) · W_out on emulated devices; return what XLA did.

    The loss is the mean squared error between Out and In. Strategies ('dp', 'fsdp', 'tp', 'fsdp_tp') shard
    the arrays as chapter 5 describes: dp In[B_X, D] with replicated weights; fsdp In[B_X, D], W_in[D_X, F],
    W_out[F_X, D], each weight gathered just before its matmul; tp In[B, D], W_in[D, F_X], W_out[F_X, D];
    fsdp_tp In[B_X, D], W_in[D_X, F_Y], W_out[F_Y, D_X]. `axes` defaults to {"X": 8} ({"X": 4, "Y": 2} for
    fsdp_tp). Updated weights keep their input sharding.

    Returns (the collectives of the compiled step, `compiled.memory_analysis()` per device in bytes:
    {'arguments', 'outputs', 'temporaries'}).
    """
    import jax
    import jax.numpy as jnp

    axes = _mlp_axes(strategy, axes)
    dt = {"bf16": jnp.bfloat16, "fp32": jnp.float32, "f32": jnp.float32}.get(dtype)
    if dt is None:
        raise ValueError(f"dtype={dtype!r}; allowed: bf16, fp32")
    n = math.prod(axes.values())
    for name, size in (("B", B), ("D", D), ("F", F)):
        if not isinstance(size, int) or size < 1 or size % n:
            raise ValueError(f"{name}={size!r} must be a positive multiple of the {n} devices")
    mesh = device_mesh(axes)

    def sharding(spec: tuple) -> jax.sharding.NamedSharding:
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))

    x_s, w_in_s, w_out_s, w_in_use, w_out_use, h_s = (sharding(s) for s in _MLP_LAYOUTS[strategy])
    pin = jax.lax.with_sharding_constraint

    def loss(params: tuple[jax.Array, jax.Array], x: jax.Array) -> jax.Array:
        w_in, w_out = params
        h = pin(jax.nn.relu(x @ pin(w_in, w_in_use)), h_s)
        out = pin(h @ pin(w_out, w_out_use), x_s)
        return jnp.mean((out - x).astype(jnp.float32) ** 2)

    def step(params: tuple[jax.Array, jax.Array], x: jax.Array) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        value, grads = jax.value_and_grad(loss)(params, x)
        return tuple((p - 0.01 * g).astype(dt) for p, g in zip(params, grads)), value

    args = ((jax.ShapeDtypeStruct((D, F), dt, sharding=w_in_s), jax.ShapeDtypeStruct((F, D), dt, sharding=w_out_s)),
            jax.ShapeDtypeStruct((B, D), dt, sharding=x_s))
    compiled = compile(jax.jit(step, out_shardings=((w_in_s, w_out_s), sharding(()))), *args)
    stats = compiled.memory_analysis()
    memory = {"arguments": float(stats.argument_size_in_bytes), "outputs": float(stats.output_size_in_bytes),
              "temporaries": float(stats.temp_size_in_bytes)}
    return parse_collectives(compiled.as_text()), memory
