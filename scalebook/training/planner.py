"""The layout search: which layout trains a model fastest on a TPU slice or a GPU cluster, and fits.

`plan` runs one candidate loop (`_search`) over `Layout`s, priced by either model:

- the book's (`efficiency='book'`, the default): ch. 5's strategies (DP, FSDP, TP, FSDP x TP; on GPU clusters
  also TP in a node x pipeline x ZeRO-1), each priced by `step_time` with the book's 10 bytes/parameter memory, plus
  pure data parallelism across slices over DCN when a run spans pods;
- the ideal or calibrated prediction (`efficiency='ideal'` or `'calibrated'`): the layouts of published runs —
  TP (inside an NVLink node, or over a TPU slice's ICI) x PP (with virtual stages) x CP (long sequences) x EP
  (MoE models) x ZeRO-1 or FSDP, recompute selective or full — priced by `predict`, memory counted the
  mixed-precision way.

Either way the answer is a `TrainingPlan` that carries the chosen `Layout`, what priced it, and a table of the
candidates. `check_parallelism` checks a published GPU layout the way ch. 12 does.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..estimate import Estimate
from ..hardware.chips import Chip
from ..hardware.gpu import GpuCluster, resolve
from ..models import TransformerConfig, get_model
from ..tables import Table
from ..units import check_choice, check_int, checks, fmt_bytes, fmt_time, is_a
from .book import min_tokens_per_chip, step_time
from .footprint import OPTIMIZERS, RECOMPUTE, REMAT_OF, REMAT_SAVES, Memory, memory
from .frameworks import DEFAULT_FRAMEWORK, Framework, check_framework
from .layout import Layout, degree_or_flag
from .prediction import Prediction, predict

__all__ = ["PLAN_MODES", "TrainingPlan", "plan", "check_parallelism"]


@dataclass(frozen=True, repr=False)
class TrainingPlan:
    """The planner's answer: the chosen `layout`, its step `estimate`, and the candidates with why they lost.

    Degrees: `dp` pure data parallelism across slices (over DCN), `fsdp` the FSDP/data degree inside a slice,
    `tp` tensor, `pp` pipeline stages, `cp` context, `ep` expert parallelism. A plan priced by `predict`
    (`plan(..., efficiency=...)`) carries that `prediction` and the `ideal` one of the same layout.
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
    ep: int = 1
    layout: Layout | None = None

    @property
    def fits(self) -> bool:
        """Whether the layout's memory per chip fits the chip's HBM (`plan` returns only layouts that do)."""
        return self.memory_per_chip <= self.chip.hbm_bytes

    @property
    def mfu(self) -> float:
        """The best MFU this layout allows: compute time over step time (1 when compute-bound, a bound); from a
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
            settings = self.prediction.settings
            return (f"{self.model.name} on {self.n_chips} × {self.chip.name}: {self.layout}"
                    f"{'' if self.layout.sharded else ' (ZeRO-1)'}, recompute {settings['recompute']}; "
                    f"{self.prediction.efficiency} MFU {self.mfu:.1%} (ideal bound {self.ideal_mfu:.1%}), "
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


@dataclass(frozen=True)
class _Priced:
    """One candidate as a pricing model saw it: its step seconds, bytes per chip, and the row it shows."""

    layout: Layout
    step: float
    memory_per_chip: float
    fits: bool
    row: dict
    strategy: str = ""
    estimate: Estimate | None = None
    prediction: Prediction | None = None
    settings: tuple = ()


def _search(candidates: Iterable, price: Callable[..., _Priced | None]) -> tuple[_Priced, list[_Priced]]:
    """The one candidate loop: price every candidate, return the fastest that fits (ties: less memory) and all
    priced ones in the order tried."""
    priced = [p for p in (price(c) for c in candidates) if p is not None]
    fitting = [p for p in priced if p.fits]
    if not fitting:
        return None, priced
    return min(fitting, key=lambda p: (p.step, p.memory_per_chip)), priced


# ----------------------------------------------------------------------------------------------- the book's model

def _axes_of(chip: Chip) -> int:
    """Physical torus axes of a chip's slices (3 on v4p/v5p/TPU7x, 2 on v5e/v6e)."""
    return len(chip.max_slice or (0, 0))


def _book_layouts(chip: Chip, M: int) -> list[tuple[str, int, int, int, int]]:
    """(strategy, Y, M_X, M_Y, P) for layouts of up to M TPU chips: DP, FSDP, TP, and FSDP x TP for
    power-of-two Y."""
    axes = _axes_of(chip)
    out = [("dp", 1, axes, 1, 1), ("fsdp", 1, axes, 1, 1)]
    if M <= 64:
        out.append(("tp", M, 1, axes, 1))
    Y = 2
    while Y < M and Y <= 64:
        out.append(("fsdp_tp", Y, max(1, axes - 1), 1, 1))
        Y *= 2
    return out


def _book_gpu_layouts(cluster: GpuCluster, M: int, layers: int) -> list[tuple[str, int, int, int, int]]:
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


def _book_memory(state: Memory, strategy: str, X: int, Y: int, P: int, chips: int) -> float:
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


def _book_plan(model: TransformerConfig, hardware: Chip | GpuCluster, chip: Chip, n_chips: int,
               batch_tokens: float, seq_len: int, saves_per_layer: float | str, optimizer: str,
               sequence_sharding: bool, tp: int | None, pp: int | None) -> TrainingPlan:
    """`plan` with the book's model (see `plan`)."""
    cluster = hardware if isinstance(hardware, GpuCluster) else None
    if cluster and n_chips > cluster.gpus:
        raise ValueError(f"n_chips={n_chips} exceeds the cluster's {cluster.gpus} GPUs")
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
    options = _book_gpu_layouts(cluster, M, model.L) if cluster else _book_layouts(chip, M)
    options = [o for o in options if (tp is None or o[1] == tp) and (pp is None or o[4] == pp)]

    def price(option: tuple[str, int, int, int, int]) -> _Priced | None:
        strategy, Y, M_X, M_Y, P = option
        # whole nodes of the cluster, or all of its GPUs (a cluster of 256 GB300s ends in a partial rack)
        whole = (lambda d, YP=Y * P: d * YP == cluster.gpus or _whole_nodes(d * YP, cluster.gpus_per_node, M)) \
            if cluster else (lambda d: True)
        X = _largest_divisor(units // slices, M // (Y * P), whole) if strategy != "tp" else 1
        if cluster and not whole(X):
            return None  # TP x PP alone does not fit whole nodes of this cluster
        used = X * Y * P
        microbatches = max(1, min(4 * P, int(batch_tokens / seq_len / (X * slices))))
        est = step_time(model, cluster or chip, used, batch_tokens / slices, strategy, X=X, Y=Y, M_X=M_X, M_Y=M_Y,
                        seq_len=seq_len, P=P, microbatches=microbatches)
        if slices > 1:
            dcn = 2 * model.param_count() * 2 / (used * chip.dcn_bandwidth)
            est = dataclasses.replace(est, t_comms=max(est.t_comms, dcn))  # DCN and ICI run at once
        per_chip = _book_memory(state, strategy, X * slices, Y, P, used * slices)
        fits = per_chip <= chip.hbm_bytes
        layout = Layout.from_strategy(strategy, X, Y, P)
        layout = dataclasses.replace(layout, dp=layout.dp * slices)
        too_big = f"memory: {fmt_bytes(per_chip)} per chip > {fmt_bytes(chip.hbm_bytes)} of HBM"
        row = {"strategy": strategy, "FSDP/DP": X, "TP": Y, "PP": P, "chips": used * slices,
               "memory/chip": per_chip, "T_math": est.t_math, "T_comms": est.t_comms, "step": est.time,
               "why not": "" if fits else too_big}
        return _Priced(layout, est.time, per_chip, fits, row, strategy, est, settings=(X, Y, P))

    best, priced = _search(options, price)
    if best is None:
        raise ValueError(f"no layout of {model.name} fits {n_chips} × {chip.name} at batch {batch_tokens:g}: "
                         + "; ".join(p.row["why not"] for p in priced[:3]))
    for p in priced:
        e = p.estimate
        if not p.row["why not"]:
            p.row["why not"] = ("chosen" if p is best else
                                f"comms-bound: {e.t_comms / e.t_math:.2f}× the compute" if e.bound != "compute"
                                else f"{e.time / best.step - 1:.0%} slower")
    formats = {"memory/chip": fmt_bytes, "T_math": fmt_time, "T_comms": fmt_time, "step": fmt_time}
    table = Table([p.row for p in priced], formats=formats,
                  title=f"training layouts for {model.name} on {n_chips} × {chip.name}")
    X, Y, P = best.settings
    return TrainingPlan(model, chip, n_chips, batch_tokens, best.strategy, slices, X, Y, P, best.estimate, table,
                        memory_per_chip=best.memory_per_chip, layout=best.layout)


# ----------------------------------------------------------------------------------- the predicted (published) one

_SEARCH_TP = (1, 2, 4, 8, 16, 32, 64, 72)
_SEARCH_PP = (1, 2, 4, 8, 16, 32, 64)
_SEARCH_CP = (1, 2, 4, 8, 16, 32)
_SEARCH_EP = (1, 2, 4, 8, 16, 32, 64)


def _published_layouts(model: TransformerConfig, n_chips: int, max_tp: int, sequences: int, long: bool,
                       fixed: dict[str, int | None], sharding: tuple[bool, ...],
                       recomputes: tuple[str, ...]) -> Iterator[tuple[Layout, str]]:
    """(Layout, recompute) worth pricing: TP up to `max_tp` (a node, or a slice's ICI), PP up to 64 stages
    with up to 4 virtual stages, CP only for long sequences, EP for MoE models (dividing the experts and a
    stage's chips: within the data-parallel ones, or folded over TP x DP as Megatron-Core does), a
    data-parallel degree that divides the batch's sequences, its chips ZeRO-1 (dp) or FSDP (fsdp) as `sharding`
    allows; a degree in `fixed` is not searched (a fixed fsdp degree > 1 is all the data-parallel chips)."""
    def options(name: str, values: tuple[int, ...], ok: Callable[[int], bool]) -> tuple[int, ...]:
        return (fixed[name],) if fixed.get(name) is not None else tuple(v for v in values if ok(v))

    for tp in options("tp", _SEARCH_TP, lambda t: t <= max_tp):
        for cp in options("cp", _SEARCH_CP, lambda c: long or c == 1):
            for pp in options("pp", _SEARCH_PP, lambda p: p <= model.L):
                if n_chips % (tp * pp * cp) or sequences % (n_chips // (tp * pp * cp)):
                    continue
                data = n_chips // (tp * pp * cp)
                for ep in options("ep", _SEARCH_EP, lambda e: e == 1 or model.is_moe and model.E % e == 0):
                    if (data * cp * tp) % ep:
                        continue
                    for v in ((1, 2, 4) if pp > 1 else (1,)):
                        if pp * v > model.L:
                            continue
                        for sharded in sharding:
                            if sharded and (data == 1 or fixed.get("fsdp") not in (None, data)):
                                continue  # FSDP over one chip is ZeRO-1's layout, priced once
                            layout = Layout(dp=1 if sharded else data, fsdp=data if sharded else 1, tp=tp, pp=pp,
                                            cp=cp, ep=ep, virtual_stages=v)
                            for recompute in recomputes:
                                yield layout, recompute


def _predicted_plan(model: TransformerConfig, hardware: Chip | GpuCluster, chip: Chip, n_chips: int,
                    batch_tokens: float, seq_len: int, efficiency: str, tp_overlap: bool, fsdp: int | bool | None,
                    recompute: str | None, microbatch_tokens: float | None,
                    fixed: dict[str, int | None], framework: str | Framework) -> TrainingPlan:
    """`plan` priced by `predict` (see `plan`)."""
    if chip.kind == "gpu":
        hw = hardware if isinstance(hardware, GpuCluster) else GpuCluster(chip, gpus=n_chips)
        hw = hw.subset(n_chips) if hw.gpus != n_chips else hw
        max_tp = hw.gpus_per_node
    else:
        pod = math.prod(chip.max_slice or (n_chips,))
        if n_chips > pod:
            raise ValueError(f"n_chips={n_chips}: the predicted search lays out one {chip.name} slice (at most "
                             f"{pod} chips); across slices only the book's model (efficiency='book') plans data "
                             "parallelism over DCN")
        hw, max_tp = chip, 16
    sharding = (False, True) if fsdp is None else (fsdp,) if isinstance(fsdp, bool) else (fsdp > 1,)
    recomputes = ("selective", "full") if recompute is None else (recompute,)
    layouts = _published_layouts(model, n_chips, max_tp, int(batch_tokens // seq_len), seq_len >= 32768,
                                 {**fixed, "fsdp": None if isinstance(fsdp, bool) else fsdp}, sharding, recomputes)

    def price(candidate: tuple[Layout, str], mode: str = efficiency) -> _Priced:
        lay, policy = candidate
        p = predict(model, hw, n_chips, batch_tokens, seq_len, layout=lay, recompute=policy, efficiency=mode,
                    tp_overlap=tp_overlap, microbatch_tokens=microbatch_tokens, framework=framework)
        row = {"layout": str(p.layout), "ZeRO": 3 if lay.sharded else 1, "recompute": policy, "step": p.step_time,
               "MFU": p.mfu, "memory/chip": p.memory_per_chip}
        return _Priced(p.layout, p.step_time, p.memory_per_chip, p.fits, row, prediction=p, settings=candidate)

    best, priced = _search(layouts, price)
    if best is None:
        raise ValueError(f"no layout of {model.name} fits {n_chips} × {chip.name} at {batch_tokens:g} tokens of "
                         f"{seq_len} ({len(priced)} tried; every one needs more than {fmt_bytes(chip.hbm_bytes)} "
                         f"of HBM per chip)")
    fitting = sorted((p for p in priced if p.fits), key=lambda p: (p.step, p.memory_per_chip))
    too_big = len(priced) - len(fitting)
    table = Table([p.row for p in fitting[:10]],
                  formats={"step": fmt_time, "MFU": lambda v: f"{v:.1%}", "memory/chip": fmt_bytes},
                  title=f"fastest fitting layouts of {model.name} on {n_chips} × {chip.name} ({efficiency}; "
                        f"{too_big} layouts did not fit)")
    ideal = price(best.settings, "ideal").prediction
    lay = best.layout
    flops = best.prediction.mfu * best.step * chip.peak_flops()
    est = Estimate(flops, 0.0, flops / chip.peak_flops(), best.step, channel="network" if chip.kind == "gpu" else "ICI",
                   label=f"{model.name} step ({efficiency})")
    kind = "fsdp" if lay.sharded else "zero1"
    return TrainingPlan(model, chip, n_chips, batch_tokens, f"tp_pp_cp_{kind}", 1, lay.data_parallel, lay.tp, lay.pp,
                        est, table, cp=lay.cp, prediction=best.prediction, ideal=ideal,
                        memory_per_chip=best.memory_per_chip, ep=lay.ep, layout=lay)


PLAN_MODES = ("book", "ideal", "calibrated")


def _mode(name: str, value: object) -> object:
    """A `checks` kind for `plan`'s `efficiency`: one of `PLAN_MODES`, or the old None (deprecated: warns)."""
    if value is None:
        warnings.warn(f"{name}=None is deprecated and goes in release 0.3: the book's model is "
                      f"{name}='book' (the default)", DeprecationWarning, stacklevel=3)
        return value
    return check_choice(name, value, PLAN_MODES)


def _none_or(allowed: tuple[str, ...]) -> Callable[[str, object], object]:
    """A `checks` kind: None, or one of `allowed`."""
    return lambda name, value: value if value is None else check_choice(name, value, allowed)


@checks(n_chips="count", batch_tokens="size", seq_len="count", optimizer=OPTIMIZERS, sequence_sharding="flag",
        efficiency=_mode, tp_overlap="flag", fsdp=degree_or_flag, recompute=_none_or(RECOMPUTE),
        microbatch_tokens="?size", tp="?count", pp="?count", cp="?count", ep="?count", framework=check_framework)
def plan(model: TransformerConfig | str, hardware: Chip | str | GpuCluster, n_chips: int, batch_tokens: float,
         seq_len: int = 4096, saves_per_layer: float | str = 4, optimizer: str = "adam",
         sequence_sharding: bool = True, efficiency: str = "book", tp_overlap: bool = False,
         fsdp: int | None = None, recompute: str | None = None, microbatch_tokens: float | None = None,
         tp: int | None = None, pp: int | None = None, cp: int | None = None, ep: int | None = None,
         framework: str | Framework = DEFAULT_FRAMEWORK) -> TrainingPlan:
    """Return the fastest layout of `model` on `n_chips` of `hardware` (a chip or a `GpuCluster`) that fits in
    HBM, for steps of `batch_tokens` tokens in sequences of `seq_len`, with the table of candidates.

    `efficiency='book'` (the default), the book's model: DP, FSDP, TP and FSDP x TP (GPU clusters: TP in a node,
    and TP x PP x ZeRO-1) priced by `step_time`, plus pure DP across slices over DCN when `n_chips` exceeds a
    pod. The data-parallel degree must divide the batch: in sequences, or in tokens with `sequence_sharding`; a
    layout uses the most chips for which it does (the book's 2048 x 4 on a pod of 8960 for 4M tokens).
    `saves_per_layer` (or `recompute`, mapped to the book's save counts) sets the activations. Its MFU is a bound.

    `efficiency='ideal'` or `'calibrated'`: the layouts of published runs (TP x PP x CP x EP x ZeRO-1/FSDP,
    selective or full recompute, one sequence per microbatch unless `microbatch_tokens`), each priced by
    `predict` and kept only where its memory fits; on a GPU cluster or one TPU slice. `tp_overlap`: the
    framework hides TP collectives behind the matmuls (Megatron-Core's --tp-comm-overlap). `framework`: the code
    that will run the step (`predict`'s families; the calibrated step is divided by its share, so the ranking
    does not move, the step times and MFU do; the book's model and the ideal bound have no framework).

    `tp`, `pp`, `cp`, `ep` and `fsdp` fix a degree instead of searching it (the book's model searches TP and PP
    only): `fsdp=1` keeps the data-parallel chips ZeRO-1, as a framework without FSDP does; a degree above 1 shards
    them all, in layouts that have that many. The model and the hardware are resolved here, once, and passed on
    as objects.
    """
    model = model if isinstance(model, TransformerConfig) else get_model(model)
    hardware, chip = resolve(hardware)
    efficiency = "book" if efficiency is None else efficiency
    if seq_len <= 0 or batch_tokens < seq_len or batch_tokens % seq_len:
        raise ValueError(f"batch_tokens={batch_tokens!r} must be a whole number of sequences of seq_len={seq_len!r}")
    if efficiency == "book":
        for name, value in (("cp", cp), ("ep", ep), ("microbatch_tokens", microbatch_tokens), ("fsdp", fsdp)):
            if value is not None and (name == "fsdp" or value != 1):
                raise ValueError(f"{name}={value!r}: the book's model (efficiency='book') has no {name} to fix; "
                                 f"pass efficiency='ideal' or 'calibrated'")
        saves = REMAT_SAVES[REMAT_OF[recompute]] if recompute is not None else saves_per_layer
        return _book_plan(model, hardware, chip, n_chips, batch_tokens, seq_len, saves, optimizer,
                          sequence_sharding, tp, pp)
    if ep not in (None, 1) and not model.is_moe:
        raise ValueError(f"ep={ep} needs a mixture-of-experts model; {model.name or 'this model'} has E=1")
    return _predicted_plan(model, hardware, chip, n_chips, batch_tokens, seq_len, efficiency, tp_overlap, fsdp,
                           recompute, microbatch_tokens, {"tp": tp, "pp": pp, "cp": cp, "ep": ep}, framework)


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
