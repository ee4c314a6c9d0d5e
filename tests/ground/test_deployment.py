"""Chapter 8's planning tables (`scalebook.inference.deployment`): FLOPs per dollar, the smallest slice per dtype,
queries per second per chip, one configuration in full, the best slice under a latency budget and dollars per million
tokens, against the book's numbers (How To Scale Your Model, ch. 8, as `book-facts.md` records them) and our
recomputations.
"""

import pytest

import scalebook as sb
from scalebook import deployment, inference
from scalebook.inference import cost
from scalebook.inference.deployment import (
    cost_table,
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
    sb.expect(rows["NVIDIA H100"]["FLOPs per $"], sb.published("08_serving_llama.h100_flops_per_dollar"))
    sb.expect(rows["TPU v5p"]["FLOPs per $"], sb.published("08_serving_llama.v5p_flops_per_dollar"))
    sb.expect(rows["TPU v5e"]["FLOPs per $"], sb.published("08_serving_llama.v5e_flops_per_dollar"))
    assert "2025-02" in flops_per_dollar().title


def test_flops_per_dollar_names_unpriced_chips():
    with pytest.raises(KeyError, match="no price"):
        flops_per_dollar(["b200"])


def test_topology_table_gives_the_books_slices_with_exact_cache_sizes():
    rows = by(topology_table(), "dtype")
    assert [rows[d]["slice"] for d in ("bf16", "int8", "int4")] == ["4x4", "4x2", "2x2"]
    assert [rows[d]["KV per token"] for d in ("bf16", "int8", "int4")] == [327680, 163840, 81920]  # book: 324/162/81 kB
    assert rows["int4"]["chips for weights"] == pytest.approx(2.2, rel=0.01)  # the book prints 2.81; 35/16 = 2.19
    sb.expect(rows["bf16"]["chips for weights"], sb.published("08_serving_llama.bf16_chips_for_weights"))
    assert all(rows[d]["caches @ 8192"] == 42 for d in rows)  # book: 43 from its rounded 140 GB and 324 kB


def test_qps_table_reproduces_the_books_queries_per_chip():
    small = by(qps_table(), "dtype")  # ch. 8: 43 / (0.019 · 512 · N)
    sb.expect(small["bf16"]["QPS/chip (book)"], sb.published("08_serving_llama.qps_bf16_smallest_slice"))
    sb.expect(small["int8"]["QPS/chip (book)"], sb.published("08_serving_llama.qps_int8_smallest_slice"))
    sb.expect(small["int4"]["QPS/chip (book)"], sb.published("08_serving_llama.qps_int4_smallest_slice"))
    doubled = by(qps_table(grow=1), "dtype")  # ch. 8: 140 / (0.019 · 512 · N)
    assert [doubled[d]["slice"] for d in ("bf16", "int8", "int4")] == ["4x8", "4x4", "4x2"]
    sb.expect(doubled["bf16"]["QPS/chip (book)"], sb.published("08_serving_llama.qps_bf16_doubled_slice"))
    sb.expect(doubled["int8"]["QPS/chip (book)"], sb.published("08_serving_llama.qps_int8_doubled_slice"))
    sb.expect(doubled["int4"]["QPS/chip (book)"], sb.published("08_serving_llama.qps_int4_doubled_slice"))
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


def test_the_books_235_tokens_per_chip_cost_about_a_dollar_42_per_million():
    # ch. 8 (8.A3): int8 on a 4x2 makes about 235 tokens/s per chip; v5e costs $1.2 per chip-hour (Feb 2025).
    assert cost_table({"8.A3": 235.0})[0]["$ per M tokens"] == pytest.approx(1.42, rel=0.01)


def test_every_table_prices_chips_through_one_look_up(monkeypatch):
    real = inference.prices()
    doubled = {**real, "chips": {k: {**v, "usd_per_hour": 2 * v["usd_per_hour"]} for k, v in real["chips"].items()}}
    before = (flops_per_dollar()[2]["FLOPs per $"], cost_table({"a": 100.0})[0]["$ per M tokens"],
              qps_table()[1]["$ per M tokens"], latency_budget(ici=False)[-1]["$ per M tokens"])
    monkeypatch.setattr(cost, "prices", lambda: doubled)
    assert inference.chip_price("v5e") == 2.4
    after = (flops_per_dollar()[2]["FLOPs per $"], cost_table({"a": 100.0})[0]["$ per M tokens"],
             qps_table()[1]["$ per M tokens"], latency_budget(ici=False)[-1]["$ per M tokens"])
    assert after == pytest.approx((before[0] / 2, *(2 * b for b in before[1:])), rel=1e-12)


def test_slices_are_named_as_the_book_writes_them():
    assert [deployment.slice_name(s) for s in deployment.SLICES[:4]] == ["1x1", "2x1", "2x2", "4x2"]


@pytest.mark.parametrize("call, name", [
    (lambda: cost_table({}), "rates"),
    (lambda: cost_table({"a": -1.0}), "rates"),
    (lambda: cost_table([235.0]), "rates"),
    (lambda: qps_table(decode_tokens=0), "decode_tokens"),
    (lambda: qps_table(grow=-1), "grow"),
    (lambda: latency_budget(max_step=0.0), "max_step"),
])
def test_bad_inputs_raise_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
