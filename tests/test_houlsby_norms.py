"""Houlsby adapters train as Houlsby et al. (2019, Sec. 2.1) train them: beside its two bottlenecks per adapted layer,
each task holds its own copy of that layer's two LayerNorms (LN1 at ``attention_norm``, LN2 at ``output_norm``),
initialised from the trunk's and trained with the adapters, while the trunk — its own norms included — stays frozen.
The calculator prices exactly those copies (``Family.hook_norms``: BERT's LayerNorm(d) with bias, ModernBERT's
bias-free ones and its layer-0 identity, DeBERTa's, ALBERT's one shared layer), in parameters, AdamW tensors and
the activations they keep; a Houlsby model starts as its base model."""

from __future__ import annotations

import pytest
import torch
from memory_probe import optimizer_state_bytes, saved_activation_bytes
from test_exactness import BASES as EXACT_BASES
from torch import nn

from pals_core.adapters.base import TaskAdapter
from pals_core.budget.costs import design, evaluate
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.families.registry import get_family
from pals_core.families.shapes import conditions_from_config, from_hf_config
from pals_core.footprint.memory import activation_bytes, memory_train
from pals_core.model import MultiTaskBert, _hf_config
from pals_core.pricing.config import AdapterConfig

D = 24
TASKS = {"rte": 2, "stsb": 1}
BASES = {  # tiny random models of families whose norms differ; every layer adapted (location "all")
    "bert": dict(model_type="bert", hidden_size=D, num_hidden_layers=3, num_attention_heads=4, intermediate_size=37,
                 vocab_size=61, max_position_embeddings=16),
    "modernbert": dict(model_type="modernbert", hidden_size=D, num_hidden_layers=3, num_attention_heads=4,
                       intermediate_size=19, vocab_size=53, local_attention=4, global_attn_every_n_layers=2,
                       pad_token_id=0, eos_token_id=1, bos_token_id=2, cls_token_id=2, sep_token_id=1),
    "deberta-v2": dict(model_type="deberta-v2", hidden_size=D, num_hidden_layers=3, num_attention_heads=4,
                       intermediate_size=37, vocab_size=51, relative_attention=True, position_buckets=5,
                       pos_att_type="p2c|c2p", max_position_embeddings=32),
    "albert": dict(model_type="albert", hidden_size=D, num_hidden_layers=3, num_attention_heads=4,
                   intermediate_size=37, vocab_size=51, embedding_size=8, max_position_embeddings=16),
}  # fmt: skip
# what each task's own LayerNorms hold over the three adapted layers: LN1 and LN2 of each
OWN_NORMS = {
    "bert": 3 * 2 * 2 * D,  # gain and bias, both norms
    "modernbert": (1 + 2 + 2) * D,  # bias-free (norm_bias false); layer 0's attention norm is the identity
    "deberta-v2": 3 * 2 * 2 * D,
    "albert": 3 * 2 * 2 * D,  # one shared layer applied three times: one copy per adapted layer
}
CFG = AdapterConfig(method="houlsby", d_s=4)


def _model(base: str, cfg: AdapterConfig = CFG) -> MultiTaskBert:
    torch.manual_seed(0)
    return MultiTaskBert.from_base_config(BASES[base], cfg, TASKS)


def _cost(base: str, cfg: AdapterConfig = CFG, convention: str = "exact"):
    shape = from_hf_config(_hf_config(BASES[base]).to_dict())
    return at_size(design(shape, parse_tasks(TASKS), cfg, convention=convention, seq_len=8), cfg.d_s)


@pytest.mark.parametrize("base", list(BASES))
def test_houlsby_trains_each_tasks_own_layernorms_and_prices_exactly_those(base):
    model, cost = _model(base), _cost(base)
    trained = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert cost.trunk == "frozen" and sum(p.numel() for p in trained.values()) == cost.params_trained
    assert not any(n.startswith("bert.") for n in trained)  # the trunk, its norms included, stays frozen
    for task in TASKS:
        own = model.adapters[task].LayerNorm
        norms = sum(p.numel() for n, p in trained.items() if n.startswith(f"adapters.{task}.LayerNorm."))
        assert norms == OWN_NORMS[base]
        for i in range(3):
            for copy, trunk in zip(own[str(i)], model.trunk.hook_norms(i)):
                assert type(copy) is type(trunk)  # the family's module: with or without bias, or the identity
                for (name, p), q in zip(copy.named_parameters(), trunk.parameters()):
                    assert torch.equal(p, q) and p.data_ptr() != q.data_ptr(), (task, i, name)
                    assert p.requires_grad and not q.requires_grad
    if base == "modernbert":
        assert isinstance(model.adapters["rte"].LayerNorm["0"][0], nn.Identity)
        assert model.adapters["rte"].LayerNorm["1"][0].bias is None
    # the paper convention drops every LayerNorm parameter: the copies too
    assert model.num_parameters("paper") == _cost(base, convention="paper").params_total
    # fine-tuning the trunk instead: the tasks share its norms, which train with it (copies would get no gradient)
    tuned = AdapterConfig(method="houlsby", d_s=4, freeze_trunk=False)
    model = _model(base, tuned)
    assert model.adapters["rte"].LayerNorm is None
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == _cost(base, tuned).params_trained
    assert _cost(base).params_total == _cost(base, tuned).params_total + len(TASKS) * OWN_NORMS[base]


@pytest.mark.parametrize("base", list(BASES))
def test_a_houlsby_model_starts_as_its_base_model(base):
    model = _model(base).eval()
    ids = torch.randint(3, 40, (2, 7))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    with torch.no_grad():
        plain = model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
        for task in TASKS:
            torch.testing.assert_close(model.encode(task, ids, mask), plain, rtol=0, atol=1e-6)


def test_a_step_moves_the_tasks_own_norms_and_leaves_the_trunks_and_the_other_tasks():
    model = _model("bert")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    own = {n for n in before if n.startswith("adapters.rte.LayerNorm.")}
    # LayerNorm parameters: no weight decay (docs/design.md "Multi-task training")
    assert own <= set(model.no_decay_parameter_names())
    optimizer = torch.optim.AdamW(model.parameter_groups(), lr=1e-2)
    ids = torch.randint(3, 40, (2, 7))
    for _ in range(2):  # the first step moves U off zero; the second reaches the norms through it
        optimizer.zero_grad()
        model("rte", ids).logsumexp(-1).sum().backward()
        optimizer.step()
    moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert len(own) == 3 * 2 * 2 and {n for n in moved if ".LayerNorm." in n} == own
    assert not any(n.startswith(("bert.", "adapters.stsb.")) for n in moved)


@pytest.mark.slow  # a forward and an AdamW step on ModernBERT under saved-tensor hooks
def test_memory_is_priced_for_the_tasks_own_norms_on_a_pre_norm_family():
    """ModernBERT's norms act on a layer's input, which needs no gradient under a frozen trunk: a trained copy keeps
    its input and row statistics all the same, and the calculator prices them — and AdamW's state for the copies."""
    hf = _hf_config(BASES["modernbert"])
    ds = design(from_hf_config(hf.to_dict()), parse_tasks(TASKS), CFG, seq_len=8)
    model = _model("modernbert")
    cond = conditions_from_config(hf.to_dict() | {"attn_implementation": hf._attn_implementation})
    mem = memory_train(ds, CFG.d_s, evaluate(ds, CFG.d_s), batch=2, cond=cond)
    assert mem.gradients == 4 * sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert mem.optimizer == optimizer_state_bytes(model)
    assert activation_bytes(ds, 2, cond)(CFG.d_s) == saved_activation_bytes(model, "rte", 2, 8)


class _Recorder(TaskAdapter):
    """Every hook at its identity; records the module the trunk hands to each norm hook."""

    def __init__(self, layers) -> None:
        super().__init__(layers)
        self.seen: dict[tuple[int, int], nn.Module] = {}

    def attention_norm(self, i, norm, x):
        self.seen[i, 0] = norm
        return norm(x)

    def output_norm(self, i, norm, x):
        self.seen[i, 1] = norm
        return norm(x)


@pytest.mark.parametrize("base", list(EXACT_BASES))
def test_every_family_hands_its_hook_norms_to_the_hooks_and_the_calculator_counts_them(base):
    """What a task copies (``Trunk.hook_norms``) is what the adapted layer normalises with, and the family's
    ``hook_norms`` counts exactly its parameters and tensors — in every family the calculator prices."""
    hf = _hf_config(EXACT_BASES[base][0])
    model = MultiTaskBert.from_base_config(hf, AdapterConfig(method="shared"), {"a": 2})
    shape, family = model.shape, get_family(model.shape.family)
    recorder = _Recorder(range(shape.layers))
    ids = torch.randint(3, 30, (1, 6))
    h, state = model._embed(ids, torch.ones_like(ids), None)
    model.trunk.run(0, shape.layers, h, state, recorder)
    for i in range(shape.layers):
        declared = family.hook_norms(shape, i)
        for which, module in enumerate(model.trunk.hook_norms(i)):
            if (i, which) in recorder.seen:
                assert recorder.seen[i, which] is module, (i, which)
            else:  # a place with no norm never calls its hook (ModernBERT's layer 0)
                assert isinstance(module, nn.Identity)
            params = list(module.parameters())
            norm = declared[which]
            assert sum(p.numel() for p in params) == (norm.params(False) if norm else 0), (i, which)
            assert len(params) == (norm.tensors if norm else 0), (i, which)
