"""Chapter 8's tools: FLOPs per dollar, the smallest-slice and QPS tables, the latency-budget search and the topology
explorer, against the book's numbers (How To Scale Your Model, ch. 8) and our recomputations of them."""

import pytest

import scalebook as sb
from scalebook.serving import Engine
from scalebook.widgets.llama_serving import (
    cost_table,
    engine_comparison,
    flops_per_dollar,
    latency_budget,
    qps_table,
    serving_summary,
    topology_table,
)


def by(table, key: str) -> dict:
    return {row[key]: row for row in table}


def test_flops_per_dollar_reproduces_the_price_table():
    rows = by(flops_per_dollar(), "chip")
    published = {"NVIDIA H100": 3.3e17, "TPU v5p": 3.9e17, "TPU v5e": 5.8e17}  # ch. 8, Feb 2025 prices
    for chip, value in published.items():
        assert rows[chip]["FLOPs per $"] == pytest.approx(value, rel=0.02)
    assert "2025-02" in flops_per_dollar().title


def test_flops_per_dollar_names_unpriced_chips():
    with pytest.raises(KeyError, match="no price"):
        flops_per_dollar(["b200"])


def test_topology_table_gives_the_books_slices_with_exact_cache_sizes():
    rows = by(topology_table(), "dtype")
    assert [rows[d]["slice"] for d in ("bf16", "int8", "int4")] == ["4x4", "4x2", "2x2"]
    assert [rows[d]["KV per token"] for d in ("bf16", "int8", "int4")] == [327680, 163840, 81920]  # book: 324/162/81 kB
    assert rows["int4"]["chips for weights"] == pytest.approx(2.2, rel=0.01)  # the book prints 2.81; 35/16 = 2.19
    assert rows["bf16"]["chips for weights"] == pytest.approx(8.75, rel=0.01)
    assert all(rows[d]["caches @ 8192"] == 42 for d in rows)  # book: 43 from its rounded 140 GB and 324 kB


def test_qps_table_reproduces_the_books_queries_per_chip():
    small = by(qps_table(), "dtype")
    for dtype, published in (("bf16", 0.27), ("int8", 0.55), ("int4", 1.11)):  # ch. 8: 43 / (0.019 · 512 · N)
        assert small[dtype]["QPS/chip (book)"] == pytest.approx(published, rel=0.05)
    doubled = by(qps_table(grow=1), "dtype")
    assert [doubled[d]["slice"] for d in ("bf16", "int8", "int4")] == ["4x8", "4x4", "4x2"]
    for dtype, published in (("bf16", 0.44), ("int8", 0.90), ("int4", 1.80)):  # ch. 8: 140 / (0.019 · 512 · N)
        assert doubled[dtype]["QPS/chip (book)"] == pytest.approx(published, rel=0.05)
    # At batch 138 int4 weights with bf16 arithmetic make the MLP compute-bound (B_crit = 60): the full step is longer.
    assert doubled["int4"]["QPS/chip (roofline)"] < 0.75 * doubled["int4"]["QPS/chip (book)"]


def test_qps_table_stops_at_the_largest_slice():
    with pytest.raises(ValueError, match="largest slice"):
        qps_table(grow=9)


def test_serving_summary_opens_on_the_int8_4x2_answer():
    rows = {row["quantity"]: row["value"] for row in serving_summary()}
    assert rows["largest batch that fits"] == "42"
    assert rows["decode step"].startswith("19.3 ms")  # ch. 8: ~19 ms when HBM is full
    assert rows["queries/s per chip"] == "0.53"  # ch. 8: 0.55 with batch 43 and 19 ms


@pytest.mark.parametrize("kwargs, message", [({"topology": "4"}, "2-D slice shape"), ({"batch": 500}, "does not fit"),
                                             ({"dtype": "bf16", "topology": "2x2"}, "no room"),
                                             ({"decode_tokens": 0}, "decode_tokens")])
def test_serving_summary_rejects_bad_inputs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        serving_summary(**kwargs)


def test_latency_budget_for_llama_405b_on_v5e():
    rows = by(latency_budget("llama3-405b", max_step=15e-3, ici=False), "slice")
    assert rows["4x8"]["batch within budget"] == 0  # reading 406 GB of weights over 32 chips takes 15.5 ms
    # Without ICI every slice that reaches the compute-bound regime makes the same tokens per chip.
    assert rows["8x8"]["tokens/s/chip"] == pytest.approx(rows["16x16"]["tokens/s/chip"], rel=0.01)
    with_ici = by(latency_budget("llama3-405b", max_step=15e-3), "slice")
    best = max(with_ici.values(), key=lambda r: r["tokens/s/chip"] or 0)
    assert best["slice"] == "8x8" and best["bound"] == "ici"


def test_latency_budget_rejects_a_model_that_fits_nowhere():
    with pytest.raises(ValueError, match="fits none"):
        latency_budget("llama3-405b", weights="bf16", shapes=[(2, 2)])


def test_cost_table_prices_tokens_per_chip():
    table = cost_table({"ch. 8, int8 on a 4x2": 235.0})
    assert table[0]["$ per M tokens"] == pytest.approx(1.2 / 3600 / 235 * 1e6)  # $1.2 per v5e chip-hour
    assert "$1.2 per chip-hour" in table.title
    with pytest.raises(KeyError, match="no price"):
        cost_table({"x": 1.0}, "b200")


def test_engine_comparison_separates_interleaved_and_disaggregated_engines():
    engines = {"interleaved": Engine("llama3-70b", "v5e", 32, 1, 1),
               "disaggregated": Engine("llama3-70b", "v5e", 32, 1, 1, mode="disaggregated", prefill_chips=24,
                                       decode_chips=8)}
    rows = {(r["engine"], r["requests/s"]): r for r in engine_comparison((1, 6), engines, n_requests=400)}
    # Interleaved prefills pause every stream: the slowest gaps between tokens grow with the load...
    assert rows[("interleaved", 6)]["TPOT p99"] > 5 * rows[("interleaved", 1)]["TPOT p99"]
    # ...while disaggregated decode keeps its step time and queues at the prefill pool instead.
    assert rows[("disaggregated", 6)]["TPOT p99"] < 1.5 * rows[("disaggregated", 1)]["TPOT p99"]
    assert rows[("disaggregated", 6)]["TTFT p99"] > rows[("interleaved", 6)]["TTFT p99"]


def test_topology_explorer_opens_on_the_chapter_answer_and_redraws_fast():
    ex = sb.widgets.topology_explorer()
    assert "19.3 ms" in ex.output.value and "0.53" in ex.output.value
    assert ex.update(dtype="bf16", topology="4x8", ici=True) < 0.1
    assert "ICI collectives" in ex.output.value and "not counted" not in ex.output.value
    assert ex.update(context=131072) < 0.1


# --- ch. 7's engine diagrams and the continuous-batching stepper (issue 21) ---------------------------------------

from explorers import assert_answers_fast  # noqa: E402

from scalebook.plots.serving import batching_snapshots, engine_segments  # noqa: E402
from scalebook.widgets.serving import batching_stepper  # noqa: E402


def test_continuous_batching_refills_a_freed_slot_before_the_next_step():
    snaps = batching_snapshots(2, [1, 3, 2], steps=4)
    # request 0 makes its single token in step 0; before step 1 its slot already holds request 2
    assert snaps[1][1][0] == (2, 0) and snaps[1][3] == [0]
    assert snaps[3][3] == [0, 2, 1]  # all three finished after three steps


def test_interleaved_prefills_stall_running_decodes_and_disaggregation_does_not():
    prompts, outputs = [100, 100], [10, 10]
    inter = engine_segments("interleaved", prompts, outputs, 2, t_prefill=1.0, t_step=0.1)
    first = next(b for b in inter if b[3] == "decode" and b[4] == 0)
    assert first[2] - first[1] == pytest.approx(10 * 0.1 + 1.0)  # stretched by request 1's prefill
    dis = engine_segments("disaggregated", prompts, outputs, 2, t_prefill=1.0, t_step=0.1)
    assert all(b[2] - b[1] == pytest.approx(1.0) for b in dis if b[3] == "decode")


def test_batching_stepper_answers_fast():
    assert_answers_fast(batching_stepper, {"step": 5})
