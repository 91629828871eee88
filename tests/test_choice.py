"""A multiple-choice task (kind: choice): rows of an optional context and k candidates in every layout (SWAG's columns,
candidate columns, a list column; CSV, TSV, JSON Lines, Parquet, save_to_disk), each (context, candidate) pair one
sequence, softmax over the k, accuracy, the most frequent position as the baseline; trained beside a sentence task,
predicted (the chosen candidate, its text and probability) to the run's dev score, priced and profiled per row."""

from __future__ import annotations

import csv
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from pals_core.kinds import get_kind
from pals_core.kinds.errors import TaskDataError, TaskRecordError
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.rows import num_labels, read_rows
from pals_core.tasks.taskfile import read_tasks_file

KIND = get_kind("choice")
NOUNS = ["cat", "dog", "man", "woman", "child", "bird"]
GOOD = ["smiles warmly", "waves back", "nods happily", "laughs gladly"]
BAD = ["melts into a puddle", "turns into a spoon", "flies to the moon", "becomes a cloud", "eats the table"]


def swag_rows(n: int, seed: int, k: int = 4) -> list[dict]:
    """SWAG's layout (video-id, sent1, sent2, ending0…, label): the right ending is a friendly gesture, the others
    absurd — learnable in a few steps."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        noun, right = rng.choice(NOUNS), rng.randrange(k)
        ends = [rng.choice(BAD) for _ in range(k)]
        ends[right] = rng.choice(GOOD)
        row = {"video-id": f"v{seed}-{i}", "sent1": f"The {noun} sees a friend.", "sent2": f"The {noun}"}
        out.append(row | {f"ending{j}": e for j, e in enumerate(ends)} | {"label": right})
    return out


def write_csv(path: Path, rows: list[dict], delimiter: str = ",") -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter=delimiter)
        w.writeheader()
        w.writerows(rows)
    return path


def write_choice_tasks(folder: Path, *, tagging: bool = False) -> Path:
    """A SWAG-laid choice task (CSV, a dev file) — its record nothing but its paths and its kind — an intent task
    (JSON Lines) and, with ``tagging``, a tagging task."""
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / "swag_train.csv", swag_rows(48, 0))
    write_csv(folder / "swag_dev.csv", swag_rows(16, 1))
    intents = [{"t": f"{'refund' if i % 2 else 'invoice'} please {i}", "y": "r" if i % 2 else "b"} for i in range(48)]
    (folder / "intent.jsonl").write_text("".join(json.dumps(r) + "\n" for r in intents))
    lines = [
        "tasks:",
        "  swag: {train: swag_train.csv, dev: swag_dev.csv, kind: choice}",
        "  intent: {train: intent.jsonl, text: t, label: y}",
    ]
    if tagging:
        tags = ["B-PER", "O", "O", "B-LOC", "O"]
        rows = [{"words": ["John", "flew", "to", "Paris", f"day{i}"], "tags": tags} for i in range(24)]
        (folder / "ner.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        lines.append("  ner: {train: ner.jsonl, text: words, label: tags, kind: tokens}")
    f = folder / "tasks.yaml"
    f.write_text("\n".join(lines) + "\n")
    return f


# --- the rows ---------------------------------------------------------------------------------------------------


def test_a_swag_file_needs_nothing_in_the_tasks_file_but_its_paths_and_its_kind(tmp_path):
    f = write_choice_tasks(tmp_path)
    record = read_tasks_file(f)["swag"]
    assert record.text == ("sent1", "sent2") and record.choices is None and record.label == "label"
    assert num_labels(record) == 4  # C_t = k: SWAG's ending0 … ending3, the header read
    train, dev, names = read_rows(record)
    assert names == ("0", "1", "2", "3") and len(train) == 48 and len(dev) == 16
    first = swag_rows(48, 0)[0]
    assert train.text_a[0] == [first["sent1"]] * 4  # each (context, candidate) pair one sequence
    assert train.text_b[0] == [f"{first['sent2']} {first[f'ending{j}']}" for j in range(4)]  # sent2 starts each
    assert train.labels[:5] == [r["label"] for r in swag_rows(48, 0)[:5]]


def test_a_swag_file_is_opened_once_for_its_rows_and_declared_candidates_price_without_a_read(tmp_path, monkeypatch):
    """Without ``choices`` the rows are read whole and SWAG's ending columns found among them (not a header read, then
    the rows); with ``choices`` named, C_t = k is priced from the record alone."""
    from collections import Counter

    from pals_core import atomic
    from pals_core.tasks import readers

    record = read_tasks_file(write_choice_tasks(tmp_path))["swag"]
    opens: Counter = Counter()
    opened = atomic.open_regular

    def counted(path, *a, **kw):
        opens[Path(path).name] += 1
        return opened(path, *a, **kw)

    for module in (atomic, readers):  # the guarded reader every read goes through (read_regular calls it)
        monkeypatch.setattr(module, "open_regular", counted)
    train, dev, _ = read_rows(record)
    assert len(train) == 48 and len(dev) == 16
    assert opens == {"swag_train.csv": 1, "swag_dev.csv": 1}
    opens.clear()
    named = TaskRecord("swag", kind="choice", train=record.train, choices=tuple(f"ending{j}" for j in range(4)))
    assert num_labels(named) == 4 and opens == {}
    assert num_labels(record) == 4 and opens == {"swag_train.csv": 2}  # undeclared: its header, then its endings


def test_every_layout_and_format_reads_the_same_rows(tmp_path):
    """SWAG's columns in CSV, TSV and Parquet; declared candidate columns; a list column in JSON Lines and in a
    save_to_disk folder (its label a ClassLabel); letter labels named by ``labels``."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = swag_rows(12, 3)
    swag = TaskRecord("t", kind="choice", text=("sent1", "sent2"), train=str(write_csv(tmp_path / "a.csv", rows)))
    want = read_rows(swag)
    got = [read_rows(swag.with_(train=str(write_csv(tmp_path / "a.tsv", rows, "\t"))))]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    got.append(read_rows(swag.with_(train=str(tmp_path / "a.parquet"))))
    renamed = [{"ctx": r["sent1"], "start": r["sent2"], **{f"c{j}": r[f"ending{j}"] for j in range(4)}} for r in rows]
    listed = [
        {"ctx": r["sent1"], "start": r["sent2"], "options": [r[f"ending{j}"] for j in range(4)], "answer": r["label"]}
        for r in rows
    ]
    (tmp_path / "b.jsonl").write_text(
        "".join(json.dumps(r | {"answer": r0["label"]}) + "\n" for r, r0 in zip(renamed, rows))
    )
    cols = TaskRecord(
        "t",
        kind="choice",
        text=("ctx", "start"),
        choices=("c0", "c1", "c2", "c3"),
        label="answer",
        train=str(tmp_path / "b.jsonl"),
    )
    got.append(read_rows(cols))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in listed))
    as_list = cols.with_(choices=("options",), train=str(tmp_path / "c.jsonl"))
    got.append(read_rows(as_list))
    features = datasets.Features(
        {
            "ctx": datasets.Value("string"),
            "start": datasets.Value("string"),
            "options": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.ClassLabel(names=["0", "1", "2", "3"]),
        }
    )
    datasets.Dataset.from_list(listed, features=features).save_to_disk(str(tmp_path / "d"))
    got.append(read_rows(as_list.with_(train=str(tmp_path / "d"))))
    letters = [r | {"answer": "ABCD"[r["answer"]]} for r in listed]
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(r) + "\n" for r in letters))
    lettered = as_list.with_(train=str(tmp_path / "e.jsonl"), labels=("A", "B", "C", "D"))
    got.append(read_rows(lettered))
    for train, dev, names in got:
        assert train.text_a == want[0].text_a and train.text_b == want[0].text_b and train.labels == want[0].labels
        assert dev.labels == want[1].labels and len(names) == 4
    assert got[-1][2] == ("A", "B", "C", "D")


def test_the_context_is_optional_and_an_empty_start_leaves_the_candidate_alone(tmp_path):
    rows = [
        {"q": "", "s": "", "a": "yes", "b": "no", "y": 0},
        {"q": "Is it?", "s": "It", "a": "is", "b": "is not", "y": 1},
    ]
    path = str(write_csv(tmp_path / "x.csv", rows * 3))
    alone = TaskRecord("t", kind="choice", text=(), choices=("a", "b"), label="y", train=path)
    train, _, _ = read_rows(alone.check())
    assert train.text_b is None and train.text_a[0] in (["yes", "no"], ["is", "is not"])
    paired = alone.with_(text=("q", "s")).check()
    train, _, _ = read_rows(paired)
    pairs = {tuple(zip(a, b)) for a, b in zip(train.text_a, train.text_b)}
    assert pairs == {(("", "yes"), ("", "no")), (("Is it?", "It is"), ("Is it?", "It is not"))}


def test_a_tasks_file_refuses_a_bad_choice_record_in_one_line(tmp_path):
    cases = {
        "{train: x.csv, kind: choice, text: [a, b, c]}": "'text' is the context: no column",
        "{train: x.csv, kind: choice, choices: [e0, label]}": "column 'label' is both a candidate and the label",
        "{train: x.csv, kind: choice, choices: [e0, e1], labels: [A, B, C]}": "3 'labels' for 2 candidate columns",
        "{train: x.csv, choices: [e0, e1]}": "'choices' is for choice tasks",
        "{train: x.csv, kind: choice, range: [0, 1]}": "'range' is for regression tasks",
    }
    for entry, message in cases.items():
        (tmp_path / "t.yaml").write_text(f"tasks:\n  t: {entry}\n")
        with pytest.raises(TaskRecordError, match=message.replace("[", r"\[").replace("(", r"\(")):
            read_tasks_file(tmp_path / "t.yaml")


def test_bad_rows_are_named_by_file_row_and_column(tmp_path):
    rows = swag_rows(4, 5)
    path = tmp_path / "s.csv"

    def refused(changed: list[dict], match: str, **record) -> None:
        write_csv(path, changed)
        r = TaskRecord("t", kind="choice", text=("sent1", "sent2"), train=str(path), **record)
        with pytest.raises(TaskDataError, match=match):
            read_rows(r)

    refused([*rows[:2], rows[2] | {"ending1": ""}, rows[3]], r"s\.csv, row 3, column 'ending1': empty candidate")
    refused(
        [*rows[:3], rows[3] | {"label": 4}],
        r"row 4, column 'label': label '4' is not a candidate \(an index from 0 to 3\)",
    )
    refused([rows[0] | {"label": ""}, *rows[1:]], r"row 1, column 'label': missing label")
    refused([{k: v for k, v in r.items() if not k.startswith("ending")} for r in rows], r"no candidate columns ending0")
    refused(
        rows,
        r"s\.csv: 4 candidate columns \(ending0, ending1, ending2, ending3\) for 3 'labels'",
        labels=("A", "B", "C"),
    )
    lists = [{"ctx": "c", "options": ["a", "b", "c"], "y": 0}, {"ctx": "c", "options": ["a", "b"], "y": 1}]
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lists))
    listed = TaskRecord(
        "t", kind="choice", text=("ctx",), choices=("options",), label="y", train=str(tmp_path / "l.jsonl")
    )
    with pytest.raises(TaskDataError, match=r"l\.jsonl, line 2, column 'options': 2 candidates, the first row 3"):
        read_rows(listed)
    (tmp_path / "l.jsonl").write_text(json.dumps({"ctx": "c", "options": ["a", 3], "y": 0}) + "\n" * 2)
    with pytest.raises(TaskDataError, match=r"line 1, column 'options', candidate 2: a candidate is text, found int"):
        read_rows(listed.with_(labels=("0", "1")))


# --- tokens, batches, the loss and the outputs ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tok():
    from pals_core.data.load import load_tokenizer, minilm_path

    return load_tokenizer(minilm_path())


def test_a_rows_candidates_are_encoded_and_batched_together(tok, tmp_path):
    import torch

    from pals_core.data.glue_rows import RawSplit
    from pals_core.data.load import encode, token_ids
    from pals_core.data.mt_uncertainty import _rows

    record = TaskRecord(
        "t", kind="choice", text=("sent1", "sent2"), train=str(write_csv(tmp_path / "s.csv", swag_rows(6, 2)))
    )
    train, _, names = read_rows(record)
    raw = RawSplit(train.text_a, train.text_b, train.labels)
    enc, cached = encode(raw, KIND.label_array(train.labels, 4), tok, 32, cache_dir=tmp_path / "c", grouped=True)
    assert not cached and len(enc) == len(train) and list(enc.groups) == [0, 4, 8, 12, 16, 20, 24][: len(train) + 1]
    again, cached = encode(raw, KIND.label_array(train.labels, 4), tok, 32, cache_dir=tmp_path / "c", grouped=True)
    assert cached and np.array_equal(again.ids, enc.ids)
    want = token_ids(tok, 32, train.text_a[1], train.text_b[1])["input_ids"]  # row 1's four pairs, tokenised alike
    b = enc.batch([1, 0])
    assert b["input_ids"].shape[0] == 8 and b["labels"].tolist() == [train.labels[1], train.labels[0]]
    for j in range(4):
        assert b["input_ids"][j][: len(want[j])].tolist() == want[j]
    assert b["groups"].tolist() == [0, 4, 8]
    assert enc.lengths[1] == max(len(x) for x in want)
    picked = _rows(b, [1])  # MT-Uncertainty's choice of rows takes each row's whole group
    assert torch.equal(picked["input_ids"], b["input_ids"][4:8, : picked["input_ids"].shape[1]])
    assert picked["labels"].tolist() == [train.labels[0]] and picked["groups"].tolist() == [0, 4]
    kept = enc.select([2, 1])
    assert np.array_equal(kept.batch([1])["input_ids"].numpy(), enc.batch([1])["input_ids"].numpy())


def test_the_loss_is_softmax_over_the_candidates_and_the_outputs_name_the_chosen_one():
    import torch

    logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.5]])
    labels = torch.tensor([1, 2])
    loss = KIND.module().loss(logits, labels)
    assert torch.isclose(loss, torch.nn.functional.cross_entropy(logits, labels))
    out = KIND.decode("mc", ("A", "B", "C"), logits.numpy())
    assert out.label == ["B", "A"] and np.allclose(out.prob, torch.softmax(logits, -1).max(-1).values.numpy())
    assert KIND.scores(None, logits.numpy(), labels.numpy(), ("accuracy",), 3) == {"accuracy": 0.5}
    preds, k = KIND.baseline(np.array([2, 0, 2, 1]), {"": np.array([0, 1, 2])}, 3)
    assert k == 3 and preds[""].tolist() == [2, 2, 2]  # the position most often right in train


# --- trained, predicted, priced and profiled --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_choice_task_trains_beside_a_sentence_task_and_pals_predict_reproduces_its_dev_score(tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).parent))
    from test_task_training import run_config

    from pals_core.cli.predict import main as predict_main
    from pals_core.train.trainer import train

    f = write_choice_tasks(tmp_path / "data")
    s = train(
        run_config(tmp_path / "run", tasks=[], tasks_file=str(f), steps=16, eval_every=8, lr=1e-3), progress=False
    )
    assert s["tasks"]["swag"]["kind"] == "choice" and s["tasks"]["swag"]["labels"] == ["0", "1", "2", "3"]
    assert s["scores"]["swag"]["accuracy"] > 0.6  # learned: the majority position's accuracy is at most 0.38 here
    out = tmp_path / "p.csv"
    dev = tmp_path / "data" / "swag_dev.csv"
    assert (
        predict_main(
            [
                str(tmp_path / "run"),
                "--input",
                str(dev),
                "--out",
                str(out),
                "--tasks",
                "swag",
                "--probs",
                "--no-progress",
            ]
        )
        == 0
    )
    got = list(csv.DictReader(open(out)))
    accuracy = np.mean([r["swag"] == r["label"] for r in got])
    assert accuracy == s["scores"]["swag"]["accuracy"]  # the run's dev score, exactly
    for r in got:
        assert r["swag_text"] == r[f"ending{r['swag']}"]  # the chosen candidate's text
        probs = [float(r[f"swag_prob_{j}"]) for j in range(4)]
        assert abs(sum(probs) - 1) < 1e-6 and float(r["swag_prob"]) == max(probs)
    # rows of both tasks in one file: each row through its own task, the choice rows' candidates together
    mixed = tmp_path / "mixed.jsonl"
    rows = [dict(r, task="swag") for r in swag_rows(3, 1)] + [{"t": "refund please", "task": "intent"}]
    mixed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    both = tmp_path / "both.jsonl"
    argv = [str(tmp_path / "run"), "--input", str(mixed), "--out", str(both), "--task-column", "task", "--no-progress"]
    assert predict_main(argv) == 0
    lines = [json.loads(x) for x in both.read_text().splitlines()]
    assert [x["swag"] for x in lines[:3]] == [r["swag"] for r in got[:3]] and lines[3]["swag"] is None
    assert lines[3]["intent"] in ("b", "r") and lines[0]["intent"] is None
    capsys.readouterr()


def test_pals_budget_prices_a_choice_row_as_its_k_sequences(tmp_path, capsys):
    from pals_core.budget.costs import design
    from pals_core.budget.solver import at_size
    from pals_core.budget.tasks import Task
    from pals_core.cli.budget import main as pals_budget
    from pals_core.families.shapes import PRESETS
    from pals_core.pricing.config import AdapterConfig

    f = write_choice_tasks(tmp_path)
    args = ["--tasks-file", str(f), "--method", "shared", "--seq-len", "64", "--model", "bert-base-uncased"]
    capsys.readouterr()
    assert pals_budget([*args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["tasks"] == [
        {"name": "swag", "num_labels": 4, "sequences_per_row": 4},
        {"name": "intent", "num_labels": 2},
    ]
    m, cfg = PRESETS["bert-base-uncased"], AdapterConfig(method="shared")
    one = at_size(design(m, [Task("intent", 2)], cfg, seq_len=64), None)
    row = got["rows"][0]
    d = m.hidden
    # the swag row: four sequences through the trunk, the pooler and its Linear(d, 1) head
    assert row["flops_per_seq"] == 4 * (one.flops_per_seq - 2 * d * 2 + 2 * d)
    assert row["params_task_specific"] == (d + 1) + (2 * d + 2)  # Linear(d, 1), Linear(d, 2)
    assert pals_budget(args) == 0
    assert "swag 4 sequences a row" in capsys.readouterr().out


def test_pals_tasks_profiles_the_candidates_and_the_tokens_of_each_pair(tmp_path, capsys):
    from pals_core.cli.tasks import main as pals_tasks

    f = write_choice_tasks(tmp_path)
    capsys.readouterr()
    assert pals_tasks([str(f), "--model", "tiny", "--json"]) == 0
    swag = json.loads(capsys.readouterr().out)["tasks"][0]
    assert (
        swag["kind"] == "choice" and swag["labels"] == ["0", "1", "2", "3"] and swag["tokens"]["sequences_per_row"] == 4
    )
    rows = swag_rows(48, 0)
    assert swag["distribution"]["train"] == {str(j): sum(r["label"] == j for r in rows) for j in range(4)}
    assert swag["majority"]["metric"] == "accuracy"
    assert pals_tasks([str(f), "--model", "tiny"]) == 0
    text = capsys.readouterr().out
    assert "4 candidates a row, each (context, candidate) pair one sequence" in text
    assert "per sequence: 4 a row" in text and "majority reference, always candidate" in text
    assert "tokens per (context, candidate) pair" in KIND.distribution_text(swag)


@pytest.mark.slow  # a page run with the tiny tokenizer
def test_the_explorer_prices_and_profiles_a_choice_task(tmp_path, monkeypatch):
    """The tasks view: C_t = k, the candidates a row and the tokens of each (context, candidate) pair in the kind's own
    line, the most frequent position's accuracy as the reference (the example's designs priced with the choice head:
    tests/test_explorer_tasks_file.py)."""
    from streamlit.testing.v1 import AppTest

    from explorer.inputs import TASKS_FILE, TINY

    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    write_choice_tasks(tmp_path / "data")
    (tmp_path / "data" / "one.yaml").write_text(
        "tasks:\n  swag: {train: swag_train.csv, dev: swag_dev.csv, kind: choice}\n"
    )
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120).run()
    at.sidebar.selectbox(key="model").set_value(TINY).run()
    at.sidebar.radio(key="task_mode").set_value(TASKS_FILE).run()
    at.sidebar.text_input(key="tasks_file").set_value(str(tmp_path / "data" / "one.yaml")).run()
    at.segmented_control(key="view").set_value("tasks").run()
    assert [e.value for e in at.error] + [e.value for e in at.exception] == []
    table = next(d.value for d in at.dataframe if "tokens p95" in d.value.columns)
    assert list(table["task"]) == ["swag"] and table["labels (C_t)"][0] == 4
    dev = swag_rows(16, 1)
    top = max(range(4), key=lambda j: (sum(r["label"] == j for r in swag_rows(48, 0)), -j))
    assert table["majority class on dev"][0] == f"{100 * np.mean([r['label'] == top for r in dev]):.1f} (accuracy)"
    text = next(m.value for m in at.markdown if "(4 candidates a row" in m.value)
    assert "tokens per (context, candidate) pair p50" in text
    # the right positions charted, train and dev, as pals-tasks counts them
    from test_explorer_tasks_file import fig

    bars = {t["name"].split()[0]: dict(zip(t["x"], t["customdata"])) for t in fig(at, "fig_labels::swag")["data"]}
    assert bars["train"] == {str(j): sum(r["label"] == j for r in swag_rows(48, 0)) for j in range(4)}
