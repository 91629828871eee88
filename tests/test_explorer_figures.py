"""The explorer's pure parts: inputs → calculator rows → figures, checked against the calculator itself."""

import math

import pytest

from explorer import calc, commands
from explorer.figures.breakdown import breakdown_compare_figure, breakdown_figure, breakdown_frame
from explorer.figures.design_space import design_space_figure
from explorer.figures.measured import measured_figure, measured_ranking_figure
from explorer.figures.paper import BAD_FILL, paper_figure
from explorer.figures.scaling import scaling_figure
from explorer.figures.size_curves import size_curves_figure
from explorer.inputs import UPLOAD, RawInputs, parse_budget, parse_inputs
from explorer.tables import table_frame
from pals_core.budget.costs import design, flops_ratio
from pals_core.budget.paper import paper_reproduction
from pals_core.budget.recommend import key_of, label
from pals_core.budget.series import budget_used, pareto_front, per_task_limit
from pals_core.budget.solver import Budget, solve
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import PRESETS
from pals_core.pricing.config import AdapterConfig
from pals_core.supervise.runs import command, launch_argv
from pals_core.train.config import TrainConfig

BERT = PRESETS["bert-base-uncased"]


def full(fig):
    """A figure's traces and layout as plotly objects (the explorer's figures hold plain data)."""
    return fig.full() if hasattr(fig, "full") else fig


def _inputs(**kw):
    return parse_inputs(RawInputs(**kw))


def test_default_inputs_are_the_paper_question():
    inp = _inputs()
    assert inp.model == BERT and [t.name for t in inp.tasks] == list(parse_tasks(8)[i].name for i in range(8))
    assert inp.budget == Budget(ratio=1.13) and inp.location is None


@pytest.mark.parametrize(
    "kind,text,expect",
    [
        ("ratio", "1.13", Budget(ratio=1.13)),
        ("ratio", "1.2x", Budget(ratio=1.2)),
        ("ratio", " 1.5× ", Budget(ratio=1.5)),
        ("extra", "15M", Budget(extra=15e6)),
        ("extra", "250k", Budget(extra=250e3)),
        ("extra", "1,500,000", Budget(extra=1.5e6)),
        ("per-task", "1.9M", Budget(per_task=1.9e6)),
    ],
)
def test_budget_text(kind, text, expect):
    assert parse_budget(kind, text) == expect


@pytest.mark.parametrize(
    "raw,needle",
    [
        (dict(budget_value="abc"), "budget ratio"),
        (dict(budget_value="0.9"), "below 1.0"),
        (dict(budget_value=""), "enter a ratio budget"),
        (dict(budget_kind="extra", budget_value="-5M"), "negative"),
        (dict(budget_kind="per-task", budget_value="lots"), "not a number"),
        (dict(glue_tasks=[]), "at least one GLUE task"),
        (dict(methods=[]), "at least one method"),
        (dict(location="layers i,j,…", location_custom="0,99"), "out of range"),
        (dict(location="layers i,j,…", location_custom="a,b"), "not all, top, bottom"),
        (dict(d_s="twelve"), "not an integer"),
        (dict(model=UPLOAD), "upload a Hugging Face config.json"),
        (dict(model=UPLOAD, config_bytes=b"{not json"), "not valid JSON"),
        (dict(model=UPLOAD, config_bytes=b'{"hidden_size": 64}'), "lacks the field"),
    ],
)
def test_bad_inputs_name_the_problem(raw, needle):
    with pytest.raises(ValueError, match=None) as e:
        _inputs(**raw)
    assert needle in str(e.value)


def test_table_is_the_calculators_rows_feasible_first():
    inp = _inputs()
    table = calc.table(inp)
    want = {(c.method, c.location): c for c in rows(BERT, parse_tasks(8), budget=Budget(ratio=1.13))}
    assert {key_of(c) for c in table} == set(want)
    for c in table:
        assert c.d_s == want[key_of(c)].d_s and c.params_task_specific == want[key_of(c)].params_task_specific
    feasible = [c.feasible for c in table]
    assert feasible == sorted(feasible, reverse=True)  # every feasible row before any infeasible one
    frame = table_frame(table)
    assert list(frame["design"]) == [label(key_of(c)) for c in table]


def test_custom_location_goes_to_within_methods_only():
    inp = _inputs(location="layers i,j,…", location_custom="3,1", methods=["pals", "proj_attn_top", "shared"])
    keys = {key_of(c) for c in calc.table(inp)}
    assert keys == {("pals", "1,3"), ("proj_attn_top", None), ("shared", None)}


def test_size_curves_mark_the_solved_size_and_the_budget_line():
    inp = _inputs(methods=["pals", "low_rank", "lhuc"], location="all")
    table = calc.table(inp)
    fig = size_curves_figure(calc.curves(inp, table))
    traces = {t.name: t for t in full(fig).data}
    for c in table:
        if c.d_s is None:
            continue
        ds = design(BERT, parse_tasks(8), AdapterConfig(method=c.method, location=c.location), check_size=False)
        solved = solve(ds, Budget(ratio=1.13))
        marker = traces[f"chosen: {label(key_of(c))}"]
        assert list(marker.x) == [solved.d_s]
        assert marker.y[0] == pytest.approx(solved.params_task_specific / 8)
        curve = traces[label(key_of(c))]
        # the curve crosses the budget line between the solved size and the next valid one
        limit = per_task_limit(ds, Budget(ratio=1.13))
        assert list(traces["budget"].y) == [pytest.approx(limit)] * 2
        below = [x for x, y in zip(curve.x, curve.y) if y <= limit]
        assert max(below) <= solved.d_s < min(x for x, y in zip(curve.x, curve.y) if y > limit)
    assert "lhuc @ all (no d_s)" in traces


def test_design_space_pareto_front_is_exactly_the_non_dominated_feasible_designs():
    table = calc.table(_inputs())
    b = Budget(ratio=1.13)
    fig = design_space_figure(table, b, chosen=("lora", "top"), recommended=("pals", "all"))
    front = next(t for t in full(fig).data if t.name == "Pareto front")
    ring = next(t for t in full(fig).data if t.name == "chosen: lora @ top")
    lora_top = next(c for c in table if key_of(c) == ("lora", "top"))
    assert list(ring.x) == [pytest.approx(1 - budget_used(lora_top, b))]
    assert list(ring.y) == [pytest.approx(100 * (flops_ratio(lora_top) - 1))]
    feasible = [(budget_used(c, b), flops_ratio(c)) for c in table if c.feasible]
    on_front = {(round(1 - x, 12), round(y, 9)) for x, y in zip(front.x, front.y)}
    for u, f in feasible:
        dominated = any(u2 >= u and f2 <= f and (u2 > u or f2 < f) for u2, f2 in feasible)
        assert ((round(u, 12), round(100 * (f - 1), 9)) in on_front) == (not dominated)
    assert len(on_front) >= 2
    points = [
        x
        for t in full(fig).data
        if t.name not in ("Pareto front",) and not t.name.startswith("chosen")
        for x in t.x
        if x is not None
    ]
    assert len(points) == sum(c.feasible for c in table)  # designs over budget are not drawn
    assert "recommended: pals @ all" in {a.text for a in full(fig).layout.annotations}
    assert "bert_layer_top" in full(fig).layout.title.text  # named as over budget instead


def test_pareto_front_small_cases():
    assert pareto_front([(1, 1), (2, 2), (2, 1), (0, 0)]) == [2, 3]
    assert pareto_front([(1, 1), (1, 1)]) == [0, 1]
    assert pareto_front([]) == []


def test_breakdown_bars_add_up_to_one_tasks_parameters():
    inp = _inputs(methods=["pals"], location="all")
    c = calc.table(inp)[0]
    frame = breakdown_frame(calc.breakdown_rows(inp, c))
    fig = breakdown_figure(frame, "t")
    total = sum(sum(t.y) for t in full(fig).data)
    cola = c.params_per_task[0]  # CoLA: head + adapter
    assert total == cola
    places = set(frame["place"])
    assert {"shared by layers", "layer 0", "layer 11", "task head"} <= places


def test_scaling_matches_the_calculators_all_task_flops():
    inp = _inputs(methods=["pals", "proj_attn_top"])
    table = calc.table(inp)
    series = calc.scaling(inp, table)
    fig = scaling_figure(series, 8)
    traces = {t.name: t for t in full(fig).data}
    for c in table:
        t = traces[label(key_of(c))]
        assert t.y[list(t.x).index(8)] == pytest.approx(c.flops_all_tasks_per_seq / 1e9)  # GFLOPs
    sep = traces["separate fine-tuned models"]
    assert sep.y[0] == pytest.approx(table[0].flops_base_per_seq / 1e9)  # one task alone = the plain model
    # top-of-BERT shares the trunk, so it beats separate models at T = 8; PALs in layer 0 share nothing
    top = traces["proj_attn_top"]
    assert top.y[-1] < sep.y[-1] < traces["pals @ all"].y[-1]


def test_paper_table_highlights_exactly_the_disagreements():
    rows_ = paper_reproduction()
    fig = paper_figure(rows_)
    fills = full(fig).data[0].cells.fill.color[0]
    assert [f == BAD_FILL for f in fills] == [not r.reproduces for r in rows_]
    assert any(not r.reproduces for r in rows_) and any(r.reproduces for r in rows_)


def test_measured_figure_plots_scores_0_to_100_with_intervals_and_references():
    from pals_core.budget.recommend import Score
    from pals_core.measured import Result

    def r(method, loc, params, mean, ci=None, n=1):
        return Result(f"/r/{method}", method, loc, 8, None, ("rte",), params, Score(mean, ci, n), {}, 100)

    results = [
        r("pals", "all", 1000, 60.0, 2.5, 3),
        r("lora", "top", 500, 55.0),
        r("shared", None, 10, 52.0),
        r("separate", None, 10**7, 63.0, 1.0, 3),
    ]
    fig = measured_figure(results, majority=47.3, chosen=("pals", "all"))
    pts = {(t.name, x, y) for t in full(fig).data for x, y in zip(t.x, t.y) if x is not None}
    assert pts == {("pals", 1000, 60.0), ("lora", 500, 55.0), ("shared", 10, 52.0), ("separate", 10**7, 63.0)}
    pals = next(t for t in full(fig).data if t.name == "pals" and t.x[0] is not None)
    assert list(pals.error_y.array) == [2.5] and pals.marker.size[0] > 12
    assert any(s.y0 == 47.3 for s in full(fig).layout.shapes)  # the majority-class line
    assert full(fig).layout.yaxis.range[1] <= 100


def test_measured_ranking_reads_apart_designs_at_one_budget():
    """PALs, low-rank and Houlsby at 1.13× sit on one spot of the trade-off plot: the ranking gives each its own row,
    best on top, with its interval and the majority-class line."""
    from pals_core.budget.recommend import Score
    from pals_core.measured import Result

    def r(method, params, mean, ci=None, n=1, path=None, seed=None):
        ref = method in ("shared", "separate")
        return Result(
            path or f"/r/{method}",
            method,
            None if ref else "all",
            None if ref else 8,
            None,
            ("rte",),
            params,
            Score(mean, ci, n),
            {},
            100,
            seed,
        )

    results = [
        r("low_rank", 2_944_875, 62.5),
        r("pals", 2_809_485, 63.0, 1.2, 3),
        r("houlsby", 2_933_325, 62.1, seed=1),
        r("separate", 9 * 10**7, 65.0),
        r("pals", 2_809_485, 61.0, path="/other"),
    ]
    fig = full(measured_ranking_figure(results, majority=34.4, chosen=("pals", "all")))
    [trace] = fig.data
    top_down = list(reversed(trace.y))  # plotly's first category is the bottom row
    assert top_down == [
        "separate · 1 run",
        "pals @ all, d_s 8 · 3 runs",
        "low_rank @ all, d_s 8 · 1 run",
        "houlsby @ all, d_s 8 · seed 1",
        "pals @ all, d_s 8 · 1 run",
    ]
    assert list(reversed(trace.text)) == ["65.0", "63.0 ± 1.2", "62.5", "62.1", "61.0"]
    assert list(trace.error_x.array) == [0, 0, 0, 1.2, 0] and trace.error_x.visible
    assert any(s.x0 == 34.4 for s in fig.layout.shapes)  # the majority class
    lo, hi = fig.layout.xaxis.range
    assert lo < 34.4 and hi > 65.0
    same = full(measured_ranking_figure([r("pals", 1, 60.0), r("pals", 1, 61.0, path="/b")]))
    assert len(set(same.data[0].y)) == 2  # two results of one design: two rows, not one


def _run(adapter=None, **kw) -> TrainConfig:
    base = dict(
        tasks=["rte"],
        adapter=adapter or AdapterConfig(method="pals", d_s=24),
        model="tiny",
        glue_dir="/g",
        out="runs/x",
    )
    return TrainConfig(**{**base, **kw})


def test_launch_argv_and_commands():
    cfg = _run(
        AdapterConfig(method="pals", d_s=204, location="top", per_task_pooler=True),
        tasks=["rte", "mrpc"],
        steps=10,
        max_eval_examples=50,
    )
    argv = launch_argv(cfg)
    assert argv[1:3] == ["-m", "pals_core.cli.train"]
    a = argv[3:]
    assert a[a.index("--d-s") + 1] == "204" and a[a.index("--location") + 1] == "top" and "--per-task-pooler" in a
    assert a[a.index("--out") + 1] == "runs/x" and "--resume" not in a
    assert command(
        cfg
    ).startswith(
        "pals-train --method pals --d-s 204 --location top --per-task-pooler --train-trunk --tasks rte,mrpc"  # the trunk stated
    )
    assert commands.accelerate_command(cfg, 4).startswith("accelerate launch --num_processes 4 -m pals_core.cli.train")
    assert commands.torchrun_command(cfg, 2).startswith(
        "torchrun --standalone --nproc_per_node 2 -m pals_core.cli.train"
    )
    assert "--resume" in launch_argv(cfg, resume=True)


@pytest.mark.parametrize(
    "kw,needle",
    [
        (dict(adapter=AdapterConfig(method="pals")), "needs --d-s"),
        (dict(adapter=AdapterConfig(method="pals", d_s=100)), "not divisible"),
        (dict(adapter=AdapterConfig(method="lhuc", d_s=8)), "no adapter size"),
        (dict(adapter=AdapterConfig(method="proj_attn_top", d_s=24, location="top")), "takes no location"),
        (dict(adapter=AdapterConfig(method="pals", d_s=24), tasks=["nope"]), "nope"),
        (dict(adapter=AdapterConfig(method="pals", d_s=48), budget=Budget(ratio=1.0001)), "does not fit pals @ all"),
        (dict(adapter=AdapterConfig(method="bert_layer_top"), budget=Budget(ratio=1.0001)), "over the budget"),
    ],
)
def test_launcher_refuses_what_the_trainer_would(kw, needle):
    with pytest.raises(ValueError) as e:
        commands.check_with_trainer(_run(**kw))
    assert needle in str(e.value)


def test_launch_checked_by_the_trainers_own_parser(tmp_path):
    resolved = commands.check_with_trainer(
        _run(out=str(tmp_path / "r"), budget=Budget(ratio=1.5), adapter=AdapterConfig(method="pals"))
    )
    assert resolved.adapter.d_s is not None and resolved.adapter.d_s % 12 == 0  # solved on the tiny model
    with pytest.raises(ValueError, match="max_len"):
        commands.check_with_trainer(_run(out=str(tmp_path / "r"), max_len=4))
    assert not (tmp_path / "r").exists()  # nothing written by a check


def test_flops_ratio_is_one_for_the_shared_model():
    c = calc.table(_inputs(methods=["shared"]))[0]
    assert math.isclose(flops_ratio(c), 1.0)


def test_every_figure_is_valid_plotly():
    """Figures are built unvalidated for speed; plotly's own validator must accept every property they set."""
    import plotly.graph_objects as go

    from pals_core.budget.recommend import Score
    from pals_core.measured import Result

    inp = _inputs()
    table = calc.table(inp)
    frame = breakdown_frame(calc.breakdown_rows(inp, table[0]))
    built = [
        size_curves_figure(calc.curves(inp, calc.at_location(table, "all")), key_of(table[0])),
        design_space_figure(table, inp.budget, key_of(table[0]), key_of(table[1])),
        breakdown_figure(frame, "t"),
        breakdown_compare_figure({"a": frame, "b": frame}, chosen="a"),
        scaling_figure(calc.scaling(inp, calc.at_location(table, "all")), 8, key_of(table[0])),
        measured_figure([Result("/r", "pals", "all", 8, None, ("rte",), 1000, Score(60.0, 2.0, 3), {}, 10)], 50.0),
        measured_ranking_figure(
            [Result("/r", "pals", "all", 8, None, ("rte",), 1000, Score(60.0, 2.0, 3), {}, 10)], 50.0, ("pals", "all")
        ),
    ]
    for f in built:
        go.Figure(f.to_dict())  # raises ValueError on an invalid property
