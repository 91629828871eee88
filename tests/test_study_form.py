"""The Studies view's start form asks what the page asks: the sidebar's methods (what a design study searches), its
design settings, its sequence length and its machine bounds on the page's machine — and says which of the question
it does not take. The page is the app itself (``streamlit.testing.v1.AppTest`` on app.py, opened at a link); the
settings are read back through ``pals-study``'s own parser, and a worker started from the form is a real
``pals-study run`` process (stopped at once here: the browser test lets one train)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pals_core.budget.machine import default_device
from pals_core.pricing.config import AdapterConfig
from pals_core.supervise.workers import list_workers, load_worker, stop
from studies.workers import settings_from_form, settings_of

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture
def env(tmp_path, monkeypatch, glue_dir):
    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    monkeypatch.setenv("PALS_GLUE_DIR", str(glue_dir))
    yield tmp_path
    for w in list_workers():
        stop(w, grace_s=10)


def open_at(query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def test_the_form_starts_from_every_setting_of_the_question(env):
    at = open_at(
        {
            "model": "tiny",
            "tasks": "rte,mrpc",
            "budget": "1.1",
            "methods": "pals,lora",
            "heads": "6",
            "seq_len": "48",
            "location": "top",
            "memory": "4GB",
            "view": "studies",
        }
    )
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.multiselect(key="study_start_methods").value == ["pals", "lora"]
    assert at.number_input(key="study_start_max_len").value == 48
    assert at.text_input(key="study_start_memory").value == "4GB"
    assert at.selectbox(key="study_start_device").value == default_device()  # the page's machine prices the bound
    caption = next(c.value for c in at.caption if c.value.startswith("From your question in the sidebar"))
    assert "h_s 6" in caption and "Not taken: location top: a design study searches every location" in caption

    at.text_input(key="study_start_name").set_value("from-the-question")
    at.button(key="FormSubmitter:study_start_form-Start").click().run()
    assert not at.error, [e.value for e in at.error]
    (worker,) = list_workers()
    settings = settings_of(worker)
    assert settings.methods == ["pals", "lora"] and settings.tasks == ["rte", "mrpc"]
    assert settings.max_len == 48 and settings.template().heads == 6
    assert settings.machine["memory"] == "4GB" and settings.machine["device"] == default_device()
    assert settings.batch_size == 32  # the page's batch: the memory bound is priced at it, as on the page
    stop(worker, grace_s=10)
    end = time.time() + 60
    while load_worker(worker.path).alive and time.time() < end:
        time.sleep(0.2)


def test_a_study_that_trains_one_design_trains_the_chosen_one(tmp_path):
    """``optimizer`` and ``alpha-schedule`` train one design: the page's chosen design, with the question's h_s."""
    chosen = AdapterConfig(method="lora", location="top", d_s=8, heads=6)
    settings = settings_from_form(
        "optimizer", tasks="rte", model="tiny", budget=1.1, steps=4, design=chosen, methods=["pals"], max_len=32
    )
    assert settings.methods is None  # the methods are what a design study searches; this one trains one design
    a = AdapterConfig.from_dict(settings.adapter)
    assert (a.method, a.location, a.d_s, a.heads) == ("lora", "top", 8, 6) and settings.max_len == 32
    design = settings_from_form("design", tasks="rte", model="tiny", budget=1.1, steps=4, design=chosen)
    assert design.template().heads == 6 and design.template().method == "pals"  # searched: the rest kept
