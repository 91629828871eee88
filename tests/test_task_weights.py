"""One task's adapter + head (+ pooler) saved alone and attached to a shared trunk."""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors import safe_open
from transformers import BertConfig

from pals_core.budget.costs import design
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import from_hf_config
from pals_core.model import MultiTaskBert
from pals_core.pricing.config import AdapterConfig
from pals_core.task_weights import read_task_file, task_tensors

torch.set_num_threads(1)
TINY = BertConfig(
    hidden_size=24,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=40,
    vocab_size=60,
    max_position_embeddings=32,
)


def _trained(cfg: AdapterConfig, tasks: dict, seed: int) -> MultiTaskBert:
    torch.manual_seed(seed)
    model = MultiTaskBert.from_base_config(TINY, cfg, tasks).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.startswith("bert."):
                p.add_(torch.randn(p.shape, generator=gen) * 0.1)
    return model


@pytest.mark.parametrize(
    "cfg",
    [
        AdapterConfig(method="pals", d_s=8, heads=4, per_task_pooler=True),
        AdapterConfig(method="lora", d_s=3, location=[0, 2], lora_alpha=6),
        AdapterConfig(method="proj_attn_top", d_s=8, heads=2, n_top=2),
        AdapterConfig(method="bert_layer_top"),
        AdapterConfig(method="ia3", location=[1, 2]),
    ],
    ids=["pals-pooler", "lora", "proj_attn_top", "bert_layer_top", "ia3"],
)
def test_a_saved_task_attaches_to_a_shared_trunk(cfg, tmp_path):
    source = _trained(cfg, {"rte": 2, "stsb": 1}, seed=0)
    path = tmp_path / "stsb.safetensors"
    source.save_task("stsb", path)
    assert [p.name for p in tmp_path.iterdir()] == ["stsb.safetensors"]  # no temp file left behind

    info = read_task_file(path)
    assert (info.task, info.num_labels, info.config) == ("stsb", 1, cfg)
    with safe_open(str(path), framework="pt") as f:
        stored = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
        meta = f.metadata()
    assert json.loads(meta["adapter_config"])["method"] == cfg.method and meta["num_labels"] == "1"
    cost = at_size(design(from_hf_config(TINY.to_dict()), parse_tasks({"rte": 2, "stsb": 1}), cfg), cfg.d_s)
    assert stored == cost.params_per_task[1]  # adapter + head (+ pooler) of one task, nothing of the trunk

    # a model holding only the shared trunk (another seed for everything task-specific) gets the task
    target = _trained(cfg, {"rte": 2}, seed=1)
    target.bert.load_state_dict(source.bert.state_dict())
    assert target.load_task(path) == "stsb" and target.tasks == {"rte": 2, "stsb": 1}
    ids = torch.randint(0, 60, (3, 7))
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0
    with torch.no_grad():
        assert torch.equal(
            target(task="stsb", input_ids=ids, attention_mask=mask),
            source(task="stsb", input_ids=ids, attention_mask=mask),
        )
        # under another name, and replacing an existing task's weights
        assert target.load_task(path, task="sts_copy") == "sts_copy"
        assert torch.equal(target(task="sts_copy", input_ids=ids), source(task="stsb", input_ids=ids))


def test_a_task_file_of_another_design_is_refused_and_changes_nothing(tmp_path):
    source = _trained(AdapterConfig(method="pals", d_s=8, heads=4), {"rte": 2}, seed=0)
    source.save_task("rte", tmp_path / "rte.safetensors")
    for cfg in (
        AdapterConfig(method="pals", d_s=12, heads=4),
        AdapterConfig(method="pals", d_s=8, heads=4, location="top"),
        AdapterConfig(method="low_rank", d_s=8),
    ):
        other = MultiTaskBert.from_base_config(TINY, cfg, {"cola": 2})
        with pytest.raises(ValueError, match="another design"):
            other.load_task(tmp_path / "rte.safetensors")
        assert other.tasks == {"cola": 2} and list(other.adapters) == ["cola"]
    wider = MultiTaskBert.from_base_config(
        BertConfig(hidden_size=28, num_hidden_layers=3, num_attention_heads=4, intermediate_size=40, vocab_size=60),
        AdapterConfig(method="pals", d_s=8, heads=4),
        {"cola": 2},
    )
    with pytest.raises(ValueError, match="trunk of shape"):
        wider.load_task(tmp_path / "rte.safetensors")
    same = MultiTaskBert.from_base_config(TINY, AdapterConfig(method="pals", d_s=8, heads=4), {"rte": 3})
    with pytest.raises(ValueError, match="3 labels in the model, 2 in the file"):
        same.load_task(tmp_path / "rte.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="not a safetensors file"):
        same.load_task(tmp_path / "junk.safetensors")


def test_a_pals_204_task_on_bert_base_is_1_8m_parameters():
    """The paper's budget: the file of one PALs task on BERT-base holds ~1.8M parameters, the trunk 110M
    (counted on the meta device: nothing is allocated)."""
    with torch.device("meta"):
        model = MultiTaskBert.from_base_config(
            BertConfig(), AdapterConfig(method="pals", d_s=204), {"rte": 2, "stsb": 1}
        )
    one_task = sum(t.numel() for t in task_tensors(model, "rte").values())
    trunk = sum(p.numel() for p in model.bert.parameters())
    assert trunk == 109_482_240
    assert one_task == 2 * 768 * 204 + 204 + 768 + 12 * 3 * (204 * 204 + 204) + 768 * 2 + 2 == 1_821_374
    assert set(task_tensors(model, "rte")) == {
        k for k in task_tensors(model, "rte") if k.startswith(("adapter.", "head."))
    }
