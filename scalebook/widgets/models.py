"""Explorers for the Transformer-math chapter: a model's parameters and FLOP conventions, attention's share of
the FLOPs, the KV cache, saved activations under each remat policy, and the roofline of the attention
contractions.

The tables they show are plain functions too (`models.flop_conventions`, `roofline.attention` and, here,
`attention_share`, `kv_cache_table`, `remat_table`), so a chapter can print one without a widget. Every answer
is a `Table`, an `Estimate` or an SVG `Chart`: a redraw takes milliseconds, never matplotlib.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..estimate import Estimate
from ..hardware.chips import get_chip
from ..models import REMAT_POLICIES, TransformerConfig, flop_conventions, get_model, model_names
from ..roofline import attention, critical_intensity
from ..svg import Chart
from ..tables import Table
from ..training.footprint import REMAT_SAVES, activation_bytes
from ..units import checks, dtype_bytes, fmt_bytes, fmt_flops, fmt_si, geomspace
from .core import Explorer, Log, explore

__all__ = ["attention_share", "kv_cache_table", "remat_table",
           "model_explorer", "attention_share_explorer", "kv_cache_explorer", "remat_explorer",
           "attention_roofline_explorer"]

Model = TransformerConfig | str


def _count(v: float) -> str:
    return fmt_si(v, "", 4).strip()


def _ratio(v: float) -> str:
    return f"{v:.3g}"


# --- tables ------------------------------------------------------------------------------------------------------

def _mha_layer(D: int, F: int) -> TransformerConfig:
    """One multi-head attention layer with N·H = D (one head of width D: the FLOP counts only see N·H)."""
    return TransformerConfig(L=1, D=int(D), F=int(F), N=1, K=1, H=int(D), V=1)


@checks(T="size", D="count", F="?count", causal="flag")
def attention_share(T: float, D: int, F: int | None = None, causal: bool = False) -> Table:
    """Return one MHA layer's forward FLOPs per token (gated MLP with F = 4D unless given; N·H = D): the
    projections, the MLP and the dot-product attention over T keys, and their ratios beside the book's T/8D."""
    F = int(F or 4 * D)
    layer = _mha_layer(D, F)
    qkvo = 2 * layer.attention_params()
    mlp = 2 * layer.components()["MLP (dense)"][0]
    attention = layer.attention_flops_per_token(T / 2 if causal else T)
    rows = [
        {"quantity": "Q, K, V, O projections (8·D²)", "value": qkvo},
        {"quantity": "gated MLP (6·D·F)", "value": mlp},
        {"quantity": f"dot-product attention (4·D·T{'/2, causal' if causal else ''})", "value": attention},
        {"quantity": "attention / all matmuls", "value": attention / (qkvo + mlp)},
        {"quantity": "attention / QKVO projections", "value": attention / qkvo},
        {"quantity": "book's rule T / 8D (F = 4D, full attention)", "value": T / (8 * D)},
    ]
    fmt = {"value": lambda v: fmt_flops(v) if v >= 1e3 else f"{v:.3g}"}
    return Table(rows, formats=fmt, title=f"One layer, FLOPs per token: D = {D}, F = {F}, T = {T:g}")


@checks(context="count", dtype="dtype", batch="count")
def kv_cache_table(model: Model = "llama3-70b", context: int = 8192, dtype: str = "bf16", batch: int = 1) -> Table:
    """Return the KV-cache bytes per token, per sequence of `context` tokens and for `batch` sequences, for the
    model as configured and for the same model with other attention variants (MHA, MQA, or MLA's full heads)."""
    cfg = get_model(model)
    size = dtype_bytes(dtype)
    if cfg.mla:
        variants = [(f"MLA (latent {cfg.kv_rank} + rope {cfg.rope_dim}), as configured", cfg.kv_bytes_per_token(size)),
                    (f"every head caches its key ({cfg.head_qk}) and value ({cfg.H})",
                     cfg.L * cfg.N * (cfg.head_qk + cfg.H) * size)]
    else:
        def kind(K: int) -> str:
            return "MHA" if K == cfg.N else "MQA" if K == 1 else "GQA"

        variants = [(f"{kind(cfg.K)} (K = {cfg.K}), as configured", cfg.kv_bytes_per_token(size))]
        variants += [(f"{kind(K)} (K = {K})", replace(cfg, K=K).kv_bytes_per_token(size))
                     for K in sorted({cfg.N, max(cfg.N // 8, 1), 1} - {cfg.K}, reverse=True)]
    rows = [{"attention": name, "bytes/token": b, "bytes/sequence": b * context,
             "bytes for the batch": b * context * batch} for name, b in variants]
    fmt = {c: fmt_bytes for c in ("bytes/token", "bytes/sequence", "bytes for the batch")}
    return Table(rows, formats=fmt, title=f"KV cache of {cfg.name or 'the model'}: {dtype}, {context} tokens × {batch}")


@checks(tokens="size", seq_len="count", dtype="dtype")
def remat_table(model: Model = "llama3-70b", tokens: float = 4e6, seq_len: int = 8192, dtype: str = "bf16") -> Table:
    """Return, for each remat policy, the activations saved per layer, their bytes for `tokens` tokens, and the
    training FLOPs per token the hardware does (model FLOPs plus recomputation)."""
    cfg = get_model(model)
    base = cfg.flops_per_token(seq_len)
    rows = []
    for policy in sorted(REMAT_POLICIES, key=lambda p: -REMAT_SAVES[p]):
        flops = cfg.flops_per_token(seq_len, remat=policy)
        rows.append({"remat": policy, "saved [tokens, D] arrays per layer": REMAT_SAVES[policy],
                     "activation bytes": activation_bytes(cfg, tokens, policy, dtype),
                     "FLOPs/token": flops, "× model FLOPs": flops / base})
    return Table(rows, formats={"activation bytes": fmt_bytes, "FLOPs/token": fmt_flops, "× model FLOPs": _ratio},
                 title=f"Remat for {cfg.name or 'the model'}: {tokens:.3g} tokens, T = {seq_len}, {dtype}")


# --- explorers ---------------------------------------------------------------------------------------------------


def model_menu(model: Model) -> tuple[list[str], Callable[[str], TransformerConfig]]:
    """Return a model menu (presets, with `model` first) and the function mapping an entry to its config."""
    names = model_names()
    if isinstance(model, TransformerConfig):
        label = model.name or "your model"
        return [label, *names], lambda name: model if name == label else get_model(name)
    first = next((n for n in names if get_model(n) == get_model(model)), None)
    if first is None:
        raise KeyError(f"model={model!r} is not a preset")
    return [first, *[n for n in names if n != first]], get_model


@checks(seq_len="count")
def model_explorer(model: Model = "llama3-70b", seq_len: int = 8192) -> Explorer:
    """Return an explorer of a preset (or your config): its per-component table and its FLOP conventions."""
    menu, lookup = model_menu(model)

    def view(model: str, seq_len: float) -> tuple[Table, Table]:
        cfg = lookup(model)
        return cfg.table(round(seq_len)), flop_conventions(cfg, round(seq_len))

    return explore(view, title="Parameters and FLOPs per token", model=menu, seq_len=Log(128, 2**20, seq_len))


def _share_view(T: float, D: float, causal: str) -> tuple[Table, Chart]:
    D, is_causal = round(D), causal == "causal"
    table = attention_share(T, D, causal=is_causal)
    layer = _mha_layer(D, 4 * D)
    dense = 2 * layer.matmul_params(logits=False)
    Ts = geomspace(256, 2**24, 50)
    chart = Chart(title=f"Attention FLOPs / matmul FLOPs, D = {D}, F = 4D", xlabel="sequence length T (tokens)",
                  ylabel="attention / matmul FLOPs", xlog=True, ylog=True, ylim=(1e-3, 1e3))
    chart.line(Ts, [layer.attention_flops_per_token(t) / dense for t in Ts], label="full attention: T / 8D")
    chart.line(Ts, [layer.attention_flops_per_token(t / 2) / dense for t in Ts], label="causal: T / 16D", dash=True)
    chart.line([Ts[0], Ts[-1]], [1, 1], color="#555", label="equal")
    chart.vline(8 * D, label=f"T = 8D = {8 * D}")
    share = layer.attention_flops_per_token(T / 2 if is_causal else T) / dense
    chart.points([T], [share], label=f"T = {T:.0f}: {share:.3g}")
    return table, chart


@checks(T="size", D="count", causal=["full", "causal"])
def attention_share_explorer(T: float = 65536, D: int = 8192, causal: str = "full") -> Explorer:
    """Return an explorer of attention vs matmul FLOPs per token in an MHA layer with F = 4D (the T/8D rule)."""
    return explore(_share_view, title="When does attention dominate?", T=Log(256, 2**24, T), D=Log(512, 65536, D),
                   causal=[causal, *[c for c in ("full", "causal") if c != causal]])


@checks(context="count", dtype="dtype", batch="count")
def kv_cache_explorer(model: Model = "llama3-70b", context: int = 8192, dtype: str = "bf16",
                      batch: int = 1) -> Explorer:
    """Return an explorer of the KV cache: bytes per token, per sequence and per batch, by attention variant."""
    menu, lookup = model_menu(model)
    dtypes = [dtype, *[d for d in ("bf16", "int8", "fp8", "int4") if d != dtype]]
    return explore(lambda model, context, dtype, batch: kv_cache_table(lookup(model), round(context), dtype,
                                                                       round(batch)),
                   title="KV cache", model=menu, context=Log(128, 2**20, context), dtype=dtypes,
                   batch=Log(1, 1024, batch))


@checks(tokens="size", seq_len="count")
def remat_explorer(model: Model = "llama3-70b", tokens: float = 4e6, seq_len: int = 8192) -> Explorer:
    """Return an explorer of saved activations and hardware FLOPs under each remat policy."""
    menu, lookup = model_menu(model)
    return explore(lambda model, tokens, seq_len: remat_table(lookup(model), tokens, round(seq_len)),
                   title="Remat: memory against FLOPs", model=menu, tokens=Log(1e4, 1e8, tokens),
                   seq_len=Log(128, 2**20, seq_len))


def _attention_view(T: float, S: float, G: int, K: int, H: int, chip: str) -> tuple[Estimate, Chart]:
    est = attention(round(T), round(S), G * K, K, H, chip)
    alpha = critical_intensity(chip)
    xs = geomspace(1, 2**20, 60)
    chart = Chart(title=f"Attention intensity on {get_chip(chip).name}, G = {G}",
                  xlabel="sequence length (tokens)", ylabel="FLOPs per byte", xlog=True, ylog=True, ylim=(0.5, 1e6))
    chart.line(xs, [x * G / (G + 1) for x in xs], label="prefill (S = T): TG/(G+1)")
    chart.line(xs, [x * G / (G + x) for x in xs], label="decode (T = 1): SG/(G+S)")
    chart.line([xs[0], xs[-1]], [alpha, alpha], color="#555", dash=True, label=f"critical intensity {alpha:.0f}")
    chart.points([S], [est.intensity], label=f"T = {T:.0f}, S = {S:.0f}: {est.intensity:.3g}")
    return est, chart


@checks(T="size", S="size", G="count", K="count", H="count")
def attention_roofline_explorer(T: float = 8192, S: float = 8192, G: int = 8, K: int = 8, H: int = 128,
                                chip: str = "v5e") -> Explorer:
    """Return an explorer of the attention contractions' roofline (flash kernel) against T, S and G = N/K."""
    return explore(_attention_view, title="Attention on the roofline", T=Log(1, 2**20, T), S=Log(1, 2**20, S),
                   G=[G, *[g for g in (1, 2, 4, 8, 16, 64) if g != G]], K=K, H=H,
                   chip=[chip, *[c for c in ("v5e", "v5p", "v6e", "h100", "b200") if c != chip]])
