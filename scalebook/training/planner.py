"""The layout search: which parallelism (DP, FSDP, TP, FSDP x TP, TP x pipeline x ZeRO-1) trains a model fastest.

`plan` tries every layout the chip or cluster allows, prices each with `training.step_time`, keeps those
whose memory per chip fits in HBM and returns the fastest as a `TrainingPlan`, with a table of every
candidate and why it lost. With `efficiency=` ('ideal' or 'calibrated') it searches published-style layouts
instead — TP in a node × PP (virtual stages) × CP × ZeRO-1/FSDP data parallelism, recompute selective or
full — priced by `training.predict`, keeping those whose calibrated memory fits (`search`).
`check_parallelism` checks a published GPU layout the way ch. 12 does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from ..estimate import Estimate
from ..hardware.chips import Chip
from ..hardware.gpu import GpuCluster, resolve
from ..models import TransformerConfig, get_model
from ..tables import Table
from ..units import check_int, checks, fmt_bytes, fmt_time, is_a
from .book import min_tokens_per_chip, step_time
from .footprint import OPTIMIZERS, Memory, memory
from .prediction import Prediction, predict

__all__ = ["TrainingPlan", "plan", "search", "check_parallelism"]


@dataclass(frozen=True, repr=False)
class TrainingPlan:
    """The planner's answer: the chosen layout, its step `estimate`, and every candidate with why it lost.

    Degrees: `dp` pure data parallelism across slices (over DCN), `fsdp` the FSDP/data degree inside a
    slice, `tp` the tensor-parallel degree, `pp` pipeline stages (the planner pipelines on GPU clusters).
    """

    model: TransformerConfig
    chip: Chip
    n_chips: int
    batch_tokens: float
    strategy: str
    dp: int
    fsdp: int
    tp: int
    pp: int
    estimate: Estimate
    candidates: Table
    cp: int = 1
    prediction: Prediction | None = None
    ideal: Prediction | None = None
    memory_per_chip: float = 0.0  # bytes per chip of the chosen layout (the prediction's, when there is one)

    @property
    def fits(self) -> bool:
        """Whether the layout's memory per chip fits the chip's HBM (`plan` returns only layouts that do)."""
        used = self.prediction.memory_per_chip if self.prediction is not None else self.memory_per_chip
        return used <= self.chip.hbm_bytes

    @property
    def mfu(self) -> float:
        """The best MFU this layout allows: compute time over step time (1 when compute-bound); from a
        `plan(..., efficiency=...)` search, the predicted MFU (`ideal_mfu` beside it)."""
        if self.prediction is not None:
            return self.prediction.mfu
        return self.estimate.t_math / self.estimate.time

    @property
    def ideal_mfu(self) -> float:
        """The ideal (book's bound) MFU of the chosen layout."""
        return self.ideal.mfu if self.ideal is not None else self.mfu

    @property
    def chips_used(self) -> int:
        """Chips the layout occupies: the data-parallel degree must divide the batch, so some may sit out."""
        return self.dp * self.fsdp * self.tp * self.pp * self.cp

    def __str__(self) -> str:
        if self.prediction is not None:
            lay = self.prediction.layout
            v = lay["virtual_stages"]
            return (f"{self.model.name} on {self.n_chips} × {self.chip.name}: TP {self.tp} × PP {self.pp}"
                    f"{f' (v={v})' if v > 1 else ''} × CP {self.cp} × "
                    f"{'FSDP' if lay['fsdp'] else 'DP'} {self.fsdp}, recompute {lay['recompute']}; "
                    f"{self.prediction.efficiency} MFU {self.mfu:.1%} (ideal {self.ideal_mfu:.1%}), "
                    f"{fmt_bytes(self.prediction.memory_per_chip)} per chip")
        idle = self.n_chips - self.chips_used
        used = f"{self.chips_used} of {self.n_chips} ({idle} idle)" if idle else f"{self.n_chips}"
        data = "FSDP" if "fsdp" in self.strategy else "DP"
        return (f"{self.model.name}: {self.strategy} with {data} {self.fsdp} × TP {self.tp}"
                f"{f' × PP {self.pp}' if self.pp > 1 else ''}"
                f"{f' × DP {self.dp} slices' if self.dp > 1 else ''} on {used} × {self.chip.name}; "
                f"{self.estimate}")

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return f"<p>{self}</p>" + self.candidates._repr_html_()


def _axes_of(chip: Chip) -> int:
    """Physical torus axes of a chip's slices (3 on v4p/v5p/TPU7x, 2 on v5e/v6e)."""
    return len(chip.max_slice or (0, 0))


def _layouts(chip: Chip, M: int) -> list[tuple[str, int, int, int, int]]:
    """(strategy, Y, M_X, M_Y, P) for layouts of up to M chips: DP, FSDP, TP, and FSDP x TP for power-of-two Y."""
    axes = _axes_of(chip)
    out = [("dp", 1, axes, 1, 1), ("fsdp", 1, axes, 1, 1)]
    if M <= 64:
        out.append(("tp", M, 1, axes, 1))
    Y = 2
    while Y < M and Y <= 64:
        out.append(("fsdp_tp", Y, max(1, axes - 1), 1, 1))
        Y *= 2
    return out


def _gpu_layouts(cluster: GpuCluster, M: int, layers: int) -> list[tuple[str, int, int, int, int]]:
    """(strategy, Y, M_X, M_Y, P) on a GPU cluster: DP, FSDP, TP inside one node, FSDP x TP with TP in a node,
    and the book's recipe for large models, TP in a node x P pipeline stages x ZeRO-1 data parallelism (P
    dividing the layers)."""
    n = cluster.gpus_per_node
    out = [("dp", 1, 1, 1, 1), ("fsdp", 1, 1, 1, 1)]
    if M <= n:
        out.append(("tp", M, 1, 1, 1))
    tp_degrees = [Y for Y in (2, 4, 8, 16, 32, 64) if Y <= n and Y < M]
    out += [("fsdp_tp", Y, 1, 1, 1) for Y in tp_degrees]
    out += [("dp_tp", Y, 1, 1, P) for Y in tp_degrees for P in (2, 4, 8, 16, 32)
            if layers % P == 0 and Y * P <= M]
    return out


def _per_chip_memory(state: Memory, strategy: str, X: int, Y: int, P: int, chips: int) -> float:
    """Bytes per chip of a layout: ZeRO-3 shards everything over all chips (FSDP); plain DP replicates the
    weights and optimizer; DP with TP and pipelining splits them over the Y·P chips of a replica and, as
    ZeRO-1, the optimizer state also over the X replicas. Saved activations split over all chips."""
    if strategy == "dp":
        return state.params + state.grads + state.optimizer + state.activations / chips
    if strategy == "dp_tp":
        return (state.params + state.grads) / (Y * P) + state.optimizer / (X * Y * P) + state.activations / chips
    return state.total / chips


def _largest_divisor(n: int, cap: int, ok: Callable[[int], bool] = lambda d: True) -> int:
    """The largest d <= cap that divides n and passes `ok` (1 at worst)."""
    return next((d for d in range(min(cap, n), 0, -1) if n % d == 0 and ok(d)), 1)


def _whole_nodes(used: int, node: int, available: int) -> bool:
    """Whether `used` GPUs sit in whole nodes of `node` GPUs among `available`: inside one node, or spread evenly
    over the fewest nodes that hold them, no more nodes than `available` has whole."""
    nodes = -(-used // node)
    return used <= min(node, available) or (used % nodes == 0 and nodes <= available // node)


@checks(n_chips="count", batch_tokens="size", seq_len="count", optimizer=OPTIMIZERS, sequence_sharding="flag",
        efficiency="?text", tp_overlap="flag", fsdp="?flag")
def plan(model: TransformerConfig | str, chip: Chip | str | GpuCluster, n_chips: int, batch_tokens: float,
         seq_len: int = 4096, saves_per_layer: float | str = 4, optimizer: str = "adam",
         sequence_sharding: bool = True, efficiency: str | None = None, tp_overlap: bool = False,
         fsdp: bool | None = None) -> TrainingPlan:
    """Search DP, FSDP, TP and FSDP x TP layouts (plus pure DP across slices over DCN when `n_chips` exceeds a
    pod) and return the fastest that fits in HBM, with a table of every candidate and why it lost.

    The data-parallel degree must divide the batch: in sequences, or in tokens with `sequence_sharding`; a
    layout uses the most chips for which it does (the book's 2048 x 4 on a pod of 8960 for 4M tokens).
    On a `GpuCluster` (n_chips of its GPUs), TP stays inside a node and FSDP/DP runs over the network.

    `efficiency='calibrated'` (or 'ideal') runs `search` instead: the layouts of published runs, priced by
    `training.predict` and kept only where their calibrated memory fits (`tp_overlap`: the framework hides
    TP collectives behind the matmuls, as Megatron-Core's --tp-comm-overlap does; `fsdp`: None tries ZeRO-1 and
    FSDP, False only ZeRO-1 (a framework without FSDP, as Megatron-Core's distributed optimizer in 2024), True only
    FSDP).
    """
    if efficiency is not None:
        return search(model, chip, n_chips, batch_tokens, seq_len, efficiency=efficiency, tp_overlap=tp_overlap,
                      fsdp=fsdp)
    model = get_model(model)
    hardware, chip = resolve(chip)
    cluster = hardware if isinstance(hardware, GpuCluster) else None
    n_chips = check_int("n_chips", n_chips)
    if cluster and n_chips > cluster.gpus:
        raise ValueError(f"n_chips={n_chips} exceeds the cluster's {cluster.gpus} GPUs")
    if batch_tokens < seq_len or seq_len <= 0 or batch_tokens % seq_len:
        raise ValueError(f"batch_tokens={batch_tokens!r} must be a whole number of sequences of seq_len={seq_len!r}")
    pod = n_chips if cluster else math.prod(chip.max_slice or (n_chips,))
    slices = max(1, math.ceil(n_chips / pod))
    if slices > 1 and not chip.dcn_bandwidth:
        raise ValueError(f"n_chips={n_chips} needs {slices} slices of {chip.name} joined over DCN, and its "
                         "dcn_bandwidth is unknown; use at most one pod or a chip with a DCN figure")
    units = int(batch_tokens if sequence_sharding else batch_tokens // seq_len)
    if units % slices:
        raise ValueError(f"the batch ({units} {'tokens' if sequence_sharding else 'sequences'}) does not split "
                         f"evenly over {slices} slices")
    M = n_chips // slices
    state = memory(model, batch_tokens, 1, saves_per_layer, optimizer)
    rows, best, best_memory = [], None, 0.0
    for strategy, Y, M_X, M_Y, P in _gpu_layouts(cluster, M, model.L) if cluster else _layouts(chip, M):
        whole = (lambda d, YP=Y * P: _whole_nodes(d * YP, cluster.gpus_per_node, M)) if cluster else (lambda d: True)
        X = _largest_divisor(units // slices, M // (Y * P), whole) if strategy != "tp" else 1
        if cluster and not whole(X):
            continue  # TP x PP alone does not fit whole nodes of this cluster
        used = X * Y * P
        microbatches = max(1, min(4 * P, int(batch_tokens / seq_len / (X * slices))))
        est = step_time(model, cluster or chip, used, batch_tokens / slices, strategy, X=X, Y=Y, M_X=M_X, M_Y=M_Y,
                        seq_len=seq_len, P=P, microbatches=microbatches)
        if slices > 1:
            dcn = 2 * model.param_count() * 2 / (used * chip.dcn_bandwidth)
            est = dataclasses.replace(est, t_comms=max(est.t_comms, dcn))  # DCN and ICI run at once
        per_chip = _per_chip_memory(state, strategy, X * slices, Y, P, used * slices)
        why = "" if per_chip <= chip.hbm_bytes else \
            f"memory: {fmt_bytes(per_chip)} per chip > {fmt_bytes(chip.hbm_bytes)} of HBM"
        rows.append({"strategy": strategy, "FSDP/DP": X, "TP": Y, "PP": P, "chips": used * slices,
                     "memory/chip": per_chip, "T_math": est.t_math, "T_comms": est.t_comms, "step": est.time,
                     "why not": why, "_key": (strategy, X, Y, P, est)})
        if not why and (best is None or (est.time, per_chip) < (best[4].time, best_memory)):
            best, best_memory = (strategy, X, Y, P, est), per_chip
    if best is None:
        raise ValueError(f"no layout of {model.name} fits {n_chips} × {chip.name} at batch {batch_tokens:g}: "
                         + "; ".join(r["why not"] for r in rows[:3]))
    for row in rows:
        if not row["why not"]:
            e = row["_key"][4]
            row["why not"] = ("chosen" if row["_key"] == best else
                              f"comms-bound: {e.t_comms / e.t_math:.2f}× the compute" if e.bound != "compute"
                              else f"{e.time / best[4].time - 1:.0%} slower")
        del row["_key"]
    formats = {"memory/chip": fmt_bytes, "T_math": fmt_time, "T_comms": fmt_time, "step": fmt_time}
    table = Table(rows, formats=formats, title=f"training layouts for {model.name} on {n_chips} × {chip.name}")
    strategy, X, Y, P, est = best
    return TrainingPlan(model, chip, n_chips, batch_tokens, strategy, slices, X, Y, P, est, table,
                        memory_per_chip=best_memory)


@checks(cluster=is_a(GpuCluster), batch_tokens="size", tp="count", pp="count", ep="count", E="count", k="count")
def check_parallelism(cluster: GpuCluster, batch_tokens: float, tp: int = 1, pp: int = 1, ep: int = 1,
                      E: int = 1, k: int = 1) -> dict[str, float | str]:
    """Check a GPU training layout the way ch. 12 checks Megatron-LM's published configs: tokens per GPU
    against the data-parallel threshold once each replica spans tp·pp·ep GPUs (`training.min_tokens_per_chip`)."""
    tp, pp, ep = (check_int(name, value) for name, value in (("tp", tp), ("pp", pp), ("ep", ep)))
    replica = tp * pp * ep
    if cluster.gpus % replica:
        raise ValueError(f"tp·pp·ep = {replica} must divide the cluster's {cluster.gpus} GPUs")
    per_gpu = batch_tokens / cluster.gpus
    critical = min_tokens_per_chip("dp", cluster, model_parallel=replica, E=E, k=k)
    return {"GPUs": cluster.gpus, "model parallel": replica, "data parallel": cluster.gpus // replica,
            "tokens/GPU": per_gpu, "critical tokens/GPU": critical,
            "bound": "compute" if per_gpu >= critical else "comms"}


def _search_layouts(n_chips: int, per_node: int, layers: int, sequences: int, long: bool,
                    sharding: tuple[bool, ...] = (False, True)):
    """(tp, pp, cp, virtual_stages, fsdp, recompute) worth pricing: TP within a node, PP up to 64 stages with
    up to 4 virtual stages, CP only for long sequences, a data-parallel degree that divides the batch, and
    ZeRO-1 or FSDP as `sharding` allows."""
    for tp in (t for t in (1, 2, 4, 8, 16, 32, 64, 72) if t <= per_node):
        for cp in ((1, 2, 4, 8, 16, 32) if long else (1,)):
            for pp in (p for p in (1, 2, 4, 8, 16, 32, 64) if p <= layers):
                if n_chips % (tp * pp * cp) or sequences % (n_chips // (tp * pp * cp)):
                    continue
                for v in ((1, 2, 4) if pp > 1 else (1,)):
                    if pp * v > layers:
                        continue
                    for fsdp in sharding:
                        for recompute in ("selective", "full"):
                            yield tp, pp, cp, v, fsdp, recompute


@checks(n_chips="count", batch_tokens="size", seq_len="count", efficiency="text", tp_overlap="flag", fsdp="?flag")
def search(model: TransformerConfig | str, hardware: Chip | str | GpuCluster, n_chips: int, batch_tokens: float,
           seq_len: int, efficiency: str = "calibrated", tp_overlap: bool = False,
           fsdp: bool | None = None) -> TrainingPlan:
    """Return the fastest published-style layout of `model` on `n_chips` GPUs whose calibrated memory fits:
    every TP (in a node) × PP (1-64 stages, v = 1, 2 or 4 virtual stages) × CP (for sequences of 32k tokens
    or more) × ZeRO-1 or FSDP × selective or full recompute, microbatches of one sequence, each priced by
    `training.predict` with `efficiency` ('calibrated' by default; memory is always the calibrated count) and
    `tp_overlap` (whether the framework overlaps TP collectives with compute); `fsdp` None tries ZeRO-1 and FSDP,
    a flag only the one the framework has.
    The chosen plan carries its prediction and the ideal one; `candidates` lists the ten fastest that fit
    and how many did not."""
    model = get_model(model)
    hw, chip = resolve(hardware)
    n_chips = check_int("n_chips", n_chips)
    if chip.kind != "gpu":
        raise ValueError(f"search lays out GPU clusters (TP inside an NVLink node); {chip.name} is a TPU: "
                         "use plan() without efficiency")
    if seq_len <= 0 or batch_tokens < seq_len or batch_tokens % seq_len:
        raise ValueError(f"batch_tokens={batch_tokens!r} must be a whole number of sequences of seq_len={seq_len!r}")
    cluster = hw if isinstance(hw, GpuCluster) else GpuCluster(chip, gpus=n_chips)
    if cluster.gpus != n_chips:
        cluster = cluster.subset(n_chips)
    fitting, too_big = [], 0
    sharding = (False, True) if fsdp is None else (fsdp,)
    for tp, pp, cp, v, sharded, recompute in _search_layouts(n_chips, cluster.gpus_per_node, model.L,
                                                             int(batch_tokens // seq_len), seq_len >= 32768, sharding):
        p = predict(model, cluster, n_chips, batch_tokens, seq_len, tp=tp, pp=pp, cp=cp, fsdp=sharded,
                    virtual_stages=v, recompute=recompute, efficiency=efficiency, tp_overlap=tp_overlap)
        if p.fits:
            fitting.append(p)
        else:
            too_big += 1
    if not fitting:
        raise ValueError(f"no layout of {model.name} fits {n_chips} × {chip.name} at {batch_tokens:g} tokens of "
                         f"{seq_len} ({too_big} tried)")
    fitting.sort(key=lambda p: (p.step_time, p.memory_per_chip))
    best = fitting[0]
    lay = best.layout
    ideal = predict(model, cluster, n_chips, batch_tokens, seq_len, tp=lay["tp"], pp=lay["pp"], cp=lay["cp"],
                    fsdp=lay["fsdp"], virtual_stages=lay["virtual_stages"], recompute=lay["recompute"],
                    efficiency="ideal", tp_overlap=tp_overlap)
    rows = [{**{k: p.layout[k] for k in ("tp", "pp", "virtual_stages", "cp", "dp", "fsdp", "recompute")},
             "step": p.step_time, "MFU": p.mfu, "memory/chip": p.memory_per_chip} for p in fitting[:10]]
    table = Table(rows, formats={"step": fmt_time, "MFU": lambda v: f"{v:.1%}", "memory/chip": fmt_bytes},
                  title=f"fastest fitting layouts of {model.name} on {n_chips} × {chip.name} ({efficiency}; "
                        f"{too_big} layouts did not fit)")
    model_flops = best.mfu * best.step_time * chip.peak_flops()
    est = Estimate(model_flops, 0.0, model_flops / chip.peak_flops(), best.step_time, channel="network",
                   label=f"{model.name} step ({efficiency})")
    return TrainingPlan(model, chip, n_chips, batch_tokens, "tp_pp_cp_" + ("fsdp" if lay["fsdp"] else "zero1"),
                        1, lay["dp"], lay["tp"], lay["pp"], est, table, cp=lay["cp"], prediction=best, ideal=ideal,
                        memory_per_chip=best.memory_per_chip)
