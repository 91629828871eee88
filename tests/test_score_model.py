"""Predicted scores from measured runs (pals_core/score_model.py): a known curve plus noise is recovered,
fewer than three sizes predict nothing, a size outside the measured range is marked extrapolated, recipes are never
mixed, and pals-budget --results prints the prediction (column and JSON field). Synthetic runs, written as pals-train
writes them (summary.json with the run's TrainConfig)."""

from __future__ import annotations

import json
import math
import random

import pytest

from pals_core import score_model as sm
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig

TASKS = ("rte", "mrpc", "stsb")


def truth(d_s: float) -> float:
    return 55.0 + 2.0 * math.log(d_s)


def write_run(folder, method, d_s, average, seed=0, freeze=True, lr=1e-3, steps=300, model=None, tasks=TASKS):
    """One finished pals-train run (fractions, as summary.json holds them; each task scores the average)."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = TrainConfig(
        tasks=list(tasks),
        adapter=AdapterConfig(method=method, d_s=d_s, freeze_trunk=freeze),
        model=model,
        steps=steps,
        lr=lr,
        seed=seed,
        out=str(folder),
    ).as_dict()
    f = average / 100
    summary = {
        "config": cfg,
        "average": f,
        "scores": {t: {"accuracy": f} for t in tasks},
        "tasks": {t: {"metric": "accuracy"} for t in tasks},
        "steps": steps,
        "params": {"task_specific": 1000 * d_s},
    }
    (folder / "summary.json").write_text(json.dumps(summary))


def study(root, method="houlsby", sizes=(4, 8, 16, 32, 64), seeds=(0, 1, 2), noise=0.5, rng_seed=0, **kw):
    rng = random.Random(rng_seed)
    for d in sizes:
        for s in seeds:
            write_run(root / f"{method}-{d}" / f"seed-{s}", method, d, truth(d) + rng.gauss(0, noise), seed=s, **kw)


def test_a_known_curve_plus_noise_is_recovered(tmp_path):
    study(tmp_path)
    obs = sm.observations([tmp_path], None, list(TASKS))
    assert len(obs) == 15  # every seed run is one observation (no aggregate written)
    [curve] = sm.curves(obs).values()
    assert curve.runs == 15 and curve.sizes == (4, 8, 16, 32, 64)
    assert curve.line.b == pytest.approx(2.0, abs=0.3) and curve.line.s == pytest.approx(0.5, abs=0.25)
    p = curve.predict(24)
    assert p.mean == pytest.approx(truth(24), abs=0.5) and not p.extrapolated
    assert p.lo < truth(24) < p.hi and p.runs == 15 and p.sizes == 5
    assert p.basis() == "predicted from 15 runs at d_s 4–64"
    assert set(p.tasks) == set(TASKS) and p.tasks["rte"].mean == pytest.approx(p.mean)  # each task's metric too
    # the 80 % interval of one new run holds about 80 % of new runs drawn from the truth
    rng = random.Random(1)
    inside = sum(p.lo <= truth(24) + rng.gauss(0, 0.5) <= p.hi for _ in range(2000)) / 2000
    assert 0.7 <= inside <= 0.93


def test_fewer_than_three_sizes_give_no_prediction(tmp_path):
    study(tmp_path, sizes=(8, 64), seeds=(0, 1, 2, 3))
    obs = sm.observations([tmp_path], None, list(TASKS))
    assert len(obs) == 8 and sm.curves(obs) == {}
    assert sm.fit(obs) is None


def test_a_size_outside_the_measured_range_is_extrapolated(tmp_path):
    study(tmp_path, sizes=(8, 16, 32), seeds=(0, 1))
    [curve] = sm.curves(sm.observations([tmp_path], None, list(TASKS))).values()
    assert [curve.predict(d).extrapolated for d in (4, 8, 20, 32, 33, 128)] == [True, False, False, False, True, True]
    assert curve.predict(128).basis().endswith("extrapolated: not ranked")
    assert curve.predict(128).as_json()["extrapolated"] is True


def test_recipes_are_never_mixed(tmp_path):
    study(tmp_path / "a", lr=1e-3)
    study(tmp_path / "b", lr=3e-4, sizes=(8, 16))  # another recipe, two sizes: no curve of its own
    study(tmp_path / "c", freeze=False)  # another trunk setting: another curve
    obs = sm.observations([tmp_path], None, list(TASKS))
    fams = {o.family for o in obs}
    assert len(fams) == 3
    cs = sm.curves(obs)
    assert sorted(c.runs for c in cs.values()) == [15, 15]  # lr 3e-4's six runs enter neither curve
    assert {f.freeze_trunk for f in cs} == {True, False}
    with pytest.raises(ValueError, match="different families"):
        sm.fit(obs)


def test_only_the_questions_model_and_tasks_and_no_smoke_runs(tmp_path):
    study(tmp_path / "mine", seeds=(0,))
    study(tmp_path / "tiny", seeds=(0,), model="tiny")
    study(tmp_path / "two", seeds=(0,), tasks=("rte", "mrpc"))
    study(tmp_path / "smoke", seeds=(0,), steps=20, method="lora")
    assert len(sm.observations([tmp_path], None, ["stsb", "rte", "mrpc"])) == 5
    assert len(sm.observations([tmp_path], "tiny", list(TASKS))) == 5
    assert len(sm.observations([tmp_path], None, ["glue:rte", "glue:mrpc"])) == 5


def test_a_seeds_aggregate_counts_each_seed(tmp_path):
    from pals_core.results import read_summary
    from pals_core.train.aggregate import aggregate

    for d in (8, 16, 32):
        design = tmp_path / f"h-{d}"
        study(design, sizes=(d,), seeds=(0, 1))
        runs = [read_summary(design / f"houlsby-{d}" / f"seed-{s}" / "summary.json") for s in (0, 1)]
        agg = aggregate([0, 1], runs, [f"houlsby-{d}/seed-{s}" for s in (0, 1)])
        (design / "summary.json").write_text(json.dumps(agg))
    obs = sm.observations([tmp_path], None, list(TASKS))
    assert sorted((o.d_s, len(o.runs)) for o in obs) == [(8, 2), (16, 2), (32, 2)]
    assert sm.fit(obs).runs == 6


def _budget(argv):
    from pals_core.cli.budget import main

    return main(argv)


def test_pals_budget_prints_the_predicted_column_and_json(tmp_path, capsys):
    study(tmp_path, sizes=(2, 4, 8, 16, 64, 128), seeds=(0, 1))
    argv = ["--model", "minilm-l6-h384", "--tasks", "rte,mrpc,stsb", "--method", "houlsby", "--budget", "1.05"]
    argv += ["--freeze-trunk", "--results", str(tmp_path)]
    assert _budget([*argv, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    p = row["predicted_score"]
    assert set(p) >= {"mean", "lo", "hi", "runs", "sizes", "extrapolated"}
    assert p["runs"] == 12 and p["sizes"] == 6 and p["extrapolated"] is False
    assert p["lo"] < p["mean"] < p["hi"] and p["mean"] == pytest.approx(truth(row["d_s"]), abs=1.0)
    assert _budget([*argv, "--wide"]) == 0
    out = capsys.readouterr().out
    assert "predicted" in out and f"{p['mean']:.1f} [{p['lo']:.1f}, {p['hi']:.1f}]" in out
    assert "predicted from 12 runs at d_s 2–128" in out
    # the trunk fine-tuned: no run of that family, no prediction
    assert _budget([*argv[:-3], "--train-trunk", "--results", str(tmp_path), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert row["predicted_score"] is None


def test_pals_budget_reads_each_run_once_for_its_measured_scores_and_its_curves(tmp_path, summary_reads, capsys):
    study(tmp_path, sizes=(2, 4, 8), seeds=(0, 1))
    summary_reads.clear()
    argv = ["--model", "minilm-l6-h384", "--tasks", "rte,mrpc,stsb", "--method", "houlsby", "--budget", "1.05"]
    assert _budget([*argv, "--freeze-trunk", "--results", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["recommendation"]["measured"] == 1 and out["rows"][0]["predicted_score"]["runs"] == 6
    assert sorted(summary_reads) == sorted(tmp_path.glob("*/*/summary.json")) and set(summary_reads.values()) == {1}


def test_pals_budget_results_bad_input_is_one_line(tmp_path, capsys):
    argv = ["--tasks", "rte,mrpc", "--budget", "1.1", "--results", str(tmp_path / "nowhere")]
    assert _budget(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--results" in err and "Traceback" not in err


@pytest.mark.slow
def test_the_holdout_check_writes_mae_coverage_and_points(tmp_path):
    """benchmarks/accuracy_model.py: each size held out in turn, predicted from the others (three or more)."""
    import subprocess
    import sys

    study(tmp_path / "runs", sizes=(4, 8, 16, 32), seeds=(0, 1), noise=0.3)
    study(tmp_path / "runs", method="pals", sizes=(12, 24, 48), seeds=(0, 1), noise=0.3)  # 3 sizes: nothing to hold out
    out = tmp_path / "a.json"
    cmd = [sys.executable, "benchmarks/accuracy_model.py", "--results", str(tmp_path / "runs"), "--out", str(out)]
    cmd += ["--tasks", ",".join(TASKS)]  # the default is the committed study's (sst2)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["points"] == 4 and report["runs"] == 14  # houlsby's 4 sizes held out (2 seeds each); pals' none
    assert report["interpolated"]["points"] == 2 and report["extrapolated"]["points"] == 2  # 8 and 16 lie inside
    assert {p["d_s"] for p in report["held_out"] if not p["extrapolated"]} == {8, 16}
    assert all(p["runs"] == 2 for p in report["held_out"])  # a size's dev average: the mean of its two seeds
    assert report["per_run"]["points"] == 8 and report["per_run"]["interpolated"]["points"] == 4
    assert 0 < report["mae"] < 1.0 and 0 <= report["coverage80"] <= 1
    assert out.with_suffix(".csv").read_text().count("\n") == 15  # a header and every run read
    assert sm.holdout_summary([]) == {"mae": None, "coverage80": None, "points": 0}


def _pred(mean, lo, hi, extrapolated=False):
    return sm.Prediction(16, mean, lo, hi, 8, 4, 8, 64, extrapolated)


def test_the_next_run_is_the_overlapping_design_with_the_highest_upper_bound():
    leader = sm.Option("houlsby @ all", 40, measured_mean=62.0, measured_ci95=1.0)
    close = sm.Option("pals @ all", 48, predicted=_pred(61.0, 59.0, 64.5))
    closer_but_lower = sm.Option("lora @ all", 40, predicted=_pred(61.5, 60.5, 62.5))
    far = sm.Option("low_rank @ all", 80, predicted=_pred(55.0, 54.0, 56.0))
    wide = sm.Option("ia3 @ all", None)  # nothing measured, nothing predicted
    nxt = sm.next_run([leader, close, closer_but_lower, far, wide])
    assert nxt.option is close and "overlaps houlsby @ all's measured 62.0" in nxt.why
    # the leader's measured interval clear of every prediction: nothing would change the decision
    assert sm.next_run([sm.Option("h", 8, measured_mean=70.0, measured_ci95=0.5), far]) is None
    # only predictions: the predicted leader itself is worth measuring when it reaches highest
    top = sm.Option("pals @ all", 48, predicted=_pred(63.0, 60.0, 66.0))
    assert sm.next_run([top, far]).option is top
    # an extrapolated prediction ranks nothing but may still be the run worth making, above the leader too
    ext = sm.Option("lora @ all", 256, predicted=_pred(70.0, 58.0, 80.0, extrapolated=True))
    assert ext.value() is None and sm.next_run([leader, ext]).option is ext
    above = sm.Option("pals @ all", 120, predicted=_pred(65.0, 63.5, 66.5, extrapolated=True))
    nxt = sm.next_run([leader, closer_but_lower, above])
    assert nxt.option is above and "lies above houlsby @ all's measured 62.0" in nxt.why
    assert sm.next_run([wide]) is None
    # nothing ranks (every prediction extrapolated): the highest upper bound is still the run to make
    assert sm.next_run([ext, sm.Option("x", 8, predicted=_pred(50, 40, 60, extrapolated=True))]).option is ext


def test_a_page_ranks_one_recipe_only_and_can_launch_the_next_run_with_it(tmp_path):
    study(tmp_path / "a", seeds=(0, 1))
    study(tmp_path / "b", lr=3e-4, seeds=(0,))
    cs = sm.curves(sm.observations([tmp_path], None, list(TASKS)))
    assert len(cs) == 2
    [(fam, curve)] = sm.main_setting(cs).items()
    assert (
        curve.runs == 10
        and sm.recipe_text(fam) == "300 steps × batch 32, lr 0.001, annealed sampling, max_len 128, trunk frozen"
    )
    cfg = curve.next_config(24)
    assert cfg["adapter"]["d_s"] == 24 and cfg["lr"] == 1e-3 and cfg["seed"] == 0 and "out" not in cfg
    assert TrainConfig.from_dict(cfg).adapter.d_s == 24  # the trainer takes it as it is


def test_pals_budget_storage_that_cannot_be_read_is_one_line(tmp_path, capsys):
    argv = ["--tasks", "rte,mrpc", "--budget", "1.1", "--storage", f"sqlite:///{tmp_path / 'no' / 'such' / 'x.db'}"]
    assert _budget(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read the study storage" in err and "Traceback" not in err


def test_the_page_quotes_the_holdout_check_as_committed(tmp_path):
    from explorer.predicted_view import holdout_text

    f = tmp_path / "a.json"
    assert "not yet checked" in holdout_text(f)
    f.write_text(json.dumps({"mae": 2.5, "coverage80": 0.8, "points": 12, "goal": {"mae": 1.0, "coverage80": 0.75}}))
    assert "MAE 2.5 points on 12 held-out sizes, 80% of them inside" in holdout_text(
        f
    ) and "**not met**" in holdout_text(f)
    f.write_text(
        json.dumps(
            {"mae": 0.5, "coverage80": 0.9, "points": 8, "interpolated": {"mae": 0.4, "coverage80": 1.0, "points": 4}}
        )
    )
    text = holdout_text(f)
    assert "MAE 0.4 points on 4 held-out sizes inside the measured range, 100% of them" in text and "is met" in text


def test_the_holdout_check_counts_the_families_it_fits(tmp_path, capsys):
    """Two recipes × two methods are four curves, whatever their labels: the check says 4 families, not 2."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "accuracy_model", Path(__file__).resolve().parents[1] / "benchmarks" / "accuracy_model.py"
    )
    accuracy_model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(accuracy_model)
    for lr in (1e-3, 2e-3):
        for method in ("houlsby", "lora"):
            study(tmp_path / "runs" / f"{method}-{lr}", method=method, sizes=(4, 8, 16, 32), seeds=(0,), lr=lr)
    out = tmp_path / "a.json"
    argv = ["--results", str(tmp_path / "runs"), "--tasks", ",".join(TASKS), "--out", str(out)]
    assert accuracy_model.main(argv) == 0
    report = json.loads(out.read_text())
    assert len(sm.curves(sm.observations([tmp_path / "runs"], None, list(TASKS)))) == 4
    assert len(report["families"]) == 4 and "16 runs in 4 families" in capsys.readouterr().out
