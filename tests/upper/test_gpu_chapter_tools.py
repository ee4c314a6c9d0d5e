"""Chapter 12's figures and explorers: labelled plots, fast widgets, and the NCCL bandwidth fit."""

import pytest
from explorers import assert_answers_fast

import scalebook as sb
from scalebook import GpuCluster, plots
from scalebook.hardware.gpu import get_cluster
from scalebook.widgets import fat_tree_explorer, gpu_anatomy_explorer, gpu_layout_explorer


@pytest.mark.parametrize("draw", [
    lambda: plots.gpus.level_bandwidth([GpuCluster("h100", gpus=1024), get_cluster("gb200-superpod")]),
    lambda: plots.gpus.sharded_all_gather(GpuCluster("h100", gpus=256)),
    lambda: plots.gpus.tpu_vs_gpu(sb.TpuMesh("v5p", 8, 8, 16), GpuCluster("h100", gpus=1024)),
    lambda: plots.gpus.ragged_all_to_all(4),
    lambda: plots.gpus.achieved_bandwidth(370e9, 2e-4, [(58e6, 150e9)]),
])
def test_gpu_figures_are_labelled(draw):
    ax = draw().axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()


def test_fat_tree_draws_every_unit_and_aggregates_its_links():
    # A 1024-GPU SuperPod: 128 nodes in 4 SUs of 32, 4 SUs x 8 leaf switches, 16 spine switches; each node sends
    # 400 GB/s up, so each SU's leaf group sends 32 x 400 GB/s = 12.8 TB/s to the spine (a schematic with a title).
    ax = plots.gpus.fat_tree(GpuCluster("h100", gpus=1024)).axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("32 nodes\n8 GPUs each") == 4 and texts.count("leaf\n8 switches") == 4
    assert texts.count("spine\n16 switches") == 1 and "1024" in ax.get_title()
    assert texts.count("32 × 400 GB/s") == 4 and texts.count("12.8 TB/s each") == 1
    racks = plots.gpus.fat_tree(get_cluster("gb200-superpod")).axes[0]
    texts = [t.get_text() for t in racks.texts]
    assert texts.count("node\n72 GPUs") == 8 and any("not listed" in t for t in texts)
    assert texts.count("3.6 TB/s each") == 1


def test_figures_reject_bad_input():
    with pytest.raises(ValueError, match="clusters"):
        plots.gpus.level_bandwidth([])
    with pytest.raises(ValueError, match="kind"):
        plots.gpus.tpu_vs_gpu(sb.TpuMesh("v5e", 4, 4), GpuCluster("h100", gpus=8), kind="broadcast")
    with pytest.raises(ValueError, match="inner"):
        plots.gpus.sharded_all_gather(GpuCluster("h100", gpus=8), inner=(8, 16))


def test_sharded_all_gather_plot_flattens_then_falls():
    # 12.PQ3's figure: up to Y = 8 the leaf term is flat, beyond it falls as 1/Y.
    ax = plots.gpus.sharded_all_gather(GpuCluster("h100", gpus=256), inner=(1, 8, 16, 32)).axes[0]
    total = ax.get_lines()[-1].get_ydata()
    assert total[0] == pytest.approx(total[1]) and total[2] == pytest.approx(total[1] / 2 * 15 / 16 * 32 / 31)


def test_nccl_fit_reproduces_both_quoted_points():
    # ch. 12: ~370 GB/s plateau on 8xH100, reached near 10 GB; a 58 MB message sees ~150 GB/s.
    overhead = sb.collectives.fixed_overhead(58e6, 150e9, 370e9)
    assert sb.collectives.achieved_bandwidth(58e6, 370e9, overhead) == pytest.approx(150e9)
    sb.expect(sb.collectives.achieved_bandwidth(10e9, 370e9, overhead), sb.published("12_gpus.nccl_plateau"))
    with pytest.raises(ValueError, match="achieved"):
        sb.collectives.fixed_overhead(1e6, 500e9, 370e9)


def test_fat_tree_explorer_opens_on_the_su_gather_and_answers_fast():
    ex = fat_tree_explorer()
    chart, table = ex.result
    leaf = next(r for r in table.rows if r["level"] == "leaf")
    assert leaf["time"] == pytest.approx(2 * 8192 * 32768 * 31 / (32 * 400e9)) and leaf["binds"]
    assert_answers_fast(fat_tree_explorer, {"cluster": "b200-superpod", "gpus": 1024, "inner": 16})


def test_layout_explorer_opens_on_quiz_5_and_answers_fast():
    ex = gpu_layout_explorer()
    row = ex.result[1].rows[0]
    assert row["bound"] == "compute"
    sb.expect(row["critical tokens/GPU"], sb.published("12_gpus.q5_2_pipelined_threshold"))
    assert_answers_fast(gpu_layout_explorer, {"pp": 1, "gpus": 1024})


def test_fit_bandwidth_recovers_a_plateau_and_a_fixed_cost():
    sizes = [1e5, 1e6, 1e7, 1e8, 1e9]
    times = [2.3e-4 + v / 380e9 for v in sizes]
    peak, overhead = sb.collectives.fit_bandwidth(sizes, times)
    assert peak == pytest.approx(380e9, rel=1e-6) and overhead == pytest.approx(2.3e-4, rel=1e-6)
    with pytest.raises(ValueError, match="grow"):
        sb.collectives.fit_bandwidth([1e6, 1e7], [2e-3, 1e-3])
    with pytest.raises(ValueError, match="two different sizes"):
        sb.collectives.fit_bandwidth([1e6], [1e-3])


def test_anatomy_explorer_opens_on_1024_flops_per_cycle_and_answers_fast():
    rows = {r["quantity"]: r["value"] for r in gpu_anatomy_explorer().result.rows}
    assert rows["bf16 FLOPs per tensor core per cycle"] == "1,024" and rows["CUDA cores (fp32 lanes)"] == "16,896"
    assert_answers_fast(gpu_anatomy_explorer, {"chip": "b200", "clock_ghz": 1.86, "dtype": "fp8"})
