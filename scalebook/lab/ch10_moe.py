"""Chapter 10's toy mixture of experts, three ways: a local reference, jit with shardings, and shard_map.

S tokens of width D each go to one of E experts (an [E, D, F] weight); `moe_jit` lets XLA place the
experts over a 1-D mesh, `moe_shard_map` sends each token to its expert's device with an AllToAll and back.
All three agree on `moe_inputs`. JAX is imported only when a function here is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import checks
from .runtime import a_mesh, an_array, device_mesh

if TYPE_CHECKING:
    import jax

__all__ = ["moe_inputs", "moe_local", "moe_jit", "moe_shard_map"]


@checks(S="count", D="count", F="count", E="count", seed="count0")
def moe_inputs(S: int = 256, D: int = 64, F: int = 128, E: int = 16, seed: int = 0) -> tuple[jax.Array, ...]:
    """Return (a[S, D], w[E, D, F], route[S]) for the toy MoE: tokens, expert weights, each token's expert."""
    import jax

    ka, kw, kr = jax.random.split(jax.random.key(seed), 3)
    return (jax.random.normal(ka, (S, D)), jax.random.normal(kw, (E, D, F)) / D**0.5,
            jax.random.randint(kr, (S,), 0, E))


def _grouped_matmul(a: jax.Array, w: jax.Array, route: jax.Array) -> jax.Array:
    """Return out[i] = a[i] · w[route[i]]; tokens with route == len(w) (padding) get zeros. Uses `ragged_dot`."""
    import jax
    import jax.numpy as jnp

    E = w.shape[0]
    order = jnp.argsort(route)
    sizes = jnp.bincount(route, length=E + 1).astype("int32")
    padded = jnp.concatenate([w, jnp.zeros((1, *w.shape[1:]), w.dtype)])
    out_sorted = jax.lax.ragged_dot(a[order], padded, sizes)
    return jnp.zeros_like(out_sorted).at[order].set(out_sorted)


@checks(a=an_array, w=an_array, route=an_array)
def moe_local(a: jax.Array, w: jax.Array, route: jax.Array) -> jax.Array:
    """Return the MoE output out[i] = a[i] · w[route[i]] computed on one device (grouped by `ragged_dot`)."""
    return _grouped_matmul(a, w, route)


@checks(a=an_array, w=an_array, route=an_array, mesh=a_mesh)
def moe_jit(a: jax.Array, w: jax.Array, route: jax.Array, mesh: jax.sharding.Mesh | None = None) -> jax.Array:
    """Return `moe_local`'s output with tokens and experts sharded over all devices, partitioned by jit (Auto mode)."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = mesh or device_mesh({"X": jax.device_count()})
    axis = mesh.axis_names[0]
    rows, experts = NamedSharding(mesh, P(axis)), NamedSharding(mesh, P(axis, None, None))
    fn = jax.jit(moe_local, in_shardings=(rows, experts, rows), out_shardings=rows)
    return fn(a, w, route)


@checks(a=an_array, w=an_array, route=an_array, mesh=a_mesh)
def moe_shard_map(a: jax.Array, w: jax.Array, route: jax.Array, mesh: jax.sharding.Mesh | None = None) -> jax.Array:
    """Return `moe_local`'s output with experts sharded over devices, tokens sent to them by `all_to_all`.

    Each device packs its tokens into one buffer per destination device (capacity = its local token count,
    so none is dropped), exchanges the buffers with `all_to_all`, applies its own experts (`ragged_dot`),
    and sends the results back with a second `all_to_all`.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    mesh = mesh or device_mesh({"X": jax.device_count()})
    axis = mesh.axis_names[0]
    n, E = mesh.shape[axis], w.shape[0]
    if E % n or a.shape[0] % n:
        raise ValueError(f"E={E} experts and S={a.shape[0]} tokens must both split over {n} devices")
    per = E // n

    def local(ab: jax.Array, wb: jax.Array, rb: jax.Array) -> jax.Array:
        s = ab.shape[0]
        dest, slot = rb // per, jnp.arange(s)
        # Buffer [destination, slot]: token t sits at (dest[t], t); empty slots carry expert id `per` (padding).
        send = jnp.zeros((n, s, ab.shape[1]), ab.dtype).at[dest, slot].set(ab)
        ids = jnp.full((n, s), per, rb.dtype).at[dest, slot].set(rb % per)
        recv = jax.lax.all_to_all(send, axis, 0, 0, tiled=True)
        recv_ids = jax.lax.all_to_all(ids, axis, 0, 0, tiled=True)
        done = _grouped_matmul(recv.reshape(n * s, -1), wb, recv_ids.reshape(-1)).reshape(n, s, -1)
        back = jax.lax.all_to_all(done, axis, 0, 0, tiled=True)
        return back[dest, slot]

    fn = jax.shard_map(local, mesh=mesh, in_specs=(P(axis), P(axis), P(axis)), out_specs=P(axis))
    return jax.jit(fn)(a, w, route)
