"""The book's training model (ch. 5, 6 and 12): the compute/communication roofline of each parallelism strategy.

The strategy formulas follow the book's model of a layer as two matmuls In[B, D] · W_in[D, F] · W_out[F, D]
(How To Scale Your Model, ch. 5), with B the global token batch, X the data/FSDP degree over M_X mesh
axes, Y the tensor-parallel degree over M_Y axes, C peak FLOP/s and W the BIDIRECTIONAL ICI bandwidth of a
link (the book's W_ici). Per layer, forward + backward:

    strategy   compute          communication (bytes moved, per chip's rings)
    DP         12·B·D·F / X     8·D·F             (AllReduce of the two weight gradients, backward)
    FSDP       12·B·D·F / X     4·D·F + 8·D·F     (AllGather weights fwd and bwd, ReduceScatter grads)
    TP         12·B·D·F / Y     4·B·D + 8·B·D     (AllGather activations in, ReduceScatter out)
    FSDP + TP  12·B·D·F / XY    (4·B·D/X + 4·D·F/Y) + (8·B·D/X + 8·D·F/Y)
    DP + TP    12·B·D·F / XY    8·D·F/Y + (4·B·D/X + 8·B·D/X)   (ZeRO-1 DP of TP shards, the GPU recipe)

In FSDP + TP the weight collectives run over the X axes and the activation collectives over the Y axes:
different links, so they overlap one another and the communication time is the larger of the two. That is
the assumption behind the book's optimum X_opt = sqrt((B/F)·(M_X/M_Y)·N) and threshold B/N > α²/(M_X·M_Y·F).

On a `GpuCluster` (ch. 12) the same formulas run with NVLink for TP and the network for DP/FSDP (`_links`);
expert parallelism ('ep' in `layer_cost`) and pipeline stages (P in `step_time`) add their own terms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..collectives import all_to_all
from ..estimate import Estimate
from ..hardware.chips import Chip, get_chip
from ..hardware.gpu import GpuCluster, resolve
from ..hardware.topology import TpuMesh
from ..models import TransformerConfig, get_model
from ..sharding import mesh_axes, parse_spec, sharded_matmul, total_bytes
from ..units import check_int, checks, dtype_bytes, is_a
from .pipeline import pipeline_bubble, pipeline_comms

__all__ = ["STRATEGIES", "layer_cost", "expert_width_threshold", "min_tokens_per_chip", "tp_limit", "x_opt",
           "comms_terms", "comms_time", "step_time", "mfu", "expert_parallel", "LAYOUTS", "FORWARD", "BACKWARD",
           "Transfer", "pass_collectives"]

STRATEGIES = ("dp", "fsdp", "tp", "fsdp_tp", "dp_tp")


def _W(chip: Chip) -> float:
    if chip.ici_bandwidth is None:
        raise ValueError(f"{chip.name} has no ICI bandwidth; for GPUs pass a GpuCluster (its NVLink and network)")
    return chip.ici_bidirectional


def _links(hardware: Chip | str | GpuCluster, Y: int = 1, P: int = 1) -> tuple[Chip, float, float]:
    """Return (chip, W_X, W_Y): the bandwidth per chip of the data-parallel (X) and tensor-parallel (Y)
    collectives, such that moving b bytes of a replica sharded over Y·P chips (TP × pipeline stages) takes
    b / (Y·P · W_X), and b / W_Y.

    A TPU uses its bidirectional ICI link for both. A GPU cluster (ch. 12) runs TP over NVLink inside a node
    (a GPU's share of the node's NICs beyond it). Its data-parallel traffic crosses the network once per node,
    so a node's egress serves min(Y, GPUs per node) GPUs' shards; while a replica is smaller than a node
    (Y < GPUs per node) the reduction inside the node also loads each GPU's NVLink, and the tighter of the two
    binds (on an H100 SuperPod the network, on GB200 NVL72 racks NVLink).
    """
    if isinstance(hardware, GpuCluster):
        n, replica = hardware.gpus_per_node, Y * P
        W_Y = hardware.gpu_bandwidth if Y <= n else hardware.node_egress / n
        if hardware.nodes == 1:
            return hardware.chip, hardware.gpu_bandwidth, W_Y
        network = hardware.node_egress / min(replica, n)
        return hardware.chip, min(hardware.gpu_bandwidth, network) if replica < n else network, W_Y
    chip = get_chip(hardware)
    return chip, _W(chip), _W(chip)


def _chip_and_link(hardware: Chip | str | GpuCluster, model_parallel: int = 1) -> tuple[Chip, float]:
    """The chip and the bandwidth its data-parallel collectives run at per chip: a TPU's bidirectional ICI
    link; a GPU cluster's NVLink egress inside one node, across nodes the smaller of NVLink and the node's
    egress (ch. 12's W_collective), the latter growing max(1, Y / GPUs per node)-fold when each replica spans
    Y GPUs (see `_links`)."""
    if model_parallel != 1 and not isinstance(hardware, GpuCluster):
        raise ValueError("model_parallel applies to GPU clusters; on a TPU mesh pass M_X (axes the gradients "
                         "reduce over)")
    model_parallel = check_int("model_parallel", model_parallel)
    chip, W_X, _ = _links(hardware, P=model_parallel)
    return chip, W_X * (model_parallel if isinstance(hardware, GpuCluster) else 1)


def all_to_all_seconds(hardware: Chip | GpuCluster, token_bytes: float, Z: int, k: int, M: int = 1) -> float:
    """Seconds of one MoE dispatch (or combine) AllToAll of `token_bytes` of tokens over Z experts' chips:
    on a GPU cluster the ragged top-k AllToAll over Z of its GPUs (ch. 12); on a TPU ring the k copies
    cross the bisection, k·V / (4·W_bidi·M) (ch. 3)."""
    if Z == 1:
        return 0.0
    if isinstance(hardware, GpuCluster):
        return all_to_all(hardware.subset(Z), None, token_bytes, top_k=k).time
    return k * token_bytes / (4 * _W(hardware) * M)


@checks(strategy=(*STRATEGIES, "ep"), B="size", D="size", F="size", X="count", Y="count", M_X="count", M_Y="count",
        dtype="dtype", Z="count", k="count")
def layer_cost(strategy: str, B: float, D: float, F: float, hardware: Chip | str | GpuCluster, X: int = 1,
               Y: int = 1, M_X: int = 1, M_Y: int = 1, dtype: str = "bf16", Z: int = 1, k: int = 1) -> Estimate:
    """Return the per-layer `Estimate` (forward + backward) of an MLP layer under `strategy` (ch. 5 model).

    `t_comms` is the communication time (FSDP + TP: the larger of its two kinds, which run on different axes);
    `time` assumes communication overlaps the math. 'ep': the layer is E experts split Z ways, each token
    using k of them; the backward pass moves twice the forward's bytes, as TP's does (ch. 5), so the
    forward's two AllToAlls become six.
    """
    hardware, _ = resolve(hardware)
    chip, W_X, W_Y = _links(hardware, Y)
    C, b = chip.peak_flops(dtype), dtype_bytes(dtype)
    shards = {"dp": X, "fsdp": X, "tp": Y, "fsdp_tp": X * Y, "dp_tp": X * Y, "ep": Z}[strategy]
    flops = 12 * B * D * F * (k if strategy == "ep" else 1) / shards
    weights = 2 * D * F * b  # both matrices of the layer
    acts = B * D * b
    comms = {
        "dp": lambda: 2 * weights / (W_X * M_X),
        "fsdp": lambda: 3 * weights / (W_X * M_X),
        "tp": lambda: 6 * acts / (W_Y * M_Y),
        "fsdp_tp": lambda: max(3 * weights / (Y * W_X * M_X), 6 * acts / (X * W_Y * M_Y)),
        "dp_tp": lambda: max(2 * weights / (Y * W_X * M_X), 6 * acts / (X * W_Y * M_Y)),
        "ep": lambda: 6 * all_to_all_seconds(hardware, acts, Z, k, M_X),
    }[strategy]()
    nbytes = {"dp": 2 * weights, "fsdp": 3 * weights, "tp": 6 * acts, "ep": 6 * acts * k,
              "fsdp_tp": 3 * weights / Y + 6 * acts / X, "dp_tp": 2 * weights / Y + 6 * acts / X}[strategy]
    return Estimate(flops, nbytes, flops / C, comms, channel="ICI",
                    label=f"{strategy} layer (B={B:g}, D={D:g}, F={F:g}, X={X}, Y={Y}) on {chip.name}",
                    terms=(("W_X, W_Y", f"{W_X:.3g}, {W_Y:.3g} B/s"), ("mesh axes", f"M_X={M_X}, M_Y={M_Y}")))


@checks(Z="count", k="count", D="count", dtype="dtype")
def expert_width_threshold(Z: int, k: int, hardware: Chip | str | GpuCluster, D: int = 8192,
                           dtype: str = "bf16") -> float:
    """Return the smallest expert width F for which Z-way expert parallelism with top-k routing stays
    compute-bound (`layer_cost("ep")`): on a GPU cluster ~alpha (Z-8)/k for a node or two, ~8 alpha when wide."""
    cost = layer_cost("ep", 1e5, D, 1, hardware, Z=Z, k=k, dtype=dtype)
    return cost.t_comms / cost.t_math


@checks(strategy=(*STRATEGIES, "dcn"), F="?size", M_X="count", M_Y="count", dtype="dtype", model_parallel="count",
        E="count", k="count")
def min_tokens_per_chip(strategy: str, hardware: Chip | str | GpuCluster, F: float | None = None, M_X: int = 1,
                        M_Y: int = 1, dtype: str = "bf16", model_parallel: int = 1, E: int = 1, k: int = 1) -> float:
    """Return the tokens per chip above which `strategy` is compute-bound (ch. 5), with α = C / W, W the
    bidirectional ICI link of a TPU or, for a `GpuCluster`, its NVLink egress (one node) or node egress (ch. 12):

    DP and FSDP: B/X > α / M_X. FSDP + TP at the optimal split: B/N > α² / (M_X·M_Y·F), the book's form
    (F is needed). 'dcn': pure data parallelism across slices, per slice B > C / W_dcn. TP has no batch
    threshold (it is a width limit: see `tp_limit`), so it raises.

    On a GPU cluster, `model_parallel` = Y GPUs per model replica (TP × PP × EP) divides the gradient bytes
    each node sends, and the threshold is per GPU: B/N > α · GPUs per node / max(GPUs per node, Y) (ch. 12).
    An MoE whose tokens use k of E experts sends E/k times the gradients per FLOP: α · E/k.
    """
    if not (isinstance(E, int) and isinstance(k, int) and 1 <= k <= E):
        raise ValueError(f"need integers 1 <= k <= E, got E={E!r}, k={k!r}")
    if strategy == "dcn":
        _, chip = resolve(hardware)
        if not chip.dcn_bandwidth:
            raise ValueError(f"{chip.name} has no DCN bandwidth figure")
        return chip.peak_flops(dtype) / chip.dcn_bandwidth * E / k
    chip, W = _chip_and_link(hardware, model_parallel)
    alpha = chip.peak_flops(dtype) / W * E / k
    if strategy in ("dp", "fsdp"):
        return alpha / M_X
    if strategy == "fsdp_tp":
        if not F or F <= 0:
            raise ValueError("F (the MLP width) is needed for the FSDP + TP threshold")
        return alpha**2 / (M_X * M_Y * F)
    raise ValueError(f"strategy={strategy!r} has no batch threshold; allowed: dp, fsdp, fsdp_tp, dcn")


@checks(F="size", M_Y="count", dtype="dtype")
def tp_limit(F: float, hardware: Chip | str | GpuCluster, M_Y: int = 1, dtype: str = "bf16") -> float:
    """Return the largest tensor-parallel degree that stays compute-bound: Y < M_Y · 2·F·W / (C·b) (ch. 5).

    C is the peak in `dtype` and b its bytes per activation, so precision cancels out (int8 doubles C and
    halves the bytes): in bf16 the bound is the book's M_Y · F · W / C.
    """
    chip, W = _chip_and_link(hardware)
    return M_Y * 2 * F * W / (chip.peak_flops(dtype) * dtype_bytes(dtype))


@checks(B="size", F="size", N="count", M_X="count", M_Y="count")
def x_opt(B: float, F: float, N: int, M_X: int = 1, M_Y: int = 1) -> float:
    """Return the FSDP degree that minimises FSDP + TP communication on N chips: sqrt((B/F)·(M_X/M_Y)·N)."""
    if min(B, F, N, M_X, M_Y) <= 0:
        raise ValueError("B, F, N, M_X and M_Y must be positive")
    return math.sqrt(B / F * M_X / M_Y * N)


@checks(model=is_a(TransformerConfig), hardware=is_a(Chip, GpuCluster), batch_tokens="size", strategy=STRATEGIES,
        X="count", Y="count", M_X="count", M_Y="count", dtype="dtype", P="count", microbatches="count")
def comms_terms(model: TransformerConfig, hardware: Chip | GpuCluster, batch_tokens: float, strategy: str, X: int,
                Y: int, M_X: int, M_Y: int, dtype: str = "bf16", P: int = 1,
                microbatches: int = 1) -> dict[str, float]:
    """Return the seconds of each kind of communication per step, {'dp', 'tp', 'pp sends'}: the data-parallel
    collectives, the tensor-parallel ones and the pipeline's sends (`comms_time` says how each is counted)."""
    _, W_X, W_Y = _links(hardware, Y, P)
    b = dtype_bytes(dtype)
    weights = model.param_count() * b
    acts = 2 * 6 * batch_tokens * model.D * b * model.L / P
    data = {"dp": 2, "fsdp": 3, "tp": 0, "fsdp_tp": 3, "dp_tp": 2}[strategy] * weights / (Y * P * W_X * M_X)
    tensor = acts / (X * W_Y * M_Y) if strategy in ("tp", "fsdp_tp", "dp_tp") else 0.0
    sends = 2 * pipeline_comms(batch_tokens / X, model.D, P, microbatches, hardware, dtype) if P > 1 else 0.0
    return {"dp": data, "tp": tensor, "pp sends": sends}


@checks(model=is_a(TransformerConfig), hardware=is_a(Chip, GpuCluster), batch_tokens="size", strategy=STRATEGIES,
        X="count", Y="count", M_X="count", M_Y="count", dtype="dtype", P="count", microbatches="count")
def comms_time(model: TransformerConfig, hardware: Chip | GpuCluster, batch_tokens: float, strategy: str, X: int,
               Y: int, M_X: int, M_Y: int, dtype: str = "bf16", P: int = 1, microbatches: int = 1) -> float:
    """Return the seconds of communication per step for the whole model (collectives not overlapping).

    DP: AllReduce of every gradient, 2·P·b / (W·M_X). FSDP: AllGather weights forward and backward plus
    ReduceScatter gradients, 3·P·b / (W·M_X), divided by Y when combined with TP. TP: per layer, two blocks
    (attention and MLP) each AllGather their [B, D] input and ReduceScatter their output, forward and
    backward: 2 · 6·B·D·b / (W·M_Y), divided by X when combined with FSDP or DP; the two kinds run on
    different mesh axes at once, so a combination takes the larger. W is bidirectional ICI on a TPU; on a
    GPU cluster the data-parallel and tensor-parallel links of `_links` (network and NVLink).

    With `P` pipeline stages each chip holds 1/P of the layers, so both kinds move 1/P of the bytes, and the
    stage-to-stage sends of `pipeline_comms` (forward and backward) are added.
    """
    terms = comms_terms(model, hardware, batch_tokens, strategy, X, Y, M_X, M_Y, dtype, P, microbatches)
    return max(terms["dp"], terms["tp"]) + terms["pp sends"]


@checks(n_chips="count", batch_tokens="size", strategy=STRATEGIES, X="?count", Y="count", M_X="count", M_Y="count",
        seq_len="count0", mfu="fraction", P="count", microbatches="?count")
def step_time(model: TransformerConfig | str, hardware: Chip | str | GpuCluster, n_chips: int, batch_tokens: float,
              strategy: str = "fsdp_tp", X: int | None = None, Y: int = 1, M_X: int = 1, M_Y: int = 1,
              seq_len: int = 0, mfu: float = 1.0, P: int = 1, microbatches: int | None = None) -> Estimate:
    """Return the `Estimate` of one training step in seconds: compute from the model's training FLOPs at
    `mfu` of peak, communication from `comms_time`. X defaults to n_chips / (Y·P); `time` assumes the
    collectives overlap the compute. `hardware` is a chip or a `GpuCluster` (its network carries the collectives).

    `P` pipeline stages of `microbatches` each (default 4·P) stretch the compute by the bubble,
    (M + P - 1) / M, and add their sends to the communication.
    """
    model = model if isinstance(model, TransformerConfig) else get_model(model)
    hardware, chip = resolve(hardware)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r}; allowed: {list(STRATEGIES)}")
    M = microbatches if microbatches is not None else 4 * P
    pipeline_bubble(P, M)  # validates the stage and microbatch counts
    X = X if X is not None else n_chips // (Y * P)
    if X * Y * P != n_chips:
        raise ValueError(f"X·Y·P = {X}·{Y}·{P} must equal n_chips={n_chips}")
    if isinstance(hardware, GpuCluster) and n_chips != hardware.gpus:
        hardware = hardware.subset(n_chips)
    flops = model.flops_per_token(seq_len) * batch_tokens
    t_math = flops / (n_chips * chip.peak_flops() * mfu) * (M + P - 1) / M
    t_comms = comms_time(model, hardware, batch_tokens, strategy, X, Y, M_X, M_Y, P=P, microbatches=M)
    return Estimate(flops / n_chips, t_comms * _links(hardware, Y, P)[1], t_math, t_comms,
                    channel="network" if isinstance(hardware, GpuCluster) else "ICI",
                    label=f"{model.name or 'model'} step, {strategy} X={X} Y={Y}{f' P={P}' if P > 1 else ''} "
                          f"on {n_chips} × {chip.name}")


@checks(n_chips="count", batch_tokens="size", seconds="size", seq_len="count0", dtype="dtype")
def mfu(model: TransformerConfig | str, chip: Chip | str, n_chips: int, batch_tokens: float, seconds: float,
        seq_len: int = 0, dtype: str = "bf16") -> float:
    """Return model FLOPs utilisation: the model's training FLOPs per step over what the chips could do at
    their `dtype` peak (fp8 training, as DeepSeek-V3's, is measured against the fp8 peak)."""
    model, chip = get_model(model), get_chip(chip)
    return model.flops_per_token(seq_len) * batch_tokens / (n_chips * chip.peak_flops(dtype) * seconds)


@checks(batch_tokens="size", Z="count", M="count", dtype="dtype")
def expert_parallel(model: TransformerConfig | str, hardware: Chip | str | GpuCluster, batch_tokens: float, Z: int,
                    M: int = 1, dtype: str = "bf16") -> Estimate:
    """Return the `Estimate` of a training step's MoE layers with the experts split Z ways (expert parallelism).

    Compute: 6 FLOPs per active expert parameter per token, shared over Z chips. Communication: each MoE
    layer sends every token's D-vector to its k experts and back, forward and backward: four AllToAlls of
    B·k·D values, each V / (4·W_bidi·M) on a ring (ch. 3), so B·k·D·b / (W_bidi·M) per layer; on a
    `GpuCluster`, four ragged top-k AllToAlls over Z of its GPUs (ch. 12).
    """
    model = get_model(model)
    hardware, chip = resolve(hardware)
    if not model.is_moe:
        raise ValueError(f"{model.name or 'this model'} has no experts (E=1); expert parallelism needs an MoE")
    if not isinstance(Z, int) or not 1 <= Z <= model.E:
        raise ValueError(f"Z={Z!r} must be an integer between 1 and E={model.E}")
    expert = model.expert_params
    flops = 6 * batch_tokens * (model.k + model.shared) * expert * model.moe_layers / Z
    values = batch_tokens * model.k * model.D * model.moe_layers
    token_bytes = batch_tokens * model.D * model.moe_layers * dtype_bytes(dtype)
    t_comms = 4 * all_to_all_seconds(hardware, token_bytes, Z, model.k, M)
    return Estimate(flops, values * dtype_bytes(dtype), flops / chip.peak_flops(dtype), t_comms, channel="ICI",
                    label=f"{model.name} MoE layers, {Z}-way expert parallelism on {chip.name}")


# The layer's arrays under each strategy, in chapter 3's notation (X: data/FSDP axis, Y: tensor axis).
# The optimizer state is sharded like the weights it updates, except under pure DP (replicated).
LAYOUTS: dict[str, dict[str, str]] = {
    "dp": {"In": "In[B_X, D]", "Win": "Win[D, F]", "Tmp": "Tmp[B_X, F]", "Wout": "Wout[F, D]", "Out": "Out[B_X, D]"},
    "fsdp": {"In": "In[B_X, D]", "Win": "Win[D_X, F]", "Tmp": "Tmp[B_X, F]", "Wout": "Wout[F_X, D]",
             "Out": "Out[B_X, D]"},
    "tp": {"In": "In[B, D_Y]", "Win": "Win[D, F_Y]", "Tmp": "Tmp[B, F_Y]", "Wout": "Wout[F_Y, D]",
           "Out": "Out[B, D_Y]"},
    "fsdp_tp": {"In": "In[B_X, D_Y]", "Win": "Win[D_X, F_Y]", "Tmp": "Tmp[B_X, F_Y]", "Wout": "Wout[F_Y, D_X]",
                "Out": "Out[B_X, D_Y]"},
}

# Each pass as matmuls "A @ B -> C" over the layout's arrays ({name} is replaced by its spec). Transposes keep
# the array's name with the dimensions swapped: sharded_matmul contracts the shared middle dimension.
FORWARD = ("{In} @ {Win} -> {Tmp}", "{Tmp} @ {Wout} -> {Out}")
BACKWARD = ("T:{Tmp} @ d:{Out} -> d:{Wout}", "d:{Out} @ T:{Wout} -> d:{Tmp}",
            "T:{In} @ d:{Tmp} -> d:{Win}", "d:{Tmp} @ T:{Win} -> d:{In}")


@dataclass(frozen=True)
class Transfer:
    """One collective of one pass: the matmul that needs it, its kind and axes, the array it moves and the bytes
    a ring charges it (V for an AllGather or ReduceScatter of V bytes per device, 2V for an AllReduce: the book's
    count).
    `reused` marks a gather of an array this pass (or the forward pass, with `keep_forward`) already gathered."""

    pass_: str
    matmul: str
    kind: str
    axes: tuple[str, ...]
    array: str
    nbytes: float
    reused: bool = False

    @property
    def charged(self) -> float:
        """Bytes the collective costs in the book's units (0 when the gathered copy is reused)."""
        return 0.0 if self.reused else self.nbytes * (2 if self.kind == "all_reduce" else 1)


def _spec(template: str, layout: dict[str, str]) -> str:
    """Turn 'T:{Tmp}' into Tmp's spec with its two dimensions swapped and 'd:{Out}' into dOut's spec."""
    text = template
    for name, spec in layout.items():
        parsed = parse_spec(spec)
        dims = [f"{d}_{''.join(a)}" if a else d for d, a in parsed.dims]
        text = text.replace(f"T:{{{name}}}", f"{name}[{', '.join(dims[::-1])}]")
        text = text.replace(f"d:{{{name}}}", f"d{spec}").replace(f"{{{name}}}", spec)
    return text


@checks(B="count", D="count", F="count", keep_forward="flag", dtype="dtype")
def pass_collectives(strategy: str, mesh: TpuMesh, B: int, D: int, F: int, keep_forward: bool = True,
                     dtype: str = "bf16") -> list[Transfer]:
    """Return every collective of one layer's forward and backward pass under `strategy`, read off
    `sharded_matmul` matmul by matmul. A second gather of the same array in a pass is marked `reused`; with
    `keep_forward` so is a backward gather of an activation the forward pass already gathered (TP's input).
    Weight gathers are never kept: FSDP discards gathered weights after use, which is its memory saving."""
    if strategy not in LAYOUTS:
        raise ValueError(f"strategy={strategy!r}; allowed: {list(LAYOUTS)}")
    layout = LAYOUTS[strategy]
    out: list[Transfer] = []
    seen: dict[str, set[str]] = {"forward": set(), "backward": set()}
    sizes = {"B": B, "D": D, "F": F}
    for pass_, templates in (("forward", FORWARD), ("backward", BACKWARD)):
        for template in templates:
            expr = _spec(template, layout)
            plan = sharded_matmul(expr, mesh, dtype=dtype, **sizes)
            inputs, output = expr.split("->")
            specs = [parse_spec(s.strip()) for s in (*inputs.split("@"), output)]
            for step in plan.collectives:
                kind, axes, nbytes = step[0], tuple(step[1]), float(step[2])
                # A gather moves the input of that logical size; a reduction produces the output.
                spec = (min(specs[:2], key=lambda a: abs(total_bytes(a, mesh, sizes, dtype) - nbytes))
                        if kind == "all_gather" else specs[2])
                array = spec.name
                # The collective runs within groups along `axes`: its array is the slice the other axes leave.
                others = [a for a in spec.used_axes if a not in axes]
                nbytes /= float(math.prod(mesh_axes(mesh)[a] for a in others)) if others else 1.0
                is_weight = array.lstrip("d").startswith("W")
                key = f"{array}/{''.join(axes)}"
                reused = kind == "all_gather" and (
                    key in seen[pass_] or (pass_ == "backward" and keep_forward and not is_weight
                                           and key in seen["forward"]))
                if kind == "all_gather":
                    seen[pass_].add(key)
                out.append(Transfer(pass_, expr, kind, axes, array, nbytes, reused))
    return out
