"""The live lab of chapter 7: a tiny decoder-only Transformer in JAX with a KV cache, and its decode step timed.

Random weights, no positional encoding (the lab times steps, it does not write text), unless the weights carry RoPE
frequencies under "rope" (chapter 8's LLaMA lab adds them): then queries and keys are rotated by their positions.
A decode step writes one cache position in place (the cache is donated) and reads the whole cache, as a serving
kernel does."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from ..hardware.chips import Chip
from ..inference.steps import decode_time
from ..models import TransformerConfig
from ..tables import Table
from ..units import checks, dtype_bytes, fmt_time, is_a
from .bench import calibrate, default_dtype, median_time, progress_bar
from .runtime import an_array, jax_and_numpy, jnp_dtype

__all__ = ["TINY", "init", "prefill", "decode", "decode_step", "measure_decode"]

TINY = TransformerConfig(L=2, D=512, F=2048, N=8, K=2, H=64, V=1024, name="tiny decoder")

Params = dict[str, Any]  # embed [V, D], layers (one dict each: wq [D, N, H] ... w_down [F, D]), unembed [D, V]
Cache = dict[str, Any]  # k, v [L, B, K, capacity, H]; logits [B, V]; length (int32 scalar)


@checks(seed="count0", dtype="dtype", config=is_a(TransformerConfig))
def init(config: TransformerConfig = TINY, seed: int = 0, dtype: str = "fp32") -> Params:
    """Return random weights for `config` (gated MLP, untied embeddings) in `dtype`, scaled by 1/sqrt(fan-in)."""
    if config.tied or not config.gated or config.is_moe or config.mla:
        raise ValueError(f"config={config.name or config!r}: the lab's decoder is dense, gated, GQA and untied")
    jax, jnp = jax_and_numpy()
    L, D, F, N, K, H, V = (getattr(config, c) for c in "LDFNKHV")
    layer = {"wq": (D, N, H), "wk": (D, K, H), "wv": (D, K, H), "wo": (N, H, D), "w_gate": (D, F), "w_up": (D, F),
             "w_down": (F, D)}
    fan_in, kind = {"embed": 1, "wo": N * H, "w_down": F}, jnp_dtype(dtype)
    keys = iter(jax.random.split(jax.random.key(seed), 2 + L * len(layer)))

    def weight(name: str, shape: tuple[int, ...]):
        return (jax.random.normal(next(keys), shape) / fan_in.get(name, D) ** 0.5).astype(kind)

    norms = {"norm1": jnp.ones((D,), kind), "norm2": jnp.ones((D,), kind)}
    layers = [{name: weight(name, shape) for name, shape in layer.items()} | norms for _ in range(L)]
    return {"embed": weight("embed", (V, D)), "layers": layers, "final_norm": jnp.ones((D,), kind),
            "unembed": weight("unembed", (D, V))}


def _norm(x, scale):
    _, jnp = jax_and_numpy()
    return x * scale / jnp.sqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + 1e-6)


def _attend(q, k, v, mask):
    """q [B, T, N, H] against k, v [B, K, S, H]; mask [T, S] (True = may attend). Returns [B, T, N, H]."""
    jax, jnp = jax_and_numpy()
    B, T, N, H = q.shape
    scores = jnp.einsum("btkgh,bksh->bkgts", q.reshape(B, T, k.shape[1], -1, H), k) / H**0.5
    weights = jax.nn.softmax(jnp.where(mask, scores, -1e30).astype(jnp.float32), axis=-1).astype(v.dtype)
    return jnp.einsum("bkgts,bksh->btkgh", weights, v).reshape(B, T, N, H)


def _rotate(x, angles):
    """x [..., H] rotated pairwise (RoPE, halves paired as in Hugging Face's LLaMA) by `angles` [..., H/2] (radians)."""
    _, jnp = jax_and_numpy()
    x1, x2 = jnp.split(x, 2, axis=-1)
    cos, sin = jnp.cos(angles).astype(x.dtype), jnp.sin(angles).astype(x.dtype)
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def _layers(p: Params, x, kv_write, mask, positions):
    """Return the last position's logits [B, V] for x [B, T, D] at `positions` [T]; `kv_write(i, k, v)` stores
    layer i's new keys and values [B, K, T, H] and returns what to attend to."""
    jax, jnp = jax_and_numpy()
    angles = positions[:, None] * p["rope"] if "rope" in p else None  # [T, H/2]
    for i, w in enumerate(p["layers"]):
        h = _norm(x, w["norm1"])
        q = jnp.einsum("btd,dnh->btnh", h, w["wq"])
        k, v = (jnp.einsum("btd,dkh->bkth", h, w[name]) for name in ("wk", "wv"))
        if angles is not None:
            q, k = _rotate(q, angles[:, None]), _rotate(k, angles)
        x = x + jnp.einsum("btnh,nhd->btd", _attend(q, *kv_write(i, k, v), mask), w["wo"])
        h = _norm(x, w["norm2"])
        x = x + (jax.nn.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
    return _norm(x[:, -1], p["final_norm"]) @ p["unembed"]


@checks(capacity="?count", params=is_a(dict), tokens=an_array)
def prefill(params: Params, tokens: Any, capacity: int | None = None) -> Cache:
    """Return the KV cache after the prompt `tokens` [B, T] (int): keys and values of its T positions in a cache of
    `capacity` positions (default T; the rest zeros) and the next-token logits."""
    _, jnp = jax_and_numpy()
    T = tokens.shape[1]
    if (capacity or T) < T:
        raise ValueError(f"capacity={capacity} is smaller than the prompt's {T} tokens")
    pad = ((0, 0), (0, 0), (0, (capacity or T) - T), (0, 0))
    kept: list = []

    def keep(_i, k, v):
        kept.append((jnp.pad(k, pad), jnp.pad(v, pad)))
        return k, v

    logits = _layers(params, params["embed"][tokens], keep, jnp.tril(jnp.ones((T, T), bool)), jnp.arange(T))
    return {"k": jnp.stack([k for k, _ in kept]), "v": jnp.stack([v for _, v in kept]), "logits": logits,
            "length": jnp.int32(T)}


@checks(params=is_a(dict), cache=is_a(dict), token=an_array)
def decode(params: Params, cache: Cache, token: Any) -> Cache:
    """Return the cache after one more token per sequence, `token` [B] (int): the pure step, unjitted and with no
    check that the cache has room, for `jax.jit`, `xla.cost_analysis` or a sharded compile; `decode_step` runs it."""
    jax, jnp = jax_and_numpy()
    at, full = cache["length"], {"k": cache["k"], "v": cache["v"]}

    def write(i, k, v):
        for name, new in (("k", k), ("v", v)):
            full[name] = jax.lax.dynamic_update_slice(full[name], new[None], (i, 0, 0, at, 0))
        return full["k"][i], full["v"][i]

    logits = _layers(params, params["embed"][token][:, None], write, (jnp.arange(cache["k"].shape[3]) <= at)[None],
                     at[None])
    return {"k": full["k"], "v": full["v"], "logits": logits, "length": at + 1}


@cache
def _jitted_decode():
    jax, _ = jax_and_numpy()
    return jax.jit(decode, donate_argnums=1)


@checks(params=is_a(dict), cache=is_a(dict), token=an_array)
def decode_step(params: Params, cache: Cache, token: Any) -> Cache:
    """Return the cache after one more token per sequence, `token` [B] (int); its `logits` predict the next one.
    Jitted; the old cache is donated (its buffers are reused in place, so do not use it again)."""
    if int(cache["length"]) >= cache["k"].shape[3]:
        raise ValueError(f"the cache is full: all {cache['k'].shape[3]} positions are used")
    return _jitted_decode()(params, cache, token)


@checks(context="count", repeats="count", seed="count0", progress="flag", chip=is_a(Chip, type(None)), batches="counts",
        config=is_a(TransformerConfig))
def measure_decode(batches: Sequence[int] = (1, 4, 16, 64), context: int = 512, config: TransformerConfig = TINY,
                   repeats: int = 5, chip: Chip | None = None, seed: int = 0, progress: bool = True) -> Table:
    """Return a table of one decode step's median time per batch size at `context` tokens, beside the prediction
    `inference.decode_time` makes for `chip` (default: `bench.calibrate()` of this device; fp32 on a CPU). Every
    sequence continues one random prompt; the prediction counts the cache's whole capacity, context + repeats + 1."""
    jax, jnp = jax_and_numpy()
    if not batches or min(batches) < 1 or context < 1:
        raise ValueError(f"need batches >= 1 and context >= 1, got batches={batches!r}, context={context!r}")
    dtype, capacity, axis, rows = default_dtype(), context + repeats + 1, {"k": 1, "v": 1, "logits": 0}, []
    chip, params, size = chip or calibrate(dtype, progress=progress), init(config, seed, dtype), dtype_bytes(dtype)
    base = prefill(params, jax.random.randint(jax.random.key(seed), (1, context), 0, config.V), capacity)
    for B in progress_bar(batches, len(batches), "decode steps", progress):
        # fresh copies for B sequences: a donated step must not consume the batch-1 original
        state = {"cache": {name: jnp.array(jnp.repeat(x, B, axis=axis[name]) if name in axis else x, copy=True)
                           for name, x in base.items()}}
        token = jnp.zeros((B,), jnp.int32)

        def step(state=state, token=token):
            state["cache"] = decode_step(params, state["cache"], token)
            return state["cache"]["logits"]

        measured = median_time(step, repeats=repeats)
        predicted = decode_time(config.param_count(), config.kv_bytes_per_token(size) * capacity, B, chip, 1,
                                param_bytes=size, compute_dtype=dtype)
        rows.append({"batch": B, "predicted": predicted.time, "measured": measured, "measured/predicted":
                     measured / predicted.time, "bound": predicted.bound, "tokens/s measured": B / measured})
    return Table(rows, formats={"predicted": fmt_time, "measured": fmt_time, "measured/predicted": "{:.2f}".format,
                                "tokens/s measured": "{:.4g}".format},
                 title=f"decode step of the {config.name or 'decoder'} at context {context}, {dtype}, on {chip.name}")
