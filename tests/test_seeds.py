"""``--seeds``: the aggregate's arithmetic, and multi-seed runs on the tiny BERT with real GLUE rows
(parallel processes, a SIGKILL and ``--resume``)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from pals_core.supervise.runs import load_run
from pals_core.train.aggregate import aggregate, compare, holm, seed_stats, t_quantile

ROOT = Path(__file__).resolve().parents[1]
GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
needs_glue = pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")


# ------------------------------------------------------------------------------------ arithmetic


def test_stats_by_hand():
    s = seed_stats([0.5, 0.7, 0.6])
    # mean 0.6; deviations −0.1, 0.1, 0: Σ² = 0.02, /(n−1) = 0.01 → std 0.1; t_{0.975,2} = 4.302652729…
    assert s["mean"] == pytest.approx(0.6, abs=1e-15)
    assert s["std"] == pytest.approx(0.1, abs=1e-15)
    assert s["ci95"] == pytest.approx(4.302652729749464 * 0.1 / math.sqrt(3), rel=1e-12)
    assert t_quantile(2) == pytest.approx(4.302652729749464, rel=1e-12)
    two = seed_stats([1.0, 3.0])  # std √2, t_{0.975,1} = 12.7062047…, ci95 = 12.706·√2/√2 = 12.706
    assert two["std"] == pytest.approx(math.sqrt(2)) and two["ci95"] == pytest.approx(12.706204736174707, rel=1e-12)


def test_stats_agree_with_numpy_and_scipy():
    rng = np.random.default_rng(7)
    for n in (2, 3, 5, 10):
        x = rng.normal(0.7, 0.05, n)
        s = seed_stats(x.tolist())
        assert s["mean"] == pytest.approx(x.mean(), rel=1e-13)
        assert s["std"] == pytest.approx(x.std(ddof=1), rel=1e-12)
        lo, hi = scipy.stats.t.interval(0.95, n - 1, loc=x.mean(), scale=scipy.stats.sem(x))
        assert s["ci95"] == pytest.approx((hi - lo) / 2, rel=1e-10)


def test_one_seed_has_no_spread_and_bad_values_are_refused():
    assert seed_stats([0.42]) == {"mean": 0.42, "std": None, "ci95": None}
    for bad in ([], [0.1, float("nan")], [0.1, None]):
        with pytest.raises(ValueError):
            seed_stats(bad)


def test_welch_comparison_by_hand():
    # x̄ = 2.5, ȳ = 6: d = −3.5; s_x² = 5/3, s_y² = 10 → a = 5/12, b = 2; se = √(29/12);
    # ν = se⁴ / (a²/3 + b²/4) = 5.5209… (Welch–Satterthwaite, not the pooled n_x + n_y − 2 = 7)
    x, y = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0]
    a, b = (5 / 3) / 4, 10 / 5
    se, nu = math.sqrt(a + b), (a + b) ** 2 / (a**2 / 3 + b**2 / 4)
    c = compare(x, y)
    assert c["diff"] == pytest.approx(-3.5) and c["df"] == pytest.approx(nu, rel=1e-12)
    half = scipy.stats.t.ppf(0.975, nu) * se
    assert (c["low"], c["high"]) == (pytest.approx(-3.5 - half, rel=1e-10), pytest.approx(-3.5 + half, rel=1e-10))
    assert c["p"] == pytest.approx(2 * scipy.stats.t.sf(3.5 / se, nu), rel=1e-10)
    assert compare(y, x)["diff"] == pytest.approx(3.5) and compare(y, x)["p"] == pytest.approx(c["p"])


def test_welch_edge_cases():
    assert compare([0.5, 0.5], [0.5, 0.5, 0.5]) == {"diff": 0.0, "low": 0.0, "high": 0.0, "df": math.inf, "p": 1.0}
    same = compare([0.6, 0.6], [0.5, 0.5])  # no spread on either side: the difference is exact
    assert same["p"] == 0.0 and same["low"] == same["high"] == pytest.approx(0.1)
    with pytest.raises(ValueError):
        compare([0.5], [0.4, 0.6])  # one seed: no spread, no test


def test_holm_step_down():
    # sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → max so far 0.06; back in the given order
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([0.02]) == [0.02] and holm([]) == []
    # 20 tests at p = 0.04 each: nominally all "significant", none after the correction
    assert all(q >= 0.05 for q in holm([0.04] * 20))


def test_aggregate_so_far_reads_the_finished_seeds_of_a_plan(tmp_path):
    """A --seeds run still training: the aggregate of the seeds done so far and the plan's seeds; the file system only."""
    from pals_core.train.rundir import SEEDS_FILE
    from pals_core.train.seeds import SeedsPlan, aggregate_so_far

    assert aggregate_so_far(tmp_path) is None  # no plan
    (tmp_path / SEEDS_FILE).write_text(
        json.dumps({"kind": SeedsPlan.KIND, "seeds": [0, 1, 2], "separate": True, "template": {}})
    )
    assert aggregate_so_far(tmp_path) is None  # no seed finished
    for k, avg in ((0, 0.5), (2, 0.7)):
        (tmp_path / f"seed-{k}").mkdir()
        (tmp_path / f"seed-{k}" / "summary.json").write_text(json.dumps(_summary(avg, avg, avg, avg)))
    (tmp_path / "seed-1").mkdir()
    (tmp_path / "seed-1" / "summary.json").write_text("{not json")  # being written, or damaged: not counted
    agg = aggregate_so_far(tmp_path)
    assert agg["planned"] == [0, 1, 2] and agg["seeds"] == [0, 2] and agg["method"] == "separate"
    assert agg["average"] == seed_stats([0.5, 0.7]) and [r["dir"] for r in agg["runs"]] == ["seed-0", "seed-2"]
    (tmp_path / SEEDS_FILE).write_text(json.dumps({"kind": "something else", "seeds": [0]}))
    assert aggregate_so_far(tmp_path) is None


def _summary(avg, rte, f1, acc, total=100):
    return {
        "scores": {"rte": {"accuracy": rte}, "mrpc": {"f1": f1, "accuracy": acc}},
        "average": avg,
        "params": {"total": total},
        "best_step": 10,
        "wall_time_s": 2.0,
        "config": {"seed": 0, "out": "x", "adapter": {"method": "pals"}},
    }


def test_aggregate_layout():
    agg = aggregate(
        [0, 1, 2],
        [_summary(0.6, 0.5, 0.8, 0.7), _summary(0.62, 0.55, 0.81, 0.69), _summary(0.58, 0.52, 0.79, 0.64)],
        ["seed-0", "seed-1", "seed-2"],
    )
    assert agg["seeds"] == [0, 1, 2] and agg["n"] == 3 and agg["method"] == "pals"
    assert set(agg["average"]) == {"mean", "std", "ci95"} and agg["average"]["mean"] == pytest.approx(0.6)
    assert agg["scores"]["mrpc"]["accuracy"]["std"] == pytest.approx(np.std([0.7, 0.69, 0.64], ddof=1))
    assert [r["dir"] for r in agg["runs"]] == ["seed-0", "seed-1", "seed-2"] and agg["runs"][1]["average"] == 0.62
    assert agg["params"] == {"total": 100} and "seed" not in agg["config"] and agg["wall_time_s"] == 6.0
    with pytest.raises(ValueError, match="parameter counts differ"):
        aggregate([0, 1], [_summary(0.6, 0.5, 0.8, 0.7), _summary(0.6, 0.5, 0.8, 0.7, total=101)], ["a", "b"])


# ------------------------------------------------------------------------------------- real runs

COMMON = [
    "--model",
    "tiny",
    "--method",
    "pals",
    "--d-s",
    "8",
    "--heads",
    "2",
    "--tasks",
    "rte,stsb,mrpc",
    "--steps",
    "16",
    "--batch-size",
    "8",
    "--max-len",
    "48",
    "--eval-every",
    "8",
    "--save-every",
    "2",
    "--lr",
    "1e-3",
    "--max-train-examples",
    "96",
    "--max-eval-examples",
    "48",
    "--threads",
    "1",
    "--no-progress",
]


def cli(*args, cache, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PALS_GLUE_DIR": str(GLUE)}
    return subprocess.Popen(
        [sys.executable, "-m", "pals_core.cli.train", *args, "--cache-dir", cache],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        **kw,
    )


def read(p):
    return json.loads(Path(p).read_text())


def lines(p):
    return [json.loads(x) for x in Path(p).read_text().splitlines()]


@needs_glue
@pytest.mark.slow
def test_parallel_seeds_then_kill_and_resume_give_the_same_aggregate(tmp_path, token_cache, capsys, monkeypatch):
    cache = token_cache
    ref = tmp_path / "ref"
    p = cli(*COMMON, "--seeds", "0,1", "--jobs", "2", "--out", str(ref), cache=cache)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    agg = read(ref / "summary.json")
    assert "± " in out and agg["seeds"] == [0, 1]
    # the aggregate is the statistic of the per-seed summaries
    per = [read(ref / f"seed-{k}" / "summary.json") for k in (0, 1)]
    assert [s["config"]["seed"] for s in per] == [0, 1]
    for task, metrics in agg["scores"].items():
        for m, stat in metrics.items():
            xs = [s["scores"][task][m] for s in per]
            assert stat["mean"] == pytest.approx(np.mean(xs), abs=1e-15)
            assert stat["std"] == pytest.approx(np.std(xs, ddof=1), abs=1e-15)
            assert stat["ci95"] == pytest.approx(
                scipy.stats.t.ppf(0.975, 1) * np.std(xs, ddof=1) / math.sqrt(2), abs=1e-14
            )
    assert agg["average"]["mean"] == pytest.approx(np.mean([s["average"] for s in per]))
    assert agg["params"] == per[0]["params"] == per[1]["params"]
    assert per[0]["scores"] != per[1]["scores"] or per[0]["final"] != per[1]["final"]  # the seeds really differ
    assert read(ref / "progress.json")["status"] == "finished"

    # one process, killed while the second seed trains; --resume (now with 2 processes) finishes the same runs
    out_dir = tmp_path / "killed"
    p = cli(*COMMON, "--seeds", "0,1", "--jobs", "1", "--out", str(out_dir), cache=cache)
    target = out_dir / "seed-1" / "checkpoints" / "latest.json"
    deadline = time.time() + 600
    while not target.is_file() and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert not (out_dir / "summary.json").exists() and (out_dir / "seed-0" / "summary.json").is_file()
    again = cli("--resume", "--out", str(out_dir), "--jobs", "2", "--threads", "1", "--no-progress", cache=cache)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    for k in (0, 1):
        assert lines(out_dir / f"seed-{k}" / "metrics.jsonl") == lines(ref / f"seed-{k}" / "metrics.jsonl")
    a, b = read(out_dir / "summary.json"), read(ref / "summary.json")
    for key in ("seeds", "average", "scores", "params"):
        assert a[key] == b[key], key

    # resuming with other settings, or starting over an existing run, is refused with one line (the command's own
    # main() in this process: a refusal happens before any training, so a process of its own would only add seconds)
    from pals_core.cli.train import main

    monkeypatch.setenv("PALS_GLUE_DIR", str(GLUE))
    for argv in (
        ["--resume", "--out", str(out_dir), "--lr", "0.5"],
        [*COMMON, "--seeds", "0,1", "--out", str(out_dir)],
        ["--resume", "--out", str(out_dir), "--seeds", "0,1,2"],
    ):
        capsys.readouterr()
        code = main([*argv, "--cache-dir", cache])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert read(out_dir / "summary.json")["seeds"] == [0, 1]  # the refused commands left the finished run as it was


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", "0,x"], "--seeds takes non-negative integers"),
        (["--seeds", "1,1"], "repeats a seed"),
        (["--jobs", "2"], "--jobs runs several runs at once"),
        (["--jobs", "0", "--seeds", "0"], "--jobs takes a positive integer"),
        (["--seeds", "0,1", "--seed", "3"], "not both"),
    ],
)
def test_bad_orchestration_flags_exit_2_with_one_line(tmp_path, capsys, argv, message):
    from pals_core.cli.train import main

    code = main([*argv, "--model", "tiny", "--tasks", "rte", "--method", "shared", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@needs_glue
@pytest.mark.slow  # ~1 s (a real run, an export or a study): make test, not make test-fast
def test_an_orchestrator_holds_its_folders_run_lock_while_its_runs_train(tmp_path, token_cache, monkeypatch):
    """OUT/progress.json says "running" while a --seeds / --method separate / sweep parent works: the explorer shows it
    running (not "died: progress.json still says running") and a second orchestrator on the same OUT is refused."""
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train import lock
    from pals_core.train import seeds as sd
    from pals_core.train.config import TrainConfig

    monkeypatch.setattr(lock, "ACQUIRE_WAIT_S", 0.1)  # the second orchestrator is refused without the 2 s wait
    out = tmp_path / "sweep"
    leaf = TrainConfig(
        tasks=["rte"],
        adapter=AdapterConfig(method="pals", d_s=8, heads=2),
        model="tiny",
        glue_dir=str(GLUE),
        out=str(out / "pals" / "seed-0"),
        steps=2,
        batch_size=4,
        max_len=48,
        eval_every=2,
        max_train_examples=16,
        max_eval_examples=8,
        cache_dir=token_cache,
        num_threads=1,
    )
    seen = {}

    def while_running() -> None:
        seen["holder"] = lock.holder(out)
        seen["status"] = load_run(out).status
        try:
            sd.run_leaves(out, [leaf], 1, False)
        except lock.RunBusy as e:
            seen["second"] = str(e)

    done = sd.run_leaves(out, [leaf], 1, False, on_change=while_running)
    assert seen["holder"] == os.getpid() and seen["status"] == "running"
    assert f"another process (pid {os.getpid()}) is training in {out}" in seen["second"]
    assert lock.holder(out) is None and load_run(out).status == "finished"  # released on the way out
    assert done[leaf.out]["steps"] == 2


def test_a_sweeps_progress_has_an_eta_at_its_own_pace(tmp_path, monkeypatch):
    """A 9-hour sweep's progress.json gives an ETA from the steps this invocation made (not from steps resumed from
    an earlier one), none in its first half minute, and measures again when a resumed run steps back."""
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train import seeds as sd
    from pals_core.train.config import TrainConfig
    from pals_core.train.rundir import RunDir

    leaves = [
        TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="shared"), out=str(tmp_path / name), steps=100)
        for name in ("a", "b")
    ]
    clock = [1000.0]
    monkeypatch.setattr(sd.time, "monotonic", lambda: clock[0])

    def at(t, a, b, status="running"):
        clock[0] = 1000.0 + t
        for leaf, step in zip(leaves, (a, b)):
            Path(leaf.out).mkdir(exist_ok=True)
            RunDir(leaf.out).write_progress(
                status="running",
                step=step,
                total=100,
                elapsed_s=0,
                eta_s=None,
                scores={},
                average=None,
                best_average=None,
            )
        write(status)
        return read(tmp_path / "progress.json")

    write = sd._progress_writer(tmp_path, leaves, started=1000.0)
    assert at(0, 10, 0)["eta_s"] is None  # 10 steps resumed from an earlier invocation: no pace yet
    assert at(10, 20, 0)["eta_s"] is None  # under ETA_AFTER_S
    p = at(40, 50, 10)
    assert p["step"] == 60 and p["elapsed_s"] == 40 and p["eta_s"] == pytest.approx((200 - 60) * 40 / 50, abs=0.1)
    assert at(50, 5, 0)["eta_s"] is None  # a run stepped back to its checkpoint: measured again from here
    assert at(100, 55, 0)["eta_s"] == pytest.approx(145 * 50 / 50, abs=0.1)
    assert at(101, 55, 0, "stopped")["eta_s"] is None and at(102, 100, 100, "finished")["eta_s"] == 0.0


@pytest.mark.parametrize(
    "extra",
    (
        ["--method", "pals", "--d-s", "24", "--seeds", "0"],
        ["--method", "separate"],
        ["--method", "separate", "--seeds", "0,1"],
    ),
)
def test_seeds_and_separate_never_overwrite_a_folder_that_holds_no_run(glue_dir, tmp_path, extra, pals_train):
    """`mkdir f; echo precious > f/summary.json; pals-train … --seeds 0 --out f` overwrote the user's files."""
    f = tmp_path / "f"
    f.mkdir()
    (f / "summary.json").write_text("precious\n")
    (f / "progress.json").write_text("mine\n")
    out = pals_train(
        "--model",
        "tiny",
        "--tasks",
        "rte",
        "--steps",
        "2",
        *extra,
        "--out",
        str(f),
        "--glue-dir",
        str(glue_dir),
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "is not empty and holds no pals-train run" in out.stderr
    assert (f / "summary.json").read_text() == "precious\n" and (f / "progress.json").read_text() == "mine\n"
    assert sorted(p.name for p in f.iterdir()) == ["progress.json", "summary.json"]


@pytest.mark.parametrize("flag, seed", [("--seed", str(2**63)), ("--seed", str(2**64)), ("--seeds", f"0,{2**63}")])
def test_a_seed_of_2_63_or_more_is_refused_before_anything_is_written(tmp_path, flag, seed, pals_train):
    out = pals_train(
        "--model",
        "tiny",
        "--tasks",
        "rte",
        "--steps",
        "2",
        "--method",
        "shared",
        flag,
        seed,
        "--out",
        str(tmp_path / "run"),
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "2**63 − 1" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()
