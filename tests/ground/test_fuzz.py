"""Hostile-but-honest fuzz of the analytic model (issue #16).

Every public callable of the ground floor (the `__all__` of each module below) has a recipe: one valid call and
the kind of each parameter. The fuzz replaces one argument at a time with each bad value of its kind (0, -1, NaN,
±inf, 10**30, 2.5 for a count, a wrong type, None, a misspelt name) and demands a ValueError, TypeError or KeyError
whose message names the argument, raised within a second. A function made public without a recipe fails
`test_every_public_callable_has_a_recipe`. The property test feeds valid random values and asserts every number in
the result is finite and non-negative.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import fuzzing
import numpy as np
import pytest
from fuzzing import HUGE, INF, NAN, guarded, kind_gaps, missing_recipes, resolve, summary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scalebook as sb
import scalebook.rings  # noqa: F401  (sb.rings in the recipes)
import scalebook.validation  # noqa: F401  (not imported by `import scalebook`)

MODULES = [
    "units", "estimate", "roofline", "hardware.chips", "hardware.topology", "hardware.gpu", "hardware.sm", "models",
    "sharding", "serving", "training.pipeline", "training.planner", "book.cheatsheet", "systolic", "tables", "svg",
    "hlo", "book.checks", "compare", "training", "training.layout", "training.book", "training.footprint",
    "training.prediction", "training.curves",
    "inference", "collectives", "validation", "gemm", "moe", "overlap", "deployment", "rings",
]

# Public callables that take no part in the fuzz, each with its reason.
RECORD = "result record: built by the library from validated inputs, read by the reader"
EXEMPT = {
    "units.check_number": "a validator itself (tested in test_units)",
    "units.check_positive": "a validator itself", "units.check_non_negative": "a validator itself",
    "units.check_int": "a validator itself", "units.check_fraction": "a validator itself",
    "units.check_choice": "a validator itself", "units.closest": "a validator's helper (any text is a name)",
    "units.check_kind": "a validator itself", "units.checks": "the validators' decorator",
    "units.check_fields": "a validator itself", "units.is_a": "a validator factory",
    "units.sequence_of": "a validator factory",
    "compare.Comparison": RECORD, "compare.ExpectationError": "an exception class",
    "book.checks.Check": RECORD, "book.checks.CheckedNumbers": RECORD,
    "book.checks.checked_numbers": "takes no argument: the checks this process has passed",
    "compare.is_number": "a predicate: any value is an answer (True or False)",
    "compare.percent": "a formatter of a tolerance the library computed",
    "compare.fmt_number": "a formatter of a number the library computed",
    "serving.Requests": RECORD, "serving.Report": RECORD,
    "overlap.CollectiveMatmul": RECORD, "inference.Breakdown": RECORD,
    "training.book.Transfer": RECORD,
    "rings.Piece": RECORD, "rings.RingStep": RECORD, "training.curves.StrategyCurves": RECORD,
    "sharding.Step": RECORD, "sharding.Plan": RECORD, "sharding.ArraySpec": "built by parse_spec, which is fuzzed",
    "systolic.Frame": RECORD, "systolic.Simulation": RECORD, "systolic.Grid": RECORD,
    "hlo.HloOp": "built by parse_op, which is fuzzed", "hlo.Collective": "built by hlo.collectives, fuzzed",
    "training.planner.TrainingPlan": RECORD, "training.prediction.Prediction": RECORD,
    "training.layout.Layout": "a record of degrees, validated in __post_init__ (test_training_package)",
    "training.Memory": RECORD,
    "hardware.gpu.LevelSpan": RECORD, "hardware.gpu.NvLink": "a constant table's row type (NVLINK)",
    "validation.PublishedRun": "a row of the published-runs suite (data, not a calculator)",
    "moe.ServingShard": RECORD,
    "estimate.Overlap": "a mixin with no constructor arguments",
    "roofline.Overlap": "a mixin with no constructor arguments",
}

def _hw(name: str = "v5e", **kw: Any) -> Any:
    return sb.TpuMesh(name, X=4, Y=4, **kw)


def _cluster() -> Any:
    return sb.hardware.gpu.get_cluster("h100-superpod", gpus=1024)


def _run() -> Any:
    return next(r for r in sb.validation.runs() if r.kind == "training")


HLO_LINE = ("%all-gather.1 = bf16[1024,8192]{1,0} all-gather(bf16[256,8192]{1,0} %p), channel_id=1, "
            "replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true")
HLO = ("HloModule m, num_partitions=4\n\nENTRY %main (p: bf16[256,8192]) -> bf16[1024,8192] {\n"
       f"  %p = bf16[256,8192]{{1,0}} parameter(0)\n  {HLO_LINE}\n}}\n")

# name -> (valid call as kwargs (a callable builds fresh objects), {parameter: kind}; "?kind" means None is allowed,
# "-" means not fuzzed (free text or a display option), a list is that parameter's own bad values).
R: dict[str, tuple[Callable[[], dict[str, Any]], dict[str, Any]]] = {
    "units.dtype_bytes": (lambda: dict(dtype="bf16"), {"dtype": "name"}),
    "units.fmt_bytes": (lambda: dict(nbytes=3e9), {"nbytes": "real", "binary": "flag", "digits": "count"}),
    "units.fmt_time": (lambda: dict(seconds=3e-3), {"seconds": "real", "digits": "count"}),
    "units.fmt_flops": (lambda: dict(flops=3e12), {"flops": "real", "digits": "count"}),
    "units.fmt_rate": (lambda: dict(rate=3e12), {"rate": "real", "unit": "text", "digits": "count"}),
    "units.fmt_si": (lambda: dict(value=3e12, unit="B"), {"value": "real", "unit": "text", "digits": "count"}),
    "units.parse_size": (lambda: dict(text="16GiB"), {"text": [-1, NAN, INF, HUGE, "12 parsecs", None, "1e999"]}),
    "estimate.Estimate": (lambda: dict(flops=1e12, bytes=1e9, t_math=1e-3, t_comms=1e-3),
                          {"flops": "result", "bytes": "result", "t_math": "result", "t_comms": "result",
                           "channel": "text", "label": "text", "terms": "-", "t_latency": "result",
                           "latency_adds": "flag"}),
    "estimate.feasibility": (lambda: dict(memory_per_chip=140e9, hbm_bytes=16e9),
                             {"memory_per_chip": "result", "hbm_bytes": "?size"}),
    "roofline.estimate": (lambda: dict(flops=1e12, nbytes=1e9, chip="v5e"),
                          {"flops": "nonneg", "nbytes": "nonneg", "chip": "name", "dtype": "name",
                           "bandwidth": "?size", "channel": "text", "efficiency": "fraction", "label": "text",
                           "terms": "-"}),
    "roofline.matmul": (lambda: dict(B=1024, D=8192, F=28672, chip="v5e"),
                        {"B": "size", "D": "size", "F": "size", "chip": "name", "dtype": "name",
                         "weight_dtype": "?name", "act_dtype": "?name", "out_dtype": "?name",
                         "compute_dtype": "?name", "bandwidth": "?size", "channel": "text",
                         "efficiency": "fraction"}),
    "roofline.dot": (lambda: dict(N=1e6, chip="v5e"), {"N": "size", "chip": "name", "dtype": "name"}),
    "roofline.einsum": (lambda: dict(spec="BD,DF->BF", sizes={"B": 8, "D": 16, "F": 32}, chip="v5e"),
                        {"spec": ["BD;DF", 3, None], "sizes": [{"B": NAN, "D": 1, "F": 1}, {"B": -1, "D": 1, "F": 1},
                                                              {"B": HUGE, "D": 1, "F": 1}, "abc", None],
                         "chip": "name", "dtype": "name", "dtypes": [["bf16"], ["bf17", "bf16"], 3],
                         "bandwidth": "?size"}),
    "roofline.tiled_matmul": (lambda: dict(m=1024, k=512, n=512, bm=128, bk=128, bn=128, chip="v5e"),
                              {"m": "count", "k": "count", "n": "count", "bm": "count", "bk": "count",
                               "bn": "count", "chip": "name", "dtype": "name"}),
    "roofline.tiled_intensity": (lambda: dict(bm=128, bn=128), {"bm": "size", "bn": "size", "dtype": "name"}),
    "roofline.crossover_batch": (lambda: dict(D=8192, F=28672, chip="v5e"),
                                 {"D": "size", "F": "size", "chip": "name", "dtype": "name", "matmul_kwargs": "-"}),
    "roofline.critical_intensity": (lambda: dict(chip="v5e"), {"chip": "name", "dtype": "name", "bandwidth": "?size"}),
    "roofline.critical_batch": (lambda: dict(chip="v5e"),
                                {"chip": "name", "dtype": "name", "weight_dtype": "?name", "compute_dtype": "?name",
                                 "bandwidth": "?size"}),
    "roofline.achievable_flops": (lambda: dict(intensity=100.0, chip="v5e"),
                                  {"intensity": "nonneg", "chip": "name", "dtype": "name", "bandwidth": "?size"}),
    "roofline.einsum_flops": (lambda: dict(spec="BD,DF->BF", sizes={"B": 8, "D": 16, "F": 32}),
                              {"spec": ["BD;DF", 3, None], "sizes": [{"B": NAN, "D": 1, "F": 1}, "abc", None,
                                                                    {"B": -1, "D": 1, "F": 1}]}),
    "roofline.matmul_intensity": (lambda: dict(B=1024, D=8192, F=8192),
                                  {"B": "size", "D": "size", "F": "size", "dtype": "name"}),
    "roofline.attention": (lambda: dict(T=4096, S=4096, N=64, K=8, H=128),
                           {"T": "size", "S": "size", "N": "count", "K": "count", "H": "count", "chip": "name",
                            "B": "size", "dtype": "name"}),
    "hardware.chips.Chip": (lambda: dict(name="mychip", bf16_flops=1e15, hbm_bytes=80e9, hbm_bandwidth=3e12),
                            {"name": "text", "vendor": "text", "kind": "text", "bf16_flops": "?size",
                             "fp16_flops": "?size", "fp8_flops": "?size", "int8_flops": "?size",
                             "fp4_flops": "?size", "fp32_flops": "?size", "hbm_bytes": "?size",
                             "hbm_bandwidth": "?size", "ici_bandwidth": "?size", "ici_links": "?count",
                             "nvlink_bandwidth": "?size", "dcn_bandwidth": "?size", "pcie_bandwidth": "?size",
                             "clock_hz": "?size", "base_clock_hz": "?size", "cores": "?count",
                             "mxu_size": "?count", "vmem_bytes": "?size", "smem_bytes": "?size",
                             "register_bytes": "?size", "l2_bytes": "?size", "max_slice": "-", "host_shape": "-",
                             "aliases": "-", "device_kinds": "-", "notes": "-", "sources": "-",
                             "calibration": [3, "abc"]}),
    "hardware.chips.get_chip": (lambda: dict(name="v5e"), {"name": "name"}),
    "hardware.chips.list_chips": (lambda: dict(), {"chips": [3, "abc"], "vendor": "?name"}),
    "hardware.chips.chip_names": (lambda: dict(), {}),
    "hardware.chips.mxus_per_core": (lambda: dict(chip="v5e"), {"chip": "name"}),
    "hardware.chips.ladder_rows": (lambda: dict(chip="v5e"), {"chip": "name", "vmem_factor": "size"}),
    "hardware.chips.chip_for_device_kind": (lambda: dict(device_kind="TPU v5 lite"), {"device_kind": "text"}),
    "hardware.chips.Efficiency": (lambda: dict(),
                                  {"matmul": "fraction", "matmul_fp8": "?fraction", "attention": "?fraction",
                                   "hbm": "fraction", "collectives": [{"all_gather": NAN}, {"all_gahter": 0.5}, 3],
                                   "network": "fraction", "link": "fraction", "latency_node": "nonneg",
                                   "latency_network": "nonneg", "layer_overhead": "nonneg", "interference": "nonneg",
                                   "framework": "fraction", "framework_fp8": "?fraction", "sources": "-"}),
    "hardware.topology.TpuMesh": (lambda: dict(chip="v5e", X=4, Y=4),
                                  {"chip": "name", "X": "count", "Y": "count", "Z": "?count",
                                   "wrap": ["yes", 3, {"X": "yes"}], "hop_latency": "nonneg"}),
    "hardware.gpu.resolve": (lambda: dict(hardware="h100"), {"hardware": "name"}),
    "hardware.gpu.FatTreeLevel": (lambda: dict(name="leaf", degree=8, bandwidth=400e9),
                                  {"name": "text", "degree": "count", "bandwidth": "size", "switches": "count0",
                                   "switch_bandwidth": "nonneg"}),
    "hardware.gpu.GpuCluster": (lambda: dict(chip="h100", gpus=1024),
                                {"chip": "name", "gpus": "count", "gpus_per_node": "?count", "gpu_bandwidth": "?size",
                                 "node_egress": "?size", "levels": [3, "abc"], "sharp": "flag",
                                 "nvswitches": "?count", "nvswitch_bandwidth": "?size"}),
    "hardware.gpu.get_cluster": (lambda: dict(name="h100-superpod"),
                                 {"name": "name", "gpus": "?count", "sharp": "flag"}),
    "hardware.gpu.fat_tree_switches": (lambda: dict(gpus=1024),
                                       {"gpus": "count", "radix": "count", "gpus_per_node": "count"}),
    "hardware.sm.cuda_cores": (lambda: dict(chip="h100"), {"chip": "name"}),
    "hardware.sm.vpu_alus": (lambda: dict(chip="v5e"), {"chip": "name"}),
    "hardware.sm.vpu_flops_per_core": (lambda: dict(chip="v5e"), {"chip": "name"}),
    "hardware.sm.pipeline_stages": (lambda: dict(n_chunks=4, step=2), {"n_chunks": "count", "step": "count0"}),
    "hardware.sm.vector_flops": (lambda: dict(chip="h100"),
                                 {"chip": "name", "clock": [NAN, -1, INF, "turbo", None], "fma": "flag"}),
    "hardware.sm.clock_from_vector_flops": (lambda: dict(chip="h100", flops=60e12),
                                            {"chip": "name", "flops": "size", "fma": "flag"}),
    "hardware.sm.tensor_core_flops_per_cycle": (lambda: dict(chip="h100"),
                                                {"chip": "name", "dtype": "name",
                                                 "clock": [NAN, -1, INF, "turbo", None]}),
    "hardware.sm.on_chip_bytes": (lambda: dict(chip="h100"), {"chip": "name"}),
    "hardware.sm.vector_add": (lambda: dict(N=1e9, chip="h100"),
                               {"N": "size", "chip": "name", "clock": [NAN, -1, INF, "turbo", None]}),
    "hardware.sm.gpu_table": (lambda: dict(), {"chips": [("h100", "h10x"), 3, None]}),
    "models.TransformerConfig": (lambda: dict(L=2, D=512, F=2048, N=8, K=8, H=64, V=1000),
                                 {"L": "count", "D": "count", "F": "count", "N": "count", "K": "count", "H": "count",
                                  "V": "count", "tied": "flag", "gated": "flag", "E": "count", "k": "count",
                                  "shared": "count0", "F_expert": "count0", "dense_layers": "count0",
                                  "q_rank": "count0", "kv_rank": "count0", "rope_dim": "count0", "qk_dim": "count0",
                                  "name": "text", "source": "text"}),
    "models.get_model": (lambda: dict(name="llama3-8b"), {"name": "name"}),
    "models.model_names": (lambda: dict(), {}),
    "models.layer_einsums": (lambda: dict(model="llama3-8b"), {"model": "name"}),
    "models.from_hf_config": (lambda: dict(config={"num_hidden_layers": 2, "hidden_size": 512,
                                                   "intermediate_size": 2048, "num_attention_heads": 8,
                                                   "num_key_value_heads": 8, "vocab_size": 1000}),
                              {"config": [{"num_hidden_layers": -2}, {"hidden_size": NAN}, 3, None],
                               "name": "text"}),
    "models.hf_config": (lambda: dict(name="mistral-7b"), {"name": "name"}),
    "models.config_table": (lambda: dict(config={"num_hidden_layers": 2, "hidden_size": 512,
                                                 "intermediate_size": 2048, "num_attention_heads": 8,
                                                 "num_key_value_heads": 8, "vocab_size": 1000}),
                            {"config": [{"num_hidden_layers": -2}, {"hidden_size": NAN}, 3, None], "name": "text"}),
    "models.flop_conventions": (lambda: dict(), {"model": "name", "seq_len": "count"}),
    "sharding.parse_spec": (lambda: dict(text="A[I_X, J]"), {"text": ["A[I_X", 3, None]}),
    "sharding.parse_expr": (lambda: dict(expr="A[I, J_X] @ B[J_X, K] -> C[I, K]"),
                            {"expr": ["A[I] @ ", 3, None]}),
    "sharding.local_shape": (lambda: dict(spec="A[I_X, J]", mesh={"X": 4}, sizes={"I": 64, "J": 32}),
                             {"spec": ["A[I_X", 3, None], "mesh": [{"X": 0}, {"X": NAN}, 3, None],
                              "sizes": [{"I": -1, "J": 32}, {"I": 2.5, "J": 32}, {"I": 64}, 3, None]}),
    "sharding.bytes_per_device": (lambda: dict(spec="A[I_X, J]", mesh={"X": 4}, sizes={"I": 64, "J": 32}),
                                  {"spec": ["A[I_X", 3, None], "mesh": [{"X": 0}, {"X": NAN}, 3, None],
                                   "sizes": [{"I": -1, "J": 32}, {"I": NAN, "J": 32}, 3, None], "dtype": "name"}),
    "sharding.total_bytes": (lambda: dict(spec="A[I_X, J]", mesh={"X": 4}, sizes={"I": 64, "J": 32}),
                             {"spec": ["A[I_X", 3, None], "mesh": [{"X": 0}, {"X": NAN}, 3, None],
                              "sizes": [{"I": -1, "J": 32}, {"I": NAN, "J": 32}, 3, None], "dtype": "name"}),
    "sharding.sharded_matmul": (lambda: dict(expr="A[I, J_X] @ B[J_X, K] -> C[I, K]", mesh=_hw(),
                                             I=1024, J=8192, K=8192),
                                {"expr": ["A[I] @ ", 3, None], "mesh": "obj", "dtype": "name",
                                 "I": "count", "J": "count", "K": "count"}),
    "overlap.collective_matmul": (lambda: dict(expr="A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", mesh=_hw(),
                                               I=1024, J=8192, K=8192),
                                  {"expr": ["A[I] @ ", "A[I, J] @ B[J, K] -> C[I, K]", 3, None], "mesh": "obj",
                                   "dtype": "name", "I": "count", "J": "count", "K": "count"}),
    "rings.axis_sizes": (lambda: dict(mesh={"X": 4}), {"mesh": [{"X": 0}, {"X": 2.5}, {}, 3, None]}),
    "rings.device_blocks": (lambda: dict(spec="A[I_X, J_Y]", mesh={"X": 2, "Y": 2}),
                            {"spec": ["A[I_X", 3, None], "mesh": [{"X": 0}, {"Y": 2}, 3, None]}),
    "rings.ring_schedule": (lambda: dict(n=8),
                            {"n": "count", "kind": "name", "bidirectional": "flag", "wrap": "flag"}),
    "training.book.pass_collectives": (lambda: dict(strategy="fsdp", mesh=sb.TpuMesh("v5e", X=4, Y=4), B=1024,
                                                    D=512, F=2048),
                                       {"strategy": ["nosuch", 3, None], "mesh": [3, None], "B": "count",
                                        "D": "count", "F": "count", "keep_forward": "flag", "dtype": "name"}),
    "rings.torus_schedule": (lambda: dict(X=2, Y=2), {"X": [1, 9, 2.5, None], "Y": [1, 9, 2.5, None],
                                                       "kind": ["nosuch", 3, None]}),
    "rings.busiest_link_pieces": (lambda: dict(states=sb.rings.ring_schedule(4)), {"states": [3, None]}),
    "rings.busiest_link_share": (lambda: dict(n=8),
                                 {"n": "count", "kind": "name", "bidirectional": "flag", "wrap": "flag"}),
    "rings.overlapped_ring_time": (lambda: dict(t_step=1e-6, t_send=2e-6, steps=4),
                                   {"t_step": "nonneg", "t_send": "nonneg", "steps": "count"}),
    "sharding.partition_spec": (lambda: dict(spec="A[I_X, J]"), {"spec": ["A[I_X", 3, None]}),
    "sharding.mesh_axes": (lambda: dict(mesh={"X": 4}), {"mesh": [{"X": 0}, {"X": 2.5}, 3, None]}),
    "serving.Lengths": (lambda: dict(median=512, sigma=0.5), {"median": "size", "sigma": "nonneg"}),
    "serving.engine_segments": (lambda: dict(mode="interleaved", prompts=[1024, 2048], outputs=[3, 4], slots=2,
                                             t_prefill=1e-2, t_step=1e-3),
                                {"mode": ["nosuch", 3, None], "prompts": "counts", "outputs": "counts",
                                 "slots": "count", "t_prefill": "size", "t_step": "size"}),
    "serving.batching_snapshots": (lambda: dict(slots=2, outputs=[3, 2, 4], steps=3),
                                   {"slots": "count", "outputs": "counts", "steps": "count"}),
    "serving.Workload": (lambda: dict(rate=4.0),
                         {"rate": [0, -1, NAN, -INF, "abc", None], "prompt": "size", "output": "size",
                          "prefix_hit": "frac0", "prefix_fraction": "frac0"}),
    "serving.Engine": (lambda: dict(model="llama3-8b", chip="v5e", n_chips=8),
                       {"model": "name", "chip": "name", "n_chips": "count", "param_bytes": "size",
                        "kv_bytes": "size", "slots": "?count", "mode": "name", "prefill_chips": "?count",
                        "decode_chips": "?count", "kv_bandwidth": "?size", "mfu": "fraction"}),
    "serving.simulate": (lambda: dict(workload=sb.serving.Workload(4.0),
                                      engine=sb.serving.Engine("llama3-8b", "v5e", 8), n_requests=50),
                         {"workload": "obj", "engine": "obj", "n_requests": "count", "seed": "count0"}),
    "training.pipeline.pipeline_bubble": (lambda: dict(stages=4, microbatches=8),
                                 {"stages": "count", "microbatches": "count", "schedule": "name", "virtual": "count"}),
    "training.pipeline.pipeline_schedule": (lambda: dict(stages=4, microbatches=8),
                                   {"stages": "count", "microbatches": "count", "schedule": "name"}),
    "training.pipeline.interleaved_schedule": (lambda: dict(stages=4, microbatches=8),
                                      {"stages": "count", "microbatches": "count", "virtual": "count"}),
    "training.pipeline.megatron_order": (lambda: dict(rank=1, stages=4, microbatches=8, virtual=2),
                                {"rank": "count0", "stages": "count", "microbatches": "count", "virtual": "count"}),
    "training.pipeline.zero_bubble_schedule": (lambda: dict(stages=4, microbatches=8),
                                      {"stages": "count", "microbatches": "count"}),
    "training.pipeline.greedy_schedule": (lambda: dict(devices=2, ops=[0, 1, 2, 3], device_of=lambda op: op % 2,
                                              needs=lambda op: [op - 2] if op >= 2 else [], priority=lambda op: (op,)),
                                 {"devices": "count", "ops": [3, "abc", None], "device_of": [3, None],
                                  "needs": [3, None], "priority": [3, None], "may_start": [3, "abc"]}),
    "models.expected_experts": (lambda: dict(B=8, E=16, k=2), {"B": "nonneg", "E": "count", "k": "count"}),
    "training.pipeline.idle_fraction": (lambda: dict(grid=sb.training.pipeline_schedule(2, 2)),
                               {"grid": [[], [[]], 3, None]}),
    "training.pipeline.pipeline_comms": (lambda: dict(batch_tokens=2**20, D=8192, stages=4, microbatches=8,
                                                      hardware="v5p"),
                                {"batch_tokens": "size", "D": "count", "stages": "count", "microbatches": "count",
                                 "hardware": "name", "dtype": "name"}),
    "training.planner.plan": (lambda: dict(model="llama3-8b", hardware="v5p", n_chips=256, batch_tokens=2**20),
                     {"model": "name", "hardware": "name", "n_chips": "count", "batch_tokens": "size",
                      "seq_len": "count", "saves_per_layer": [NAN, -1, INF, "blok", None], "optimizer": "name",
                      "sequence_sharding": "flag", "efficiency": "?name", "tp_overlap": "flag", "fsdp": "?flag",
                      "recompute": "?name", "microbatch_tokens": "?size", "tp": "?count", "pp": "?count",
                      "cp": [0, -1, 2.5, "x"], "ep": [0, -1, 2.5, "x"]}),
    "training.planner.check_parallelism": (lambda: dict(cluster=_cluster(), batch_tokens=2**22, tp=8),
                                  {"cluster": "obj", "batch_tokens": "size", "tp": "count", "pp": "count",
                                   "ep": "count", "E": "count", "k": "count"}),
    "book.cheatsheet.constants": (lambda: dict(), {"chips": [("v5e", "v5x"), 3, None]}),
    "book.cheatsheet.formulas": (lambda: dict(), {}),
    "systolic.simulate": (lambda: dict(W=np.ones((3, 3)), X=np.ones((2, 3))), {"W": "array", "X": "array"}),
    "systolic.cycles": (lambda: dict(B=3, D=4, F=4), {"B": "count", "D": "count", "F": "count"}),
    "systolic.utilisation": (lambda: dict(B=3, D=4, F=4), {"B": "count", "D": "count", "F": "count"}),
    "systolic.example": (lambda: dict(), {"B": "count", "D": "count", "F": "count"}),
    "tables.Table": (lambda: dict(rows=[{"a": 1}]),
                     {"rows": [3, None, [3]], "columns": [3, ["b"]], "formats": [3], "title": "text"}),
    "svg.Chart": (lambda: dict(title="t"),
                  {"title": "text", "xlabel": "text", "ylabel": "text", "xlog": "flag", "ylog": "flag",
                   "xlim": [(1, NAN), (2, 1), 3], "ylim": [(1, INF), 3], "width": "count", "height": "count",
                   "_items": "-"}),
    "hlo.element_bytes": (lambda: dict(dtype="bf16"), {"dtype": "name", "context": "text"}),
    "hlo.scalebook_dtype": (lambda: dict(hlo_dtype="bf16"), {"hlo_dtype": "name"}),
    "hlo.parse_op": (lambda: dict(line=HLO_LINE), {"line": ["garbage", 3, None]}),
    "hlo.iter_ops": (lambda: dict(hlo=HLO), {"hlo": [3, None]}),
    "hlo.parse_hlo": (lambda: dict(hlo=HLO), {"hlo": [3, None]}),
    "hlo.module_devices": (lambda: dict(hlo=HLO), {"hlo": [3, None]}),
    "hlo.replica_groups": (lambda: dict(line=HLO_LINE, n_devices=4), {"line": [3, None], "n_devices": "count"}),
    "hlo.collectives": (lambda: dict(hlo=HLO), {"hlo": [3, None]}),
    "hlo.padding": (lambda: dict(shape=(1024, 8192), tile="T(8,128)"),
                    {"shape": [(1024, -1), (2.5, 3), 3, None], "tile": ["T(8,", (( 0, 128),), 3, None],
                     "dtype": "name"}),
    "hlo.memory_order": (lambda: dict(shape=(4, 8), tile="T(2,4)"),
                         {"shape": [(4, -1), (2.5, 3), (2, 3, 4), 3, None], "tile": ["T(8,", 3, None]}),
    "book.checks.expect": (lambda: dict(value=1.0, published=1.0),
                       {"value": "-", "published": "-", "rtol": "?nonneg", "source": "text", "label": "text",
                        "unit": "text", "kind": "name"}),
    "training.memory": (lambda: dict(model="llama3-8b", batch_tokens=2**20, n_chips=256),
                        {"model": "name", "batch_tokens": "size", "n_chips": "count",
                         "saves_per_layer": [NAN, -1, INF, "blok", None], "optimizer": "name", "param_dtype": "name",
                         "opt_dtype": "name", "grad_dtype": "?name", "zero": [-1, 4, 2.5, NAN, None]}),
    "training.activation_bytes": (lambda: dict(model="llama3-8b", tokens=2**20),
                                  {"model": "name", "tokens": "size", "saves_per_layer": [NAN, -1, INF, "blok", None],
                                   "dtype": "name"}),
    "training.max_params": (lambda: dict(chip="v5p"),
                            {"chip": "name", "optimizer": "name", "param_dtype": "name", "opt_dtype": "name"}),
    "training.curves.best_split": (lambda: dict(B=1e6, D=8192, F=32768, chip="v5p", N=256),
                                   {"B": "size", "D": "size", "F": "size", "chip": "name", "N": "count",
                                    "M_X": "count", "M_Y": "count"}),
    "training.curves.strategy_cost": (lambda: dict(strategy="fsdp", B=1e6, D=8192, F=32768, chip="v5p", N=256),
                                      {"strategy": "name", "B": "size", "D": "size", "F": "size", "chip": "name",
                                       "N": "count", "M_X": "count", "M_Y": "count"}),
    "training.curves.strategy_curves": (lambda: dict(N=256, batches=[1e5, 1e6]),
                                        {"chip": "name", "N": "count", "D": "size", "F": "size", "M_X": "count",
                                         "M_Y": "count", "batches": [[1, NAN], [0], [], 3]}),
    "units.geomspace": (lambda: dict(lo=1, hi=100, n=3), {"lo": "size", "hi": "size", "n": [1, 2.5, NAN, None]}),
    "training.footprint.parts_per_chip": (lambda: dict(memory=sb.training.memory("llama3-8b", 2**20, 256)),
                                          {"memory": [3, None, "abc"], "replicated": "flag"}),
    "training.layer_cost": (lambda: dict(strategy="dp", B=2**20, D=8192, F=28672, hardware="v5p", X=16),
                            {"strategy": "name", "B": "size", "D": "size", "F": "size", "hardware": "name",
                             "X": "count", "Y": "count", "M_X": "count", "M_Y": "count", "dtype": "name",
                             "Z": "count", "k": "count"}),
    "training.expert_width_threshold": (lambda: dict(Z=8, k=2, hardware="v5p"),
                                        {"Z": "count", "k": "count", "hardware": "name", "D": "count",
                                         "dtype": "name"}),
    "training.min_tokens_per_chip": (lambda: dict(strategy="fsdp", hardware="v5p"),
                                     {"strategy": "name", "hardware": "name", "F": "?size", "M_X": "count",
                                      "M_Y": "count", "dtype": "name", "model_parallel": "count", "E": "count",
                                      "k": "count"}),
    "training.tp_limit": (lambda: dict(F=28672, hardware="v5p"),
                          {"F": "size", "hardware": "name", "M_Y": "count", "dtype": "name"}),
    "training.x_opt": (lambda: dict(B=2**20, F=28672, N=256),
                       {"B": "size", "F": "size", "N": "count", "M_X": "count", "M_Y": "count"}),
    "training.comms_time": (lambda: dict(model=sb.get_model("llama3-8b"), hardware=sb.get_chip("v5p"),
                                         batch_tokens=2**20, strategy="fsdp_tp", X=64, Y=4, M_X=1, M_Y=1),
                            {"model": "obj", "hardware": "obj", "batch_tokens": "size", "strategy": "name",
                             "X": "count", "Y": "count", "M_X": "count", "M_Y": "count", "dtype": "name",
                             "P": "count", "microbatches": "count"}),
    "training.step_time": (lambda: dict(model="llama3-8b", hardware="v5p", n_chips=256, batch_tokens=2**20),
                           {"model": "name", "hardware": "name", "n_chips": "count", "batch_tokens": "size",
                            "strategy": "name", "X": "?count", "Y": "count", "M_X": "count", "M_Y": "count",
                            "seq_len": "count0", "mfu": "fraction", "P": "count", "microbatches": "?count"}),
    "training.mfu": (lambda: dict(model="llama3-8b", chip="v5p", n_chips=256, batch_tokens=2**20, seconds=1.0),
                     {"model": "name", "chip": "name", "n_chips": "count", "batch_tokens": "size",
                      "seconds": "size", "seq_len": "count0", "dtype": "name"}),
    "training.expert_parallel": (lambda: dict(model="deepseek-v3", hardware="v5p", batch_tokens=2**20, Z=8),
                                 {"model": "name", "hardware": "name", "batch_tokens": "size", "Z": "count",
                                  "M": "count", "dtype": "name"}),
    "training.predict": (lambda: dict(model="llama3-8b", hardware=_cluster(), n_chips=64,
                                      global_batch_tokens=2**22, seq_len=8192, tp=8),
                         {"model": "name", "hardware": "name", "n_chips": "count", "global_batch_tokens": "size",
                          "seq_len": "count", "tp": "count", "pp": "count", "cp": "count", "ep": "count",
                          "fsdp": "flag", "microbatch_tokens": "?size", "virtual_stages": "count",
                          "recompute": "name", "dtype": "name", "efficiency": "name",
                          "sequence_parallel": ["yes", 2.5], "flash_attention": "flag", "tp_overlap": "flag",
                          "cp_overlap": "flag", "grad_bytes": "size", "master_bytes": "size",
                          "balanced_stages": "flag", "reshard_after_forward": "flag", "slices": "count"}),
    "training.training_memory": (lambda: dict(model="llama3-8b", seq_len=8192, tp=8),
                                 {"model": "name", "seq_len": "count", "tp": "count", "pp": "count", "cp": "count",
                                  "ep": "count",
                                  "dp": "count", "microbatch_tokens": "?size", "microbatches": "count",
                                  "virtual_stages": "count", "recompute": "name", "fsdp": "flag",
                                  "sequence_parallel": ["yes", 2.5], "flash_attention": "flag",
                                  "param_bytes": "size", "grad_bytes": "size", "master_bytes": "size",
                                  "optimizer": "name", "reshard_after_forward": "flag"}),
    "training.activation_bytes_per_layer": (lambda: dict(model=sb.get_model("llama3-8b"), tokens=8192,
                                                         seq_len=8192),
                                            {"model": "obj", "tokens": "size", "seq_len": "count", "tp": "count",
                                             "recompute": "name", "sequence_parallel": "flag",
                                             "flash_attention": "flag"}),
    "inference.kv_cache_bytes": (lambda: dict(model="llama3-8b", context=8192),
                                 {"model": "name", "context": "nonneg", "batch": "count", "bytes_per_value": "size",
                                  "local_layers": "frac0", "window": "nonneg", "share": "count"}),
    "inference.decode_time": (lambda: dict(params=8e9, kv_bytes_per_seq=1e9, batch=8, chip="v5e", n_chips=8),
                              {"params": "size", "kv_bytes_per_seq": "nonneg", "batch": "count", "chip": "name",
                               "n_chips": "count", "param_bytes": "size", "compute_dtype": "name",
                               "t_ici": "nonneg", "label": "text", "efficiency": "name",
                               "elementwise_bytes": "nonneg", "kv_reads": "size", "flop_params": "?size",
                               "held_params": "?size"}),
    "inference.decode_step": (lambda: dict(model="llama3-8b", chip="v5e", n_chips=8, batch=8, context=8192),
                              {"model": "name", "chip": "name", "n_chips": "count", "batch": "count",
                               "context": "nonneg", "param_bytes": "size", "kv_bytes": "size",
                               "compute_dtype": "name", "mesh": [3, "abc"], "efficiency": "name",
                               "gqa_kernel": "flag", "ep": [0, -1, 2.5, 3]}),
    "inference.prefill": (lambda: dict(model="llama3-8b", chip="v5e", n_chips=8, tokens=8192),
                          {"model": "name", "chip": "name", "n_chips": "count", "tokens": "size",
                           "assumed_mfu": "?fraction", "compute_dtype": "name", "attention": "flag",
                           "param_bytes": "size", "kv_bytes": "size", "mesh": [3, "abc"], "efficiency": "name",
                           "batch": "count"}),
    "inference.default_mesh": (lambda: dict(chip="v5e", n_chips=8), {"chip": "name", "n_chips": "count"}),
    "inference.max_batch": (lambda: dict(model="llama3-8b", chip="v5e", n_chips=8, context=8192),
                            {"model": "name", "chip": "name", "n_chips": "count", "context": "nonneg",
                             "param_bytes": "size", "kv_bytes": "size"}),
    "inference.pareto": (lambda: dict(model="llama3-8b", chip="v5e", n_chips=8, context=8192, batches=[1, 8]),
                         {"model": "name", "chip": "name", "n_chips": "count", "context": "nonneg",
                          "batches": "?counts", "param_bytes": "size", "kv_bytes": "size", "mesh": [3, "abc"]}),
    "inference.decode_critical_batch": (lambda: dict(chip="v5e", param_bytes=1),
                                        {"chip": "name", "param_bytes": "size"}),
    "inference.breakdown_curves": (lambda: dict(batches=[1, 64]),
                                   {"model": "name", "chip": "name", "n_chips": "count", "context": "size",
                                    "param_bytes": "size", "kv_bytes": "size", "batches": [[1, NAN], [0], 3]}),
    "inference.kv_variant_table": (lambda: dict(), {"model": "name", "context": "size", "batch": "count",
                                                    "window": "size", "local_layers": "frac0", "share": "count"}),
    "inference.smallest_topology": (lambda: dict(model="llama3-8b", chip="v5e"),
                                    {"model": "name", "chip": "name", "param_bytes": "size", "context": "nonneg",
                                     "batch": "count", "kv_bytes": "size", "shapes": [[(1, 0)], [(2.5, 1)], 3, None]}),
    "inference.prices": (lambda: dict(), {}),
    "inference.chip_price": (lambda: dict(chip="v5e"), {"chip": "name"}),
    "deployment.slice_name": (lambda: dict(shape=(4, 2)), {"shape": [[0, 2], [2.5, 1], 3, None]}),
    "deployment.flops_per_dollar": (lambda: dict(), {"chips": [["v5ex"], 3]}),
    "deployment.topology_table": (lambda: dict(), {"model": "name", "chip": "name", "context": "size",
                                                   "dtypes": [["bf17"], 3, None]}),
    "deployment.qps_table": (lambda: dict(), {"model": "name", "chip": "name", "context": "size",
                                              "decode_tokens": "count", "grow": "count0",
                                              "dtypes": [["bf17"], 3, None]}),
    "deployment.serving_summary": (lambda: dict(), {"model": "name", "chip": "name", "dtype": "name",
                                                    "context": "size", "topology": ["4x", "0x2", 3, None],
                                                    "decode_tokens": "count", "batch": "count0", "ici": "flag"}),
    "deployment.latency_budget": (lambda: dict(), {"model": "name", "chip": "name", "max_step": "size",
                                                   "context": "size", "weights": "name", "kv": "name", "ici": "flag",
                                                   "shapes": [[(4, -1)], 3]}),
    "deployment.cost_table": (lambda: dict(rates={"a": 10.0}), {"rates": [{"a": NAN}, {"a": -1}, {}, 3, None],
                                                                 "chip": "name"}),
    "serving.engine_comparison": (lambda: dict(n_requests=20),
                                  {"rates": [[1, NAN], [-1], 3, None], "engines": [{"a": 3}, 3],
                                   "prompt": [-1, NAN, "abc", None], "output": [-1, NAN, "abc", None],
                                   "n_requests": "count", "seed": "count0"}),
    "serving.chapter_engines": (lambda: dict(), {}),
    "inference.cost_per_million_tokens": (lambda: dict(chip="v5e", tokens_per_second_per_chip=1000.0),
                                          {"chip": "name", "tokens_per_second_per_chip": "size"}),
    "inference.moe_critical_batch": (lambda: dict(model="deepseek-v3", chip="v5e"),
                                     {"model": "name", "chip": "name", "param_dtype": "name",
                                      "compute_dtype": "name"}),
    "inference.weight_stationary": (lambda: dict(B=64, D=8192, F=28672, chip="v5e", N=8),
                                    {"B": "size", "D": "size", "F": "size", "chip": "name", "N": "count"}),
    "inference.speculative_speedup": (lambda: dict(acceptance=0.8, draft_tokens=4, draft_cost=0.1),
                                      {"acceptance": "frac0", "draft_tokens": "count", "draft_cost": "nonneg"}),
    "inference.disaggregation_ratio": (lambda: dict(prefill_seconds=0.1, step_seconds=0.02, batch=32,
                                                    decode_tokens=256),
                                       {"prefill_seconds": "size", "step_seconds": "size", "batch": "count",
                                        "decode_tokens": "count"}),
    "inference.evicted_per_step": (lambda: dict(batch=32, prompt_tokens=1024, decode_tokens=256),
                                   {"batch": "count", "prompt_tokens": "nonneg", "decode_tokens": "size"}),
    "moe.capacity": (lambda: dict(tokens=1024, E=64, k=2),
                     {"tokens": "count", "E": "count", "k": [0, -1, 2.5, 65, None], "capacity_factor": "size"}),
    "moe.dropped_fraction": (lambda: dict(tokens=1024, E=64, k=2),
                             {"tokens": "count", "E": "count", "k": [0, -1, 2.5, 65, None],
                              "capacity_factor": "size"}),
    "moe.expert_choice_unserved": (lambda: dict(tokens=1024, E=64, k=2),
                                   {"tokens": "count", "E": "count", "k": [0, -1, 2.5, 65, None],
                                    "capacity_factor": "size"}),
    "moe.experts_read_per_chip": (lambda: dict(tokens=64, E=256, k=8, ep=64),
                                  {"tokens": "nonneg", "E": "count", "k": [0, -1, 2.5, 257, None],
                                   "ep": [0, -1, 2.5, 512, None]}),
    "moe.dispatch": (lambda: dict(model="deepseek-v3", hardware="gb200", tokens=4608, group=72),
                     {"model": "name", "hardware": "name", "tokens": "nonneg", "group": [0, -1, 2.5, 512, "abc"],
                      "dispatch_bytes": "size", "combine_bytes": "size", "efficiency": "name"}),
    "moe.serving_shard": (lambda: dict(model="deepseek-v3", n_chips=64, batch=64, context=4096),
                          {"model": "name", "n_chips": "count", "batch": "count", "context": "nonneg",
                           "scheme": "name", "group": [0, -1, 2.5, 5, "abc"], "param_bytes": "size",
                           "kv_bytes": "size"}),
    "moe.decode_step": (lambda: dict(model="deepseek-v3", chip="tpu7x", n_chips=64, batch=64, context=4096),
                        {"model": "name", "chip": "name", "n_chips": "count", "batch": "count", "context": "nonneg",
                         "scheme": "name", "group": [0, -1, 2.5, 5, "abc"], "param_bytes": "size",
                         "kv_bytes": "size", "compute_dtype": "name", "dispatch_bytes": "size",
                         "combine_bytes": "size", "efficiency": "name"}),
    "collectives.all_gather": (lambda: dict(mesh=_hw(), axes="X", nbytes=1e9),
                               {"mesh": "obj", "axes": ["Q", 3], "nbytes": "nonneg", "also_sharded": ["Q", 2.5],
                                "efficiency": "name"}),
    "collectives.reduce_scatter": (lambda: dict(mesh=_hw(), axes="X", nbytes=1e9),
                                   {"mesh": "obj", "axes": ["Q", 3], "nbytes": "nonneg", "also_sharded": ["Q"],
                                    "efficiency": "name"}),
    "collectives.all_reduce": (lambda: dict(mesh=_hw(), axes="X", nbytes=1e9),
                               {"mesh": "obj", "axes": ["Q", 3], "nbytes": "nonneg", "also_sharded": ["Q"],
                                "efficiency": "name"}),
    "collectives.all_to_all": (lambda: dict(mesh=_hw(), axes="X", nbytes=1e9),
                               {"mesh": "obj", "axes": ["Q", 3], "nbytes": "nonneg", "also_sharded": ["Q"],
                                "top_k": "?count", "efficiency": "name"}),
    "collectives.collective": (lambda: dict(kind="all_gather", mesh=_hw(), axes="X", nbytes=1e9),
                               {"kind": "name", "mesh": "obj", "axes": ["Q", 3], "nbytes": "nonneg",
                                "also_sharded": ["Q"], "top_k": "?count", "efficiency": "name"}),
    "collectives.gpu_collective": (lambda: dict(kind="all_gather", cluster=_cluster(), axes=None, nbytes=1e9),
                                   {"kind": "name", "cluster": "obj", "axes": ["Q", 3], "nbytes": "nonneg",
                                    "Y": "count", "top_k": "?count", "efficiency": "name"}),
    "collectives.gpu_levels": (lambda: dict(kind="all_gather", cluster=_cluster(), axes=None, nbytes=1e9),
                               {"kind": "name", "cluster": "obj", "axes": ["Q", 3], "nbytes": "nonneg",
                                "Y": "count", "top_k": "?count"}),
    "collectives.gpu_simple": (lambda: dict(kind="all_gather", cluster=_cluster(), nbytes=1e9),
                               {"kind": "name", "cluster": "obj", "nbytes": "nonneg"}),
    "collectives.ragged_fill": (lambda: dict(units=8, top_k=2), {"units": "count", "top_k": "?count"}),
    "collectives.achieved_bandwidth": (lambda: dict(nbytes=1e9, peak=100e9, overhead=1e-5),
                                       {"nbytes": "size", "peak": "size", "overhead": "nonneg"}),
    "collectives.fixed_overhead": (lambda: dict(nbytes=1e9, achieved=80e9, peak=100e9),
                                   {"nbytes": "size", "achieved": "size", "peak": "size"}),
    "collectives.fit_bandwidth": (lambda: dict(nbytes=[1e6, 1e7, 1e8], seconds=[1e-4, 2e-4, 1e-3]),
                                  {"nbytes": "sizes", "seconds": "sizes"}),
    "validation.disagreements": (lambda: dict(), {}),
    "validation.runs": (lambda: dict(), {}),
    "validation.sources": (lambda: dict(), {}),
    "validation.model": (lambda: dict(name="llama3-8b"), {"name": "name"}),
    "validation.predict": (lambda: dict(run=_run()), {"run": "obj", "efficiency": "name"}),
    "validation.results": (lambda: dict(), {"efficiency": "name"}),
    "validation.table": (lambda: dict(), {"efficiency": "name", "kind": "?name"}),
    "validation.summary": (lambda: dict(), {"efficiency": "name"}),
    "validation.flops_per_token": (lambda: dict(run=_run()), {"run": "obj"}),
    "validation.calibration_runs": (lambda: dict(), {}),
    "validation.derived_layer_overhead": (lambda: dict(hardware="h100"), {"hardware": "name"}),
    "validation.derived_framework_share": (lambda: dict(hardware="h100"), {"hardware": "name", "dtype": "name"}),
    "inference.tp_collectives": (lambda: dict(model=sb.get_model("llama3-8b"), mesh=_hw(), tokens=8, act_bytes=2),
                                 {"model": "obj", "mesh": [3, "abc", None], "tokens": "size", "act_bytes": "size",
                                  "efficiency": "name"}),
    "inference.weights_read": (lambda: dict(model=sb.get_model("deepseek-v3"), tokens=8),
                               {"model": "obj", "tokens": "nonneg", "ep": "count"}),
    "gemm.quantization": (lambda: dict(M=4096, N=4096, chip="h100"), {"M": "count", "N": "count", "chip": "name"}),
    "gemm.layer_efficiency": (lambda: dict(model=sb.get_model("llama3-8b"), tokens=4096, chip="h100"),
                              {"model": "obj", "tokens": "size", "chip": "name", "tp": "count", "ep": "count"}),
}
R["estimate.StepEstimate"] = (R["estimate.Estimate"][0],
                              {**{k: v for k, v in R["estimate.Estimate"][1].items() if k not in
                                  ("t_latency", "latency_adds")}, "t_params": "result", "t_kv": "result",
                               "t_ici": "result", "batch": "count", "ici_adds": "flag", "memory_per_chip": "result",
                               "hbm_per_chip": "?size", "t_elementwise": "result", "t_fixed": "result",
                               "network": "text"})


def test_every_public_callable_has_a_recipe():
    """Coverage by identity: a re-export (sb.roofline.Estimate, sb.training.pipeline_bubble) uses the recipe of the
    object it re-exports; a public callable with neither a recipe nor an exemption fails."""
    missing = missing_recipes(R, EXEMPT, MODULES)
    assert not missing, f"public callables without a fuzz recipe (add one to tests/ground/test_fuzz.py R): {missing}"


def test_every_parameter_has_a_kind():
    gaps = kind_gaps(R)
    assert not gaps, gaps


# Results whose numbers may be negative: formatters (a difference formats fine), relative errors of the published-runs
# suite (a prediction below the published value), the systolic frames (-1 marks an empty cell, NaN a psum not
# started: display markers, not quantities).
SIGNED_RESULTS = {"units.fmt_bytes", "units.fmt_time", "units.fmt_flops", "units.fmt_rate", "units.fmt_si",
                  "validation.results", "validation.table", "validation.disagreements", "validation.summary"}
MARKED_RESULTS = {"systolic.simulate"}


def bad_numbers(name: str, result: Any) -> str:
    """'' if every number in `result` is finite and non-negative (negative allowed in SIGNED_RESULTS), else which."""
    return "" if name in MARKED_RESULTS else fuzzing.bad_numbers(result, signed=name in SIGNED_RESULTS)


def call(name: str, kwargs: dict[str, Any]) -> Any:
    return resolve(name)(**kwargs)


def test_fuzz_one_bad_argument_at_a_time(capsys):
    n_cases, outcomes, failures = fuzzing.fuzz(R, bad_numbers)
    with capsys.disabled():
        print(summary("fuzz", n_cases, len(R), outcomes))
    assert n_cases >= 2000
    assert not failures, f"{len(failures)} bad calls not refused by name:\n" + "\n".join(failures[:400])


def test_every_recipe_is_a_valid_call():
    broken = fuzzing.invalid_recipes(R, bad_numbers)
    assert not broken, "\n".join(broken)


# --- valid random input -----------------------------------------------------------------------------------------

SCALE = {"count": (1, 64), "count0": (0, 64), "size": (1e-3, 1e6), "nonneg": (0.0, 1e6), "fraction": (0.05, 1.0),
         "frac0": (0.0, 1.0)}
SLOW = {"serving.simulate", "validation.results", "validation.table", "validation.summary", "training.planner.plan"}


def _scaled(example: Any, kind: str, draw: Any) -> Any:
    """A valid random value of `kind` near the recipe's `example` (a multiple of it for sizes and counts, so that
    divisibility the example satisfies is kept: a power-of-two multiple for counts)."""
    if kind in ("count",) and isinstance(example, int) and example >= 1:
        return example * 2 ** draw(st.integers(0, 3))
    if kind == "size" and isinstance(example, numbers.Real) and example > 0:
        return float(example) * draw(st.floats(0.5, 4.0))
    if kind == "nonneg" and isinstance(example, numbers.Real):
        return float(example) * draw(st.floats(0.0, 4.0))
    if kind in ("fraction", "frac0"):
        return draw(st.floats(*SCALE[kind]))
    return example


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_valid_random_inputs_give_finite_non_negative_results(data):
    name = data.draw(st.sampled_from(sorted(set(R) - SLOW)))
    valid, kinds = R[name]
    kwargs = valid()
    for param, kind in kinds.items():
        if param in kwargs and isinstance(kind, str) and kind.lstrip("?") in SCALE:
            kwargs[param] = _scaled(kwargs[param], kind.lstrip("?"), data.draw)
    try:
        with guarded(10):
            result = call(name, kwargs)
    except (ValueError, KeyError) as exc:  # a valid-but-impossible combination, refused clearly by name
        assert "=" in str(exc) or "fit" in str(exc), f"{name}({kwargs}): unclear refusal {exc}"
        return
    assert not bad_numbers(name, result), f"{name}({kwargs}) -> {result!r:.300}"


@pytest.mark.parametrize("preset", sorted(sb.hardware.gpu.PRESETS))
def test_plan_any_gpu_count(preset):
    """300 random valid GPU counts per preset plan without a crash; the layout uses whole nodes and fits."""
    rng = np.random.default_rng(16)
    cluster = sb.hardware.gpu.get_cluster(preset)
    node = cluster.gpus_per_node
    crashes, planned, too_small = [], 0, 0
    for n in rng.integers(1, cluster.gpus + 1, size=300):
        n = int(n)
        try:
            with guarded(10):
                p = sb.training.plan("llama3-8b", cluster, n, 4 * 2**20)
        except ValueError as exc:  # a valid request that no layout fits is refused, saying so; anything else crashed
            too_small += str(exc).startswith("no layout of") and "HBM" in str(exc)
            if not str(exc).startswith("no layout of"):
                crashes.append(f"{n}: {exc}")
            continue
        planned += 1
        nodes = -(-p.chips_used // node)
        if p.chips_used > n or nodes * min(node, p.chips_used) > n or not p.fits:
            crashes.append(f"{n}: a layout of {p.chips_used} GPUs in {nodes} nodes of {node} on {n} GPUs")
        if p.chips_used < n and "idle" not in str(p):
            crashes.append(f"{n}: {n - p.chips_used} idle GPUs not reported: {p}")
    print(f"\n{preset}: 300 GPU counts, {planned} planned, {too_small} refused as too small to hold the model and "
          f"its 4M-token batch, {len(crashes)} crashes")
    assert planned >= 150
    assert not crashes, crashes[:20]


# --- the command line: one bad option value at a time --------------------------------------------------------------

CLI = {  # subcommand: (a valid invocation, {option: kind})
    "roofline": (["roofline", "--chip", "v5e", "--shape", "1024,8192,28672"],
                 {"--chip": "name", "--shape": "shape", "--dtype": "name", "--weight-dtype": "name"}),
    "collective": (["collective", "all_gather", "--chip", "v5e", "--mesh", "4x4", "--axes", "X", "--bytes", "32MiB"],
                   {"--chip": "name", "--mesh": "shape", "--axes": "name", "--bytes": "size", "--gpus": "count",
                    "--also-sharded": "name", "--top-k": "count"}),
    "collective-gpu": (["collective", "all_reduce", "--cluster", "h100-superpod", "--gpus", "256", "--bytes", "1GiB"],
                       {"--cluster": "name", "--gpus": "count", "--bytes": "size", "--also-sharded": "count",
                        "--axes": "name"}),
    "shard": (["shard", "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "--chip", "v5p", "--mesh", "4x4x4", "--sizes",
               "I=1024,J=4096,K=8192"], {"--chip": "name", "--mesh": "shape", "--sizes": "shape", "--dtype": "name"}),
    "plan": (["plan", "--model", "llama3-8b", "--chip", "v5p", "--chips", "256", "--batch", "1Mi"],
             {"--model": "name", "--chip": "name", "--chips": "count", "--batch": "size", "--seq": "count",
              "--cluster": "name", "--efficiency": "name", "--tokens": "size", "--recompute": "name",
              "--microbatch": "size", "--tp": "count", "--pp": "count", "--cp": "count", "--ep": "count"}),
    "serve": (["serve", "--model", "llama3-8b", "--chip", "v5e"],
              {"--model": "name", "--chip": "name", "--context": "count", "--dtype": "name", "--chips": "count",
               "--batch": "count", "--efficiency": "name"}),
    "grade": (["grade", "/no-such-submissions"], {"--out": "path", "--jobs": "count", "--timeout": "size"}),
    "bench": (["bench"], {"--dtype": "name"}),
    "chips": (["chips"], {"--vendor": "name"}),
}
CLI_BAD = {"count": ["0", "-1", "nan", "inf", "-inf", "1e30", "2.5", "abc", ""],
           "size": ["0", "-1", "nan", "inf", "-inf", "1e999", "1e30", "abc", "", "-4Mi"],
           "name": ["misspelt", "-1", "", "nan"],
           "shape": ["-1", "0,0,0", "inf,1,1", "nan", "abc", "", "1e30"],
           "path": ["/no/such/folder/g.csv", "/dev/null/g.csv", "", "/"]}


def cli_cases() -> list[list[str]]:
    cases = []
    for base, options in CLI.values():
        for option, kind in options.items():
            for value in CLI_BAD[kind]:
                argv = list(base)
                if option in argv:
                    argv[argv.index(option) + 1] = value
                else:
                    argv += [option, value]
                cases.append(argv)
    return cases


def test_cli_fuzz_one_bad_option_at_a_time(capsys):
    from scalebook import cli

    failures = []
    for argv in cli_cases():
        try:
            with guarded(10):
                status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code
        except Exception as exc:  # noqa: BLE001 - a traceback is what the fuzz counts
            status = f"{type(exc).__name__}: {exc}"
        err = capsys.readouterr().err
        if status != 2 or err.count("\n") != 1:
            failures.append(f"{argv}: status {status}, stderr {err!r:.200}")
    with capsys.disabled():
        print(f"\ncli fuzz: {len(cli_cases())} bad invocations, {len(cli_cases()) - len(failures)} exit 2 with one "
              f"line, {len(failures)} do not")
    assert not failures, "\n".join(failures)
