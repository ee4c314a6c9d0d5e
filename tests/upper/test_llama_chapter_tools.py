"""Chapter 6's tools: a config read into the book's letters, the run-cost and batch-bound tables, and the explorers
(open on the chapter's worked answers and redraw in well under 0.1 s)."""

import pytest
from explorers import assert_answers_fast

import scalebook as sb
from scalebook.widgets.llama import batch_bounds, config_table, model_comparison, run_table

# LLaMA 3-70B's config.json, abridged (How To Scale Your Model, ch. 6 table; no head_dim key, as in the public file).
LLAMA3_70B = {"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
              "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}


def values(table) -> dict:
    return {row["quantity"]: row["value"] for row in table}


# --- tables ------------------------------------------------------------------------------------------------------


def test_config_table_reads_the_books_letters_and_derives_the_head_width():
    rows = {row["letter"]: row for row in config_table(LLAMA3_70B, name="LLaMA 3-70B")}
    assert [rows[x]["value"] for x in "LDFNKHV"] == [80, 8192, 28672, 64, 8, 128, 128256]
    assert rows["H"]["config.json key"] == "hidden_size / num_attention_heads"
    assert rows["K"]["config.json key"] == "num_key_value_heads"


def test_config_table_says_when_a_key_is_missing():
    mha = {k: v for k, v in LLAMA3_70B.items() if k != "num_key_value_heads"}
    rows = {row["letter"]: row for row in config_table(mha)}
    assert rows["K"]["value"] == 64 and "no num_key_value_heads" in rows["K"]["config.json key"]


def test_model_comparison_puts_the_three_llamas_side_by_side():
    table = model_comparison()
    assert table.columns == ["quantity", "LLaMA 3-8B", "LLaMA 3-70B", "LLaMA 3.1-405B"]
    rows = {row["quantity"]: row for row in table}
    assert rows["parameters"]["LLaMA 3-70B"] == "70.55 G"  # ch. 6: 70.4e9 from rounded terms
    assert rows["MLP share of parameters"]["LLaMA 3-70B"] == "79.9%"  # ch. 6: "56B of 70B"


def test_model_comparison_needs_a_model():
    with pytest.raises(ValueError, match="at least one"):
        model_comparison([])


def test_run_table_is_the_chapters_run_of_llama3_70b():
    """The table computes what chapter 6 computes and asserts against the book (6.3e24 FLOPs, 435 years on one
    v5p, 44 days on a pod at 40 % MFU: those numbers are typed once, in the chapter, checked by nbval)."""
    run = values(run_table("llama3-70b", 15e12, 8960, "v5p", 0.4))
    flops, peak = sb.get_model("llama3-70b").flops_per_token() * 15e12, sb.get_chip("v5p").bf16_flops
    assert run["training FLOPs for 1.5e+13 tokens"] == pytest.approx(flops, rel=1e-12)
    assert run["one TPU v5p at peak"] == pytest.approx(flops / peak, rel=1e-12)
    assert run["8960 × TPU v5p at 40% MFU"] == pytest.approx(flops / (8960 * peak * 0.4), rel=1e-12)
    assert run["chip-hours"] == pytest.approx(8960 * run["8960 × TPU v5p at 40% MFU"] / 3600)


def test_run_table_prices_chip_hours_only_when_given_a_price():
    assert not any("cost" in q for q in values(run_table()))
    priced = values(run_table(usd_per_chip_hour=2.0))
    assert priced["cost at $2 per chip-hour"] == pytest.approx(2 * priced["chip-hours"])


def test_run_table_labels_a_single_token():
    assert "training FLOPs for 1 token" in values(run_table(tokens=1, n_chips=1, mfu=1.0))


@pytest.mark.parametrize("kwargs, message", [({"tokens": 0}, "tokens"), ({"n_chips": 0}, "n_chips"),
                                             ({"mfu": 1.5}, "mfu"), ({"chip": "v9"}, "v9")])
def test_run_table_rejects_bad_inputs(kwargs, message):
    with pytest.raises((ValueError, KeyError), match=message):
        run_table(**kwargs)


def test_batch_bounds_give_the_books_verdicts_on_a_v5p_pod():
    rows = {row["check"]: row for row in batch_bounds("llama3-70b", "v5p", 8960, 4 * 2**20, 4096)}
    assert rows["pure data parallelism, no sequence sharding"]["passes"] is False  # 1024 sequences
    assert rows["FSDP over 3 axes"]["passes"] is False and rows["FSDP over 3 axes"]["has"] == "468"  # < 850
    assert rows["FSDP + TP at the best split"]["passes"] is True  # 468 > 113
    assert rows["best FSDP degree X_opt"]["has"] == "1619"  # ch. 6: 1618
    assert not any("DCN" in check for check in rows)


def test_batch_bounds_add_the_dcn_check_across_pods():
    rows = {row["check"]: row for row in batch_bounds("llama3-70b", "v5p", 4 * 8960, 4 * 2**20, 4096)}
    dcn = rows["data parallelism over DCN (4 slices)"]
    assert dcn["passes"] is True and dcn["needs"] == "> 73,440 tokens/slice"  # ch. 5: C / W_dcn


def test_batch_bounds_reject_a_batch_shorter_than_one_sequence():
    with pytest.raises(ValueError, match="at least one sequence"):
        batch_bounds(batch_tokens=1000, seq_len=4096)


# --- explorers -----------------------------------------------------------------------------------------------------


def test_run_explorer_opens_on_the_44_day_run():
    ex = sb.widgets.run_explorer()
    assert "44 days" in ex.output.value


def test_bounds_explorer_opens_on_468_tokens_per_chip():
    ex = sb.widgets.bounds_explorer()
    assert "468" in ex.output.value and "1619" in ex.output.value


def test_plan_explorer_opens_on_the_planners_choice_for_one_pod():
    ex = sb.widgets.plan_explorer()
    # ch. 6: the book's 2048 x 4; the 4M batch splits evenly over 2048 replicas, so 768 of the 8960 chips sit out.
    assert (ex.result.strategy, ex.result.fsdp, ex.result.tp, ex.result.chips_used) == ("fsdp_tp", 2048, 4, 8192)


def test_plan_explorer_offers_only_batches_the_planner_can_split():
    ex = sb.widgets.plan_explorer()
    options = ex.controls["batch_tokens"].options
    assert options[0] == 4 * 2**20 and all(b & (b - 1) == 0 for b in options)
    ex.update(batch_tokens=2**21)
    assert (ex.result.fsdp, ex.result.tp) == (1024, 8)  # ch. 6: at 2M tokens only 8-way TP stays compute-bound


def test_explorers_reject_a_chip_without_dcn():
    with pytest.raises(KeyError, match="training chips"):
        sb.widgets.plan_explorer(chip="v4p")


@pytest.mark.parametrize("make, change", [
    (sb.widgets.run_explorer, {"model": "llama3-405b"}),
    (sb.widgets.run_explorer, {"mfu": 0.5}),
    (sb.widgets.run_explorer, {"usd_per_chip_hour": 2.0}),
    (sb.widgets.bounds_explorer, {"n_chips": 35840}),
    (sb.widgets.bounds_explorer, {"seq_len": 8192}),
    (sb.widgets.plan_explorer, {"n_chips": 71680}),
    (sb.widgets.plan_explorer, {"model": "llama3-405b"}),
    (sb.widgets.plan_explorer, {"sequence_sharding": False}),
    (sb.widgets.plan_explorer, {"chip": "v5e", "n_chips": 4096}),
    (sb.widgets.plan_explorer, {"batch_tokens": 2**21}),
])
def test_explorers_redraw_fast(make, change):
    assert_answers_fast(make, change, limit=0.1)


def test_plan_explorer_shows_why_nothing_fits():
    ex = sb.widgets.plan_explorer()
    ex.update(chip="v5e", n_chips=256)
    assert isinstance(ex.result, sb.widgets.Unfit) and "does not fit:" in ex.output.value
    assert "no layout" in ex.output.value
