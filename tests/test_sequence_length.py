"""The longest sequence a model takes (``Family.max_tokens``) is the one torch runs, and every entry point that
prices or trains a sequence length refuses a longer one in one line: pals-budget ``--seq-len`` (exit 2), the
explorer's sequence length (``st.error``), pals-train ``--max-len`` (``resolve``)."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoConfig, AutoModel

from pals_core.cli.budget import main as pals_budget
from pals_core.families.registry import get_family
from pals_core.families.shapes import from_hf_config

torch.set_num_threads(1)

_BERT_LIKE = dict(hidden_size=12, num_hidden_layers=1, num_attention_heads=2, intermediate_size=17, vocab_size=23)
# (model_type, fields, the longest sequence torch runs): absolute position tables end where the table ends
HARD_LIMITS = [
    ("bert", dict(_BERT_LIKE, max_position_embeddings=16), 16),
    ("roberta", dict(_BERT_LIKE, max_position_embeddings=20, type_vocab_size=1, pad_token_id=1), 18),
    ("roberta", dict(_BERT_LIKE, max_position_embeddings=20, type_vocab_size=1, pad_token_id=0), 19),
    ("xlm-roberta", dict(_BERT_LIKE, max_position_embeddings=20, type_vocab_size=1, pad_token_id=4), 15),
    ("distilbert", dict(dim=12, n_layers=1, n_heads=2, hidden_dim=17, vocab_size=23, max_position_embeddings=16), 16),
    ("electra", dict(_BERT_LIKE, embedding_size=8, max_position_embeddings=16), 16),
    (
        "deberta-v2",
        dict(
            _BERT_LIKE,
            max_position_embeddings=16,
            position_biased_input=True,
            relative_attention=True,
            position_buckets=4,
            pos_att_type="p2c|c2p",
        ),
        16,
    ),
    # MPNet numbers positions from its hard-coded padding index 1 + 1, whatever pad_token_id says
    ("mpnet", dict(_BERT_LIKE, max_position_embeddings=20), 18),
    ("mpnet", dict(_BERT_LIKE, max_position_embeddings=20, pad_token_id=0), 18),
    ("albert", dict(_BERT_LIKE, embedding_size=8, max_position_embeddings=16), 16),
]
IDS = [f"{t}-pad{f.get('pad_token_id', 'default')}" for t, f, _ in HARD_LIMITS]


def _ids(model_type: str, fields: dict, n: int) -> torch.Tensor:
    """One sequence of n tokens none of which is the padding id (RoBERTa numbers only the non-pad tokens)."""
    pad = fields.get(
        "pad_token_id", get_family(from_hf_config({"model_type": model_type, **fields}).family).pad_token_id
    )
    return torch.full((1, n), 5 if pad != 5 else 6)


@pytest.mark.parametrize("model_type,fields,longest", HARD_LIMITS, ids=IDS)
def test_the_longest_sequence_is_the_one_torch_runs(model_type, fields, longest):
    shape = from_hf_config(AutoConfig.for_model(model_type, **fields).to_dict())
    assert get_family(shape.family).max_tokens(shape) == longest
    torch.manual_seed(0)
    model = AutoModel.from_config(AutoConfig.for_model(model_type, **fields)).eval()
    with torch.no_grad():
        model(input_ids=_ids(model_type, fields, longest))
        with pytest.raises((IndexError, RuntimeError)):
            model(input_ids=_ids(model_type, fields, longest + 1))


def _budget(tmp_path, config: dict, n: int) -> int:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return pals_budget(["--model", str(path), "--tasks", "2", "--budget", "1.5", "--seq-len", str(n), "--json"])


@pytest.mark.parametrize("model_type,fields,longest", HARD_LIMITS, ids=IDS)
def test_pals_budget_prices_the_longest_and_refuses_one_more(model_type, fields, longest, tmp_path, capsys):
    config = AutoConfig.for_model(model_type, **fields).to_dict()
    assert _budget(tmp_path, config, longest) == 0
    assert json.loads(capsys.readouterr().out)["seq_len"] == longest
    assert _budget(tmp_path, config, longest + 1) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"sequence length {longest + 1} exceeds" in err and f"{longest} positions" in err


@pytest.mark.parametrize(
    "model,longest",
    [
        ("bert-base-uncased", 512),
        ("roberta-base", 512),
        ("xlm-roberta-large", 512),
        ("deberta-v3-base", 512),
        ("ModernBERT-base", 8192),
        ("mpnet-base", 512),
    ],
)
def test_presets_take_their_declared_length(model, longest, capsys):
    """Relative (DeBERTa-v3) and rotary (ModernBERT) positions have no table to run off, but the model was built
    for its ``max_position_embeddings``: a longer sequence is refused, not priced."""
    base = ["--model", model, "--tasks", "2", "--budget", "1.13", "--method", "pals", "--json"]
    assert pals_budget(base + ["--seq-len", str(longest)]) == 0
    capsys.readouterr()
    assert pals_budget(base + ["--seq-len", str(longest + 1)]) == 2
    assert "exceeds" in capsys.readouterr().err


def test_pals_train_refuses_a_max_len_the_model_cannot_take(tmp_path):
    """A run whose --max-len is longer than its model's positions is refused before anything is built."""
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.config import TrainConfig
    from pals_core.train.params import resolve

    folder = tmp_path / "short"
    folder.mkdir()
    AutoConfig.for_model("roberta", **HARD_LIMITS[1][1]).save_pretrained(folder)
    cfg = TrainConfig(
        tasks=["rte"], adapter=AdapterConfig(method="shared"), model=str(folder), max_len=19, out=str(tmp_path / "run")
    )
    with pytest.raises(ValueError, match="max_len: sequence length 19 exceeds .*18 positions"):
        resolve(cfg)


@pytest.mark.parametrize("model_type,fields,longest", HARD_LIMITS, ids=IDS)
def test_the_python_api_prices_the_longest_by_default_and_refuses_one_more(model_type, fields, longest):
    """``design()``, ``rows()`` and ``sweep()`` follow the same rule as the entry points: no n → 128, or the model's
    longest when shorter; an n longer than the model takes is a ValueError (``rows``: a design not priced, with
    the reason), never priced."""
    from pals_core.budget.costs import design
    from pals_core.budget.sweep import sweep
    from pals_core.budget.table import rows
    from pals_core.budget.tasks import parse_tasks
    from pals_core.pricing.config import AdapterConfig

    shape = from_hf_config(AutoConfig.for_model(model_type, **fields).to_dict())
    ds = design(shape, parse_tasks(2), AdapterConfig(method="shared"))
    assert ds.seq_len == longest and ds.seq_len < 128
    flops = lambda **n: rows(shape, parse_tasks(2), methods=["shared"], **n)[0].flops_base_per_seq
    assert flops() == flops(seq_len=longest) > flops(seq_len=longest - 1)
    assert next(sweep(shape, sizes=[2], task_counts=[1], methods=["houlsby"])).flops_per_seq > 0
    with pytest.raises(ValueError, match=f"sequence length {longest + 1} exceeds"):
        design(shape, parse_tasks(2), AdapterConfig(method="shared"), seq_len=longest + 1)
    refused = rows(shape, parse_tasks(2), methods=["shared"], seq_len=longest + 1)  # listed as not priced, with why
    assert list(refused) == [] and [label for label, _ in refused.refused] == ["shared"]
    assert f"sequence length {longest + 1} exceeds" in refused.refused[0][1]
