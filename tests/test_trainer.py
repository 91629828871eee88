"""The multi-task trainer on the tiny random BERT and small slices of the real GLUE files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from pals_core.data.samplers import SAMPLERS, register_sampler
from pals_core.data.task_sampler import TaskSampler
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig

GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
pytestmark = pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]

PROGRESS_KEYS = {
    "status",
    "step",
    "total",
    "elapsed_s",
    "eta_s",
    "scores",
    "average",
    "best_average",
    "error",
    "params",
    "updated",
    "pid",
}
SUMMARY_KEYS = {"config", "scores", "average", "best_step", "params", "wall_time_s", "steps"}


@pytest.fixture(scope="session")
def cache_dir(token_cache) -> str:
    return token_cache


def tiny(out, cache_dir, **kw) -> TrainConfig:
    base = dict(
        tasks=["rte", "stsb", "mrpc"],
        adapter=AdapterConfig(method="pals", d_s=8, heads=2),
        model="tiny",
        glue_dir=str(GLUE),
        out=str(out),
        steps=24,
        batch_size=8,
        max_len=48,
        eval_every=12,
        lr=1e-3,
        max_train_examples=96,
        max_eval_examples=48,
        seed=3,
        num_threads=1,
        cache_dir=cache_dir,
    )
    base.update(kw)
    return TrainConfig(**base)


def run(cfg, **kw):
    from pals_core.train.trainer import train

    return train(cfg, progress=False, **kw)


def read(path):
    return json.loads(Path(path).read_text())


def metrics(out):
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


SHORT = dict(steps=20, eval_every=5, save_every=5)  # the in-process stop / resume tests
LAUNCHED = dict(steps=40, eval_every=10, save_every=5)  # the killed processes (_launch): long enough to be killed


@pytest.fixture(scope="module")
def reference(tmp_path_factory, cache_dir):
    """One uninterrupted run that the in-process stop / resume tests must reproduce."""
    out = tmp_path_factory.mktemp("ref") / "run"
    summary = run(tiny(out, cache_dir, **SHORT))
    return out, summary


@pytest.fixture(scope="module")
def launched_reference(tmp_path_factory, cache_dir):
    """One uninterrupted run with _launch's settings, which a killed and resumed process must reproduce."""
    out = tmp_path_factory.mktemp("ref") / "run"
    summary = run(tiny(out, cache_dir, **LAUNCHED))
    return out, summary


def same_result(out, ref_out):
    assert metrics(out) == metrics(ref_out)
    a, b = read(Path(out) / "summary.json"), read(Path(ref_out) / "summary.json")
    for key in ("scores", "average", "best_step", "params", "steps", "task_steps", "final"):
        assert a[key] == b[key], key


@pytest.mark.slow
def test_run_directory_schema_and_best_checkpoint(tmp_path, cache_dir):
    out = tmp_path / "run"
    summary = run(tiny(out, cache_dir, sampling="round_robin"))
    assert set(summary) >= SUMMARY_KEYS
    assert read(out / "summary.json") == summary
    assert summary["config"] == read(out / "config.json") and summary["steps"] == 24
    assert summary["task_steps"] == {"rte": 8, "stsb": 8, "mrpc": 8}  # round robin really cycles
    progress = read(out / "progress.json")
    assert set(progress) == PROGRESS_KEYS and progress["status"] == "finished"
    assert progress["step"] == progress["total"] == 24 and progress["pid"] == os.getpid() and progress["error"] is None
    assert set(progress["scores"]) == {"rte", "stsb", "mrpc"}
    lines = metrics(out)
    assert [r["step"] for r in lines] == [12, 24]
    for r in lines:
        assert set(r) == {"step", "scores", "average", "train_loss"} and r["train_loss"] > 0
        assert set(r["scores"]["mrpc"]) == {"f1", "accuracy"} and set(r["scores"]["stsb"]) == {"pearson", "spearman"}
    best = max(lines, key=lambda r: r["average"])
    assert summary["best_step"] == best["step"] and summary["scores"] == best["scores"]
    assert progress["best_average"] == summary["average"] == best["average"]

    # the parameter block is the calculator's, and the module agrees
    from pals_core.base_model import model_shape
    from pals_core.budget.costs import design, evaluate
    from pals_core.budget.tasks import Task
    from pals_core.model import MultiTaskModel

    cfg = tiny(out, cache_dir)
    cost = evaluate(design(model_shape("tiny"), [Task("rte", 2), Task("stsb", 1), Task("mrpc", 2)], cfg.adapter), 8)
    model = MultiTaskModel.from_base("tiny", cfg.adapter, {"rte": 2, "stsb": 1, "mrpc": 2})
    p = summary["params"]
    assert p["total"] == cost.params_total == sum(x.numel() for x in model.parameters())
    assert p["task_specific"] == cost.params_task_specific and p["trained"] == p["total"]
    assert p["per_task"] == {
        t: sum(x.numel() for _, x in model.named_task_parameters(t)) for t in ("rte", "stsb", "mrpc")
    }

    # task-separable checkpoint files; the best one reproduces the best scores
    from pals_core.checkpoint import load_model
    from pals_core.data.load import load_tasks, load_tokenizer, tokenizer_path
    from pals_core.train.evaluate import evaluate as run_eval

    pointer = read(out / "checkpoints" / "best.json")
    folder = out / "checkpoints" / pointer["dir"]
    assert sorted(f.name for f in folder.glob("*.safetensors")) == [
        "shared.safetensors",
        "task-mrpc.safetensors",
        "task-rte.safetensors",
        "task-stsb.safetensors",
    ]
    load_model(model, folder)
    data = load_tasks(
        cfg.tasks,
        load_tokenizer(tokenizer_path("tiny")),
        glue_dir=str(GLUE),
        max_len=48,
        max_train=96,
        max_eval=48,
        cache_dir=cache_dir,
    )
    again = run_eval(
        model,
        {t: d.dev for t, d in data.items()},
        batch_size=cfg.eval_batch_size,
        device=torch.device("cpu"),
        autocast=contextlib.nullcontext,
    )
    for t in cfg.tasks:
        for m, v in summary["scores"][t].items():
            assert again[t][m] == pytest.approx(v, abs=1e-6)

    # the paper's optimiser: AdamW β 0.9/0.999, decay 0.01 except biases/LayerNorm, linear decay to zero
    blob = torch.load(
        out / "checkpoints" / read(out / "checkpoints" / "latest.json")["dir"] / "optimizer.pt", weights_only=True
    )
    groups = blob["optimizer"]["param_groups"]
    assert [g["weight_decay"] for g in groups] == [0.01, 0.0] and all(tuple(g["betas"]) == (0.9, 0.999) for g in groups)
    assert len(groups[1]["params"]) == len(model.bias_and_norm_parameter_names())
    assert blob["scheduler"]["last_epoch"] == 24 and all(g["lr"] == 0.0 for g in groups)


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_existing_runs_and_resume_rules(tmp_path, cache_dir, reference):
    ref_out, ref_summary = reference
    with pytest.raises(ValueError, match="already holds a run"):
        run(tiny(ref_out, cache_dir, **SHORT))
    with pytest.raises(ValueError, match=r"other settings: lr: run has 0.001, given 0.002"):
        run(tiny(ref_out, cache_dir, **SHORT, lr=2e-3), resume=True)
    t0 = time.monotonic()
    again = run(tiny(ref_out, cache_dir, **SHORT), resume=True)  # finished: as it is
    assert again == ref_summary and time.monotonic() - t0 < 5


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_on_eval_may_stop_the_run_and_resume_reproduces_it(tmp_path, cache_dir, reference):
    ref_out, _ = reference
    out = tmp_path / "run"

    class Pruned(Exception):
        pass

    def prune(step, scores, average):
        assert set(scores) == {"rte", "stsb", "mrpc"} and isinstance(average, float)
        if step == 10:
            raise Pruned

    with pytest.raises(Pruned):
        run(tiny(out, cache_dir, **SHORT), on_eval=prune)
    progress = read(out / "progress.json")
    assert progress["status"] == "stopped" and progress["step"] == 10 and "Pruned" in progress["error"]
    assert read(out / "checkpoints" / "latest.json")["step"] == 10
    run(tiny(out, cache_dir, **SHORT), resume=True)
    same_result(out, ref_out)


def _launch(out, cache_dir, extra=()):
    args = [
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
        "--glue-dir",
        str(GLUE),
        "--steps",
        str(LAUNCHED["steps"]),
        "--batch-size",
        "8",
        "--max-len",
        "48",
        "--eval-every",
        str(LAUNCHED["eval_every"]),
        "--save-every",
        str(LAUNCHED["save_every"]),
        "--lr",
        "1e-3",
        "--max-train-examples",
        "96",
        "--max-eval-examples",
        "48",
        "--seed",
        "3",
        "--threads",
        "1",
        "--cache-dir",
        cache_dir,
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "pals_core.cli.train", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_checkpoint(proc, out, timeout=120):
    latest = Path(out) / "checkpoints" / "latest.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if latest.is_file():
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before its first checkpoint: {proc.stderr.read()}")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("no checkpoint appeared")


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path, cache_dir, launched_reference):
    ref_out, _ = launched_reference
    out = tmp_path / "run"
    proc = _launch(out, cache_dir)
    _wait_for_checkpoint(proc, out)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    killed_at = read(out / "checkpoints" / "latest.json")["step"]
    assert killed_at < LAUNCHED["steps"] and read(out / "progress.json")["status"] == "running"
    resumed = _launch(out, cache_dir, ["--resume"])
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert "dev average" in stdout
    same_result(out, ref_out)
    assert read(out / "progress.json")["status"] == "finished"


@pytest.mark.slow
def test_sigterm_stops_cleanly_with_a_checkpoint(tmp_path, cache_dir, launched_reference):
    ref_out, _ = launched_reference
    out = tmp_path / "run"
    proc = _launch(out, cache_dir)
    _wait_for_checkpoint(proc, out)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    progress = read(out / "progress.json")
    if proc.returncode == 0:  # it finished before the signal arrived (a very fast machine)
        pytest.skip("the run ended before SIGTERM")
    assert proc.returncode == 143 and "stopped at step" in stderr and "Traceback" not in stderr
    assert progress["status"] == "stopped" and read(out / "checkpoints" / "latest.json")["step"] == progress["step"]
    run(tiny(out, cache_dir, **LAUNCHED), resume=True)
    same_result(out, ref_out)


@pytest.mark.slow  # 1-3 s of real rows: make test, not make test-fast
def test_a_malformed_glue_file_is_refused_before_the_run_folder(tmp_path, cache_dir):
    glue = tmp_path / "glue"
    for folder in ("RTE", "STS-B"):
        shutil.copytree(GLUE / folder, glue / folder)
    lines = (glue / "STS-B" / "train.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3].replace("\t", " ", 2)
    (glue / "STS-B" / "train.tsv").write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=r"train\.tsv:4: expected 10 tab-separated fields"):
        run(tiny(out, cache_dir, tasks=["rte", "stsb"], glue_dir=str(glue)))
    assert not out.exists()  # GLUE's rows, as a tasks file's, are read and checked before anything is written


@pytest.mark.slow  # 1-3 s of real tokenising: make test, not make test-fast
def test_a_crash_is_recorded_as_failed(tmp_path):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the tokenisation cache goes")
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=r"cannot set up the run: File exists"):
        run(tiny(out, str(blocked), tasks=["rte"]))
    progress = read(out / "progress.json")
    assert progress["status"] == "failed" and "cannot set up the run" in progress["error"]


def test_budget_takes_d_s_from_the_calculator(tmp_path, cache_dir):
    from pals_core.base_model import model_shape
    from pals_core.budget.costs import design
    from pals_core.budget.solver import Budget, solve
    from pals_core.budget.tasks import Task
    from pals_core.train.params import resolve

    cfg = resolve(tiny(tmp_path / "r", cache_dir, adapter=AdapterConfig(method="pals", heads=2), budget=1.01))
    probe = design(
        model_shape("tiny"),
        [Task("rte", 2), Task("stsb", 1), Task("mrpc", 2)],
        AdapterConfig(method="pals", heads=2),
        check_size=False,
    )
    assert cfg.adapter.d_s == solve(probe, Budget(ratio=1.01)).d_s and cfg.adapter.d_s % 2 == 0
    with pytest.raises(ValueError, match="does not fit"):
        resolve(tiny(tmp_path / "r", cache_dir, adapter=AdapterConfig(method="pals", heads=2), budget=1.0))


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_frozen_trunk_stays_put(tmp_path, cache_dir):
    from safetensors.torch import load_file

    from pals_core.model import MultiTaskModel

    cfg = tiny(
        tmp_path / "run",
        cache_dir,
        steps=6,
        eval_every=6,
        sampling="round_robin",
        adapter=AdapterConfig(method="pals", d_s=8, heads=2, freeze_trunk=True),
    )
    summary = run(cfg)
    assert summary["params"]["trained"] == summary["params"]["task_specific"]
    torch.manual_seed(cfg.seed)  # the trainer seeds the same way before building the model
    fresh = MultiTaskModel.from_base("tiny", cfg.adapter, {"rte": 2, "stsb": 1, "mrpc": 2})
    shared = load_file(str(tmp_path / "run" / "checkpoints" / "step-00000006" / "shared.safetensors"))
    params = dict(fresh.named_parameters())
    assert all(torch.equal(v, params[k]) for k, v in shared.items() if k.startswith("bert."))
    task = load_file(str(tmp_path / "run" / "checkpoints" / "step-00000006" / "task-rte.safetensors"))
    assert not torch.equal(task["head.weight"], params["heads.rte.weight"])  # the adapters did train


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_ia3_trains_through_the_trainer(tmp_path, cache_dir):
    """A method added as one package (pals_core/methods/ia3/) trains with no change to the trainer: its scales
    leave 1, the run's parameter block is the calculator's, and the model holds exactly that many."""
    from safetensors.torch import load_file

    from pals_core.base_model import model_shape
    from pals_core.budget.costs import design, evaluate
    from pals_core.budget.tasks import Task
    from pals_core.model import MultiTaskModel

    adapter = AdapterConfig(method="ia3", location="top")
    summary = run(tiny(tmp_path / "run", cache_dir, steps=6, eval_every=6, sampling="round_robin", adapter=adapter))
    tasks = {"rte": 2, "stsb": 1, "mrpc": 2}
    cost = evaluate(design(model_shape("tiny"), [Task(t, c) for t, c in tasks.items()], adapter), None)
    assert summary["params"]["total"] == cost.params_total
    assert sum(p.numel() for p in MultiTaskModel.from_base("tiny", adapter, tasks).parameters()) == cost.params_total
    task = load_file(str(tmp_path / "run" / "checkpoints" / "step-00000006" / "task-rte.safetensors"))
    scales = {k: v for k, v in task.items() if k.startswith("adapter.")}
    assert set(scales) == {"adapter.key_scales", "adapter.value_scales", "adapter.ffn_scales"}
    assert all(torch.isfinite(v).all() and not torch.equal(v, torch.ones_like(v)) for v in scales.values())


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_a_model_aware_sampler_is_asked_with_the_model(tmp_path, cache_dir):
    seen = []

    class Widest(TaskSampler):
        name = "widest_batch_test"
        needs_model = True

        def probabilities(self, step):
            return np.full(len(self.tasks), 1 / len(self.tasks))

        def select(self, model, batches, step=0):
            seen.append((type(model).__name__, [t for t, _ in batches]))
            return [batches[int(np.argmax([b["input_ids"].shape[1] for _, b in batches]))]]

    register_sampler(Widest.name)(Widest)
    try:
        summary = run(tiny(tmp_path / "run", cache_dir, steps=6, eval_every=6, sampling=Widest.name))
    finally:
        SAMPLERS.pop(Widest.name, None)
    assert len(seen) == 6 and all(s == ("MultiTaskModel", ["rte", "stsb", "mrpc"]) for s in seen)
    assert summary["task_steps"]["stsb"] == 0  # STS-B sentences are the shortest: never the widest batch


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--tasks", "rte,foo", "--d-s", "12"], "unknown task 'foo'"),
        (["--tasks", "rte", "--method", "palz", "--d-s", "12"], "unknown method 'palz'"),
        (["--tasks", "rte", "--d-s", "13"], "d_s = 13 is not divisible by the 12 adapter heads"),
        (["--tasks", "rte"], "needs --d-s N or a budget"),
        (["--tasks", "rte,qnli", "--d-s", "12"], "GLUE files missing in .*: qnli \\(QNLI/train.tsv\\)"),
        (["--tasks", "rte", "--d-s", "12", "--glue-dir", "/nonexistent/glue"], "GLUE directory not found"),
        (["--tasks", "rte", "--d-s", "12", "--budget", "1.1"], "give d_s or a budget, not both"),
        (["--tasks", "rte", "--d-s", "12", "--steps", "0"], "steps must be a positive integer"),
        (["--tasks", "rte", "--d-s", "12", "--sampling", "zigzag"], "unknown sampling 'zigzag'"),
    ],
)
def test_cli_bad_arguments_exit_2_with_one_line(tmp_path, capsys, argv, message):
    from pals_core.cli.train import main

    code = main(
        [*argv, "--out", str(tmp_path / "run"), "--glue-dir", str(GLUE)]
        if "--glue-dir" not in argv
        else [*argv, "--out", str(tmp_path / "run")]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    import re

    assert re.search(message, err), err
    assert not (tmp_path / "run").exists()


def test_data_streams_visit_every_example_once_per_pass_and_resume_exactly():
    from pals_core.train.streams import TaskStream, process_slice

    s = TaskStream(10, seed=3, task_index=1)
    first = np.concatenate([s.take(4) for _ in range(5)])  # 20 rows = two passes, batches straddle the boundary
    assert sorted(first[:10]) == list(range(10)) and sorted(first[10:]) == list(range(10))
    assert not np.array_equal(first[:10], first[10:])  # a new order each pass
    state = s.state_dict()
    rest = s.take(7)
    t = TaskStream(10, seed=3, task_index=1)
    t.load_state_dict(state)
    assert np.array_equal(t.take(7), rest)
    assert not np.array_equal(TaskStream(10, 3, 2).take(10), TaskStream(10, 3, 1).take(10))
    assert process_slice(np.arange(8), 1, 2).tolist() == [4, 5, 6, 7]


def test_metrics_log_survives_a_partial_last_line(tmp_path):
    from pals_core.train.rundir import RunDir

    r = RunDir(tmp_path)
    for step in (10, 20, 30):
        r.append_metrics({"step": step, "scores": {}, "average": 0.5, "train_loss": float("nan")})
    with open(r.metrics, "a") as f:
        f.write('{"step": 40, "sco')  # a kill in the middle of a write
    assert [x["step"] for x in r.read_metrics()] == [10, 20, 30]
    assert r.read_metrics()[0]["train_loss"] is None  # strict JSON: NaN is written as null
    assert [x["step"] for x in r.truncate_metrics(20)] == [10, 20]
    assert r.metrics.read_text().count("\n") == 2


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_summary_holds_predicted_beside_measured_step_time_and_memory(tmp_path, cache_dir, monkeypatch):
    """summary.json ``machine``: the calculator's step time and memory for the run's design, batch and max_len on
    the run's device (CPU: the local profile), beside the measured seconds per step and the peak memory."""
    import pals_core.train.machine_report as report
    from pals_core.base_model import model_shape, tiny_config_dict
    from pals_core.budget.costs import design, evaluate
    from pals_core.budget.tasks import Task
    from pals_core.families.shapes import conditions_from_config
    from pals_core.footprint.memory import memory_train

    profile = tmp_path / "local.json"
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(profile))
    from pals_core.footprint.timing import load_profile

    profile.write_text(json.dumps(load_profile("h100").as_dict() | {"kind": "cpu", "name": "local"}))
    adapter = AdapterConfig(method="low_rank", d_s=4)
    summary = run(tiny(tmp_path / "run", cache_dir, steps=4, eval_every=4, adapter=adapter))
    machine = read(tmp_path / "run" / "summary.json")["machine"]
    assert machine == summary["machine"]
    pred, meas = machine["predicted"], machine["measured"]
    ds = design(model_shape("tiny"), [Task("rte", 2), Task("stsb", 1), Task("mrpc", 2)], adapter, seq_len=48)
    expected = memory_train(ds, 4, evaluate(ds, 4), batch=8, cond=conditions_from_config(tiny_config_dict()))
    assert pred["memory_train"] == expected.as_dict() and pred["device"] == "local"
    assert pred["time_step_s"] > 0 and pred["time_ratio"] > 1.0 and pred["memory_infer"] > 0
    # summary.json rounds train_time_s to the millisecond; step_s is the unrounded time / 4 (a relative tolerance
    # failed when 4 quick steps took under 50 ms)
    assert abs(meas["step_s"] * 4 - summary["train_time_s"]) <= 5e-4 + 1e-9 and meas["peak_memory_bytes"] > 0
    assert report.gpu_profile("NVIDIA H100 80GB HBM3") == "h100"  # the CUDA path names its profiles
    # the run's own figures say which device measured them: this machine's CPU, at the threads torch used
    from pals_core.footprint.here import cpu_name

    assert meas["device"].startswith(f"CPU: {cpu_name()}, ") and meas["device"].endswith("thread(s)")


@pytest.mark.slow
def test_a_task_that_received_no_step_is_named_untrained(glue_dir, tmp_path, pals_train):
    """A sampler can leave a task without a step (MT-Uncertainty starving one; here round robin over one step): its
    scores are an untrained head's, and the log and summary.json say so."""
    import json

    out = pals_train(
        "--model",
        "tiny",
        "--method",
        "shared",
        "--tasks",
        "rte,mrpc",
        "--sampling",
        "round_robin",
        "--steps",
        "1",
        "--max-train-examples",
        "8",
        "--max-eval-examples",
        "8",
        "--batch-size",
        "4",
        "--out",
        str(tmp_path / "run"),
        "--glue-dir",
        str(glue_dir),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["task_steps"] == {"rte": 1, "mrpc": 0} and s["untrained"] == ["mrpc"]
    assert "untrained: mrpc received no training step" in out.stdout
