"""``--method separate``: steps per task, the parameter count, the summary format, kill + resume —
on the tiny BERT with real GLUE rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pals_core.data.samplers import make_sampler
from pals_core.train.separate import expected_steps, largest_remainder

ROOT = Path(__file__).resolve().parents[1]
GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
needs_glue = pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_steps_per_task_are_the_expected_shares():
    sizes = {"a": 100, "b": 300}
    # proportional: S·N_t/ΣN
    assert expected_steps("proportional", sizes, 10, 2400) == pytest.approx({"a": 2.5, "b": 7.5})
    # annealed over E = 2 epochs of 2 steps: α = 1, then α = 0.2
    p2 = 100**0.2 / (100**0.2 + 300**0.2)
    assert expected_steps("annealed", sizes, 4, 2)["a"] == pytest.approx(2 * 0.25 + 2 * p2)
    # round robin: exact counts
    assert expected_steps("round_robin", {"a": 5, "b": 5, "c": 5}, 10, 2400) == {"a": 4.0, "b": 3.0, "c": 3.0}
    # and the sampler agrees in the long run (Monte Carlo)
    s = make_sampler("sqrt", sizes, 20000, 2400)
    rng = np.random.default_rng(0)
    drawn = sum(s.sample(i, rng) == "a" for i in range(20000))
    assert drawn == pytest.approx(expected_steps("sqrt", sizes, 20000, 2400)["a"], rel=0.03)


def test_largest_remainder_keeps_the_total():
    assert largest_remainder({"a": 2.5, "b": 7.5}, 10) in ({"a": 3, "b": 7}, {"a": 2, "b": 8})
    assert largest_remainder({"a": 1.2, "b": 1.3, "c": 1.5}, 4) == {"a": 1, "b": 1, "c": 2}
    assert largest_remainder({"a": 3.0, "b": 3.0}, 6) == {"a": 3, "b": 3}


def test_model_aware_sampling_is_refused():
    with pytest.raises(ValueError, match="known in advance"):
        expected_steps("mt_uncertainty", {"a": 10, "b": 10}, 10, 2400)


COMMON = [
    "--model",
    "tiny",
    "--method",
    "separate",
    "--tasks",
    "rte,mrpc,stsb",
    "--sampling",
    "proportional",
    "--steps",
    "20",
    "--batch-size",
    "8",
    "--max-len",
    "48",
    "--eval-every",
    "10",
    "--save-every",
    "2",
    "--lr",
    "1e-3",
    "--max-eval-examples",
    "48",
    "--threads",
    "1",
    "--no-progress",
]


def cli(*args, cache):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PALS_GLUE_DIR": str(GLUE)}
    return subprocess.Popen(
        [sys.executable, "-m", "pals_core.cli.train", *args, "--cache-dir", cache],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def read(p):
    return json.loads(Path(p).read_text())


@needs_glue
@pytest.mark.slow
def test_separate_models_counts_scores_and_resume_after_a_kill(tmp_path, token_cache):
    from pals_core.base_model import model_shape
    from pals_core.budget.costs import design, evaluate
    from pals_core.budget.tasks import Task
    from pals_core.data.metrics import main_score
    from pals_core.model import MultiTaskModel
    from pals_core.pricing.config import AdapterConfig

    cache = token_cache
    ref = tmp_path / "ref"
    p = cli(*COMMON, "--out", str(ref), cache=cache)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    s = read(ref / "summary.json")
    assert "separate models" in out

    # steps: proportional shares of the 20 steps by the real training-set sizes, summing to 20
    sizes = {"rte": 2490, "mrpc": 3668, "stsb": 5749}
    assert s["train_examples"] == sizes
    share = {t: 20 * n / sum(sizes.values()) for t, n in sizes.items()}  # 4.21, 6.20, 9.59
    assert s["task_steps"] == {"rte": 4, "mrpc": 6, "stsb": 10} and s["steps"] == 20
    assert all(abs(s["task_steps"][t] - share[t]) < 1 for t in sizes)
    plan = read(ref / "separate.json")
    assert plan["steps_per_task"] == s["task_steps"] and plan["eval_every_per_task"] == {"rte": 2, "mrpc": 3, "stsb": 5}

    # each task: an ordinary one-task `shared` run with that many steps
    for t in sizes:
        sub = read(ref / f"task-{t}" / "summary.json")
        assert sub["config"]["tasks"] == [t] and sub["config"]["adapter"]["method"] == "shared"
        assert sub["steps"] == s["task_steps"][t] and sub["task_steps"] == {t: s["task_steps"][t]}
        assert s["scores"][t] == sub["scores"][t] and s["best_step"][t] == sub["best_step"]
        assert sub["config"]["lr"] == 1e-3 and sub["config"]["seed"] == 0 and sub["config"]["batch_size"] == 8

    # scores in the usual format; the average is the paper's Table 3 average of the per-task best scores
    assert set(s["scores"]["mrpc"]) == {"f1", "accuracy"} and set(s["scores"]["stsb"]) == {"pearson", "spearman"}
    assert s["average"] == pytest.approx(np.mean([main_score(t, s["scores"][t]) for t in sizes]), abs=1e-15)
    assert s["config"]["adapter"]["method"] == "separate" and s["method"] == "separate"

    # params: T × N_base + heads — the calculator's one-task shared model per task, and the modules agree
    shape = model_shape("tiny")
    labels = {"rte": 2, "mrpc": 2, "stsb": 1}
    costs = {t: evaluate(design(shape, [Task(t, c)], AdapterConfig(method="shared")), None) for t, c in labels.items()}
    held = {
        t: sum(x.numel() for x in MultiTaskModel.from_base("tiny", AdapterConfig(method="shared"), {t: c}).parameters())
        for t, c in labels.items()
    }
    n_base = costs["rte"].params_total - costs["rte"].params_task_specific
    heads = sum(32 * c + c for c in labels.values())  # d·C_t + C_t, d = 32
    p = s["params"]
    assert p["per_task"] == {t: c.params_total for t, c in costs.items()} == held
    assert p["total"] == 3 * n_base + heads == sum(held.values()) and p["base"] == n_base and p["models"] == 3
    assert p["task_specific"] == p["total"] - n_base and p["ratio"] == pytest.approx(p["total"] / n_base)
    assert p["trained"] == p["total"] and p["d_s"] is None

    # a kill while the second model trains; --resume finishes with the same numbers
    killed = tmp_path / "killed"
    p = cli(*COMMON, "--out", str(killed), cache=cache)
    target = killed / "task-mrpc" / "checkpoints" / "latest.json"
    deadline = time.time() + 600
    while not target.is_file() and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    again = cli("--resume", "--out", str(killed), "--no-progress", cache=cache)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    a = read(killed / "summary.json")
    for key in ("scores", "average", "best_step", "params", "task_steps", "final"):
        assert a[key] == s[key], key

    # a sweep still running: a seed's separate summary is written as soon as all its tasks have finished, and equals
    # the one written at the end; while a task is unfinished, nothing is written
    from pals_core.train import separate as sep
    from pals_core.train.seeds import write_finished_separate

    (ref / "summary.json").unlink()
    moved = ref / "task-stsb" / "summary.json"
    moved.rename(tmp_path / "stsb-summary.json")
    plans = {0: sep.SeparatePlan.read(ref)}
    assert write_finished_separate(plans) == [] and not (ref / "summary.json").exists()
    (tmp_path / "stsb-summary.json").rename(moved)
    assert write_finished_separate(plans) == [0]
    assert read(ref / "summary.json") == s
    assert write_finished_separate(plans) == []  # written once


@pytest.mark.parametrize("budget", [["--budget", "1.1"], ["--extra", "2M"], ["--per-task", "100k"]])
def test_separate_with_a_budget_says_the_budget_does_not_apply(glue_dir, tmp_path, budget, pals_train):
    out = pals_train(
        "--model",
        "tiny",
        "--tasks",
        "rte,stsb",
        "--steps",
        "2",
        "--method",
        "separate",
        *budget,
        "--out",
        str(tmp_path / "sep"),
        "--glue-dir",
        str(glue_dir),
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "does not apply" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "sep").exists()
