"""Every export loads anywhere, as the tools that read it document: an export folder is moved away from where it was
written, then loaded with onnxruntime, peft or transformers alone — CA-MTL's graph at sequence lengths past its
attention bias's width (and past the run's max length), peft adapters on the export's own copy of the base for tasks
of any label count, tokenizers whose defaults cut rows at the run's max length — and gives the run's logits. A design peft cannot express is refused with the reason, and a run still
training is exported saying so, naming the checkpoint step it took."""

# ruff: noqa: F811  (pytest fixtures imported from other test modules are parameters here)
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from test_export_onnx import trained_run as onnx_run
from test_export_peft import checkpoints, data, trained_run  # noqa: F401  (module fixtures)
from tiny_models import TINY_CONFIGS, save_tiny_checkpoint

from pals_core.cli.export import main as pals_export
from pals_core.export import ExportRefused
from pals_core.export.peft import export_hf, export_peft, load_settings
from pals_core.model import MultiTaskModel
from pals_core.pricing.config import AdapterConfig
from pals_core.train.lock import RunLock

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")  # peft 0.21
LONG = " ".join(f"word{i % 7} refund money" for i in range(40))  # well past the runs' 32 tokens


@pytest.fixture(scope="module")
def lora_run(data, checkpoints, tmp_path_factory) -> Path:
    """LoRA on BERT with the trunk fine-tuned: three tasks of 3, 1 and 3 outputs (classification, regression on
    pairs, multilabel)."""
    f, _ = data
    root = tmp_path_factory.mktemp("lora")
    return trained_run(root, f, checkpoints("bert"), AdapterConfig(method="lora", d_s=4, freeze_trunk=False))


def _moved(folder: Path, tmp_path: Path) -> Path:
    away = tmp_path / "elsewhere" / "export"
    away.parent.mkdir(parents=True)
    shutil.move(str(folder), str(away))
    return away


@pytest.mark.slow
def test_peft_adapters_load_from_a_moved_folder_for_any_label_count(lora_run, data, tmp_path, monkeypatch):
    """A fine-tuned trunk's adapters name the export's copy of it (``DIR/base``); moved, each loads with ``PeftModel``
    on the moved base, its head built by ``load_settings`` whatever its label count, and gives the run's logits on
    rows its tokenizer's defaults cut at the run's max length."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    _, dev = data
    model = MultiTaskModel.from_run(lora_run)
    away = _moved(export_peft(model, tmp_path / "peft"), tmp_path)
    monkeypatch.chdir(tmp_path)
    for task, (texts, pairs) in dev.items():
        texts = [LONG, *texts]  # one row the run's tokenizer cuts at its max length
        pairs = None if pairs is None else [LONG, *pairs]
        want = model.predict_texts(texts, pairs, tasks=[task])[task].logits
        scale = model.run.scales.get(task)  # a regression head is exported in the user's units
        want = want if scale is None else want * scale["std"] + scale["mean"]
        base = AutoModelForSequenceClassification.from_pretrained(away / "base", **load_settings(model, task))
        loaded = PeftModel.from_pretrained(base, away / task).eval()
        tokenizer = AutoTokenizer.from_pretrained(away / task)
        assert tokenizer.model_max_length == model.run.max_len
        assert loaded.config.num_labels == model.tasks[task]
        assert list(loaded.config.id2label.values()) == (list(model.run.labels[task]) or [task])
        inputs = tokenizer(texts, pairs, padding=True, truncation=True, return_tensors="pt")  # its defaults
        with torch.no_grad():
            got = loaded(**inputs).logits.numpy()
        assert got.shape == want.shape and np.abs(got - want).max() < 1e-5, (task, np.abs(got - want).max())
        card = (away / task / "README.md").read_text()
        assert "fine-tuned it" in card and "base_model:" not in card.split("---")[1]


@pytest.mark.slow
def test_merged_folders_cut_rows_at_the_runs_max_length_by_default(lora_run, tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = MultiTaskModel.from_run(lora_run)
    away = _moved(export_hf(model, tmp_path / "hf"), tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(away / "intent")
    assert tokenizer.model_max_length == model.run.max_len == 32
    ids = tokenizer([LONG], truncation=True, return_tensors="pt")
    assert ids["input_ids"].shape[1] == 32
    merged = AutoModelForSequenceClassification.from_pretrained(away / "intent").eval()
    with torch.no_grad():
        got = merged(**ids).logits.numpy()
    want = model.predict_texts([LONG], tasks=["intent"])["intent"].logits
    assert np.abs(got - want).max() < 1e-5


@pytest.mark.slow
def test_ca_mtl_graph_runs_past_its_attention_bias_width_and_the_runs_max_length(data, checkpoints, tmp_path):
    """A run of max length 24 whose conditional attention bias is 32 wide (the trace sees only rows narrower than
    it): onnxruntime on a moved export gives torch's logits at 12, 32, 40 and 100 tokens."""
    import onnxruntime as ort
    from test_export_onnx import own_tasks
    from transformers import AutoTokenizer

    f = own_tasks(tmp_path / "data")
    path = tmp_path / "ck"
    save_tiny_checkpoint(path, "distilbert")

    adapter = AdapterConfig(method="ca_mtl", d_s=4, cond_attn_max_len=32, cond_attn_blocks=2)
    run = onnx_run(tmp_path / "run", f, str(path), adapter)
    model = MultiTaskModel.from_run(run)
    assert pals_export([str(run), "--format", "onnx", "--out", str(tmp_path / "onnx")]) == 0
    away = _moved(tmp_path / "onnx", tmp_path)
    assert AutoTokenizer.from_pretrained(away).model_max_length == model.run.max_len == 24
    session = ort.InferenceSession(str(away / "model.onnx"), providers=["CPUExecutionProvider"])
    wanted = [i.name for i in session.get_inputs()]
    g = torch.Generator().manual_seed(0)
    for n in (12, 32, 40, 100):
        ids = torch.randint(1000, 2000, (2, n), generator=g)
        mask = torch.ones_like(ids)
        mask[1, n // 2 :] = 0
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
        got = session.run(None, {k: v.numpy() for k, v in feed.items() if k in wanted})
        names = [o.name for o in session.get_outputs()]
        with torch.no_grad():
            want = model.predict_all(ids, mask, torch.zeros_like(ids))
        for name, out in zip(names, got):
            assert np.abs(out - want[name].numpy()).max() < 1e-4, (n, name)


def test_albert_is_refused_for_peft_with_the_reason(tmp_path):
    albert = dict(TINY_CONFIGS["albert"], model_type="albert")
    model = MultiTaskModel.from_base_config(albert, AdapterConfig(method="lora", d_s=4), {"a": 2})
    with pytest.raises(ExportRefused) as err:
        export_peft(model, tmp_path / "out")
    message = str(err.value)
    assert "one set of layer weights at every layer" in message and "--format onnx" in message
    assert "\n" not in message and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_exporting_a_run_still_training_says_so_and_names_the_step(lora_run, tmp_path, capsys):
    running = tmp_path / "running"
    shutil.copytree(lora_run, running)
    (running / "summary.json").unlink()
    progress = json.loads((running / "progress.json").read_text())
    progress.update(status="running", step=4, total=60)
    (running / "progress.json").write_text(json.dumps(progress))
    step = json.loads((running / "checkpoints" / "best.json").read_text())["step"]
    with RunLock(running):  # a trainer holds the folder
        assert pals_export([str(running), "--format", "hf", "--out", str(tmp_path / "hf")]) == 0
    said = capsys.readouterr()
    for text in (said.err, said.out):
        assert "is still training (at step 4 of 60" in text
        assert f"exported its best checkpoint so far, step {step}" in text
