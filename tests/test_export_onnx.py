"""ONNX for every design (docs/design.md "Using a trained run"): tiny ``pals-train`` runs of several families and
methods, on tasks of one's own (a classification, a regression on pairs, a multilabel), exported with
``pals-export --format onnx`` to one graph — inputs input_ids / attention_mask (/ token_type_ids where the family reads
them), dynamic batch and sequence axes, one logits output per task — with the tokenizer and export.json beside it;
onnxruntime's logits equal torch's on the run's dev rows within 1e-4, the task weights moved away from their identity
first so that every adapter counts; ``pals-predict`` on the exported folder writes what it writes on the run folder."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from pairwise import grid
from tiny_models import TINY_CONFIGS, save_tiny_checkpoint, tiny_config
from transformers import AutoTokenizer

from pals_core.base_model import tiny_config_dict
from pals_core.budget.costs import design
from pals_core.budget.tasks import parse_tasks
from pals_core.cli.export import main as pals_export
from pals_core.cli.predict import main as pals_predict
from pals_core.export.cards import card_code
from pals_core.export.onnx import (
    META_FILE,
    MODEL_FILE,
    OnnxRunner,
    export_onnx,
    is_onnx_export,
    load_models,
    read_export,
    shapes_text,
)
from pals_core.families.shapes import from_hf_config
from pals_core.methods.registry import METHODS
from pals_core.model import MultiTaskModel
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

torch.set_num_threads(1)
BIN = Path(sys.executable).parent
CHECKPOINTS = {
    f: tiny_config(f) for f in TINY_CONFIGS if f not in ("bert", "xlm-roberta")
}  # BERT: the trainer's "tiny"
FAMILIES = ("bert", *CHECKPOINTS)
TOKEN_TYPES = {
    "bert",
    "electra",
    "albert",
}  # the families whose graph reads token_type_ids (in the others' it is unused)
SIZES = {
    "pals": 4,
    "pals_unshared": 4,
    "low_rank": 4,
    "houlsby": 3,
    "lora": 4,
    "proj_attn_top": 4,
    "proj_ffn_top": 4,
    "ca_mtl": 4,
}
WORDS = {"billing": ["invoice", "charge", "bill"], "refund": ["money", "back", "return"], "other": ["hello", "time"]}


def adapter_for(method: str, **kw) -> AdapterConfig:
    """A small design of ``method`` (CA-MTL with an attention bias narrower than max_len: both of its branches run)."""
    extra = {"cond_attn_max_len": 16, "cond_attn_blocks": 2} if method == "ca_mtl" else {}
    return AdapterConfig(method=method, d_s=SIZES.get(method), heads=2, n_top=2, **extra, **kw)


def valid(family: str, method: str) -> bool:
    """The design checks accept ``method`` on ``family`` (CA-MTL refuses ModernBERT's pre-norm layers)."""
    fields = tiny_config_dict() if family == "bert" else {"model_type": family, **CHECKPOINTS[family]}
    try:
        design(from_hf_config(fields, name=family), parse_tasks({"a": 2}), adapter_for(method))
    except ValueError:
        return False
    return True


GRID = [(f, m) for f in FAMILIES for m in METHODS if valid(f, m)]
FAST = [("distilbert", "ca_mtl")]  # the custom block_diag symbolic, a family without token types
CASES = grid(GRID, keep=FAST, skip={(0, 1)})  # every family and every method (PALS_FULL_GRID=1: every pair)


def own_tasks(folder: Path) -> Path:
    """A classification (csv), a regression on pairs (jsonl) and a multilabel task (parquet), each with a dev file
    whose rows differ in length (so batches are padded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 24), ("dev", 10)):
        with open(folder / f"intent_{split}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["message", "intent"])
            for i in range(n):
                label = list(WORDS)[i % 3]
                w.writerow([" ".join(WORDS[label][: 1 + i % 3]) + f" please {i}" + " now" * (i % 4), label])
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
        "  intent: {train: intent_train.csv, dev: intent_dev.csv, text: message, label: intent}\n"
        "  score: {train: score_train.jsonl, dev: score_dev.jsonl, text: [a, b], label: y, kind: regression}\n"
        "  tags: {train: tags_train.parquet, dev: tags_dev.parquet, text: body, label: tags, "
        "kind: multilabel}\n"
    )
    return f


def dev_rows(folder: Path) -> dict[str, tuple[list[str], list[str] | None]]:
    from pals_core.tasks.readers import read_columns

    intent = read_columns(folder / "intent_dev.csv", ["message"]).values
    score = read_columns(folder / "score_dev.jsonl", ["a", "b"]).values
    tags = read_columns(folder / "tags_dev.parquet", ["body"]).values
    return {"intent": (intent["message"], None), "score": (score["a"], score["b"]), "tags": (tags["body"], None)}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return own_tasks(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Tiny random checkpoint folders (weights + MiniLM's tokenizer), written on first use."""
    made: dict[str, str] = {"bert": "tiny"}

    def get(family: str) -> str:
        if family not in made:
            made[family] = str(save_tiny_checkpoint(tmp_path_factory.mktemp(family), family, CHECKPOINTS[family]))
        return made[family]

    return get


def trained_run(out: Path, tasks_file: Path, model: str, adapter: AdapterConfig, **kw) -> Path:
    """A real pals-train run of two steps (evaluated, so it has a best checkpoint)."""
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(tasks_file),
        adapter=adapter,
        model=model,
        out=str(out),
        steps=2,
        batch_size=8,
        max_len=24,
        eval_every=2,
        lr=1e-3,
        eval_batch_size=4,
        seed=0,
        num_threads=1,
        **kw,
    )
    train(cfg, progress=False)
    return out


def away_from_identity(model: MultiTaskModel) -> None:
    """Move every task-specific weight (adapters start at their identity) so that a dropped adapter shows."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(("adapters.", "heads.", "poolers.", "shared_adapter.")):
                p.add_(torch.randn(p.shape, generator=gen) * 0.1)


def assert_same_logits(model: MultiTaskModel, runner: OnnxRunner, rows: dict, batch_size: int = 3) -> float:
    """onnxruntime and torch on every task's dev rows, in batches of several shapes: within 1e-4."""
    worst = 0.0
    for task, (texts, pairs) in rows.items():
        want = model.predict_texts(texts, pairs, tasks=[task], batch_size=batch_size)[task].logits
        got = runner.predict_texts(texts, pairs, tasks=[task], batch_size=batch_size)[task].logits
        assert got.shape == want.shape == (len(texts), model.tasks[task])
        worst = max(worst, float(np.abs(got - want).max()))
    assert worst < 1e-4, worst
    return worst


def graph_io(folder: Path) -> tuple[dict, dict]:
    """{name: [dims]} of the graph's inputs and outputs (a dim: its symbolic name, or its size)."""
    import onnx

    g = onnx.load(str(folder / MODEL_FILE)).graph

    def dims(v):
        return [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]

    return {v.name: dims(v) for v in g.input}, {v.name: dims(v) for v in g.output}


@pytest.fixture(scope="module")
def pals_run(data, tmp_path_factory) -> Path:
    return trained_run(tmp_path_factory.mktemp("pals") / "run", data, "tiny", adapter_for("pals"))


@pytest.fixture(scope="module")
def exported(pals_run, tmp_path_factory) -> tuple[Path, str]:
    import contextlib
    import io

    out = tmp_path_factory.mktemp("exported") / "onnx"
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert pals_export([str(pals_run), "--format", "onnx", "--out", str(out)]) == 0
    return out, said.getvalue()


# --- fast: one PALs run of BERT through the CLI, pals-predict on the export, two designs of the grid ----------------


def test_the_export_is_one_graph_with_a_logits_output_per_task_and_the_tokenizer_beside_it(exported, pals_run):
    out, said = exported
    assert {MODEL_FILE, META_FILE, "tokenizer.json", "tokenizer_config.json"} <= {p.name for p in out.iterdir()}
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left beside it
    inputs, outputs = graph_io(out)
    assert inputs == {k: ["batch", "sequence"] for k in ("input_ids", "attention_mask", "token_type_ids")}
    assert outputs == {"intent": ["batch", 3], "score": ["batch", 1], "tags": ["batch", 3]}
    meta = read_export(out)
    assert meta["outputs"] == ["intent", "score", "tags"] and meta["max_len"] == 24 and meta["method"] == "pals"
    assert meta["tasks"]["intent"]["labels"] == ["billing", "other", "refund"]
    assert [meta["tasks"][t]["kind"] for t in outputs] == ["classification", "regression", "multilabel"]
    assert meta["tasks"]["score"]["text"] == ["a", "b"] and meta["run"] == str(pals_run.resolve())
    tok = AutoTokenizer.from_pretrained(out)
    own = MultiTaskModel.from_run(pals_run).run.tokenizer()
    assert tok("invoice please", "a pair")["input_ids"] == own("invoice please", "a pair")["input_ids"]
    assert "check: onnxruntime vs torch max |Δ logit|" in said and f"pals-predict {out}" in said
    assert "outputs (logits): intent [batch, C=3] · score [batch, C=1] · tags [batch, C=3]" in said
    assert all(meta["tasks"][t]["axes"] == ["batch", "C"] for t in outputs)


def test_onnxruntime_gives_torchs_logits_on_the_dev_rows(exported, pals_run, data):
    model = MultiTaskModel.from_run(pals_run)
    runner = OnnxRunner(exported[0], threads=1)
    assert runner.tasks == model.tasks and runner.run.labels == model.run.labels and runner.run.step == model.run.step
    assert_same_logits(model, runner, dev_rows(data.parent))
    ids = torch.tensor([[101, 7279, 2182, 102, 0, 0], [101, 2376, 2067, 2651, 2182, 102]])
    mask = (ids > 0).long()
    with torch.no_grad():  # token tensors in, as MultiTaskModel.predict_all and forward_mixed
        want = model.predict_all(ids, mask, torch.zeros_like(ids))
        mixed = model.forward_mixed(ids, mask, torch.zeros_like(ids), tasks=["tags", "intent"])
    got = runner.predict_all(ids, mask, torch.zeros_like(ids))
    assert all(torch.allclose(got[t], want[t], atol=1e-5) for t in model.tasks)
    rows = runner.forward_mixed(ids, mask, tasks=["tags", "intent"])
    assert [tuple(r.shape) for r in rows] == [(3,), (3,)]
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(rows, mixed))


@pytest.mark.slow  # ~1 s (a real run, an export or a study): make test, not make test-fast
def test_the_export_is_deterministic_and_atomic(exported, pals_run, tmp_path):
    out, _ = exported
    model = MultiTaskModel.from_run(pals_run)
    again = export_onnx(model, tmp_path / "again", check=False, run_dir=pals_run)
    assert again.max_abs_diff is None and again.outputs == ["intent", "score", "tags"]
    for f in out.iterdir():
        assert (tmp_path / "again" / f.name).read_bytes() == f.read_bytes(), f.name
    (tmp_path / "empty").mkdir()
    export_onnx(model, tmp_path / "empty", check=False)  # an empty folder is taken
    assert is_onnx_export(tmp_path / "empty")
    with pytest.raises(ValueError, match="--opset must be an integer from 17"):  # fails once the folder is begun
        export_onnx(model, tmp_path / "bad", opset=16)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "empty"]  # nothing half-written left


def _predict(*args: str) -> int:
    return pals_predict([*args, "--no-progress"])


def test_pals_predict_on_the_exported_folder_writes_what_the_torch_engine_writes(
    exported, pals_run, data, tmp_path, capsys
):
    out, _ = exported
    dev = data.parent / "score_dev.jsonl"
    text = ("--text", "a", "--text-pair", "b", "--probs")
    assert _predict(str(pals_run), "--input", str(dev), "--out", str(tmp_path / "t.jsonl"), *text) == 0
    assert "on cpu" in capsys.readouterr().err
    assert _predict(str(out), "--input", str(dev), "--out", str(tmp_path / "o.jsonl"), *text) == 0  # auto: onnx
    said = capsys.readouterr().err
    assert "onnxruntime CPU" in said and f"step {read_export(out)['step']} of {out}" in said
    rows = [[json.loads(x) for x in (tmp_path / f"{e}.jsonl").read_text().splitlines()] for e in "to"]
    assert len(rows[0]) == len(rows[1]) == 10
    for t, o in zip(*rows):
        assert t.keys() == o.keys() and {"intent", "intent_prob_refund", "score", "tags", "tags_prob_slow"} <= set(t)
        for k in t:
            assert o[k] == pytest.approx(t[k], abs=1e-5) if isinstance(t[k], float) else o[k] == t[k], k
    requests = tmp_path / "requests.csv"  # --task-column: each row through its own task
    with open(requests, "w", newline="") as fh:
        csv.writer(fh).writerows(
            [("text", "task"), *((f"invoice please {i}" + " now" * i, ("intent", "tags")[i % 2]) for i in range(7))]
        )
    for engine, folder in (("torch", pals_run), ("onnx", out)):
        assert (
            _predict(
                str(folder),
                "--input",
                str(requests),
                "--out",
                str(tmp_path / f"{engine}.csv"),
                "--task-column",
                "task",
                "--text",
                "text",
                "--engine",
                engine,
            )
            == 0
        )
    assert (tmp_path / "torch.csv").read_text().splitlines()[0] == (tmp_path / "onnx.csv").read_text().splitlines()[0]
    from pals_core.tasks.readers import read_columns

    t, o = (read_columns(tmp_path / f"{e}.csv", None).values for e in ("torch", "onnx"))
    assert t["intent"] == o["intent"] and t["tags"] == o["tags"]
    assert np.allclose(
        [float(x or "nan") for x in t["intent_prob"]],
        [float(x or "nan") for x in o["intent_prob"]],
        atol=1e-5,
        equal_nan=True,
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        (["{missing}", "--format", "onnx", "--out", "{new}"], "no such run folder"),
        (["{run}", "--format", "onnx", "--out", "{full}"], "exists and is not empty"),
        (["{run}", "--format", "tflite", "--out", "{new}"], "invalid choice: 'tflite'"),
        (["{run}", "--format", "onnx", "--out", "{new}", "--opset", "12"], "--opset must be an integer from 17"),
        (["{run}", "--format", "onnx", "--out", "{new}", "--step", "7"], "keeps no checkpoint of step 7"),
        (["{data}", "--format", "onnx", "--out", "{new}"], "holds no pals-train run"),
        (["{run}", "--format", "peft", "--out", "{new}"], "--format onnx"),  # ExportRefused: PALs has no peft form
        (["{run}", "--format", "hf", "--out", "{new}", "--opset", "18"], "--opset is an ONNX setting"),
    ],
)
def test_pals_export_bad_input_is_one_line_exit_2(pals_run, data, tmp_path, capsys, args, needle):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    given = [
        a.format(
            missing=tmp_path / "nope", new=tmp_path / "new", full=tmp_path / "full", run=pals_run, data=data.parent
        )
        for a in args
    ]
    assert pals_export(given) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and err[-1].startswith("pals-export: error: ") and "Traceback" not in "\n".join(err)
    assert not (tmp_path / "new").exists() and (tmp_path / "full" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


@pytest.mark.parametrize(
    "engine_args, needle",
    [
        (["{export}", "--engine", "torch"], "is an ONNX export (pals-export): it holds no torch weights"),
        (["{run}", "--engine", "onnx"], "holds no ONNX export"),
        (["{export}", "--step", "1"], "is an ONNX export of step 2: --step 1 needs the run folder"),
    ],
)
def test_pals_predict_engine_mismatches_are_one_line_exit_2(
    exported, pals_run, data, tmp_path, capsys, engine_args, needle
):
    args = [a.format(export=exported[0], run=pals_run) for a in engine_args]
    assert _predict(*args, "--input", str(data.parent / "intent_dev.csv"), "--out", str(tmp_path / "p.csv")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_a_model_built_in_memory_traces_to_a_graph_too(tmp_path):
    """``write_graph`` takes any MultiTaskModel (benchmarks/bench_serving.py times onnxruntime on it): token ids traced,
    every length up to the position table served, CA-MTL's attention bias on both sides of its width."""
    import onnxruntime as ort

    from pals_core.export.onnx import write_graph

    torch.manual_seed(0)
    model = MultiTaskModel.from_base_config(tiny_config_dict(), adapter_for("ca_mtl"), {"a": 2, "b": 1})
    away_from_identity(model)
    inputs, outputs = write_graph([model], tmp_path / "g.onnx")
    assert inputs == ["input_ids", "attention_mask", "token_type_ids"] and outputs == ["a", "b"]
    session = ort.InferenceSession(str(tmp_path / "g.onnx"), providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(2)
    for rows, n in ((3, 5), (2, 40)):  # below and above the bias's width (16)
        ids = torch.randint(3, 1000, (rows, n), generator=gen)
        mask = torch.ones_like(ids)
        mask[0, n - 2 :] = 0
        with torch.no_grad():
            want = model.predict_all(ids, mask, torch.zeros_like(ids))
        got = session.run(
            None,
            {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": np.zeros_like(ids.numpy())},
        )
        assert all(np.abs(g - want[t].numpy()).max() < 1e-5 for g, t in zip(got, outputs))


@pytest.mark.slow  # 3-10 s a design (training, tracing, onnxruntime); the fast suite exports through the tests above
@pytest.mark.parametrize("family, method", CASES)
def test_every_design_exports_to_onnx_with_torchs_logits(family, method, data, checkpoints, tmp_path):
    run = trained_run(tmp_path / "run", data, checkpoints(family), adapter_for(method))
    model = MultiTaskModel.from_run(run)
    away_from_identity(model)
    done = export_onnx(model, tmp_path / "onnx", run_dir=run)
    assert done.max_abs_diff is not None and done.max_abs_diff < 1e-4
    inputs, outputs = graph_io(tmp_path / "onnx")
    assert set(inputs) == {"input_ids", "attention_mask"} | ({"token_type_ids"} if family in TOKEN_TYPES else set())
    assert all(d == ["batch", "sequence"] for d in inputs.values())
    assert outputs == {t: ["batch", c] for t, c in model.tasks.items()}
    assert_same_logits(model, OnnxRunner(tmp_path / "onnx", threads=1), dev_rows(data.parent))


# --- slow: designs beyond the grid, a separate-models folder, the installed command ------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "family, adapter",
    [
        ("bert", AdapterConfig(method="shared", per_task_pooler=True)),
        ("roberta", adapter_for("houlsby", location="top", freeze_trunk=True)),
        ("mpnet", adapter_for("lora", location="bottom", per_task_pooler=True)),
    ],
    ids=["shared-poolers", "houlsby-top-frozen", "lora-bottom-poolers"],
)
def test_poolers_locations_and_frozen_trunks_export_too(family, adapter, data, checkpoints, tmp_path):
    run = trained_run(tmp_path / "run", data, checkpoints(family), adapter)
    model = MultiTaskModel.from_run(run)
    away_from_identity(model)
    export_onnx(model, tmp_path / "onnx", opset=18)
    assert read_export(tmp_path / "onnx")["opset"] == 18
    assert_same_logits(model, OnnxRunner(tmp_path / "onnx", threads=1), dev_rows(data.parent))


@pytest.mark.slow
def test_a_separate_models_folder_becomes_one_graph_of_every_tasks_model(data, tmp_path, capsys):
    from pals_core.cli.train import main as pals_train

    sep = tmp_path / "sep"
    assert (
        pals_train(
            [
                "--method",
                "separate",
                "--tasks-file",
                str(data),
                "--model",
                "tiny",
                "--out",
                str(sep),
                "--steps",
                "6",
                "--batch-size",
                "8",
                "--max-len",
                "24",
                "--eval-every",
                "3",
                "--threads",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    assert pals_export([str(sep), "--format", "onnx", "--out", str(tmp_path / "onnx")]) == 0
    meta = read_export(tmp_path / "onnx")
    assert meta["method"] == "separate" and meta["outputs"] == ["intent", "score", "tags"]
    models = load_models(sep)
    assert [list(m.tasks) for m in models] == [["intent"], ["score"], ["tags"]]
    runner = OnnxRunner(tmp_path / "onnx", threads=1)
    for m in models:
        t = next(iter(m.tasks))
        assert meta["tasks"][t]["step"] == m.run.step
        assert_same_logits(m, runner, {t: dev_rows(data.parent)[t]})
    capsys.readouterr()
    assert pals_export([str(sep), "--format", "onnx", "--out", str(tmp_path / "x"), "--step", "3"]) == 2
    assert "--step does not apply" in capsys.readouterr().err
    assert (
        _predict(
            str(tmp_path / "onnx"),
            "--input",
            str(data.parent / "tags_dev.parquet"),
            "--out",
            str(tmp_path / "p.jsonl"),
            "--tasks",
            "tags",
        )
        == 0
    )
    assert "each task's best step" in capsys.readouterr().err


@pytest.mark.slow
def test_the_installed_pals_export_command(pals_run, tmp_path):
    out = subprocess.run(
        [str(BIN / "pals-export"), str(pals_run), "--format", "onnx", "--out", str(tmp_path / "o"), "--no-check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert f"{tmp_path / 'o'}: export.json, model.onnx" in out.stdout and "check:" not in out.stdout
    bad = subprocess.run(
        [str(BIN / "pals-export"), str(pals_run), "--format", "onnx", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not empty" in bad.stderr


# --- a tagging task: logits (batch, sequence, C) -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_a_tagging_task_exports_with_batch_and_sequence_axes(family, checkpoints, tmp_path, capsys, monkeypatch):
    from test_tokens_predict import write_tasks

    f = write_tasks(tmp_path / "data")
    run = trained_run(tmp_path / "run", f, checkpoints(family), adapter_for("lora"))
    model = MultiTaskModel.from_run(run)
    away_from_identity(model)
    done = export_onnx(model, tmp_path / "onnx", run_dir=run)
    assert done.max_abs_diff is not None and done.max_abs_diff < 1e-4
    _, outputs = graph_io(tmp_path / "onnx")
    assert outputs == {"ner": ["batch", "sequence", 4], "intent": ["batch", 2]}  # O, B-LOC, B-PER, I-PER
    runner = OnnxRunner(tmp_path / "onnx", threads=1)
    rows = [json.loads(x)["words"] for x in (tmp_path / "data" / "ner_dev.jsonl").read_text().splitlines()]
    want = model.predict_texts(rows, tasks=["ner"], batch_size=3)["ner"]
    got = runner.predict_texts(rows, tasks=["ner"], batch_size=3)["ner"]
    assert got.label == want.label and len(got.label[-1]) == 25  # one tag per word, the cut ones included
    for g, w in zip(got.logits, want.logits):
        assert g.shape == w.shape and np.nanmax(np.abs(g - w)) < 1e-4
    dev = str(tmp_path / "data" / "ner_dev.jsonl")
    assert _predict(str(tmp_path / "onnx"), "--input", dev, "--out", str(tmp_path / "o.jsonl"), "--tasks", "ner") == 0
    assert "onnxruntime CPU" in capsys.readouterr().err
    assert [json.loads(x)["ner"] for x in (tmp_path / "o.jsonl").read_text().splitlines()] == want.label
    # export.json and pals-export's summary give each output's axes, from its kind
    tasks = read_export(tmp_path / "onnx")["tasks"]
    assert (tasks["ner"]["axes"], tasks["intent"]["axes"]) == (["batch", "sequence", "C"], ["batch", "C"])
    assert shapes_text(done.meta) == "ner [batch, sequence, C=4] · intent [batch, C=2]"  # what pals-export prints
    # the guide's onnxruntime code (docs/using-a-run.md), as written, on the dev rows (the long one read in windows)
    guide = (Path(__file__).resolve().parents[1] / "docs" / "using-a-run.md").read_text()
    code = next(b for b in card_code(guide) if "import onnxruntime" in b)
    (tmp_path / "onnx").rename(tmp_path / "exported")
    monkeypatch.chdir(tmp_path)
    space: dict = {}
    exec(compile(code, "docs/using-a-run.md", "exec"), space)
    assert space["word_tags"]("ner", rows) == want.label
    texts = [json.loads(x)["t"] for x in (tmp_path / "data" / "intent_dev.jsonl").read_text().splitlines()]
    intent = model.predict_texts(texts, tasks=["intent"])["intent"]
    _, logits = space["predict"]("intent", texts)
    assert [space["labels"][k] for k in logits.argmax(-1)] == intent.label
    assert np.abs(logits - intent.logits).max() < 1e-4
