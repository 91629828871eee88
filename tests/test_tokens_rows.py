"""Tagging tasks (kind: tokens), the rows' side: CoNLL column files and list-valued JSON Lines / Parquet /
save_to_disk rows read through the real readers, every tag checked (one line naming file, row or line, and column),
the profile (``pals-tasks`` and the explorer's "Your tasks") and the calculator's price of a tasks file with one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pals_core.kinds.errors import TaskDataError, TaskRecordError
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.rows import read_rows
from pals_core.tasks.taskfile import read_tasks_file

SENTENCES = [
    (["John", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"]),
    (["Mary", "joined", "Acme", "Corp", "today"], ["B-PER", "O", "B-ORG", "I-ORG", "O"]),
    (["The", "parcel", "reached", "Leeds"], ["O", "O", "O", "B-LOC"]),
    (["Ask", "Bob"], ["O", "B-PER"]),
]


def conll_text(sentences=SENTENCES, pos: bool = True) -> str:
    """A CoNLL-2003 style file: a -DOCSTART- line, word POS chunk tag columns (or word tag), blank lines."""
    out = ["-DOCSTART- -X- -X- O", ""]
    for words, tags in sentences:
        out += [f"{w} NNP I-NP {t}" if pos else f"{w}\t{t}" for w, t in zip(words, tags)]
        out.append("")
    return "\n".join(out) + "\n"


def jsonl_text(sentences=SENTENCES, tags=None) -> str:
    return "".join(json.dumps({"tokens": w, "ner": t if tags is None else tags(t)}) + "\n" for w, t in sentences)


def record(path: Path, **kw) -> TaskRecord:
    return TaskRecord("ner", kind="tokens", train=str(path), **kw).check()


def words_and_tags(rows, names):
    return [(list(w), [names[k] for k in t]) for w, t in zip(rows.text_a, rows.labels)]


# ------------------------------------------------------------------------------------------------ sources


def test_a_conll_file_reads_the_first_and_last_columns_skipping_docstart(tmp_path):
    f = tmp_path / "train.conll"
    f.write_text(conll_text())
    dev = tmp_path / "dev.conll"
    dev.write_text(conll_text(SENTENCES[:2]))
    train, dv, names = read_rows(record(f, dev=str(dev)))
    assert names == ("O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG")  # "O" first, then sorted
    assert words_and_tags(train, names) == SENTENCES
    assert words_and_tags(dv, names) == SENTENCES[:2]
    assert train.text_b is None and train.source == str(f)


def test_columns_are_numbered_and_format_conll_reads_another_extension(tmp_path):
    f = tmp_path / "train.txt"
    f.write_text(conll_text())
    train, _, names = read_rows(record(f, format="conll", text="0", label="3", dev=str(f)))
    assert words_and_tags(train, names) == SENTENCES
    with pytest.raises(TaskDataError, match=re.escape(f"{f}, column 2: fewer than two tags ('I-NP')")):
        read_rows(record(f, format="conll", label="2", dev=str(f)))  # the chunk column: one tag only
    with pytest.raises(TaskDataError, match=re.escape(f"{f}: unknown format '.txt'")):
        read_rows(record(f, dev=str(f)))  # without format: conll a .txt file is not read as one


def test_list_columns_of_jsonl_parquet_and_save_to_disk_read_as_the_conll_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    conll = tmp_path / "t.conll"
    conll.write_text(conll_text())
    want = read_rows(record(conll, dev=str(conll)))
    j = tmp_path / "t.jsonl"
    j.write_text(jsonl_text())
    got = read_rows(record(j, text="tokens", label="ner", dev=str(j)))
    assert (got[0].text_a, got[0].labels, got[2]) == (want[0].text_a, want[0].labels, want[2])
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"tokens": [w for w, _ in SENTENCES], "ner": [t for _, t in SENTENCES]}), p)
    got = read_rows(record(p, text="tokens", label="ner", dev=str(p)))
    assert (got[0].text_a, got[0].labels, got[2]) == (want[0].text_a, want[0].labels, want[2])


def test_integer_tags_are_named_by_labels_or_by_the_classlabel_of_a_sequence(tmp_path):
    """The layout ``datasets`` uses for CoNLL-2003: ``ner_tags`` a Sequence of ClassLabel."""
    import datasets

    tags = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
    ids = [[tags.index(t) for t in ts] for _, ts in SENTENCES]
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "ner_tags": datasets.Sequence(datasets.ClassLabel(names=tags)),
        }
    )
    folder = tmp_path / "conll2003_train"
    datasets.Dataset.from_dict({"tokens": [w for w, _ in SENTENCES], "ner_tags": ids}, features=features).save_to_disk(
        str(folder)
    )
    train, _, names = read_rows(record(folder, text="tokens", label="ner_tags", dev=str(folder)))
    assert names == tuple(tags)  # the ClassLabel's order, all seven, as the head's output order
    assert words_and_tags(train, names) == SENTENCES

    unlabelled = tmp_path / "unlabelled"
    ids[1][2] = -1  # what datasets writes for an unlabelled item: a missing tag, never the last class
    datasets.Dataset.from_dict({"tokens": [w for w, _ in SENTENCES], "ner_tags": ids}, features=features).save_to_disk(
        str(unlabelled)
    )
    with pytest.raises(TaskDataError, match=re.escape(f"{unlabelled}, row 2, column 'ner_tags', word 3: missing tag")):
        read_rows(record(unlabelled, text="tokens", label="ner_tags", dev=str(folder)))
    ids[1][2] = tags.index("B-ORG")

    j = tmp_path / "ids.jsonl"
    j.write_text("".join(json.dumps({"tokens": w, "ner": i}) + "\n" for (w, _), i in zip(SENTENCES, ids)))
    train, _, names = read_rows(record(j, text="tokens", label="ner", labels=tags, dev=str(j)))
    assert names == tuple(tags) and words_and_tags(train, names) == SENTENCES


def test_bio_and_plain_tags_and_an_i_without_a_b_are_all_taken(tmp_path):
    rows = [(["a", "b", "c"], ["I-PER", "I-PER", "O"]), (["d", "e"], ["LOC", "O"]), (["f"], ["B-PER"])]
    j = tmp_path / "t.jsonl"
    j.write_text(jsonl_text(rows))
    train, _, names = read_rows(record(j, text="tokens", label="ner", dev=str(j)))
    assert names == ("O", "B-PER", "I-PER", "LOC") and words_and_tags(train, names) == rows


def test_without_a_dev_file_dev_sentences_are_drawn_from_train_by_the_seed(tmp_path):
    from pals_core.tasks.rows import dev_rows

    many = [([f"w{i}", "x"], ["B-PER", "O"]) for i in range(20)]
    f = tmp_path / "t.conll"
    f.write_text(conll_text(many, pos=False))
    train, dev, _ = read_rows(record(f), seed=3)
    held = dev_rows(20, 0.1, 3)
    assert [w[0] for w in dev.text_a] == [f"w{i}" for i in held]
    assert len(train) == 18 and dev.source == f"{f} (dev: 0.1 of train, seed 3)"


# ------------------------------------------------------------------------------------------------ bad values

BAD = {
    "count": (
        '{"tokens": ["a", "b"], "ner": ["O", "O"]}\n{"tokens": ["a", "b", "c"], "ner": ["O", "B-PER"]}\n',
        {},
        "{f}, line 2, column 'ner': 2 tags for 3 words (column 'tokens'): one tag per word",
    ),
    "empty word": (
        '{"tokens": ["a", " "], "ner": ["O", "B-PER"]}\n',
        {},
        "{f}, line 1, column 'tokens', word 2: empty word",
    ),
    "not a list": (
        '{"tokens": "a b", "ner": ["O", "B-PER"]}\n',
        {},
        "{f}, line 1, column 'tokens': a list of words expected, found str 'a b'",
    ),
    "tags not a list": (
        '{"tokens": ["a"], "ner": "O"}\n{"tokens": ["b"], "ner": ["B-PER"]}\n',
        {},
        "{f}, line 1, column 'ner': a list of tags expected (one per word), found str 'O'",
    ),
    "tag not in labels": (
        '{"tokens": ["a", "b"], "ner": ["O", "B-PER"]}\n{"tokens": ["c"], "ner": ["B-MISC"]}\n',
        {"labels": ["O", "B-PER"]},
        "{f}, line 2, column 'ner', word 1: tag 'B-MISC' not one of O, B-PER",
    ),
    "index out of range": (
        '{"tokens": ["a", "b"], "ner": [0, 1]}\n{"tokens": ["c", "d"], "ner": [0, 2]}\n',
        {"labels": ["O", "B-PER"]},
        "{f}, line 2, column 'ner', word 2: tag index 2 is out of range ('labels': 0 to 1)",
    ),
    "index without labels": (
        '{"tokens": ["a", "b"], "ner": [0, 1]}\n',
        {},
        "{f}, line 1, column 'ner', word 1: integer tag 0: name the tags with 'labels:' (index → tag)",
    ),
    "empty tag": ('{"tokens": ["a", "b"], "ner": ["O", ""]}\n', {}, "{f}, line 1, column 'ner', word 2: empty tag"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_jsonl_row_is_one_line_naming_file_line_and_column(tmp_path, case):
    text, fields, message = BAD[case]
    f = tmp_path / "t.jsonl"
    f.write_text(text)
    with pytest.raises(TaskDataError) as e:
        read_rows(record(f, text="tokens", label="ner", dev=str(f), **fields))
    assert str(e.value).startswith(message.format(f=f)) and "\n" not in str(e.value), str(e.value)


def test_a_bad_conll_line_is_named_by_its_line_and_column_number(tmp_path):
    f = tmp_path / "t.conll"
    f.write_text("-DOCSTART- O\n\na B-PER\nb O\n\nc\nd O\n")
    with pytest.raises(TaskDataError, match=re.escape(f"{f}, line 6: 1 column, expected 2 (as line 3")):
        read_rows(record(f))
    f.write_text("a B-PER\nb O\n\nc B-MISC\n")
    with pytest.raises(TaskDataError, match=re.escape(f"{f}, line 4, column 1: tag 'B-MISC' not one of O, B-PER")):
        read_rows(record(f, labels=["O", "B-PER"]))
    dev = tmp_path / "dev.conll"
    dev.write_text("x O\ny I-LOC\n")
    with pytest.raises(TaskDataError, match=re.escape(f"{dev}, line 2, column 1: tag 'I-LOC' never seen in train")):
        read_rows(record(f, dev=str(dev)))
    with pytest.raises(TaskDataError, match=re.escape(f"{f}: no column '5' (a CoNLL file's columns are numbered")):
        read_rows(record(f, label="5"))
    f.write_text("\n-DOCSTART- O\n\n")
    with pytest.raises(TaskDataError, match=re.escape(f"{f}: no rows")):
        read_rows(record(f))


def test_the_record_of_a_tagging_task_is_checked():
    with pytest.raises(TaskRecordError, match="'format' is conll .*, got 'csv'"):
        TaskRecord("t", kind="tokens", train="x", format="csv").check()
    with pytest.raises(TaskRecordError, match="'text' is one column of words"):
        TaskRecord("t", kind="tokens", train="x", text=("a", "b")).check()
    with pytest.raises(TaskRecordError, match="'format' is for tokens tasks"):
        TaskRecord("t", train="x", format="conll").check()
    assert "format" not in TaskRecord("t", train="x").as_dict()  # other records (and their fingerprints) unchanged


def test_a_tasks_file_takes_format(tmp_path):
    (tmp_path / "ner.txt").write_text(conll_text())
    f = tmp_path / "tasks.yaml"
    f.write_text("tasks:\n  ner: {train: ner.txt, format: conll, kind: tokens, label: '3'}\n")
    r = read_tasks_file(f)["ner"]
    assert (r.kind, r.format, r.label) == ("tokens", "conll", "3")
    assert read_rows(r)[2][0] == "O"


# ------------------------------------------------------------------------------------------------ the example

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tasks"


def test_the_example_tagging_task_reads_alike_from_its_conll_and_its_jsonl_file():
    r = read_tasks_file(EXAMPLE / "tasks.yaml")["entities"]
    train, dev, names = read_rows(r)
    assert (r.kind, len(train), len(dev), dev.source) == ("tokens", 300, 90, r.dev)
    j = record(EXAMPLE / "data" / "entities_train.jsonl", text="words", label="tags")
    again, _, same = read_rows(j.with_(dev=str(EXAMPLE / "data" / "entities_train.jsonl")))
    assert same == names and again.text_a == train.text_a and again.labels == train.labels


def test_the_example_entities_are_learnable_from_words():
    """Each word's most frequent training tag already finds most dev entities (seqeval's entity F1): the example gives
    a model something to learn, and the all-O reference (F1 0) something to beat."""
    from collections import Counter, defaultdict

    from seqeval.metrics import f1_score

    train, dev, names = read_rows(read_tasks_file(EXAMPLE / "tasks.yaml")["entities"])
    seen: dict[str, Counter] = defaultdict(Counter)
    for words, tags in zip(train.text_a, train.labels):
        for w, t in zip(words, tags):
            seen[w.lower()][names[t]] += 1
    gold = [[names[t] for t in tags] for tags in dev.labels]
    pred = [[seen[w.lower()].most_common(1)[0][0] if w.lower() in seen else "O" for w in words] for words in dev.text_a]
    assert f1_score(gold, pred) > 0.5
    assert f1_score(gold, [["O"] * len(g) for g in gold]) == 0.0
