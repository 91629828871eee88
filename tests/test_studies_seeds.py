"""Studies that repeat each trial over seeds (settings ``seeds``): the objective is the mean dev average over the
seeds' runs, the interval is recorded and reported."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
import scipy.stats

EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--model",
    "tiny",
    "--tasks",
    "rte,mrpc",
    "--steps",
    "6",
    "--eval-every",
    "3",
    "--max-train-examples",
    "48",
    "--max-eval-examples",
    "32",
    "--max-len",
    "32",
    "--batch-size",
    "8",
    "--budget",
    "1.05",
]


@pytest.mark.slow
def test_trials_over_seeds_optimise_the_mean_and_report_the_interval(tmp_path, glue_dir, pals_train):
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    env = {
        **os.environ,
        "PALS_GLUE_DIR": str(glue_dir),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT),
    }
    cmd = [
        EXE,
        "run",
        "design",
        "--trials",
        "1",
        "--storage",
        url,
        "--out",
        str(tmp_path / "runs"),
        "--threads",
        "1",
        "--sampler-seed",
        "0",
        "--seeds",
        "0,1",
        *TINY,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "± ci95" in p.stdout
    study = optuna.load_study(study_name="design", storage=url)
    (t,) = study.get_trials()
    a = t.user_attrs
    run = Path(a["run_dir"])
    per = [json.loads((run / f"seed-{k}" / "summary.json").read_text()) for k in (0, 1)]
    assert [s["config"]["seed"] for s in per] == [0, 1]
    averages = [s["average"] for s in per]
    assert t.value == pytest.approx(np.mean(averages), abs=1e-15) and a["seeds"] == [0, 1]
    assert a["average_std"] == pytest.approx(np.std(averages, ddof=1), abs=1e-15)
    assert a["average_ci95"] == pytest.approx(
        scipy.stats.t.ppf(0.975, 1) * np.std(averages, ddof=1) / math.sqrt(2), abs=1e-14
    )
    agg = json.loads((run / "summary.json").read_text())
    assert agg["seeds"] == [0, 1] and agg["average"]["mean"] == pytest.approx(t.value)
    assert sorted(t.intermediate_values) == [3, 6]  # the first seed's evaluations
    # the trial trained through pals-train --seeds's own seed loop: its folder is such a run, progress and all
    progress = json.loads((run / "progress.json").read_text())
    assert (progress["status"], progress["step"], progress["total"]) == ("finished", 12, 12)
    again = pals_train("--resume", "--out", str(run), cwd=tmp_path)
    assert again.returncode == 0 and "seeds 0,1" in again.stdout, again.stderr
    assert json.loads((run / "summary.json").read_text())["average"] == agg["average"]

    from studies.report import CI95, leaderboard

    board = leaderboard(study)
    assert board.loc[0, CI95] == pytest.approx(100 * a["average_ci95"]) and board.loc[0, "seeds"] == 2  # 0–100

    # a setting that contradicts the stored study, and a bad list, are refused with one line
    for bad in (["--seeds", "0,1,2"], ["--seeds", "0,0"]):
        q = subprocess.run(
            [EXE, "run", "design", "--trials", "1", "--storage", url, *TINY[:2], *bad],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        last = q.stderr.strip().splitlines()[-1]  # (Optuna may log "using an existing study" before it)
        assert q.returncode == 2 and "seed" in last and "Traceback" not in q.stderr, q.stderr
