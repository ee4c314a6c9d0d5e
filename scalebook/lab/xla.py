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
Reading the text is `scalebook.hlo`'s job; compiling is `compiled`'s (the one way the package compiles a function).
JAX is imported only when a function here is called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..hlo import Collective
from ..hlo import collectives as parse_collectives
from ..sharding import local_shape, parse_expr, partition_spec
from ..tables import Table
from ..units import checks, fmt_bytes, is_a
from .runtime import device_mesh, jnp_dtype

if TYPE_CHECKING:
    import jax

# Each name here is defined here: the HLO reader's names live in `hlo`, the mesh builder in `runtime`, and
# chapter 5's MLP lab in `labs.ch05_mlp` (a lab stands on this module, never the other way round).
__all__ = ["compiled", "hlo_text", "cost_analysis", "collectives", "summarize", "kinds", "matmul_collectives"]

def compiled(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> jax.stages.Compiled:
    """Return `jax.jit(fn)` lowered for `args` (arrays or `jax.ShapeDtypeStruct`s with shardings) and compiled.

    A function that is already jitted is used as it is (its own shardings stay); a `jax.stages.Compiled`
    is returned unchanged, so one compilation can serve the HLO text, the cost analysis and the collectives.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function (or a jitted or compiled one), got {type(fn).__name__} {fn!r}")
    import jax

    if isinstance(fn, jax.stages.Compiled):
        return fn
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    return jitted.lower(*args, **kwargs).compile()


def hlo_text(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """Return the compiled HLO of `fn(*args)`: after XLA's optimisations and SPMD partitioning (per-device shapes)."""
    return compiled(fn, *args, **kwargs).as_text()


def cost_analysis(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, float]:
    """Return XLA's cost analysis of `fn(*args)` as one dict of floats: 'flops' (FLOPs), 'bytes accessed' (bytes) …

    The counts are per device, for the partitioned program. JAX versions that return one dict per
    program are summed into one.
    """
    raw = compiled(fn, *args, **kwargs).cost_analysis()
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



def _collectives(name: str, value: object) -> object:
    """The kind of a list of `Collective`s (what `collectives` returns); errors name `name[i]`."""
    for i, c in enumerate(is_a(list, tuple)(name, value)):
        is_a(Collective)(f"{name}[{i}]", c)
    return value

@checks(colls=_collectives)
def kinds(colls: Iterable[Collective]) -> list[str]:
    """Return the sorted distinct kinds of `colls`, e.g. ['all_gather', 'reduce_scatter'], to compare with a plan."""
    return sorted({c.kind for c in colls})


@checks(colls=_collectives)
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


@checks(dtype="dtype")
def matmul_collectives(expr: str, axes: dict[str, int], dtype: str = "bf16", **sizes: int) -> list[Collective]:
    """Compile the sharded matmul `expr` (the notation of `scalebook.sharding`) and return XLA's collectives.

    Example: `matmul_collectives("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", {"X": 4, "Y": 2}, I=512, J=256,
    K=1024)`. A and B arrive sharded as written and the output is requested with C's sharding, which is
    exactly the question `sharding.sharded_matmul` answers on paper.
    """
    import jax
    import jax.numpy as jnp

    A, B, C = parse_expr(expr)
    mesh = device_mesh(axes)
    for spec in (A, B, C):
        unknown = sorted(set(spec.used_axes) - set(axes))
        if unknown:
            raise ValueError(f"{spec} uses axes {unknown} that axes={axes!r} does not define")
        local_shape(spec, axes, sizes)
    letters = {d: chr(ord("a") + i) for i, d in enumerate(dict.fromkeys((*A.dim_names, *B.dim_names)))}
    subscripts = ",".join("".join(letters[d] for d in s.dim_names) for s in (A, B))
    subscripts += "->" + "".join(letters[d] for d in C.dim_names)
    dt = jnp_dtype(dtype)

    def sharding(spec):
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*partition_spec(spec)))

    args = [jax.ShapeDtypeStruct(tuple(sizes[d] for d in s.dim_names), dt, sharding=sharding(s)) for s in (A, B)]
    fn = jax.jit(lambda a, b: jnp.einsum(subscripts, a, b), out_shardings=sharding(C))
    return collectives(fn, *args)
