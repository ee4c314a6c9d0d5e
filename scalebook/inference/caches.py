"""What the weights and KV caches take: the cache under each of ch. 7's tricks, the smallest slice that holds a
model, and the cache a decode step frees.

Each builds on `steps.kv_cache_bytes`; bytes and tokens throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..hardware.chips import Chip, get_chip
from ..models import TransformerConfig, get_model
from ..tables import Table
from ..units import checks, fmt_bytes, sequence_of
from .steps import kv_cache_bytes

__all__ = ["kv_variant_table", "smallest_topology", "evicted_per_step"]


@checks(context="size", batch="count", window="size", local_layers="frac0", share="count")
def kv_variant_table(model: TransformerConfig | str = "llama3-70b", context: float = 32768, batch: int = 1,
                     window: float = 4096, local_layers: float = 5 / 6, share: int = 2) -> Table:
    """Return the KV cache of `batch` sequences of `context` tokens under each trick: MHA, the model's GQA, MQA,
    local attention in a fraction `local_layers` of the layers (last `window` tokens), `share` layers per cache,
    an int8 cache, and all of the last four together; with each variant's saving against MHA."""
    cfg = get_model(model)
    mha = replace(cfg, K=cfg.N)
    variants = [
        (f"MHA (K = N = {cfg.N})", mha, {}),
        (f"GQA (K = {cfg.K}), as published" if cfg.K not in (1, cfg.N) else f"as published (K = {cfg.K})", cfg, {}),
        ("MQA (K = 1)", replace(cfg, K=1), {}),
        (f"GQA + local attention ({local_layers:.0%} of layers, window {window:g})", cfg,
         {"local_layers": local_layers, "window": window}),
        (f"GQA + {share} layers share a cache", cfg, {"share": share}),
        ("GQA, int8 cache", cfg, {"bytes_per_value": 1}),
        ("GQA + local + shared + int8", cfg,
         {"local_layers": local_layers, "window": window, "share": share, "bytes_per_value": 1}),
    ]
    full = kv_cache_bytes(mha, context, batch)
    rows = []
    for name, variant, kwargs in variants:
        nbytes = kv_cache_bytes(variant, context, batch, **kwargs)
        rows.append({"variant": name, "bytes/token": nbytes / (context * batch) if context else 0.0,
                     "KV bytes": nbytes, "× smaller than MHA": full / nbytes if nbytes else float("inf")})
    return Table(rows, formats={"bytes/token": fmt_bytes, "KV bytes": fmt_bytes,
                                "× smaller than MHA": "{:.3g}".format},
                 title=f"KV cache of {cfg.name or 'the model'}: {batch} × {context:g} tokens (bf16 unless stated)")


@checks(param_bytes="size", context="nonneg", batch="count", kv_bytes="size",
        shapes=sequence_of("counts", "(X, Y) shapes"))
def smallest_topology(model: TransformerConfig | str, chip: Chip | str, param_bytes: float = 2, context: float = 0,
                      batch: int = 1, kv_bytes: float = 2,
                      shapes: Sequence[tuple[int, int]] = ((1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (4, 8),
                                                           (8, 8), (8, 16), (16, 16))) -> tuple[int, int]:
    """Return the smallest slice shape whose HBM holds the weights and `batch` KV caches of `context` tokens
    (with the default context 0 the caches are left out, as the book sizes the slice)."""
    model, chip = get_model(model), get_chip(chip)
    need = model.param_count() * param_bytes + kv_cache_bytes(model, context, batch, kv_bytes)
    for X, Y in shapes:
        if X * Y * chip.hbm_bytes >= need:
            return X, Y
    raise ValueError(f"{model.name} at {param_bytes} bytes per weight does not fit any of the shapes {shapes}")



@checks(batch="count", prompt_tokens="nonneg", decode_tokens="size")
def evicted_per_step(batch: int, prompt_tokens: float, decode_tokens: float) -> float:
    """Return KV-cache tokens freed per decode step: B/G sequences finish, each holding P + G tokens."""
    return batch * (prompt_tokens + decode_tokens) / decode_tokens
