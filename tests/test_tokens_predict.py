"""A tagging task out of the model: ``pals-predict`` writes one tag per word (JSON Lines: a list; CSV: space-joined),
tags the words ``max_len`` cut as the baseline does and counts them, and its tags on the dev file score exactly what
the run reported; a batch mixing tagging rows and sentence rows answers as each task alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.readers import read_columns
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

PEOPLE, PLACES = ["John", "Mary", "Ahmed", "Ines"], ["Paris", "Lagos", "Ouagadougou", "Kyoto"]


def _tagging_rows(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        p, c = rng.choice(PEOPLE), rng.choice(PLACES)
        if i % 4 == 0:  # a two-word person: B-PER I-PER
            words, tags = [p, "Smith", "visited", c], ["B-PER", "I-PER", "O", "B-LOC"]
        else:
            words, tags = [c, "welcomed", p, "today"], ["B-LOC", "O", "B-PER", "O"]
        rows.append({"words": words, "tags": tags, "task": "ner"})
    return rows


def write_tasks(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", 80, 0), ("dev", 24, 1)):
        rows = _tagging_rows(n, seed)
        if split == "dev":  # a long row: its last words are cut by max_len 16
            rows.append({"words": ["Mary"] + ["and", "Kyoto"] * 12, "tags": ["B-PER"] + ["O", "B-LOC"] * 12})
        (folder / f"ner_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        intents = [
            {"t": f"{'refund' if i % 2 else 'invoice'} please {i}", "y": "r" if i % 2 else "b"} for i in range(n)
        ]
        (folder / f"intent_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in intents))
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  ner: {train: ner_train.jsonl, dev: ner_dev.jsonl, text: words, label: tags, kind: tokens}\n"
        "  intent: {train: intent_train.jsonl, dev: intent_dev.jsonl, text: t, label: y}\n"
    )
    return f


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("tagging")
    f = write_tasks(root / "data")
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(f),
        adapter=AdapterConfig(method="lora", d_s=4),
        model="tiny",
        out=str(root / "run"),
        steps=60,
        batch_size=8,
        max_len=16,
        eval_every=30,
        lr=3e-3,
        eval_batch_size=5,
        seed=0,
    )
    return root, f, train(cfg, progress=False)


def _predict(capsys, *args: str) -> tuple[int, str]:
    from pals_core.cli.predict import main

    capsys.readouterr()
    code = main([*args, "--no-progress"])
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_pals_predict_tags_each_word_and_reproduces_the_dev_scores(trained, capsys):
    from seqeval.metrics import accuracy_score, f1_score, precision_score, recall_score

    root, f, summary = trained
    dev = root / "data" / "ner_dev.jsonl"
    code, err = _predict(
        capsys, str(root / "run"), "--input", str(dev), "--out", str(root / "p.jsonl"), "--tasks", "ner"
    )
    assert code == 0, err
    rows = [json.loads(line) for line in (root / "p.jsonl").read_text().splitlines()]
    # the long row (25 words, 27 tokens) is read in windows of 16 sharing 5 tokens: no word cut, none said to be
    assert "cut" not in err and "sub-token" not in err
    assert summary["cut_words"] == {"ner": {"train": 0, "dev": 0}}
    assert summary["windows"]["ner"] == {"train": {"rows": 0, "windows": 0}, "dev": {"rows": 1, "windows": 3}}
    from pals_core.cli.train import format_summary

    text = format_summary(summary)
    assert "ner: sentences longer than --max-len 16, read in overlapping windows (stride 5): 0 in train" in text
    assert "1 in dev (3 windows)" in text and "words cut" not in text
    gold, pred = [r["tags"] for r in rows], [r["ner"] for r in rows]
    assert all(isinstance(p, list) and len(p) == len(g) for p, g in zip(pred, gold))
    assert {"B-PER", "B-LOC"} <= {t for p in pred for t in p}, "an all-O prediction would not test the scoring"
    from pals_core.model import MultiTaskModel

    probs = MultiTaskModel.from_run(root / "run").predict_texts([rows[-1]["words"]], tasks=["ner"])["ner"].prob[0]
    assert len(probs) == 25 and np.isfinite(probs).all()  # every word predicted, the last window's too
    scores = summary["scores"]["ner"]
    assert scores["entity_f1"] == f1_score(gold, pred)
    assert scores["entity_precision"] == precision_score(gold, pred)
    assert scores["entity_recall"] == recall_score(gold, pred)
    assert scores["token_accuracy"] == accuracy_score(gold, pred)
    # a CSV's text is split at whitespace into words; its tags come back space-joined
    (root / "dev.csv").write_text("words\n" + "".join(" ".join(r["words"]) + "\n" for r in rows))
    code, err = _predict(
        capsys, str(root / "run"), "--input", str(root / "dev.csv"), "--out", str(root / "p.csv"), "--tasks", "ner"
    )
    assert code == 0, err
    assert read_columns(root / "p.csv", None).values["ner"] == [" ".join(p) for p in pred]


@pytest.mark.slow
def test_rows_of_a_tagging_and_a_sentence_task_share_a_batch_and_equal_each_task_alone(trained, capsys):
    root, f, summary = trained
    tagging = _tagging_rows(6, 7)
    sentences = [{"words": f"refund please {i}", "task": "intent"} for i in range(5)]
    mixed = [r for pair in zip(tagging, sentences) for r in pair] + tagging[5:]
    (root / "mixed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mixed))
    args = ("--input", str(root / "mixed.jsonl"), "--text", "words")
    code, err = _predict(capsys, str(root / "run"), *args, "--out", str(root / "m.jsonl"), "--task-column", "task")
    assert code == 0, err
    together = [json.loads(line) for line in (root / "m.jsonl").read_text().splitlines()]
    code, err = _predict(capsys, str(root / "run"), *args, "--out", str(root / "a.jsonl"))
    assert code == 0, err
    alone = [json.loads(line) for line in (root / "a.jsonl").read_text().splitlines()]
    for t, a in zip(together, alone):
        assert t[t["task"]] == a[t["task"]]
        assert isinstance(t[t["task"]], list if t["task"] == "ner" else str)


@pytest.mark.slow
def test_the_examples_conll_dev_file_is_predicted_as_it_is_with_the_runs_scores(tmp_path, capsys):
    """The example's tagging task reads CoNLL files (words in the first column): pals-predict takes its dev file
    as it is, no --text, and its tags score what the run reported."""
    import shutil

    from seqeval.metrics import f1_score

    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "tasks", tmp_path / "tasks")
    cfg = TrainConfig(
        tasks=["entities"],
        tasks_file=str(tmp_path / "tasks" / "tasks.yaml"),
        adapter=AdapterConfig(method="lora", d_s=4),
        model="tiny",
        out=str(tmp_path / "run"),
        steps=20,
        batch_size=8,
        max_len=32,
        lr=3e-3,
        seed=0,
    )
    summary = train(cfg, progress=False)
    dev = tmp_path / "tasks" / "data" / "entities_dev.conll"
    code, err = _predict(capsys, str(tmp_path / "run"), "--input", str(dev), "--out", str(tmp_path / "p.jsonl"))
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    gold, pred = [r["1"] for r in rows], [r["entities"] for r in rows]  # the file's columns: 0 words, 1 tags
    assert [len(p) for p in pred] == [len(r["0"]) for r in rows]
    assert summary["scores"]["entities"]["entity_f1"] == f1_score(gold, pred)


@pytest.mark.slow
def test_a_word_with_no_sub_token_is_tagged_with_the_baseline_and_counted_as_such_never_as_cut(trained, capsys):
    """pals-predict takes new rows as they come: a word the tokenizer reduces to nothing (U+200B, a soft hyphen, U+FFFD)
    gets the baseline's tag and is counted apart, with the first one's place; the words around it are predicted."""
    root, f, summary = trained
    rows = [
        {"words": ["Mary", "\u200b", "visited", "Kyoto"]},
        {"words": ["John"] + ["and", "Kyoto"] * 12 + ["\ufffd", "\u00ad"]},  # a long row, read in windows
    ]
    (root / "odd.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ("--input", str(root / "odd.jsonl"), "--out", str(root / "o.jsonl"), "--tasks", "ner")
    code, err = _predict(capsys, str(root / "run"), *args)
    assert code == 0, err
    first = f"{root / 'odd.jsonl'}, line 1, column 'words', word 2"
    note = f"ner: 3 word(s) with no sub-token in the run's tokenizer (it reduces them to nothing; first: {first}), "
    note += "tagged 'O'"
    assert note in err and "cut" not in err
    got = [json.loads(line)["ner"] for line in (root / "o.jsonl").read_text().splitlines()]
    assert got[0][1] == "O" and got[1][-2:] == ["O", "O"] and [len(g) for g in got] == [4, 27]
