"""Your model out: ``MultiTaskModel.from_run`` and texts in; ``pals-predict`` reproducing a run's
dev scores from its dev files; mixed-task batches equal to each row alone, for every method."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig

from pals_core.data.metrics import task_scores
from pals_core.methods.registry import METHODS
from pals_core.model import MultiTaskModel
from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.readers import read_columns
from pals_core.tasks.taskfile import read_tasks_file
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

BIN = Path(sys.executable).parent
WORDS = {
    "billing": ["invoice", "charge", "bill", "payment"],
    "refund": ["money", "back", "return", "refund"],
    "other": ["hello", "weather", "time", "music"],
}


def own_tasks(folder: Path) -> Path:
    """Three tasks of one's own, each with a dev file (so that a dev file's predictions can be scored)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 90), ("dev", 30)):
        with open(folder / f"intent_{split}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["message", "intent"])
            for i in range(n):
                label = list(WORDS)[i % 3]
                w.writerow([f"{rng.choice(WORDS[label])} {rng.choice(WORDS[label])} please {i}", label])
        (folder / f"score_{split}.jsonl").write_text(
            "".join(
                json.dumps(
                    {"a": f"sentence {'good ' * (i % 5)}{i}", "b": f"other {i % 7}", "y": (i % 5) + 0.5 * (i % 2)}
                )
                + "\n"
                for i in range(n)
            )
        )
        rows = [
            {
                "body": f"ticket {i} about {'login' if i % 2 else 'payment'} {'slow' if i % 3 else 'fine'}",
                "tags": (["login"] if i % 2 else ["payment"]) + (["slow"] if i % 3 else []),
            }
            for i in range(n)
        ]
        pq.write_table(pa.Table.from_pylist(rows), folder / f"tags_{split}.parquet")
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  intent: {train: intent_train.csv, dev: intent_dev.csv, text: message, label: intent, metric: macro_f1}\n"
        "  score: {train: score_train.jsonl, dev: score_dev.jsonl, text: [a, b], label: y, kind: regression}\n"
        "  tags: {train: tags_train.parquet, dev: tags_dev.parquet, text: body, label: tags, kind: multilabel}\n"
    )
    return f


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("predict")
    f = own_tasks(root / "data")
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(f),
        adapter=AdapterConfig(method="pals", d_s=16, heads=2),
        model="tiny",
        out=str(root / "run"),
        steps=120,
        batch_size=8,
        max_len=32,
        eval_every=60,
        lr=3e-3,
        eval_batch_size=7,
        seed=0,
    )
    return root / "run", f, train(cfg, progress=False)


def pals_predict(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "pals-predict"), *args, "--no-progress"], capture_output=True, text=True, timeout=300
    )


def predict_here(capsys, *args: str) -> tuple[int, str]:
    """pals-predict's main() in this process: (exit status, stderr). The same command as the installed script, without
    the seconds a new process takes to import torch; one test runs the installed script itself."""
    from pals_core.cli.predict import main

    capsys.readouterr()
    code = main([*args, "--no-progress"])
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_pals_predict_on_each_dev_file_reproduces_summary_scores_exactly(trained, tmp_path, capsys):
    run, f, summary = trained
    records = read_tasks_file(f)
    out = pals_predict(
        str(run),
        "--input",
        records["intent"].dev,
        "--out",
        str(tmp_path / "intent.csv"),
        "--tasks",
        "intent",
        "--probs",
    )
    assert out.returncode == 0, out.stderr
    assert "rows/s" in out.stderr and "kept under new names: 'intent' as 'intent (input)'" in out.stderr
    got = read_columns(tmp_path / "intent.csv", None).values
    labels = summary["tasks"]["intent"]["labels"]
    y = np.array([labels.index(v) for v in got["intent (input)"]])
    pred = np.array([labels.index(v) for v in got["intent"]])
    assert len(set(pred)) > 1, "a constant prediction would not test the scoring"
    assert task_scores(records["intent"], {"": (pred, y)}, 3) == summary["scores"]["intent"]
    probs = np.array([[float(got[f"intent_prob_{name}"][i]) for name in labels] for i in range(len(y))])
    assert np.allclose(probs.sum(axis=1), 1.0) and np.allclose(
        probs.max(axis=1), [float(p) for p in got["intent_prob"]]
    )

    code, err = predict_here(
        capsys, str(run), "--input", records["score"].dev, "--out", str(tmp_path / "score.jsonl"), "--tasks", "score"
    )
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "score.jsonl").read_text().splitlines()]
    values = np.array([r["score"] for r in rows], dtype=np.float64)  # the user's units (z·std + mean), float64
    assert (
        task_scores(records["score"], {"": (values, np.array([r["y"] for r in rows]))}, 1) == summary["scores"]["score"]
    )

    code, err = predict_here(
        capsys, str(run), "--input", records["tags"].dev, "--out", str(tmp_path / "tags.parquet"), "--tasks", "tags"
    )
    assert code == 0, err
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "tags.parquet").to_pydict()
    names = summary["tasks"]["tags"]["labels"]
    hot = lambda sets: np.array([[n in s for n in names] for s in sets])  # noqa: E731
    assert (
        task_scores(
            records["tags"], {"": (hot(table["tags"]), hot(table["tags (input)"]).astype(np.float32))}, len(names)
        )
        == summary["scores"]["tags"]
    )


@pytest.mark.slow
def test_from_run_predicts_texts_with_labels_and_probabilities(trained):
    run, f, summary = trained
    model = MultiTaskModel.from_run(run)
    assert not model.training and model.run.step == summary["best_step"]
    assert set(model.tasks) == {"intent", "score", "tags"}
    texts = ["invoice charge please", "hello weather please"]
    one = model.predict(texts, task="intent")
    assert one.labels == tuple(summary["tasks"]["intent"]["labels"]) and all(x in one.labels for x in one.label)
    assert one.probs.shape == (2, 3) and np.allclose(one.probs.sum(axis=1), 1)
    every = model.predict_all(texts, ["other 1", "other 2"])  # texts: predict_texts, every task in one pass
    assert list(every) == ["intent", "score", "tags"]
    assert every["intent"].label == one.label and np.array_equal(every["intent"].logits, one.logits)
    assert isinstance(every["score"].label[0], float) and isinstance(every["tags"].label[0], list)
    with pytest.raises(ValueError, match="keeps no checkpoint of step 3"):
        MultiTaskModel.from_run(run, step=3)


@pytest.mark.slow
def test_task_column_rows_share_one_forward_and_equal_each_task_alone(trained, tmp_path, capsys):
    run, f, _ = trained
    records = read_tasks_file(f)
    dev = read_columns(records["intent"].dev, ["message"]).values["message"]
    requests = tmp_path / "requests.csv"
    with open(requests, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "task"])
        for i, t in enumerate(dev):
            w.writerow([t, ("intent", "tags")[i % 2]])
    code, err = predict_here(
        capsys,
        str(run),
        "--input",
        str(requests),
        "--out",
        str(tmp_path / "mixed.jsonl"),
        "--task-column",
        "task",
        "--text",
        "text",
    )
    assert code == 0, err
    code, err = predict_here(
        capsys,
        str(run),
        "--input",
        str(requests),
        "--out",
        str(tmp_path / "alone.jsonl"),
        "--tasks",
        "intent,tags",
        "--text",
        "text",
    )
    assert code == 0, err
    m = [json.loads(x) for x in (tmp_path / "mixed.jsonl").read_text().splitlines()]
    a = [json.loads(x) for x in (tmp_path / "alone.jsonl").read_text().splitlines()]
    for x, y in zip(m, a):
        task = x["task"]
        other = "tags" if task == "intent" else "intent"
        assert x[task] == y[task] and x[other] is None
        if task == "intent":
            assert x["intent_prob"] == pytest.approx(y["intent_prob"], abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--input", "missing.csv"], "file not found"),
        (["--input", "{dev}", "--tasks", "nope"], "task 'nope' is not a task"),
        (["--input", "{dev}", "--tasks", "intent", "--text", "nope"], "no text column 'nope'"),
        (["--input", "{dev}"], "the tasks read different text columns"),
        (["--input", "{dev}", "--text", "message"], "task 'score' reads a pair of texts: give --text-pair"),
        (["--input", "{dev}", "--task-column", "message"], "is not one of"),
    ],
)
def test_bad_input_is_one_line_exit_2(trained, tmp_path, args, needle, capsys):
    run, f, _ = trained
    dev = read_tasks_file(f)["intent"].dev
    code, err = predict_here(capsys, str(run), *[a.format(dev=dev) for a in args], "--out", str(tmp_path / "p.csv"))
    assert code == 2 and needle in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.slow
def test_the_input_is_checked_before_the_weights_load(trained, tmp_path, capsys):
    """Tasks and columns are checked against the run's files before its weights are read: on a copy of
    the run whose weights cannot be read, every input mistake still gets its own line, at once."""
    import shutil
    import time

    from pals_core.checkpoint import Checkpoints

    run, f, _ = trained
    broken = tmp_path / "run"
    shutil.copytree(run, broken)
    best = broken / "checkpoints" / Checkpoints(broken / "checkpoints").best()["dir"]
    (best / "shared.safetensors").write_bytes(b"not weights")
    dev = read_tasks_file(f)["intent"].dev
    out = str(tmp_path / "p.csv")
    for args, needle in (
        (["--tasks", "nope"], "task 'nope' is not a task"),
        (["--tasks", "intent", "--text", "nope"], "no text column 'nope'"),
        ([], "the tasks read different text columns"),
        (["--text", "message"], "task 'score' reads a pair of texts: give --text-pair"),
        (["--task-column", "message"], "is not one of"),
        (["--task-column", "nope"], "no column 'nope'"),
    ):
        started = time.perf_counter()
        code, err = predict_here(capsys, str(broken), "--input", str(dev), *args, "--out", out)
        assert code == 2 and needle in err, (args, err)
        assert time.perf_counter() - started < 2.0, args  # no model built, no tokenizer read
    # the same copy with a good input: only now are the weights read, and their damage is the error
    code, err = predict_here(capsys, str(broken), "--input", str(dev), "--tasks", "intent", "--out", out)
    assert code == 2 and "shared.safetensors" in err and len(err.strip().splitlines()) == 1, err
    assert not Path(out).exists()


@pytest.mark.slow
def test_the_output_columns_of_each_kind_are_the_readmes(trained, tmp_path, capsys):
    """The output columns docs/using-a-run.md tabulates: classification gives <task> and <task>_prob; multilabel and regression no <task>_prob;
    --probs adds <task>_prob_<label> for classification and multilabel only."""
    run, f, _ = trained
    records = read_tasks_file(f)
    want = {
        "intent": (["intent", "intent_prob"], [f"intent_prob_{x}" for x in sorted(WORDS)]),
        "tags": (["tags"], ["tags_prob_login", "tags_prob_payment", "tags_prob_slow"]),
        "score": (["score"], []),
    }
    for task, (plain, extra) in want.items():
        for probs in ([], ["--probs"]):
            out = tmp_path / f"{task}{len(probs)}.jsonl"
            code, err = predict_here(
                capsys, str(run), "--input", str(records[task].dev), "--tasks", task, *probs, "--out", str(out)
            )
            assert code == 0, err
            first = json.loads(out.read_text().splitlines()[0])
            inputs = [
                c if c not in plain else f"{c} (input)" for c in read_columns(str(records[task].dev), None).values
            ]
            added = [c for c in first if c not in inputs]
            assert sorted(added) == sorted(plain + (extra if probs else [])), (task, probs, added)


TINY = dict(
    hidden_size=24,
    num_hidden_layers=4,
    num_attention_heads=4,
    intermediate_size=40,
    vocab_size=60,
    max_position_embeddings=32,
)
SIZES = {
    "pals": 8,
    "pals_unshared": 4,
    "low_rank": 5,
    "houlsby": 3,
    "lora": 6,
    "proj_attn_top": 8,
    "proj_ffn_top": 7,
    "ca_mtl": 8,
}


@pytest.mark.parametrize("method", list(METHODS))
def test_forward_mixed_equals_each_row_alone_for_every_method(method):
    torch.manual_seed(0)
    location = None if not METHODS[method].within else ("top" if method == "ia3" else "all")
    model = MultiTaskModel.from_base_config(
        BertConfig(**TINY),
        AdapterConfig(method=method, d_s=SIZES.get(method), location=location, heads=4),
        {"a": 2, "b": 1, "c": 3},
    ).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # task weights away from their identity initialisation
        for name, p in model.named_parameters():
            if name.startswith(("adapters.", "heads.", "poolers.", "shared_adapter.")):
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    ids = torch.randint(0, 60, (6, 9), generator=gen)
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    mask[4, 3:] = 0
    tasks = ["a", "b", "c", "a", "c", "b"]
    with torch.no_grad():
        mixed = model.forward_mixed(ids, mask, tasks=tasks)
        for i, t in enumerate(tasks):
            n = int(mask[i].sum())
            alone = model(task=t, input_ids=ids[i : i + 1, :n], attention_mask=mask[i : i + 1, :n])[0]
            assert mixed[i].shape == (model.tasks[t],)
            assert torch.allclose(mixed[i], alone, atol=1e-5), (method, i, t)
    with pytest.raises(ValueError, match="unknown task 'd'"):
        model.forward_mixed(ids, mask, tasks=["d"] * 6)


def _family_cases():
    from pairwise import grid
    from test_export_onnx import GRID

    return grid(GRID, skip={(0, 1)})  # every family and every method; PALS_FULL_GRID=1: every pair


@pytest.mark.parametrize("family, method", _family_cases())
def test_forward_mixed_runs_the_trunk_once_and_equals_each_row_alone_in_every_family(family, method):
    """The mixed batch (every layer's weights once on the whole batch, each task's adapter on its rows) equals each
    row run alone through its task — in every family, whose layers read per-forward state of their own (relative
    positions, RoPE, local attention)."""
    from test_export_onnx import CHECKPOINTS, adapter_for
    from transformers import AutoConfig

    from pals_core.base_model import tiny_config_dict

    torch.manual_seed(0)
    config = (
        AutoConfig.for_model("bert", **{k: v for k, v in tiny_config_dict().items() if k != "model_type"})
        if family == "bert"
        else AutoConfig.for_model(family, **CHECKPOINTS[family])
    )
    model = MultiTaskModel.from_base_config(config, adapter_for(method), {"a": 2, "b": 1, "c": 3}).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(("adapters.", "heads.", "poolers.", "shared_adapter.")):
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    ids = torch.randint(1000, 2000, (6, 12), generator=gen)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    mask[4, 5:] = 0
    tasks = ["a", "b", "c", "a", "c", "b"]
    with torch.no_grad():
        mixed = model.forward_mixed(ids, mask, tasks=tasks)
        for i, t in enumerate(tasks):
            n = int(mask[i].sum())
            alone = model(task=t, input_ids=ids[i : i + 1, :n], attention_mask=mask[i : i + 1, :n])[0]
            assert torch.allclose(mixed[i], alone, atol=1e-5), (family, method, i, t, (mixed[i] - alone).abs().max())
