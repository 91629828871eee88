"""``pals-train --from RUN --add-tasks F`` keeps its promise to the base run's tasks: a setting that would change
their outputs (max length, mixed precision) is refused in one line, and the new summary states their dev scores as
the extended model measures them, never copied from the base run's summary."""

# ruff: noqa: F811  (pytest fixtures imported from other test modules are parameters here)
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_add_tasks import base  # noqa: F401  (the module's trained base run: intent, score; tags added later)

from pals_core.cli.train import main as train_main


@pytest.mark.slow
@pytest.mark.parametrize(
    "flag, value, base_value",
    [("--max-len", "64", "32"), ("--mixed-precision", "bf16", "auto")],
)
def test_a_setting_that_changes_the_old_tasks_outputs_is_refused(base, tmp_path, capsys, flag, value, base_value):
    _, base_run, later = base
    argv = ["--from", str(base_run), "--add-tasks", str(later), "--out", str(tmp_path / "n"), flag, value]
    assert train_main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{flag} {value} (the base run's: {base_value})" in err and "leave the flag out" in err
    assert not (tmp_path / "n").exists()


@pytest.mark.slow
def test_old_scores_are_measured_again_not_copied(base, tmp_path, capsys):
    """A base run whose summary.json says other scores than its model gives: the extended run's summary holds the
    scores its model measures (the base run's true ones), and shows the summary's beside them."""
    _, base_run, later = base
    true = json.loads((base_run / "summary.json").read_text())["scores"]
    edited = tmp_path / "edited"
    shutil.copytree(base_run, edited)
    summary = json.loads((edited / "summary.json").read_text())
    summary["scores"] = {t: {k: 0.123 for k in s} for t, s in summary["scores"].items()}
    (edited / "summary.json").write_text(json.dumps(summary))
    argv = ["--from", str(edited), "--add-tasks", str(later), "--out", str(tmp_path / "n"), "--steps", "4"]
    assert train_main([*argv, "--eval-every", "4", "--no-progress"]) == 0
    out = capsys.readouterr().out
    grown = json.loads((tmp_path / "n" / "summary.json").read_text())
    for t in ("intent", "score"):  # same rows, batch size and device as the base run: its scores bit for bit
        assert grown["scores"][t] == true[t], t
        assert grown["added"]["base_scores"][t] == {k: 0.123 for k in true[t]}
    assert grown["dev_examples"]["intent"] > 0 and grown["dev_examples"]["score"] > 0
    assert "scores measured again (not as the base run's summary.json" in out


@pytest.mark.slow
def test_a_base_task_file_that_changed_since_the_base_run_is_refused(base, tmp_path, capsys):
    """The old tasks' scores are measured again on their dev rows: a dev file edited since the base run trained is
    named (sha256 before and now) instead of being measured as if it were the same."""
    root, base_run, later = base
    copied = tmp_path / "copied"
    shutil.copytree(root, copied, ignore=shutil.ignore_patterns("new", "seeds"))
    config = json.loads((copied / "base" / "config.json").read_text())
    dev = Path(config["data"]["intent"]["files"]["dev"]["path"].replace(str(root), str(copied)))
    text = json.dumps(config).replace(str(root), str(copied))
    (copied / "base" / "config.json").write_text(text)
    dev.write_text(dev.read_text() + dev.read_text().splitlines()[-1] + "\n")
    argv = ["--from", str(copied / "base"), "--add-tasks", str(copied / "data" / "later.yaml"), "--out"]
    assert train_main([*argv, str(tmp_path / "n"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the base run's task files changed since it trained" in err
    assert f"{dev} is not the dev file the run was trained on" in err
    assert not (tmp_path / "n").exists()
