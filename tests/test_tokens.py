"""A tagging task (kind: tokens): words aligned to sub-tokens, one label per token, entity scores with seqeval, its
head priced and trained beside a sentence task. Tiny models, rows written here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from pals_core.data.glue_rows import RawSplit
from pals_core.data.load import encode, load_tokenizer, minilm_path
from pals_core.kinds import get_kind

TAGS = ("O", "B-PER", "I-PER", "B-LOC")
KIND = get_kind("tokens")


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(minilm_path())


def _encode(tok, words, tags, max_len, tmp_path, names=TAGS):
    raw = RawSplit(words, None, tags)
    return encode(raw, KIND.label_array(tags, len(names)), tok, max_len, cache_dir=tmp_path, per_word=True, names=names)


def test_a_words_first_sub_token_carries_its_tag_and_cut_words_keep_their_gold(tok, tmp_path):
    words = [["Anna", "visited", "Ouagadougou", "unbelievably"], ["hi"] * 12]
    tags = [[1, 0, 3, 0], [0] * 12]
    enc, hit = _encode(tok, words, tags, 10, tmp_path)
    assert not hit and len(enc) == 2
    ids = tok(words[0], is_split_into_words=True)
    first = [j for j, w in enumerate(ids.word_ids()) if w is not None and w != ids.word_ids()[j - 1]]
    row0 = enc.labels[enc.offsets[0] : enc.offsets[1]]
    assert [int(row0[j]) for j in first] == tags[0]  # each word's tag on its first sub-token
    assert (np.delete(row0, first) == -100).all()  # the rest (later sub-tokens, [CLS], [SEP]) ignored
    assert len(ids["input_ids"]) > 6  # "Ouagadougou" and "unbelievably" split: more sub-tokens than words
    assert enc.lengths[1] == 10 and (enc.labels[enc.offsets[1] : enc.offsets[2]] >= 0).sum() == 8  # 4 words cut
    assert enc.gold.values[1].tolist() == [0] * 12  # every word's gold, the cut ones included
    again, hit = _encode(tok, words, tags, 10, tmp_path)
    assert hit and (again.labels == enc.labels).all() and (again.starts == enc.starts).all()
    # the same characters as one text per row tokenise alike but are cached apart (other words, other ids)
    sentences = RawSplit([" ".join(w) for w in words], None, [0, 0])
    _, hit = encode(sentences, np.array([0, 0]), tok, 10, cache_dir=tmp_path)
    assert not hit


def test_batches_pad_per_token_labels_with_minus_100_and_select_keeps_rows(tok, tmp_path):
    enc, _ = _encode(tok, [["a", "b"], ["Anna", "visited", "Ouagadougou"]], [[0, 0], [1, 0, 3]], 32, tmp_path)
    b = enc.select([1, 0]).batch([0, 1])
    assert b["labels"].shape == b["input_ids"].shape
    assert b["labels"][1].tolist()[: int(b["attention_mask"][1].sum())] == [-100, 0, 0, -100]
    assert (b["labels"][1][b["attention_mask"][1] == 0] == -100).all()
    assert b["words"].tolist() == [[1, 0, 3], [0, 0, -1]]


def test_the_loss_is_cross_entropy_on_first_sub_tokens_only():
    import torch
    import torch.nn.functional as F

    logits = torch.randn(2, 5, 4)
    labels = torch.tensor([[-100, 1, -100, 3, -100], [-100, 0, -100, -100, -100]])
    kept = labels != -100
    expected = F.cross_entropy(logits[kept], labels[kept])
    assert torch.isclose(KIND.module().loss(logits, labels), expected)


def _gold(rows, names=TAGS):
    from pals_core.data.encoded import WordTags

    width = max(len(r) for r in rows)
    return WordTags(np.array([list(r) + [-1] * (width - len(r)) for r in rows]), names)


def test_scores_are_seqeval_entity_scores_and_token_accuracy():
    from seqeval.metrics import f1_score, precision_score, recall_score

    gold = [[1, 2, 0, 3], [0, 3, 0]]
    pred = [[1, 2, 0, 0], [0, 3, 3]]
    got = KIND.scores(None, _gold(pred).values, _gold(gold), KIND.metrics, len(TAGS))
    y_true = [[TAGS[k] for k in r] for r in gold]
    y_pred = [[TAGS[k] for k in r] for r in pred]
    assert got["entity_f1"] == f1_score(y_true, y_pred) == pytest.approx(4 / 6)  # 2 of 3 found, 2 of 3 right
    assert got["entity_precision"] == precision_score(y_true, y_pred)
    assert got["entity_recall"] == recall_score(y_true, y_pred)
    assert got["token_accuracy"] == pytest.approx(5 / 7)
    assert KIND.default_metric == "entity_f1"


def test_the_baseline_tags_every_word_o_or_the_most_frequent_tag_without_o():
    from pals_core.data.metrics import majority_scores
    from pals_core.tasks.record import TaskRecord

    record = TaskRecord("ner", kind="tokens", train="x")
    train, dev = _gold([[1, 2, 0], [3]]), _gold([[0, 1], [3, 0, 0]])
    scores = majority_scores(record, train, {"": dev}, len(TAGS))
    assert scores["entity_f1"] == 0.0 and scores["token_accuracy"] == pytest.approx(3 / 5)
    plain = ("LOC", "PER")  # no "O": the most frequent training tag on every word
    outputs, _ = KIND.baseline(_gold([[1, 1, 0]], plain), {"": _gold([[0, 1]], plain)}, 2)
    assert outputs[""].tolist() == [[1, 1]]


def test_a_tagging_head_is_priced_per_token():
    from pals_core.base_model import tiny_config_dict
    from pals_core.families.registry import get_family
    from pals_core.families.shapes import from_hf_config

    m = from_hf_config(tiny_config_dict(), name="tiny")
    family = get_family(m.family)
    assert KIND.head_params(family, m, 5, False) == m.hidden * 5 + 5  # dropout + Linear(d, C), no pooler
    assert KIND.head_flops(family, m, 5, 40) == 40 * 2 * m.hidden * 5
    assert KIND.logits_floats(8, 40, 5) == 8 * 40 * 5
    assert KIND.output_axes == ("batch", "sequence", "C")


def write_tagging_tasks(folder: Path) -> Path:
    """A tagging task (JSON Lines, a list of words and a list of tags a row) and an intent task."""
    folder.mkdir(parents=True, exist_ok=True)
    people, places = ["John", "Mary", "Ahmed"], ["Paris", "Lagos", "Northamptonshire"]
    rows = [
        {
            "words": [people[i % 3], "flew", "to", places[(i // 3) % 3], "on", f"day{i}"],
            "tags": ["B-PER", "O", "O", "B-LOC", "O", "O"],
        }
        for i in range(60)
    ]
    (folder / "ner.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    intents = [{"t": f"{'refund' if i % 2 else 'invoice'} please {i}", "y": "r" if i % 2 else "b"} for i in range(60)]
    (folder / "intent.jsonl").write_text("".join(json.dumps(r) + "\n" for r in intents))
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  ner: {train: ner.jsonl, text: words, label: tags, kind: tokens}\n"
        "  intent: {train: intent.jsonl, text: t, label: y}\n"
    )
    return f


@pytest.mark.slow
def test_a_tagging_task_trains_beside_a_sentence_task(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from test_task_training import run_config

    from pals_core.base_model import tiny_config_dict
    from pals_core.budget.costs import design
    from pals_core.budget.solver import at_size
    from pals_core.budget.tasks import tasks_of_records
    from pals_core.families.shapes import from_hf_config
    from pals_core.pricing.config import AdapterConfig
    from pals_core.tasks.taskfile import read_tasks_file
    from pals_core.train.trainer import train

    f = write_tagging_tasks(tmp_path / "data")
    s = train(run_config(tmp_path / "run", tasks=[], tasks_file=str(f), steps=40, lr=1e-3), progress=False)
    assert set(s["scores"]["ner"]) == {"entity_f1", "entity_precision", "entity_recall", "token_accuracy"}
    assert s["scores"]["ner"]["entity_f1"] > 0.5  # the entities were learned (the baseline's F1: 0)
    assert s["tasks"]["ner"]["labels"] == ["O", "B-LOC", "B-PER"] and s["tasks"]["ner"]["kind"] == "tokens"
    shape = from_hf_config(tiny_config_dict(), name="tiny")
    shared = at_size(design(shape, tasks_of_records(read_tasks_file(f).values()), AdapterConfig(method="shared")), None)
    assert shared.params_task_specific == (shape.hidden * 3 + 3) + (shape.hidden * 2 + 2)


def test_pals_budget_prices_a_tasks_file_with_a_tagging_task_per_token(tmp_path, capsys):
    from pals_core.budget.costs import design
    from pals_core.budget.solver import at_size
    from pals_core.budget.tasks import Task
    from pals_core.cli.budget import main as pals_budget
    from pals_core.families.shapes import PRESETS
    from pals_core.pricing.config import AdapterConfig

    write_tagging_tasks(tmp_path)
    args = ["--tasks-file", str(tmp_path / "tasks.yaml"), "--method", "shared", "--seq-len", "64", "--json"]
    capsys.readouterr()
    assert pals_budget([*args, "--model", "electra-small-discriminator"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["tasks"] == [{"name": "ner", "num_labels": 3}, {"name": "intent", "num_labels": 2}]
    d = got["model"]["hidden"]
    # ELECTRA's sentence head holds its own dense layer; its token head is Linear(d, C) on every token
    assert got["rows"][0]["params_task_specific"] == (d * 3 + 3) + (d * d + d + d * 2 + 2)
    m = PRESETS["electra-small-discriminator"]
    cfg = AdapterConfig(method="shared")
    tagging = at_size(design(m, [Task("ner", 3, "tokens"), Task("intent", 2)], cfg, seq_len=64), None)
    sentence = at_size(design(m, [Task("ner", 3), Task("intent", 2)], cfg, seq_len=64), None)
    assert got["rows"][0]["flops_all_tasks_per_seq"] == tagging.flops_all_tasks_per_seq
    # the ner head: 64 tokens × 2·d·3 instead of one dense head (2d² + 2·d·3) on the first token
    assert tagging.flops_all_tasks_per_seq - sentence.flops_all_tasks_per_seq == 64 * 2 * d * 3 - (
        2 * d * d + 2 * d * 3
    )
