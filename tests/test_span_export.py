"""A span task's exports load with the ecosystem's own classes and answer as pals-predict: the merged (hf) folder is an
``AutoModelForQuestionAnswering``, the peft folder a ``QUESTION_ANS`` adapter with its head in ``modules_to_save``;
each folder's model card gives the code (transformers 5 has no question-answering pipeline: the question-answering
example's decoding on the tokenizer's own windows) that, run as written from another working directory, gives
pals-predict's answers, characters and probabilities on the dev file; the ONNX graph, served by pals-predict, gives
the run's answers."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_span_training import write_span_tasks  # noqa: E402
from test_task_training import run_config  # noqa: E402

from pals_core.cli.export import main as pals_export  # noqa: E402
from pals_core.cli.predict import main as pals_predict  # noqa: E402
from pals_core.export.cards import card_code  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.train.trainer import train  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")  # peft 0.21


@pytest.fixture(scope="module")
def span_run(tmp_path_factory):
    """A LoRA run (frozen trunk: peft can hold it) of a span task beside a sentence task, and pals-predict's answers
    on the span task's dev file."""
    tmp = tmp_path_factory.mktemp("span_export")
    f = write_span_tasks(tmp / "data", n_train=32, n_dev=8, unanswerable=False)  # answers: spans of the context
    cfg = run_config(
        tmp / "run", tasks=[], tasks_file=str(f), steps=12, eval_every=12, max_len=32, lr=3e-3, batch_size=8
    )
    train(_lora(cfg), progress=False)
    out = tmp / "pred.jsonl"
    args = [str(tmp / "run"), "--input", str(tmp / "data" / "qa_dev.jsonl"), "--out", str(out), "--tasks", "qa"]
    assert pals_predict([*args, "--no-progress"]) == 0
    return tmp, [json.loads(line) for line in out.read_text().splitlines()]


def _lora(cfg):
    from dataclasses import replace

    return replace(cfg, adapter=AdapterConfig(method="lora", d_s=4))


@contextlib.contextmanager
def _elsewhere():
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as other:
        os.chdir(other)
        try:
            yield
        finally:
            os.chdir(here)


@pytest.mark.parametrize("fmt", ["hf", "peft"])
def test_each_cards_code_answers_as_pals_predict(span_run, fmt):
    tmp, predicted = span_run
    assert pals_export([str(tmp / "run"), "--format", fmt, "--out", str(tmp / fmt)]) == 0
    card = (tmp / fmt / "qa" / "README.md").read_text()
    assert "pipeline_tag: question-answering" in card
    blocks = card_code(card)
    assert len(blocks) == (1 if fmt == "hf" else 2)  # peft: from its folder, and offline on ../base
    config = json.loads((tmp / fmt / ("qa" if fmt == "hf" else "base") / "config.json").read_text())
    if fmt == "hf":
        assert config["architectures"] == ["BertForQuestionAnswering"]
    else:
        adapter = json.loads((tmp / fmt / "qa" / "adapter_config.json").read_text())
        assert adapter["task_type"] == "QUESTION_ANS" and adapter["modules_to_save"] == ["qa_outputs"]
    for block in blocks:
        space: dict = {}
        with _elsewhere():
            exec(compile(block, "README.md", "exec"), space)
            got = [space["answer"](p["question"], p["context"]) for p in predicted]
        assert [g[:3] for g in got] == [(p["qa"], p["qa_start"], p["qa_end"]) for p in predicted]
        assert [g[3] for g in got] == pytest.approx([p["qa_prob"] for p in predicted], rel=1e-4)
    assert all(p["context"][p["qa_start"] : p["qa_end"]] == p["qa"] != "" for p in predicted)


def test_the_onnx_export_answers_as_the_run(span_run):
    """One graph, a span task's logits per token ([batch, sequence, C=2]); pals-predict on the export reads the
    questions in the same windows and gives the run's answers."""
    tmp, predicted = span_run
    assert pals_export([str(tmp / "run"), "--format", "onnx", "--out", str(tmp / "onnx")]) == 0
    meta = json.loads((tmp / "onnx" / "export.json").read_text())
    assert meta["tasks"]["qa"]["axes"] == ["batch", "sequence", "C"]
    out = tmp / "onnx_pred.jsonl"
    args = [str(tmp / "onnx"), "--input", str(tmp / "data" / "qa_dev.jsonl"), "--out", str(out), "--tasks", "qa"]
    assert pals_predict([*args, "--no-progress"]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["qa"], g["qa_start"], g["qa_end"]) for g in got] == [
        (p["qa"], p["qa_start"], p["qa_end"]) for p in predicted
    ]
    assert [g["qa_prob"] for g in got] == pytest.approx([p["qa_prob"] for p in predicted], rel=1e-4)
