"""``--json`` is JSON: every command that has the flag prints what a strict parser reads (no bare ``NaN``,
``Infinity`` or ``-Infinity``, which Python's ``json.dumps`` writes by default), through one writer
(``pals_core.atomic.dumps``), whatever the files it read hold."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from pals_core.cli.budget import main as pals_budget
from pals_core.cli.runs import main as pals_runs
from pals_core.cli.tasks import main as pals_tasks
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
COVERED = {"pals_core/cli/budget.py", "pals_core/cli/runs.py", "pals_core/cli/tasks.py"}


def strict(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_the_commands_with_json_are_the_ones_checked_here():
    """A command that gains ``--json`` is added to the checks below (and writes through ``atomic.dumps``)."""
    found = {
        str(p.relative_to(ROOT))
        for p in [*ROOT.glob("pals_core/**/*.py"), *ROOT.glob("studies/*.py")]
        if re.search(r"""["']--json["']""", p.read_text(encoding="utf-8"))
    }
    assert found == COVERED


def test_pals_budget_json_is_strict_json_with_a_nan_and_an_infinity_on_disk(tmp_path, capsys):
    for name, average in (("nan", math.nan), ("inf", math.inf), ("ok", 0.6)):
        folder = tmp_path / name
        folder.mkdir()
        cfg = TrainConfig(tasks=["rte", "mrpc"], adapter=AdapterConfig(method="lhuc"), steps=400, out=str(folder))
        summary = {"config": cfg.as_dict(), "average": average, "scores": {}, "steps": 400}
        (folder / "summary.json").write_text(json.dumps(summary))
    argv = ["--model", "minilm-l6-h384", "--tasks", "rte,mrpc", "--budget", "1.1", "--results", str(tmp_path)]
    assert pals_budget([*argv, "--json"]) == 0
    out = strict(capsys.readouterr().out)
    assert out["recommendation"]["measured"] == 1  # the one run whose numbers can be true
    assert pals_budget(["--paper", "--json"]) == 0
    assert strict(capsys.readouterr().out)["paper"]


def test_pals_runs_list_json_is_strict_json(tmp_path, capsys):
    run = tmp_path / "r1"
    run.mkdir()
    (run / "progress.json").write_text('{"status": "running", "step": NaN, "total": Infinity, "average": NaN}')
    (run / "summary.json").write_text('{"average": NaN, "steps": 1e999, "wall_time_s": -Infinity}')
    assert pals_runs(["list", "--root", str(tmp_path), "--json"]) == 0
    [row] = [strict(line) for line in capsys.readouterr().out.splitlines()]
    assert row["id"] == "r1" and row["step"] is None and row["steps"] is None


@pytest.mark.slow  # loads the embedded model's tokenizer
def test_pals_tasks_json_is_strict_json(tmp_path, capsys):
    rows = [{"text": f"row {i}", "y": i / 4} for i in range(12)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:4]))
    (tmp_path / "tasks.yaml").write_text(
        "tasks:\n  score:\n    kind: regression\n    train: train.jsonl\n    dev: dev.jsonl\n    text: text\n"
        "    label: y\n"
    )
    assert pals_tasks([str(tmp_path / "tasks.yaml"), "--json", "--max-len", "16"]) == 0
    out = strict(capsys.readouterr().out)
    assert [t["name"] for t in out["tasks"]] == ["score"]
