"""Chapter 10's programs: one matmul in JAX's three sharding modes, collective matmuls, the multi-host layout.

The toy mixture of experts lives in `ch10_moe` and is re-exported here, so `ch10_programs.moe_jit` works.

Everything here runs on the 8 emulated CPU devices of `sb.setup()` and, unchanged, on a TPU or GPU slice.
The mesh is X = 2 by Y = 4 unless a function says otherwise; matrices use the book's letters
(B batch, D model, F feed-forward, E experts, S tokens).

    import scalebook as sb
    sb.setup()
    from scalebook.lab import ch10_programs      # this module, as chapter 10 imports it
    ch10_programs.sharding_modes(64, 128, 256)    # the collectives Auto, Explicit and Manual compile to
    ch10_programs.time_collective_matmul(1024, 2048, 8192)
    ch10_programs.time_overlapped_mlp(1024, 2048, 8192)   # AllGather- and ReduceScatter-style rings chained

JAX is imported only when a function here is called.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..kinds import mapping_of
from ..tables import Table
from ..units import checks, fmt_time
from .bench import median_time
from .ch10_moe import moe_inputs, moe_jit, moe_local, moe_shard_map
from .runtime import a_mesh, an_array, device_mesh
from .xla import collectives, kinds

if TYPE_CHECKING:
    import jax

__all__ = [
    "MESH_SHAPE", "make_mesh", "sharding_modes", "collective_matmul", "bidirectional_collective_matmul",
    "time_collective_matmul", "allreduce_collective_matmul", "reduce_scatter_collective_matmul", "overlapped_mlp",
    "time_overlapped_mlp", "moe_inputs", "moe_local", "moe_jit", "moe_shard_map",
]

MESH_SHAPE = {"X": 2, "Y": 4}


@checks(axes=lambda name, value: value if value is None else mapping_of("count", "axis sizes")(name, value),
        mode=["auto", "explicit"])
def make_mesh(axes: dict[str, int] | None = None, mode: str = "auto") -> jax.sharding.Mesh:
    """Return the chapter's mesh: these named axes (default X=2, Y=4), all of type `mode` ('auto', 'explicit')."""
    return device_mesh(dict(axes or MESH_SHAPE), mode)


def random_on_mesh(mesh: jax.sharding.Mesh, shape: tuple[int, ...], spec: tuple, seed: int = 0) -> jax.Array:
    """Return a random float32 array of `shape` laid out on `mesh` by the PartitionSpec `spec`."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    x = jax.random.normal(jax.random.key(seed), shape, dtype="float32")
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec(*spec)))


@checks(B="count", D="count", F="count")
def sharding_modes(B: int, D: int, F: int) -> Table:
    """Return the collectives of Out[B_X, F] = In[B_X, D_Y] · W[D_Y, F] under Auto, Explicit and Manual modes.

    The contraction dimension D is sharded on both operands, so every device holds a partial sum that must
    be reduced: Auto lets XLA choose; Explicit makes us name the output's sharding (replicated over Y → an
    AllReduce, sharded over Y → a ReduceScatter); Manual (`jax.shard_map`) makes us write the collective.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    X, Y = MESH_SHAPE["X"], MESH_SHAPE["Y"]
    if B % X or D % Y or F % Y:
        raise ValueError(f"B={B}, D={D}, F={F} must split evenly: B over X={X}, D and F over Y={Y}")
    rows = []

    def add(mode: str, how: str, fn: Callable, mesh: jax.sharding.Mesh) -> None:
        x, w = random_on_mesh(mesh, (B, D), ("X", "Y")), random_on_mesh(mesh, (D, F), ("Y", None), seed=1)
        with jax.set_mesh(mesh):
            colls = collectives(jax.jit(fn), x, w)
            out = jax.jit(fn)(x, w)
        rows.append({"mode": mode, "how": how, "collectives": ", ".join(kinds(colls)) or "none",
                     "output sharding": str(out.sharding.spec)})

    auto, explicit = make_mesh(mode="auto"), make_mesh(mode="explicit")
    add("Auto", "jit(x @ w)", lambda x, w: x @ w, auto)
    add("Explicit", "out_sharding=P('X', None)", lambda x, w: jnp.matmul(x, w, out_sharding=P("X", None)), explicit)
    add("Explicit", "out_sharding=P('X', 'Y')", lambda x, w: jnp.matmul(x, w, out_sharding=P("X", "Y")), explicit)
    for how, reduce, out_spec in (("psum", lambda y: jax.lax.psum(y, "Y"), P("X", None)),
                                  ("psum_scatter", lambda y: jax.lax.psum_scatter(y, "Y", scatter_dimension=1,
                                                                                  tiled=True), P("X", "Y"))):
        manual = jax.shard_map(lambda x, w, reduce=reduce: reduce(x @ w), mesh=auto,
                               in_specs=(P("X", "Y"), P("Y", None)), out_specs=out_spec)
        add("Manual", f"shard_map + {how}", manual, auto)
    return Table(rows, columns=["mode", "how", "collectives", "output sharding"],
                 title=f"In[B_X, D_Y] · W[D_Y, F], B={B} D={D} F={F}, mesh X={X} Y={Y}")


def _ring_specs() -> tuple:
    from jax.sharding import PartitionSpec as P

    return (P("X", "Y"), P(None, "Y")), P("X", "Y")


def _varying(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """Mark a fresh per-device array (a loop's accumulator) as differing across every mesh axis, as its updates do."""
    import jax

    return jax.lax.pcast(x, tuple(mesh.axis_names), to="varying")


def _all_gather_ring(xb: jax.Array, wb: jax.Array, mesh: jax.sharding.Mesh, axis: str, n: int) -> jax.Array:
    """Per-device body of `collective_matmul`: return xb · wb[b, F / n], the D-chunks of x travelling round `axis`."""
    import jax
    import jax.numpy as jnp

    me, d = jax.lax.axis_index(axis), xb.shape[1]
    shift = [(i, (i - 1) % n) for i in range(n)]  # device i sends its chunk to i-1, so it next holds chunk i+1

    def step(k: int, carry: tuple) -> tuple:
        chunk, acc = carry
        rows = jax.lax.dynamic_slice_in_dim(wb, ((me + k) % n) * d, d, axis=0)
        nxt = jax.lax.ppermute(chunk, axis, shift)  # no data dependence on the matmul: the two overlap
        return nxt, acc + chunk @ rows

    acc = _varying(jnp.zeros((xb.shape[0], wb.shape[1]), xb.dtype), mesh)
    chunk, acc = jax.lax.fori_loop(0, n - 1, step, (xb, acc))
    rows = jax.lax.dynamic_slice_in_dim(wb, ((me + n - 1) % n) * d, d, axis=0)
    return acc + chunk @ rows


@checks(x=an_array, w=an_array, mesh=a_mesh, axis=["X", "Y"])
def collective_matmul(x: jax.Array, w: jax.Array, mesh: jax.sharding.Mesh | None = None,
                      axis: str = "Y") -> jax.Array:
    """Return x · w for x[B_X, D_Y], w[D, F_Y] → [B_X, F_Y], overlapping the AllGather of x's D with the matmul.

    Each device multiplies the D-chunk of x it holds by the matching rows of its w, and meanwhile passes the
    chunk to its neighbour on the `axis` ring (`ppermute`); after Y steps it has seen every chunk.
    """
    import jax

    mesh = mesh or make_mesh()
    local = partial(_all_gather_ring, mesh=mesh, axis=axis, n=mesh.shape[axis])
    in_specs, out_specs = _ring_specs()
    return jax.shard_map(local, mesh=mesh, in_specs=in_specs, out_specs=out_specs)(x, w)


@checks(x=an_array, w=an_array, mesh=a_mesh, axis=["X", "Y"])
def bidirectional_collective_matmul(x: jax.Array, w: jax.Array, mesh: jax.sharding.Mesh | None = None,
                                    axis: str = "Y") -> jax.Array:
    """Return x · w like `collective_matmul`, but with half of each chunk's rows travelling each way round the ring.

    Each link then carries half the bytes in each direction at every step, so in the bandwidth regime a step's
    communication takes half as long (our answer to the book's 10.Q4).
    """
    import jax
    import jax.numpy as jnp

    mesh = mesh or make_mesh()
    n = mesh.shape[axis]
    left = [(i, (i - 1) % n) for i in range(n)]
    right = [(i, (i + 1) % n) for i in range(n)]

    def local(xb: jax.Array, wb: jax.Array) -> jax.Array:
        me, d, half = jax.lax.axis_index(axis), xb.shape[1], xb.shape[0] // 2
        if xb.shape[0] % 2:
            raise ValueError(f"the local batch {xb.shape[0]} must be even to split the chunk in two")

        def rows(j: Any) -> jax.Array:
            return jax.lax.dynamic_slice_in_dim(wb, (j % n) * d, d, axis=0)

        def step(k: int, carry: tuple) -> tuple:
            top, bottom, acc_top, acc_bottom = carry
            acc_top, acc_bottom = acc_top + top @ rows(me + k), acc_bottom + bottom @ rows(me - k + n)
            return jax.lax.ppermute(top, axis, left), jax.lax.ppermute(bottom, axis, right), acc_top, acc_bottom

        zeros = _varying(jnp.zeros((half, wb.shape[1]), xb.dtype), mesh)
        top, bottom, acc_top, acc_bottom = jax.lax.fori_loop(0, n - 1, step, (xb[:half], xb[half:], zeros, zeros))
        last = n - 1
        return jnp.concatenate([acc_top + top @ rows(me + last), acc_bottom + bottom @ rows(me - last + n)])

    in_specs, out_specs = _ring_specs()
    return jax.shard_map(local, mesh=mesh, in_specs=in_specs, out_specs=out_specs)(x, w)


@checks(B="count", D="count", F="count", repeats="count")
def time_collective_matmul(B: int, D: int, F: int, repeats: int = 5) -> Table:
    """Return median times of x[B_X, D_Y] · w[D, F_Y] by plain jit, collective and bidirectional matmul, with errors.

    Times are from `bench.median_time` on this machine; on emulated CPU devices they are indicative only (the
    "devices" share one CPU, so there are no links to overlap with), on a TPU slice they are real.
    Column 'max |error|' is the largest absolute difference from the plain jitted product.
    """
    import jax
    import jax.numpy as jnp


    mesh = make_mesh()
    x, w = random_on_mesh(mesh, (B, D), ("X", "Y")), random_on_mesh(mesh, (D, F), (None, "Y"), seed=1)
    programs = {
        "jit (AllGather, then matmul)": jax.jit(lambda x, w: x @ w),
        "collective matmul (ppermute ring)": jax.jit(lambda x, w: collective_matmul(x, w, mesh)),
        "bidirectional collective matmul": jax.jit(lambda x, w: bidirectional_collective_matmul(x, w, mesh)),
    }
    reference = programs["jit (AllGather, then matmul)"](x, w)
    rows = []
    for name, fn in programs.items():
        error = float(jnp.max(jnp.abs(fn(x, w) - reference)))
        rows.append({"program": name, "median time": median_time(fn, x, w, repeats=repeats),
                     "collectives": ", ".join(kinds(collectives(fn, x, w))), "max |error|": error})
    return Table(rows, columns=["program", "median time", "collectives", "max |error|"],
                 formats={"median time": fmt_time, "max |error|": lambda v: f"{v:.1e}"},
                 title=f"x[B_X, D_Y] · w[D, F_Y], B={B} D={D} F={F} "
                       f"on {jax.default_backend()} ({jax.device_count()} devices)")


def _reduce_scatter_ring(tb: jax.Array, wb: jax.Array, axis: str, n: int) -> jax.Array:
    """Per-device body: return chunk `me` of the column-chunked sum over `axis` of tb · wb, reduced round a ring.

    tb[b, f] · wb[f, N] is this device's partial product; its N columns fall into n chunks of N / n. The
    accumulator a device holds stands for one chunk: it adds its own partial product for that chunk and passes
    the accumulator to device i-1 (`ppermute`), so the matmul of the next chunk overlaps the permute of this one.
    After n - 1 permutes device `me` holds chunk `me`, summed over all n devices: [b, N / n].
    """
    import jax

    if wb.shape[1] % n:
        raise ValueError(f"the {wb.shape[1]} output columns must split into {n} chunks over axis {axis!r}")
    me, d = jax.lax.axis_index(axis), wb.shape[1] // n
    shift = [(i, (i - 1) % n) for i in range(n)]

    def cols(j: Any) -> jax.Array:
        return jax.lax.dynamic_slice_in_dim(wb, (j % n) * d, d, axis=1)

    def step(k: int, acc: jax.Array) -> jax.Array:
        # the accumulator arriving from device me+1 stands for chunk me+k+1; no data dependence on our matmul
        return jax.lax.ppermute(acc, axis, shift) + tb @ cols(me + k + 1)

    return jax.lax.fori_loop(1, n, step, tb @ cols(me + 1))


@checks(t=an_array, w=an_array, mesh=a_mesh, axis=["X", "Y"])
def reduce_scatter_collective_matmul(t: jax.Array, w: jax.Array, mesh: jax.sharding.Mesh | None = None,
                                     axis: str = "Y") -> jax.Array:
    """Return t · w for t[B_X, F_Y], w[F_Y, D] → [B_X, D_Y], overlapping the ReduceScatter of the partial sums.

    The contraction F is split in both inputs, so each device's t_b · w_b is a partial sum of the whole [b, D]
    output. Instead of computing it all and ReduceScattering it (what jit does), the devices pass accumulators
    round the `axis` ring: at each step a device adds its partial product for the D-chunk its accumulator stands
    for, while the previous accumulator is in flight. Only `ppermute`s (collective-permutes) remain; the same
    bytes move as in a ring ReduceScatter. Our answer to the book's 10.Q3 (down-projection).
    """
    import jax
    from jax.sharding import PartitionSpec as P

    mesh = mesh or make_mesh()
    n = mesh.shape[axis]
    local = partial(_reduce_scatter_ring, axis=axis, n=n)
    return jax.shard_map(local, mesh=mesh, in_specs=(P("X", axis), P(axis, None)), out_specs=P("X", axis))(t, w)


@checks(a=an_array, w=an_array, mesh=a_mesh, axis=["X", "Y"])
def allreduce_collective_matmul(a: jax.Array, w: jax.Array, mesh: jax.sharding.Mesh | None = None,
                                axis: str = "Y") -> jax.Array:
    """Return a · w for a[B_X, D_Y], w[D_Y, F] → [B_X, F] (replicated over `axis`), without a blocking AllReduce.

    An AllReduce is a ReduceScatter followed by an AllGather (chapter 3). The ReduceScatter half runs as in
    `reduce_scatter_collective_matmul`: F-chunks of the partial products are reduced round the ring, each permute
    overlapping the matmul of the next chunk. The AllGather half then passes the finished [b, F / Y] chunks round
    the same ring (Y - 1 more permutes) into the full [b, F] output; with nothing left to compute it overlaps only
    with what follows. Only collective-permutes remain. Our answer to the book's 10.Q3 (AllReduce style).
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    mesh = mesh or make_mesh()
    n = mesh.shape[axis]
    shift = [(i, (i - 1) % n) for i in range(n)]

    def local(ab: jax.Array, wb: jax.Array) -> jax.Array:
        me = jax.lax.axis_index(axis)
        done = _reduce_scatter_ring(ab, wb, axis, n)  # [b, F / n]: chunk `me`, fully reduced
        f = done.shape[1]

        def step(k: int, carry: tuple) -> tuple:
            chunk, out = carry
            chunk = jax.lax.ppermute(chunk, axis, shift)  # now chunk me+k, from device me+1
            return chunk, jax.lax.dynamic_update_slice_in_dim(out, chunk, ((me + k) % n) * f, axis=1)

        out = jax.lax.dynamic_update_slice_in_dim(jnp.zeros((ab.shape[0], n * f), done.dtype), done, me * f, axis=1)
        return jax.lax.fori_loop(1, n, step, (done, out))[1]

    # Every device ends with the same [b, F]; the permutes' types still say "varying over Y", so the check is off.
    return jax.shard_map(local, mesh=mesh, in_specs=(P("X", axis), P(axis, None)), out_specs=P("X", None),
                         check_vma=False)(a, w)


@checks(x=an_array, w_in=an_array, w_out=an_array, mesh=a_mesh, axis=["X", "Y"])
def overlapped_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: jax.sharding.Mesh | None = None,
                   axis: str = "Y") -> jax.Array:
    """Return relu(x · w_in) · w_out for x[B_X, D_Y], w_in[D, F_Y], w_out[F_Y, D] → [B_X, D_Y], all overlapped.

    One `shard_map`: the up-projection is the AllGather-style ring of `collective_matmul` (x's D-chunks travel),
    giving the hidden activations [B_X, F_Y] with no collective; relu is local; the down-projection is the
    ReduceScatter-style ring of `reduce_scatter_collective_matmul` (accumulators travel). The block compiles to
    collective-permutes only, every one of them beside a matmul it can hide under.
    """
    import jax
    from jax.sharding import PartitionSpec as P

    mesh = mesh or make_mesh()
    n = mesh.shape[axis]

    def local(xb: jax.Array, wi: jax.Array, wo: jax.Array) -> jax.Array:
        h = jax.nn.relu(_all_gather_ring(xb, wi, mesh, axis, n))
        return _reduce_scatter_ring(h, wo, axis, n)

    in_specs = (P("X", axis), P(None, axis), P(axis, None))
    return jax.shard_map(local, mesh=mesh, in_specs=in_specs, out_specs=P("X", axis))(x, w_in, w_out)


@checks(B="count", D="count", F="count", repeats="count")
def time_overlapped_mlp(B: int, D: int, F: int, repeats: int = 5) -> Table:
    """Return median times of the MLP block relu(x[B_X, D_Y] · w_in[D, F_Y]) · w_out[F_Y, D] → [B_X, D_Y].

    Two programs: plain jit (an AllGather before the up-projection, a reduction after the down-projection) and
    `overlapped_mlp` (two ppermute rings). Weights are scaled by 1/sqrt(fan-in) so outputs are of order one.
    Column 'median time' is in seconds from `bench.median_time` (indicative only on emulated CPU devices);
    'max |error|' is the largest absolute difference from the plain jitted block.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P


    mesh = make_mesh()
    X, Y = mesh.shape["X"], mesh.shape["Y"]
    if B % X or D % Y or F % Y:
        raise ValueError(f"B={B}, D={D}, F={F} must split evenly: B over X={X}, D and F over Y={Y}")
    x = random_on_mesh(mesh, (B, D), ("X", "Y"))
    w_in = random_on_mesh(mesh, (D, F), (None, "Y"), seed=1) / D**0.5
    w_out = random_on_mesh(mesh, (F, D), ("Y", None), seed=2) / F**0.5
    programs = {
        "jit MLP (AllGather, matmuls, reduce)": jax.jit(lambda x, wi, wo: jax.nn.relu(x @ wi) @ wo,
                                                        out_shardings=NamedSharding(mesh, P("X", "Y"))),
        "overlapped MLP (two ppermute rings)": jax.jit(lambda x, wi, wo: overlapped_mlp(x, wi, wo, mesh)),
    }
    reference = programs["jit MLP (AllGather, matmuls, reduce)"](x, w_in, w_out)
    rows = []
    for name, fn in programs.items():
        error = float(jnp.max(jnp.abs(fn(x, w_in, w_out) - reference)))
        rows.append({"program": name, "median time": median_time(fn, x, w_in, w_out, repeats=repeats),
                     "collectives": ", ".join(kinds(collectives(fn, x, w_in, w_out))),
                     "max |error|": error})
    return Table(rows, columns=["program", "median time", "collectives", "max |error|"],
                 formats={"median time": fmt_time, "max |error|": lambda v: f"{v:.1e}"},
                 title=f"MLP relu(x[B_X, D_Y] · w_in[D, F_Y]) · w_out[F_Y, D], B={B} D={D} F={F} "
                       f"on {jax.default_backend()} ({jax.device_count()} devices)")
