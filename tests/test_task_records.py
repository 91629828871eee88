"""Your own tasks: the tasks file, the readers, checked rows, pricing from label counts — pure Python,
no torch. Training on records is in test_task_training.py."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pals_core.kinds.errors import TaskDataError, TaskRecordError
from pals_core.tasks import resolve_records
from pals_core.tasks.glue_tasks import glue_record
from pals_core.tasks.readers import read_columns
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.rows import dev_rows, num_labels, read_rows
from pals_core.tasks.taskfile import read_tasks_file

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

ROWS = [
    ("the invoice is wrong", "billing"),
    ("give my money back", "refund"),
    ("hello there", "other"),
    ("charged twice", "billing"),
    ("return this please", "refund"),
    ("what time is it", "other"),
] * 5


def write_csv(path: Path, header, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_tasks(folder: Path, tasks: dict) -> Path:
    path = folder / "tasks.yaml"
    path.write_text(json.dumps({"tasks": tasks}))  # JSON is YAML
    return path


def pals_budget(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "pals-budget"), *args], capture_output=True, text=True, timeout=60)


# ---------------------------------------------------------------------------------------- the tasks file


def test_tasks_file_paths_are_relative_to_the_file_and_glue_entries_are_built_in(tmp_path):
    (tmp_path / "data").mkdir()
    write_csv(tmp_path / "data" / "intent.csv", ["message", "intent"], ROWS)
    (tmp_path / "cfg").mkdir()
    f = tmp_path / "cfg" / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  intent:\n    train: ../data/intent.csv\n    text: message\n    label: intent\n    metric: macro_f1\n"
        "  entail: {glue: rte}\n"
    )
    records = read_tasks_file(f)
    assert list(records) == ["intent", "entail"]
    assert records["intent"].train == str(tmp_path / "data" / "intent.csv")
    assert records["intent"].main_metric == "macro_f1"
    assert records["entail"].glue == "rte" and records["entail"].labels == ("entailment", "not_entailment")
    assert glue_record("rte").main_metric == "accuracy" and glue_record("stsb").kind == "regression"
    assert [r.name for r in resolve_records("intent", str(f))] == ["intent"]
    assert [r.name for r in resolve_records("rte,mrpc")] == ["rte", "mrpc"]


@pytest.mark.parametrize(
    "text, match",
    [
        ("tasks:\n  a: {train: x.csv, text: t, label: l}\n  a: {train: y.csv, text: t, label: l}\n", "given twice"),
        ("tasks:\n  a: {train: x.csv, text: t, lable: l}\n", "unknown field.*'lable'"),
        ("tasks:\n  a: {train: x.csv, text: t, label: l, kind: ranking}\n", "unknown kind 'ranking'"),
        ("tasks:\n  a: {train: x.csv, text: t, label: l, metric: bleu}\n", "unknown metric 'bleu'"),
        (
            "tasks:\n  a: {train: x.csv, text: t, label: l, kind: regression, metric: accuracy}\n",
            "unknown metric 'accuracy'",
        ),
        ("tasks:\n  a: {text: t, label: l}\n", "no 'train' file"),
        ("tasks:\n  a: {glue: wsc}\n", "unknown task 'wsc'"),
        ("tasks:\n  a: {glue: rte, dev: x.csv}\n", "takes only 'glue'"),
        ("tasks:\n  a b: {train: x.csv, text: t, label: l}\n", "task name 'a b'"),
        ("tasks:\n  a: {train: x.csv, text: [p, q, r], label: l}\n", "'text' is one column name or a list of two"),
        ("tasks:\n  a: {train: x.csv, text: t, label: l, labels: [x, y, z], metric: f1}\n", "'f1' is binary"),
        ("tasks: [a, b]\n", "top-level 'tasks:' mapping"),
        ("tasks:\n  a: {train: x.csv\n", "not YAML"),
    ],
)
def test_a_bad_tasks_file_is_one_line_naming_the_problem(tmp_path, text, match):
    f = tmp_path / "tasks.yaml"
    f.write_text(text)
    with pytest.raises(TaskRecordError, match=match) as e:
        read_tasks_file(f)
    assert str(f) in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------------------------------- the readers


def _all_formats(tmp_path: Path) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"text": t, "label": l, "tags": [l, "x"] if i % 2 else [l]} for i, (t, l) in enumerate(ROWS)]
    out = {"csv": write_csv(tmp_path / "d.csv", ["text", "label"], [(r["text"], r["label"]) for r in rows])}
    out["tsv"] = tmp_path / "d.tsv"
    out["tsv"].write_text("text\tlabel\n" + "".join(f"{r['text']}\t{r['label']}\n" for r in rows))
    out["jsonl"] = write_jsonl(tmp_path / "d.jsonl", rows)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    out["parquet"] = tmp_path / "d.parquet"
    import datasets

    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    out["arrow"] = tmp_path / "saved"
    return out


def test_every_format_reads_the_same_rows(tmp_path):
    files = _all_formats(tmp_path)
    for fmt, path in files.items():
        cols = read_columns(path, ["text", "label"])
        assert cols.values["text"] == [t for t, _ in ROWS], fmt
        assert cols.values["label"] == [l for _, l in ROWS], fmt
    for fmt in ("jsonl", "parquet", "arrow"):  # a list label stays a list
        assert read_columns(files[fmt], ["tags"]).values["tags"][1] == ["refund", "x"]


def test_a_save_to_disk_classlabel_column_gives_its_names(tmp_path):
    import datasets

    ds = datasets.Dataset.from_dict(
        {"text": ["a b", "c d", "e f"], "label": [1, 0, 1]},
        features=datasets.Features(
            {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
        ),
    )
    ds.save_to_disk(str(tmp_path / "ds"))
    r = TaskRecord("s", train=str(tmp_path / "ds"), text=("text",))
    train, dev, names = read_rows(r.with_(dev=str(tmp_path / "ds")))
    assert names == ("neg", "pos") and train.labels == [1, 0, 1]


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_reading_only_the_label_column_of_100k_rows_is_fast(tmp_path):
    path = write_csv(
        tmp_path / "big.csv",
        ["message", "intent"],
        (
            (f'message number {i}, with a comma and "quotes" ' * 4, ("billing", "refund", "other")[i % 3])
            for i in range(100_000)
        ),
    )
    r = TaskRecord("big", train=str(path), text=("message",), label="intent")
    best = min(_timed(lambda: num_labels(r)) for _ in range(3))
    assert num_labels(r) == 3
    assert best < 0.3, f"{best:.3f} s to read the label column of 100,000 rows"


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# ---------------------------------------------------------------------------------------- labels and rows


def test_labels_are_sorted_numerically_when_integers_and_declared_order_wins(tmp_path):
    path = write_jsonl(tmp_path / "n.jsonl", [{"t": f"x {i}", "y": [2, 10, 1][i % 3]} for i in range(9)])
    r = TaskRecord("n", train=str(path), text=("t",), label="y")
    assert read_rows(r)[2] == ("1", "2", "10")
    declared = r.with_(labels=("10", "2", "1"))
    train, dev, names = read_rows(declared)
    assert names == ("10", "2", "1") and num_labels(declared) == 3


def test_multilabel_from_lists_and_from_separated_strings(tmp_path):
    lists = write_jsonl(
        tmp_path / "m.jsonl", [{"t": f"row {i}", "tags": [["a"], ["a", "b"], ["c"]][i % 3]} for i in range(12)]
    )
    strings = write_csv(tmp_path / "m.csv", ["t", "tags"], [(f"row {i}", ["a", "a|b", "c"][i % 3]) for i in range(12)])
    a = read_rows(TaskRecord("m", kind="multilabel", train=str(lists), dev=str(lists), text=("t",), label="tags"))
    b = read_rows(
        TaskRecord(
            "m", kind="multilabel", train=str(strings), dev=str(strings), text=("t",), label="tags", label_sep="|"
        )
    )
    assert a[2] == b[2] == ("a", "b", "c")
    assert a[0].labels == b[0].labels and a[0].labels[1] == [0, 1]


def test_without_a_dev_file_a_seeded_fraction_of_train_is_held_out(tmp_path):
    path = write_csv(tmp_path / "d.csv", ["text", "label"], ROWS)
    r = TaskRecord("d", train=str(path), dev_fraction=0.2)
    train0, dev0, _ = read_rows(r, seed=0)
    train1, dev1, _ = read_rows(r, seed=1)
    assert len(dev0) == 6 and len(train0) == 24
    assert dev0.text_a != dev1.text_a or dev0.labels != dev1.labels  # split by the seed
    assert read_rows(r, seed=0)[1].text_a == dev0.text_a  # and the same seed, the same split
    assert "0.2 of train, seed 0" in dev0.source
    assert dev_rows(30, 0.2, 0) == sorted(dev_rows(30, 0.2, 0))


BAD_ROWS = [  # (file content, record fields, message, row)
    ("text,label\nfine,a\n,b\n", {}, "empty text", "row 2, column 'text'"),
    ("text,label\nfine,a\nalso,\n", {}, "missing label", "row 2, column 'label'"),
    ("text,label\nfine,a\nfine,a\n", {}, "fewer than two classes", "column 'label'"),
    ("text,label\nfine,a\nfine,c\n", {"labels": ["a", "b"]}, "label 'c' not one of a, b", "row 2, column 'label'"),
    ("text,label\nfine,1.5\nfine,nan\n", {"kind": "regression"}, "not finite", "row 2, column 'label'"),
    ("text,label\nfine,1.5\nfine,high\n", {"kind": "regression"}, "is not a number", "row 2, column 'label'"),
    ("text,label\nfine,1.5\nfine,9\n", {"kind": "regression", "range": [0, 5]}, "outside the declared range", "row 2"),
    (
        "text,label\nfine,1.5\nfine,1e308\n",
        {"kind": "regression", "range": [0, 5]},
        "outside the declared range",
        "row 2",
    ),
    ("text,label\nfine,a\nfine,b,extra\n", {}, "expected 2 fields, found 3", "row 2"),
    ("text,lab\nfine,a\n", {}, "no column 'label'", ""),
]


@pytest.mark.parametrize("content, fields, message, where", BAD_ROWS)
def test_a_bad_row_is_named_by_file_row_and_column(tmp_path, content, fields, message, where):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    r = TaskRecord("bad", train=str(path), dev=str(path), **fields)
    with pytest.raises(TaskDataError, match=message) as e:
        read_rows(r)
    assert str(path) in str(e.value) and where in str(e.value) and "\n" not in str(e.value)


def test_a_dev_label_never_seen_in_train_and_non_utf8_text_are_named(tmp_path):
    train = write_csv(tmp_path / "train.csv", ["text", "label"], [("x", "a"), ("y", "b")])
    dev = write_csv(tmp_path / "dev.csv", ["text", "label"], [("x", "a"), ("z", "c")])
    with pytest.raises(TaskDataError, match=r"dev.csv, row 2, column 'label': label 'c' never seen in train"):
        read_rows(TaskRecord("t", train=str(train), dev=str(dev)))
    latin = tmp_path / "latin.csv"
    latin.write_bytes("text,label\nfine,a\ncaf\xe9,b\n".encode("latin-1"))
    with pytest.raises(TaskDataError, match=r"latin.csv, line 3: not UTF-8"):
        read_rows(TaskRecord("t", train=str(latin), dev=str(latin)))
    with pytest.raises(TaskDataError, match="file not found"):
        read_rows(TaskRecord("t", train=str(tmp_path / "nope.csv")))
    (tmp_path / "x.xlsx").write_bytes(b"PK")
    with pytest.raises(TaskDataError, match="unknown format '.xlsx'"):
        read_rows(TaskRecord("t", train=str(tmp_path / "x.xlsx")))


def test_jsonl_rows_are_named_by_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n\n{"text": "", "label": "y"}\n')
    with pytest.raises(TaskDataError, match=r"d.jsonl, line 3, column 'text': empty text"):
        read_rows(TaskRecord("t", train=str(path), dev=str(path)))
    path.write_text('{"text": "a", "label": "x"}\n{"text": "b", "label": \n')
    with pytest.raises(TaskDataError, match=r"d.jsonl, line 2: not JSON"):
        read_rows(TaskRecord("t", train=str(path), dev=str(path)))


# ---------------------------------------------------------------------------------------- pricing


def test_pals_budget_prices_each_head_from_its_label_count(tmp_path):
    write_csv(tmp_path / "intent.csv", ["message", "intent"], ROWS)
    write_jsonl(
        tmp_path / "tags.jsonl", [{"body": f"t {i}", "tags": [["a", "b"], ["c"], ["d", "e"]][i % 3]} for i in range(9)]
    )
    f = write_tasks(
        tmp_path,
        {
            "intent": {"train": "intent.csv", "text": "message", "label": "intent"},
            "tags": {"train": "tags.jsonl", "text": "body", "label": "tags", "kind": "multilabel"},
            "rte": {"glue": "rte"},
        },
    )
    out = pals_budget("--tasks-file", str(f), "--method", "shared", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["tasks"] == [
        {"name": "intent", "num_labels": 3},
        {"name": "tags", "num_labels": 5},
        {"name": "rte", "num_labels": 2},
    ]
    d = got["model"]["hidden"]
    assert got["rows"][0]["params_task_specific"] == (d * 3 + 3) + (d * 5 + 5) + (d * 2 + 2)
    sub = json.loads(pals_budget("--tasks-file", str(f), "--tasks", "tags", "--method", "shared", "--json").stdout)
    assert [t["name"] for t in sub["tasks"]] == ["tags"]


def test_pals_budget_never_imports_torch_for_a_tasks_file(tmp_path):
    write_csv(tmp_path / "intent.csv", ["message", "intent"], ROWS)
    f = write_tasks(tmp_path, {"intent": {"train": "intent.csv", "text": "message", "label": "intent"}})
    code = (
        "import sys; from pals_core.cli.budget import run; "
        f"run(['--tasks-file', {str(f)!r}, '--budget', '1.13']); "
        "assert not [m for m in ('torch', 'transformers', 'datasets') if m in sys.modules], sys.modules.keys()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    "tasks, message",
    [
        ({"a": {"train": "missing.csv", "text": "t", "label": "l"}}, "missing.csv: file not found"),
        ({"a": {"train": "one.csv", "text": "message", "label": "intent"}}, "fewer than two classes"),
        ({"a": {"train": "intent.csv", "text": "message", "label": "nope"}}, "no column 'nope'"),
    ],
)
def test_pals_budget_refuses_bad_data_in_one_line(tmp_path, tasks, message):
    write_csv(tmp_path / "intent.csv", ["message", "intent"], ROWS)
    write_csv(tmp_path / "one.csv", ["message", "intent"], [("x", "a"), ("y", "a")])
    out = pals_budget("--tasks-file", str(write_tasks(tmp_path, tasks)), "--budget", "1.13")
    assert out.returncode == 2 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


@pytest.mark.parametrize("score", ["-40", "1e308", "5.01"])
def test_a_glue_sts_b_score_outside_0_5_is_a_data_error_naming_file_and_line(tmp_path, score):
    from pals_core.data.glue_rows import GlueDataError, read_tsv
    from pals_core.tasks.glue_tasks import GLUE_TASKS

    f = tmp_path / "dev.tsv"
    f.write_text(
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
        "0\tmain\tx\t2012\t0\tnone\tnone\tA man.\tA man.\t5.000\n"
        f"1\tmain\tx\t2012\t1\tnone\tnone\tA cat.\tA dog.\t{score}\n"
    )
    with pytest.raises(GlueDataError, match=r"dev.tsv:3: score .* is outside stsb's range \[0, 5\]"):
        read_tsv(GLUE_TASKS["stsb"], f)
    assert glue_record("stsb").range == (0.0, 5.0)


def test_a_files_digest_is_remembered_until_the_file_changes(tmp_path):
    """sha256_of is read once per change (the explorer redraws often): an edit of the same size, or a file added to a
    save_to_disk folder, gives the new digest."""
    import hashlib
    import os

    from pals_core.tasks.readers import sha256_of

    f = tmp_path / "t.csv"
    f.write_text("text,label\nhello,a\n")
    first = sha256_of(f)
    assert first == hashlib.sha256(f.read_bytes()).hexdigest() == sha256_of(f)
    f.write_text("text,label\nhellO,a\n")  # same size
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1000))
    assert sha256_of(f) == hashlib.sha256(f.read_bytes()).hexdigest() != first
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "a.arrow").write_bytes(b"1")
    before = sha256_of(folder)
    (folder / "b.arrow").write_bytes(b"2")
    assert sha256_of(folder) != before
