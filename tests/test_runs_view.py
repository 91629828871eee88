"""The runs list survives any folder (issue 16 item 11): malformed or foreign files show what they can, a stale
"running" is shown as stale, and nothing a folder says is offered for cancel."""

import json
import subprocess
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("PALS_RUNS_DIR", str(d))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    return d


def test_malformed_and_stale_runs_do_not_break_the_page(runs_dir):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        files = {
            "odd-types": {
                "progress.json": '{"status": "running", "step": "x", "total": [], "scores": 5, '
                f'"pid": {bystander.pid}, "eta_s": "soon", "average": "high"}}'
            },
            "deep": {"progress.json": "[" * 100000},
            "not-json": {"summary.json": '{"average": 0.5,'},
            "weird-summary": {
                "summary.json": '{"average": {"x": 1}, "params": 3, "scores": [1], "steps": -4}',
                "config.json": '{"adapter": {"method": ["x"], "d_s": {"a": 1}}, "tasks": 3}',
            },
            "finished": {
                "summary.json": json.dumps(
                    {
                        "average": 0.61,
                        "steps": 20,
                        "best_step": 20,
                        "wall_time_s": 3.0,
                        "scores": {"rte": {"accuracy": 0.61}},
                        "params": {"task_specific": 1234, "total": 5678},
                    }
                ),
                "progress.json": json.dumps({"status": "finished", "step": 20, "total": 20}),
            },
            "sweep": {
                "progress.json": json.dumps({"status": "running", "step": 5, "total": 40}),
                "pals/seed-0/progress.json": json.dumps({"status": "running", "step": 5, "total": 20}),
            },
        }
        for run, content in files.items():
            (runs_dir / run).mkdir()
            for name, text in content.items():
                (runs_dir / run / name).parent.mkdir(parents=True, exist_ok=True)
                (runs_dir / run / name).write_text(text)
        at = AppTest.from_file(APP, default_timeout=60).run()
        assert not at.exception, [e.value for e in at.exception]
        at.segmented_control(key="view").set_value("runs").run()  # the runs are the "Runs & measured" view
        assert not at.exception, [e.value for e in at.exception]
        table = next(d.value for d in at.dataframe if "run" in d.value.columns)
        assert set(table["run"]) == set(files)
        status = dict(zip(table["run"], table["status"]))
        assert status["odd-types"] == "died" and status["finished"] == "finished"
        assert any(e.value.startswith("died: stale: progress.json still says") for e in at.error)
        titles = {m.value.split("**")[1]: m.value for m in at.markdown if m.value.startswith("**")}
        assert titles["odd-types"] == "**odd-types** — no config.json: its design is unknown"  # not "None · None"
        assert titles["sweep"] == "**sweep** — a folder of several runs (no design of its own)"
        assert not [b for b in at.button if b.key and b.key.startswith("cancel::")]
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
