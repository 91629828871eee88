"""Labels and targets are read as written or refused in one line naming the file, the row and the column: never a
ClassLabel -1 read as the last class, a list read as a class name, ``1_0`` read as ten, a column picked out of two of
one name. Regression targets stay float64 from the file to the metric, so a dev score recomputed from the file is
the score the run reports, bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pals_core.kinds.errors import TaskDataError, TaskRecordError
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.rows import read_label_names, read_rows

TEXTS = ["the invoice is wrong", "give my money back", "hello there", "charged twice", "return this", "what time"]


def classlabel_folder(folder: Path, labels: list[int], names=("neg", "pos")) -> Path:
    """A save_to_disk folder written by ``datasets`` itself: -1 is what it writes for an unlabelled row."""
    import datasets

    datasets.Dataset.from_dict(
        {"text": TEXTS[: len(labels)], "label": labels},
        features=datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=list(names))}),
    ).save_to_disk(str(folder))
    return folder


def jsonl(path: Path, labels: list) -> Path:
    path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in zip(TEXTS, labels)))
    return path


def refused(record: TaskRecord, *match: str) -> str:
    with pytest.raises(TaskDataError) as e:
        read_rows(record)
    line = str(e.value)
    assert "\n" not in line and all(m in line for m in match), line
    return line


def test_a_classlabel_of_minus_one_is_a_missing_label_not_the_last_class(tmp_path):
    folder = classlabel_folder(tmp_path / "ds", [0, 1, -1, 1, 0, 1])
    refused(TaskRecord("t", train=str(folder)), f"{folder}, row 3, column 'label': missing label (ClassLabel -1")


def test_a_classlabel_index_past_the_names_is_refused(tmp_path):
    import pyarrow as pa

    folder = classlabel_folder(tmp_path / "ds", [0, 1, 0, 1, 0, 1])
    state = json.loads((folder / "state.json").read_text())
    arrow = folder / state["_data_files"][0]["filename"]
    table = pa.ipc.open_stream(pa.BufferReader(arrow.read_bytes())).read_all()
    column = table.schema.get_field_index("label")
    table = table.set_column(column, "label", pa.array([0, 1, 7, 1, 0, 1], type=table.schema.field("label").type))
    with pa.OSFile(str(arrow), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    refused(TaskRecord("t", train=str(folder)), "row 3, column 'label': ClassLabel index 7 is not one of the 2 class")


def test_a_classlabel_past_the_names_is_exit_2_from_pals_tasks(tmp_path, here):
    from pals_core.cli.tasks import main

    folder = classlabel_folder(tmp_path / "ds", [0, 1, -1, 1, 0, 1])
    (tmp_path / "t.yaml").write_text(f"tasks:\n  t: {{train: {folder}}}\n")
    done = here(main, str(tmp_path / "t.yaml"), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "row 3, column 'label': missing label" in line


@pytest.mark.parametrize(
    "label, match",
    [
        (["a", "b"], "a list label ['a', 'b'] in a classification task (a list of labels is a task of kind: multi"),
        ({"name": "a"}, "a struct label {'name': 'a'} in a classification task"),
    ],
)
def test_a_list_or_struct_label_in_a_classification_task_is_refused(tmp_path, label, match):
    f = jsonl(tmp_path / "d.jsonl", ["a", "b", label, "a", "b", "a"])
    refused(TaskRecord("t", train=str(f)), f"{f}, line 3, column 'label': {match}")


@pytest.mark.parametrize(
    "label, match",
    [
        (["a", ["b", "c"]], "a list label ['b', 'c'] in a multilabel row of a task"),
        (["a", {"b": 1}], "a struct label {'b': 1} in a multilabel row of a task"),
        ({"b": 1}, "a struct label {'b': 1} (a multilabel row is a list of labels)"),
    ],
)
def test_a_nested_list_or_struct_in_a_multilabel_row_is_refused(tmp_path, label, match):
    f = jsonl(tmp_path / "d.jsonl", [["a"], ["b"], label, ["a", "b"], ["b"], ["a"]])
    refused(TaskRecord("t", kind="multilabel", train=str(f)), f"{f}, line 3, column 'label': {match}")


def test_two_columns_of_one_name_are_refused_naming_the_column(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("text,text,label\n" + "".join(f"{t},{t} again,{'ab'[i % 2]}\n" for i, t in enumerate(TEXTS)))
    refused(TaskRecord("t", train=str(csv)), f"{csv}: column 'text' appears 2 times")
    tsv = tmp_path / "d.tsv"
    tsv.write_text("label\ttext\ttext\n" + "".join(f"{'ab'[i % 2]}\t{t}\t{t}\n" for i, t in enumerate(TEXTS)))
    refused(TaskRecord("t", train=str(tsv)), f"{tsv}: column 'text' appears 2 times")
    lines = tmp_path / "d.jsonl"
    lines.write_text("".join(f'{{"text": "{t}", "text": "other", "label": "a"}}\n' for t in TEXTS))
    refused(TaskRecord("t", train=str(lines)), f"{lines}, line 1: key 'text' is given twice")
    with pytest.raises(TaskRecordError, match="'text' names column 'text' twice"):
        TaskRecord("t", train=str(csv), text=("text", "text")).check()


def test_two_parquet_columns_of_one_name_are_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table([pa.array(TEXTS), pa.array(TEXTS), pa.array(list("ababab"))], names=["text", "text", "label"])
    pq.write_table(table, tmp_path / "d.parquet")
    refused(TaskRecord("t", train=str(tmp_path / "d.parquet")), "d.parquet: column 'text' appears 2 times")


@pytest.mark.parametrize("target", ["1_0", "١٢", "0x10", "1,5", "²"])
def test_a_regression_target_python_would_stretch_into_a_number_is_refused(tmp_path, target):
    f = tmp_path / "d.csv"
    values = ["1.5", "2", target, "3e-1", " 4.25 ", "-0.5"]
    f.write_text("text,score\n" + "".join(f'{t},"{v}"\n' for t, v in zip(TEXTS, values)))
    refused(TaskRecord("t", kind="regression", train=str(f), label="score"), f"{f}, row 3, column 'score': target")


def test_plain_decimal_targets_are_read(tmp_path):
    f = tmp_path / "d.csv"
    values = ["1.5", "2", ".5", "3e-1", " 4.25 ", "-0.5"]
    f.write_text("text,score\n" + "".join(f'{t},"{v}"\n' for t, v in zip(TEXTS, values)))
    train, dev, _ = read_rows(TaskRecord("t", kind="regression", train=str(f), dev=str(f), label="score"))
    assert dev.labels == [1.5, 2.0, 0.5, 0.3, 4.25, -0.5]


def test_labels_that_look_like_digits_but_are_not_ascii_are_text_labels(tmp_path):
    """'²'.isdigit() is true but int('²') fails: such labels are names, sorted as text (no traceback), and '1'
    and '01' are two classes in one order whatever the process's string hashing."""
    f = tmp_path / "d.csv"
    f.write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in zip(TEXTS, ["²", "1", "³", "²", "1", "³"])))
    assert read_label_names(TaskRecord("t", train=str(f))) == ("1", "²", "³")
    g = tmp_path / "e.csv"
    g.write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in zip(TEXTS, ["01", "1", "2", "01", "1", "2"])))
    assert read_label_names(TaskRecord("t", train=str(g))) == ("01", "1", "2")


@pytest.mark.slow  # a tiny model's evaluation: a few seconds on 2 busy cores
def test_regression_targets_reach_the_metric_as_read_in_float64(tmp_path):
    """The dev score the trainer computes (``evaluate``) is scipy's Pearson of the model's outputs and the targets
    in the file, bit for bit: the targets are never rounded to float32 on the way."""
    import torch
    from scipy.stats import pearsonr

    from pals_core.data.load import TINY, load_tasks, load_tokenizer, tokenizer_path
    from pals_core.model import MultiTaskModel
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.evaluate import evaluate, predict

    rng = np.random.default_rng(0)
    texts = [f"row {i} says {' '.join(rng.choice(['good', 'bad', 'fine', 'odd'], 5))}" for i in range(40)]
    targets = [f"{v:.6f}" for v in rng.normal(2.5, 1.3, 40)]
    f = tmp_path / "d.csv"
    f.write_text("text,score\n" + "".join(f"{t},{y}\n" for t, y in zip(texts, targets)))
    record = TaskRecord("r", kind="regression", train=str(f), dev=str(f), label="score")
    tok = load_tokenizer(tokenizer_path(TINY))
    data = load_tasks([record], tok, max_len=32, train=False, cache_dir=str(tmp_path / "cache"))["r"]
    as_read = np.array([float(y) for y in targets])
    assert data.dev[""].labels.dtype == np.float64 and np.array_equal(data.dev[""].labels, as_read)
    torch.manual_seed(0)
    model = MultiTaskModel.from_base(TINY, AdapterConfig(method="shared"), {"r": 1})
    kw = dict(batch_size=16, device=torch.device("cpu"), autocast=lambda: torch.autocast("cpu", enabled=False))
    scores = evaluate(model, {"r": dict(data.dev)}, {"r": record}, **kw)
    outputs = predict(model, "r", data.dev[""], kind="regression", **kw).astype(np.float64)
    assert scores["r"]["pearson"] == float(pearsonr(outputs, as_read)[0])


def test_a_list_of_classlabel_gives_a_multilabel_task_its_names(tmp_path):
    import datasets

    tags = [[0, 1], [1], [2], [0], [1, 2], [2, 0]]
    datasets.Dataset.from_dict(
        {"text": TEXTS, "tags": tags},
        features=datasets.Features(
            {"text": datasets.Value("string"), "tags": datasets.Sequence(datasets.ClassLabel(names=["a", "b", "c"]))}
        ),
    ).save_to_disk(str(tmp_path / "ds"))
    record = TaskRecord("t", kind="multilabel", train=str(tmp_path / "ds"), dev=str(tmp_path / "ds"), label="tags")
    train, dev, names = read_rows(record)
    assert names == ("a", "b", "c") and dev.labels == tags
