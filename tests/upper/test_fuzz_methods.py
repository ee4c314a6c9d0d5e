"""Hostile-but-honest fuzz of the public methods of the package's public classes (issue #33).

tests/ground/test_fuzz.py and tests/upper/test_fuzz_upper.py fuzz every public callable of a module: its functions
and its classes' constructors. This file reaches what they do not: every public method of every public class of the same
modules (a chip's `peak_flops`, a mesh's `hops`, a model's `flops_per_token`, a table's `column` ...). A recipe is
named 'module.Class.method'; its valid call passes the instance as `self`. Each bad value must raise a ValueError,
TypeError or KeyError naming the argument; a valid call must answer with finite, non-negative numbers. A method
made public without a recipe fails `test_every_public_method_has_a_recipe`.
"""

from __future__ import annotations

import random
from typing import Any

import fuzzing
from fuzz_recipes import GROUND_MODULES, UPPER_MODULES
from fuzzing import HUGE, INF, NAN, Recipes, summary
from traces import sample_trace

import scalebook as sb
from scalebook import serving

MODULES = GROUND_MODULES + UPPER_MODULES
NO_ARGS = "takes no argument but the instance (its valid call is in test_every_method_recipe_is_a_valid_call)"
# Public methods left out of the fuzz, each with its reason.
EXEMPT: dict[str, str] = {
    "widgets.core.Explorer.update": "sets ipywidgets controls, whose own traits refuse bad values; fuzzed through "
                                    "the explorers' functions in tests/upper/test_fuzz_upper.py",
    "widgets.core.Explorer.describe": NO_ARGS, "systolic.Grid.tolist": NO_ARGS,
    **{f"widgets.{module}Log.{name}": "a slider's own step arithmetic on the values its spec holds (lo, hi, value), "
                                      "which `control` checks when it reads the spec; fuzzed through `explore`"
       for module in ("", "core.", "web.") for name in ("step_of", "on_steps")},
    **{f"lab.ch08_llama.Llama.{name}": "runs chapter 8's lab in JAX (a compile per call); its arguments pass "
                                      "`checks`, and tests/upper/test_llama_lab.py runs each step and its refusals"
       for name in ("flops", "greedy", "disaggregated", "flash", "time_decode")},
}


def _v5e() -> Any:
    return sb.get_chip("v5e")


def _ring() -> Any:
    return sb.overlap.collective_matmul("A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", sb.TpuMesh("v5e", X=2, Y=4), I=64,
                                        J=64, K=64)


def _mesh() -> Any:
    return sb.TpuMesh("v5e", X=4, Y=4)


def _cluster() -> Any:
    return sb.GpuCluster("h100", gpus=64)


def _model() -> Any:
    return sb.get_model("llama3-8b")


def _report() -> Any:
    return serving.simulate(serving.Workload(4.0), serving.Engine("llama3-8b", "v5e", 8), n_requests=20)


def _chart() -> Any:
    return sb.svg.Chart(title="t").line([1, 2, 3], [1, 4, 9])


def _explorer() -> Any:
    return sb.widgets.core.explore(sb.roofline.dot, N=1e6, chip="v5e")


def _runtime() -> Any:
    return sb.runtime.Runtime(None, None, 1, "cpu", None, "this host")


XS = [[1.0, INF], [1.0, "abc"], [1.0], "abc", None, 3]         # a series (None or NaN is a gap, not an error)
FINITE = [NAN, INF, -INF, HUGE, "abc", None]                   # one finite number
POINT = [(0, NAN), (0, -1), (0, 4), (0, 2.5), (0,), "ab", None, 3]  # coordinates on a 4x4 mesh

M: Recipes = {
    "estimate.Estimate.summary": (lambda: dict(self=sb.Estimate(1e12, 1e9, 1e-3, 1e-3)), {}),
    "hardware.chips.Chip.efficiency": (lambda: dict(self=_v5e(), mode="ideal"), {"mode": "name"}),
    "hardware.chips.Chip.peak_flops": (lambda: dict(self=_v5e(), dtype="bf16"), {"dtype": "name"}),
    "hardware.chips.Chip.critical_intensity": (lambda: dict(self=_v5e()), {"dtype": "name", "bandwidth": "?size"}),
    "hardware.chips.Chip.replace": (lambda: dict(self=_v5e(), hbm_bandwidth=1e12, ici_links=4),
                                    {"hbm_bandwidth": "?size", "ici_links": "?count"}),
    "hardware.chips.Chip.source": (lambda: dict(self=_v5e(), field_name="hbm_bytes"), {"field_name": "name"}),
    "hardware.chips.Efficiency.compute": (lambda: dict(self=sb.hardware.chips.Efficiency()), {"dtype": "name"}),
    "hardware.chips.Efficiency.collective": (lambda: dict(self=sb.hardware.chips.Efficiency(), kind="all_gather"),
                                             {"kind": "name"}),
    "hardware.chips.Efficiency.framework_share": (lambda: dict(self=sb.hardware.chips.Efficiency()),
                                                 {"dtype": "name"}),
    "training.frameworks.Framework.share_on": (lambda: dict(self=sb.training.get_framework("megatron"),
                                                          eff=sb.hardware.chips.Efficiency()),
                                               {"eff": "obj", "dtype": "name"}),
    "hardware.topology.TpuMesh.shape_str": (lambda: dict(sizes={"X": 4, "Y": 4}),
                                            {"sizes": [{"X": 0}, {"X": NAN}, {"X": 2.5}, 3, "abc", None]}),
    "hardware.topology.TpuMesh.total_flops": (lambda: dict(self=_mesh()), {"dtype": "name"}),
    "hardware.topology.TpuMesh.resolve_axes": (lambda: dict(self=_mesh(), axes="X"),
                                               {"axes": ["Q", "XX", "", 3], "name": "text"}),
    "hardware.topology.TpuMesh.size": (lambda: dict(self=_mesh(), axes="X"), {"axes": ["Q", "XX", "", 3]}),
    "hardware.topology.TpuMesh.ring_hops": (lambda: dict(self=_mesh(), axis="X"),
                                            {"axis": ["Q", "XY", "", 3, None]}),
    "hardware.topology.TpuMesh.hops": (lambda: dict(self=_mesh(), src=(0, 0), dst=(3, 1)),
                                       {"src": POINT, "dst": POINT}),
    "hardware.topology.TpuMesh.transfer_time": (lambda: dict(self=_mesh(), nbytes=1e9, src=(0, 0), dst=(3, 1)),
                                                {"nbytes": "nonneg", "src": POINT, "dst": POINT}),
    "hardware.gpu.GpuCluster.subset": (lambda: dict(self=_cluster(), gpus=16), {"gpus": "count"}),
    "hardware.gpu.GpuCluster.span": (lambda: dict(self=_cluster(), group=64, inner=2),
                                     {"group": "count", "inner": "count"}),
    "hardware.gpu.GpuCluster.group_size": (lambda: dict(self=_cluster(), axes="node"), {"axes": ["nod", 3, "X"]}),
    "hardware.gpu.GpuCluster.levels_table": (lambda: dict(self=_cluster()), {}),
    "models.TransformerConfig.attention_params": (lambda: dict(self=_model()), {}),
    "models.TransformerConfig.components": (lambda: dict(self=_model()), {}),
    "models.TransformerConfig.param_count": (lambda: dict(self=_model()), {"active": "flag"}),
    "models.TransformerConfig.matmul_params": (lambda: dict(self=_model()), {"logits": "flag"}),
    "models.TransformerConfig.attention_flops_per_token": (lambda: dict(self=_model(), context=4096),
                                                           {"context": "nonneg"}),
    "models.TransformerConfig.flops_per_token": (lambda: dict(self=_model(), seq_len=4096),
                                                 {"seq_len": "count0", "training": "flag", "causal": "flag",
                                                  "logits": "flag", "remat": "name"}),
    "models.TransformerConfig.kv_bytes_per_token": (lambda: dict(self=_model()), {"bytes_per_value": "size"}),
    "models.TransformerConfig.param_bytes": (lambda: dict(self=_model()), {"dtype": "name"}),
    "models.TransformerConfig.table": (lambda: dict(self=_model()), {"seq_len": "count0"}),
    "sharding.ArraySpec.axes_of": (lambda: dict(self=sb.sharding.parse_spec("A[I_X, J]"), dim="I"), {"dim": "name"}),
    "sharding.ArraySpec.with_axes": (lambda: dict(self=sb.sharding.parse_spec("A[I_X, J]"), dim="J", axes=("Y",)),
                                     {"dim": "name", "axes": [3, "abc", (3,), ("X",), None]}),
    "overlap.CollectiveMatmul.schedule": (lambda: dict(self=_ring()), {}),
    "overlap.CollectiveMatmul.table": (lambda: dict(self=_ring()), {}),
    "sharding.ShardedMatmul.table": (lambda: dict(self=sb.sharded_matmul("A[I, J_X] @ B[J_X, K] -> C[I, K]", _mesh(),
                                                                I=1024, J=8192, K=8192)), {}),
    "serving.Lengths.sample": (lambda: dict(self=serving.Lengths(512, 0.5), rng=random.Random(0), n=8),
                               {"rng": [3, "abc", None], "n": "count"}),
    "serving.Workload.sample": (lambda: dict(self=serving.Workload(4.0), n_requests=8),
                                {"n_requests": "count", "seed": "count0"}),
    "serving.Workload.typical_context": (lambda: dict(self=serving.Workload(4.0)), {}),
    "serving.Engine.pools": (lambda: dict(self=serving.Engine("llama3-8b", "v5e", 8)), {}),
    "serving.Engine.batch_slots": (lambda: dict(self=serving.Engine("llama3-8b", "v5e", 8),
                                                workload=serving.Workload(4.0)), {"workload": "obj"}),
    "serving.Engine.link_bandwidth": (lambda: dict(self=serving.Engine("llama3-8b", "v5e", 8,
                                                                       mode="disaggregated")), {}),
    "serving.Report.percentile": (lambda: dict(self=_report(), metric="ttft", q=50),
                                  {"metric": "name", "q": [-1, 101, NAN, INF, "abc", None]}),
    "serving.Report.latency_table": (lambda: dict(self=_report()), {}),
    "serving.Report.table": (lambda: dict(self=_report()), {}),
    "tables.Table.column": (lambda: dict(self=sb.Table([{"a": 1, "b": 2}]), name="a"), {"name": "name"}),
    "svg.Chart.line": (lambda: dict(self=sb.svg.Chart(title="t"), xs=[1, 2], ys=[3, 4]),
                       {"xs": XS, "ys": XS, "label": "text", "color": [3], "dash": "flag"}),
    "svg.Chart.points": (lambda: dict(self=sb.svg.Chart(title="t"), xs=[1, 2], ys=[3, 4]),
                         {"xs": XS, "ys": XS, "label": "text", "color": [3]}),
    "svg.Chart.span": (lambda: dict(self=sb.svg.Chart(title="t"), x0=1, x1=2, color="#eee"),
                       {"x0": FINITE, "x1": FINITE, "color": "text", "label": "text"}),
    "svg.Chart.vline": (lambda: dict(self=sb.svg.Chart(title="t"), x=1), {"x": FINITE, "color": "text",
                                                                           "label": "text"}),
    "svg.Chart.to_svg": (lambda: dict(self=_chart()), {}),
    "training.layout.Layout.from_strategy": (lambda: dict(strategy="fsdp_tp", X=4, Y=2),
                                             {"strategy": "name", "X": "count", "Y": "count", "P": "count"}),
    "training.layout.Layout.of": (lambda: dict(n_chips=64, tp=8),
                                  {"n_chips": "count", "tp": "count", "pp": "count", "cp": "count", "ep": "count",
                                   "dp": "?count", "fsdp": "?count", "virtual_stages": "count",
                                   "microbatches": "?count"}),
    "training.Memory.as_dict": (lambda: dict(self=sb.training.memory("llama3-8b", 2**20, 256)), {}),
    "training.Prediction.table": (lambda: dict(self=sb.training.predict("llama3-8b", "h100", 8, 2**16, 8192, dp=8)),
                                  {}),
    "inference.StepEstimate.summary": (lambda: dict(self=sb.inference.decode_step("llama3-8b", "v5e", 8, 8, 8192)),
                                       {}),
    "lab.runtime.Runtime.summary": (lambda: dict(self=_runtime()), {}),
    "lab.profiling.Trace.breakdown": (lambda: dict(self=sample_trace()), {"by": "name"}),
    "lab.profiling.Trace.row": (lambda: dict(self=sample_trace(), op="fusion.1"), {"op": "name"}),
    "widgets.core.Explorer.values": (lambda: dict(self=_explorer()), {}),
    "widgets.core.Explorer.refresh": (lambda: dict(self=_explorer()), {}),
    "widgets.core.Explorer.snapshot_html": (lambda: dict(self=_explorer()), {}),
}


def test_every_public_method_has_a_recipe():
    """Coverage by identity, over the modules tests/ground/test_fuzz.py and tests/upper/test_fuzz_upper.py fuzz."""
    missing = fuzzing.missing_recipes(M, EXEMPT, MODULES, public=fuzzing.public_methods)
    assert not missing, f"public methods without a fuzz recipe (add one to test_fuzz_methods.py's M): {missing}"


def test_every_parameter_has_a_kind():
    gaps = fuzzing.kind_gaps(M)
    assert not gaps, gaps


def _judge(name: str, result: Any) -> str:
    """An explorer's answer is drawn, not a number; everything else is searched for NaN, inf and negatives."""
    return "" if hasattr(result, "_repr_mimebundle_") else fuzzing.bad_numbers(result)


def test_fuzz_one_bad_argument_at_a_time(capsys):
    n_cases, outcomes, failures = fuzzing.fuzz(M, _judge)
    with capsys.disabled():
        print(summary("method fuzz", n_cases, len(M), outcomes, "public methods"))
    assert n_cases >= 300
    assert not failures, f"{len(failures)} bad calls not refused by name:\n" + "\n".join(failures)


def test_every_method_recipe_is_a_valid_call():
    broken = fuzzing.invalid_recipes(M, _judge)
    assert not broken, "\n".join(broken)
