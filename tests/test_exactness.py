"""The calculator's counts are the torch model's counts, to the parameter and to the FLOP (docs/design.md "Two counting
conventions", "FLOPs", "Public interface").

Every built method × location (all / top / bottom / an explicit list) × convention × several small
random base configurations of every family with a torch trunk (odd sizes, d_s not a power of two, per-task
poolers, ELECTRA with embedding width ≠ hidden; a method a family refuses is checked to be refused):
  params_total (exact, paper)  == sum(p.numel()) of MultiTaskBert.from_base_config (paper: minus biases and
                                  LayerNorm parameters, picked out by parameter name)
  flops_per_seq                == FlopCounterMode on one sequence of n tokens through the first task
  flops_all_tasks_per_seq      == FlopCounterMode on predict_all (every task, shared operations)

The grid is covered pairwise (tests/pairwise.py): every pair of family, base configuration, method, location,
per-task pooler and convention levels that some valid case holds is run (base × method only as far as family ×
method needs), with every family × every method at one location (all layers) and every location on one base
(odd-3L, PALs). ``PALS_FULL_GRID=1`` runs the full product (about 1,300 cases).
"""

from __future__ import annotations

from functools import cache

import pytest
import torch
from flops import count_flops, count_forward_flops, count_predict_all_flops, register_cpu_sdpa_formulas
from pairwise import grid
from transformers import BertConfig

from pals_core.budget.costs import design
from pals_core.budget.solver import at_size
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.families.registry import get_family
from pals_core.families.shapes import from_hf_config
from pals_core.methods.adapters import ADAPTERS
from pals_core.methods.registry import METHODS, get_method
from pals_core.model import MultiTaskBert, _hf_config
from pals_core.pricing.config import AdapterConfig

torch.set_num_threads(1)

# name: (HF config fields, tasks, d_s for attention methods (h_s = heads), d_s otherwise, h_s, n, per-task pooler)
BASES = {
    "odd-3L": (
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
        11,
        False,
    ),
    "4L-pooler": (
        dict(
            hidden_size=24,
            num_hidden_layers=4,
            num_attention_heads=4,
            intermediate_size=40,
            vocab_size=41,
            max_position_embeddings=16,
            type_vocab_size=2,
        ),
        {"mnli": 3, "cola": 2, "stsb": 1},
        10,
        5,
        5,
        9,
        True,
    ),
    "5L": (
        dict(
            hidden_size=16,
            num_hidden_layers=5,
            num_attention_heads=2,
            intermediate_size=33,
            vocab_size=29,
            max_position_embeddings=12,
            type_vocab_size=1,
        ),
        {"a": 4},
        6,
        3,
        2,
        12,
        False,
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
        ),
        {"sst2": 2, "stsb": 1},
        14,
        11,
        7,
        6,
        True,
    ),
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
        9,
        True,
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
        10,
        False,
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
        ),
        {"cola": 2, "stsb": 1},
        9,
        4,
        3,
        8,
        False,
    ),
    # DeBERTa with its own position projections, absolute positions, token types, E ≠ d and the layer-0 convolution
    "deberta-unshared": (
        dict(
            model_type="deberta-v2",
            hidden_size=24,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=37,
            vocab_size=51,
            relative_attention=True,
            position_buckets=5,
            pos_att_type="p2c|c2p",
            share_att_key=False,
            position_biased_input=True,
            type_vocab_size=2,
            embedding_size=14,
            norm_rel_ebd="layer_norm",
            conv_kernel_size=3,
            conv_groups=2,
            max_position_embeddings=32,
        ),
        {"rte": 2, "stsb": 1},
        8,
        5,
        4,
        11,
        False,
    ),
    # DeBERTa-v3 style: share_att_key, no absolute positions, no token types, c2p only over max_relative_positions
    "deberta-shared": (
        dict(
            model_type="deberta-v2",
            hidden_size=18,
            num_hidden_layers=2,
            num_attention_heads=3,
            intermediate_size=23,
            vocab_size=47,
            relative_attention=True,
            max_relative_positions=7,
            pos_att_type=["c2p"],
            share_att_key=True,
            position_biased_input=False,
            type_vocab_size=0,
            max_position_embeddings=32,
        ),
        {"sst2": 2},
        6,
        4,
        3,
        10,
        False,
    ),
    # ModernBERT: GLU, biases on the MLP and the norms, a local window (4) shorter than the sequence (11)
    "modernbert-local": (
        dict(
            model_type="modernbert",
            hidden_size=24,
            num_hidden_layers=4,
            num_attention_heads=4,
            intermediate_size=19,
            vocab_size=53,
            local_attention=4,
            global_attn_every_n_layers=2,
            mlp_bias=True,
            norm_bias=True,
            classifier_pooling="mean",
            pad_token_id=0,
            eos_token_id=1,
            bos_token_id=2,
            cls_token_id=2,
            sep_token_id=1,
        ),
        {"mnli": 3, "stsb": 1},
        8,
        5,
        4,
        11,
        False,
    ),
    # MPNet: BERT's layers + the relative position bias (its R × h table beside the layers), per-task poolers (MPNet's
    # classification head exactly) and the shared pooler with a larger bucket table
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
        9,
        True,
    ),
    "mpnet-R40": (
        dict(
            model_type="mpnet",
            hidden_size=20,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=27,
            vocab_size=41,
            max_position_embeddings=24,
            relative_attention_num_buckets=40,
            hidden_act="relu",
        ),
        {"mnli": 3},
        8,
        5,
        4,
        12,
        False,
    ),
    # ALBERT: factorised E → d embeddings (the mapping always there), one layer's weights run by all L layers, each
    # adapted layer with its own adapter; the shared pooler
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
            type_vocab_size=2,
        ),
        {"rte": 2, "stsb": 1},
        8,
        5,
        4,
        9,
        True,
    ),
}
EXPLICIT = {
    "odd-3L": [0, 2],
    "4L-pooler": [1, 2],
    "5L": [3],
    "eager-2L": [1],
    "roberta-3L": [0, 2],
    "distilbert-3L": [1],
    "electra-E10": [0, 1],
    "deberta-unshared": [0, 2],
    "deberta-shared": [1],
    "modernbert-local": [0, 3],
    "mpnet-3L": [0, 2],
    "mpnet-R40": [1],
    "albert-E10": [0, 2],
}


def _family(base: str):
    return get_family(from_hf_config(BASES[base][0]).family)


BUILT = [m for m in METHODS if m in ADAPTERS]


REFERENCE = "odd-3L"  # the one base every location runs on
CONVENTIONS = ("exact", "paper")


def _locations(method: str) -> tuple:
    return ("all", "top", "bottom", "explicit") if get_method(method).within else (None,)


def _full_grid(conventions=(None,)) -> list[tuple]:
    """Every valid (family, base, method, location, per-task pooler, convention): the product less what a family
    refuses (checked to be refused below)."""
    return [
        (_family(base).name, base, method, loc, BASES[base][6], conv)
        for base in BASES
        for method in BUILT
        if not _family(base).refusal(method)
        for loc in _locations(method)
        for conv in conventions
    ]


def _at_one_location(case: tuple) -> list[tuple]:
    """What a case adds to "every family × every method at one location": all layers (or none to choose)."""
    return [(case[0], case[2])] if case[3] in ("all", None) else []


def _covering(conventions=(None,), prefer=()) -> list[tuple]:
    """The cases run: every location on the reference base (PALs), every family × every method at one location,
    and pairwise around them (base × method not required: a base stands for its family there); cases whose (base,
    method, location) is in ``prefer`` come first on a tie (their models are built already)."""
    full = _full_grid(conventions)
    named = [c for c in full if c[1] == REFERENCE and c[2] == "pals"]
    preferred = set(prefer)
    ordered = [c for c in full if c[1:4] in preferred] + [c for c in full if c[1:4] not in preferred]
    chosen = set(grid(ordered, keep=named, skip={(1, 2)}, also=_at_one_location))
    return [c for c in full if c in chosen]


CASES = [c[1:4] for c in _covering()]
IDS = [f"{b}-{m}-{loc}" if loc else f"{b}-{m}" for b, m, loc in CASES]
PARAM_CASES = [(*c[1:4], c[5]) for c in _covering(CONVENTIONS, prefer=CASES)]
PARAM_IDS = [f"{b}-{m}-{loc}-{conv}" if loc else f"{b}-{m}-{conv}" for b, m, loc, conv in PARAM_CASES]


def _config(base: str, method: str, loc):
    fields, tasks, ds_attn, ds_other, heads, n, pooler = BASES[base]
    m = get_method(method)
    d_s = (ds_attn if m.attention else ds_other) if m.sized else None
    location = EXPLICIT[base] if loc == "explicit" else loc
    cfg = AdapterConfig(
        method=method, d_s=d_s, location=location, heads=heads, n_top=2, ffn_ratio=3, per_task_pooler=pooler
    )
    return _hf_config(fields), cfg, tasks, n


@cache
def _model(base: str, method: str, loc) -> MultiTaskBert:
    hf, cfg, tasks, _ = _config(base, method, loc)
    torch.manual_seed(0)
    return MultiTaskBert.from_base_config(hf, cfg, tasks)


def _cost(base: str, method: str, loc, convention: str):
    hf, cfg, tasks, n = _config(base, method, loc)
    return at_size(
        design(from_hf_config(hf.to_dict()), parse_tasks(tasks), cfg, convention=convention, seq_len=n), cfg.d_s
    )


def test_every_method_of_the_calculator_is_built():
    assert set(METHODS) <= set(ADAPTERS)
    assert {
        "shared",
        "pals",
        "pals_unshared",
        "low_rank",
        "houlsby",
        "lora",
        "lhuc",
        "ia3",
        "proj_attn_top",
        "proj_ffn_top",
        "bert_layer_top",
        "ca_mtl",
    } <= set(BUILT)


@pytest.mark.parametrize("base,method,loc,convention", PARAM_CASES, ids=PARAM_IDS)
def test_parameters_match_the_calculator(base, method, loc, convention):
    model = _model(base, method, loc)
    named = dict(model.named_parameters())
    if convention == "paper":  # every bias vector and every LayerNorm parameter goes (BERT: by name, too)
        dropped = set(model.bias_and_norm_parameter_names())
        kept = [n for n in named if n not in dropped]
        if _family(base).name == "bert":
            assert kept == [n for n in named if not (n.endswith(".bias") or ".LayerNorm." in n)]
        assert model.num_parameters("paper") == sum(named[n].numel() for n in kept)
    else:
        kept = list(named)
    assert sum(named[n].numel() for n in kept) == _cost(base, method, loc, convention).params_total


@pytest.mark.parametrize("base,method,loc", CASES, ids=IDS)
def test_forward_flops_match_the_calculator(base, method, loc):
    model = _model(base, method, loc)
    _, _, tasks, n = _config(base, method, loc)
    cost = _cost(base, method, loc, "exact")
    assert count_forward_flops(model, next(iter(tasks)), n) == cost.flops_per_seq
    assert count_predict_all_flops(model, n) == cost.flops_all_tasks_per_seq


@pytest.mark.parametrize("base", [b for b in BASES if _family(b).refuses])
def test_a_method_a_family_refuses_is_refused_in_one_line(base):
    for method, reason in _family(base).refuses:
        hf, cfg, tasks, _ = _config(base, method, "all")
        with pytest.raises(ValueError, match="does not apply") as e:
            MultiTaskBert.from_base_config(hf, cfg, tasks)
        assert "\n" not in str(e.value) and reason in str(e.value)


def test_rows_the_cli_prints_match_the_model():
    """The path of ``pals-budget --d-s N --json`` (``rows``) on a MiniLM-shaped model with 8 GLUE tasks."""
    hf = BertConfig(
        hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, vocab_size=30522
    )
    tasks = parse_tasks(8)
    for method, loc in [("pals", "top"), ("lora", "all"), ("proj_attn_top", None)]:
        [row] = rows(from_hf_config(hf.to_dict()), tasks, methods=[method], location=loc, d_s=48, seq_len=16)
        with torch.device("meta"):
            model = MultiTaskBert.from_base_config(
                hf, AdapterConfig(method=method, d_s=48, location=loc), {t.name: t.num_labels for t in tasks}
            )
        assert sum(p.numel() for p in model.parameters()) == row.params_total


def test_eager_attention_runs_adapters_eagerly_too():
    """With ``attn_implementation="eager"`` the adapters' attention is two counted matmuls like the trunk's:
    no sdpa kernel runs, so FlopCounterMode needs no extra formula."""
    from torch.utils.flop_counter import FlopCounterMode

    for method in ("pals", "proj_attn_top"):
        model = _model("eager-2L", method, "all" if get_method(method).within else None).eval()
        ids = torch.arange(6).view(1, 6)
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(task="sst2", input_ids=ids, attention_mask=torch.ones_like(ids))
        ops = {str(op) for op in counter.get_flop_counts()["Global"]}
        assert ops <= {"aten.addmm", "aten.mm", "aten.bmm"}, ops
        assert (
            counter.get_total_flops()
            == _cost("eager-2L", method, "all" if get_method(method).within else None, "exact").flops_per_seq
        )


def test_cpu_attention_is_counted_and_registration_is_idempotent():
    register_cpu_sdpa_formulas()
    register_cpu_sdpa_formulas()
    q = torch.randn(1, 3, 10, 4)
    with torch.no_grad():
        flops = count_flops(torch.nn.functional.scaled_dot_product_attention, q, q, q)
    assert flops == 4 * 10 * 10 * 12  # QKᵀ and AV: 2·n²·width each


# --- a tagging task (kind: tokens) beside a sentence task: its head on every token, counted by the family --------


def _with_a_tagging_task(base: str, method: str):
    from pals_core.budget.tasks import Task

    hf, cfg, tasks, n = _config(base, method, "all" if get_method(method).within else None)
    first, c = next(iter(tasks.items()))
    spec = {"tag": 5, first: c}
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, spec, per_word=["tag"])
    kinds = [Task("tag", 5, "tokens"), Task(first, c)]

    def cost(convention: str):
        return at_size(design(from_hf_config(hf.to_dict()), kinds, cfg, convention=convention, seq_len=n), cfg.d_s)

    return model, cost, n


@pytest.mark.parametrize("method", ["shared", "lora"])
@pytest.mark.parametrize("base", list(BASES))
def test_a_tagging_head_is_counted_as_torch_builds_and_runs_it(base, method):
    if _family(base).refusal(method):
        pytest.skip(f"{base} refuses {method}")
    model, cost, n = _with_a_tagging_task(base, method)
    assert model.num_parameters("exact") == cost("exact").params_total
    assert model.num_parameters("paper") == cost("paper").params_total
    assert "tag" not in (model.poolers or {})  # a per-word head reads every token: no pooler of its own
    exact = cost("exact")
    assert count_forward_flops(model, "tag", n) == exact.flops_per_seq
    assert count_predict_all_flops(model, n) == exact.flops_all_tasks_per_seq
    logits = model(task="tag", input_ids=torch.ones(2, n, dtype=torch.long))
    assert logits.shape == (2, n, 5)


# --- a multiple-choice task (kind: choice) beside a sentence task: k candidate sequences a row ---------------------


def _with_a_choice_task(base: str, method: str, k: int = 3):
    from pals_core.budget.tasks import Task

    hf, cfg, tasks, n = _config(base, method, "all" if get_method(method).within else None)
    first, c = next(iter(tasks.items()))
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, {"mc": k, first: c}, per_candidate=["mc"])
    kinds = [Task("mc", k, "choice"), Task(first, c)]

    def cost(convention: str):
        return at_size(design(from_hf_config(hf.to_dict()), kinds, cfg, convention=convention, seq_len=n), cfg.d_s)

    return model, cost, n


@pytest.mark.parametrize("method", ["shared", "lora"])
@pytest.mark.parametrize("base", list(BASES))
def test_a_choice_head_is_counted_as_torch_builds_and_runs_it(base, method):
    """The family's …ForMultipleChoice head (its sequence head with one output; ELECTRA's sequence summary) on each
    of a row's k sequences: parameters, FLOPs of one row (k sequences), and every task's FLOPs (the choice task on its
    own k sequences, the others sharing one), as torch builds and runs them."""
    if _family(base).refusal(method):
        pytest.skip(f"{base} refuses {method}")
    model, cost, n = _with_a_choice_task(base, method)
    assert model.num_parameters("exact") == cost("exact").params_total
    assert model.num_parameters("paper") == cost("paper").params_total
    assert sum(p.numel() for p in model.heads["mc"].parameters()) == get_family(model.family).head_params(
        model.shape, 1, False
    )
    exact = cost("exact")
    assert count_forward_flops(model, "mc", n) == exact.flops_per_seq
    assert count_predict_all_flops(model, n) == exact.flops_all_tasks_per_seq
    logits = model(task="mc", input_ids=torch.ones(2, 3, n, dtype=torch.long))
    assert logits.shape == (2, 3)
    torch.testing.assert_close(logits, model(task="mc", input_ids=torch.ones(6, n, dtype=torch.long)))


def test_a_choice_row_costs_k_sequences_of_the_same_path():
    """FLOPs of a row grow with k exactly as k sequences through the path: 4 candidates cost twice 2."""
    from pals_core.budget.tasks import Task

    hf, cfg, tasks, n = _config("odd-3L", "lora", "all")
    shape = from_hf_config(hf.to_dict())
    two, four = (at_size(design(shape, [Task("mc", k, "choice")], cfg, seq_len=n), cfg.d_s) for k in (2, 4))
    assert four.flops_per_seq == 2 * two.flops_per_seq and four.params_total == two.params_total


@pytest.mark.slow
@pytest.mark.parametrize("method", BUILT)
@pytest.mark.parametrize("base", ["odd-3L", "deberta-unshared"])
def test_a_choice_row_is_priced_exactly_by_every_method(base, method):
    """k sequences in one forward cost k times a sequence less what runs once a forward whatever the batch:
    DeBERTa's relative-position projections (``Family.fixed_flops``), CA-MTL's task-conditioned weights and a copied
    top layer's projections (``Method.fixed_flops``)."""
    if _family(base).refusal(method):
        pytest.skip(f"{base} refuses {method}")
    model, cost, n = _with_a_choice_task(base, method)
    exact = cost("exact")
    assert model.num_parameters("exact") == exact.params_total
    assert count_forward_flops(model, "mc", n) == exact.flops_per_seq
    assert count_predict_all_flops(model, n) == exact.flops_all_tasks_per_seq


# --- a span task (kind: span) beside a sentence task: AutoModelForQuestionAnswering's head on every token ---------


@pytest.mark.parametrize("method", ["shared", "lora"])
@pytest.mark.parametrize("base", list(BASES))
def test_a_span_head_is_counted_as_torch_builds_and_runs_it(base, method):
    """Parameters (both conventions), FLOPs of its path and of every task's pass, its (B, n, 2) logits; the head is
    the family's question-answering head, its dropout that head's (none but DistilBERT's qa_dropout, ModernBERT's
    classifier dropout)."""
    from transformers import AutoModelForQuestionAnswering

    from pals_core.budget.tasks import Task

    if _family(base).refusal(method):
        pytest.skip(f"{base} refuses {method}")
    hf, cfg, tasks, n = _config(base, method, "all" if get_method(method).within else None)
    first, c = next(iter(tasks.items()))
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, {"qa": 2, first: c}, spans=["qa"])
    kinds = [Task("qa", 2, "span"), Task(first, c)]

    def cost(convention: str):
        return at_size(design(from_hf_config(hf.to_dict()), kinds, cfg, convention=convention, seq_len=n), cfg.d_s)

    assert model.num_parameters("exact") == cost("exact").params_total
    assert model.num_parameters("paper") == cost("paper").params_total
    assert "qa" not in (model.poolers or {})
    assert count_forward_flops(model, "qa", n) == cost("exact").flops_per_seq
    assert count_predict_all_flops(model, n) == cost("exact").flops_all_tasks_per_seq
    assert model(task="qa", input_ids=torch.ones(2, n, dtype=torch.long)).shape == (2, n, 2)
    qa = AutoModelForQuestionAnswering.from_config(hf)
    rates = {m.p for name, m in qa.named_modules() if isinstance(m, torch.nn.Dropout) and "." not in name}
    assert {model.span_dropout.p} == (rates or {0.0}), rates  # the head's own dropout (not the trunk's)
