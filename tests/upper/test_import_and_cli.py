"""`import scalebook` is light and fast; the command line prints answers and clear errors."""

import functools
import importlib
import inspect
import subprocess
import sys
import warnings

import pytest
from speed import assert_fast

from scalebook import cli, faces

# The ground floor: every module a chapter's first cells touch (what `import scalebook` loaded eagerly before
# its names became lazy), so the budget holds for real use, not only for the bare import.
GROUND_FLOOR = "collectives, grading, hardware, inference, models, roofline, serving, sharding, training, units, tables"

IMPORT_PROBE = f"""
import sys, time
start = time.perf_counter()
import scalebook
bare = time.perf_counter() - start
from scalebook import {GROUND_FLOOR}
floor = time.perf_counter() - start
heavy = [m for m in ("jax", "matplotlib", "ipywidgets") if m in sys.modules]
print(bare, floor, heavy)
"""


def test_import_is_fast_and_does_not_load_the_lab():
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True).stdout
    bare, floor, heavy = out.split(" ", 2)
    assert heavy.strip() == "[]"
    assert_fast(float(bare), 0.3, "import scalebook")
    assert_fast(float(floor), 0.3, "import scalebook and its ground floor")


LAZY_PROBE = """
import sys
import scalebook as sb
before = sorted(m for m in sys.modules if m.startswith("scalebook."))
sb.expect
print(before, "scalebook.book.checks" in sys.modules, "scalebook.inference" in sys.modules)
"""


def test_names_load_their_module_on_first_use_and_only_it():
    out = subprocess.run([sys.executable, "-c", LAZY_PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['scalebook.faces']", "True", "False"]  # the face's machinery, nothing else


def test_every_public_name_resolves_to_the_object_its_module_defines():
    import scalebook as sb

    for name, module in faces.served("scalebook").items():
        defining = importlib.import_module(f"scalebook.{module}")
        is_module = module == name or module.endswith(f".{name}")
        assert getattr(sb, name) is (defining if is_module else vars(defining)[name]), name
    assert sb.expect is sb.book.checks.expect and sb.Table is sb.tables.Table and sb.Estimate is sb.roofline.Estimate
    with pytest.raises(AttributeError, match="module 'scalebook' has no attribute 'nonsense'"):
        sb.nonsense  # noqa: B018


# DESIGN.md's public API: tests outside this repository call exactly these, so each resolves without a warning.
DESIGN_API = ["get_chip", "get_model", "TransformerConfig", "expect", "roofline.matmul", "roofline.critical_intensity",
              "TpuMesh", "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "GpuCluster", "sharded_matmul",
              "training.step_time", "training.memory", "training.plan", "training.predict", "inference.decode_step",
              "inference.prefill", "validation.table", "validation.summary", "xla.collectives", "bench.calibrate",
              "bench.matmul_sweep"]


@pytest.mark.parametrize("dotted", DESIGN_API)
def test_the_design_api_resolves_without_a_warning(dotted: str):
    import scalebook as sb

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert callable(functools.reduce(getattr, dotted.split("."), sb)), dotted


@pytest.mark.parametrize("old, new", [
    ("decoder", "lab.ch07_decoder"), ("sharded_ops", "lab.ch10_programs"), ("labs", "lab"),
    ("grading", "book.checks"),
    ("training.critical_batch", "training.min_tokens_per_chip"), ("plots.chip_diagram", "plots.chip.chip_diagram"),
    ("plots.sweep", "plots.roofline.sweep"), ("pipeline", "training.pipeline"),
])
def test_an_old_name_warns_then_serves_the_new_one(old: str, new: str):
    import scalebook as sb

    with pytest.warns(DeprecationWarning, match=r"goes in release 0\.3: use sb\."):
        value = functools.reduce(getattr, old.split("."), sb)
    assert value is functools.reduce(getattr, new.split("."), sb)


def test_a_name_of_a_module_is_the_module_not_an_old_flat_figure():
    import scalebook as sb
    import scalebook.plots.roofline as m

    assert inspect.ismodule(m) and sb.plots.roofline is m and inspect.ismodule(sb.plots.validation)


def test_cli_roofline(capsys):
    assert cli.main(["roofline", "--chip", "v5e", "--shape", "1024,8192,28672"]) == 0
    out = capsys.readouterr().out
    assert "compute-bound" in out and "critical B     240 tokens" in out


def test_cli_chips(capsys):
    assert cli.main(["chips", "--vendor", "google"]) == 0
    assert "TPU v5e" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["roofline", "--chip", "v5x", "--shape", "1,2,3"], "closest: TPU v5e"),
    (["roofline", "--chip", "v5e", "--shape", "1,2"], "three positive integers"),
    (["chips", "--vendor", "intel"], "argument --vendor: 'intel' is not one of ['amd', 'google', 'nvidia']"),
])
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_collective(capsys):
    assert cli.main(["collective", "all_gather", "--chip", "v5e", "--mesh", "8x4", "--axes", "Y",
                     "--bytes", str(2 * 2048 * 8192)]) == 0
    out = capsys.readouterr().out
    assert "559 µs" in out and "no wraparound" in out


def test_cli_shard(capsys):
    assert cli.main(["shard", "A[I, J_X] @ B[J_X, K] -> C[I_X, K]", "--chip", "v5p", "--mesh", "4x4x4",
                     "--sizes", "I=1024,J=4096,K=8192"]) == 0
    out = capsys.readouterr().out
    assert "case 3" in out and "reduce_scatter" in out


@pytest.mark.parametrize("argv, message", [
    (["collective", "all_gather", "--chip", "h100", "--mesh", "8", "--bytes", "1GB"], "not a TPU"),
    (["collective", "all_gather", "--chip", "v5e", "--mesh", "4by4", "--bytes", "1GB"], "--mesh='4by4'"),
    (["shard", "A[I, J] @ B[J, K] -> C[I, K]", "--chip", "v5p", "--mesh", "4x4x4", "--sizes", "I=a"], "--sizes="),
    (["collective", "all_gather", "--bytes", "1GB"], "--cluster"),
    (["collective", "all_to_all", "--cluster", "h100-superpd", "--bytes", "1GB"], "h100-superpod"),
    (["plan", "--model", "llama3-70b", "--chips", "64", "--batch", "4Mi"], "--cluster"),
])
def test_cli_planner_errors(capsys, argv, message):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_plan(capsys):
    assert cli.main(["plan", "--model", "llama3-70b", "--chip", "v5p", "--chips", "8960", "--batch", "4Mi"]) == 0
    out = capsys.readouterr().out
    assert "fsdp_tp with FSDP 2048 × TP 4 on 8192 of 8960" in out and "comms-bound" in out


def test_cli_collective_and_plan_on_a_gpu_cluster(capsys):
    # ch. 12: an AllReduce over one scalable unit binds at the leaf; SHARP halves it. LLaMA 3-70B on 4096 H100s
    # with a 4M-token batch pipelines with 8-way TP.
    argv = ["collective", "all_reduce", "--cluster", "h100-superpod", "--gpus", "256", "--bytes", "1GiB"]
    assert cli.main(argv) == 0 and "bound by        leaf" in capsys.readouterr().out
    assert cli.main([*argv, "--sharp"]) == 0 and "SHARP" in capsys.readouterr().out
    assert cli.main(["plan", "--model", "llama3-70b", "--cluster", "h100-superpod", "--chips", "4096",
                     "--batch", "4Mi"]) == 0
    assert "TP 8 × PP" in capsys.readouterr().out


def test_cli_serve(capsys):
    # ch. 8: LLaMA 3-70B in int8 fits a v5e 4x2; with the rest of HBM full of 8k caches a step takes ~19 ms.
    assert cli.main(["serve", "--model", "llama3-70b", "--chip", "v5e", "--context", "8192", "--dtype", "int8"]) == 0
    out = capsys.readouterr().out
    assert "4x2 (8 chips" in out and "19.3 ms" in out and "$ per M tokens" in out


def test_cli_grade_reports_a_bad_folder(capsys, tmp_path):
    assert cli.main(["grade", str(tmp_path / "missing"), "--out", str(tmp_path / "g.csv")]) == 2
    assert "not a folder" in capsys.readouterr().err
