"""The calculator's training memory is torch's, to the byte (docs/design.md "Memory (bytes)").

activations == bytes autograd saves in one training-mode forward (saved_tensors_hooks, each storage once,
parameters excluded), for every family (BERT, RoBERTa, DistilBERT, ELECTRA, DeBERTa-v2/v3, ModernBERT, MPNet,
ALBERT) × method × location, with and without ``freeze_trunk``, CA-MTL's frozen lower half, sdpa and eager attention, dropout on and
off; optimizer == AdamW's state after a step on each task.
The conditions (train mode, the config's dropout, its attention implementation, CPU) are the figure's.

The grid is covered pairwise (tests/pairwise.py): every pair of family, method, location, freeze_trunk and base
configuration levels that some valid case holds is run (base × method only as far as family × method needs), with
every family × every method at one location (all layers, trained) and every location × freeze_trunk on one base
(odd-3L-drop, PALs). ``PALS_FULL_GRID=1`` runs the full product (about 1,800 cases, minutes).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest
import torch
from memory_probe import optimizer_state_bytes, saved_activation_bytes
from pairwise import grid
from transformers import BertConfig

from pals_core.budget.costs import design, evaluate
from pals_core.budget.tasks import parse_tasks
from pals_core.families.registry import get_family
from pals_core.families.shapes import conditions_from_config, from_hf_config
from pals_core.footprint.memory import activation_bytes, memory_train
from pals_core.methods.registry import METHODS, get_method
from pals_core.model import MultiTaskBert, _hf_config
from pals_core.pricing.activations import Conditions
from pals_core.pricing.config import AdapterConfig

torch.set_num_threads(1)

# name: (HF config fields, tasks, d_s attention / other, h_s, B, n)
BASES = {
    "odd-3L-drop": (
        dict(
            hidden_size=30,
            num_hidden_layers=3,
            num_attention_heads=5,
            intermediate_size=47,
            vocab_size=53,
            max_position_embeddings=24,
            type_vocab_size=3,
        ),
        {"rte": 2, "stsb": 1},
        9,
        7,
        3,
        3,
        11,
    ),
    "4L-nodrop": (
        dict(
            hidden_size=24,
            num_hidden_layers=4,
            num_attention_heads=4,
            intermediate_size=40,
            vocab_size=41,
            max_position_embeddings=16,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        ),
        {"mnli": 3, "cola": 2},
        10,
        5,
        5,
        2,
        9,
    ),
    "5L-B1": (
        dict(
            hidden_size=16,
            num_hidden_layers=5,
            num_attention_heads=2,
            intermediate_size=33,
            vocab_size=29,
            max_position_embeddings=12,
            type_vocab_size=1,
            attention_probs_dropout_prob=0.0,
        ),
        {"a": 4},
        6,
        3,
        2,
        1,
        12,
    ),
    "eager-2L": (
        dict(
            hidden_size=20,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=28,
            vocab_size=31,
            max_position_embeddings=16,
            attn_implementation="eager",
            classifier_dropout=0.3,
        ),
        {"sst2": 2, "stsb": 1},
        14,
        11,
        7,
        4,
        6,
    ),
}
# the other families with torch trunks (their dropout fields, their embeddings and heads)
FAMILY_BASES = {
    "roberta-3L": (
        dict(
            model_type="roberta",
            hidden_size=18,
            num_hidden_layers=3,
            num_attention_heads=3,
            intermediate_size=29,
            vocab_size=37,
            max_position_embeddings=20,
            type_vocab_size=1,
            pad_token_id=1,
        ),
        {"rte": 2, "stsb": 1},
        6,
        5,
        3,
        3,
        9,
    ),
    "distilbert-3L": (
        dict(
            model_type="distilbert",
            dim=21,
            n_layers=3,
            n_heads=3,
            hidden_dim=31,
            vocab_size=43,
            max_position_embeddings=16,
        ),
        {"mnli": 3, "stsb": 1},
        8,
        7,
        4,
        2,
        10,
    ),
    "electra-E10": (
        dict(
            model_type="electra",
            embedding_size=10,
            hidden_size=24,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=35,
            vocab_size=39,
            max_position_embeddings=16,
            type_vocab_size=2,
            attn_implementation="eager",
        ),
        {"cola": 2, "stsb": 1},
        9,
        4,
        3,
        3,
        8,
    ),
    "electra-nodrop": (
        dict(
            model_type="electra",
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=20,
            vocab_size=30,
            max_position_embeddings=12,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        ),
        {"rte": 2},
        6,
        5,
        2,
        2,
        7,
    ),
    # DeBERTa-v2/v3: disentangled attention with the relative embeddings shared by Q/K (v3) or projected by their own
    # maps, c2p and/or p2c, buckets, the embedding projection E → d, the ConvLayer after layer 0, dropout on and off
    "deberta-v3-2L": (
        dict(
            model_type="deberta-v2",
            hidden_size=24,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            vocab_size=50,
            max_position_embeddings=20,
            type_vocab_size=0,
            relative_attention=True,
            position_buckets=5,
            max_relative_positions=-1,
            pos_att_type="p2c|c2p",
            share_att_key=True,
            position_biased_input=False,
            norm_rel_ebd="layer_norm",
        ),
        {"rte": 2, "stsb": 1},
        8,
        5,
        2,
        3,
        7,
    ),
    "deberta-c2p-E10-conv": (
        dict(
            model_type="deberta-v2",
            embedding_size=10,
            hidden_size=18,
            num_hidden_layers=3,
            num_attention_heads=3,
            intermediate_size=25,
            vocab_size=41,
            max_position_embeddings=16,
            type_vocab_size=2,
            relative_attention=True,
            max_relative_positions=4,
            pos_att_type=["c2p"],
            share_att_key=False,
            conv_kernel_size=3,
            pooler_dropout=0.2,
            cls_dropout=0.3,
        ),
        {"mnli": 3, "cola": 2},
        6,
        4,
        3,
        2,
        9,
    ),
    "deberta-p2c-nodrop-B1": (
        dict(
            model_type="deberta-v2",
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=20,
            vocab_size=30,
            max_position_embeddings=12,
            type_vocab_size=1,
            relative_attention=True,
            position_buckets=3,
            pos_att_type=["p2c"],
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        ),
        {"a": 4},
        6,
        3,
        2,
        1,
        8,
    ),
    # ModernBERT: pre-norm, fused Wqkv, RoPE, global / sliding-window layers (the window mask sdpa keeps when n ≥ the
    # half window), GLU, final norm; cls or mean pooling; biases; sdpa and eager; dropout off (its default) and on
    "modernbert-3L": (
        dict(
            model_type="modernbert",
            hidden_size=24,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=19,
            vocab_size=50,
            max_position_embeddings=64,
            local_attention=4,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            cls_token_id=1,
            sep_token_id=2,
        ),
        {"rte": 2, "stsb": 1},
        8,
        5,
        2,
        3,
        7,
    ),
    "modernbert-drop-mean": (
        dict(
            model_type="modernbert",
            hidden_size=20,
            num_hidden_layers=4,
            num_attention_heads=2,
            intermediate_size=13,
            vocab_size=40,
            max_position_embeddings=32,
            local_attention=6,
            global_attn_every_n_layers=2,
            attention_dropout=0.1,
            mlp_dropout=0.2,
            embedding_dropout=0.1,
            classifier_dropout=0.3,
            classifier_pooling="mean",
            mlp_bias=True,
            attention_bias=True,
            norm_bias=True,
            classifier_bias=True,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            cls_token_id=1,
            sep_token_id=2,
        ),
        {"cola": 2, "stsb": 1},
        6,
        4,
        2,
        2,
        9,
    ),
    "modernbert-eager": (
        dict(
            model_type="modernbert",
            hidden_size=16,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=11,
            vocab_size=30,
            max_position_embeddings=32,
            local_attention=64,
            attn_implementation="eager",
            mlp_dropout=0.1,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            cls_token_id=1,
            sep_token_id=2,
        ),
        {"sst2": 2},
        8,
        5,
        4,
        3,
        6,
    ),
    # MPNet: the relative position bias ((n, n) bucket ids kept by its lookup, a (B, h, n, n) copy added to every layer's
    # eager scores), positions from the ids; dropout on and off, B = 1, a larger bucket table
    "mpnet-3L": (
        dict(
            model_type="mpnet",
            hidden_size=18,
            num_hidden_layers=3,
            num_attention_heads=3,
            intermediate_size=29,
            vocab_size=37,
            max_position_embeddings=20,
        ),
        {"rte": 2, "stsb": 1},
        6,
        5,
        3,
        3,
        9,
    ),
    "mpnet-nodrop-B1-R40": (
        dict(
            model_type="mpnet",
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=20,
            vocab_size=30,
            max_position_embeddings=16,
            relative_attention_num_buckets=40,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        ),
        {"a": 4},
        6,
        3,
        2,
        1,
        8,
    ),
    # ALBERT: E → d mapping, one shared layer run L times (its parameters' gradients and AdamW state counted once,
    # every application's activations kept), ALBERT's defaults (no dropout in the trunk, 0.1 in the head) and
    # dropout on with eager attention
    "albert-E10": (
        dict(
            model_type="albert",
            embedding_size=10,
            hidden_size=24,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=35,
            vocab_size=39,
            max_position_embeddings=16,
        ),
        {"rte": 2, "stsb": 1},
        8,
        5,
        4,
        3,
        9,
    ),
    "albert-drop-eager": (
        dict(
            model_type="albert",
            embedding_size=16,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=20,
            vocab_size=30,
            max_position_embeddings=12,
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1,
            classifier_dropout_prob=0.2,
            attn_implementation="eager",
            hidden_act="gelu",
        ),
        {"mnli": 3},
        6,
        3,
        2,
        2,
        8,
    ),
}
BASES.update(FAMILY_BASES)
EXPLICIT = {
    "odd-3L-drop": [0, 2],
    "4L-nodrop": [1, 2],
    "5L-B1": [3],
    "eager-2L": [1],
    "roberta-3L": [0, 2],
    "distilbert-3L": [1],
    "electra-E10": [0, 1],
    "electra-nodrop": [1],
    "deberta-v3-2L": [1],
    "deberta-c2p-E10-conv": [0, 2],
    "deberta-p2c-nodrop-B1": [0],
    "modernbert-3L": [0, 2],
    "modernbert-drop-mean": [1, 2],
    "modernbert-eager": [0],
    "mpnet-3L": [0, 2],
    "mpnet-nodrop-B1-R40": [1],
    "albert-E10": [0, 2],
    "albert-drop-eager": [1],
}


def _family(base: str) -> str:
    return from_hf_config(_hf_config(BASES[base][0]).to_dict()).family


FAMILY = {base: _family(base) for base in BASES}
REFERENCE = "odd-3L-drop"  # the one base every location × freeze_trunk runs on (PALs)


def _locations(method: str) -> tuple:
    return ("all", "top", "bottom", "explicit") if get_method(method).within else (None,)


def _full_grid(bases=BASES) -> list[tuple]:
    """Every valid (family, base, method, location, freeze) — the full product less what a family refuses."""
    return [
        (FAMILY[base], base, method, loc, freeze)
        for base in bases
        for method in METHODS
        if not get_family(FAMILY[base]).refusal(method)
        for loc in _locations(method)
        for freeze in (False, True)
    ]


def _at_one_location(case: tuple) -> list[tuple]:
    """What a case adds to "every family × every method at one location": all layers (or none to choose), trained."""
    family, _, method, loc, freeze = case
    return [(family, method)] if loc in ("all", None) and not freeze else []


def _covering(bases=BASES, prefer=()) -> list[tuple]:
    """(base, method, location, freeze) cases: every location × freeze_trunk on the reference base (PALs), every
    family × every method at one location, and pairwise around them (base × method not required: a base stands for
    its family there). Cases in ``prefer`` come first on a tie (their models are built already)."""
    full = _full_grid(bases)
    named = [c for c in full if c[1] == REFERENCE and c[2] == "pals"]
    preferred = {(FAMILY[c[0]], *c) for c in prefer}
    ordered = [c for c in full if c in preferred] + [c for c in full if c not in preferred]
    chosen = set(grid(ordered, keep=named, skip={(1, 2)}, also=_at_one_location))
    return [c[1:] for c in full if c in chosen]


CASES = _covering()
IDS = [f"{b}-{m}-{loc}-{'frozen' if f else 'trained'}" for b, m, loc, f in CASES]


def _setup(base, method, loc, freeze, **extra):
    fields, tasks, ds_attn, ds_other, heads, batch, n = BASES[base]
    m = get_method(method)
    d_s = (ds_attn if m.attention else ds_other) if m.sized else None
    fields_ = dict(
        method=method,
        d_s=d_s,
        location=EXPLICIT[base] if loc == "explicit" else loc,
        heads=heads,
        n_top=2,
        ffn_ratio=3,
        freeze_trunk=freeze,
    )
    cfg = AdapterConfig(**(fields_ | extra))
    hf = _hf_config(dict(fields))
    ds = design(from_hf_config(hf.to_dict()), parse_tasks(tasks), cfg, seq_len=n)
    return hf, cfg, tasks, batch, n, ds


@cache
def _model(base, method, loc, freeze) -> MultiTaskBert:
    hf, cfg, tasks, *_ = _setup(base, method, loc, freeze)
    torch.manual_seed(0)
    return MultiTaskBert.from_base_config(hf, cfg, tasks)


def _conditions(hf: BertConfig) -> Conditions:
    return conditions_from_config(hf.to_dict() | {"attn_implementation": hf._attn_implementation})


@pytest.mark.parametrize("base,method,loc,freeze", CASES, ids=IDS)
def test_activations_are_the_bytes_autograd_saves(base, method, loc, freeze):
    hf, cfg, tasks, batch, n, ds = _setup(base, method, loc, freeze)
    model = _model(base, method, loc, freeze)
    assert activation_bytes(ds, batch, _conditions(hf))(cfg.d_s or 0) == saved_activation_bytes(
        model, next(iter(tasks)), batch, n
    )


OPT = (
    "odd-3L-drop",
    "distilbert-3L",
    "electra-E10",
    "roberta-3L",
    "deberta-v3-2L",
    "deberta-c2p-E10-conv",
    "modernbert-3L",
    "modernbert-drop-mean",
    "mpnet-3L",
    "mpnet-nodrop-B1-R40",
    "albert-E10",
    "albert-drop-eager",
)


OPT_CASES = _covering(OPT, prefer=CASES)  # its own covering set over these bases


@pytest.mark.parametrize(
    "base,method,loc,freeze",
    OPT_CASES,
    ids=[f"{b}-{m}-{loc}-{'frozen' if f else 'trained'}" for b, m, loc, f in OPT_CASES],
)
def test_optimizer_is_adamw_state_and_totals_add_up(base, method, loc, freeze):
    hf, cfg, tasks, batch, n, ds = _setup(base, method, loc, freeze)
    model = _model(base, method, loc, freeze)
    cost = evaluate(ds, cfg.d_s)
    mem = memory_train(ds, cfg.d_s, cost, batch=batch, cond=_conditions(hf))
    assert mem.weights == 4 * sum(p.numel() for p in model.parameters())
    assert mem.gradients == 4 * sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert mem.optimizer == optimizer_state_bytes(model)
    assert mem.total == mem.weights + mem.gradients + mem.optimizer + mem.activations


@pytest.mark.parametrize(
    "extra",
    [
        dict(),
        dict(frozen_layers=0),
        dict(location="top", frozen_layers=2, cond_adapter_layers=2),
        dict(cond_attn_max_len=5, cond_attn_blocks=2, task_embedding_dim=7),
    ],
    ids=["default-half-frozen", "nothing-frozen", "top-2-frozen", "small-bias"],
)
@pytest.mark.parametrize(
    "base", ["odd-3L-drop", "eager-2L", "5L-B1", "roberta-3L", "distilbert-3L", "electra-E10", "mpnet-3L"]
)
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
    assert saved_activation_bytes(model, "rte", batch, n, train=False) == activation_bytes(
        ds, batch, replace(_conditions(hf), train=False)
    )(cfg.d_s)
    assert saved_activation_bytes(model, "rte", batch, n) == with_dropout


def test_activations_are_a_polynomial_in_d_s():
    hf, cfg, tasks, batch, n, ds = _setup("odd-3L-drop", "pals", "top", False)
    poly = activation_bytes(ds, batch, _conditions(hf))
    assert poly.a > 0 and poly.b > 0  # the fused Q,K,V weight (3·S² floats) and the (B, n, S) tensors
    for s in (6, 12, 21):
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(hf, replace(cfg, d_s=s), tasks)
        assert poly(s) == saved_activation_bytes(model, "rte", batch, n)


# --- a tagging task first: its head on every token (kind: tokens) ------------------------------------------------


@pytest.mark.parametrize("freeze", [False, True], ids=["trained", "frozen"])
@pytest.mark.parametrize("base", OPT)
def test_a_tagging_heads_activations_and_state_are_torchs(base, freeze):
    from pals_core.budget.tasks import Task

    hf, cfg, tasks, batch, n, _ = _setup(base, "lora", "all", freeze)
    first, c = next(iter(tasks.items()))
    ds = design(from_hf_config(hf.to_dict()), [Task("tag", 5, "tokens"), Task(first, c)], cfg, seq_len=n)
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, {"tag": 5, first: c}, per_word=["tag"])
    assert activation_bytes(ds, batch, _conditions(hf))(cfg.d_s) == saved_activation_bytes(model, "tag", batch, n)
    mem = memory_train(ds, cfg.d_s, evaluate(ds, cfg.d_s), batch=batch, cond=_conditions(hf))
    assert mem.weights == 4 * sum(p.numel() for p in model.parameters())
    assert mem.optimizer == optimizer_state_bytes(model)


# --- a multiple-choice task first: its head on each of a row's k candidate sequences (kind: choice) ---------------


@pytest.mark.parametrize("freeze", [False, True], ids=["trained", "frozen"])
@pytest.mark.parametrize("base", OPT)
def test_a_choice_heads_activations_and_state_are_torchs(base, freeze):
    """B rows of k candidates: the trunk on B·k sequences and the family's …ForMultipleChoice head (ELECTRA's sequence
    summary: no dropout before its dense; RoBERTa's and MPNet's: hidden_dropout_prob), to the byte."""
    from pals_core.budget.tasks import Task

    hf, cfg, tasks, batch, n, _ = _setup(base, "lora", "all", freeze)
    first, c = next(iter(tasks.items()))
    ds = design(from_hf_config(hf.to_dict()), [Task("mc", 3, "choice"), Task(first, c)], cfg, seq_len=n)
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, {"mc": 3, first: c}, per_candidate=["mc"])
    assert activation_bytes(ds, batch, _conditions(hf))(cfg.d_s) == saved_activation_bytes(model, "mc", batch, n)
    mem = memory_train(ds, cfg.d_s, evaluate(ds, cfg.d_s), batch=batch, cond=_conditions(hf))
    assert mem.weights == 4 * sum(p.numel() for p in model.parameters())
    assert mem.optimizer == optimizer_state_bytes(model)


@pytest.mark.parametrize(
    "base,field",
    [("roberta-3L", "classifier_dropout"), ("mpnet-3L", "classifier_dropout"), ("electra-E10", "summary_last_dropout")],
)
def test_a_choice_heads_own_dropout_rate_is_priced(base, field):
    """The rate the family's …ForMultipleChoice reads, not its sequence head's: RoBERTa's and MPNet's ignore
    classifier_dropout (hidden_dropout_prob), ELECTRA's is summary_last_dropout."""
    from pals_core.budget.tasks import Task

    hf, cfg, tasks, batch, n, _ = _setup(base, "lora", "all", False)
    setattr(hf, field, 0.0)
    ds = design(from_hf_config(hf.to_dict()), [Task("mc", 2, "choice")], cfg, seq_len=n)
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, {"mc": 2}, per_candidate=["mc"])
    assert activation_bytes(ds, batch, _conditions(hf))(cfg.d_s) == saved_activation_bytes(model, "mc", batch, n)


# --- a span task first: AutoModelForQuestionAnswering's head on every token (kind: span) ---------------------------


@pytest.mark.parametrize("freeze", [False, True], ids=["trained", "frozen"])
@pytest.mark.parametrize("base", OPT)
def test_a_span_heads_activations_and_state_are_torchs(base, freeze):
    """An extractive-QA task first: the family's question-answering head on every token (no dropout but
    DistilBERT's qa_dropout and ModernBERT's classifier dropout) — what autograd keeps, the weights, AdamW's state."""
    from pals_core.budget.tasks import Task

    hf, cfg, tasks, batch, n, _ = _setup(base, "lora", "all", freeze)
    first, c = next(iter(tasks.items()))
    ds = design(from_hf_config(hf.to_dict()), [Task("qa", 2, "span"), Task(first, c)], cfg, seq_len=n)
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, {"qa": 2, first: c}, spans=["qa"])
    assert activation_bytes(ds, batch, _conditions(hf))(cfg.d_s) == saved_activation_bytes(model, "qa", batch, n)
    mem = memory_train(ds, cfg.d_s, evaluate(ds, cfg.d_s), batch=batch, cond=_conditions(hf))
    assert mem.weights == 4 * sum(p.numel() for p in model.parameters())
    assert mem.optimizer == optimizer_state_bytes(model)
