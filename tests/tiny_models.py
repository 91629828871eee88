"""Tiny random models of every supported family, declared once for the tests that build, train, predict or export them:
``TINY_CONFIGS`` (the transformers config fields per ``model_type``), ``tiny_config`` (a copy, with overrides) and
``save_tiny_checkpoint`` (a checkpoint folder: random weights drawn after ``torch.manual_seed(0)`` and MiniLM's
tokenizer, whose 30,522-token vocabulary they share)."""

from __future__ import annotations

from pathlib import Path

V = 30522  # MiniLM's vocabulary: the tiny checkpoints use its tokenizer
SMALL = dict(
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=24,
    vocab_size=V,
    max_position_embeddings=130,  # RoBERTa's positions start after the padding index: 128 tokens and 2 more
)
ROBERTA = dict(SMALL, type_vocab_size=1, pad_token_id=0)
TINY_CONFIGS: dict[str, dict] = {
    "bert": SMALL,
    "roberta": ROBERTA,
    "xlm-roberta": ROBERTA,
    "distilbert": dict(dim=16, n_layers=2, n_heads=2, hidden_dim=24, vocab_size=V, max_position_embeddings=128),
    "electra": dict(SMALL, embedding_size=8),
    "deberta-v2": dict(
        SMALL,
        relative_attention=True,
        position_buckets=16,
        pos_att_type="p2c|c2p",
        share_att_key=True,
        position_biased_input=False,
        type_vocab_size=0,
        norm_rel_ebd="layer_norm",
    ),
    "modernbert": dict(
        SMALL,
        num_hidden_layers=3,
        intermediate_size=12,
        local_attention=8,
        pad_token_id=0,
        bos_token_id=101,
        eos_token_id=102,
        cls_token_id=101,
        sep_token_id=102,
        classifier_pooling="mean",
    ),
    "mpnet": SMALL,
    "albert": dict(SMALL, embedding_size=8),  # one layer's weights run by both layers
}


def tiny_config(family: str, **overrides) -> dict:
    """``family``'s tiny config fields (a fresh dict), ``overrides`` applied; no ``model_type`` key."""
    return dict(TINY_CONFIGS[family], **overrides)


def tiny_config_json(family: str, **overrides) -> dict:
    """What a tiny ``family`` model's config.json holds: its ``model_type`` and its fields, ``overrides`` applied."""
    return {"model_type": family, **tiny_config(family, **overrides)}


def save_tiny_checkpoint(path: Path, family: str, fields: dict | None = None) -> Path:
    """A checkpoint folder at ``path``: a random ``family`` model of ``fields`` (default: its tiny config), drawn after
    ``torch.manual_seed(0)``, and MiniLM's tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from pals_core.data.load import minilm_path

    torch.manual_seed(0)
    fields = tiny_config(family) if fields is None else fields
    AutoModel.from_config(AutoConfig.for_model(family, **fields)).save_pretrained(path)
    AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True).save_pretrained(path)
    return Path(path)


INTENT_ROWS = [("invoice please pay", "billing"), ("money back refund", "refund")] * 4
"""Eight rows of a two-intent task (``rows.csv`` of ``train_tiny_run``)."""


def train_tiny_run(root: Path, tasks: list[str]) -> Path:
    """A frozen-trunk PALs run of the tiny BERT, trained for one step under ``root/run``: each of ``tasks`` reads
    ``root/rows.csv`` (``INTENT_ROWS``: columns text, intent) from ``root/tasks.yaml``."""
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.config import TrainConfig
    from pals_core.train.trainer import train

    (root / "rows.csv").write_text("text,intent\n" + "".join(f"{t},{y}\n" for t, y in INTENT_ROWS))
    (root / "tasks.yaml").write_text(
        "tasks:\n" + "".join(f"  {t}: {{train: rows.csv, dev: rows.csv, text: text, label: intent}}\n" for t in tasks)
    )
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(root / "tasks.yaml"),
        adapter=AdapterConfig(method="pals", d_s=8, heads=2, freeze_trunk=True),
        model="tiny",
        out=str(root / "run"),
        steps=1,
        batch_size=4,
        max_len=16,
        seed=0,
    )
    train(cfg, progress=False)
    return root / "run"
