"""``accelerate launch`` (DDP) on CPU with gloo: the multi-GPU path docs/training.md offers, run as two processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _accelerate(out: Path, *extra: str) -> list[str]:
    return [
        str(BIN / "accelerate"),
        "launch",
        "--num_processes",
        "2",
        "--cpu",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "-m",
        "pals_core.cli.train",
        "--model",
        "tiny",
        "--tasks",
        "rte,stsb",
        "--method",
        "pals",
        "--d-s",
        "8",
        "--heads",
        "2",
        "--steps",
        "40",
        "--eval-every",
        "10",
        "--batch-size",
        "4",
        "--max-train-examples",
        "64",
        "--max-eval-examples",
        "16",
        "--threads",
        "1",
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


@pytest.mark.slow
def test_two_cpu_processes_train_resume_after_a_kill_and_count_as_pals_budget(glue_dir, tmp_path):
    """The multi-GPU path docs/training.md offers (accelerate launch, DDP), exercised on CPU with gloo: two processes
    train, checkpoint, are killed, resume, and write one summary — equal to an uninterrupted two-process run, its
    parameters equal to pals-budget's."""
    import json
    import os
    import signal
    import time

    from pals_core.base_model import tiny_config_dict

    env = {**os.environ, "PALS_GLUE_DIR": str(glue_dir), "OMP_NUM_THREADS": "1"}
    whole = subprocess.run(_accelerate(tmp_path / "whole"), capture_output=True, text=True, timeout=600, env=env)
    assert whole.returncode == 0, whole.stderr[-2000:]
    proc = subprocess.Popen(
        _accelerate(tmp_path / "killed"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    checkpoints = tmp_path / "killed" / "checkpoints"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any(checkpoints.glob("step-*")) and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert any(checkpoints.glob("step-*")), "no checkpoint before the kill"
    assert not (tmp_path / "killed" / "summary.json").exists(), "the run finished before it could be killed"
    resumed = subprocess.run(
        _accelerate(tmp_path / "killed", "--resume"), capture_output=True, text=True, timeout=600, env=env
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a = json.loads((tmp_path / "whole" / "summary.json").read_text())
    b = json.loads((tmp_path / "killed" / "summary.json").read_text())
    assert b["steps"] == 40 and b["scores"] == a["scores"] and b["params"] == a["params"]
    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(tiny_config_dict()))
    budget = subprocess.run(
        [
            str(BIN / "pals-budget"),
            "--model",
            str(cfg),
            "--tasks",
            "rte,stsb",
            "--method",
            "pals",
            "--d-s",
            "8",
            "--heads",
            "2",
            "--location",
            "all",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    row = json.loads(budget.stdout)["rows"][0]
    assert b["params"]["total"] == row["params_total"] and b["params"]["task_specific"] == row["params_task_specific"]
