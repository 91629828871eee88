"""Encoder families (docs/design.md "Base models, exact"): every preset is the published checkpoint, an unsupported
``model_type`` is refused (never priced as BERT), and the calculator's N_base is ``AutoModel.from_config``'s for each
family."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from transformers import AutoConfig, AutoModel

from pals_core.budget.costs import base_params, embedding_params
from pals_core.families.registry import FAMILIES, MODEL_TYPES
from pals_core.families.shapes import PRESET_CONFIGS, PRESETS, from_hf_config, load_model

# Published parameter counts (the model cards / ``sum(p.numel())`` of the hub checkpoints' base models)
PUBLISHED = {
    "bert-base-uncased": 109_482_240,
    "bert-large-uncased": 335_141_888,
    "all-MiniLM-L6-v2": 22_713_216,  # the embedded checkpoint (once minilm-l6-h384, now an alias)
    "roberta-base": 124_645_632,
    "roberta-large": 355_359_744,
    "xlm-roberta-base": 278_043_648,
    "xlm-roberta-large": 559_890_432,
    "distilbert-base-uncased": 66_362_880,
    "electra-small-discriminator": 13_483_008,
    "electra-base-discriminator": 108_891_648,
    "electra-large-discriminator": 334_092_288,
    "deberta-v3-small": 141_304_320,
    "deberta-v3-base": 183_831_552,
    "deberta-v3-large": 434_012_160,
    "ModernBERT-base": 149_014_272,
    "ModernBERT-large": 394_781_696,
    "mpnet-base": 109_486_464,
}


def _auto_numel(config: dict) -> int:
    fields = dict(config)
    cfg = AutoConfig.for_model(fields.pop("model_type", "bert"), **fields)
    with torch.device("meta"):
        model = AutoModel.from_config(cfg)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_preset_is_the_published_checkpoint(name):
    assert base_params(PRESETS[name]) == PUBLISHED[name]
    assert _auto_numel(PRESET_CONFIGS[name]) == PUBLISHED[name]


def test_every_family_has_presets_and_xlmr_embeddings_are_69_percent():
    assert {m.family for m in PRESETS.values()} == set(FAMILIES)
    xlmr = PRESETS["xlm-roberta-base"]
    assert round(embedding_params(xlmr) / base_params(xlmr), 2) == 0.69


@pytest.mark.parametrize(
    "config",
    [
        dict(
            model_type="deberta-v2",
            hidden_size=24,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            vocab_size=51,
            relative_attention=True,
            position_buckets=8,
            pos_att_type="p2c|c2p",
            share_att_key=False,
            position_biased_input=True,
            type_vocab_size=2,
            embedding_size=14,
            norm_rel_ebd="layer_norm",
            conv_kernel_size=3,
            conv_groups=2,
        ),
        dict(
            model_type="deberta-v2",
            hidden_size=24,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            vocab_size=51,
            relative_attention=True,
            max_relative_positions=6,
            pos_att_type=["c2p"],
            share_att_key=False,
        ),
        dict(
            model_type="modernbert",
            hidden_size=24,
            num_hidden_layers=4,
            num_attention_heads=4,
            intermediate_size=19,
            vocab_size=53,
            mlp_bias=True,
            attention_bias=False,
            norm_bias=True,
            pad_token_id=0,
            eos_token_id=1,
            bos_token_id=2,
            cls_token_id=2,
            sep_token_id=1,
        ),
        dict(
            model_type="camembert",
            hidden_size=20,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=31,
            vocab_size=41,
            max_position_embeddings=22,
            type_vocab_size=1,
        ),
        dict(
            model_type="mpnet",
            hidden_size=20,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=31,
            vocab_size=41,
            max_position_embeddings=22,
            relative_attention_num_buckets=45,
        ),
    ],
    ids=["deberta-conv-unshared", "deberta-c2p", "modernbert-biases", "camembert", "mpnet-R45"],
)
def test_config_flags_are_counted_as_automodel_builds_them(config):
    for paper in (False, True):
        assert base_params(from_hf_config(config), "paper" if paper else "exact") >= 0
    assert base_params(from_hf_config(config)) == _auto_numel(config)


def test_unsupported_model_type_is_refused_never_priced_as_bert(tmp_path):
    with pytest.raises(ValueError, match="not supported") as e:
        from_hf_config(
            {
                "model_type": "gpt2",
                "hidden_size": 768,
                "num_hidden_layers": 12,
                "num_attention_heads": 12,
                "intermediate_size": 3072,
                "vocab_size": 50257,
            }
        )
    assert all(t in str(e.value) for t in MODEL_TYPES)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "t5", "d_model": 512}))
    out = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", "--model", str(path), "--budget", "1.1"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "t5" in lines[0] and "modernbert" in lines[0] and "deberta-v2" in lines[0]


def test_distilbert_config_is_read_by_its_own_field_names():
    m = load_model("distilbert-base-uncased")
    assert (m.hidden, m.layers, m.heads, m.intermediate, m.token_types) == (768, 6, 12, 3072, 0)


@pytest.mark.slow  # ~1 s (a real run, an export or a study): make test, not make test-fast
def test_a_ratio_of_the_non_embedding_parameters():
    """``--budget-of non-embedding``: N_total − N_emb ≤ B·(N_base − N_emb), one setting on every CLI."""
    from pals_core.budget.costs import design
    from pals_core.budget.solver import Budget, at_size, budget_from_flags, solve
    from pals_core.budget.tasks import parse_tasks
    from pals_core.pricing.config import AdapterConfig

    m = PRESETS["xlm-roberta-base"]
    ds = design(m, parse_tasks(8), AdapterConfig(method="pals", location="all"), check_size=False)
    budget = Budget(ratio=1.13, of="non-embedding")
    cost = solve(ds, budget)
    n_emb = embedding_params(m)
    limit = 0.13 * (base_params(m) - n_emb)
    assert cost.params_task_specific <= limit < at_size(ds, cost.d_s + 12).params_task_specific
    assert solve(ds, Budget(ratio=1.13)).d_s > cost.d_s
    assert Budget.from_dict(budget.as_dict()) == budget and budget.to_argv()[-2:] == ["--budget-of", "non-embedding"]
    assert budget_from_flags("1.13", of="non-embedding") == budget
    with pytest.raises(ValueError, match="applies to a ratio budget"):
        budget_from_flags(extra="15M", of="non-embedding")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pals_core.cli.budget",
            "--model",
            "xlm-roberta-base",
            "--budget",
            "1.13",
            "--budget-of",
            "non-embedding",
            "--method",
            "pals",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    row = json.loads(out.stdout)
    assert row["budget"]["of"] == "non-embedding" and row["rows"][0]["d_s"] == cost.d_s
    for cli in ("pals_core.cli.train", "studies.cli"):
        helptext = subprocess.run(
            [sys.executable, "-m", cli, *([] if cli.startswith("pals") else ["run"]), "--help"],
            capture_output=True,
            text=True,
        ).stdout
        assert "--budget-of" in helptext, cli


@pytest.mark.slow  # starts pals-train (torch) in a process of its own
def test_the_api_refuses_an_unsupported_model_type(tmp_path):
    from pals_core.model import MultiTaskModel
    from pals_core.pricing.config import AdapterConfig

    with pytest.raises(ValueError, match="model_type 'gpt2' is not supported"):
        MultiTaskModel.from_base_config(
            {"model_type": "gpt2", "n_embd": 64}, AdapterConfig(method="shared"), {"rte": 2}
        )
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": 64}))
    with pytest.raises(ValueError, match="model_type 'gpt2' is not supported"):
        MultiTaskModel.from_pretrained(tmp_path, AdapterConfig(method="shared"), {"rte": 2})
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pals_core.cli.train",
            "--model",
            str(tmp_path),
            "--tasks",
            "rte",
            "--method",
            "shared",
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "not supported" in out.stderr
