"""Every output format takes every kind: the example's four tasks trained once (a tiny BERT), then ``pals-predict``
writes the tagging task's CoNLL dev file to CSV and TSV (words, gold tags and predicted tags space-joined), JSON Lines
and Parquet (lists) and CoNLL (a word a line: word, gold tag, predicted tag) — the same tags in each, only the run's
per-word tasks unless ``--tasks`` names others — and a JSON Lines tagging file (list columns) to CSV and CoNLL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pals_core.cli.predict import main
from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.readers import read_columns
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

pytestmark = pytest.mark.slow  # a four-task run trained once (~10 s on two busy cores); each prediction ~1 s
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tasks"


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats")
    shutil.copytree(EXAMPLE, root / "tasks")
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(root / "tasks" / "tasks.yaml"),
        adapter=AdapterConfig(method="lora", d_s=4),
        model="tiny",
        out=str(root / "run"),
        steps=20,
        batch_size=8,
        max_len=32,
        lr=3e-3,
        seed=0,
    )
    return root, train(cfg, progress=False)


def predict(here, cwd: Path, *args: str):
    return here(main, *args, "--no-progress", cwd=cwd)


def refused(p, needle: str) -> None:
    assert p.returncode == 2 and needle in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr


def conll_rows(path: Path) -> list[list[list[str]]]:
    """A CoNLL file as sentences of word lines (each its whitespace-separated fields)."""
    return [[line.split() for line in block.splitlines()] for block in path.read_text().strip().split("\n\n")]


def test_a_conll_input_is_written_to_every_format_with_the_runs_tagging_task_only(example_run, here, tmp_path):
    from seqeval.metrics import f1_score

    root, summary = example_run
    dev = root / "tasks" / "data" / "entities_dev.conll"
    read = read_columns(dev, None).values  # as a tasks file reads it (-DOCSTART- skipped)
    words, gold = read["0"], read["1"]
    tags = {}
    for suffix in (".jsonl", ".parquet", ".csv", ".tsv", ".conll"):
        out = tmp_path / f"p{suffix}"
        p = predict(here, tmp_path, str(root / "run"), "--input", str(dev), "--out", str(out))
        assert p.returncode == 0, p.stderr
        assert " · entities · step " in p.stderr  # the tagging task alone: no sentence task runs on a CoNLL file
        if suffix == ".conll":
            written = conll_rows(out)
            assert [[w for w, *_ in s] for s in written] == words
            assert [[g for _, g, _ in s] for s in written] == gold  # word, the gold tag, the predicted tag
            tags[suffix] = [[t for *_, t in s] for s in written]
            continue
        cols = read_columns(out, None)
        assert list(cols.values) == ["0", "1", "entities"]  # the file's columns, then the task's tags
        if suffix in (".csv", ".tsv"):  # one text cell a sentence: words and tags joined by single spaces
            assert cols.values["0"] == [" ".join(w) for w in words]
            assert cols.values["1"] == [" ".join(g) for g in gold]
            tags[suffix] = [t.split(" ") for t in cols.values["entities"]]
        else:
            assert cols.values["0"] == words and cols.values["1"] == gold
            tags[suffix] = cols.values["entities"]
    assert all(t == tags[".jsonl"] for t in tags.values())  # the same tags in every format
    assert [len(t) for t in tags[".jsonl"]] == [len(w) for w in words]
    assert summary["scores"]["entities"]["entity_f1"] == f1_score(gold, tags[".conll"])  # as the run scored its dev

    # a sentence task runs on a CoNLL file when asked for; .conll holds per-word tasks only
    p = predict(here, tmp_path, str(root / "run"), "--input", str(dev), "--out", str(tmp_path / "both.csv"),
                "--tasks", "intent,entities", "--text", "0")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert list(read_columns(tmp_path / "both.csv", None).values) == ["0", "1", "intent", "intent_prob", "entities"]
    p = predict(here, tmp_path, str(root / "run"), "--input", str(dev), "--out", str(tmp_path / "both.conll"),
                "--tasks", "intent,entities", "--text", "0")  # fmt: skip
    refused(p, "a .conll file holds a value per word, and intent predicts one per row")
    assert not (tmp_path / "both.conll").exists()


def test_a_conll_output_keeps_the_out_rules(example_run, here, tmp_path):
    """A .conll output is a new file like any other: never the input, an existing one only with --overwrite."""
    root, _ = example_run
    dev = tmp_path / "dev.conll"
    shutil.copy(root / "tasks" / "data" / "entities_dev.conll", dev)
    before = dev.read_bytes()
    for extra in ((), ("--overwrite",)):
        p = predict(here, tmp_path, str(root / "run"), "--input", str(dev), "--out", str(dev), *extra)
        refused(p, "is the input file")
    assert dev.read_bytes() == before
    out = tmp_path / "tagged.conll"
    out.write_text("mine\n")
    refused(predict(here, tmp_path, str(root / "run"), "--input", str(dev), "--out", str(out)), "exists")
    assert out.read_text() == "mine\n"
    p = predict(here, tmp_path, str(root / "run"), "--input", str(dev), "--out", str(out), "--overwrite")
    assert p.returncode == 0, p.stderr
    assert len(conll_rows(out)) == len(read_columns(dev, None))


def test_a_json_lines_tagging_file_is_written_to_csv_and_conll(example_run, here, tmp_path):
    """The tagging layout of JSON Lines (a list of words, a list of tags in the task's label column): CSV joins both
    by spaces, CoNLL writes a word a line with its gold tag and its predicted tag; a word holding a space cannot be
    one field of either and is named before predicting."""
    root, _ = example_run
    lines = (root / "tasks" / "data" / "entities_train.jsonl").read_text().splitlines()[:12]
    rows = [{"words": r["words"], "label": r["tags"]} for r in map(json.loads, lines)]  # the record's label: "label"
    f = tmp_path / "new.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ("--input", str(f), "--text", "words")
    p = predict(here, tmp_path, str(root / "run"), *args, "--tasks", "entities", "--out", str(tmp_path / "p.jsonl"))
    assert p.returncode == 0, p.stderr
    tags = [json.loads(line)["entities"] for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    p = predict(here, tmp_path, str(root / "run"), *args, "--tasks", "entities", "--out", str(tmp_path / "p.csv"))
    assert p.returncode == 0, p.stderr
    cols = read_columns(tmp_path / "p.csv", None).values
    assert cols["words"] == [" ".join(r["words"]) for r in rows]
    assert cols["label"] == [" ".join(r["label"]) for r in rows]
    assert cols["entities"] == [" ".join(t) for t in tags]
    p = predict(here, tmp_path, str(root / "run"), *args, "--out", str(tmp_path / "p.conll"))  # per-word tasks
    assert p.returncode == 0, p.stderr
    written = conll_rows(tmp_path / "p.conll")
    assert [[w for w, _, _ in s] for s in written] == [r["words"] for r in rows]
    assert [[g for _, g, _ in s] for s in written] == [r["label"] for r in rows]
    assert [[t for _, _, t in s] for s in written] == tags

    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text(json.dumps(dict(rows[0], words=["New York", *rows[0]["words"][1:]])) + "\n")
    for suffix, needle in ((".csv", "cannot be space-joined"), (".conll", "'New York' is not one word")):
        out = tmp_path / f"spaced{suffix}"
        argv = ("--input", str(spaced), "--text", "words", "--out", str(out))
        # CSV: every task that reads a text (the run's choice task reads its own columns, which this input lacks);
        # CoNLL: the per-word tasks, by default
        tasks = ("--tasks", "intent,reviews,tickets,entities") if suffix == ".csv" else ()
        p = predict(here, tmp_path, str(root / "run"), *argv, *tasks)
        refused(p, needle)
        assert not out.exists() and "rows/s" not in p.stderr
