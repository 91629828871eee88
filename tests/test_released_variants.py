"""The released-code variants of PALs, low-rank, projected attention on top and the BERT layer on top
(AsaCooperStickland/Bert-n-Pals, which produced the paper's Table 3) and their paper-text forms, one setting away: what each computes, that the counts do not change, and what holds where identity at
initialisation does not (replacement on top, a fresh top layer). Exact counts and memory per default setting:
test_exactness.py, test_memory.py."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from flops import count_forward_flops
from transformers import BertConfig

from pals_core.budget.costs import design
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import from_hf_config
from pals_core.model import MultiTaskBert
from pals_core.pricing.config import AdapterConfig

torch.set_num_threads(1)

HF = BertConfig(
    hidden_size=24,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=40,
    vocab_size=60,
    max_position_embeddings=32,
)
TASKS = {"rte": 2, "stsb": 1}


def build(**kw) -> MultiTaskBert:
    torch.manual_seed(0)
    return MultiTaskBert.from_base_config(HF, AdapterConfig(**kw), TASKS).eval()


def batch(n=9):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 60, (3, n), generator=g)
    mask = torch.ones_like(ids)
    mask[0, n - 3 :] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def randomise(model, prefix="adapters.", seed=2):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(prefix):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))


def test_released_defaults():
    cfg = AdapterConfig()
    assert (cfg.adapter_gelu, cfg.pal_attention_dropout, cfg.proj_attn_top_residual, cfg.bert_layer_top_init) == (
        True,
        0.1,
        False,
        "fresh",
    )


@pytest.mark.parametrize(
    "kw",
    [
        dict(method="pals", d_s=8, heads=2),
        dict(method="pals_unshared", d_s=8, heads=2),
        dict(method="low_rank", d_s=5),
        dict(method="proj_attn_top", d_s=8, heads=2),
        dict(method="bert_layer_top"),
    ],
    ids=lambda kw: kw["method"],
)
def test_counts_and_flops_do_not_change_with_the_variant(kw):
    """Parameters and forward FLOPs (FlopCounterMode) are the same in the released and the paper-text form."""
    released = build(**kw)
    text = build(
        **kw, adapter_gelu=False, pal_attention_dropout=0.0, proj_attn_top_residual=True, bert_layer_top_init="copy"
    )
    shape = from_hf_config(HF.to_dict())
    for model in (released, text):
        cost = at_size(design(shape, parse_tasks(TASKS), model.config, seq_len=9), model.config.d_s)
        assert sum(p.numel() for p in model.parameters()) == cost.params_total
        assert count_forward_flops(model, "rte", 9) == cost.flops_per_seq
    assert sum(p.numel() for p in released.parameters()) == sum(p.numel() for p in text.parameters())


@pytest.mark.parametrize("gelu", [True, False])
def test_pals_branch_is_gelu_of_the_decoder_output(gelu):
    model = build(method="pals", d_s=8, heads=2, adapter_gelu=gelu)
    randomise(model)
    adapter = model.adapters["rte"]
    h = torch.randn(2, 7, 24)
    with torch.no_grad():
        inner = adapter.decoder(adapter.attention["1"](adapter.encoder(h), None))
        torch.testing.assert_close(adapter.parallel_branch(1, h, None), F.gelu(inner) if gelu else inner)


@pytest.mark.parametrize("gelu", [True, False])
def test_low_rank_branch_has_the_gelu_between(gelu):
    model = build(method="low_rank", d_s=5, adapter_gelu=gelu)
    randomise(model)
    adapter = model.adapters["rte"]
    h = torch.randn(2, 7, 24)
    with torch.no_grad():
        code = adapter.encoders["2"](h)
        expected = adapter.decoders["2"](F.gelu(code) if gelu else code)
        torch.testing.assert_close(adapter.parallel_branch(2, h, None), expected)


def test_pal_attention_dropout_acts_in_training_only():
    quiet = dataclasses.replace(HF, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    x = batch()
    outs = {}
    for p in (0.1, 0.0):
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(
            quiet, AdapterConfig(method="pals", d_s=8, heads=2, pal_attention_dropout=p), TASKS
        )
        randomise(model)
        model.train()
        with torch.no_grad():
            a, b = model(task="rte", **x), model(task="rte", **x)
        model.eval()
        with torch.no_grad():
            outs[p] = (a, b, model(task="rte", **x), model(task="rte", **x))
    a, b, c, d = outs[0.1]
    assert not torch.equal(a, b) and torch.equal(c, d)  # the PAL attention probabilities are dropped in training
    a0, b0, c0, _ = outs[0.0]
    assert torch.equal(a0, b0)  # nothing else drops here
    torch.testing.assert_close(c, c0)  # evaluation: the same model


def test_projected_attention_on_top_replaces_the_hidden_states():
    """Released: the pooler reads V^D · stack(V^E · H) — no residual, so NOT the base model at initialisation (V^D
    starts BERT-initialised, not zero); with the residual (the paper's text) it starts as the identity."""
    x = batch()
    for residual in (False, True):
        model = build(method="proj_attn_top", d_s=8, heads=2, n_top=2, proj_attn_top_residual=residual)
        adapter = model.adapters["rte"]
        assert bool(adapter.decoder.weight.abs().sum() == 0) == residual
        with torch.no_grad():
            h, state = model._embed(x["input_ids"], x["attention_mask"], x["token_type_ids"])
            trunk_out = model.trunk.finish(model.trunk.run(0, 3, h, state, None))
            stack = adapter.encoder(trunk_out)
            for block in adapter.blocks:
                stack = block(stack, state.mask)
            expected = adapter.decoder(stack) + (trunk_out if residual else 0)
            out = model.encode("rte", **x)
        torch.testing.assert_close(out, expected)
        assert torch.equal(out, trunk_out) == residual


def test_bert_layer_on_top_is_a_fresh_layer():
    """Released: a new layer with BERT's initialisation (Linear N(0, 0.02²), biases 0, LayerNorms (1, 0)), not the
    trunk's last layer; each task gets its own."""
    model = build(method="bert_layer_top")
    last = model.bert.encoder.layer[-1]
    with torch.no_grad():
        for p in last.parameters():
            p.add_(1.0)  # a "pretrained" last layer that a fresh one cannot match by chance
    fresh = MultiTaskBert(model.bert, AdapterConfig(method="bert_layer_top"), TASKS)
    copied = MultiTaskBert(model.bert, AdapterConfig(method="bert_layer_top", bert_layer_top_init="copy"), TASKS)
    for task in TASKS:
        top = fresh.adapters[task].layer
        q = top.attention.self.query
        assert abs(float(q.weight.detach().std()) - HF.initializer_range) < 0.01 and torch.equal(
            q.bias, torch.zeros(24)
        )
        assert torch.equal(top.output.LayerNorm.weight, torch.ones(24)) and torch.equal(
            top.output.LayerNorm.bias, torch.zeros(24)
        )
        assert not torch.equal(q.weight, last.attention.self.query.weight)
        assert torch.equal(copied.adapters[task].layer.attention.self.query.weight, last.attention.self.query.weight)
    assert not torch.equal(
        fresh.adapters["rte"].layer.attention.self.query.weight,
        fresh.adapters["stsb"].layer.attention.self.query.weight,
    )


@pytest.mark.parametrize(
    "kw,message",
    [
        (dict(method="bert_layer_top", bert_layer_top_init="pretrained"), "fresh or copy"),
        (dict(method="pals", d_s=8, heads=2, pal_attention_dropout=1.0), "pal_attention_dropout"),
    ],
)
def test_bad_settings_name_the_field(kw, message):
    with pytest.raises(ValueError, match=message):
        build(**kw)
