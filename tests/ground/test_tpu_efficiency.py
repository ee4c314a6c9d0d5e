"""TPU efficiency factors read off TPU measurements (issue #38): each measured factor gives back the figure its source
printed, no chip's measured figure is reused on another chip, what nobody measured is listed by
`Efficiency.assumed`, and the TPU training rows of the validation suite land within 15 %."""

import statistics

import pytest

import scalebook as sb
from scalebook import validation
from scalebook.hardware.chips import Efficiency

TPUS = ("v2", "v4", "v5e", "v5p", "v6e", "tpu7x")


def calibrated(name: str) -> Efficiency:
    return sb.get_chip(name).efficiency("calibrated")


# (chip, factor, the chip's field it scales, the figure the source printed in SI units, that figure as printed)
MEASURED = [
    ("v5e", "matmul", "bf16_flops", 0.923 * 197e12, "92.3%"),      # JAX Pallas guide: XLA 8192^3 at 92.3 % of 197
    ("v6e", "matmul", "bf16_flops", 727.70e12, "727.70"),         # profiler device time, XLA 8192^3 bf16
    ("tpu7x", "matmul", "bf16_flops", 2 * 956.38e12, "956.38"),   # per TensorCore (a JAX device), two per chip
    ("tpu7x", "hbm", "hbm_bandwidth", 6420.96e9, "6420.96"),      # HBM copy, bytes read plus written, per chip
    ("v5p", "link", "ici_bandwidth", 86.3e9, "86.3 GB/s"),        # ppermute, large payloads
    ("v6e", "link", "ici_bandwidth", 86.8e9, "86.8 GB/s"),
]


@pytest.mark.parametrize("chip, factor, field, printed, quoted", MEASURED)
def test_each_measured_factor_gives_back_its_sources_figure(chip, factor, field, printed, quoted):
    eff = calibrated(chip)
    assert getattr(eff, factor) * getattr(sb.get_chip(chip), field) == pytest.approx(printed, rel=0.005)
    assert quoted in eff.sources[factor] and factor not in eff.assumed


def test_the_books_own_v2_profile():
    """Ch. 9's profile on 8 TPU v2 cores (4 chips): the up-projection bf16[32,1024,8192] x bf16[8192,32768] took 96 ms
    (the book's roofline: 95.6 ms), its ReduceScatter of a 134 MB shard over one hop at 1.2e11 B/s took 1.13 ms."""
    v2, eff = sb.get_chip("v2"), calibrated("v2")
    assert 2 * 32 * 1024 * 8192 * 32768 / (4 * v2.bf16_flops * eff.matmul) == pytest.approx(96e-3, rel=0.005)
    assert 2 * 8 * 1024 * 8192 / (2 * v2.ici_bandwidth * eff.link) == pytest.approx(1.13e-3, rel=0.005)
    assert eff.sources["matmul"] == eff.sources["link"] and "ch. 9" in eff.sources["matmul"]


@pytest.mark.parametrize("chip, low, high", [("v5p", 4.5e-6, 5.5e-6), ("v6e", 5.6e-6, 5.9e-6)])
def test_hop_latency_is_a_small_ppermute_as_measured(chip, low, high):
    """Marin's barriered ppermute sweep: 1-16 KiB payloads took 4.5-5.5 us on v5p-8 and 5.6-5.9 us on v6e-8."""
    eff = calibrated(chip)
    assert low <= eff.latency_node <= high and "ppermute" in eff.sources["latency_node"]


def test_no_tpu_reuses_another_chips_measured_figure():
    """A factor two TPUs share must be marked assumed on at least one of them (v5p's matmul is not v5e's 0.923)."""
    factors = ("matmul", "hbm", "link", "latency_node")
    for i, a in enumerate(TPUS):
        for b in TPUS[i + 1:]:
            ea, eb = calibrated(a), calibrated(b)
            for f in factors:
                if getattr(ea, f) == getattr(eb, f) and getattr(ea, f) not in (0.0, 1.0):
                    assert f in ea.assumed or f in eb.assumed, (a, b, f)
    assert calibrated("v5p").matmul not in {calibrated(c).matmul for c in ("v5e", "v6e", "tpu7x")}


def test_what_nobody_measured_is_listed_as_assumed():
    """Every TPU factor has a source; the ones without a measurement are exactly those `Efficiency.assumed` lists."""
    expected = {
        "v2": {"hbm", "latency_node", "interference", "layer_overhead", "network", "framework"},
        "v4": {"hbm", "link", "latency_node", "interference", "layer_overhead", "network", "framework"},
        "v5e": {"hbm", "interference", "layer_overhead", "network", "framework"},
        "v5p": {"matmul", "hbm", "interference", "layer_overhead", "network", "framework"},
        "v6e": {"hbm", "interference", "layer_overhead", "network", "framework"},
        "tpu7x": {"link", "latency_node", "interference", "layer_overhead", "network", "framework"},
    }
    for chip, names in expected.items():
        eff = calibrated(chip)
        assert set(eff.assumed) == names, chip
        assert {"matmul", "hbm", "link", "latency_node", "network", "framework"} <= set(eff.sources), chip


def test_dense_tpu_training_rows_within_15_percent():
    """The must-show of issue #38: the dense TPU training rows' median |speed error| at most 15 %, on the held-out
    rows (MaxText's v5e table) and on every dense TPU training row (v5p's table became development rows when its
    assumed matmul factor was set, PaLM's v4 row was one already). MoE rows have their own threshold."""
    dense = {run.id for run in validation.runs() if not run.model.is_moe}
    rows = [r for r in validation.results() if r["family"] == "training TPU" and r["run"] in dense]
    held_out = [abs(r["speed error"]) for r in rows if r["status"] == "held-out"]
    assert len(held_out) >= 20 and statistics.median(held_out) <= 0.15
    assert statistics.median(abs(r["speed error"]) for r in rows) <= 0.15
