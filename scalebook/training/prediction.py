"""A published training layout, predicted: step time, throughput, MFU and memory per chip, ideal or calibrated.

`predict` (served as `sb.training.predict`) takes a layout as a paper describes it — tensor, pipeline (with
virtual stages), context and expert parallel degrees, ZeRO-1 or FSDP data parallelism, the recompute policy, the
compute dtype — and prices one step term by term, one function per term (`terms`): the FLOPs, the bytes of
memory-bound elementwise work, the last stage's head and loss, each parallelism's collectives (the part that hides
behind compute and the part that does not), the pipeline bubble and sends, the optimizer update, the fixed cost of
each layer's kernels, the slowdown of compute under overlapped collectives, and what a framework leaves on the
table. `efficiency="ideal"` is the book's bound (every peak reached, everything overlapped: the FLOPs at peak,
nothing else on the critical path); `"calibrated"` uses the chip's sourced factors (`Chip.efficiency`). Memory is
`footprint.training_memory`'s count; chapter 13 holds both against published runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..estimate import feasibility
from ..gemm import layer_efficiency
from ..hardware.chips import Chip, Efficiency
from ..hardware.gpu import GpuCluster, resolve
from ..hardware.topology import TpuMesh
from ..models import TransformerConfig, get_model
from ..tables import Table
from ..units import checks, fmt_bytes, fmt_time, is_a
from .experts import busiest_load, load_factor, moe_terms
from .footprint import RECOMPUTE, training_memory
from .frameworks import DEFAULT_FRAMEWORK, Framework, check_framework, get_framework
from .layout import Layout, degree_or_flag
from .terms import (
    CP_ROTATES,
    CROSS_ENTROPY_BYTES,
    FP8_RECIPES,
    SCORE_BYTES,
    StepContext,
    collective_hardware,
    compute_term,
    cp_term,
    dcn_term,
    dp_term,
    elementwise_term,
    ep_term,
    fixed_term,
    fp8_cast_term,
    last_stage_term,
    optimizer_term,
    sends_term,
    tp_term,
)

__all__ = ["CROSS_ENTROPY_BYTES", "SCORE_BYTES", "Prediction", "predict", "layout_of"]

@dataclass(frozen=True)
class Prediction:
    """What `predict` expects of one training step. Times in seconds, memory in bytes per chip.

    `breakdown` names the seconds on the step's critical path: 'compute' (the model's FLOPs but attention's),
    'attention' (the attention's FLOPs), 'recompute' (FLOPs done again in the backward pass) — in the ideal mode
    all three at peak and nothing else; calibrated also 'gemm shape' (what tile and wave quantization add to the
    matmuls, `gemm.layer_efficiency`), 'elementwise' (norms, activations, softmax, dropout: bytes through HBM),
    'fp8 cast' (in FP8, each matmul's inputs and output gradients cast from bf16, `terms.fp8_cast_term`),
    'last stage' (the head's FLOPs and the loss's bytes the last pipeline stage adds to the average one),
    'fixed' (each layer's kernels' fixed cost, `Efficiency.layer_overhead`), 'interference' (compute slowed
    while hidden collectives share the chip, `Efficiency.interference`), 'bubble' (pipeline stages idle),
    'optimizer' (the Adam update), an MoE's 'routing', 'permute', 'expert imbalance' or 'capacity padding' and
    'grouped gemm' (`experts.moe_terms`), the EXPOSED part of each collective ('tp', 'cp', 'ep', 'pp sends', 'dp') and
    'framework' (the share of the modelled rate the framework that ran does not reach, `frameworks`).
    `hidden` holds the collectives' seconds that overlapped compute. `memory` splits `memory_per_chip` into
    weights, gradients, optimizer, activations and logits. `layout` is the `Layout` priced; `settings` the
    rest of what `predict` was told (recompute, dtype, FSDP re-sharding).
    """

    step_time: float
    tokens_per_second_per_chip: float
    mfu: float
    memory_per_chip: float
    fits: bool
    breakdown: dict[str, float]
    hidden: dict[str, float]
    memory: dict[str, float]
    layout: Layout
    settings: dict[str, Any]
    efficiency: str
    hbm_per_chip: float | None = None  # the chip's HBM bytes, for saying plainly when the layout does not fit

    @property
    def summary(self) -> str:
        """One line: the step, throughput, MFU and memory per chip (and why it does not fit, when it does not)."""
        fits = "fits" if self.fits else "does NOT fit"
        plain = "" if self.hbm_per_chip is None else feasibility(self.memory_per_chip, self.hbm_per_chip)
        head = "" if self.fits or not plain else f"{plain}; "
        return head + (f"step {self.step_time:.4g} s, {self.tokens_per_second_per_chip:.4g} tokens/s/chip, MFU "
                       f"{self.mfu:.1%}, {fmt_bytes(self.memory_per_chip)} per chip ({fits})")

    def __str__(self) -> str:
        parts = ", ".join(f"{k} {v * 1e3:.4g} ms" for k, v in self.breakdown.items() if v)
        return f"{self.summary} [{self.efficiency}: {parts}]"

    def table(self) -> Table:
        """The step's critical path, one row per term that costs time (seconds, and its share of the step),
        titled with `summary` and the layout."""
        rows = [{"term": term, "seconds": seconds, "share of the step": seconds / self.step_time}
                for term, seconds in self.breakdown.items() if seconds]
        return Table(rows, formats={"seconds": fmt_time, "share of the step": "{:.1%}".format},
                     title=f"{self.layout} ({self.efficiency}): {self.summary}")

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


@checks(n_chips="count", layout=is_a(Layout, type(None)), slices="count")
def layout_of(n_chips: int, layout: Layout | None, slices: int = 1, **degrees: int | bool | None) -> Layout:
    """The `Layout` a caller meant: `layout` itself, or the one its keyword `degrees` (tp, pp, cp, ep, dp, fsdp,
    virtual_stages; None where not given) build over `n_chips`, with the old flag `fsdp=True` (all the
    data-parallel chips, or those of one slice of `slices`) and `fsdp=False` (ZeRO-1) read as degrees."""
    given = {name: value for name, value in degrees.items() if value is not None}
    if layout is not None:
        if given or slices != 1:
            raise ValueError(f"layout={layout} and {sorted(given) or ['slices']}: give the degrees once, in the "
                             f"layout or as keywords")
        if layout.chips != n_chips:
            raise ValueError(f"layout={layout} occupies {layout.chips} chips, not n_chips={n_chips}")
        return layout
    fsdp = given.pop("fsdp", None)
    if isinstance(fsdp, bool):
        data = n_chips // (given.get("tp", 1) * given.get("pp", 1) * given.get("cp", 1) * slices) or 1
        fsdp = data if fsdp else None
    if slices > 1:
        if fsdp is None or fsdp == 1:
            raise ValueError(f"slices={slices} needs FSDP inside each TPU slice (an fsdp degree)")
        given["dp"] = slices
    lay = Layout.of(n_chips, fsdp=fsdp, **given)
    if slices > 1 and lay.dp != slices:
        raise ValueError(f"slices={slices} must divide the data-parallel chips into slices of fsdp={lay.fsdp}")
    return lay


@checks(n_chips="count", global_batch_tokens="size", seq_len="count", layout=is_a(Layout, type(None)), tp="?count",
        pp="?count", cp="?count", ep="?count", dp="?count", fsdp=degree_or_flag, microbatch_tokens="?size",
        virtual_stages="?count", recompute=RECOMPUTE, dtype="dtype", sequence_parallel="?flag",
        flash_attention="flag", tp_overlap="flag", cp_overlap="flag", grad_bytes="size", master_bytes="size",
        balanced_stages="flag", reshard_after_forward="flag", slices="count", framework=check_framework,
        expert_imbalance=load_factor, capacity_factor=load_factor, ep_overlap="flag", fp8_recipe=FP8_RECIPES,
        cp_rotate=CP_ROTATES, repeat_kv="flag")
def predict(model: TransformerConfig | str, hardware: Chip | str | GpuCluster, n_chips: int,
            global_batch_tokens: float, seq_len: int, *, layout: Layout | None = None, tp: int | None = None,
            pp: int | None = None, cp: int | None = None, ep: int | None = None, dp: int | None = None,
            fsdp: int | None = None, microbatch_tokens: float | None = None, virtual_stages: int | None = None,
            recompute: str = "selective", dtype: str = "bf16", efficiency: str | Efficiency = "calibrated",
            sequence_parallel: bool | None = None, flash_attention: bool = True, tp_overlap: bool = False,
            cp_overlap: bool = True, grad_bytes: float = 4, master_bytes: float = 4,
            balanced_stages: bool = False, reshard_after_forward: bool = True, slices: int = 1,
            framework: str | Framework = DEFAULT_FRAMEWORK,
            expert_imbalance: float | None = None, capacity_factor: float | None = None,
            ep_overlap: bool = False, fp8_recipe: str = "delayed", cp_rotate: str = "ring",
            repeat_kv: bool = False) -> Prediction:
    """Predict one training step of a published layout: time, throughput, MFU and memory per chip.

    The layout is a `Layout` (`layout=`), or its degrees as keywords, which build one (`Layout.of`): `tp`, `pp`
    (with `virtual_stages`), `cp`, `ep`, and the data-parallel chips n_chips / (tp·pp·cp) as `dp` (ZeRO-1,
    the default) and `fsdp` (FSDP: `fsdp=` all of them; a TPU run of several slices, `Layout(dp=slices,
    fsdp=...)` or `slices=`, shards FSDP inside each and all-reduces gradients across them over DCN, as
    MaxText's DCN data parallelism). Expert parallelism splits an MoE's experts `ep` ways over the
    data-parallel chips. A step is `global_batch_tokens` tokens in sequences of `seq_len`; each data-parallel
    replica cuts its share into microbatches of `microbatch_tokens` (default one sequence, or as many as the
    layout's `microbatches` make) that flow through `pp` stages (1F1B, interleaved over `virtual_stages`).

    `efficiency='ideal'` is the book's bound: the hardware FLOPs (model + recompute) at peak, every collective at
    peak bandwidth and hidden behind compute, no bubble. `'calibrated'` puts each term on the critical path as a
    real run has it (see `Prediction.breakdown`), at the chip's sourced factors (`Chip.efficiency`): matmuls at
    the achievable rate in `dtype` scaled by their shapes' tile and wave quantization, a flash kernel's attention
    at its own rate; TP collectives exposed (with `tp_overlap`, each hidden behind its own matmul only), CP's ring
    hidden behind the attention (`cp_overlap=False`: all-gathered first, exposed; `cp_rotate='allgather'`:
    PyTorch's ring attention, gathered once a pass behind the first block only, `terms.cp_term`; `repeat_kv`: the
    blocks carry K/V repeated to every query head, as torchtitan's Llama passes them), EP's AllToAlls exposed; the
    bubble (P-1)/(v·M) of the busy time and the sends; DP as `dp_term` says; each layer's fixed kernel cost; compute
    slowed by `Efficiency.interference` while hidden collectives run; and the busy total divided by the share
    of the modelled rate the `framework` that ran reaches (`frameworks.get_framework`: 'megatron', 'torchtitan',
    'composer', 'maxtext', 'deepspeed' or a `Framework`; the default 'generic' is read off every source).

    FSDP re-shards each layer's weights after use (`reshard_after_forward`, as ZeRO-3, PyTorch's FULL_SHARD
    and MaxText do); `reshard_after_forward=False` keeps them gathered through the step (Llama 3). Gradients
    reduce at `grad_bytes` (fp32 by default, as Megatron's and Llama 3's runs do). `sequence_parallel` defaults
    to on when tp > 1; `flash_attention` (default on) never stores the scores; `balanced_stages`: the first and
    last stages hold one layer fewer, so the head and the loss take the place of a layer on the last one.
    An MoE's mechanisms are `experts.moe_terms`: `expert_imbalance` (the busiest expert group's load over the
    mean; None: uniformly random routing, `experts.random_imbalance`), `capacity_factor` (experts padded to that
    many times their mean rows, tokens beyond dropped; None: dropless), `ep_overlap` (EP's AllToAlls hidden
    behind another microbatch's compute, as DeepSeek's DualPipe and Megatron-Core's EP overlap run them).
    In FP8, `fp8_recipe` says how the casts before each matmul are scaled ('delayed', Transformer Engine's
    default; 'current', per-tensor current scaling, which reads each tensor twice; 'mxfp8', Blackwell's blocks of
    32), which sets their bytes (`terms.FP8_CAST_BYTES`).
    The model and the hardware may be names; given as objects they are used as they are (`plan` resolves them
    once).
    """
    model = model if isinstance(model, TransformerConfig) else get_model(model)
    hw, chip = resolve(hardware.chip if isinstance(hardware, TpuMesh) else hardware)
    lay = layout_of(n_chips, layout, slices, tp=tp, pp=pp, cp=cp, ep=ep, dp=dp, fsdp=fsdp,
                    virtual_stages=virtual_stages)
    eff = chip.efficiency(efficiency)
    if lay.ep > 1 and not model.is_moe:
        raise ValueError(f"ep={lay.ep} needs a mixture-of-experts model; {model.name or 'this model'} has E=1")
    if seq_len % lay.cp:
        raise ValueError(f"seq_len={seq_len} must split evenly over cp={lay.cp}")
    if lay.dp > 1 and lay.sharded and (chip.kind != "tpu" or not chip.dcn_bandwidth):
        raise ValueError(f"layout={lay}: data parallelism across FSDP groups (dp > 1 with fsdp > 1) is a TPU run of "
                         f"several slices joined over DCN; {chip.name} has no DCN figure to price it")
    data = lay.data_parallel
    if microbatch_tokens is None and lay.microbatches is not None:
        microbatch_tokens = global_batch_tokens / data / lay.microbatches
    mb = microbatch_tokens or seq_len
    M = global_batch_tokens / data / mb
    if M < 1 or abs(M - round(M)) > 1e-9:
        raise ValueError(f"global_batch_tokens={global_batch_tokens!r} must give each of the {data} data-parallel "
                         f"replicas a whole number (>= 1) of microbatches of {mb:g} tokens")
    if lay.microbatches not in (None, round(M)):
        raise ValueError(f"layout={lay} has {lay.microbatches} microbatches, and microbatch_tokens="
                         f"{microbatch_tokens!r} makes {round(M)}")
    lay = dataclasses.replace(lay, microbatches=round(M))
    sp = lay.tp > 1 if sequence_parallel is None else sequence_parallel
    s = StepContext(model, chip, collective_hardware(hw, n_chips), lay, n_chips, global_batch_tokens, seq_len, mb,
                    round(M), recompute, dtype, sp, flash_attention, efficiency, eff, expert_imbalance,
                    capacity_factor, ep_overlap, fp8_recipe, cp_rotate, repeat_kv)
    ideal = efficiency == "ideal"
    memory = training_memory(model, seq_len, lay, microbatch_tokens=mb, recompute=recompute, sequence_parallel=sp,
                             flash_attention=flash_attention, grad_bytes=grad_bytes, master_bytes=master_bytes,
                             reshard_after_forward=reshard_after_forward)
    peak = chip.peak_flops(dtype)
    if ideal:
        breakdown, hidden = _ideal(s, peak, grad_bytes, reshard_after_forward)
        step = max(sum(breakdown.values()), *hidden.values())
    else:
        framework_share = get_framework(framework).share_on(eff, dtype)
        breakdown, hidden = _calibrated(s, tp_overlap, cp_overlap, balanced_stages, grad_bytes, master_bytes,
                                        reshard_after_forward, framework_share)
        step = sum(breakdown.values())
    model_flops = model.flops_per_token(seq_len) * global_batch_tokens / n_chips
    return Prediction(
        step_time=step,
        tokens_per_second_per_chip=global_batch_tokens / step / n_chips,
        mfu=model_flops / (step * peak),
        memory_per_chip=sum(memory.values()),
        fits=sum(memory.values()) <= chip.hbm_bytes,
        breakdown=breakdown,
        hidden=hidden,
        memory=memory,
        layout=lay,
        settings={"reshard_after_forward": reshard_after_forward if lay.sharded else None,
                  "recompute": recompute, "dtype": dtype, "tp_overlap": tp_overlap, "fp8_recipe": fp8_recipe,
                  "cp_rotate": cp_rotate if lay.cp > 1 else None,
                  "framework": get_framework(framework).key},
        efficiency=efficiency if isinstance(efficiency, str) else "custom",
        hbm_per_chip=chip.hbm_bytes,
    )


def _ideal(s: StepContext, peak: float, grad_bytes: float, reshard: bool) -> tuple[dict[str, float], dict[str, float]]:
    """The ideal step, the bound: its FLOPs at `peak` (the breakdown) and each collective's seconds at peak
    bandwidth, all hidden behind them, each byte moved once. Every microbatch's activations are new bytes, so TP, CP
    and EP move theirs each microbatch; the weights and gradients are the same bytes every microbatch, so the data
    parallelism moves them once a step (FSDP: gathered for the forward, again for the backward when the layout
    re-shards after the forward, gradients reduced once), as the book's `step_time` counts them."""
    once = dataclasses.replace(s, M=1)
    ring = dataclasses.replace(s, cp_rotate="ring", repeat_kv=False)  # each K/V byte once, round the ring
    comms = {"tp": tp_term(s, peak, False)[0], "cp": cp_term(ring, 0.0, True)[0], "ep": ep_term(s),
             "dp": dp_term(once, grad_bytes, reshard, None)[0] + dcn_term(s, grad_bytes, None)[0]}
    return compute_term(s, peak, peak), comms


def _calibrated(s: StepContext, tp_overlap: bool, cp_overlap: bool, balanced: bool, grad_bytes: float,
                master_bytes: float, reshard: bool,
                framework_share: float) -> tuple[dict[str, float], dict[str, float]]:
    """The calibrated step's critical path, term by term, and the collectives' hidden seconds; `framework_share`:
    of the modelled rate the framework reaches."""
    eff, chip, lay = s.eff, s.chip, s.layout
    C = chip.peak_flops(s.dtype) * eff.compute(s.dtype)
    C_attention = C if not s.flash_attention or eff.attention is None else chip.peak_flops() * eff.attention
    W = chip.hbm_bandwidth * eff.hbm
    flops = compute_term(s, C, C_attention)
    share = layer_efficiency(s.model, s.mb / lay.cp, chip, lay.tp, lay.ep, lay.expert_tp)
    gemm = (flops["compute"] + flops["recompute"]) * (1 / share - 1)
    elementwise, cast = elementwise_term(s, W), fp8_cast_term(s, W)
    core = sum(flops.values()) + gemm + elementwise + cast
    last = last_stage_term(s, C, W, core, balanced)
    tp_all, tp_exposed = tp_term(s, C * share, tp_overlap)
    cp_all, cp_exposed = cp_term(s, flops["attention"], cp_overlap)
    moe = moe_terms(s, C, W)
    ep_all = ep_term(s, busiest_load(s))
    ep = max(0.0, ep_all - core) if s.ep_overlap else ep_all
    fixed = fixed_term(s)
    busy = core + last + tp_exposed + cp_exposed + ep + fixed + sum(moe.values())
    dp_all, dp_exposed = dp_term(s, grad_bytes, reshard, busy / s.M)
    dcn_all, dcn_exposed = dcn_term(s, grad_bytes, busy / s.M)
    hidden = {"tp": tp_all - tp_exposed, "cp": cp_all - cp_exposed, "dp": dp_all - dp_exposed,
              "dcn": dcn_all - dcn_exposed, "ep": ep_all - ep}
    interference = eff.interference * min(sum(hidden.values()), core)
    bubble = (busy + interference) * (lay.pp - 1) / (lay.virtual_stages * s.M) if lay.pp > 1 else 0.0
    breakdown = {**flops, "gemm shape": gemm, "elementwise": elementwise, "fp8 cast": cast, **moe, "last stage": last,
                 "fixed": fixed, "interference": interference, "tp": tp_exposed, "cp": cp_exposed, "ep": ep,
                 "bubble": bubble, "pp sends": sends_term(s), "dp": dp_exposed, "dcn": dcn_exposed,
                 "optimizer": optimizer_term(s, grad_bytes, master_bytes, W)}
    breakdown["framework"] = sum(breakdown.values()) * (1 / framework_share - 1)
    return breakdown, hidden
