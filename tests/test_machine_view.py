"""The explorer's "Memory & step time" view: device and batch are inputs; the bars and points are the calculator's."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest
from test_app import APP, fig, page_errors, show

from pals_core.budget.costs import design
from pals_core.budget.machine import Machine, resources
from pals_core.budget.recommend import key_of
from pals_core.budget.solver import Budget, solve
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import PRESETS
from pals_core.pricing.activations import Conditions
from pals_core.pricing.config import AdapterConfig

GIB = 2**30


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(tmp_path / "none.json"))
    return AppTest.from_file(APP, default_timeout=90).run()


def _expected(method: str, location: str, device: str, batch: int):
    ds = design(
        PRESETS["bert-base-uncased"], parse_tasks(8), AdapterConfig(method=method, location=location), check_size=False
    )
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
    assert sum(t["y"][i] for t in bars) == pytest.approx(c.memory_train["total"] / 2**30)
    points = fig(app, "fig_step_time")["data"][0]
    j = points["text"].index("pals @ all")
    assert points["y"][j] == pytest.approx(c.time_ratio) and points["x"][j] == c.params_task_specific

    app.number_input(key="machine_batch").set_value(8).run()
    app.selectbox(key="machine_device").set_value("t4").run()
    assert page_errors(app) == []
    bars = fig(app, "fig_memory")["data"]
    c8 = _expected("pals", "all", "t4", 8)
    assert sum(t["y"][i] for t in bars) == pytest.approx(c8.memory_train["total"] / 2**30)
    assert c8.memory_train["activations"] < c.memory_train["activations"]
    points = fig(app, "fig_step_time")["data"][0]
    assert points["y"][j] == pytest.approx(c8.time_ratio)
    assert "local" not in app.selectbox(key="machine_device").options  # not calibrated here


# The question carries the conditions of the model it asks about: an uploaded config.json is priced with its
# own dropout and attention implementation, as ``pals-budget --model that/config.json`` prices it — not BERT's defaults.
TINY_BERT = dict(
    model_type="bert",
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    vocab_size=100,
    max_position_embeddings=512,
    type_vocab_size=2,
)  # dropout: BERT's defaults (0.1)
NO_DROPOUT = dict(TINY_BERT, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
TINY_MODERNBERT = dict(
    model_type="modernbert",
    hidden_size=24,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=20,
    vocab_size=3000,
    max_position_embeddings=512,
    local_attention=6,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    cls_token_id=1,
    sep_token_id=2,
)  # no dropout


def _cli_row(tmp_path, config: dict, name: str) -> dict:
    """``pals-budget --model <config.json> --json`` at the view's defaults (8 GLUE tasks, ratio 1.13, h100, B = 32):
    its pals @ all row."""
    from pals_core.cli.budget import run

    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    out = json.loads(run(["--model", str(path), "--json", "--budget", "1.13", "--device", "h100", "--batch", "32"]))
    return next(r for r in out["rows"] if (r["method"], r["location"]) == ("pals", "all"))


def _with_default_conditions(config: dict) -> dict:
    """What the view showed before the fix: the same design priced under BERT's default conditions."""
    from pals_core.families.shapes import from_hf_config

    ds = design(from_hf_config(config), parse_tasks(8), AdapterConfig(method="pals", location="all"), check_size=False)
    cost = solve(ds, Budget(ratio=1.13))
    resources(cost, ds, Machine(batch=32, device="h100"), Conditions())
    return cost.memory_train


def _upload(app, config: dict):
    from explorer.inputs import UPLOAD

    if app.sidebar.selectbox(key="model").value != UPLOAD:
        app.sidebar.selectbox(key="model").set_value(UPLOAD).run()
    app.sidebar.file_uploader(key="config_upload").upload(
        "config.json", json.dumps(config).encode(), "application/json"
    ).run()
    show(app, "machine")
    assert page_errors(app) == []
    bars = fig(app, "fig_memory")["data"]
    design = lambda name: name.removesuffix(" (over budget)") == "pals @ all"  # noqa: E731 — named so when over
    i = next(k for k, x in enumerate(bars[0]["x"]) if design(x))
    points = fig(app, "fig_step_time")["data"][0]
    return sum(t["y"][i] for t in bars), points["y"][next(k for k, x in enumerate(points["text"]) if design(x))]


def test_an_uploaded_config_is_priced_with_its_own_dropout(app, tmp_path):
    """hidden/attention dropout 0 in the uploaded config: the view's training memory and step time are pals-budget's on
    that config.json, and differ from the default-dropout config's (which the view showed for both before)."""
    total, step = _upload(app, NO_DROPOUT)
    row = _cli_row(tmp_path, NO_DROPOUT, "nodrop")
    assert total == pytest.approx(row["memory_train"]["total"] / GIB) and step == pytest.approx(row["time_ratio"])
    assert row["memory_train"]["total"] != _with_default_conditions(NO_DROPOUT)["total"]

    default_total, _ = _upload(app, TINY_BERT)
    default_row = _cli_row(tmp_path, TINY_BERT, "default")
    assert default_total == pytest.approx(default_row["memory_train"]["total"] / GIB)
    assert default_row["memory_train"]["activations"] > row["memory_train"]["activations"]  # the dropout masks
    assert default_total != pytest.approx(total)


def test_an_uploaded_modernbert_is_priced_with_its_own_conditions(app, tmp_path):
    """ModernBERT has no dropout by default: the view prices it as pals-budget does, not with BERT's 0.1."""
    total, step = _upload(app, TINY_MODERNBERT)
    row = _cli_row(tmp_path, TINY_MODERNBERT, "modernbert")
    assert total == pytest.approx(row["memory_train"]["total"] / GIB) and step == pytest.approx(row["time_ratio"])
    assert row["memory_train"]["activations"] < _with_default_conditions(TINY_MODERNBERT)["activations"]


def test_the_question_reads_its_model_conditions_where_it_reads_the_model(tmp_path, monkeypatch):
    """Preset → conditions_for_model, upload → conditions_from_config, trainable → the trainer's model_conditions;
    the recommendation's step-time ranking (calc.slowdowns) uses them too."""
    from explorer import calc
    from explorer.inputs import EMBEDDED, LOCAL, TINY, UPLOAD, RawInputs, parse_inputs
    from pals_core.base_model import model_conditions
    from pals_core.budget.machine import time_ratio
    from pals_core.families.shapes import conditions_for_model, conditions_from_config

    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(tmp_path / "none.json"))
    eager = dict(NO_DROPOUT, attn_implementation="eager")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(eager))
    assert parse_inputs(RawInputs(model="ModernBERT-base")).conditions == conditions_for_model("ModernBERT-base")
    assert parse_inputs(RawInputs(model="deberta-v3-base")).conditions.attention == "eager"
    assert parse_inputs(RawInputs(model="mpnet-base")).conditions.attention == "eager"
    assert parse_inputs(RawInputs(model=TINY)).conditions == model_conditions("tiny")
    assert parse_inputs(RawInputs(model=EMBEDDED)).conditions == model_conditions(None)
    local = parse_inputs(RawInputs(model=LOCAL, model_path=str(folder)))
    assert local.conditions == model_conditions(str(folder)) == conditions_from_config(eager)
    upload = parse_inputs(RawInputs(model=UPLOAD, config_name="config.json", config_bytes=json.dumps(eager).encode()))
    assert upload.conditions == conditions_from_config(eager) != Conditions()
    assert upload.conditions.attention == "eager" and upload.conditions.hidden_dropout == 0.0

    costs = calc.table(upload)
    times = calc.slowdowns(upload, costs)
    c = next(c for c in costs if key_of(c) == ("pals", "all"))
    ds = calc.design_of(upload, ("pals", "all"))
    assert times[("pals", "all")] == time_ratio(ds, c.d_s, model_cond=conditions_from_config(eager))
    assert times[("pals", "all")] != time_ratio(ds, c.d_s, model_cond=Conditions())


@pytest.mark.parametrize("rate,needle", [(1.5, "[0, 1)"), ("x", "not a number"), ([0.1], "not a number")])
def test_an_uploaded_dropout_that_is_no_probability_is_one_line(rate, needle):
    from explorer.inputs import UPLOAD, RawInputs, parse_inputs

    bad = json.dumps(dict(TINY_BERT, hidden_dropout_prob=rate)).encode()
    with pytest.raises(ValueError, match="^config 'my.json': ") as e:
        parse_inputs(RawInputs(model=UPLOAD, config_name="my.json", config_bytes=bad))
    assert needle in str(e.value) and "\n" not in str(e.value)
