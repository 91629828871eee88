"""Every family trains, predicts, saves and resumes: a tiny random checkpoint of each family,
written to disk with the embedded MiniLM tokenizer (vocabulary 30522) — nothing downloaded — goes through
``MultiTaskModel.from_pretrained`` and the trainer (``pals-train --model PATH``) on real GLUE rows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from tiny_models import TINY_CONFIGS, save_tiny_checkpoint
from transformers import AutoTokenizer

from pals_core.adapters.base import TaskAdapter
from pals_core.base_model import model_shape
from pals_core.budget.costs import design
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.model import MultiTaskBert, MultiTaskModel
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig

GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
pytestmark = pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")
torch.set_num_threads(1)

TINY = TINY_CONFIGS  # every family, xlm-roberta beside roberta


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    return {model_type: save_tiny_checkpoint(tmp_path_factory.mktemp(model_type), model_type) for model_type in TINY}


@pytest.fixture(scope="session")
def cache_dir(token_cache) -> str:
    return token_cache


def _batch(path: Path) -> dict:
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    enc = tok(
        ["a short one", "the second sentence is longer than the first"],
        ["pair", "another pair"],
        padding=True,
        return_tensors="pt",
    )
    return dict(enc)


@pytest.mark.parametrize("model_type", list(TINY))
def test_the_hooked_trunk_at_identity_is_the_hf_model(checkpoints, model_type):
    model = MultiTaskModel.from_pretrained(checkpoints[model_type], AdapterConfig(method="shared"), {"rte": 2})
    batch = _batch(checkpoints[model_type])
    with torch.no_grad():
        h, state = model._embed(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
        hooked = model.trunk.finish(
            model.trunk.run(0, model.shape.layers, h, state, TaskAdapter(range(model.shape.layers)))
        )
        kwargs = {
            k: v for k, v in batch.items() if k != "token_type_ids" or model.family in ("bert", "electra", "albert")
        }
        reference = model.bert(**kwargs).last_hidden_state
    assert torch.equal(hooked, reference)


@pytest.mark.parametrize("model_type", list(TINY))
def test_predict_all_and_task_files_on_every_family(checkpoints, model_type, tmp_path):
    path = checkpoints[model_type]
    cfg = AdapterConfig(method="low_rank", d_s=4, location="top")
    torch.manual_seed(1)
    model = MultiTaskModel.from_pretrained(path, cfg, {"rte": 2, "stsb": 1})
    for p in model.adapters.parameters():
        torch.nn.init.normal_(p, std=0.1)  # leave the identity so the check means something
    batch = _batch(path)
    with torch.no_grad():
        every = model.predict_all(**batch)
        for task in ("rte", "stsb"):
            assert torch.allclose(every[task], model(task=task, **batch), atol=1e-6)
    model.save_task("rte", tmp_path / "rte.safetensors")
    other = MultiTaskBert.from_pretrained(path, cfg, {"stsb": 1})
    assert other.load_task(tmp_path / "rte.safetensors") == "rte"
    with torch.no_grad():
        assert torch.equal(other(task="rte", **batch), model(task="rte", **batch))


@pytest.mark.slow  # three tiny trainings per family; each family's forward, predict_all and task files run above always
@pytest.mark.parametrize("model_type", list(TINY))
def test_pals_train_on_a_local_checkpoint_of_every_family_and_resume(checkpoints, model_type, tmp_path, cache_dir):
    from pals_core.train.trainer import train

    path = checkpoints[model_type]
    adapter = AdapterConfig(method="pals", d_s=4, heads=2)
    base = dict(
        tasks=["rte", "stsb"],
        adapter=adapter,
        model=str(path),
        glue_dir=str(GLUE),
        out=str(tmp_path / "run"),
        steps=6,
        batch_size=4,
        max_len=32,
        eval_every=3,
        save_every=3,
        lr=1e-3,
        max_train_examples=16,
        max_eval_examples=8,
        seed=3,
        num_threads=1,
        cache_dir=cache_dir,
    )

    class Stop(Exception):
        pass

    def stop(step, scores, average):
        if step == 3:
            raise Stop

    with pytest.raises(Stop):
        train(TrainConfig(**base), progress=False, on_eval=stop)
    resumed = train(TrainConfig(**base), progress=False, resume=True)
    whole = train(TrainConfig(**{**base, "out": str(tmp_path / "whole")}), progress=False)
    cost = at_size(design(model_shape(str(path)), parse_tasks({"rte": 2, "stsb": 1}), adapter), 4)
    assert resumed["params"]["total"] == cost.params_total == whole["params"]["total"]
    assert resumed["scores"] == whole["scores"] and resumed["steps"] == whole["steps"] == 6
    assert json.loads((tmp_path / "run" / "config.json").read_text())["model"] == str(path)


def test_pals_train_takes_a_ratio_of_the_non_embedding_parameters(checkpoints, tmp_path):
    """--budget-of is a budget setting: pals-train reads it where it reads --budget and solves d_s against it."""
    from pals_core.budget.costs import design
    from pals_core.budget.solver import Budget, solve
    from pals_core.train.args import build_parser, config_from_args
    from pals_core.train.params import resolve

    path = str(checkpoints["xlm-roberta"])
    argv = [
        "--model",
        path,
        "--tasks",
        "rte,stsb",
        "--method",
        "low_rank",
        "--budget",
        "1.5",
        "--budget-of",
        "non-embedding",
        "--out",
        str(tmp_path / "run"),
        "--glue-dir",
        str(GLUE),
    ]
    cfg, _ = config_from_args(vars(build_parser().parse_args(argv)))
    assert cfg.budget == Budget(ratio=1.5, of="non-embedding")
    resolved = resolve(cfg)
    probe = design(
        model_shape(path), parse_tasks({"rte": 2, "stsb": 1}), AdapterConfig(method="low_rank"), check_size=False
    )
    assert resolved.adapter.d_s == solve(probe, cfg.budget).d_s < solve(probe, Budget(ratio=1.5)).d_s
