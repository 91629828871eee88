"""The explorer's "Memory & step time" view: device and batch are inputs; the bars and points are the calculator's."""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from pals_core.budget import PRESETS, AdapterConfig, Budget, design, parse_tasks, solve
from pals_core.budget.activations import Conditions
from pals_core.budget.machine import Machine, resources

from test_app import APP, fig, page_errors, show


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(tmp_path / "none.json"))
    return AppTest.from_file(APP, default_timeout=90).run()


def _expected(method: str, location: str, device: str, batch: int):
    ds = design(PRESETS["bert-base-uncased"], parse_tasks(8), AdapterConfig(method=method, location=location),
                check_size=False)
    cost = solve(ds, Budget(ratio=1.13))
    resources(cost, ds, Machine(batch=batch, device=device), Conditions())
    return cost


def test_memory_breakdown_and_step_time_follow_device_and_batch(app):
    show(app, "machine")
    assert page_errors(app) == []
    bars = fig(app, "fig_memory")["data"]
    assert [t["name"] for t in bars] == ["weights", "gradients", "optimizer", "activations"]
    i = bars[0]["x"].index("pals @ all")
    c = _expected("pals", "all", "h100", 32)
    assert sum(t["y"][i] for t in bars) == pytest.approx(c.memory_train["total"] / 2 ** 30)
    points = fig(app, "fig_step_time")["data"][0]
    j = points["text"].index("pals @ all")
    assert points["y"][j] == pytest.approx(c.time_ratio) and points["x"][j] == c.params_task_specific

    app.number_input(key="machine_batch").set_value(8).run()
    app.selectbox(key="machine_device").set_value("t4").run()
    assert page_errors(app) == []
    bars = fig(app, "fig_memory")["data"]
    c8 = _expected("pals", "all", "t4", 8)
    assert sum(t["y"][i] for t in bars) == pytest.approx(c8.memory_train["total"] / 2 ** 30)
    assert c8.memory_train["activations"] < c.memory_train["activations"]
    points = fig(app, "fig_step_time")["data"][0]
    assert points["y"][j] == pytest.approx(c8.time_ratio)
    assert "local" not in app.selectbox(key="machine_device").options  # not calibrated here
