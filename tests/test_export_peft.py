"""Your model out as peft adapters and merged transformers folders (docs/design.md "Using a trained run"): tiny LoRA and
IA³ runs of several families, trained for a few steps on tasks of one's own (a classification, a regression on pairs, a
multilabel), exported with ``export_peft`` / ``export_hf`` and loaded back with nothing but transformers and peft —
``PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(DIR/base, num_labels=C), DIR/<task>)``
and ``AutoModelForSequenceClassification.from_pretrained(DIR/<task>)``, tokenised by the exported tokenizer — give
the run's own logits on its dev rows within 1e-5. Designs peft cannot express are refused, naming ONNX."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from pairwise import grid
from tiny_models import save_tiny_checkpoint, tiny_config
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
)

from pals_core.base_model import tiny_config_dict
from pals_core.export import ExportRefused
from pals_core.export.peft import export_hf, export_peft, load_settings
from pals_core.model import MultiTaskModel
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")  # peft 0.21
# initialiser scale 0.3 (BERT's 0.02 leaves a tiny random layer's sublayers, and so every adapter, all but invisible
# beside the residual stream: an export that dropped the adapter would then pass); DeBERTa with its own position
# projections (sharing them is refused: test_deberta_sharing_its_projections_with_the_relative_positions_is_refused)
CHECKPOINTS = {
    f: tiny_config(f, initializer_range=0.3, **({"share_att_key": False} if f == "deberta-v2" else {}))
    for f in ("bert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet")
}
POOLER_FAMILIES = ("bert", "roberta", "mpnet")  # a pooler in the base model: per-task poolers apply
WORDS = {"billing": ["invoice", "charge", "bill"], "refund": ["money", "back", "return"], "other": ["hello", "time"]}


def own_tasks(folder: Path) -> tuple[Path, dict]:
    """A classification (csv), a regression on pairs (jsonl) and a multilabel task (jsonl), each with a dev file; and
    the dev rows {task: (texts, second texts or None)}."""
    folder.mkdir(parents=True, exist_ok=True)
    dev = {}
    for split, n in (("train", 32), ("dev", 8)):
        intent = [
            (f"{WORDS[lab][i % len(WORDS[lab])]} please {i}", lab)
            for i, lab in ((i, list(WORDS)[i % 3]) for i in range(n))
        ]
        with open(folder / f"intent_{split}.csv", "w", newline="") as fh:
            csv.writer(fh).writerows([("message", "intent"), *intent])
        score = [{"a": f"sentence {'good ' * (i % 4)}{i}", "b": f"other {i % 5}", "y": (i % 4) + 0.5} for i in range(n)]
        tags = [
            {
                "body": f"ticket {i} {'login' if i % 2 else 'payment'} {'slow' if i % 3 else 'fine'}",
                "tags": (["login"] if i % 2 else ["payment"]) + (["slow"] if i % 3 else []),
            }
            for i in range(n)
        ]
        for name, rows in (("score", score), ("tags", tags)):
            (folder / f"{name}_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        dev = {
            "intent": ([t for t, _ in intent], None),
            "score": ([r["a"] for r in score], [r["b"] for r in score]),
            "tags": ([r["body"] for r in tags], None),
        }
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  intent: {train: intent_train.csv, dev: intent_dev.csv, text: message, label: intent}\n"
        "  score: {train: score_train.jsonl, dev: score_dev.jsonl, text: [a, b], label: y, kind: regression}\n"
        "  tags: {train: tags_train.jsonl, dev: tags_dev.jsonl, text: body, label: tags, kind: multilabel}\n"
    )
    return f, dev


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, dict]:
    return own_tasks(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict:
    """Tiny random checkpoint folders (weights + MiniLM's tokenizer), written on first use."""
    made: dict[str, str] = {}

    def get(family: str) -> str:
        if family not in made:
            made[family] = str(save_tiny_checkpoint(tmp_path_factory.mktemp(family), family, CHECKPOINTS[family]))
        return made[family]

    return get


def trained_run(root: Path, tasks_file: Path, model: str, adapter: AdapterConfig) -> Path:
    """Two steps per task (round robin) at a high learning rate: LoRA's B (zero at initialisation) and IA³'s scales
    (one) move."""
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(tasks_file),
        adapter=adapter,
        model=model,
        out=str(root / "run"),
        steps=6,
        batch_size=8,
        max_len=32,
        eval_every=6,
        lr=1e-2,
        warmup=0.0,
        sampling="round_robin",
        seed=0,
        num_threads=1,
    )
    train(cfg, progress=False)
    return root / "run"


def adapter_effect(model: MultiTaskModel, task: str, texts, pairs, logits: np.ndarray) -> float:
    """How far the task's trained adapter moves its logits: the same rows with the adapter at its identity (LoRA's
    B zero, IA³'s scales one) — an export that dropped the adapter would be this far off."""
    adapter = model.adapters[task]
    kept = {k: v.clone() for k, v in adapter.state_dict().items()}
    with torch.no_grad():
        for name, p in adapter.named_parameters():
            if model.config.method == "ia3":
                p.fill_(1.0)
            elif name.endswith("B.weight"):
                p.zero_()
    try:
        plain = model.predict_texts(texts, pairs, tasks=[task])[task].logits
    finally:
        adapter.load_state_dict(kept)
    return float(np.abs(plain - logits).max())


def hf_inputs(tokenizer, config, texts, pairs) -> dict:
    enc = tokenizer(texts, pairs, padding=True, truncation=True, max_length=32, return_tensors="pt")
    if (
        getattr(config, "type_vocab_size", 0) <= 1
    ):  # one token type (or none): a BERT tokenizer's segment ids do not apply
        enc.pop("token_type_ids", None)
    return dict(enc)


def check_run(run: Path, out: Path, dev: dict) -> None:
    """Both formats written from the run's model, loaded back with transformers / peft alone, equal its logits."""
    from peft import PeftModel

    model = MultiTaskModel.from_run(run)
    assert export_peft(model, out / "peft") == out / "peft"
    assert export_hf(model, out / "hf") == out / "hf"
    assert sorted(p.name for p in (out / "peft").iterdir()) == sorted(["base", *model.tasks])
    assert sorted(p.name for p in (out / "hf").iterdir()) == sorted(model.tasks)
    kinds = {"intent": "single_label_classification", "score": "regression", "tags": "multi_label_classification"}
    for task, (texts, pairs) in dev.items():
        want = model.predict_texts(texts, pairs, tasks=[task])[task].logits
        assert adapter_effect(model, task, texts, pairs, want) > 1e-3  # the 1e-5 comparisons below can fail
        scale = model.run.scales.get(task)
        if scale:  # a regression trained on standardised targets: the exports give z·std + mean, the task's units
            want = (want.astype(np.float64) * scale["std"] + scale["mean"]).astype(np.float32)
        hf = AutoModelForSequenceClassification.from_pretrained(out / "hf" / task).eval()
        assert hf.config.problem_type == kinds[task]
        assert list(hf.config.id2label.values()) == (list(model.run.labels[task]) or [task])
        base = AutoModelForSequenceClassification.from_pretrained(out / "peft" / "base", num_labels=model.tasks[task])
        peft = PeftModel.from_pretrained(base, out / "peft" / task).eval()
        if model.trunk.family != "modernbert":  # elsewhere one peft layer per project module: the same count
            counted = sum(p.numel() for n, p in peft.named_parameters() if ".lora_" in n or ".ia3_l." in n)
            assert counted == sum(p.numel() for p in model.adapters[task].parameters())
        for name, folder in (("peft", out / "peft" / "base"), ("hf", out / "hf" / task)):
            exported = peft if name == "peft" else hf
            inputs = hf_inputs(AutoTokenizer.from_pretrained(folder), hf.config, texts, pairs)
            with torch.no_grad():
                got = exported(**inputs).logits.numpy()
            assert got.shape == want.shape
            assert np.abs(got - want).max() < 1e-5, (name, task, np.abs(got - want).max())


# --- one LoRA run of BERT, one IA³ run of RoBERTa (slow: a training and two exports each, ~6 s) -----------------


@pytest.mark.slow
def test_lora_on_bert_top_layers_exports_to_peft_and_hf_with_the_runs_logits(data, checkpoints, tmp_path):
    f, dev = data
    run = trained_run(
        tmp_path, f, checkpoints("bert"), AdapterConfig(method="lora", d_s=4, location="top", lora_alpha=8)
    )
    check_run(run, tmp_path / "out", dev)
    config = json.loads((tmp_path / "out" / "peft" / "intent" / "adapter_config.json").read_text())
    assert (config["peft_type"], config["r"], config["lora_alpha"], config["task_type"]) == ("LORA", 4, 8, "SEQ_CLS")
    assert config["target_modules"] == r"bert\.encoder\.layer\.(1)\.(attention\.self\.query|attention\.self\.value)"
    assert (tmp_path / "out" / "peft" / "base" / "model.safetensors").is_file()
    assert (tmp_path / "out" / "peft" / "intent" / "adapter_model.safetensors").is_file()


@pytest.mark.slow
def test_ia3_on_roberta_with_per_task_poolers_exports_to_peft_and_hf_with_the_runs_logits(data, checkpoints, tmp_path):
    f, dev = data
    run = trained_run(tmp_path, f, checkpoints("roberta"), AdapterConfig(method="ia3", per_task_pooler=True))
    check_run(run, tmp_path / "out", dev)
    config = json.loads((tmp_path / "out" / "peft" / "tags" / "adapter_config.json").read_text())
    assert config["peft_type"] == "IA3" and "classifier" in config["modules_to_save"]
    assert config["feedforward_modules"] == r"roberta\.encoder\.layer\.(0|1)\.(output\.dense)"


def test_designs_peft_cannot_express_are_refused_naming_onnx(tmp_path):
    for adapter in (
        AdapterConfig(method="pals", d_s=8, heads=2),
        AdapterConfig(method="houlsby", d_s=4),
        AdapterConfig(method="shared"),
    ):
        model = MultiTaskModel.from_base_config(tiny_config_dict(), adapter, {"a": 2})
        for export in (export_peft, export_hf):
            with pytest.raises(ExportRefused, match="--format onnx") as err:
                export(model, tmp_path / "out")
            assert "\n" not in str(err.value) and adapter.method in str(err.value)
    assert not (tmp_path / "out").exists()


def test_deberta_sharing_its_projections_with_the_relative_positions_is_refused(tmp_path):
    shared = dict(CHECKPOINTS["deberta-v2"], model_type="deberta-v2", share_att_key=True)
    for method, d_s, proj in (("lora", 4, "query_proj"), ("ia3", None, "key_proj")):
        model = MultiTaskModel.from_base_config(shared, AdapterConfig(method=method, d_s=d_s), {"a": 2})
        with pytest.raises(ExportRefused, match=f"{proj}.*--format onnx"):
            export_hf(model, tmp_path / "out")


def test_a_model_that_is_not_a_runs_is_refused_in_one_line(tmp_path):
    model = MultiTaskModel.from_base_config(tiny_config_dict(), AdapterConfig(method="lora", d_s=4), {"a": 2})
    with pytest.raises(ValueError, match="from_run"):
        export_peft(model, tmp_path / "out")


# --- slow: every family, both methods, locations and per-task poolers, pairwise ----------------------------------

FAMILIES = tuple(CHECKPOINTS)
FAST = {("bert", "lora", "top", False, False), ("roberta", "ia3", "all", True, False)}  # the fast tests' cases
CASES = [
    (family, method, location, pooler, freeze)
    for family in FAMILIES
    for method in ("lora", "ia3")
    for location in ("all", "top", "bottom", "0,1")
    for pooler in (False, True)
    for freeze in (False, True)
    if not (pooler and family not in POOLER_FAMILIES) and (family, method, location, pooler, freeze) not in FAST
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "family,method,location,pooler,freeze", grid(CASES, skip={(0, 2), (0, 4)})
)  # placement and freezing: family-blind
def test_every_family_exports_lora_and_ia3_with_the_runs_logits(
    data, checkpoints, tmp_path, family, method, location, pooler, freeze
):
    f, dev = data
    adapter = AdapterConfig(
        method=method,
        d_s=4 if method == "lora" else None,
        location=location,
        per_task_pooler=pooler,
        freeze_trunk=freeze,
    )
    check_run(trained_run(tmp_path, f, checkpoints(family), adapter), tmp_path / "out", dev)


# --- a tagging task: TOKEN_CLS adapters and AutoModelForTokenClassification folders ------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("family,method", [("bert", "lora"), ("modernbert", "lora"), ("distilbert", "ia3")])
def test_a_tagging_task_exports_for_token_classification_with_the_runs_logits(
    checkpoints, tmp_path, family, method, monkeypatch
):
    from peft import AutoPeftModelForTokenClassification, PeftModel
    from test_tokens_predict import write_tasks
    from transformers import AutoModelForTokenClassification

    f = write_tasks(tmp_path / "data")
    adapter = AdapterConfig(method=method, d_s=4 if method == "lora" else None)
    model = MultiTaskModel.from_run(trained_run(tmp_path, f, checkpoints(family), adapter))
    out = tmp_path / "out"
    export_peft(model, out / "peft")
    export_hf(model, out / "hf")
    config = json.loads((out / "peft" / "ner" / "adapter_config.json").read_text())
    assert config["task_type"] == "TOKEN_CLS"
    words = [json.loads(x)["words"] for x in (tmp_path / "data" / "ner_dev.jsonl").read_text().splitlines()][:6]
    tok = AutoTokenizer.from_pretrained(out / "hf" / "ner")
    enc = tok(words, is_split_into_words=True, padding=True, truncation=True, max_length=32, return_tensors="pt")
    if family == "distilbert" or family == "modernbert":
        enc.pop("token_type_ids", None)
    with torch.no_grad():
        want = model(task="ner", **dict(enc)).numpy()
    keep = enc["attention_mask"].bool().numpy()
    assert want.shape[-1] == 4 and np.abs(want).max() > 0
    hf = AutoModelForTokenClassification.from_pretrained(out / "hf" / "ner").eval()
    assert list(hf.config.id2label.values()) == list(model.run.labels["ner"])
    settings = load_settings(model, "ner")  # the tags: the base has no head of its own
    base = AutoModelForTokenClassification.from_pretrained(out / "peft" / "base", **settings)
    peft = PeftModel.from_pretrained(base, out / "peft" / "ner").eval()
    monkeypatch.chdir(tmp_path)  # the adapter names its base by a path that loads from any working directory
    auto = AutoPeftModelForTokenClassification.from_pretrained(out / "peft" / "ner", **settings).eval()
    for name, exported in (("hf", hf), ("peft", peft), ("auto", auto)):
        with torch.no_grad():
            got = exported(**dict(enc)).logits.numpy()
        assert got.shape == want.shape
        assert np.abs(got - want)[keep].max() < 1e-5, (name, np.abs(got - want)[keep].max())
