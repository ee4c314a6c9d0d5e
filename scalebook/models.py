"""Transformer accounting: parameters, FLOPs per token and KV-cache bytes of a decoder-only model.

Letters follow the book (How To Scale Your Model, ch. 4): L layers, D model width, F MLP width, N query
heads, K key/value heads, H head width, V vocabulary; E routed experts with k active per token (MoE).
Attention is grouped-query (GQA) unless the multi-head-latent fields are set (MLA, as in DeepSeek-V3).

FLOP conventions differ between published MFU figures, so each is an explicit option of
`flops_per_token`: causal or full attention, whether the logits (unembedding) count, training (x3 for
the backward pass) or inference, and which recomputation counts (model FLOPs vs hardware FLOPs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

from .data import load
from .tables import Table
from .units import (
    check_fields,
    check_int,
    check_kind,
    check_non_negative,
    checks,
    closest,
    dtype_bytes,
    fmt_bytes,
    fmt_flops,
    fmt_si,
)

__all__ = ["TransformerConfig", "get_model", "model_names", "from_hf_config", "REMAT_POLICIES", "HF_CONFIG_KEYS",
           "flop_conventions", "expected_experts", "LETTER_MEANINGS", "config_table", "hf_config",
           "layer_einsums"]

# What the backward pass recomputes, in forward passes of each kind of work: the hardware does these FLOPs
# on top of the 3x forward that the model needs (model FLOPs).
REMAT_POLICIES = ("none", "block", "big_matmuls")


@dataclass(frozen=True)
class TransformerConfig:
    """A decoder-only Transformer. Sizes are counts (layers, widths, heads, tokens in the vocabulary).

    Args:
        L, D, F, N, K, H, V: the book's letters; K = N is multi-head attention, K = 1 multi-query.
        tied: input embedding and unembedding share one V x D matrix.
        gated: the MLP has three D x F matrices (SwiGLU/GeGLU) rather than two.
        E, k, shared, F_expert, dense_layers: mixture of experts: E routed experts of width F_expert
            (default F), k active per token, `shared` always-active experts, the first `dense_layers`
            layers dense with width F.
        q_rank, kv_rank, rope_dim, qk_dim: multi-head latent attention (0 = GQA): low-rank query and
            key/value projections, a rotary part of `rope_dim` per head, query/key head width `qk_dim`
            (values use H).
    """

    L: int
    D: int
    F: int
    N: int
    K: int
    H: int
    V: int
    tied: bool = False
    gated: bool = True
    E: int = 1
    k: int = 1
    shared: int = 0
    F_expert: int = 0
    dense_layers: int = 0
    q_rank: int = 0
    kv_rank: int = 0
    rope_dim: int = 0
    qk_dim: int = 0
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for letter in ("L", "D", "F", "N", "K", "H", "V", "E", "k"):
            object.__setattr__(self, letter, check_int(letter, getattr(self, letter)))
        for name in ("shared", "F_expert", "dense_layers", "q_rank", "kv_rank", "rope_dim", "qk_dim"):
            object.__setattr__(self, name, check_int(name, getattr(self, name), 0))
        check_fields(self, tied="flag", gated="flag", name="text", source="text")
        if self.N % self.K:
            raise ValueError(f"N={self.N} query heads must be a multiple of K={self.K} key/value heads")
        if self.k > self.E:
            raise ValueError(f"k={self.k} active experts cannot exceed E={self.E}")
        if not 0 <= self.dense_layers <= self.L:
            raise ValueError(f"dense_layers={self.dense_layers} must be between 0 and L={self.L}")

    # --- shape helpers ---------------------------------------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        return self.E > 1

    @property
    def mla(self) -> bool:
        """True when attention is multi-head latent attention (DeepSeek's low-rank keys and values)."""
        return self.kv_rank > 0

    @property
    def head_qk(self) -> int:
        """Width of one query/key head (H, or qk_dim under MLA)."""
        return self.qk_dim or self.H

    @property
    def moe_layers(self) -> int:
        return self.L - self.dense_layers if self.is_moe else 0

    def _mlp(self, width: int) -> int:
        return (3 if self.gated else 2) * self.D * width

    @property
    def expert_params(self) -> int:
        """Parameters of one expert's MLP (of width F_expert, else F): 3·D·F gated, 2·D·F not."""
        return self._mlp(self.F_expert or self.F)

    # --- parameters --------------------------------------------------------------------------------------------

    def attention_params(self) -> int:
        """Parameters of one layer's attention projections (Q, K, V, O, or MLA's low-rank factors)."""
        D, N, H = self.D, self.N, self.H
        if not self.mla:
            return 2 * D * N * H + 2 * D * self.K * H
        q = D * self.q_rank + self.q_rank * N * self.head_qk + self.q_rank if self.q_rank else D * N * self.head_qk
        kv = D * (self.kv_rank + self.rope_dim) + self.kv_rank + self.kv_rank * N * (self.head_qk - self.rope_dim + H)
        return q + kv + N * H * D

    def components(self) -> dict[str, tuple[int, int]]:
        """Return {component: (parameters, active parameters per token)} for the whole model."""
        dense_mlp = self._mlp(self.F) * (self.L - self.moe_layers)
        expert = self.expert_params
        parts = {
            "attention": (self.L * self.attention_params(),) * 2,
            "MLP (dense)": (dense_mlp, dense_mlp),
        }
        if self.is_moe:
            parts["MoE routed experts"] = (self.moe_layers * self.E * expert, self.moe_layers * self.k * expert)
            parts["MoE shared experts"] = (self.moe_layers * self.shared * expert,) * 2
            parts["MoE routers"] = (self.moe_layers * self.D * self.E,) * 2
        parts["embedding"] = (self.V * self.D,) * 2
        parts["unembedding"] = (0, 0) if self.tied else (self.V * self.D,) * 2
        parts["norms"] = (2 * self.D * self.L + self.D,) * 2
        return parts

    @checks(active="flag")
    def param_count(self, active: bool = False) -> int:
        """Return the number of parameters (only those a token uses when `active`, for MoE)."""
        return sum(p[1] if active else p[0] for p in self.components().values())

    # --- FLOPs -------------------------------------------------------------------------------------------------

    @checks(logits="flag")
    def matmul_params(self, logits: bool = True) -> int:
        """Active parameters that take part in a matmul for every token (embedding lookups and norms don't)."""
        parts = self.components()
        skip = {"embedding", "norms"} | (set() if logits else {"unembedding"})
        total = sum(active for name, (_, active) in parts.items() if name not in skip)
        return total + (self.V * self.D if logits and self.tied else 0)

    @checks(context="nonneg")
    def attention_flops_per_token(self, context: float) -> float:
        """Forward FLOPs of the two attention contractions (Q·Kᵀ and scores·V) for one query token attending
        to `context` keys, over all layers: 2·N·(H_qk + H_v)·context·L."""
        return 2 * self.N * (self.head_qk + self.H) * context * self.L

    @checks(seq_len="count0", training="flag", causal="flag", logits="flag", remat=REMAT_POLICIES)
    def flops_per_token(self, seq_len: int = 0, training: bool = True, causal: bool = True, logits: bool = True,
                        remat: str = "none") -> float:
        """Return FLOPs per token: a forward pass is 2 x matmul parameters + attention; training triples it.

        Args:
            seq_len: sequence length T; attention sees T keys per query, T/2 on average when `causal`.
                0 leaves attention out (the 6 x params x tokens rule).
            training: count the backward pass (2 more matmuls per forward matmul: x3 in all).
            causal: count only the keys a causal mask keeps (a good kernel skips the rest).
            logits: count the unembedding matmul (2·D·V per token); some MFU figures leave it out.
            remat: what the backward pass recomputes (hardware FLOPs): 'none'; 'block' (a whole forward
                pass again: 6 -> 8 x params x tokens); 'big_matmuls' (only the attention contractions).
        """
        context = seq_len / 2 if causal else seq_len
        dense = 2 * self.matmul_params(logits)
        attention = self.attention_flops_per_token(context)
        forward = dense + attention
        if not training:
            return forward
        extra = {"none": 0.0, "block": forward, "big_matmuls": attention}[remat]
        return 3 * forward + extra

    # --- memory -------------------------------------------------------------------------------------------------

    @checks(bytes_per_value="size")
    def kv_bytes_per_token(self, bytes_per_value: float = 2) -> float:
        """Return the KV-cache bytes one token adds: 2·L·K·H values (GQA), L·(kv_rank + rope_dim) (MLA)."""
        values = self.L * (self.kv_rank + self.rope_dim) if self.mla else 2 * self.L * self.K * self.H
        return values * bytes_per_value

    def param_bytes(self, dtype: str = "bf16") -> float:
        """Return the bytes of all parameters stored in `dtype`."""
        return self.param_count() * dtype_bytes(dtype)

    # --- display ------------------------------------------------------------------------------------------------

    @checks(seq_len="count0")
    def table(self, seq_len: int = 0) -> Table:
        """Per-component parameters (total and active) and forward FLOPs per token."""
        rows = []
        for name, (total, active) in self.components().items():
            flops = 2 * active if name not in ("embedding", "norms") else 0
            if name == "unembedding" and self.tied:
                flops = 2 * self.V * self.D
            rows.append({"component": name, "params": total, "active params": active, "fwd FLOPs/token": flops})
        if seq_len:
            rows.append({"component": f"attention scores (T={seq_len}, causal)", "params": 0, "active params": 0,
                         "fwd FLOPs/token": self.attention_flops_per_token(seq_len / 2)})
        rows.append({"component": "total", "params": self.param_count(),
                     "active params": self.param_count(active=True),
                     "fwd FLOPs/token": sum(r["fwd FLOPs/token"] for r in rows)})
        count = lambda v: fmt_si(v, "", 4).strip()  # noqa: E731
        return Table(rows, formats={"params": count, "active params": count, "fwd FLOPs/token": fmt_flops},
                     title=self.name or "TransformerConfig")

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def __str__(self) -> str:
        head = f"{self.name}: " if self.name else ""
        moe = f", E={self.E}, k={self.k}" if self.is_moe else ""
        return (f"{head}L={self.L}, D={self.D}, F={self.F}, N={self.N}, K={self.K}, H={self.H}, V={self.V}{moe}; "
                f"{fmt_si(self.param_count(), 'params', 4)}, KV {fmt_bytes(self.kv_bytes_per_token())}/token (bf16)")


_FIELDS = {f.name for f in fields(TransformerConfig)}


@cache
def _presets() -> dict[str, dict[str, Any]]:
    return load("data/models.toml")["models"]


def model_names() -> list[str]:
    """Return the keys of every preset, e.g. ['llama2-13b', 'llama3-8b', ...]."""
    return list(_presets())


def _norm(name: str) -> str:
    return str(name).lower().replace(" ", "").replace("_", "-").replace(".", "")


def get_model(name: str | TransformerConfig) -> TransformerConfig:
    """Return the preset called `name` ('llama3-70b', 'LLaMA 3 70B', 'deepseek-v3' ...); unknown names raise
    `KeyError` listing the closest presets."""
    if isinstance(name, TransformerConfig):
        return name
    table = {}
    for key, spec in _presets().items():
        for alias in (key, spec["name"], *spec.get("aliases", [])):
            table[_norm(alias)] = key
    key = _norm(name)
    if key not in table:
        close = sorted({table[c] for c in closest(key, table, n=4)})
        raise KeyError(f"model={name!r} is not a preset (closest: {', '.join(close) or 'none'}); "
                       f"presets: {', '.join(model_names())}")
    spec = {k: v for k, v in _presets()[table[key]].items() if k in _FIELDS}
    return TransformerConfig(**spec)


# Which Hugging Face config.json keys hold each letter (the first one present wins).
HF_CONFIG_KEYS = {
    "L": ("num_hidden_layers", "n_layer", "num_layers"),
    "D": ("hidden_size", "n_embd", "d_model"),
    "F": ("intermediate_size", "n_inner", "ffn_dim"),
    "N": ("num_attention_heads", "n_head"),
    "K": ("num_key_value_heads",),
    "H": ("head_dim", "v_head_dim"),
    "V": ("vocab_size",),
    "E": ("n_routed_experts", "num_local_experts", "num_experts"),
    "k": ("num_experts_per_tok",),
    "shared": ("n_shared_experts",),
    "F_expert": ("moe_intermediate_size",),
    "dense_layers": ("first_k_dense_replace",),
    "q_rank": ("q_lora_rank",),
    "kv_rank": ("kv_lora_rank",),
    "rope_dim": ("qk_rope_head_dim",),
}
_UNGATED = {"gpt2", "gpt_neox", "opt", "bloom", "gptj", "falcon"}


def hf_config(name: str) -> dict[str, Any]:
    """Return the abridged Hugging Face `config.json` stored for a model (`data/hf_configs.json`), as a dict to
    read with `from_hf_config`; unknown names raise `KeyError` listing the closest stored ones."""
    stored = load("data/hf_configs.json")
    names = [k for k in stored if not k.startswith("_")]
    if name not in names:
        raise KeyError(f"name={name!r} has no stored config.json; stored: {names} "
                       f"(closest: {closest(name, names) or 'none'})")
    return {k: v for k, v in stored[name].items() if not k.startswith("_")}


# Letters a config.json may leave at 0 (no shared experts, no dense layers, GQA rather than MLA); the rest are ≥ 1.
_HF_MAY_BE_ZERO = {"shared", "F_expert", "dense_layers", "q_rank", "kv_rank", "rope_dim"}


def _hf_letters(config: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, str]]:
    """The letters a config.json gives, each a checked whole number, and the key each came from."""
    values, keys = {}, {}
    for letter, names in HF_CONFIG_KEYS.items():
        key = next((k for k in names if config.get(k) is not None), None)
        if key is not None:
            low = 0 if letter in _HF_MAY_BE_ZERO else 1
            values[letter], keys[letter] = check_int(f"config[{key!r}]", config[key], low), key
    missing = [letter for letter in ("L", "D", "N", "V") if letter not in values]
    if missing:
        needed = [HF_CONFIG_KEYS[m][0] for m in missing]
        raise ValueError(f"config is missing {needed} (needed for {missing}); is it a decoder-only model's "
                         "config.json?")
    return values, keys


def _hf_consistent(values: dict[str, int], keys: dict[str, str]) -> None:
    """Refuse a config whose sizes cannot be one model: heads that do not split the width (when no head width is
    given), key/value heads that do not divide the query heads, more active experts than experts."""
    D, N = values["D"], values["N"]
    if "H" not in values and D % N:
        raise ValueError(f"config[{keys['N']!r}]={N} query heads do not divide config[{keys['D']!r}]={D}: with no "
                         f"head_dim the head width is {keys['D']} / {keys['N']}, which must be a whole number")
    if "K" in values and N % values["K"]:
        raise ValueError(f"config[{keys['K']!r}]={values['K']} key/value heads must divide "
                         f"config[{keys['N']!r}]={N} query heads")
    if "k" in values and values["k"] > values.get("E", 1):
        experts = f"config[{keys['E']!r}]={values['E']}" if "E" in values else "no experts (a dense model)"
        raise ValueError(f"config[{keys['k']!r}]={values['k']} experts per token cannot exceed {experts}")


def from_hf_config(config: Mapping[str, Any], name: str = "") -> TransformerConfig:
    """Return the `TransformerConfig` of a Hugging Face `config.json` (given as a dict; nothing is downloaded).

    Every size must be a whole number (≥ 1; ≥ 0 for the MoE and MLA extras) and the sizes must make one model:
    errors name the config key, its value and what is allowed.
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"config={config!r} must be a config.json read into a dict")
    name = check_kind("name", name, "text")
    values, keys = _hf_letters(config)
    _hf_consistent(values, keys)
    values.setdefault("F", 4 * values["D"])
    values.setdefault("K", values["N"])
    values.setdefault("H", values["D"] // values["N"])
    if "q_rank" in values or "kv_rank" in values:
        nope = check_int("config['qk_nope_head_dim']", config.get("qk_nope_head_dim", 0), 0)
        values["qk_dim"] = nope + values.get("rope_dim", 0)
    tied = check_kind("config['tie_word_embeddings']", config.get("tie_word_embeddings", False), "flag")
    try:
        return TransformerConfig(**values, tied=tied, gated=config.get("model_type") not in _UNGATED,
                                 name=name or str(config.get("_name_or_path", "")))
    except ValueError as exc:
        raise ValueError(f"config does not describe a model: {exc}") from None


# (what the number counts, keyword arguments of flops_per_token); seq_len=0 leaves attention out.
_CONVENTIONS: tuple[tuple[str, dict], ...] = (
    ("model FLOPs: training, causal, logits counted", {}),
    ("full attention (no causal saving)", {"causal": False}),
    ("logits (unembedding) left out", {"logits": False}),
    ("attention left out (seq_len = 0)", {"seq_len": 0}),
    ("inference: one forward pass", {"training": False}),
    ("hardware FLOPs: remat='big_matmuls'", {"remat": "big_matmuls"}),
    ("hardware FLOPs: remat='block'", {"remat": "block"}),
)


def _ratio_fmt(v: float) -> str:
    return f"{v:.3g}"


@checks(seq_len="count")
def flop_conventions(model: TransformerConfig | str = "llama3-70b", seq_len: int = 8192) -> Table:
    """Return FLOPs per token of `model` under each convention of `flops_per_token` (causal or full
    attention, logits or not, training or inference, remat none/big_matmuls/block), beside 6 × parameters.

    Columns: the call, FLOPs per token, FLOPs per active parameter, and the ratio to the default (model FLOPs).
    """
    cfg = get_model(model)
    active = cfg.param_count(active=True)
    default = cfg.flops_per_token(seq_len)
    rows = [{"convention": "rule of thumb: 6 × active parameters", "call": "6 * param_count(active=True)",
             "FLOPs/token": 6 * active}]
    for text, kwargs in _CONVENTIONS:
        args = {"seq_len": seq_len, **kwargs}
        call = ", ".join([str(args["seq_len"])] + [f"{k}={v!r}" for k, v in kwargs.items() if k != "seq_len"])
        rows.append({"convention": text, "call": f"flops_per_token({call})",
                     "FLOPs/token": cfg.flops_per_token(**args)})
    for row in rows:
        row["÷ params"] = row["FLOPs/token"] / active
        row["× model FLOPs"] = row["FLOPs/token"] / default
    return Table(rows, formats={"FLOPs/token": fmt_flops, "÷ params": _ratio_fmt, "× model FLOPs": _ratio_fmt},
                 title=f"FLOPs per token of {cfg.name or 'the model'} at T = {seq_len}")


def expected_experts(B: float, E: int, k: int) -> float:
    """Return the expected number of distinct experts B tokens touch when each picks k of E experts uniformly at
    random without repeats: E · (1 - (1 - k/E)^B). E/k tokens is only the minimum that *can* touch all E; on
    average that many touch fewer (8 tokens, top-2 of 16: about 10.5)."""
    E, B = check_int("E", E), check_non_negative("B", B)
    k = check_int("k", k, high=E)
    return E * (1 - (1 - k / E) ** B)


# What each of the book's letters means, as the chapters' tables label them.
LETTER_MEANINGS = {"L": "layers", "D": "model width, d_model", "F": "MLP width, d_ff", "N": "query heads",
                   "K": "key/value heads", "H": "head width, d_qkv", "V": "vocabulary"}


def _letter_value(v: Any) -> str:
    return v if isinstance(v, str) else f"{v:,}" if isinstance(v, int) else f"{v:.4g}"


def config_table(config: Mapping[str, Any], name: str = "") -> Table:
    """Return the book's letters (L, D, F, N, K, H, V) read from a Hugging Face `config.json` given as a dict:
    which key each came from (or how it was derived when the config has none) and its value."""
    cfg = from_hf_config(config, name=name)
    rows = []
    for letter, meaning in LETTER_MEANINGS.items():
        key = next((k for k in HF_CONFIG_KEYS[letter] if config.get(k) is not None), None)
        if key is None:
            key = {"H": "hidden_size / num_attention_heads", "K": "= N (no num_key_value_heads)",
                   "F": "4 × hidden_size (no intermediate_size)"}[letter]
        rows.append({"letter": letter, "meaning": meaning, "config.json key": key, "value": getattr(cfg, letter)})
    rows.append({"letter": "—", "meaning": "input and output embeddings shared", "config.json key":
                 "tie_word_embeddings", "value": str(cfg.tied)})
    return Table(rows, formats={"value": _letter_value}, title=f"{cfg.name or 'config.json'} in the book's letters")


def layer_einsums(model: TransformerConfig | str) -> list[tuple[str, str, str]]:
    """Return one decoder layer's matmuls in order: (name, einsum in the book's letters, weight shape in elements
    per dimension). B batch, T query and S key positions, D model width, N query heads, K key/value heads (G = N/K
    queries per key head), H head width, F MLP width."""
    m = get_model(model)
    gate = [("MLP gate", "BTD,DF→BTF", f"W_gate[{m.D}, {m.F}]")] if m.gated else []
    return [("Q projection", "BTD,DNH→BTNH", f"W_Q[{m.D}, {m.N}, {m.H}]"),
            ("K projection", "BSD,DKH→BSKH", f"W_K[{m.D}, {m.K}, {m.H}]"),
            ("V projection", "BSD,DKH→BSKH", f"W_V[{m.D}, {m.K}, {m.H}]"),
            ("scores Q·K", "BTKGH,BSKH→BTSKG", "no weights"), ("mix V", "BTSKG,BSKH→BTKGH", "no weights"),
            ("O projection", "BTNH,NHD→BTD", f"W_O[{m.N}, {m.H}, {m.D}]"),
            ("MLP up", "BTD,DF→BTF", f"W_in[{m.D}, {m.F}]"), *gate, ("MLP down", "BTF,FD→BTD", f"W_out[{m.F}, {m.D}]")]
