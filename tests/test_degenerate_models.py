"""Models and values the calculator must refuse or handle with a reason: a 1-layer model,
top/bottom with no layer, sizes and budgets past their named limits — in the calculator, pals-budget and the page."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.inputs import UPLOAD
from pals_core.budget.costs import design
from pals_core.budget.methods import resolve_layers
from pals_core.budget.solver import Budget
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import PRESETS, from_hf_config
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.limits import MAX_D_S, MAX_LAYERS, MAX_RATIO

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
ONE_LAYER = {
    "model_type": "bert",
    "hidden_size": 768,
    "num_hidden_layers": 1,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "vocab_size": 30522,
}
TASKS = parse_tasks("8")


def budget_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


# ------------------------------------------------------------------------------------------ calculator


def test_top_and_bottom_of_a_one_layer_model_adapt_nothing_and_are_refused():
    for loc in ("top", "bottom"):
        with pytest.raises(ValueError, match=f"location '{loc}' adapts no layer of a 1-layer model"):
            resolve_layers(loc, 1)
    assert resolve_layers("top", 2) == (1,) and resolve_layers("all", 1) == (0,)
    one = from_hf_config(ONE_LAYER, name="one")
    with pytest.raises(ValueError, match="adapts no layer"):
        design(one, TASKS, AdapterConfig(method="pals", location="top"), check_size=False)


def test_a_one_layer_model_prices_every_design_it_can_have_and_names_the_others():
    one = from_hf_config(ONE_LAYER, name="one")
    costs = rows(one, TASKS, budget=Budget(ratio=1.13))
    priced = {(c.method, c.location) for c in costs}
    assert ("pals_unshared", "all") in priced and ("pals", "all") in priced and ("shared", None) in priced
    assert not any(c.location in ("top", "bottom") for c in costs)  # no dead design "fits"
    assert all(c.layers for c in costs if c.location == "all")
    refused = dict(costs.refused)
    assert set(refused) >= {"pals @ top", "pals_unshared @ bottom", "lora @ top"}
    assert all("adapts no layer" in reason for reason in refused.values())


def test_huge_budgets_and_sizes_are_refused_with_their_limits():
    bert = PRESETS["bert-base-uncased"]
    with pytest.raises(ValueError, match=f"above the largest the calculator prices \\({MAX_RATIO:,.0f}\\)"):
        Budget(ratio=1e9)
    with pytest.raises(ValueError, match="extra budget"):
        Budget(extra=1e20)
    costs = rows(bert, parse_tasks("1"), budget=Budget(ratio=5000))  # large, allowed: per-row answers, no crash
    assert costs and costs.refused
    assert all(c.d_s is None or c.d_s <= MAX_D_S for c in costs)
    assert all(f"({MAX_D_S:,})" in reason and "does not grow" not in reason for _, reason in costs.refused)
    with pytest.raises(ValueError, match=f"d_s 2e\\+06 is above the largest the calculator prices \\({MAX_D_S:,}\\)"):
        design(bert, TASKS, AdapterConfig(method="houlsby", d_s=2_000_000))
    with pytest.raises(
        ValueError, match=f"layers 100,000 is above the largest the calculator prices \\({MAX_LAYERS:,}\\)"
    ):
        from_hf_config({**ONE_LAYER, "num_hidden_layers": 100_000})


def test_pals_budget_answers_degenerate_models_per_row_or_in_one_line(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(ONE_LAYER))
    table = budget_cli("--model", cfg, "--tasks", "8", "--budget", "1.13")
    assert table.returncode == 0, table.stderr
    assert "not priced: pals @ top: location 'top' adapts no layer" in table.stdout
    assert any(line.split()[:2] == ["pals_unshared", "all"] for line in table.stdout.splitlines())
    for args, needle in (
        (["--method", "pals", "--location", "top"], "adapts no layer"),
        (["--budget", "1e9"], "(10,000)"),
    ):
        p = budget_cli("--model", cfg, "--tasks", "8", *(["--budget", "1.13"] if "--budget" not in args else []), *args)
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and needle in err[0], (p.returncode, p.stderr)
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps({**ONE_LAYER, "num_hidden_layers": 100_000}))
    start = time.monotonic()
    p = budget_cli("--model", deep, "--tasks", "8", "--budget", "1.1")
    assert p.returncode == 2 and "(1,024)" in p.stderr and time.monotonic() - start < 30


# ------------------------------------------------------------------------------------------ the page


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    return AppTest.from_file(APP, default_timeout=60).run()


def _errors(at) -> list[str]:
    return [e.value for e in at.error]


def test_the_page_refuses_a_huge_budget_ratio_with_one_error(app):
    app.sidebar.text_input(key="budget_ratio").set_value("1e9").run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("10,000" in e for e in _errors(app)), _errors(app)


def test_the_page_launcher_takes_a_solved_d_s_above_65536(app):
    app.sidebar.text_input(key="budget_ratio").set_value("500").run()  # houlsby @ all: d_s ≈ 186,000
    assert not app.exception, [e.value for e in app.exception]
    big = [o for o in app.selectbox(key="design").options if o.startswith("houlsby")]
    assert big, app.selectbox(key="design").options
    app.selectbox(key="design").set_value(big[0]).run()
    app.segmented_control(key="view").set_value("train").run()  # the launcher is the Train view
    app.radio(key="train_size_mode").set_value("a d_s of my own").run()
    assert not app.exception, [e.value for e in app.exception]
    d_s = [n for n in app.number_input if n.key and n.key.startswith("train_ds::")]
    assert d_s and 65_536 < d_s[0].value <= MAX_D_S


@pytest.mark.parametrize("case", ["brackets", "deep", "one-layer"])
def test_the_page_answers_uploaded_configs(app, case):
    body = {
        "brackets": b"[" * 100_000,
        "deep": json.dumps({**ONE_LAYER, "num_hidden_layers": 100_000}).encode(),
        "one-layer": json.dumps(ONE_LAYER).encode(),
    }[case]
    app.sidebar.selectbox(key="model").set_value(UPLOAD).run()
    start = time.monotonic()
    app.sidebar.file_uploader(key="config_upload").upload("config.json", body, "application/json").run()
    assert time.monotonic() - start < 30
    assert not app.exception, [e.value for e in app.exception]
    if case == "brackets":
        assert any("nests too deeply" in e for e in _errors(app)), _errors(app)
    elif case == "deep":
        assert any("(1,024)" in e for e in _errors(app)), _errors(app)
    else:
        assert not [e for e in _errors(app) if "Bad input" in e], _errors(app)
        assert any("cannot be built on this model" in w.value and "pals @ top" in w.value for w in app.warning)


def test_a_fixed_size_some_designs_cannot_take_is_refused_per_row(app):
    app.sidebar.text_input(key="d_s").set_value("100").run()  # not divisible by PALs' 12 heads; fine for Houlsby
    assert not app.exception and not [e for e in _errors(app) if "Bad input" in e], _errors(app)
    warning = next(w.value for w in app.warning if "cannot be built on this model" in w.value)
    assert "**pals @ all**: d_s = 100 is not divisible by the 12 adapter heads" in warning
    table = next(d.value for d in app.dataframe if "fits" in d.value.columns)
    assert "houlsby @ all" in set(table["design"]) and not any(str(x).startswith("pals @") for x in table["design"])
