"""Chapter 9's program to profile: one training step of a small decoder-only Transformer on a ("data", "model") mesh.

The weights are laid out as in chapter 5's FSDP + TP: every matrix is split over "model" Megatron-style (the
attention heads and the MLP's hidden units) and over "data" along its other dimension (FSDP), the batch over
"data". Each layer's two blocks run under `jax.named_scope("layerN/attention")` and `("layerN/ffw")`, so the
ops of the compiled program, and of its profile, say which block they belong to. A few layers of a few hundred
wide run in well under a second on 8 emulated CPU devices. JAX is imported only when a function is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..units import check_int, checks, is_a
from .runtime import device_mesh

__all__ = ["TinyTransformer", "train_step", "step_inputs"]


@dataclass(frozen=True)
class TinyTransformer:
    """The shapes of the profiled model, in the book's letters: B sequences of T tokens, model width D, MLP width
    F, H attention heads, L layers, a vocabulary of V tokens; `data` x `model` devices."""

    # the batch
    B: int = 16
    T: int = 128
    # the model
    D: int = 256
    F: int = 1024
    H: int = 8
    L: int = 2
    V: int = 512
    # the mesh
    data: int = 4
    model: int = 2

    def __post_init__(self) -> None:
        for name in ("B", "T", "D", "F", "H", "L", "V", "data", "model"):
            object.__setattr__(self, name, check_int(name, getattr(self, name)))
        if self.D % self.H or self.H % self.model or self.F % self.model or self.B % self.data:
            raise ValueError(f"need H | D, model | H, model | F and data | B; got D={self.D}, H={self.H}, "
                             f"F={self.F}, B={self.B}, data={self.data}, model={self.model}")


def _specs() -> dict[str, tuple]:
    """PartitionSpecs of one layer's weights: Megatron TP over 'model', FSDP over 'data' on the other axis."""
    return {"wq": ("data", "model"), "wk": ("data", "model"), "wv": ("data", "model"), "wo": ("model", "data"),
            "w_in": ("data", "model"), "w_out": ("model", "data")}


def _layer(x: Any, p: dict[str, Any], cfg: TinyTransformer, i: int) -> Any:
    """One pre-norm Transformer layer: causal attention then a GELU MLP, each under a named scope."""
    import jax
    import jax.numpy as jnp

    B, T, D, H = x.shape[0], x.shape[1], cfg.D, cfg.H
    with jax.named_scope(f"layer{i}/attention"):
        h = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        q, k, v = ((h @ p[w]).reshape(B, T, H, D // H) for w in ("wq", "wk", "wv"))
        scores = jnp.einsum("bthd,bshd->bhts", q, k) / (D // H) ** 0.5
        mask = jnp.tril(jnp.ones((T, T), bool))
        attn = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
        x = x + jnp.einsum("bhts,bshd->bthd", attn, v).reshape(B, T, D) @ p["wo"]
    with jax.named_scope(f"layer{i}/ffw"):
        h = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        x = x + jax.nn.gelu(h @ p["w_in"]) @ p["w_out"]
    return x


def _loss(params: dict[str, Any], tokens: Any, cfg: TinyTransformer) -> Any:
    """Mean next-token cross-entropy of the model on `tokens` [B, T+1] (int32)."""
    import jax
    import jax.numpy as jnp

    x = params["embed"][tokens[:, :-1]]
    for i, layer in enumerate(params["layers"]):
        x = _layer(x, layer, cfg, i)
    with jax.named_scope("logits"):
        logits = x @ params["embed"].T
        logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))


@checks(lr="size", cfg=is_a(TinyTransformer))
def train_step(cfg: TinyTransformer, lr: float = 1e-2) -> Any:
    """Return the jitted SGD step `(params, tokens) -> (params, loss)` of `cfg`."""
    import jax

    def step(params: dict[str, Any], tokens: Any) -> tuple[dict[str, Any], Any]:
        loss, grads = jax.value_and_grad(_loss)(params, tokens, cfg)
        return jax.tree.map(lambda w, g: w - lr * g, params, grads), loss

    return jax.jit(step)


@checks(seed="count0", cfg=is_a(TinyTransformer))
def step_inputs(cfg: TinyTransformer, seed: int = 0) -> tuple[dict[str, Any], Any, Any]:
    """Return (params, tokens, mesh): random float32 weights and int32 tokens laid out on a
    ("data", "model") mesh of cfg.data x cfg.model devices."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = device_mesh({"data": cfg.data, "model": cfg.model})
    keys = iter(jax.random.split(jax.random.key(seed), 6 * cfg.L + 2))
    shapes = {"wq": (cfg.D, cfg.D), "wk": (cfg.D, cfg.D), "wv": (cfg.D, cfg.D), "wo": (cfg.D, cfg.D),
              "w_in": (cfg.D, cfg.F), "w_out": (cfg.F, cfg.D)}

    def put(shape: tuple[int, ...], spec: tuple) -> Any:
        w = jax.random.normal(next(keys), shape, jnp.float32) / shape[0] ** 0.5
        return jax.device_put(w, NamedSharding(mesh, P(*spec)))

    layers = [{name: put(shape, _specs()[name]) for name, shape in shapes.items()} for _ in range(cfg.L)]
    params = {"embed": put((cfg.V, cfg.D), ("model", "data")), "layers": layers}
    tokens = jax.random.randint(next(keys), (cfg.B, cfg.T + 1), 0, cfg.V, jnp.int32)
    return params, jax.device_put(tokens, NamedSharding(mesh, P("data", None))), mesh
