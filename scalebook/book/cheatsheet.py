"""The book on one page (ch. 11): the constants and rules every chapter leans on, computed by the package.

`constants()` tabulates, per chip, the numbers the rooflines divide by; `formulas()` lists each rule with one
worked value from the function that implements it. Both are built from `chips.toml`, `models.toml` and the
calculators, so the sheet cannot drift from the chapters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..collectives import all_gather, all_reduce, all_to_all
from ..hardware.chips import get_chip
from ..hardware.gpu import GpuCluster
from ..hardware.topology import TpuMesh
from ..inference.steps import decode_step, kv_cache_bytes
from ..models import get_model
from ..roofline import critical_batch as matmul_critical_batch
from ..roofline import matmul
from ..tables import Table
from ..training.book import min_tokens_per_chip, tp_limit
from ..units import checks, fmt_bytes, fmt_rate, fmt_time

__all__ = ["constants", "formulas"]


def _link(name: str) -> tuple[float, float, GpuCluster | str, GpuCluster | str]:
    """(chip-to-chip link B/s, network B/s per chip, the hardware data parallelism and tensor parallelism run
    on) for a chip name: a TPU's ICI for both; a GPU SuperPod's network for DP and one NVLink node for TP."""
    chip = get_chip(name)
    if chip.kind == "gpu":
        cluster = GpuCluster(chip, gpus=1024 if chip.name != "NVIDIA GB200" else 576)
        node = cluster.subset(cluster.gpus_per_node)
        return cluster.gpu_bandwidth, cluster.node_egress / cluster.gpus_per_node, cluster, node
    return chip.ici_bidirectional, chip.dcn_bandwidth or 0.0, name, name


@checks(chips="names")
def constants(chips: Sequence[str] = ("v5e", "v5p", "v6e", "h100", "b200")) -> Table:
    """One row per chip: bf16 peak, HBM bandwidth, the matmul critical batch C/W_HBM, the chip-to-chip link
    (ICI both ways, or NVLink one way), the network share per chip (DCN, or node egress / 8), the data-parallel
    threshold in tokens per chip (one TPU axis; across nodes of a GPU SuperPod) and C/W_link, the MLP width one
    tensor-parallel way needs (Y < F·W/C; over NVLink inside a GPU node)."""
    rows = []
    for name in chips:
        chip = get_chip(name)
        link, network, dp_hardware, tp_hardware = _link(name)
        rows.append({"chip": chip.name, "bf16 FLOPs/s": chip.peak_flops(), "HBM B/s": chip.hbm_bandwidth,
                     "critical batch": matmul_critical_batch(chip), "link B/s": link, "network B/s": network,
                     "DP tokens/chip": min_tokens_per_chip("dp", dp_hardware),
                     "F per TP way": 1 / tp_limit(1, tp_hardware)})
    rate = lambda v: fmt_rate(v, "B/s") if v else "—"  # noqa: E731
    whole = "{:,.0f}".format
    return Table(rows, formats={"bf16 FLOPs/s": fmt_rate, "HBM B/s": rate, "link B/s": rate, "network B/s": rate,
                                "critical batch": whole, "DP tokens/chip": whole, "F per TP way": whole},
                 title="The constants behind every roofline (bf16)")


def _rules() -> list[tuple[str, str, str, Callable[[], str]]]:
    """(topic, rule, formula, worked example) rows; each example calls the function that implements the rule."""
    v5e_axis, pod = TpuMesh("v5e", X=16, Y=16), GpuCluster("h100", gpus=1024)
    llama = get_model("llama3-70b")
    return [
        ("roofline", "time is the slower of two clocks", "T = max(FLOPs / C, bytes / W)",
         lambda: f"[1024,8192]·[8192,28672] on a v5e: {fmt_time(matmul(1024, 8192, 28672, 'v5e').time)}"),
        ("roofline", "a matmul is compute-bound above", "B > C / W_HBM",
         lambda: f"v5e: {matmul_critical_batch('v5e'):.0f} tokens; int8 weights: "
                 f"{matmul_critical_batch('v5e', weight_dtype='int8'):.0f}"),
        ("collectives", "AllGather / ReduceScatter over a ring axis", "T = V / W_bidi",
         lambda: f"1 GB over X of a v5e 16×16: {fmt_time(all_gather(v5e_axis, 'X', 1e9).time)}"),
        ("collectives", "AllReduce is two of them", "T = 2 V / W_bidi",
         lambda: f"1 GB over X: {fmt_time(all_reduce(v5e_axis, 'X', 1e9).time)}"),
        ("collectives", "AllToAll crosses the bisection", "T = V / (4 W_bidi) on a ring",
         lambda: f"1 GB over X: {fmt_time(all_to_all(v5e_axis, 'X', 1e9).time)}"),
        ("collectives", "on a GPU fat tree the slowest level sets it", "T = V · max_i (D_i − 1) / (D_i W_i)",
         lambda: f"1 GB over a 1024-H100 SuperPod: {fmt_time(all_gather(pod, None, 1e9).time)}"),
        ("training", "6 FLOPs per parameter per token", "FLOPs = 6 · P · tokens",
         lambda: f"LLaMA 3-70B: {llama.flops_per_token():.3g} FLOPs per token"),
        ("training", "DP / FSDP hide their traffic above", "B / X > C / (W · M_X)",
         lambda: f"v5p, 3 axes: {min_tokens_per_chip('fsdp', 'v5p', M_X=3):.0f}; H100 SuperPod: "
                 f"{min_tokens_per_chip('dp', pod):.0f} tokens per chip"),
        ("training", "FSDP + TP at the best split", "B / N > α² / (M_X M_Y F)",
         lambda: f"LLaMA 3-70B on v5p, M_X = 2: {min_tokens_per_chip('fsdp_tp', 'v5p', F=llama.F, M_X=2):.0f} tokens"),
        ("training", "tensor parallelism stays compute-bound while", "Y < M_Y · F · W / C",
         lambda: f"LLaMA 3-70B in an H100 node: Y < {tp_limit(llama.F, pod.subset(8)):.1f}"),
        ("inference", "each token caches keys and values", "bytes = 2 · L · K · H · b",
         lambda: f"LLaMA 3-70B, bf16: {fmt_bytes(kv_cache_bytes(llama, 1))} per token"),
        ("inference", "a decode step reads weights and caches", "T = B·KV/W + max(2BP/C, P·b/W)",
         lambda: f"LLaMA 3-70B, batch 32 at 8k on 8 H100s: "
                 f"{fmt_time(decode_step(llama, 'h100', 8, 32, 8192).time)}"),
    ]


def formulas() -> Table:
    """The book's rules, one per row, each with a worked value computed by the scalebook function behind it."""
    rows = [{"topic": topic, "rule": rule, "formula": formula, "example": example()}
            for topic, rule, formula, example in _rules()]
    return Table(rows, title="The rules of thumb, each with one worked value")
