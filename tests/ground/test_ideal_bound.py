"""The ideal is one answer and a bound (issue #38): one layout priced by the book's step_time and by predict's ideal
agree term by term or name the term where they part, and no ideal prediction in the suite is slower than what was
measured, family by family."""

import collections

import pytest

import scalebook as sb
from scalebook import validation as v
from scalebook.training import Layout
from scalebook.training.ideals import TERMS, WHY, compare_ideals

POD = sb.GpuCluster("h100", gpus=1024)  # an H100 SuperPod: 128 DGX nodes, 32 to a leaf switch group
TOKENS, SEQ = 4 * 2**20, 8192  # Llama 3's 4M-token batch of 8,192-token sequences: 4 per FSDP replica


def _llama70(**kw):
    return compare_ideals("llama3-70b", POD, 1024, TOKENS, SEQ, layout=Layout(fsdp=128, tp=8), **kw)


def test_one_layout_has_one_ideal_compute_and_each_difference_is_a_named_term():
    """Llama 3 70B, TP 8 in a node x FSDP 128, on a SuperPod. The two ideal models count the same FLOPs at peak;
    where they part is a term with its reason, and each step is its own terms recombined."""
    c = _llama70()
    book, ideal = c.book, c.ideal
    assert c.strategy == "fsdp_tp" and c.layout.microbatches == 4
    assert book["compute"] == pytest.approx(ideal["compute"], rel=1e-12)
    assert book["attention"] == pytest.approx(ideal["attention"], rel=1e-12)
    # each model's step from its own terms: compute against the slowest communication
    assert c.book_step == pytest.approx(max(book["compute"] + book["attention"] + book["bubble"],
                                            max(book["dp"], book["tp"]) + book["pp sends"]), rel=1e-12)
    assert c.ideal_step == pytest.approx(max(ideal["compute"] + ideal["attention"] + ideal["recompute"],
                                             ideal["tp"], ideal["dp"], ideal["cp"], ideal["ep"]), rel=1e-12)
    # both compute-bound, so the steps differ by exactly the recompute the layout runs (the book has none)
    assert book["recompute"] == 0 < ideal["recompute"]
    assert c.ideal_step - c.book_step == pytest.approx(ideal["recompute"], rel=1e-9)
    assert c.book_step == pytest.approx(1.86, rel=0.01) and c.ideal_step == pytest.approx(1.90, rel=0.01)
    # TP: the book's 6·B·D bytes a block (12 a layer) against Megatron's 4 AllGathers + 4 ReduceScatters a layer,
    # 7/8 of the array each, over the same 450 GB/s of NVLink: 12 / 7
    assert book["tp"] / ideal["tp"] == pytest.approx(12 / 7, rel=1e-9)
    # DP: FSDP's gather forward and backward and one reduce-scatter a step in both; at the book's bf16 gradients
    # they differ by the leaf ring's 31/32 (predict's levels), and fp32 gradients add (2+2+4)/(2+2+2)
    bf16 = _llama70(grad_bytes=2).ideal["dp"]
    assert bf16 == pytest.approx(book["dp"] * 31 / 32, rel=1e-9)
    assert ideal["dp"] == pytest.approx(bf16 * 8 / 6, rel=1e-9)
    assert set(c.table.column("term")) == {"compute", "attention", "recompute", "tp", "dp", "step"}
    assert all(WHY[t] for t in TERMS)


def test_the_ideal_moves_the_weights_once_a_step_not_once_a_microbatch():
    """The bound re-gathered FSDP's weights for every microbatch: 5.47 s of collectives on this layout, three
    times its compute, where the book counts them once (1.06 s). Every byte once, it is compute-bound."""
    c = _llama70()
    assert c.ideal["dp"] < c.ideal["compute"] and c.ideal_step == pytest.approx(
        c.ideal["compute"] + c.ideal["attention"] + c.ideal["recompute"])
    more = compare_ideals("llama3-70b", POD, 1024, TOKENS, SEQ, layout=Layout(fsdp=128, tp=8, microbatches=16))
    assert more.ideal["dp"] == pytest.approx(c.ideal["dp"], rel=1e-12)


def test_a_pipeline_names_the_bubble_and_the_sends_the_bound_leaves_out():
    """TP 8 x PP 4 x ZeRO-1 DP 32: the book idles (P-1)/M of the compute and adds the sends; the bound has neither,
    so it is the faster of the two."""
    c = compare_ideals("llama3-70b", POD, 1024, TOKENS, 4096, layout=Layout(dp=32, tp=8, pp=4))
    M = c.layout.microbatches
    assert (c.strategy, M) == ("dp_tp", 32)
    assert c.book["bubble"] == pytest.approx((c.book["compute"] + c.book["attention"]) * 3 / M, rel=1e-12)
    assert c.book["pp sends"] > 0 == c.ideal["bubble"] == c.ideal["pp sends"]
    assert c.ideal_step < c.book_step


@pytest.mark.parametrize("layout, message", [
    (Layout(fsdp=64, cp=2, tp=8), "no cp, ep"),
    (Layout(dp=2, fsdp=64, tp=8), "across FSDP groups"),
    (Layout(fsdp=32, tp=8, pp=4), "pipelines only ZeRO-1"),
])
def test_layouts_the_book_cannot_price_are_refused_by_name(layout, message):
    with pytest.raises(ValueError, match=message):
        compare_ideals("llama3-70b", POD, 1024, TOKENS, SEQ, layout=layout)


def _not_bounds_by_family() -> dict[str, list[str]]:
    """{family: ['row (measured speed / ideal speed)', ...]} for every ideal prediction slower than measured."""
    out = collections.defaultdict(list)
    for r in v.results("ideal"):
        if r["bound"] is None:
            continue
        out[r["family"]]  # every family with a speed row is listed, bound or not
        if not r["bound"]:
            ratio = 1 / (1 + r["speed error"])
            out[r["family"]].append(f"{r['run']} (measured {ratio:.3f}x the ideal's speed)")
    return dict(out)


FAMILIES = sorted(_not_bounds_by_family())


def test_every_family_of_work_has_speed_rows():
    assert {"training GPU", "training TPU", "prefill GPU", "decode GPU"} <= set(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_ideal_prediction_of_a_family_is_a_bound(family):
    """100 % of peak, every byte once, everything overlapped: no run, whoever added it, went faster."""
    slower = _not_bounds_by_family()[family]
    assert slower == [], f"{family}: the ideal is slower than measured on {slower}"
