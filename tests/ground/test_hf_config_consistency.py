"""`models.from_hf_config` refuses a config.json that cannot be a model (issue #33): each error names the config
key, its value and what is allowed; a consistent config still reads."""

import pytest

from scalebook.models import from_hf_config

BASE = {"num_hidden_layers": 2, "hidden_size": 512, "intermediate_size": 2048, "num_attention_heads": 8,
        "num_key_value_heads": 8, "vocab_size": 1000}
NAN = float("nan")

INCONSISTENT = [
    ({"num_attention_heads": 7}, "config['num_attention_heads']=7 query heads do not divide config['hidden_size']"),
    ({"num_key_value_heads": 3}, "config['num_key_value_heads']=3 key/value heads must divide"),
    ({"num_experts_per_tok": 4, "num_local_experts": 2}, "config['num_experts_per_tok']=4 experts per token cannot "
                                                         "exceed config['num_local_experts']=2"),
    ({"num_experts_per_tok": 2}, "cannot exceed no experts (a dense model)"),
    ({"num_hidden_layers": 0}, "config['num_hidden_layers']=0"),
    ({"num_hidden_layers": -2}, "config['num_hidden_layers']=-2"),
    ({"hidden_size": 512.5}, "config['hidden_size']=512.5 must be a whole number"),
    ({"hidden_size": NAN}, "config['hidden_size']=nan"),
    ({"hidden_size": "512"}, "config['hidden_size']='512' must be an integer"),
    ({"vocab_size": float("inf")}, "config['vocab_size']=inf"),
    ({"intermediate_size": 0}, "config['intermediate_size']=0"),
    ({"num_key_value_heads": True}, "config['num_key_value_heads']=True"),
    ({"head_dim": -64}, "config['head_dim']=-64"),
    ({"n_shared_experts": -1}, "config['n_shared_experts']=-1"),
    ({"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 2.5}, "config['qk_nope_head_dim']=2.5"),
    ({"tie_word_embeddings": "yes"}, "config['tie_word_embeddings']='yes' must be True or False"),
    ({"first_k_dense_replace": 5, "num_local_experts": 4, "num_experts_per_tok": 2}, "dense_layers=5"),
]


@pytest.mark.parametrize("change, message", INCONSISTENT, ids=[str(c) for c, _ in INCONSISTENT])
def test_an_inconsistent_config_is_refused_by_key(change, message):
    with pytest.raises(ValueError) as err:
        from_hf_config({**BASE, **change})
    assert message in str(err.value)


def test_an_explicit_head_width_need_not_split_the_width():
    """Gemma-style configs give head_dim with N·H != D: the heads need not divide the width then."""
    cfg = from_hf_config({**BASE, "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 96})
    assert (cfg.N, cfg.K, cfg.H, cfg.D) == (6, 2, 96, 512)


def test_a_consistent_moe_config_reads():
    cfg = from_hf_config({**BASE, "num_local_experts": 8, "num_experts_per_tok": 2, "num_key_value_heads": 2})
    assert (cfg.E, cfg.k, cfg.K, cfg.H) == (8, 2, 2, 64)
