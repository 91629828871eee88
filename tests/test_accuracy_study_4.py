"""The fourth study's analysis (benchmarks/accuracy_study_4_analysis.py): the pooled form recovers a known bend and
its interval is the hand-computed one, its line form is the tools' own hold-out on the third study's committed runs,
and regret is the measured loss of trusting the predicted first."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from pals_core import score_model as sm

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "accuracy_study_4_analysis", ROOT / "benchmarks" / "accuracy_study_4_analysis.py"
)
a4 = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # registered: its dataclasses look it up
_spec.loader.exec_module(a4)
STUDY_3 = ROOT / "benchmarks" / "results" / "accuracy_study_3"


def test_the_pooled_form_recovers_a_known_bend_and_the_hand_computed_interval():
    # two runs (±δ) at each size of two methods, their means on y = a_m + b·x + c·x²
    a, b, c, delta = {"houlsby": 60.0, "lora": 57.0}, 3.0, -0.4, 0.5
    pts = {
        m: [(d, a[m] + b * math.log(d) + c * math.log(d) ** 2 + e) for d in (4, 16, 64, 256) for e in (delta, -delta)]
        for m in a
    }
    f = a4.fit_pooled(pts)
    assert f.methods == ("houlsby", "lora")
    assert list(f.beta) == pytest.approx([60.0, 57.0, b, c])
    # the seeds' pooled variance (16 δ² over 8 dof = 2 δ²) beats the residual's (16 δ² over 16 − 4 = 12 dof)
    assert f.s == pytest.approx(delta * math.sqrt(2)) and f.t == pytest.approx(sm.t_quantile(0.9, 8))
    assert f.at("lora", 32).mean == pytest.approx(57.0 + b * math.log(32) + c * math.log(32) ** 2)

    # one method at x = −1, 0, 1 (d_s = 1/e, 1, e), two runs each: (XᵀX)⁻¹ = ½·[[1, 0, −1], [0, ½, 0], [−1, 0, 1.5]],
    # so at x₀ = 0 the mean of two new runs has half-width t·s·sqrt(½ + ½) = t·s, s² = 2δ² on 3 dof
    one = {"pals": [(math.exp(x), 70.0 + x - x * x + e) for x in (-1, 0, 1) for e in (delta, -delta)]}
    g = a4.fit_pooled(one)
    i = g.at("pals", 1, k=2)
    assert i.mean == pytest.approx(70.0)
    assert i.hi - i.mean == pytest.approx(sm.t_quantile(0.9, 3) * delta * math.sqrt(2))
    assert a4.fit_pooled({"pals": one["pals"][:4]}) is None  # two sizes: no prediction (the tools' rule)


def test_the_line_form_is_the_tools_holdout_on_the_third_study():
    """On the third study's committed runs the line form holds out exactly what accuracy_model.py did (its committed
    JSON), and the pooled form is compared on the same folds."""
    obs = sm.observations([STUDY_3], None, ["sst2", "stsb", "mrpc"])
    report = a4.analyse(obs)
    committed = json.loads((ROOT / "benchmarks" / "results" / "accuracy_model.json").read_text())
    line = report["forms"]["line"]
    for mine, theirs in ((line["inside"], committed["interpolated"]), (line["outside"], committed["extrapolated"])):
        assert (mine["mae"], mine["coverage80"], mine["points"]) == (theirs["mae"], theirs["coverage80"], 4)
    assert line["inside"]["per_run"]["coverage80"] == committed["per_run"]["interpolated"]["coverage80"]
    assert [f["d_s"] for f in line["inside"]["folds"]] == [16, 64]  # the inside folds of four sizes
    pooled = report["forms"]["pooled"]
    assert {(q["method"], q["d_s"]) for q in pooled["held_out"]} == {(q["method"], q["d_s"]) for q in line["held_out"]}
    assert report["runs"] == 24 and report["use"] in ("line", "pooled")
    assert report["use"] == ("pooled" if pooled["met"] else "line")


def test_regret_is_the_measured_loss_of_trusting_the_predicted_first():
    held = [
        {"method": "houlsby", "d_s": 32, "mean": 78.0, "measured": 76.0},  # predicted first, measured second
        {"method": "lora", "d_s": 32, "mean": 77.0, "measured": 77.5},  # the best measured
        {"method": "pals", "d_s": 32, "mean": 75.0, "measured": 74.0},
    ]
    assert a4.regret(held) == pytest.approx(1.5)
    assert a4.regret(held[1:]) == pytest.approx(0.0)
    assert a4.regret(held[:1]) is None  # one design: nothing to rank


def test_the_analysis_writes_its_json_and_refuses_a_missing_folder_in_one_line(tmp_path):
    out = tmp_path / "s.json"
    cmd = [sys.executable, "benchmarks/accuracy_study_4_analysis.py", "--results", str(STUDY_3), "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert set(report["forms"]) == {"line", "pooled"} and report["goal"]["regret"] == 0.5
    assert "the tools' form by the pre-registered rule" in done.stdout
    bad = subprocess.run(
        [sys.executable, "benchmarks/accuracy_study_4_analysis.py", "--results", str(tmp_path / "nowhere")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "no folder" in bad.stderr and "Traceback" not in bad.stderr
