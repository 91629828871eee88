"""CA-MTL in the calculator: hand-computed counts on a tiny model (pals_core/methods/ca_mtl/cost.py)."""

import pytest

from pals_core.budget.costs import base_params, breakdown, design
from pals_core.budget.methods import check_config
from pals_core.budget.solver import Budget, at_size, solve
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.cli.budget import main as budget_main
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.method import bert_layer_flops
from pals_core.pricing.shape import BaseModel

# d = 10, L = 4, d_ff = 20, V + P + Y = 68
TINY = BaseModel("t", hidden=10, layers=4, heads=2, intermediate=20, vocab=50, positions=16, token_types=2)
LAYER = 4 * (10 * 10 + 10) + (10 * 20 + 20) + (20 * 10 + 10) + 2 * 20  # 910 exact
EMBED = 68 * 10 + 20  # 700 exact


def cfg(**kw):
    base = dict(method="ca_mtl", d_s=3, cond_attn_max_len=8, cond_attn_blocks=2)  # m = 4
    base.update(kw)
    return AdapterConfig(**base)


def cost(tasks=("rte", "stsb"), convention="exact", seq_len=16, **kw):
    ds = design(TINY, parse_tasks(list(tasks)), cfg(**kw), convention=convention, seq_len=seq_len)
    return ds, at_size(ds, ds.config.d_s)


def test_exact_counts_by_hand():
    ds, c = cost()
    film_d = 10 * 20 + 20  # Linear(d_z=10, 2d)
    shared = (
        (10 * 10 + 10)
        + film_d  # task transformation, conditional alignment
        + 4 * ((8 * 4) + (10 * 8 + 8))  # K = all 4 layers: the M × m = 8 × 4 blocks + Linear(d_z, 2m)
        + 2 * 2 * film_d  # C = the top 2 layers: two gain-only conditional LayerNorms each
        + (10 * 10 + 10)
        + film_d
        + (10 * 3 + 3)
        + (3 * 10 + 10)  # adapter layer 3: T, FiLM, D, U (d_s = 3)
        + film_d
        + 2 * 10
    )  # its own conditional LayerNorm: generator, gain and bias
    assert shared == 2333
    assert c.params_adapter_shared == shared
    assert c.params_adapter_per_task == 10  # one task embedding of d_z = d = 10
    heads = (10 * 2 + 2) + (10 * 1 + 1)
    assert c.params_task_specific == shared + 2 * 10 + heads
    assert c.params_total == base_params(TINY) + shared + 2 * 10 + heads
    assert c.params_per_task == [10 + 22, 10 + 11]
    # the embedding layer and layer 0 (⌊L/2⌋ − 1, the released 0–4 of 12) frozen
    assert c.params_trained == c.params_total - (EMBED + 1 * LAYER)


def test_released_bert_base_with_the_8_glue_tasks_is_129_235_232():
    """CA-MTL built as released, BERT-base, the 8 GLUE tasks, d_s = d/3 = 256."""
    from pals_core.families.shapes import load_model

    [row] = rows(load_model("bert-base-uncased"), parse_tasks(8), methods=["ca_mtl"], location="all", d_s=256)
    assert row.location == "all" and row.params_total == 129_235_232


def test_paper_convention_drops_biases_only():
    _, c = cost(convention="paper")
    shared = (
        10 * 10 + 10 * 20 + 4 * (8 * 4 + 10 * 8) + 2 * 2 * 10 * 20 + (10 * 10 + 10 * 20 + 10 * 3 + 3 * 10) + 10 * 20
    )
    assert c.params_adapter_shared == shared == 2108
    assert c.params_adapter_per_task == 10
    frozen_paper = 68 * 10 + 1 * (4 * 100 + 2 * 200)
    assert c.params_trained == c.params_total - frozen_paper


def test_flops_by_hand():
    ds, c = cost(seq_len=16)
    n = 16
    extra = (
        2 * 10 * 10
        + 2 * 10 * 20  # z = W e (rows = 1), alignment generator
        + 4 * (2 * 10 * 8)  # every layer: the attention-bias generator
        + 2 * (2 * 2 * 10 * 20)  # the top half: two gain generators
        + 2 * 10 * 10
        + 2 * 2 * 10 * 20
        + 2 * n * 10 * 3 * 2
    )  # adapter layer: T, FiLM + CLN₃ generators, D and U
    assert extra == 5760
    assert c.flops_per_seq == c.flops_base_per_seq + extra
    # conditional alignment changes the embeddings per task: nothing is shared between tasks
    first_path = {t: c.flops_per_seq - 2 * 10 * 2 + 2 * 10 * t.num_labels for t in ds.tasks}
    assert c.flops_all_tasks_per_seq == sum(first_path.values())


def test_flops_do_not_depend_on_the_bias_layout_but_params_do():
    _, a = cost(cond_attn_max_len=8, cond_attn_blocks=2)
    _, b = cost(cond_attn_max_len=8, cond_attn_blocks=4)  # m = 2: an 8 × 2 matrix instead of 8 × 4
    assert a.params_adapter_shared - b.params_adapter_shared == 4 * ((8 * 4 - 8 * 2) + (10 * 8 + 8 - (10 * 4 + 4)))
    assert a.flops_per_seq - b.flops_per_seq == 4 * (2 * 10 * 8 - 2 * 10 * 4)


def test_location_picks_the_conditional_layers_and_frozen_layers_are_configurable():
    _, all_ = cost()
    _, top = cost(location="top")
    assert top.layers == [2, 3]
    per_layer = (8 * 4) + (10 * 8 + 8)  # location moves the conditional attention only
    assert all_.params_adapter_shared - top.params_adapter_shared == 2 * per_layer
    _, norms = cost(cond_norm_layers=4)  # the conditional LayerNorm has its own setting
    assert norms.params_adapter_shared - all_.params_adapter_shared == 2 * 2 * (10 * 20 + 20)
    _, none = cost(frozen_layers=0)
    assert none.params_trained == none.params_total
    _, three = cost(frozen_layers=3, task_embedding_dim=4, cond_adapter_layers=2)
    assert three.params_trained == three.params_total - (EMBED + 3 * LAYER)
    assert three.params_adapter_per_task == 4
    _, frozen = cost(freeze_trunk=True)
    assert frozen.params_trained == frozen.params_task_specific


@pytest.mark.parametrize(
    "kw,message",
    [
        (dict(frozen_layers=5), "frozen_layers"),
        (dict(frozen_layers=-1), "frozen_layers"),
        (dict(task_embedding_dim=0), "task_embedding_dim"),
        (dict(cond_attn_blocks=9), "cond_attn_blocks"),
        (dict(cond_attn_max_len=0), "cond_attn_max_len"),
        (dict(cond_adapter_layers=5), "cond_adapter_layers"),
        (dict(cond_norm_layers=5), "cond_norm_layers"),
        (dict(cond_norm_layers=-1), "cond_norm_layers"),
        (dict(d_s=None), "needs an adapter size"),
        (dict(location="7"), "out of range"),
    ],
)
def test_bad_configs_name_the_field(kw, message):
    with pytest.raises(ValueError, match=message):
        check_config(TINY, cfg(**kw))


def test_budgets_size_the_bottleneck():
    tasks = parse_tasks("rte,stsb,mnli")
    ds = design(TINY, tasks, cfg(d_s=None), check_size=False)
    c = solve(ds, Budget(extra=4000))
    assert c.feasible and c.params_task_specific <= 4000 < at_size(ds, c.d_s + 1).params_task_specific
    # a per-task cap amortises the shared modules over the T tasks: embedding + head + shared / T ≤ p
    p = 1200
    c = solve(ds, Budget(per_task=p))
    share = lambda s: at_size(ds, s).params_adapter_shared / 3
    assert c.feasible and max(c.params_per_task) + share(c.d_s) <= p < max(c.params_per_task) + share(c.d_s + 1)
    assert c.d_s <= c.d_s_unconstrained < c.d_s + 1


def test_breakdown_lists_shared_parts_first():
    ds, _ = cost(location="top")
    parts = breakdown(ds, 3)
    assert [(p["part"], p["shared"]) for p in parts[:2]] == [
        ("task-embedding transformation", True),
        ("conditional alignment", True),
    ]
    assert ("task embedding", False, 10) in [(p["part"], p["shared"], p["params"]) for p in parts]
    assert sum(p["params"] for p in parts if p["shared"]) == at_size(ds, 3).params_adapter_shared


def test_other_methods_keep_their_shared_operations():
    """The CA-MTL flag leaves every other method's all-task FLOPs as docs/design.md "FLOPs" says."""
    layer = bert_layer_flops(TINY, 16)  # n = 16: TINY's longest sequence
    pooler, head = 2 * 10 * 10, 2 * 10 * 2
    for r in rows(TINY, parse_tasks(3), d_s=4, heads=2, seq_len=16):
        extra = r.flops_per_seq - r.flops_base_per_seq
        if r.method == "ca_mtl":
            assert r.flops_all_tasks_per_seq == 3 * r.flops_per_seq  # every layer once per task
        elif r.method == "shared":
            assert r.flops_all_tasks_per_seq == 4 * layer + pooler + 3 * head
        else:
            lowest = r.layers[0] if r.layers else TINY.layers
            assert r.flops_all_tasks_per_seq == lowest * layer + 3 * ((4 - lowest) * layer + extra + pooler + head), (
                r.method
            )


def test_cli_lists_ca_mtl(capsys):
    assert (
        budget_main(
            ["--model", "minilm", "--tasks", "rte,stsb", "--method", "ca_mtl", "--location", "top", "--d-s", "128"]
        )
        == 0
    )
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("ca_mtl"))
    assert row[:3] == ["ca_mtl", "top", "128"]
    assert budget_main(["--model", "minilm", "--tasks", "5", "--per-task", "250k"]) == 0
    assert sum(line.startswith("ca_mtl") for line in capsys.readouterr().out.splitlines()) == 3
