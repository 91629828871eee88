"""benchmarks/gpu_check.py cannot rot: ``--device cpu --tiny`` runs every part of the GPU check —
the training steps of shared, PALs, Houlsby and LoRA at the 1.13× budget's sizes, serving, and pals-train then
pals-predict end to end — on a tiny BERT and a few real GLUE rows, and writes every figure the device run reports."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def strict_json(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def no_work(monkeypatch):
    """gpu_check with its work replaced by a failure: an argument refused must be refused before any of it."""
    gc = load("gpu_check")

    def check(args, device):
        raise AssertionError("the check started before its arguments were all checked")

    monkeypatch.setattr(gc, "check", check)
    return gc


def test_every_argument_is_checked_before_any_work_by_exact_name(tmp_path, no_work, capsys, monkeypatch):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    (tmp_path / "a-file").write_text("x")
    base = ["--device", "cpu", "--tiny", "--glue-dir", str(tmp_path)]
    cases = {
        ("--skip", "runx"): "--skip: no part 'runx'",
        ("--skip", "steps,serving,bogus"): "--skip: no part 'bogus'",
        ("--skip", "un"): "--skip: no part 'un'",
        ("--profile", "h1000"): "--profile: unknown device 'h1000'",
        ("--profile", str(tmp_path / "none.json")): "--profile: device profile not found",
        ("--json", str(folder)): f"--json {folder}: a folder",
        ("--json", str(tmp_path / "no" / "such" / "x.json")): "--json",
        ("--work", str(tmp_path / "a-file")): "--work",
    }
    for extra, says in cases.items():
        assert no_work.main([*base, *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith(f"gpu_check: error: {says}") and err.count("\n") == 1, (extra, err)
    monkeypatch.delenv("PALS_GLUE_DIR", raising=False)
    assert no_work.main(["--device", "cpu", "--tiny", "--skip", "steps,serving"]) == 2  # no GLUE folder for the run
    assert "--glue-dir" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="before its arguments"):  # every part named exactly: accepted
        no_work.main([*base, "--skip", "steps,serving,run", "--profile", "h100", "--json", str(tmp_path / "g.json")])


def test_the_work_folder_is_new_each_time_and_inside_work(tmp_path):
    gc = load("gpu_check")
    work = tmp_path / "w"
    work.mkdir()
    (work / "rte_dev.jsonl").write_text("mine")
    a, b = gc.work_folder(str(work), str(tmp_path / "tmp")), gc.work_folder(str(work), str(tmp_path / "tmp"))
    assert a != b and a.parent == b.parent == work and not any(a.iterdir()) and not any(b.iterdir())
    assert (work / "rte_dev.jsonl").read_text() == "mine"
    assert gc.work_folder(None, str(tmp_path / "tmp")) == tmp_path / "tmp"


@pytest.mark.slow  # ~5 s on 2 cores: the steps of three tiny designs on CPU
def test_a_part_that_fails_late_keeps_the_figures_it_measured(tmp_path, monkeypatch, capsys):
    """LoRA's step fails after shared, PALs and Houlsby were measured: their figures are in the JSON (with the
    error), and the check says it failed."""
    gc = load("gpu_check")
    one = gc.one_design

    def failing_lora(args, device, config, names, task, adapter, batch, labels):
        if adapter.method == "lora":
            raise RuntimeError("CUDA out of memory (a stand-in)")
        return one(args, device, config, names, task, adapter, batch, labels)

    monkeypatch.setattr(gc, "one_design", failing_lora)
    out = tmp_path / "g.json"
    assert gc.main(["--device", "cpu", "--tiny", "--skip", "serving,run", "--json", str(out)]) == 1
    got = strict_json(out.read_text())
    assert [r["design"] for r in got["steps"]] == ["shared", "pals", "houlsby"]
    assert all(finite(r["mfu"]) and finite(r["ratio_of_ratios"]) for r in got["steps"])
    assert "out of memory" in got["errors"]["steps"]
    assert any(goal.startswith("steps ran") and not ok for goal, _, ok in got["goals"])
    assert "FAIL  steps ran" in capsys.readouterr().out


@pytest.mark.slow  # ~15 s on 2 cores: four designs' steps, serving, two 12-step runs and three pals-predict passes
def test_cpu_tiny_check_writes_every_figure_and_pals_predict_reproduces_the_run(
    tmp_path, glue_dir, token_cache, capsys
):
    glue = tmp_path / "glue"
    load("carry_minilm").copy_glue(glue_dir, glue, train_rows=64, dev_rows=40)  # real GLUE rows, few of them
    out = tmp_path / "gpu_check.json"
    work = tmp_path / "w"
    mine = {"rte_dev.jsonl": '{"mine": 1}\n', "mrpc_pred.jsonl": '{"mine": 2}\n', "run/notes.txt": "mine"}
    for name, text in mine.items():  # a user's files in --work: never written over, never read as the check's
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    argv = ["--device", "cpu", "--tiny", "--glue-dir", str(glue), "--json", str(out), "--work", str(work)]
    assert load("gpu_check").main(argv) == 0
    printed = capsys.readouterr().out
    got = strict_json(out.read_text())
    assert {n: (work / n).read_text() for n in mine} == mine
    assert (
        Path(got["end_to_end"]["work"]).parent == work and (Path(got["end_to_end"]["work"]) / "rte_dev.jsonl").is_file()
    )

    assert "errors" not in got
    steps = {r["design"]: r for r in got["steps"]}
    assert list(steps) == ["shared", "pals", "houlsby", "lora"]
    assert [steps[d]["freeze_trunk"] for d in steps] == [False, False, True, True]  # given, not a method's default
    for r in steps.values():
        for key in ("step_s", "tflops", "mfu", "peak_bytes", "predicted_bytes", "memory_ratio", "ratio_measured"):
            assert finite(r[key]) and r[key] > 0, (r["design"], key, r[key])
        assert finite(r["ratio_predicted"]) and finite(r["ratio_of_ratios"])
    assert all(isinstance(steps[d]["d_s"], int) and steps[d]["d_s"] > 0 for d in ("pals", "houlsby", "lora"))
    assert steps["shared"]["ratio_measured"] == steps["shared"]["ratio_predicted"] == 1.0
    assert finite(got["peak_flops"]) and got["precision"] == "fp32"  # no bf16 autocast on CPU

    serving = got["serving"]
    assert all(finite(serving[k]) and serving[k] > 0 for k in ("speedup", "calculator_speedup", "of_calculator"))
    assert serving["tasks"] == 8 and serving["calculator_speedup"] > 1

    run = got["end_to_end"]
    assert run["device"] == "cpu" and run["checkpoints"] and run["steps"] == 12
    assert run["precision"] == "fp32"  # summary.json's prediction priced the precision the run trained in
    assert set(run["scores"]) == {"rte", "mrpc", "stsb"}
    assert all(finite(v) for s in run["scores"].values() for v in s.values())
    assert run["pals_predict_scores"] == run["scores"] and run["scores_equal"] and run["scores_max_abs_diff"] == 0
    assert run["resumed"]["steps"] == 12 and run["resumed"]["equal"]  # stopped, resumed: the same run (CPU: exactly)

    goals = {goal: ok for goal, _, ok in got["goals"]}
    assert len(goals) == 1 + 4 + 3 + 1 + 3  # MFU, memory ×4, step ratio ×3, serving; the run, its resume, predictions
    assert goals["pals-predict reproduces the dev scores"] is True
    assert "PASS  pals-predict reproduces the dev scores" in printed and "MFU of full fine-tuning" in printed


def test_each_gpu_name_finds_its_profile_h200_included():
    """A run on an H200 is priced on the H200's profile (its datasheet's bf16 peak and 141 GB), not on none."""
    from pals_core.footprint.timing import builtin_devices, load_profile
    from pals_core.train.machine_report import gpu_profile

    assert gpu_profile("NVIDIA H200") == "h200" and gpu_profile("NVIDIA H100 80GB HBM3") == "h100"
    assert gpu_profile("NVIDIA A100-SXM4-80GB") == "a100" and gpu_profile("NVIDIA GeForce RTX 4090") is None
    h200 = load_profile("h200")
    assert "h200" in builtin_devices() and h200.kind == "cuda"
    assert h200.matmul_flops_bf16 == 9.89e14 and h200.memory_bytes == 1.41e11 and h200.bandwidth == 4.8e12


def test_summary_prediction_prices_the_precision_the_run_trains_in(tmp_path, monkeypatch):
    """Under bf16 autocast (CUDA) the run's summary.json predicts bf16 memory and step time, not fp32's: the
    activations priced at 2 bytes, the step at the bf16 matmul rate."""
    from pals_core.base_model import model_shape, tiny_config_dict
    from pals_core.budget.tasks import Task
    from pals_core.footprint.timing import load_profile
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.machine_report import predicted

    args = (model_shape("tiny"), [Task("rte", 2)], AdapterConfig(method="pals", d_s=8, heads=2), tiny_config_dict())
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(tmp_path / "none.json"))  # no profile: memory alone
    fp32, bf16 = (predicted(*args, 8, 64, False, precision=p) for p in ("fp32", "bf16"))
    assert (fp32["precision"], bf16["precision"]) == ("fp32", "bf16")
    half = bf16["memory_train"]["activations"] / fp32["memory_train"]["activations"]
    assert 0.49 < half < 0.52  # 2-byte activations (a few integer tensors keep their width)
    assert bf16["memory_train"]["weights"] == fp32["memory_train"]["weights"]  # fp32 master weights
    local = tmp_path / "local.json"
    local.write_text(json.dumps(load_profile("h100").as_dict() | {"kind": "cpu", "name": "local"}))
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(local))
    fp32, bf16 = (predicted(*args, 8, 64, False, precision=p) for p in ("fp32", "bf16"))
    assert fp32["device"] == bf16["device"] == "local" and bf16["time_step_s"] < fp32["time_step_s"]
