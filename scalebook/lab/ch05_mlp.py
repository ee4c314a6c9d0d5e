"""Chapter 5's live lab: one SGD training step of a two-layer MLP, compiled under DP, FSDP, TP and FSDP+TP.

`mlp_train_step` compiles the step on the emulated devices and returns the collectives XLA emitted and its
memory analysis; `mlp_argument_bytes` is the paper side (bytes per device of the inputs), so the chapter can
set prediction and compiler side by side. JAX is imported only when a function here is called.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..hlo import Collective, collectives
from ..kinds import mapping_of
from ..units import check_int, checks, dtype_bytes
from .runtime import device_mesh, jnp_dtype
from .xla import compiled

if TYPE_CHECKING:
    import jax

__all__ = ["mlp_train_step", "mlp_argument_bytes"]

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


@checks(B="count", D="count", F="count", dtype="dtype",
        axes=lambda name, value: value if value is None else mapping_of("count", "axis sizes")(name, value))
def mlp_argument_bytes(strategy: str, axes: dict[str, int] | None = None, B: int = 256, D: int = 128,
                       F: int = 512, dtype: str = "fp32") -> dict[str, float]:
    """Return the predicted bytes per device of `mlp_train_step`'s inputs: {'weights': …, 'batch': …}.

    The weights W_in and W_out (2·D·F values) are split over the axes that shard them as stored; the
    batch In[B, D] over the axes that shard B. No JAX involved: this is the paper side of the lab.
    """
    axes = _mlp_axes(strategy, axes)
    x, w_in = _MLP_LAYOUTS[strategy][:2]
    b = dtype_bytes(dtype)
    return {"weights": 2 * D * F * b / _split(w_in, axes), "batch": B * D * b / _split(x, axes)}


def _split(spec: tuple, axes: dict[str, int]) -> int:
    """How many pieces a PartitionSpec-like tuple cuts an array into on a mesh of these axis sizes."""
    return math.prod(axes[a] for a in spec if a)


@checks(B="count", D="count", F="count", dtype="dtype",
        axes=lambda name, value: value if value is None else mapping_of("count", "axis sizes")(name, value))
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
    dt = jnp_dtype(dtype)
    n = math.prod(axes.values())
    for name, size in (("B", B), ("D", D), ("F", F)):
        if check_int(name, size) % n:
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
    program = compiled(jax.jit(step, out_shardings=((w_in_s, w_out_s), sharding(()))), *args)
    stats = program.memory_analysis()
    memory = {"arguments": float(stats.argument_size_in_bytes), "outputs": float(stats.output_size_in_bytes),
              "temporaries": float(stats.temp_size_in_bytes)}
    return collectives(program.as_text()), memory
