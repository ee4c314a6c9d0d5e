"""Chapter 10's exercise 10.Q2 with top-k routing: a router picks k experts per token and weighs their outputs.

`route_top_k` turns router logits into each token's k experts and gate weights (a softmax over the chosen k).
`moe_top_k_reference` is the plain definition, out[i] = sum_j gate[i, j] * a[i] @ w[expert[i, j]], one gathered
matrix per (token, choice). `moe_top_k` is the expert-parallel program: each token is repeated k times (one row
per chosen expert), the rows go through `ch10_moe.moe_shard_map` (AllToAll there and back), and each token's k
results are summed with their gates. JAX is imported only when a function here is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import checks
from .ch10_moe import moe_shard_map
from .runtime import a_mesh, an_array

if TYPE_CHECKING:
    import jax

__all__ = ["top_k_inputs", "route_top_k", "moe_top_k_reference", "moe_top_k"]


@checks(S="count", D="count", F="count", E="count", seed="count0")
def top_k_inputs(S: int = 256, D: int = 64, F: int = 128, E: int = 16, seed: int = 0) -> tuple[jax.Array, ...]:
    """Return (a[S, D], w[E, D, F], router logits[S, E]): tokens, expert weights and the router's scores."""
    import jax

    ka, kw, kr = jax.random.split(jax.random.key(seed), 3)
    return (jax.random.normal(ka, (S, D)), jax.random.normal(kw, (E, D, F)) / D**0.5,
            jax.random.normal(kr, (S, E)))


@checks(k="count", logits=an_array)
def route_top_k(logits: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """Return (experts[S, k], gates[S, k]): each token's k highest-scoring experts and a softmax over their scores."""
    import jax

    if not isinstance(k, int) or not 1 <= k <= logits.shape[-1]:
        raise ValueError(f"k must be an integer from 1 to E={logits.shape[-1]}, got {k!r}")
    scores, experts = jax.lax.top_k(logits, k)
    return experts, jax.nn.softmax(scores, axis=-1)


@checks(a=an_array, w=an_array, experts=an_array, gates=an_array)
def moe_top_k_reference(a: jax.Array, w: jax.Array, experts: jax.Array, gates: jax.Array) -> jax.Array:
    """Return out[S, F] = sum_j gates[:, j] * a @ w[experts[:, j]], gathering one [D, F] matrix per choice
    (plain and memory-hungry: fine for a toy, the definition the sharded program is checked against)."""
    import jax.numpy as jnp

    return jnp.einsum("sk,sd,skdf->sf", gates, a, w[experts])


@checks(a=an_array, w=an_array, experts=an_array, gates=an_array, mesh=a_mesh)
def moe_top_k(a: jax.Array, w: jax.Array, experts: jax.Array, gates: jax.Array,
              mesh: jax.sharding.Mesh | None = None) -> jax.Array:
    """Return the top-k MoE output computed with expert parallelism: the S tokens repeated k times (one row
    per chosen expert) go through `moe_shard_map` (AllToAll to the experts' devices and back), then each
    token's k rows are summed with their gate weights."""
    import jax.numpy as jnp

    S, k = experts.shape
    rows = moe_shard_map(jnp.repeat(a, k, axis=0), w, experts.reshape(-1), mesh)
    return jnp.einsum("skf,sk->sf", rows.reshape(S, k, -1), gates)
