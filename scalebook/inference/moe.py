"""Mixture of experts in service: routing capacity, the expert-parallel AllToAll, and where the KV cache lives.

An MoE layer sends each token's D-vector to k of E experts (dispatch, an AllToAll over the chips that hold the
experts) and brings the k outputs back (combine, a second AllToAll). Three questions follow, each a function here:

- routing: with a fixed number of slots per expert (`capacity`), how many token-to-expert assignments does
  token choice drop (`dropped_fraction`), and how many tokens does expert choice leave unserved
  (`expert_choice_unserved`)? Both assume uniform routing, the balanced case a load-balancing loss aims for;
  a learned router is lumpier, so these are floors.
- expert parallelism: how many experts the busiest chip of an EP group reads in a decode step
  (`experts_read_per_chip`, the per-chip form of `steps.weights_read`, also when the group does not divide E:
  each chip then holds ceil(E/ep) slots, the spare ones redundant copies, as DeepSeek's deployment does), and
  what one layer's dispatch and combine cost on a TPU slice or a GPU cluster (`dispatch`).
- data parallelism for inference: how a deployment of `n_chips` chips splits weights and KV cache under one of
  `SCHEMES` (`serving_shard`), and the decode step that follows (`decode_step`):
    'dp_tp'         replicas of `group` chips, each tensor-parallel: attention heads and every expert's width
                    split `group` ways;
    'dp_ep'         replicas of `group` chips: attention tensor-parallel, experts whole, E/group per chip;
    'attention_dp'  every chip runs attention (and the dense and shared layers) for its own sequences; the
                    routed experts are split over EP groups of `group` chips (DeepSeek's "DP attention").
  Tensor parallelism splits a cache by key/value heads, so it divides the cache at most K ways, and an MLA
  cache (one latent per token, shared by all heads) not at all: each chip of a TP group keeps a full copy.

Units: bytes, seconds, tokens; `param_bytes` and `kv_bytes` are bytes per weight and per cached value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..collectives import default_mesh
from ..estimate import Estimate, StepEstimate
from ..hardware.chips import Chip, Efficiency, get_chip
from ..hardware.gpu import GpuCluster
from ..hardware.topology import TpuMesh
from ..models import TransformerConfig, expected_experts, get_model
from ..units import check_fields, check_int, checks, fmt_bytes, fmt_time, is_a
from .steps import decode_time, ep_collectives, tp_collectives

__all__ = ["SCHEMES", "capacity", "dropped_fraction", "expert_choice_unserved", "experts_read_per_chip", "dispatch",
           "ServingShard", "serving_shard", "decode_step"]

SCHEMES = ("dp_tp", "dp_ep", "attention_dp")
# Beyond this standard deviation of an expert's load the binomial tail is summed in its normal form.
_EXACT_SD = 2000.0


@checks(tokens="count", E="count", k="count", capacity_factor="size")
def capacity(tokens: int, E: int, k: int, capacity_factor: float = 1.25) -> int:
    """Return the slots each expert has for a batch of `tokens` tokens routed top-k of E: ceil(cf · tokens·k/E),
    `capacity_factor` cf times the balanced load (GShard and Switch Transformer's rule)."""
    check_int("k", k, high=E)
    return math.ceil(capacity_factor * tokens * k / E - 1e-9)


@checks(tokens="count", E="count", k="count", capacity_factor="size")
def dropped_fraction(tokens: int, E: int, k: int, capacity_factor: float = 1.25) -> float:
    """Return the expected fraction of token-to-expert assignments token choice drops when each of `tokens`
    tokens picks k of E experts uniformly and each expert keeps at most `capacity` of them.

    An expert's load X is Binomial(tokens, k/E); it drops E[max(X - C, 0)] of its E[X] = tokens·k/E."""
    C = capacity(tokens, E, k, capacity_factor)
    p = k / E
    mean = tokens * p
    if C >= tokens:
        return 0.0
    if p == 1.0:
        return (tokens - C) / tokens
    sd = math.sqrt(tokens * p * (1 - p))
    if sd > _EXACT_SD:
        z = (C - mean) / sd
        tail = 0.5 * math.erfc(z / math.sqrt(2))
        over = sd * math.exp(-z * z / 2) / math.sqrt(2 * math.pi) - (C - mean) * tail
        return max(0.0, over) / mean
    hi = min(tokens, math.ceil(mean + 12 * sd) + 1)
    lp, lq, lg = math.log(p), math.log1p(-p), math.lgamma(tokens + 1)
    over = sum((x - C) * math.exp(lg - math.lgamma(x + 1) - math.lgamma(tokens - x + 1) + x * lp
                                  + (tokens - x) * lq) for x in range(C + 1, hi + 1))
    return over / mean


@checks(tokens="count", E="count", k="count", capacity_factor="size")
def expert_choice_unserved(tokens: int, E: int, k: int, capacity_factor: float = 1.0) -> float:
    """Return the expected fraction of tokens no expert picks under expert choice: each of E experts takes its
    `capacity` tokens (none dropped by construction), chosen uniformly here, so a token escapes one expert
    with probability 1 - C/tokens and all of them with (1 - C/tokens)^E. On average a token gets cf·k experts."""
    C = min(tokens, capacity(tokens, E, k, capacity_factor))
    return (1 - C / tokens) ** E


@checks(tokens="nonneg", E="count", k="count", ep="count")
def experts_read_per_chip(tokens: float, E: int, k: int, ep: int) -> float:
    """Return the experts (per MoE layer) the busiest chip of an `ep`-chip EP group reads in one step over
    `tokens` tokens routed top-k of E: its ceil(E/ep) slots times the share of experts the batch touches
    (`expected_experts`), at least one as soon as any token routes there, at most all its slots. With ep
    dividing E this is `steps.weights_read`'s count for one group; otherwise the spare slots hold
    redundant copies of busy experts (DeepSeek-V3's deployment), which take no extra reads."""
    check_int("k", k, high=E)
    if ep > E:
        raise ValueError(f"ep={ep} chips cannot share E={E} experts with at least one each")
    if tokens == 0:
        return 0.0
    slots = math.ceil(E / ep)
    return min(slots, max(1.0, expected_experts(tokens, E, k) * slots / E))


def _group_mesh(hardware: Chip | str | TpuMesh | GpuCluster, group: int | None) -> TpuMesh | GpuCluster:
    """The mesh of one EP or TP group: a given mesh as it is, else the default slice of `group` chips."""
    if isinstance(hardware, (TpuMesh, GpuCluster)):
        if group not in (None, hardware.n_chips):
            raise ValueError(f"group={group} differs from the mesh's {hardware.n_chips} chips; give one or the other")
        return hardware
    if group is None:
        raise ValueError("group=None: give the number of chips in the group, or a TpuMesh / GpuCluster")
    return default_mesh(get_chip(hardware), check_int("group", group))


@checks(model=is_a(TransformerConfig, str), hardware=is_a(Chip, str, TpuMesh, GpuCluster), tokens="nonneg",
        group="?count", dispatch_bytes="size", combine_bytes="size")
def dispatch(model: TransformerConfig | str, hardware: Chip | str | TpuMesh | GpuCluster, tokens: float,
             group: int | None = None, dispatch_bytes: float = 1, combine_bytes: float = 2,
             efficiency: str | Efficiency = "ideal") -> Estimate:
    """Return the `Estimate` of one MoE layer's two AllToAlls over an EP group: dispatch (each of `tokens` tokens,
    D values of `dispatch_bytes`, to the chips of its k experts) and combine (the outputs back, `combine_bytes`
    each). `hardware`: a chip (with `group` chips: the default slice of that chip, or a NVLink domain / nodes of a
    GPU) or a TpuMesh / GpuCluster. Ragged top-k AllToAlls (`collectives.all_to_all(..., top_k=k)`), seconds
    summed in `t_comms`."""
    model = get_model(model)
    if not model.is_moe:
        raise ValueError(f"model={model.name or model!r} has no experts (E=1): nothing to dispatch")
    if group is not None and group > model.E:
        raise ValueError(f"group={group} chips exceeds E={model.E} experts")
    mesh = _group_mesh(hardware, group)
    if mesh.n_chips > model.E:
        raise ValueError(f"hardware={mesh}: {mesh.n_chips} chips exceed E={model.E} experts")
    there, back = ep_collectives(model, mesh, tokens, dispatch_bytes, combine_bytes, efficiency)
    terms = (("dispatch", f"{fmt_bytes(tokens * model.D * dispatch_bytes)} of tokens: {fmt_time(there.time)}"),
             ("combine", f"{fmt_bytes(tokens * model.D * combine_bytes)} of outputs: {fmt_time(back.time)}"))
    return Estimate(0.0, there.bytes + back.bytes, 0.0, there.time + back.time, channel=there.channel,
                    label=f"{model.name} MoE dispatch + combine of {tokens:g} tokens over {mesh}", terms=terms)


@dataclass(frozen=True)
class ServingShard:
    """What each chip of a deployment holds and reads per decode step, in bytes. `replicas`: independent copies
    of the attention (each with its own sequences); `group`: chips in a TP (dp_tp) or EP group; `dispatched`:
    tokens each EP group's AllToAll carries per MoE layer (0 without EP)."""

    scheme: str
    n_chips: int
    group: int
    replicas: int
    weights_per_chip: float
    kv_per_chip: float
    weights_read_per_chip: float
    dispatched: float

    def __post_init__(self) -> None:
        check_fields(self, n_chips="count", group="count", replicas="count", weights_per_chip="result",
                     kv_per_chip="result", weights_read_per_chip="result", dispatched="result")

    @property
    def memory_per_chip(self) -> float:
        """Bytes each chip holds: its weights and its KV caches."""
        return self.weights_per_chip + self.kv_per_chip

    @property
    def read_per_chip(self) -> float:
        """Bytes each chip reads from HBM in one decode step: its weights in use and its whole cache."""
        return self.weights_read_per_chip + self.kv_per_chip


@checks(model=is_a(TransformerConfig, str), n_chips="count", batch="count", context="nonneg", scheme=SCHEMES,
        group="?count", param_bytes="size", kv_bytes="size")
def serving_shard(model: TransformerConfig | str, n_chips: int, batch: int, context: float,
                  scheme: str = "attention_dp", group: int | None = None, param_bytes: float = 1,
                  kv_bytes: float = 1) -> ServingShard:
    """Return the `ServingShard` of `batch` sequences of `context` tokens on `n_chips` chips under `scheme` (one of
    `SCHEMES`, see the module docstring), with groups of `group` chips (default all of them)."""
    model = get_model(model)
    g = n_chips if group is None else group
    if n_chips % g:
        raise ValueError(f"group={g} must divide n_chips={n_chips}")
    if scheme != "dp_tp" and not model.is_moe:
        raise ValueError(f"scheme={scheme!r} needs an MoE; {model.name or 'this model'} has E=1 (use 'dp_tp')")
    total = model.param_count()
    routed = model.components()["MoE routed experts"][0] if model.is_moe else 0
    other, expert = total - routed, routed / model.E
    cache = context * model.kv_bytes_per_token(kv_bytes)  # one sequence's cache
    heads = 1 if model.mla else model.K  # TP splits a cache at most this many ways
    groups = n_chips // g
    if scheme == "attention_dp":
        replicas, seqs, split = n_chips, batch / n_chips, 1
    else:
        replicas, seqs, split = groups, batch / groups, min(g, heads)
    if scheme == "dp_tp":
        held = total / g
        read = (other + expert * (expected_experts(seqs, model.E, model.k) if model.is_moe else 0)) / g
        dispatched = 0.0
    else:
        tokens = batch / groups
        slots = math.ceil(model.E / g)
        attention = other if scheme == "attention_dp" else other / g
        held = attention + slots * expert
        read = attention + experts_read_per_chip(tokens, model.E, model.k, g) * expert
        dispatched = tokens
    return ServingShard(scheme, n_chips, g, replicas, held * param_bytes, seqs * cache / split, read * param_bytes,
                        dispatched)


@checks(model=is_a(TransformerConfig, str), n_chips="count", batch="count", context="nonneg", scheme=SCHEMES,
        group="?count", param_bytes="size", kv_bytes="size", compute_dtype="dtype", dispatch_bytes="size",
        combine_bytes="size")
def decode_step(model: TransformerConfig | str, chip: Chip | str, n_chips: int, batch: int, context: float,
                scheme: str = "attention_dp", group: int | None = None, param_bytes: float = 1,
                kv_bytes: float = 1, compute_dtype: str = "bf16", dispatch_bytes: float = 1,
                combine_bytes: float = 2, efficiency: str | Efficiency = "ideal") -> StepEstimate:
    """Return the `StepEstimate` of a decode step of `batch` sequences under `scheme` (`serving_shard`): each chip
    reads its weights in use and its caches, does its share of 2 FLOPs per active parameter per sequence, and
    pays, in `t_ici`, the TP collectives of its group (dp_tp: attention and MLP blocks; dp_ep: attention only)
    and each MoE layer's dispatch and combine (`dispatch`; EP schemes). Ideal: the links overlap the HBM reads
    (two micro-batches in flight, as DeepSeek's decode runs); calibrated: they add. `memory_per_chip` and
    `fits` say whether weights and caches fit the chip's HBM."""
    model, chip = get_model(model), get_chip(chip)
    shard = serving_shard(model, n_chips, batch, context, scheme, group, param_bytes, kv_bytes)
    mesh = default_mesh(chip, shard.group) if shard.group > 1 else None
    t_ici = 0.0
    if mesh is not None and scheme != "attention_dp":
        t_tp = tp_collectives(model, mesh, batch / shard.replicas, 2, efficiency)
        t_ici += t_tp if scheme == "dp_tp" else t_tp / 2
    if mesh is not None and scheme != "dp_tp":
        t_ici += model.moe_layers * dispatch(model, mesh, shard.dispatched, None, dispatch_bytes, combine_bytes,
                                             efficiency).time
    return decode_time(shard.weights_read_per_chip * n_chips / param_bytes, shard.kv_per_chip * n_chips / batch,
                       batch, chip, n_chips, param_bytes, compute_dtype, t_ici,
                       label=f"{model.name} decode under {scheme} (groups of {shard.group}), batch {batch}, context "
                             f"{context:g} on {n_chips} × {chip.name}",
                       efficiency=efficiency, flop_params=model.param_count(active=True),
                       held_params=shard.weights_per_chip * n_chips / param_bytes)
