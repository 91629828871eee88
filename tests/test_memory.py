"""The calculator's training memory is torch's, to the byte (SPEC section 9).

activations == bytes autograd saves in one training-mode forward (saved_tensors_hooks, each storage once,
parameters excluded), for every method × location, with and without ``freeze_trunk``, CA-MTL's frozen lower
half, sdpa and eager attention, dropout on and off; optimizer == AdamW's state after a step on each task.
The conditions (train mode, the config's dropout, its attention implementation, CPU) are the figure's.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import pytest
import torch
from transformers import BertConfig

from pals_core import AdapterConfig, MultiTaskBert
from pals_core.budget import METHODS, design, evaluate, from_hf_config, get_method, parse_tasks
from pals_core.budget.activations import Conditions
from pals_core.budget.memory import activation_bytes, memory_train
from pals_core.budget.families import get_family
from pals_core.memory_probe import optimizer_state_bytes, saved_activation_bytes
from pals_core.model import _hf_config

torch.set_num_threads(1)

# name: (HF config fields, tasks, d_s attention / other, h_s, B, n)
BASES = {
    "odd-3L-drop": (dict(hidden_size=30, num_hidden_layers=3, num_attention_heads=5, intermediate_size=47, vocab_size=53,
                         max_position_embeddings=24, type_vocab_size=3), {"rte": 2, "stsb": 1}, 9, 7, 3, 3, 11),
    "4L-nodrop": (dict(hidden_size=24, num_hidden_layers=4, num_attention_heads=4, intermediate_size=40, vocab_size=41,
                       max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                  {"mnli": 3, "cola": 2}, 10, 5, 5, 2, 9),
    "5L-B1": (dict(hidden_size=16, num_hidden_layers=5, num_attention_heads=2, intermediate_size=33, vocab_size=29,
                   max_position_embeddings=12, type_vocab_size=1, attention_probs_dropout_prob=0.0),
              {"a": 4}, 6, 3, 2, 1, 12),
    "eager-2L": (dict(hidden_size=20, num_hidden_layers=2, num_attention_heads=4, intermediate_size=28, vocab_size=31,
                      max_position_embeddings=16, attn_implementation="eager", classifier_dropout=0.3),
                 {"sst2": 2, "stsb": 1}, 14, 11, 7, 4, 6),
}
# the other families with torch trunks (their dropout fields, their embeddings and heads)
FAMILY_BASES = {
    "roberta-3L": (dict(model_type="roberta", hidden_size=18, num_hidden_layers=3, num_attention_heads=3,
                        intermediate_size=29, vocab_size=37, max_position_embeddings=20, type_vocab_size=1, pad_token_id=1),
                   {"rte": 2, "stsb": 1}, 6, 5, 3, 3, 9),
    "distilbert-3L": (dict(model_type="distilbert", dim=21, n_layers=3, n_heads=3, hidden_dim=31, vocab_size=43,
                           max_position_embeddings=16), {"mnli": 3, "stsb": 1}, 8, 7, 4, 2, 10),
    "electra-E10": (dict(model_type="electra", embedding_size=10, hidden_size=24, num_hidden_layers=3,
                         num_attention_heads=4, intermediate_size=35, vocab_size=39, max_position_embeddings=16,
                         type_vocab_size=2, attn_implementation="eager"), {"cola": 2, "stsb": 1}, 9, 4, 3, 3, 8),
    "electra-nodrop": (dict(model_type="electra", hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=20, vocab_size=30, max_position_embeddings=12, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0), {"rte": 2}, 6, 5, 2, 2, 7),
}
BASES.update(FAMILY_BASES)
EXPLICIT = {"odd-3L-drop": [0, 2], "4L-nodrop": [1, 2], "5L-B1": [3], "eager-2L": [1], "roberta-3L": [0, 2],
            "distilbert-3L": [1], "electra-E10": [0, 1], "electra-nodrop": [1]}


def _cases():
    for base in BASES:
        family = get_family(from_hf_config(_hf_config(BASES[base][0]).to_dict()).family)
        for method in METHODS:
            if family.refusal(method):
                continue
            locs = ("all", "top", "bottom", "explicit") if get_method(method).within else (None,)
            for loc in locs:
                for freeze in (False, True):
                    yield base, method, loc, freeze


CASES = list(_cases())
IDS = [f"{b}-{m}-{loc}-{'frozen' if f else 'trained'}" for b, m, loc, f in CASES]


def _setup(base, method, loc, freeze, **extra):
    fields, tasks, ds_attn, ds_other, heads, batch, n = BASES[base]
    m = get_method(method)
    d_s = (ds_attn if m.attention else ds_other) if m.sized else None
    fields_ = dict(method=method, d_s=d_s, location=EXPLICIT[base] if loc == "explicit" else loc, heads=heads,
                   n_top=2, ffn_ratio=3, freeze_trunk=freeze)
    cfg = AdapterConfig(**(fields_ | extra))
    hf = _hf_config(dict(fields))
    ds = design(from_hf_config(hf.to_dict()), parse_tasks(tasks), cfg, seq_len=n)
    return hf, cfg, tasks, batch, n, ds


@lru_cache(maxsize=None)
def _model(base, method, loc, freeze) -> MultiTaskBert:
    hf, cfg, tasks, *_ = _setup(base, method, loc, freeze)
    torch.manual_seed(0)
    return MultiTaskBert.from_base_config(hf, cfg, tasks)


def _conditions(hf: BertConfig) -> Conditions:
    return Conditions.from_hf_config(hf.to_dict() | {"attn_implementation": hf._attn_implementation})


@pytest.mark.parametrize("base,method,loc,freeze", CASES, ids=IDS)
def test_activations_are_the_bytes_autograd_saves(base, method, loc, freeze):
    hf, cfg, tasks, batch, n, ds = _setup(base, method, loc, freeze)
    model = _model(base, method, loc, freeze)
    assert activation_bytes(ds, batch, _conditions(hf))(cfg.d_s or 0) == \
        saved_activation_bytes(model, next(iter(tasks)), batch, n)


OPT = ("odd-3L-drop", "distilbert-3L", "electra-E10", "roberta-3L")


@pytest.mark.parametrize("base,method,loc,freeze", [c for c in CASES if c[0] in OPT],
                         ids=[i for i, c in zip(IDS, CASES) if c[0] in OPT])
def test_optimizer_is_adamw_state_and_totals_add_up(base, method, loc, freeze):
    hf, cfg, tasks, batch, n, ds = _setup(base, method, loc, freeze)
    model = _model(base, method, loc, freeze)
    cost = evaluate(ds, cfg.d_s)
    mem = memory_train(ds, cfg.d_s, cost, batch=batch, cond=_conditions(hf))
    assert mem.weights == 4 * sum(p.numel() for p in model.parameters())
    assert mem.gradients == 4 * sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert mem.optimizer == optimizer_state_bytes(model)
    assert mem.total == mem.weights + mem.gradients + mem.optimizer + mem.activations


@pytest.mark.parametrize("extra", [dict(), dict(frozen_layers=0), dict(location="top", frozen_layers=2, cond_adapter_layers=2),
                                   dict(cond_attn_max_len=5, cond_attn_blocks=2, task_embedding_dim=7)],
                         ids=["default-half-frozen", "nothing-frozen", "top-2-frozen", "small-bias"])
@pytest.mark.parametrize("base", ["odd-3L-drop", "eager-2L", "5L-B1", "roberta-3L", "distilbert-3L", "electra-E10"])
def test_ca_mtl_frozen_half(base, extra):
    hf, cfg, tasks, batch, n, ds = _setup(base, "ca_mtl", None, False, **extra)
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, tasks)
    mem = memory_train(ds, cfg.d_s, evaluate(ds, cfg.d_s), batch=batch, cond=_conditions(hf))
    assert mem.activations == saved_activation_bytes(model, next(iter(tasks)), batch, n)
    assert mem.optimizer == optimizer_state_bytes(model)


def test_a_frozen_prefix_saves_nothing():
    """freeze_trunk with adapters only in the top layer: the layers below save nothing, so the figure is what the
    top layer, pooler and head save — far below the fully trained model's."""
    full = _setup("4L-nodrop", "lora", [3], False)
    frozen = _setup("4L-nodrop", "lora", [3], True)
    hf, batch = full[0], full[3]
    a_full = activation_bytes(full[5], batch, _conditions(hf))(full[1].d_s)
    a_frozen = activation_bytes(frozen[5], batch, _conditions(hf))(frozen[1].d_s)
    assert a_frozen < a_full / 3
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, frozen[1], frozen[2])
    assert a_frozen == saved_activation_bytes(model, "mnli", batch, full[4])


def test_the_conditions_change_what_is_saved():
    """Dropout masks and the attention kernel are part of the figure: with dropout the CPU sdpa runs the math
    kernel (B·h·n² scores kept three times) and every dropout keeps a float mask; eval mode (no dropout) saves what
    the calculator says for dropout 0."""
    hf, cfg, tasks, batch, n, ds = _setup("odd-3L-drop", "pals", "all", False)
    model = _model("odd-3L-drop", "pals", "all", False)
    with_dropout = activation_bytes(ds, batch, _conditions(hf))(cfg.d_s)
    without = activation_bytes(ds, batch, Conditions(train=False))(cfg.d_s)
    eager = activation_bytes(ds, batch, Conditions(train=False, attention="eager"))(cfg.d_s)
    assert with_dropout > eager > without
    assert saved_activation_bytes(model, "rte", batch, n, train=False) == \
        activation_bytes(ds, batch, replace(_conditions(hf), train=False))(cfg.d_s)
    assert saved_activation_bytes(model, "rte", batch, n) == with_dropout


def test_activations_are_a_polynomial_in_d_s():
    hf, cfg, tasks, batch, n, ds = _setup("odd-3L-drop", "pals", "top", False)
    poly = activation_bytes(ds, batch, _conditions(hf))
    assert poly.a > 0 and poly.b > 0  # the fused Q,K,V weight (3·S² floats) and the (B, n, S) tensors
    for s in (6, 12, 21):
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(hf, replace(cfg, d_s=s), tasks)
        assert poly(s) == saved_activation_bytes(model, "rte", batch, n)
