"""transformers' own ``pipeline("token-classification")`` on a tagging task's hf export (``pals-export --format hf``),
called with the arguments the run gives (``export.cards.pipeline_call``: the model card's), reproduces ``pals-predict`` word for word — on a
WordPiece and on a byte-level BPE model, sentences longer than the max length included (read in the run's windows
through the pipeline's ``stride``); the ONNX export keeps the words' tokenizer apart where it differs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_models import save_tiny_checkpoint, tiny_config
from tiny_tokenizers import bpe_tokenizer

from pals_core.kinds import get_kind
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

PEOPLE, PLACES = ["John", "Mary", "Ahmed", "Ines"], ["Paris", "Lagos", "Ouagadougou", "Kyoto"]
OTHER = ["visited", "welcomed", "met", "today", "yesterday", "near", "said", "the", "and", "in", "on", "E1042"]
MAX_LEN = 16


def _rows(n: int, seed: int) -> list[dict]:
    """Sentences of 3 to 24 words — a third longer than ``MAX_LEN`` tokens —, each word's tag its own: a person
    B-PER (with "Smith" after it: I-PER), a place B-LOC, anything else O."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        words, tags = [], []
        for _ in range(int(rng.integers(3, 25 if i % 3 == 0 else 8))):
            pick = rng.random()
            if pick < 0.2:
                words.append(str(rng.choice(PEOPLE)))
                tags.append("B-PER")
                if rng.random() < 0.3:
                    words.append("Smith")
                    tags.append("I-PER")
            elif pick < 0.35:
                words.append(str(rng.choice(PLACES)))
                tags.append("B-LOC")
            else:
                words.append(str(rng.choice(OTHER)))
                tags.append("O")
        out.append({"words": words, "tags": tags})
    return out


def _tasks(folder: Path) -> tuple[Path, list[list[str]]]:
    folder.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", 96, 0), ("dev", 18, 1)):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(n, seed)))
    (folder / "tasks.yaml").write_text(
        "tasks:\n  ner: {train: train.jsonl, dev: dev.jsonl, text: words, label: tags, kind: tokens}\n"
    )
    dev = [json.loads(line)["words"] for line in (folder / "dev.jsonl").read_text().splitlines()]
    return folder / "tasks.yaml", dev


def _bpe_checkpoint(path: Path) -> Path:
    """A tiny random RoBERTa whose tokenizer is a byte-level BPE trained in the test (its words' start marker off,
    as RoBERTa's checkpoints save it)."""
    import torch
    from transformers import AutoConfig, AutoModel

    tok = bpe_tokenizer()
    torch.manual_seed(0)
    config = AutoConfig.for_model("roberta", **tiny_config("roberta", vocab_size=len(tok), pad_token_id=1))
    AutoModel.from_config(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _per_word(words: list[str], entities: list[dict]) -> list[tuple[str, bool]]:
    """The pipeline's entities read back word by word: a word's type is that of the entity holding its first character
    ("O" outside every entity), and whether that entity opens at the word (a B-)."""
    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])  # the words joined by spaces, as the pipeline joins them
    out = []
    for s in starts:
        held = [e for e in entities if e["start"] <= s < e["end"]]
        out.append((held[0]["entity_group"], bool(held[0]["start"] == s)) if held else ("O", False))
    return out


def _tags_per_word(tags: list[str]) -> list[tuple[str, bool]]:
    """``pals-predict``'s tags as the pipeline groups them: a word's type (B-/I- dropped) and whether it opens a group
    (a B-, or a type other than the word before it's)."""
    out, previous = [], "O"
    for tag in tags:
        kind = tag.split("-", 1)[-1] if tag != "O" else "O"
        out.append((kind, kind != "O" and (tag.startswith("B-") or kind != previous)))
        previous = kind
    return out


@pytest.mark.slow  # two tiny runs trained and exported, the pipeline on their dev rows: ~40 s
@pytest.mark.parametrize("tokenizer", ["wordpiece", "bpe"])
def test_the_token_classification_pipeline_reproduces_pals_predict_on_every_word(tmp_path, tokenizer):
    from transformers import pipeline

    from pals_core.export.cards import pipeline_call
    from pals_core.export.peft import export_hf
    from pals_core.model import MultiTaskModel
    from pals_core.run_info import predict_texts

    f, dev = _tasks(tmp_path / "data")
    checkpoint = (
        save_tiny_checkpoint(tmp_path / "base", "bert")
        if tokenizer == "wordpiece"
        else _bpe_checkpoint(tmp_path / "base")
    )
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(f),
        adapter=AdapterConfig(method="lora", d_s=8, freeze_trunk=False),
        model=str(checkpoint),
        out=str(tmp_path / "run"),
        steps=200,
        batch_size=16,
        max_len=MAX_LEN,
        eval_every=200,
        lr=3e-3,
        warmup=0.0,
        seed=0,
        num_threads=1,
    )
    summary = train(cfg, progress=False)
    assert summary["windows"]["ner"]["dev"]["rows"] >= 3  # sentences read in windows, in training and on dev
    model = MultiTaskModel.from_run(tmp_path / "run")
    ours = predict_texts(model, dev, tasks=["ner"])["ner"]
    assert {"B-PER", "B-LOC"} <= {t for row in ours.label for t in row}, "an all-O model would test nothing"

    call = pipeline_call(model, "ner")  # the model card's call
    name, kwargs = call.task, call.arguments
    assert (name, kwargs) == ("token-classification", {"aggregation_strategy": "first", "stride": MAX_LEN // 3})
    export_hf(model, tmp_path / "hf")
    tagger = pipeline(name, model=str(tmp_path / "hf" / "ner"), **kwargs)
    long = 0
    for words, tags, probs in zip(dev, ours.label, ours.prob):
        (got,) = tagger([words], is_split_into_words=True)  # one sentence: the list of its words
        assert _per_word(words, got) == _tags_per_word(tags), (words, tags, got)
        if len(tagger.tokenizer(words, is_split_into_words=True)["input_ids"]) > MAX_LEN:
            long += 1  # read in windows: where two windows agree on a word, the pipeline keeps the higher score's
            continue
        starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]]).tolist()
        for e in got:  # one window: an entity scores the mean of its words' probabilities, as pals-predict's
            first, last = starts.index(e["start"]), max(k for k, s in enumerate(starts) if s < e["end"])
            assert abs(float(e["score"]) - float(np.mean(probs[first : last + 1]))) < 1e-4
    assert long >= 3
    assert get_kind("tokens").pipeline_arguments(MAX_LEN) == {"aggregation_strategy": "first"}  # a run that cuts
    if tokenizer == "bpe":  # the ONNX export: the sentence tasks' tokenizer beside the graph, the words' apart
        from transformers import AutoTokenizer

        from pals_core.export.onnx import WORDS_DIR, export_onnx, read_export

        export_onnx(model, tmp_path / "onnx")
        assert read_export(tmp_path / "onnx")["words_tokenizer"] == WORDS_DIR
        words = AutoTokenizer.from_pretrained(tmp_path / "onnx" / WORDS_DIR)
        plain = AutoTokenizer.from_pretrained(tmp_path / "onnx")
        row = ["near", "said", "Li"]
        assert words.convert_ids_to_tokens(words(row, is_split_into_words=True)["input_ids"])[1:-1] == [
            "Ġnear",
            "Ġsaid",
            "ĠLi",
        ]
        assert (
            words(row, is_split_into_words=True)["input_ids"]
            == tagger.tokenizer(row, is_split_into_words=True)["input_ids"]
        )
        assert "Ġsaid" not in plain.convert_ids_to_tokens(plain(row, is_split_into_words=True)["input_ids"])
