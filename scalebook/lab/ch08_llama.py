"""Chapter 8's Question 4 as a live lab: LLaMA 3-8B inference written from scratch in JAX, in five steps.

The program is chapter 7's decoder (`ch07_decoder`: grouped-query attention, a SwiGLU MLP, RMSNorm, a KV cache)
with LLaMA's rotary position embedding added. At full size it is only traced (`jax.eval_shape`: shapes, no memory);
what runs is LLaMA 3-8B cut down by `scaled_down`, which keeps its 32 query and 8 key/value heads and its MLP's ratio
F/D and shrinks its depth, head width and vocabulary until a step takes milliseconds on two CPU cores. The weights
are random (the book asks for Meta's; nothing here downloads). The book's five steps, each set beside what the
package predicts:

1. the weights, counted (`full_size`: traced at full size, all, attention and MLP, and the KV cache);
2. the forward pass and greedy sampling without a cache (`Llama.greedy(cached=False)`; `Llama.flops`: XLA's cost
   analysis of the compiled prefill beside `TransformerConfig.flops_per_token`);
3. a KV cache (`Llama.greedy()`: the same tokens; a decode step's FLOPs; `Llama.time_decode`: its time beside
   `inference.decode_time` for this device's measured roofs);
4. separate prefill and decode servers (`Llama.disaggregated`: one prompt at a time on one device, its cache sent to
   a batched decode server split over others; the bytes sent and the AllReduces XLA emits beside the package's);
5. Flash Attention in Pallas (`flash_attention`, `Llama.flash`: equal to JAX's attention; it moves only the values
   of the package's fused-attention roofline).

JAX is imported only when a function here is called.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..hardware.chips import Chip
from ..hardware.topology import TpuMesh
from ..inference.steps import decode_time, kv_cache_bytes
from ..models import TransformerConfig, get_model
from ..roofline import attention
from ..sharding import sharded_matmul
from ..tables import Table
from ..units import checks, dtype_bytes, fmt_bytes, fmt_flops, fmt_time, is_a
from . import ch07_decoder
from .bench import median_time
from .runtime import an_array, device_mesh, jax_and_numpy, jnp_dtype
from .xla import collectives, compiled, cost_analysis

__all__ = ["ROPE_THETA", "scaled_down", "init", "parameter_count", "full_size", "step_flops", "flash_attention",
           "Llama", "Served"]

# LLaMA 3's RoPE base frequency: "rope_theta": 500000.0 in meta-llama/Meta-Llama-3-8B's config.json (the LLaMA 3
# paper, Dubey et al. 2024, section 3.1.1: raised to 500,000 from LLaMA 2's 10,000).
ROPE_THETA = 500_000.0

Params = dict[str, Any]  # chapter 7's weights (embed, layers, final_norm, unembed) and "rope" [H/2], not learned
ATTENTION, MLP = ("wq", "wk", "wv", "wo"), ("w_gate", "w_up", "w_down")  # a layer's matrices, by block


@dataclass(frozen=True)
class Served:
    """What the two servers of `Llama.disaggregated` did: the tokens decoded [B, steps]; the KV-cache bytes the
    prefill server sent for each prompt and the package's `kv_cache_bytes` for one prompt; one decode step's
    collectives beside `sharded_matmul`'s plan."""

    tokens: Any
    sent: list[float]
    predicted_sent: float
    collectives: Table


@checks(L="count", H="count", V="count")
def scaled_down(model: TransformerConfig | str = "llama3-8b", L: int = 2, H: int = 16, V: int = 2048
                ) -> TransformerConfig:
    """Return `model` with L layers, heads of width H and a vocabulary of V tokens, keeping its N query and K
    key/value heads and its MLP's F/D: D = N·H, F = D·(F/D) (rounded to a whole number)."""
    full = get_model(model)
    if H % 2:
        raise ValueError(f"H={H} must be even: RoPE rotates the head's dimensions in pairs")
    D = full.N * H
    return dataclasses.replace(full, L=L, D=D, F=round(full.F * D / full.D), H=H, V=V,
                               name=f"{full.name or 'model'} scaled down (L={L}, H={H}, V={V})")


@checks(seed="count0", dtype="dtype", theta="size", config=is_a(TransformerConfig))
def init(config: TransformerConfig, seed: int = 0, dtype: str = "fp32", theta: float = ROPE_THETA) -> Params:
    """Return random weights for `config` (chapter 7's `init`) with the RoPE frequencies theta^(-2i/H), i < H/2
    (radians per position, fp32), under "rope"."""
    _, jnp = jax_and_numpy()
    rope = theta ** (-jnp.arange(0, config.H, 2, dtype=jnp.float32) / config.H)
    return ch07_decoder.init(config, seed, dtype) | {"rope": rope}


@checks(params=is_a(dict))
def parameter_count(params: Params) -> int:
    """Return how many weights `params` holds (arrays or `jax.ShapeDtypeStruct`s), the RoPE frequencies left out."""
    jax, _ = jax_and_numpy()
    return sum(int(leaf.size) for leaf in jax.tree.leaves({k: v for k, v in params.items() if k != "rope"}))


@checks(context="count", batch="count", dtype="dtype")
def full_size(model: TransformerConfig | str = "llama3-8b", context: int = 8192, batch: int = 1,
              dtype: str = "bf16") -> Table:
    """Return the full-size model's parameters, weight bytes and KV-cache bytes (`batch` sequences of `context`
    tokens) as the traced JAX program holds them, beside the package's counts. Nothing is allocated."""
    jax, jnp = jax_and_numpy()
    config = get_model(model)
    shapes = jax.eval_shape(lambda: init(config, dtype=dtype))
    tokens = jax.ShapeDtypeStruct((batch, context), jnp.int32)
    cache = jax.eval_shape(lambda p, t: ch07_decoder.prefill(p, t), shapes, tokens)
    size, count, parts = dtype_bytes(dtype), parameter_count(shapes), config.components()
    rows = [("parameters", count, config.param_count()),
            ("of which attention", _layer_weights(shapes, ATTENTION), parts["attention"][0]),
            ("of which MLP", _layer_weights(shapes, MLP), parts["MLP (dense)"][0]),
            (f"weight bytes ({dtype})", count * size, config.param_bytes(dtype)),
            (f"KV cache, {batch} x {context} tokens ({dtype})", (cache["k"].size + cache["v"].size) * size,
             kv_cache_bytes(config, context, batch, bytes_per_value=size))]
    return Table([{"quantity": q, "JAX program": lab, "package": book} for q, lab, book in rows],
                 formats={"JAX program": "{:,.0f}".format, "package": "{:,.0f}".format},
                 title=f"{config.name}, traced at full size")


def _layer_weights(params: Params, names: tuple[str, ...]) -> int:
    """How many weights the layers of `params` hold in the matrices `names`, over all layers."""
    return sum(int(layer[name].size) for layer in params["layers"] for name in names)


@checks(config=is_a(TransformerConfig), batch="count", tokens="count", context="count")
def step_flops(config: TransformerConfig, batch: int, tokens: int, context: int) -> float:
    """Return the FLOPs the package predicts for one step of this lab: `batch` sequences of `tokens` new tokens,
    each attending to all `context` positions (the lab masks rather than skips), logits for the last token only."""
    per_token = config.flops_per_token(context, training=False, causal=False, logits=False)
    return batch * (tokens * per_token + 2 * config.D * config.V)


@checks(q=an_array, k=an_array, v=an_array, block="count")
def flash_attention(q: Any, k: Any, v: Any, block: int = 16) -> Any:
    """Return causal attention [B, T, N, H] of queries q [B, T, N, H] over keys and values k, v [B, T, K, H]
    (grouped: query head n reads key/value head n // (N/K)), as a Pallas kernel that never stores the scores: each
    program takes `block` queries and walks the keys `block` at a time, keeping a running maximum and sum of its
    softmax (Flash Attention). On a CPU, Pallas interprets the kernel; T must be a multiple of `block`."""
    jax, jnp = jax_and_numpy()
    from jax.experimental import pallas as pl

    (B, T, N, H), K = q.shape, k.shape[2]
    if T % block or k.shape != (B, T, K, H) or v.shape != k.shape or N % K:
        raise ValueError(f"block={block} must divide T, and k, v must be [B, T, K, H] with K | N; got q {q.shape}, "
                         f"k {k.shape}, v {v.shape}")

    def kernel(q_ref: Any, k_ref: Any, v_ref: Any, o_ref: Any) -> None:
        rows = pl.program_id(2) * block + jnp.arange(block)[:, None]

        def one_block(j: Any, carry: tuple) -> tuple:
            top, total, out = carry
            keys = pl.ds(j * block, block)
            s = q_ref[0, 0] @ k_ref[0, 0, keys].T / H**0.5
            s = jnp.where(j * block + jnp.arange(block)[None, :] <= rows, s, -jnp.inf)
            new_top = jnp.maximum(top, s.max(axis=-1))
            p, fade = jnp.exp(s - new_top[:, None]), jnp.exp(top - new_top)
            return new_top, total * fade + p.sum(axis=-1), out * fade[:, None] + p @ v_ref[0, 0, keys]

        start = (jnp.full((block,), -jnp.inf, q.dtype), jnp.zeros((block,), q.dtype), jnp.zeros((block, H), q.dtype))
        _, total, out = jax.lax.fori_loop(0, pl.program_id(2) + 1, one_block, start)  # later keys are all masked
        o_ref[0, 0] = out / total[:, None]

    group = N // K
    tile = pl.BlockSpec((1, 1, block, H), lambda b, n, i: (b, n, i, 0))
    whole = pl.BlockSpec((1, 1, T, H), lambda b, n, i: (b, n // group, 0, 0))
    call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((B, N, T, H), q.dtype), grid=(B, N, T // block),
                          in_specs=[tile, whole, whole], out_specs=tile,
                          interpret=jax.default_backend() == "cpu")
    return call(*(x.transpose(0, 2, 1, 3) for x in (q, k, v))).transpose(0, 2, 1, 3)  # heads before T, and back


class Llama:
    """The scaled-down LLaMA's weights, a random prompt of `batch` x `prompt` tokens and its two compiled steps,
    prefill (into a cache of `prompt + steps` positions) and decode; what the five steps of Question 4 check."""

    @checks(batch="count", prompt="count", steps="count", seed="count0", dtype="dtype",
            config=is_a(TransformerConfig, type(None)))
    def __init__(self, config: TransformerConfig | None = None, batch: int = 2, prompt: int = 32, steps: int = 3,
                 seed: int = 0, dtype: str = "fp32") -> None:
        jax, jnp = jax_and_numpy()
        self.config, self.dtype, self.steps = config or scaled_down(), dtype, steps
        self.params = jax.jit(lambda: init(self.config, seed, dtype))()  # one compile, not one per weight
        self.prompt = jax.random.randint(jax.random.key(seed + 1), (batch, prompt), 0, self.config.V, jnp.int32)
        self.capacity = prompt + steps

    @cached_property
    def prefill(self) -> Any:
        """The compiled prefill: (params, tokens [B, prompt]) -> cache of `capacity` positions."""
        jax, _ = jax_and_numpy()
        return compiled(jax.jit(ch07_decoder.prefill, static_argnums=2), self.params, self.prompt, self.capacity)

    @cached_property
    def decode(self) -> Any:
        """The compiled decode step: (params, cache, token [B]) -> cache, not donated (the cache can be reused)."""
        jax, _ = jax_and_numpy()
        cache = self.prefill(self.params, self.prompt)
        return compiled(jax.jit(ch07_decoder.decode), self.params, cache, self.prompt[:, 0])

    def flops(self) -> Table:
        """Return prefill's and one decode step's FLOPs as XLA's cost analysis counts them, beside `step_flops`."""
        B, T = self.prompt.shape
        rows = []
        for step, program, tokens in (("prefill", self.prefill, T), ("decode", self.decode, 1)):
            xla_flops = cost_analysis(program)["flops"]
            predicted = step_flops(self.config, B, tokens, T if step == "prefill" else self.capacity)
            rows.append({"step": step, "XLA": xla_flops, "package": predicted, "XLA / package": xla_flops / predicted})
        return Table(rows, formats={"XLA": fmt_flops, "package": fmt_flops, "XLA / package": "{:.4f}".format},
                     title=f"FLOPs of {self.config.name}, batch {B}, prompt {T}")

    @checks(cached="flag")
    def greedy(self, cached: bool = True) -> Any:
        """Return the `steps` tokens [B, steps] greedy decoding appends to the prompt: with the KV cache (one
        decode step per token) or without it (the whole sequence through prefill again for every token)."""
        jax, jnp = jax_and_numpy()
        whole = jax.jit(ch07_decoder.prefill)
        chosen, cache, sequence = [], self.prefill(self.params, self.prompt), self.prompt
        chosen.append(jnp.argmax(cache["logits"], axis=-1).astype(jnp.int32))
        for _ in range(self.steps - 1):
            if cached:
                cache = self.decode(self.params, cache, chosen[-1])
            else:
                sequence = jnp.concatenate([sequence, chosen[-1][:, None]], axis=1)
                cache = whole(self.params, sequence)
            chosen.append(jnp.argmax(cache["logits"], axis=-1).astype(jnp.int32))
        return jnp.stack(chosen, axis=1)

    @checks(decode_devices="count")
    def disaggregated(self, decode_devices: int = 4) -> Served:
        """Serve the prompts with two servers on separate devices: a prefill server (the last device) takes one
        prompt at a time and sends its KV cache to a decode server (the first `decode_devices` devices, the model
        split over them Megatron-style: heads, cache and MLP hidden units), which decodes all sequences as one batch.
        Returns the tokens, the cache bytes sent per prompt and the decode step's collectives beside the package."""
        cfg, (B, T) = self.config, self.prompt.shape
        if cfg.K % decode_devices or cfg.F % decode_devices:
            raise ValueError(f"decode_devices={decode_devices} must divide the K={cfg.K} key/value heads and the "
                             f"F={cfg.F} hidden units it splits")
        jax, jnp = jax_and_numpy()
        if jax.device_count() <= decode_devices:
            raise ValueError(f"decode_devices={decode_devices} leaves no device for prefill: this host has "
                             f"{jax.device_count()} (run sb.setup() first)")
        mesh, prefill_device = device_mesh({"X": decode_devices}), jax.devices()[-1]
        weights = jax.device_put(self.params, prefill_device)
        prefill_one = jax.jit(ch07_decoder.prefill)
        sent = [prefill_one(weights, jax.device_put(self.prompt[b:b + 1], prefill_device)) for b in range(B)]
        params, cache = _megatron(self.params, mesh), _assemble(sent, self.capacity, mesh)
        program = compiled(jax.jit(ch07_decoder.decode), params, cache, self.prompt[:, 0])
        chosen = [jnp.argmax(cache["logits"], axis=-1).astype(jnp.int32)]
        for _ in range(self.steps - 1):
            cache = program(params, cache, chosen[-1])
            chosen.append(jnp.argmax(cache["logits"], axis=-1).astype(jnp.int32))
        plan = sharded_matmul("A[B, F_X] @ W[F_X, D] -> C[B, D]", TpuMesh("v5e", X=decode_devices), B=B, F=cfg.F,
                              D=cfg.D).collectives[0]
        steps = Table([{"kind": c.kind, "group size": c.group_size, "values": c.nbytes / dtype_bytes(self.dtype),
                        "planned kind": plan.kind, "planned values": plan.nbytes / dtype_bytes("bf16")}
                       for c in collectives(program)],
                      title=f"one decode step over {decode_devices} devices: what XLA emitted, what the plan says "
                            f"(2 per layer, {2 * cfg.L} in all)")
        return Served(jnp.stack(chosen, axis=1), [float(c["k"].nbytes + c["v"].nbytes) for c in sent],
                      kv_cache_bytes(cfg, T, 1, bytes_per_value=dtype_bytes(self.dtype)), steps)

    @checks(block="count")
    def flash(self, block: int = 16) -> Table:
        """Return `flash_attention` on random queries, keys and values of this model's heads over the prompt, beside
        JAX's own causal attention (`jax.nn.dot_product_attention`), and the values the kernel reads and writes
        beside those of the package's fused-attention roofline (`roofline.attention`: Q, K, V and the output)."""
        jax, jnp = jax_and_numpy()
        cfg, (B, T) = self.config, self.prompt.shape
        keys = jax.random.split(jax.random.key(T), 3)
        shapes = ((B, T, cfg.N, cfg.H), (B, T, cfg.K, cfg.H), (B, T, cfg.K, cfg.H))
        q, k, v = (jax.random.normal(key, shape, jnp_dtype(self.dtype)) for key, shape in zip(keys, shapes))
        out = jax.jit(flash_attention, static_argnums=3)(q, k, v, block)
        moved = sum(x.size for x in (q, k, v, out))
        book = attention(T, T, cfg.N, cfg.K, cfg.H, B=B).bytes / dtype_bytes("bf16")
        return Table([{"largest difference": float(jnp.abs(out - jax.nn.dot_product_attention(q, k, v,
                                                                                                is_causal=True)).max()),
                       "values moved": moved, "package": book, "scores never stored": B * cfg.N * T * T}],
                     formats={"largest difference": "{:.1e}".format},
                     title=f"Flash Attention in Pallas: {cfg.N} query and {cfg.K} key/value heads, {B} x {T} tokens")

    @checks(chip=is_a(Chip), repeats="count")
    def time_decode(self, chip: Chip, repeats: int = 5) -> Table:
        """Return one decode step's median time here beside `inference.decode_time` on `chip` (this device's
        measured roofs: `bench.calibrate`), reading the weights and the whole cache of `capacity` positions."""
        cache = self.prefill(self.params, self.prompt)
        B, size = self.prompt.shape[0], dtype_bytes(self.dtype)
        measured = median_time(self.decode, self.params, cache, self.prompt[:, 0], repeats=repeats)
        predicted = decode_time(self.config.param_count(), self.config.kv_bytes_per_token(size) * self.capacity, B,
                                chip, 1, param_bytes=size, compute_dtype=self.dtype)
        return Table([{"batch": B, "weights": self.config.param_count() * size, "predicted": predicted.time,
                       "bound": predicted.bound, "measured": measured, "measured / predicted":
                       measured / predicted.time}],
                     formats={"weights": fmt_bytes, "predicted": fmt_time, "measured": fmt_time,
                              "measured / predicted": "{:.2f}".format},
                     title=f"one decode step of {self.config.name}, {self.dtype}, on {chip.name}")


def _megatron(params: Params, mesh: Any) -> Params:
    """`params` placed on `mesh` (one axis, "X"): query and key/value heads and the MLP's hidden units split over X,
    everything else replicated."""
    jax, _ = jax_and_numpy()
    P = jax.sharding.PartitionSpec
    split = {"wq": P(None, "X"), "wk": P(None, "X"), "wv": P(None, "X"), "wo": P("X"), "w_gate": P(None, "X"),
             "w_up": P(None, "X"), "w_down": P("X")}

    def put(x: Any, spec: Any = None) -> Any:
        return jax.device_put(x, jax.sharding.NamedSharding(mesh, spec or P()))

    layers = [{name: put(w, split.get(name, P())) for name, w in layer.items()} for layer in params["layers"]]
    return {name: put(x) for name, x in params.items() if name != "layers"} | {"layers": layers}


def _assemble(caches: list[Any], capacity: int, mesh: Any) -> Any:
    """One batched cache of `capacity` positions on `mesh`, its key/value heads split over X, from the caches of
    single prompts (each [L, 1, K, T, H]) that the prefill server sent; the new positions are zeros."""
    jax, jnp = jax_and_numpy()
    P, T = jax.sharding.PartitionSpec, caches[0]["k"].shape[3]
    kv, whole = jax.sharding.NamedSharding(mesh, P(None, None, "X")), jax.sharding.NamedSharding(mesh, P())
    pad = ((0, 0), (0, 0), (0, 0), (0, capacity - T), (0, 0))

    def batch(parts: list[Any]) -> Any:
        return {"k": jnp.pad(jnp.concatenate([c["k"] for c in parts], 1), pad),
                "v": jnp.pad(jnp.concatenate([c["v"] for c in parts], 1), pad),
                "logits": jnp.concatenate([c["logits"] for c in parts]), "length": parts[0]["length"]}

    received = [jax.device_put(c, {"k": kv, "v": kv, "logits": whole, "length": whole}) for c in caches]
    return jax.jit(batch, out_shardings={"k": kv, "v": kv, "logits": whole, "length": whole})(received)
