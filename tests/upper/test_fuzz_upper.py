"""Hostile-but-honest fuzz of the upper floor (issue #16): figures, explorers and the JAX lab.

The machinery is tests/fuzzing.py's, shared with tests/ground/test_fuzz.py (the analytic model). Every public
callable of `scalebook.plots.*` and `scalebook.widgets.*` has a recipe: one valid call (drawn once, its figures
closed) and the kind of each parameter. A parameter's kind is written out, or read from its annotation and name by
`inferred`
(`int` a count, `float` a size, `bool` a flag, a chip/model/dtype/... `str` a name, other `str` free text; a title
is not fuzzed); a parameter neither kind covers fails `test_every_parameter_has_a_kind`. Each bad value must raise a
ValueError/TypeError/KeyError naming the argument before anything is drawn (no figure left open).

The JAX lab (`lab.*`: `runtime`, `xla`, `bench`, `profiling`, `multihost`, the chapters' programs) is
fuzzed without a valid baseline:
its recipes' calls are never run whole, since a bad size, count, dtype or name must be refused before any JAX work
starts, so the fuzz compiles nothing. Arguments that are JAX arrays or functions get a wrong type.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import fuzzing
import matplotlib
import numpy as np
import pytest
from fuzz_recipes import GROUND, GROUND_EXEMPT, LAB, RECORD, UPPER_MODULES, mesh_4x4, superpod
from fuzzing import NAN, guarded, kind_gaps, missing_recipes, resolve, summary
from traces import sample_trace

import scalebook as sb
import scalebook.rings  # noqa: F401  (sb.rings in the recipes)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

DRAWING = "a drawing primitive on a matplotlib Axes the module's own figures pass in (not a calculator)"
EXEMPT = {
    "plots.diagram.cell": DRAWING, "plots.diagram.box": DRAWING, "plots.diagram.arrow": DRAWING,
    "plots.diagram.canvas": DRAWING, "plots.diagram.panels": DRAWING,
    "plots.roofline.human_ticks": DRAWING, "plots.roofline.legend_outside": DRAWING,
    "plots.roofline.label_apart": DRAWING,
    "widgets.core.Log": "a slider spec (lo, hi, value), read by `explore`, which is fuzzed",
    "widgets.core.Explorer": "built by `explore`, which is fuzzed", "widgets.tpu.Picture": "an SVG text wrapper",
    **{f"widgets.web.{name}": "the website bridge's protocol: it reads descriptions that `explore` builds (fuzzed); "
                              "tests/upper/test_numpy_free.py and tests/site/test_live.py run it on every explorer"
       for name in ("answer", "control", "describe", "load", "numbers", "open_faceless", "render", "text_of",
                    "inputs", "numbers_in", "displayed_numbers", "Log", "Text", "Unfit", "Fitting")},
    "widgets.core.Unfit": "an explorer's one-line answer (`web.Unfit`), built by `explore(unfit=...)`, which is fuzzed",
    "lab.runtime.Runtime": RECORD, "lab.runtime.host": "no arguments; describes this machine",
    "lab.bench.Sweep": RECORD, "lab.bench.default_dtype": "no arguments; reads the device",
    "lab.ch08_llama.Served": RECORD,
    "lab.profiling.OpEvent": RECORD, "lab.profiling.Trace": RECORD, "hlo.HloOp": "fuzzed in tests/ground/test_fuzz.py",
    "lab.multihost.MultihostError": "an exception class", "lab.multihost.MultihostResult": RECORD,
    "lab.multihost.free_port": "no arguments; asks the OS for a port",
    "lab.multihost.dcn_ici_mesh": "no arguments; runs inside a launched process only",
    "lab.multihost.chapter10": "no arguments; runs inside a launched process only",
    "lab.multihost.ProcessLayout": RECORD,
}

# Parameter names whose `str` is one of a set of names (a misspelling must be refused).
NAMES = {"chip", "model", "dtype", "kind", "strategy", "mode", "cluster", "optimizer", "schedule", "precision", "by",
         "generation", "efficiency", "weights", "kv", "program", "remat", "layout", "direction", "links", "wrap",
         "causal", "also_sharded", "target", "drafter", "op", "axis", "weight_dtype"}
NOT_FUZZED = {"title", "label", "points", "name"}


def inferred(fn: Callable[..., Any]) -> dict[str, Any]:
    """The kind of each parameter read from its annotation and name (see the module docstring)."""
    kinds: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        ann = str(p.annotation).replace(" ", "")
        optional = "?" if ann.endswith("|None") or p.default is None else ""
        base = ann.removesuffix("|None")
        if p.name in NOT_FUZZED:
            kinds[p.name] = "-"
        elif base == "bool":
            kinds[p.name] = "flag"
        elif base == "int":
            kinds[p.name] = optional + "count"
        elif base == "float":
            kinds[p.name] = optional + "size"
        elif p.name in NAMES and ("str" in base or base in ("Model",)):
            kinds[p.name] = optional + "name"
        elif base == "str":
            kinds[p.name] = "text"
    return kinds


R: fuzzing.Recipes = {}


def recipe(name: str, valid: Callable[[], dict[str, Any]] = dict, /, **kinds: Any) -> None:
    """Add a recipe: the inferred kinds, overridden by `kinds`; the valid call is `valid()` plus the defaults."""
    fn = resolve(name)
    defaults = {p.name: p.default for p in inspect.signature(fn).parameters.values() if p.default is not p.empty}
    R[name] = (lambda: {**defaults, **valid()}, {**inferred(fn), **kinds})


def _memory() -> Any:
    return sb.training.memory("llama3-8b", 2**20, 256)


SEQ = [3, "abc", None]           # a sequence argument given a non-sequence
PAIR = [(1, NAN), (2, 1), (-1, 1), 3, None]   # an increasing pair of positive numbers
OBJ = "obj"

# --- figures -------------------------------------------------------------------------------------------------------
recipe("plots.array_layouts.sharding_gallery", lambda: dict(specs=["A[I_X, J_Y]"], mesh={"X": 2, "Y": 2}),
       specs=[["A[I_X"], 3, None], mesh=[{"X": 0}, 3, "abc"])
recipe("plots.array_layouts.matmul_cases", lambda: dict(exprs=["A[I_X, J] @ B[J, K] -> C[I_X, K]"], mesh=mesh_4x4(),
                                                           sizes={"I": 64, "J": 64, "K": 64}),
       exprs=[["A[I] @"], 3, None], mesh=OBJ, sizes=[{"I": -1, "J": 64, "K": 64}, 3, None])
for _f in ("chip_diagram", "memory_hierarchy", "tray"):
    recipe(f"plots.chip.{_f}", lambda: dict(chip="v5e"), chip="name")
recipe("plots.chip.hosts", lambda: dict(mesh=mesh_4x4()), mesh=OBJ)
recipe("plots.chip.slices", lambda: dict(mesh=mesh_4x4(), subslices=[((0, 0), (2, 2))]), mesh=OBJ,
       subslices=[[((0, 0), (9, 9))], [((0, 0), (-1, 2))], 3, None])
recipe("plots.chip.pod_cubes", lambda: dict(mesh=sb.TpuMesh("v5p", X=8, Y=8, Z=8)), mesh=OBJ)
recipe("plots.chip.elementwise_pipeline", steps=[[0, -1], [2.5], 3])
recipe("plots.chip.mxu_pipeline")
recipe("plots.chip.banner", mesh=[3, "abc"])
recipe("plots.collective_steps.torus_steps", kind="name")
recipe("plots.collective_steps.collectives_summary")
recipe("plots.collective_steps.collective_matmul")
recipe("plots.collective_steps.overlap_timeline", lambda: dict(ring=sb.overlap.collective_matmul(
    "A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", sb.TpuMesh("v5e", X=2, Y=4), I=64, J=64, K=64)), ring=OBJ)
recipe("plots.gpu_diagrams.gpu_chip")
recipe("plots.gpu_diagrams.sm_diagram")
recipe("plots.gpu_diagrams.warp_divergence")
recipe("plots.gpu_diagrams.nvlink_nodes", generations=[["9.0"], 3, None])
recipe("plots.gpu_diagrams.sharp_diagram", lambda: dict(cluster=superpod()), cluster=OBJ)
recipe("plots.gpu_diagrams.sharp_bandwidth", lambda: dict(cluster=superpod(), overhead=1e-5), cluster=OBJ,
       overhead="nonneg", nbytes=PAIR)
recipe("plots.gpu_diagrams.nvl72", lambda: dict(cluster=sb.hardware.gpu.get_cluster("gb200-superpod")), cluster=OBJ)
recipe("plots.gpu_diagrams.nvswitch", generation="name")
recipe("plots.gpu_diagrams.gpu_pipeline", t_send="nonneg", t_reduce="nonneg")
recipe("plots.gpu_diagrams.megatron_configs",
       lambda: dict(rows=[{"model": "gpt", "model parallel": 8, "tokens/GPU": 1e3, "critical tokens/GPU": 5e2}]),
       rows=[[{"model": "gpt"}], 3, None])
recipe("plots.gpu_diagrams.expert_parallel", lambda: dict(cluster=superpod()), cluster=OBJ)
recipe("plots.gpus.fat_tree", lambda: dict(cluster=superpod()), cluster=OBJ)
recipe("plots.gpus.level_bandwidth", lambda: dict(clusters=[superpod()]), clusters=[[3], 3, None])
recipe("plots.gpus.sharded_all_gather", lambda: dict(cluster=superpod()), cluster=OBJ, inner=[[1, 0], [2.5], 3])
recipe("plots.gpus.tpu_vs_gpu", lambda: dict(mesh=mesh_4x4(), cluster=superpod()), mesh=OBJ, cluster=OBJ, nbytes=PAIR)
recipe("plots.gpus.ragged_all_to_all", units=[[2, 0], [2.5], 3, None])
recipe("plots.gpus.achieved_bandwidth", lambda: dict(peak=4e11, overhead=1e-5), overhead="nonneg",
       quoted=[[(1e6, NAN)], 3], nbytes=PAIR)
recipe("plots.experts.moe_layer", mesh=[3, "abc"])
recipe("plots.measured_collectives.against_model", lambda: dict(key="v5e_all_gather"), key="name")
recipe("plots.inference.pareto", contexts=[[1024, NAN], [-1], 3, None])
recipe("plots.inference.latency_breakdown", batches=PAIR)
recipe("plots.inference.kv_variants", local_layers="frac0", contexts=PAIR)
recipe("plots.inference.throughput_vs_batch", batches=PAIR)
recipe("plots.kv_cache.decoding", lambda: dict(cached=True))
recipe("plots.kv_cache.heads", groups=[[8, 3], [0], 3, None])
recipe("plots.kv_cache.layer_sharing")
recipe("plots.kv_cache.paged_cache", lengths=[[37, -1], [2.5], 3, None])
recipe("plots.kv_cache.cache_sharding")
recipe("plots.llama.llama_config", lambda: GROUND["models.config_table"][0](),
       config=[{"num_hidden_layers": -2}, 3, None])
recipe("plots.models.attention_share", models=[["llama3-8bx"], 3, None], T=PAIR)
recipe("plots.models.param_breakdown", models=[["llama3-8bx"], 3, None])
recipe("plots.parallelism.layer_chain")
recipe("plots.parallelism.layout", lambda: dict(strategy="fsdp"))
recipe("plots.parallelism.pass_bytes", lambda: dict(mesh_of={"fsdp": mesh_4x4()}, B=1024, D=512, F=2048),
       mesh_of=[{"fsdp": 3}, {"fsdpx": mesh_4x4()}, 3, None])
recipe("plots.parallelism.comms_ratio", batches=[[1, NAN], [0], 3])
recipe("plots.profile.timeline", lambda: dict(trace=sample_trace()), trace=OBJ, run=[2.5, "abc", None],
       scope=[3], window=PAIR[:3] + [3])
recipe("plots.roofline.roofline", lambda: dict(chips="v5e"), chips=["v5ex", 3, None, ["v5e", "h10x"]],
       intensity=PAIR)
recipe("plots.roofline.batch_roofline", lambda: dict(chip="v5e", shapes=[(8192, 8192)]),
       shapes=[[(8192, -1)], [(NAN, 1)], 3, None], batches=[[1, 0], [2.5], "abc"])
recipe("plots.roofline.sweep", lambda: dict(result=None), result=OBJ)
recipe("plots.schedules.schedule_figure", lambda: dict(grid=sb.training.interleaved_schedule(2, 4), title="x"),
       grid=[[], [[]], 3, None], title="-")
recipe("plots.serving.engine", lambda: dict(mode="interleaved"), prompts=[[1024, -1], [NAN], 3, None],
       outputs=[[3, 0], [2.5], 3, None])
recipe("plots.serving.continuous_batching", outputs=[[3, 0], [2.5], 3, None])
recipe("plots.serving.prefix_tree", lambda: dict(prompts=[["a", "b"], ["a", "c"]]), prompts=[[3], 3, None])
recipe("plots.serving.speculative", accepted="count0")
recipe("plots.serving.speculative_panels", acceptances=[[0.5, 1.5], [NAN], 3, None])
recipe("plots.serving.latency_cost", models=[["llama3-8bx"], 3, None], chips=[[16, 0], [2.5], 3, None])
recipe("plots.serving.weight_stationary_curves", chips=[[8, 0], [2.5], 3, None])
recipe("plots.serving.latency_bound_gather", batches=[[1, NAN], [0], 3, None])
recipe("plots.sharding.sharding_grid", lambda: dict(spec="A[I_X, J_Y]", mesh={"X": 2, "Y": 2},
                                                     sizes={"I": 64, "J": 64}),
       spec=["A[I_X", 3, None], mesh=[{"X": 0}, 3, None], sizes=[{"I": -1, "J": 64}, 3, None])
recipe("plots.sharding.ring_steps")
recipe("plots.sharding.collective_vs_size", lambda: dict(mesh=mesh_4x4(), axes="X"), mesh=OBJ, axes=["Q", 3],
       sizes=[[1e6, NAN], [-1], 3], measured=[[(1e6, -1)], 3])
recipe("plots.tpu.bandwidth_ladder", chips=[["v5ex"], 3, None])
recipe("plots.tpu.torus", lambda: dict(mesh=mesh_4x4()), mesh=OBJ)
recipe("plots.tpu.systolic", lambda: dict(step=2), step="count0")
recipe("plots.tpu.systolic_strip", steps=[[0, -1], [2.5], 3])
recipe("plots.tpu.stage_breakdown", lambda: dict(stages={"load": 1e-3, "math": 2e-3}),
       stages=[{"load": NAN}, {"load": -1}, 3, None])
recipe("plots.trace.compile_stages")
recipe("plots.trace.tiling", lambda: dict(shape=(4, 8), tile="T(2,4)"), shape=[(4, -1), (2.5, 3), 3, None],
       tile=["T(8,", 3, None])
recipe("plots.trace.fusion_graph", lambda: dict(hlo=sample_trace().hlo, name="fusion.1"),
       hlo=[3, None], name=["nosuch", 3, None])
recipe("plots.trace.time_breakdown", lambda: dict(trace=sample_trace()), trace=OBJ)
recipe("plots.trace.op_rooflines", lambda: dict(trace=sample_trace()), trace=OBJ)
recipe("plots.trace.memory_budget", lambda: dict(parts={"weights": 1e9}), parts=[{"w": NAN}, {"w": -1}, 3, None])
recipe("plots.training.tokens", lambda: dict(n=1e6), n="nonneg")
recipe("plots.training.strategy_times", batches=[[1, NAN], [0], 3])
recipe("plots.training.memory_bars", lambda: dict(memories={"a": _memory()}), memories=[{"a": 3}, 3, None],
       hbm=[-1, NAN, "v5ex", [3]], replicated=[["b"], 3])
recipe("plots.training.pipeline", lambda: dict(grid=sb.training.interleaved_schedule(2, 4)),
       grid=[[], [[]], 3, None], title="-")
recipe("plots.transformer.layer_diagram")
recipe("plots.transformer.moe_diagram")
recipe("plots.transformer.flash_tiles")
recipe("plots.transformer.matmul_flops")
recipe("plots.validation.validation", band="fraction")

# --- explorers -----------------------------------------------------------------------------------------------------
recipe("widgets.core.explore", lambda: dict(fn=sb.roofline.dot, N=1e6, chip="v5e"), fn=[3, "abc", None],
       unfit=[3, [3], "abc"])
recipe("widgets.core.roofline_chart", lambda: dict(chip="v5e", dtype="bf16",
                                                    points={"B=240": sb.roofline.matmul(240, 8192, 8192, "v5e")}),
       points=[{"a": 3}, 3, None], intensity=PAIR)
recipe("widgets.core.roofline_explorer", chips=[["v5ex"], 3])
for _f in ("gpu_anatomy_table", "gpu_anatomy_explorer"):
    recipe(f"widgets.gpus.{_f}", clock_ghz="size")
for _f in ("fat_tree_view", "fat_tree_explorer", "gpu_layout_view", "gpu_layout_explorer"):
    recipe(f"widgets.gpus.{_f}")
for _f in ("pareto_explorer", "latency_breakdown_explorer"):
    recipe(f"widgets.inference.{_f}")
recipe("widgets.inference.kv_variants_explorer", local_layers="frac0")
for _f in ("shard_program_view", "shard_program_explorer", "routing_view", "routing_explorer",
           "collective_matmul_view", "collective_matmul_explorer"):
    recipe(f"widgets.jax_programs.{_f}")
recipe("widgets.llama.model_comparison", models=[["llama3-8bx"], 3, None])
recipe("widgets.llama.run_table", mfu="fraction", usd_per_chip_hour="nonneg")
recipe("widgets.llama.run_explorer", mfu="fraction", usd_per_chip_hour="nonneg")
for _f in ("batch_bounds", "bounds_explorer", "plan_explorer"):
    recipe(f"widgets.llama.{_f}")
recipe("widgets.llama_serving.topology_explorer", topology=["4x", "0x2", 3, None], ici="flag")
recipe("widgets.models.attention_share", lambda: dict(T=8192, D=8192), F="?count")
for _f in ("kv_cache_table", "remat_table", "model_explorer", "kv_cache_explorer", "remat_explorer",
           "attention_roofline_explorer"):
    recipe(f"widgets.models.{_f}")
recipe("widgets.models.attention_share_explorer", causal="name")
recipe("widgets.profiling.op_view", lambda: dict(trace=sample_trace(), op="fusion.1"), trace=OBJ)
recipe("widgets.profiling.op_explorer", lambda: dict(trace=sample_trace()), trace=OBJ)
recipe("widgets.profiling.breakdown_view", lambda: dict(trace=sample_trace()), trace=OBJ)
recipe("widgets.profiling.breakdown_explorer", lambda: dict(trace=sample_trace()), trace=OBJ)
for _f in ("profile_example_view", "profile_example_explorer", "collective_check_view", "collective_check_explorer",
           "memory_check_view", "memory_check_explorer"):
    recipe(f"widgets.profiling.{_f}")
recipe("widgets.serving.serving_chart", lambda: dict(report=sb.serving.simulate(
    sb.serving.Workload(rate=1.0), sb.serving.Engine("llama3-8b", "v5e", 8), n_requests=20)), report=OBJ)
recipe("widgets.serving.serving_view", lambda: dict(rate=2.0, slots=8, mode="interleaved", prompt=1024, output=256),
       prefix_hit="frac0", param_bytes="size", kv_bytes="size", sigma="nonneg", seed="count0")
recipe("widgets.serving.serving_explorer")
recipe("widgets.serving.batching_html", lambda: dict(slots=2, outputs=[3, 2, 4], step=1), step="count0",
       outputs=[[3, 0], [2.5], 3, None])
recipe("widgets.serving.batching_stepper", step="count0", outputs=[[3, 0], [2.5], 3, None])
recipe("widgets.sharding.spec_options", lambda: dict(name="A", dims=["I", "J"]), name="text",
       dims=[3, None, [3]], axes=[3, None, [3]])
recipe("widgets.sharding.collective_chart", lambda: dict(mesh=mesh_4x4(), axes="X", kind="all_gather", nbytes=1e6),
       mesh=OBJ, axes=["Q", 3], also_sharded="-")
recipe("widgets.sharding.collective_explorer", axes="name", also_sharded="name", wrap="name")
recipe("widgets.sharding.matmul_explorer", A=["A[I_X", 3, None], B=["B[J", 3, None], C=["C[I", 3, None])
recipe("widgets.sharding.ring_html", lambda: dict(states=sb.rings.ring_schedule(4), step=1,
                                                   kind="all_gather", wrap=True),
       states=[3, None, [3]], step="count0")
recipe("widgets.sharding.ring_explorer", step="count0")
recipe("widgets.sharding.overlap_view", chip="name")
recipe("widgets.sharding.grid_svg", lambda: dict(spec="A[I_X, J_Y]", axes={"X": 2, "Y": 2}, sizes={"I": 64, "J": 64}),
       spec=["A[I_X", 3, None], axes=[{"X": 0}, 3, None], sizes=[{"I": -1, "J": 64}, 3, None])
recipe("widgets.sharding.sharding_grid_explorer", spec=["A[I_X", 3, None])
recipe("widgets.sharding.memory_explorer", spec=["A[I_X", 3, None])
recipe("widgets.tpu.mesh_svg", lambda: dict(mesh=mesh_4x4()), mesh=OBJ, marks=[3, "abc"], route=[3, [(99, 99)]])
recipe("widgets.tpu.systolic_svg", lambda: dict(run=sb.systolic.simulate(W=np.ones((3, 3)), X=np.ones((2, 3))),
                                                 step=1), run=OBJ, step="count0")
recipe("widgets.tpu.torus_explorer", chips=[["v5ex"], 3, None])
recipe("widgets.tpu.transfer_explorer", to_x="count0", to_y="count0")
recipe("widgets.tpu.systolic_explorer", step="count0")
recipe("widgets.tpu.offload_explorer")
recipe("widgets.training.training_roofline_chart")
recipe("widgets.training.training_roofline_explorer")
recipe("widgets.training.memory_picture", lambda: dict(parts={"weights": 1e9}, hbm=16e9),
       parts=[{"w": NAN}, {"w": -1}, 3, None])
recipe("widgets.training.training_memory_explorer")
recipe("widgets.training.pipeline_html", lambda: dict(grid=sb.training.interleaved_schedule(2, 4)),
       grid=[3, None, "abc"])
recipe("widgets.training.pipeline_explorer")
recipe("widgets.training.threshold_table")
recipe("widgets.training.threshold_explorer")
recipe("widgets.training.dp_capacity_explorer")
recipe("widgets.training.layout_step_explorer", mfu="fraction")

# --- the JAX lab: bad calls only (a valid call would compile) ------------------------------------------------------
FN = [3, "abc", None]   # a function argument given a non-function
ARR = [3, "abc", None]  # a JAX array argument given a non-array


def _array(*shape: int) -> Any:
    import jax
    return jax.device_put(np.ones(shape, np.float32))


def _tiny() -> Any:
    from scalebook.lab.ch09_transformer import TinyTransformer
    return TinyTransformer(B=8, T=16, D=32, F=64, H=2, L=1, V=64, data=2, model=2)


recipe("lab.runtime.setup", n_cpu_devices="count", quiet="flag")
recipe("course.session.setup", n_cpu_devices="count", quiet="flag", student=[3, ""], key=[3, "abc"])
recipe("lab.runtime.jnp_dtype", lambda: dict(name="bf16"), name="name")
recipe("lab.runtime.device_mesh", lambda: dict(axes={"X": 2, "Y": 4}), axes=[{"X": 0}, {"X": 2.5}, 3, None])
recipe("lab.xla.compiled", lambda: dict(fn=abs), fn=FN)
for _f in ("hlo_text", "cost_analysis", "collectives"):
    recipe(f"lab.xla.{_f}", lambda: dict(fn=abs), fn=FN)
recipe("lab.xla.summarize", lambda: dict(colls=[]), colls=[3, None, [3]], title="-")
recipe("lab.xla.kinds", lambda: dict(colls=[]), colls=[3, None, [3]])
recipe("lab.xla.matmul_collectives", lambda: dict(expr="A[I_X, J] @ B[J, K] -> C[I_X, K]", axes={"X": 2},
                                                I=64, J=64, K=64),
       expr=["A[I] @ ", 3, None], axes=[{"X": 0}, 3, None])
for _f in ("mlp_train_step", "mlp_argument_bytes"):
    recipe(f"lab.ch05_mlp.{_f}", lambda: dict(strategy="fsdp"), axes=[{"X": 0}, 3])
recipe("lab.bench.median_time", lambda: dict(fn=abs), fn=FN, warmup="count0")
recipe("lab.bench.calibrate", n="?count", nbytes="?size", progress="flag", collectives="?flag")
recipe("lab.bench.matmul_sweep", lambda: dict(shapes=[(64, 64, 64)]), shapes=[[(64, -1, 64)], [(2.5, 1, 1)], 3, None],
       chip=[3, "abc"], progress="flag")
recipe("lab.bench.sweep_shapes", D="?count", F="?count", batches=[[1, 0], [2.5], 3])
recipe("lab.bench.collective_sweep", kinds=[["all_gahter"], 3, None], sizes=[[1024, NAN], [-1], 3, None],
       progress="flag")
recipe("lab.bench.collective_factors", lambda: dict(
    sweep=sb.tables.Table([{"kind": "psum", "V": v, "measured": 1e-5 + v / 1e11} for v in (2**20, 2**24)]),
    chip=sb.get_chip("h100"), n_devices=8), sweep=[3, None, sb.tables.Table([])], chip=[3, "abc"])
recipe("lab.profiling.op_costs", lambda: dict(hlo=sample_trace().hlo), hlo=[3, None])
recipe("lab.profiling.op_kind", lambda: dict(opcodes="dot"), opcodes=[3, None])
recipe("lab.profiling.op_scope", lambda: dict(line="%x = f32[2]{0} add(%a, %b)"), line=[3, None])
recipe("lab.profiling.fusion_text", lambda: dict(hlo=sample_trace().hlo, name="fused_computation"), hlo=[3, None],
       name=["nosuch", 3, None])
recipe("lab.profiling.parameters", lambda: dict(hlo=sample_trace().hlo), hlo=[3, None])
recipe("lab.profiling.read_trace", lambda: dict(path="/nonexistent/trace.json.gz"), path=[3, None, "/nonexistent/x"])
recipe("lab.profiling.capture", lambda: dict(fn=abs), fn=FN, repeats="count", chip=["v5ex", 3])
recipe("lab.multihost.run", lambda: dict(program="global_array"), program=["nosuch", 3, None],
       n_processes="count", devices_per_process="count", timeout="size")
recipe("lab.multihost.global_array")
recipe("lab.multihost.sharded_matmul", seed="count0")
recipe("lab.multihost.fsdp_step", seed="count0")
recipe("lab.ch07_decoder.init", config=OBJ, seed="count0")
recipe("lab.ch07_decoder.prefill", lambda: dict(params={}, tokens=np.zeros((1, 4), np.int32)), params=[3, None],
       tokens=ARR, capacity="?count")
recipe("lab.ch07_decoder.decode_step", lambda: dict(params={}, cache={}, token=np.zeros(1, np.int32)),
       params=[3, None], cache=[3, "abc"], token=ARR)
recipe("lab.ch07_decoder.measure_decode", chip=[3, "abc"], seed="count0", batches=[[1, 0], [2.5], 3, None], config=OBJ)
recipe("lab.ch07_decoder.decode", lambda: dict(params={}, cache={}, token=np.zeros(1, np.int32)), params=[3, None],
       cache=[3, "abc"], token=ARR)
recipe("lab.ch08_llama.scaled_down")
recipe("lab.ch08_llama.init", lambda: dict(config=sb.get_model("llama3-8b")), config=OBJ, seed="count0")
recipe("lab.ch08_llama.parameter_count", lambda: dict(params={}), params=[3, None])
recipe("lab.ch08_llama.full_size")
recipe("lab.ch08_llama.step_flops", lambda: dict(config=sb.get_model("llama3-8b"), batch=1, tokens=1, context=1),
       config=OBJ)
recipe("lab.ch08_llama.Llama", config=[3, "abc"], seed="count0")
recipe("lab.ch08_llama.flash_attention", lambda: dict(q=np.zeros((1, 16, 4, 8)), k=np.zeros((1, 16, 2, 8)),
                                                     v=np.zeros((1, 16, 2, 8))), q=ARR, k=ARR, v=ARR)
recipe("lab.ch09_transformer.TinyTransformer")
recipe("lab.ch09_transformer.train_step", lambda: dict(cfg=_tiny()), cfg=OBJ)
recipe("lab.ch09_transformer.step_inputs", lambda: dict(cfg=_tiny()), cfg=OBJ, seed="count0")
recipe("lab.ch10_moe.moe_inputs", seed="count0")
for _f in ("moe_local", "moe_jit", "moe_shard_map"):
    recipe(f"lab.ch10_moe.{_f}", lambda: dict(a=_array(16, 8), w=_array(4, 8, 8), route=_array(16)),
           a=ARR, w=ARR, route=ARR, **({} if _f == "moe_local" else {"mesh": [3, "abc"]}))
recipe("lab.ch10_programs.make_mesh", axes=[{"X": 0}, 3])
recipe("lab.ch10_programs.sharding_modes", lambda: dict(B=64, D=64, F=64))
for _f in ("collective_matmul", "bidirectional_collective_matmul"):
    recipe(f"lab.ch10_programs.{_f}", lambda: dict(x=_array(8, 8), w=_array(8, 8)), x=ARR, w=ARR,
           mesh=[3, "abc"], axis="name")
recipe("lab.ch10_programs.allreduce_collective_matmul", lambda: dict(a=_array(8, 8), w=_array(8, 8)), a=ARR, w=ARR,
       mesh=[3, "abc"], axis="name")
recipe("lab.ch10_programs.reduce_scatter_collective_matmul", lambda: dict(t=_array(8, 8), w=_array(8, 8)), t=ARR,
       w=ARR, mesh=[3, "abc"], axis="name")
recipe("lab.ch10_programs.overlapped_mlp", lambda: dict(x=_array(8, 8), w_in=_array(8, 8), w_out=_array(8, 8)),
       x=ARR, w_in=ARR, w_out=ARR, mesh=[3, "abc"], axis="name")
for _f in ("time_collective_matmul", "time_overlapped_mlp"):
    recipe(f"lab.ch10_programs.{_f}", lambda: dict(B=64, D=64, F=64))
recipe("lab.multihost.process_layout")
recipe("lab.ch10_routing.top_k_inputs", seed="count0")
recipe("lab.ch10_routing.route_top_k", lambda: dict(logits=_array(16, 4), k=2), logits=ARR)
recipe("lab.ch10_routing.moe_top_k_reference", lambda: dict(a=_array(16, 8), w=_array(4, 8, 8),
                                                             experts=_array(16, 2), gates=_array(16, 2)),
       a=ARR, w=ARR, experts=ARR, gates=ARR)
recipe("lab.ch10_routing.moe_top_k", lambda: dict(a=_array(16, 8), w=_array(4, 8, 8), experts=_array(16, 2),
                                                   gates=_array(16, 2)),
       a=ARR, w=ARR, experts=ARR, gates=ARR, mesh=[3, "abc"])

# Fuzzed with bad values only, never called whole: the lab (a valid call compiles) and figures of measurements.
LAB_RECIPES = {name for name in R if name.split(".")[0] in {m.split(".")[0] for m in LAB}} | {
    "plots.roofline.sweep"}  # draws a bench.Sweep, which only a JAX measurement (lab.bench.matmul_sweep) makes
# Results that are signed by nature: none so far. Figures and explorers are checked for leaks, not numbers.


def test_every_public_callable_has_a_recipe():
    missing = missing_recipes({**GROUND, **R}, {**GROUND_EXEMPT, **EXEMPT}, UPPER_MODULES)
    assert not missing, f"public callables without a fuzz recipe (add one to tests/upper/test_fuzz_upper.py): {missing}"


def test_every_parameter_has_a_kind():
    gaps = kind_gaps(R)
    assert not gaps, gaps


def _judge(result: Any) -> str:
    """A figure or an explorer is not a number: only tables, dicts and records are searched for bad numbers."""
    return "" if hasattr(result, "savefig") or hasattr(result, "_repr_mimebundle_") else fuzzing.bad_numbers(result)


class Compiled(Exception):
    """Raised in place of any XLA compilation during the fuzz: the lab must refuse bad input before JAX work."""


@pytest.fixture
def no_compiling(monkeypatch):
    import jax
    from jax._src import compiler

    jax.devices()  # the backend starts here, outside the fuzz's memory cap

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise Compiled("JAX compiled a program for a call with a bad argument (validate first)")
    monkeypatch.setattr(compiler, "compile_or_get_cached", refuse)


def test_fuzz_one_bad_argument_at_a_time(capsys, no_compiling):
    drew = []

    def note_drawing(name: str, param: str, value: Any, outcome: str) -> None:
        """A call refused by name must be refused before it opens a figure; close what it drew."""
        if outcome == "named" and plt.get_fignums():
            drew.append(f"{name}({param}={value!r})")
        plt.close("all")

    plt.close("all")
    n_cases, outcomes, failures = fuzzing.fuzz(R, lambda _name, result: _judge(result), note_drawing)
    with capsys.disabled():
        print(summary("upper-floor fuzz", n_cases, len(R), outcomes)
              + f"; {len(drew)} refused only after drawing; {len(LAB_RECIPES)} lab callables fuzzed without a "
                "valid call")
    assert not failures, f"{len(failures)} bad calls not refused by name:\n" + "\n".join(failures[:400])
    assert not drew, f"refused after a figure was opened (validate first): {drew[:50]}"


@pytest.mark.parametrize("name", sorted(set(R) - LAB_RECIPES))
def test_every_recipe_is_a_valid_call(name):
    """Each figure and explorer recipe draws once (its figures closed after) and its numbers are finite, ≥ 0."""
    valid, _kinds = R[name]
    with guarded(30):
        result = resolve(name)(**valid())
    plt.close("all")
    assert not _judge(result), f"{name}: {_judge(result)} in {result!r:.200}"
