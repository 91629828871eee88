"""MultiTaskBert on the real MiniLM weights and small random configs: identity at initialisation,
shared-operations inference, freezing, bad configurations, bf16."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from pals_core.budget.costs import design, pooler_params
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import from_hf_config
from pals_core.model import MultiTaskBert, default_checkpoint
from pals_core.pricing.config import AdapterConfig

torch.set_num_threads(2)

TINY = dict(
    hidden_size=24,
    num_hidden_layers=4,
    num_attention_heads=4,
    intermediate_size=40,
    vocab_size=60,
    max_position_embeddings=32,
)
IDENTITY_METHODS = [
    ("shared", None),
    ("pals", 48),
    ("pals_unshared", 24),
    ("low_rank", 20),
    ("houlsby", 20),
    ("lora", 8),
    ("lhuc", None),
    ("ia3", None),
    ("proj_attn_top", 48),
    ("proj_ffn_top", 30),
]
# the settings under which each starts as the identity: the released PALs / low-rank GELU keeps it (GELU(0) = 0, and
# so does the paper's form); projected attention on top only with the residual (the released code replaces H)
IDENTITY_SETTINGS = {"proj_attn_top": dict(proj_attn_top_residual=True)}


def _rte_rows(glue_dir, k: int = 4) -> list[tuple[str, str]]:
    with open(glue_dir / "RTE" / "dev.tsv", encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        return [(r[1], r[2]) for _, r in zip(range(k), reader)]


@pytest.fixture(scope="module")
def minilm_batch(glue_dir):
    """Four real RTE dev pairs, tokenised and padded to different lengths (so the mask matters)."""
    tok = AutoTokenizer.from_pretrained(default_checkpoint())
    a, b = zip(*_rte_rows(glue_dir))
    return dict(tok(list(a), list(b), padding=True, truncation=True, max_length=96, return_tensors="pt"))


@pytest.fixture(scope="module")
def minilm_hidden(minilm_batch):
    base = BertModel.from_pretrained(default_checkpoint()).eval()
    with torch.no_grad():
        return base(**minilm_batch).last_hidden_state


def _perturb(model: MultiTaskBert, seed: int = 0) -> None:
    """Give every task-specific weight a random value (at initialisation the adapters are the identity)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(("adapters.", "heads.", "poolers.")):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)


@pytest.mark.parametrize("method,d_s", IDENTITY_METHODS, ids=[m for m, _ in IDENTITY_METHODS])
def test_adapters_start_as_the_identity_on_minilm(method, d_s, minilm_batch, minilm_hidden):
    model = MultiTaskBert.from_pretrained(
        None, AdapterConfig(method=method, d_s=d_s, **IDENTITY_SETTINGS.get(method, {})), {"rte": 2}
    ).eval()
    assert minilm_batch["attention_mask"].min() == 0  # padding present
    with torch.no_grad():
        hidden = model.encode("rte", **minilm_batch)
    assert torch.equal(hidden, minilm_hidden)  # bit for bit: V^D, U, B zero, LHUC 2σ(0) = 1, IA³ 1, top residual 0


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_adapted_layer_with_every_hook_at_identity_is_bert_layer(attn):
    """The encoder's copy of BertLayer.forward, with a TaskAdapter whose hooks are all at their defaults, computes
    bit for bit what the plain transformers BertLayer computes (padding present, so the mask matters)."""
    from pals_core.adapters.base import TaskAdapter
    from pals_core.families.trunks import trunk_for

    torch.manual_seed(0)
    trunk = BertModel(BertConfig(**TINY, attn_implementation=attn), add_pooling_layer=False).eval()
    ids = torch.randint(0, 60, (3, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    with torch.no_grad():
        family = trunk_for(trunk)
        h = family.embed(ids, mask, None)
        state = family.prepare(h, mask)
        plain = family.run(0, 4, h, state, None)
        hooked = family.run(0, 4, h, state, TaskAdapter(range(4)))
        assert torch.equal(hooked, plain)
        assert torch.equal(plain, trunk(input_ids=ids, attention_mask=mask).last_hidden_state)


def test_bert_layer_on_top_copied_starts_as_the_last_pretrained_layer():
    model = MultiTaskBert.from_pretrained(
        None, AdapterConfig(method="bert_layer_top", bert_layer_top_init="copy"), {"rte": 2, "stsb": 1}
    )
    last = model.bert.encoder.layer[-1].state_dict()
    for task in ("rte", "stsb"):
        top = model.adapters[task].layer.state_dict()
        assert top.keys() == last.keys() and all(torch.equal(top[k], last[k]) for k in last)
        assert (
            model.adapters[task].layer.attention.self.query.weight.data_ptr()
            != last["attention.self.query.weight"].data_ptr()
        )


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_predict_all_on_minilm_equals_separate_passes(minilm_batch):
    tasks = {"rte": 2, "stsb": 1, "mnli": 3}
    for cfg in (AdapterConfig(method="pals", d_s=48, location="top"), AdapterConfig(method="proj_attn_top", d_s=48)):
        model = MultiTaskBert.from_pretrained(None, cfg, tasks).eval()
        _perturb(model)
        with torch.no_grad():
            together = model.predict_all(**minilm_batch)
            for task, c in tasks.items():
                alone = model(task=task, **minilm_batch)
                assert alone.shape == (4, c)
                assert torch.equal(together[task], alone)
        assert model.shared_depth == (3 if cfg.method == "pals" else 6)


@pytest.mark.parametrize(
    "method,d_s,location",
    [
        ("shared", None, None),
        ("pals", 8, [1, 3]),
        ("pals_unshared", 4, "bottom"),
        ("low_rank", 5, "top"),
        ("houlsby", 3, [2]),
        ("lora", 6, "all"),
        ("lhuc", None, [1, 2]),
        ("ia3", None, "top"),
        ("proj_ffn_top", 7, None),
        ("bert_layer_top", None, None),
    ],
)
@pytest.mark.parametrize("pooler", [False, True])
def test_predict_all_equals_separate_passes(method, d_s, location, pooler):
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(
        BertConfig(**TINY),
        AdapterConfig(method=method, d_s=d_s, location=location, heads=4, per_task_pooler=pooler),
        {"rte": 2, "stsb": 1, "cola": 2},
    ).eval()
    _perturb(model)
    ids = torch.randint(0, 60, (3, 9))
    mask = torch.ones_like(ids)
    mask[0, 5:] = 0
    types = torch.zeros_like(ids)
    types[:, 4:] = 1
    with torch.no_grad():
        together = model.predict_all(input_ids=ids, attention_mask=mask, token_type_ids=types)
        assert list(together) == ["rte", "stsb", "cola"]
        for task in model.tasks:
            assert torch.equal(
                together[task], model(task=task, input_ids=ids, attention_mask=mask, token_type_ids=types)
            )
        assert not torch.equal(together["rte"], together["cola"])
        assert list(model.predict_all(input_ids=ids, tasks=["stsb"])) == ["stsb"]


def test_public_attributes_and_output_shapes():
    cfg = AdapterConfig(method="pals", d_s=8, heads=4)
    model = MultiTaskBert.from_base_config(BertConfig(**TINY), cfg, {"rte": 2, "stsb": 1})
    assert model.tasks == {"rte": 2, "stsb": 1}
    assert model.config is cfg and model.base_config.hidden_size == 24
    assert not any(m.training for m in model.modules())  # eval mode, as transformers' from_pretrained
    ids = torch.randint(0, 60, (5, 7))
    assert model(task="rte", input_ids=ids).shape == (5, 2)
    assert model(task="stsb", input_ids=ids).shape == (5, 1)  # regression: one score
    model.add_task("mnli", 3)
    assert model(task="mnli", input_ids=ids).shape == (5, 3)
    model.remove_task("mnli")
    assert model.tasks == {"rte": 2, "stsb": 1} and "mnli" not in model.heads


def _no_parameter_built(fn) -> None:
    """Run fn, which must raise ValueError, and check no nn.Parameter was created meanwhile."""
    built = []
    handle = torch.nn.modules.module.register_module_parameter_registration_hook(lambda m, n, p: built.append(n))
    try:
        with pytest.raises(ValueError) as err:
            fn()
    finally:
        handle.remove()
    assert built == []
    return str(err.value)


@pytest.mark.parametrize(
    "cfg,tasks,words",
    [
        (AdapterConfig(method="pals", d_s=100, heads=12), {"rte": 2}, ["100", "divisible", "12"]),
        (AdapterConfig(method="houlsby", d_s=8, location=[0, 12]), {"rte": 2}, ["12", "out of range"]),
        (AdapterConfig(method="lowrank", d_s=8), {"rte": 2}, ["unknown method", "lowrank"]),
        (AdapterConfig(method="lora"), {"rte": 2}, ["d_s"]),
        (AdapterConfig(method="lhuc", d_s=8), {"rte": 2}, ["lhuc", "d_s"]),
        (AdapterConfig(method="proj_attn_top", d_s=48, location="top"), {"rte": 2}, ["location"]),
        (AdapterConfig(method="pals", d_s=48), {"rte": 0}, ["rte", "num_labels"]),
        (AdapterConfig(method="pals", d_s=48), {"a.b": 2}, ["a.b"]),
    ],
)
def test_bad_configurations_raise_before_any_weight_is_built(cfg, tasks, words):
    bert_large = BertConfig(hidden_size=1024, num_hidden_layers=12, num_attention_heads=16, intermediate_size=4096)
    message = _no_parameter_built(lambda: MultiTaskBert.from_base_config(bert_large, cfg, tasks))
    for w in words:
        assert w in message
    _no_parameter_built(lambda: MultiTaskBert.from_pretrained(None, cfg, tasks))


def test_unknown_task_and_missing_checkpoint(tmp_path):
    model = MultiTaskBert.from_base_config(BertConfig(**TINY), AdapterConfig(method="shared"), {"rte": 2})
    ids = torch.randint(0, 60, (1, 5))
    with pytest.raises(ValueError, match="unknown task 'qqp'.*rte"):
        model(task="qqp", input_ids=ids)
    with pytest.raises(ValueError, match="unknown task 'qqp'"):
        model.predict_all(input_ids=ids, tasks=["qqp"])
    with pytest.raises(ValueError, match="no checkpoint at"):
        MultiTaskBert.from_pretrained(tmp_path, AdapterConfig(method="shared"), {"rte": 2})


def test_freeze_trunk_trains_only_task_weights():
    hf, tasks = BertConfig(**TINY), {"rte": 2, "stsb": 1}
    shape = from_hf_config(hf.to_dict())
    for freeze in (False, True):
        cfg = AdapterConfig(method="houlsby", d_s=5, freeze_trunk=freeze, per_task_pooler=True)
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(hf, cfg, tasks)
        cost = at_size(design(shape, parse_tasks(tasks), cfg), 5)
        trained = sum(p.numel() for p in model.trainable_parameters())
        assert trained == cost.params_trained  # per-task poolers: the trunk's own pooler is counted frozen
        assert trained == (cost.params_task_specific if freeze else cost.params_total - pooler_params(shape))
        groups = model.parameter_groups(weight_decay=0.01)
        assert sum(p.numel() for g in groups for p in g["params"]) == trained
        assert [g["weight_decay"] for g in groups] == [0.01, 0.0]
        assert all(p.dim() == 1 for p in groups[1]["params"])  # biases and LayerNorm parameters
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt = torch.optim.AdamW(groups, lr=1e-2)
        ids = torch.randint(0, 60, (4, 8))
        loss = torch.nn.functional.cross_entropy(model(task="rte", input_ids=ids), torch.tensor([0, 1, 1, 0]))
        loss.backward()
        opt.step()
        moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
        assert any(n.startswith("adapters.rte.") for n in moved) and "heads.rte.weight" in moved
        assert not any(n.startswith(("adapters.stsb.", "heads.stsb.")) for n in moved)
        assert any(n.startswith("bert.encoder.") for n in moved) == (not freeze)


def test_ia3_scales_are_not_weight_decayed_but_lhuc_logits_are():
    """IA³'s scale vectors are the identity at 1: AdamW's decay (p ← p − lr·λ·p) would pull them toward 0, so they are
    in the no-decay group with biases and LayerNorms. LHUC's r_l (scale 2σ(r_l)) decays toward 0 = the identity."""
    hf, tasks = BertConfig(**TINY), {"rte": 2, "stsb": 1}
    for method, names, decayed in (
        ("ia3", ("key_scales", "value_scales", "ffn_scales"), False),
        ("lhuc", ("scales",), True),
    ):
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(hf, AdapterConfig(method=method, location="top"), tasks)
        decay, plain = model.parameter_groups(weight_decay=0.5)
        params = dict(model.named_parameters())
        scales = [params[f"adapters.{t}.{n}"] for t in tasks for n in names]
        group = decay if decayed else plain
        assert all(any(p is q for q in group["params"]) for p in scales), method
        assert not any(p is q for p in scales for q in (plain if decayed else decay)["params"]), method
        # the trunk is frozen by default for IA³ and LHUC (as their authors train them): its biases and LayerNorms
        # are in no group; every trainable bias and LayerNorm is in the no-decay group
        bias_norm = {n for n in model.bias_and_norm_parameter_names() if params[n].requires_grad}
        assert {n for n, p in params.items() if any(p is q for q in plain["params"])} == bias_norm | (
            {f"adapters.{t}.{n}" for t in tasks for n in names} if not decayed else set()
        )
        # one AdamW step on zero gradients: only the decay moves a parameter
        with torch.no_grad():
            for p in scales:
                p.add_(0.5)
        before = [p.detach().clone() for p in scales]
        weight = params["heads.rte.weight"].detach().clone()
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        torch.optim.AdamW([decay, plain], lr=0.1).step()
        assert all(torch.equal(p, b) for p, b in zip(scales, before)) != decayed, method
        assert torch.allclose(params["heads.rte.weight"], weight * (1 - 0.1 * 0.5))


def test_zero_initialised_decoder_receives_the_gradient():
    """PALs start as the identity but can learn: V^D gets a gradient at step 0 (V^E's is 0 until V^D moves)."""
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(BertConfig(**TINY), AdapterConfig(method="pals", d_s=8, heads=4), {"rte": 2})
    out = model(task="rte", input_ids=torch.randint(0, 60, (2, 6)))
    out.sum().backward()
    pal = model.adapters["rte"]
    assert pal.decoder.weight.grad.abs().sum() > 0
    assert pal.encoder.weight.grad.abs().sum() == 0


def test_bf16_forward_and_backward():
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(BertConfig(**TINY), AdapterConfig(method="pals", d_s=8, heads=4), {"rte": 2})
    model.to(torch.bfloat16)
    model.add_task("stsb", 1)
    assert model.heads["stsb"].weight.dtype == torch.bfloat16
    ids = torch.randint(0, 60, (2, 6))
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    out = model(task="stsb", input_ids=ids, attention_mask=mask)
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()
    out.float().sum().backward()


@pytest.mark.slow
def test_importing_pals_core_does_not_import_torch_until_the_model_is_used():
    code = (
        "import sys, pals_core, pals_core.budget\n"
        "assert 'torch' not in sys.modules\n"
        "pals_core.MultiTaskBert\n"
        "assert 'torch' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
