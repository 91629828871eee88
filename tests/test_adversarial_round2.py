"""The second adversarial round (issue #26): each finding, a test that failed before its fix."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def pals_train(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "pals-train"), *args, "--no-progress"], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.parametrize("extra", [["--method", "pals", "--d-s", "24", "--seeds", "0"], ["--method", "separate"],
                                   ["--method", "separate", "--seeds", "0,1"]])
def test_seeds_and_separate_never_overwrite_a_folder_that_holds_no_run(glue_dir, tmp_path, extra):
    """`mkdir f; echo precious > f/summary.json; pals-train … --seeds 0 --out f` overwrote the user's files."""
    f = tmp_path / "f"
    f.mkdir()
    (f / "summary.json").write_text("precious\n")
    (f / "progress.json").write_text("mine\n")
    out = pals_train("--model", "tiny", "--tasks", "rte", "--steps", "2", *extra, "--out", str(f),
                     "--glue-dir", str(glue_dir), cwd=tmp_path)
    assert out.returncode == 2 and "is not empty and holds no pals-train run" in out.stderr
    assert (f / "summary.json").read_text() == "precious\n" and (f / "progress.json").read_text() == "mine\n"
    assert sorted(p.name for p in f.iterdir()) == ["progress.json", "summary.json"]


@pytest.mark.parametrize("flag, seed", [("--seed", str(2 ** 63)), ("--seed", str(2 ** 64)), ("--seeds", f"0,{2 ** 63}")])
def test_a_seed_of_2_63_or_more_is_refused_before_anything_is_written(tmp_path, flag, seed):
    out = pals_train("--model", "tiny", "--tasks", "rte", "--steps", "2", "--method", "shared", flag, seed,
                     "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 2 and "2**63 − 1" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("budget", [["--budget", "1.1"], ["--extra", "2M"], ["--per-task", "100k"]])
def test_separate_with_a_budget_says_the_budget_does_not_apply(glue_dir, tmp_path, budget):
    out = pals_train("--model", "tiny", "--tasks", "rte,stsb", "--steps", "2", "--method", "separate", *budget,
                     "--out", str(tmp_path / "sep"), "--glue-dir", str(glue_dir), cwd=tmp_path)
    assert out.returncode == 2 and "does not apply" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "sep").exists()


def test_a_task_that_received_no_step_is_named_untrained(glue_dir, tmp_path):
    """A sampler can leave a task without a step (MT-Uncertainty starving one; here round robin over one step): its
    scores are an untrained head's, and the log and summary.json say so."""
    import json

    out = pals_train("--model", "tiny", "--method", "shared", "--tasks", "rte,mrpc", "--sampling", "round_robin",
                     "--steps", "1", "--max-train-examples", "8", "--max-eval-examples", "8", "--batch-size", "4",
                     "--out", str(tmp_path / "run"), "--glue-dir", str(glue_dir), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["task_steps"] == {"rte": 1, "mrpc": 0} and s["untrained"] == ["mrpc"]
    assert "untrained: mrpc received no training step" in out.stdout


def test_the_transformers_range_is_declared_once_and_checked_at_start():
    import re

    from pals_core.deps import TRANSFORMERS, DependencyError, check_transformers

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert re.search(r'"transformers' + re.escape(TRANSFORMERS) + '"', pyproject), "pyproject.toml and deps.py differ"
    check_transformers()  # the installed one: the tests pass on it
    for old in ("4.46.0", "4.57.6", "6.0.0", "not-a-version"):
        with pytest.raises(DependencyError, match=rf"transformers {re.escape(old)} is installed; .* tested on "):
            check_transformers(old)
