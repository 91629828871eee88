"""One name for one model: the embedded checkpoint is called ``EMBEDDED_MODEL`` (all-MiniLM-L6-v2) by the page's
header, its sidebar, the train form, the studies form, ``pals-tasks``, ``pals-budget`` and the preset list; its other
names (the preset's old key ``minilm-l6-h384``, the checkpoint config's ``nreimers/MiniLM-L6-H384-uncased``, the old
link key ``embedded-minilm``) are read as it and shown nowhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pals_core.cli.budget import main as pals_budget
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.families.shapes import PRESETS, load_model

ROOT = Path(__file__).resolve().parents[1]
OTHER_NAMES = ("minilm-l6-h384", "nreimers/MiniLM-L6-H384-uncased", "embedded MiniLM", "MiniLM-L6 (embedded")


def test_the_preset_list_and_pals_budget_call_it_by_its_one_name(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # --help unwrapped: a name is not cut at its hyphens
    assert EMBEDDED_MODEL == "all-MiniLM-L6-v2" and EMBEDDED_MODEL in PRESETS
    assert not any(name in PRESETS for name in OTHER_NAMES)
    for alias in ("minilm-l6-h384", "nreimers/MiniLM-L6-H384-uncased", "sentence-transformers/all-MiniLM-L6-v2"):
        assert load_model(alias) is PRESETS[EMBEDDED_MODEL]
    with pytest.raises(SystemExit):
        pals_budget(["--help"])
    help_text = capsys.readouterr().out
    assert EMBEDDED_MODEL in help_text and "minilm-l6-h384" not in help_text
    assert pals_budget(["--model", "minilm-l6-h384", "--tasks", "rte", "--budget", "1.13", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["name"] == EMBEDDED_MODEL


def test_pals_tasks_help_calls_it_by_its_one_name(capsys, monkeypatch):
    from pals_core.cli.tasks import main as pals_tasks

    monkeypatch.setenv("COLUMNS", "1000")
    with pytest.raises(SystemExit):
        pals_tasks(["--help"])
    assert f"(default: the embedded {EMBEDDED_MODEL})" in capsys.readouterr().out


@pytest.mark.slow  # the tokenizer and the example rows: seconds
def test_pals_tasks_calls_it_by_its_one_name(capsys):
    from pals_core.cli.tasks import main as pals_tasks

    assert pals_tasks([str(ROOT / "examples" / "tasks" / "tasks.yaml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == EMBEDDED_MODEL


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.success]
    return "\n".join(str(p) for p in parts)


@pytest.mark.slow
def test_the_page_calls_it_by_its_one_name():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in {"model": "minilm-l6-h384", "tasks": "rte,mrpc", "budget": "1.13", "view": "train"}.items():
        at.query_params[k] = v  # a link with the preset's old key opens the embedded model
    at.run()
    assert not at.exception and not [e.value for e in at.error]
    sidebar = at.sidebar.selectbox(key="model")
    assert sidebar.value == EMBEDDED_MODEL
    assert list(sidebar.options).count(EMBEDDED_MODEL) == 1
    assert not any(other in option for option in sidebar.options for other in OTHER_NAMES)
    assert at.selectbox(key="train_model").value == EMBEDDED_MODEL  # the train form
    text = _texts(at)
    assert f"**{EMBEDDED_MODEL}** (the model the launcher trains)" in text  # the header under the question
    assert not any(other in text for other in OTHER_NAMES)
    old = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in {"model": "embedded-minilm", "tasks": "rte,mrpc", "budget": "1.13", "view": "studies"}.items():
        old.query_params[k] = v  # the link key of before
    old.run()
    assert old.sidebar.selectbox(key="model").value == EMBEDDED_MODEL
    assert old.selectbox(key="study_start_model").value == EMBEDDED_MODEL
