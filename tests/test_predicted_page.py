"""The page's answer with predicted scores: designs ranked by the score their size is predicted
to reach ("predicted from N runs at d_s a–b"), the figure of measured points, fitted curve, band and the budget's
size, and the next run worth measuring with its launch button. Real app (AppTest), synthetic finished runs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.inputs import TINY
from pals_core.pricing.config import AdapterConfig
from pals_core.supervise.runs import cancel, list_runs
from pals_core.train.config import TrainConfig

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TASKS = ["rte", "mrpc"]


def write_runs(root, method, sizes, base, slope, seeds=(0, 1), noise=0.3, rng=random.Random(0)):
    for d in sizes:
        for s in seeds:
            folder = root / f"{method}-{d}" / f"seed-{s}"
            folder.mkdir(parents=True)
            cfg = TrainConfig(
                tasks=TASKS,
                adapter=AdapterConfig(method=method, d_s=d, freeze_trunk=True),
                model="tiny",
                steps=300,
                seed=s,
                out=str(folder),
            ).as_dict()
            y = (base + slope * math.log(d) + rng.gauss(0, noise)) / 100
            summary = {"config": cfg, "average": y, "scores": {t: {"accuracy": y} for t in TASKS}, "steps": 300}
            (folder / "summary.json").write_text(json.dumps(summary))


@pytest.fixture
def page(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("PALS_RUNS_DIR", str(runs))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    write_runs(runs, "houlsby", (1, 2, 4, 8, 16, 32), 60.0, 1.0)  # predicted ≈ 60 + ln d_s
    write_runs(runs, "lora", (1, 2, 4, 8, 16, 32), 58.0, 1.0)  # about 2 points below houlsby everywhere
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.sidebar.selectbox(key="model").set_value(TINY).run()
    at.sidebar.multiselect(key="glue_tasks").set_value(TASKS).run()
    at.sidebar.text_input(key="budget_ratio").set_value("1.01").run()  # houlsby d_s 19: inside the sizes measured
    return at


@pytest.mark.slow
def test_the_answer_ranks_by_predicted_score_and_names_the_next_run(page):
    answer = next(s.value for s in page.success if s.value.startswith("**Recommended:**"))
    assert answer.startswith("**Recommended:** **houlsby @ all**"), answer
    assert "best predicted dev average here" in answer and "predicted from 12 runs at d_s 1–32" in answer
    assert "80 % interval of one new run" in answer
    card = next(i.value for i in page.info if i.value.startswith("**Next run worth measuring:**"))
    assert "lora @ all" in card or "houlsby @ all" in card
    assert any(b.label == "Launch this run" for b in page.button)
    spec = next(json.loads(c.proto.spec) for c in page.get("plotly_chart") if c.key == "predicted_figure")
    names = {t.get("name") for t in spec["data"]}
    assert {"houlsby @ all", "houlsby @ all: measured runs", "houlsby @ all: 80 % band"} <= names
    measured = next(t for t in spec["data"] if t.get("name") == "houlsby @ all: measured runs")
    assert sorted(set(measured["x"])) == [1, 2, 4, 8, 16, 32] and len(measured["y"]) == 12
    assert any(s.get("type") == "line" and s.get("xref") == "x" for s in spec["layout"]["shapes"])  # budget's size
    assert not page.exception and not page.error


@pytest.mark.slow
def test_the_launch_button_trains_the_next_run_with_the_curves_recipe(page, tmp_path):
    """The next run's button starts a real pals-train of that design at that size, trained as the runs behind the
    curve were (same recipe and trunk setting), so that it joins them."""
    card = next(i.value for i in page.info if i.value.startswith("**Next run worth measuring:**"))
    next(b for b in page.button if b.label == "Launch this run").click().run()
    runs = [r for r in list_runs(tmp_path / "runs") if r.launch_config is not None]
    assert len(runs) == 1, [r.path for r in list_runs(tmp_path / "runs")]
    run = runs[0]
    try:
        cfg = run.launch_config
        assert f"d_s = {cfg.adapter.d_s}" in card and cfg.adapter.method in card
        assert cfg.adapter.freeze_trunk and cfg.steps == 300 and cfg.model == "tiny" and cfg.tasks == TASKS
    finally:
        cancel(run, grace_s=10)


@pytest.mark.slow
def test_the_page_reads_each_run_once_for_its_measured_scores_and_its_curves(tmp_path, monkeypatch, summary_reads):
    import streamlit as st

    runs = tmp_path / "runs"
    monkeypatch.setenv("PALS_RUNS_DIR", str(runs))
    write_runs(runs, "houlsby", (1, 2, 4, 8), 60.0, 1.0)
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.sidebar.selectbox(key="model").set_value(TINY).run()
    at.sidebar.multiselect(key="glue_tasks").set_value(TASKS).run()
    st.cache_data.clear()  # the runs' cache lasts a few seconds: this draw reads them afresh
    summary_reads.clear()
    at.sidebar.text_input(key="budget_ratio").set_value("1.01").run()  # one draw: the runs read once, for both
    assert any(c.key == "predicted_figure" for c in at.get("plotly_chart"))  # the curves came from these reads
    mine = {
        p: n for p, n in summary_reads.items() if runs in p.parents
    }  # (the committed results under benchmarks/ too)
    assert sorted(mine) == sorted(runs.glob("*/*/summary.json")) and set(mine.values()) == {1}
