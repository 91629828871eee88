"""A multiple-choice task out of the model: a merged ``AutoModelForMultipleChoice`` folder (hf) and a peft adapter over
it (peft has no multiple-choice task type: a plain ``PeftModel`` holding the head in ``modules_to_save``), loaded with
transformers' and peft's own classes, give the run's logits on its dev rows for every family with a peft mapping; the
ONNX graph scores each candidate sequence as torch does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_choice import write_choice_tasks  # noqa: E402
from test_export_peft import CHECKPOINTS, trained_run  # noqa: E402
from tiny_models import save_tiny_checkpoint  # noqa: E402

from pals_core.export.cards import card_code  # noqa: E402
from pals_core.export.peft import export_hf, export_peft  # noqa: E402
from pals_core.model import MultiTaskModel  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.tasks.readers import read_columns  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")  # peft 0.21


def _swag_only(folder: Path) -> Path:
    write_choice_tasks(folder)
    f = folder / "swag.yaml"
    f.write_text("tasks:\n  swag: {train: swag_train.csv, dev: swag_dev.csv, kind: choice}\n")
    return f


def _dev(model, folder: Path):
    from pals_core.kinds import get_kind

    record = model.run.records["swag"]
    cols = read_columns(folder / "swag_dev.csv", None)
    firsts, seconds = get_kind("choice").texts(record, cols)
    return firsts[:6], seconds[:6]


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(CHECKPOINTS))
def test_a_choice_task_exports_for_multiple_choice_with_the_runs_logits(tmp_path, family, monkeypatch):
    from peft import PeftModel
    from transformers import AutoModelForMultipleChoice, AutoTokenizer

    f = _swag_only(tmp_path / "data")
    checkpoint = save_tiny_checkpoint(tmp_path / family, family, CHECKPOINTS[family])
    pooler = family in ("bert", "roberta", "mpnet")
    adapter = AdapterConfig(method="lora", d_s=4, per_task_pooler=pooler)
    model = MultiTaskModel.from_run(trained_run(tmp_path, f, str(checkpoint), adapter))
    out = tmp_path / "out"
    export_peft(model, out / "peft")
    export_hf(model, out / "hf")
    config = json.loads((out / "peft" / "swag" / "adapter_config.json").read_text())
    assert config["task_type"] is None and config["modules_to_save"]  # the head travels with the adapter
    firsts, seconds = _dev(model, tmp_path / "data")
    predicted = model.predict_texts(firsts, seconds, tasks=["swag"])["swag"]
    want = predicted.logits
    assert want.shape == (6, 4) and np.abs(want).max() > 0
    # each model card's code, run as written from another folder, gives pals-predict's probabilities: no pipeline
    # serves multiple choice, so the card calls AutoModelForMultipleChoice itself (peft: a PeftModel over it)
    monkeypatch.chdir(tmp_path)
    for card in (out / "hf" / "swag" / "README.md", out / "peft" / "swag" / "README.md"):
        text = card.read_text()
        assert "AutoModelForMultipleChoice" in text and "pipeline(" not in text
        [code] = card_code(text)
        space: dict = {}
        exec(compile(code, str(card), "exec"), space)
        got = np.asarray(space["predict"](list(zip(firsts, seconds))))
        assert got.shape == (6, 4) and np.abs(got - predicted.probs).max() < 1e-5, (
            card,
            np.abs(got - predicted.probs).max(),
        )
    tok = AutoTokenizer.from_pretrained(out / "hf" / "swag")
    flat = (sum(firsts, []), sum(seconds, []))
    enc = tok(*flat, padding=True, truncation=True, max_length=32, return_tensors="pt")
    if family in ("distilbert", "modernbert", "roberta", "mpnet", "deberta-v2"):
        enc.pop("token_type_ids", None)
    inputs = {k: v.view(6, 4, -1) for k, v in enc.items()}  # (rows, candidates, tokens), as transformers takes them
    hf = AutoModelForMultipleChoice.from_pretrained(out / "hf" / "swag").eval()
    base = AutoModelForMultipleChoice.from_pretrained(out / "peft" / "base")
    peft = PeftModel.from_pretrained(base, out / "peft" / "swag").eval()
    for name, exported in (("hf", hf), ("peft", peft)):
        with torch.no_grad():
            got = exported(**inputs).logits.numpy()
        assert got.shape == want.shape
        assert np.abs(got - want).max() < 1e-5, (name, np.abs(got - want).max())


@pytest.mark.slow
def test_a_choice_task_exports_to_onnx_scoring_each_candidate(tmp_path, capsys):
    from test_export_onnx import graph_io

    from pals_core.cli.export import main as pals_export
    from pals_core.cli.predict import main as predict_main
    from pals_core.export.onnx import read_export

    f = write_choice_tasks(tmp_path / "data")
    run = trained_run(tmp_path, f, "tiny", AdapterConfig(method="pals", d_s=24))
    capsys.readouterr()
    assert pals_export([str(run), "--format", "onnx", "--out", str(tmp_path / "onnx")]) == 0
    said = capsys.readouterr().out
    # one score per input row, each a candidate's sequence: the graph declares [batch, 1], as the summary says
    assert graph_io(tmp_path / "onnx")[1] == {"swag": ["batch", 1], "intent": ["batch", 2]}
    assert "outputs (logits): swag [batch, 1] (4 input rows a row, one score a candidate) · intent [batch, C=2]" in said
    assert float(said.split("max |Δ logit| = ")[1].split()[0]) < 1e-4
    meta = read_export(tmp_path / "onnx")
    assert meta["tasks"]["swag"]["sequences_per_row"] == 4 and meta["tasks"]["swag"]["num_labels"] == 4
    assert (meta["tasks"]["swag"]["axes"], meta["tasks"]["intent"]["axes"]) == (["batch", 1], ["batch", "C"])
    dev = tmp_path / "data" / "swag_dev.csv"
    for source, out in ((run, tmp_path / "torch.jsonl"), (tmp_path / "onnx", tmp_path / "onnx.jsonl")):
        argv = [str(source), "--input", str(dev), "--out", str(out), "--tasks", "swag", "--probs", "--no-progress"]
        assert predict_main(argv) == 0
    a, b = (
        [json.loads(x) for x in p.read_text().splitlines()] for p in (tmp_path / "torch.jsonl", tmp_path / "onnx.jsonl")
    )
    assert [r["swag"] for r in a] == [r["swag"] for r in b]
    assert max(abs(x[f"swag_prob_{j}"] - y[f"swag_prob_{j}"]) for x, y in zip(a, b) for j in range(4)) < 1e-5
