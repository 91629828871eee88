"""The runs list survives any folder: malformed or foreign files show what they can, a stale
"running" is shown as stale, and nothing a folder says is offered for cancel."""

import json
import os
import shutil
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


def open_at(query: dict) -> AppTest:
    """The page opened at ``?key=value&…`` (a link)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def show(at, view: str) -> AppTest:
    return at.segmented_control(key="view").set_value(view).run()


def page_errors(at) -> list[str]:
    return [e.value for e in at.error] + [e.value for e in at.exception]


VIEWS = ("designs", "tasks", "sizes", "scaling", "breakdown", "machine", "paper", "train", "runs", "studies")


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, glue_dir) -> Path:
    """One finished run: the tiny model with PALs on 8 RTE rows, 2 steps."""
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.config import TrainConfig
    from pals_core.train.trainer import train

    out = tmp_path_factory.mktemp("trained") / "good"
    train(
        TrainConfig(
            tasks=["rte"],
            adapter=AdapterConfig(method="pals", d_s=8, heads=2),
            model="tiny",
            glue_dir=str(glue_dir),
            steps=2,
            max_train_examples=8,
            max_eval_examples=8,
            out=str(out),
        ),
        progress=False,
    )
    return out


def _bad_summary(folder: Path, kind: str) -> None:
    folder.mkdir()
    path = folder / "summary.json"
    if kind == "invalid":
        path.write_text('{"average": 0.5,')
    elif kind == "deep":
        path.write_text("[" * 100000)
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # reading it would wait for a writer for ever
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "permission":
        path.write_text('{"average": 0.5}')
        path.chmod(0)


BAD = {
    "invalid": "summary.json is not valid JSON",
    "deep": "summary.json is nested too deeply",
    "folder": "summary.json is a directory",
    "fifo": "summary.json is a FIFO (named pipe), not a regular file",
    "loop": "summary.json cannot be read",
    "permission": "summary.json cannot be read: Permission denied",
}


@pytest.mark.parametrize(
    "kind",
    [
        k
        if k != "permission"
        else pytest.param(k, marks=pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000"))
        for k in BAD
    ],
)
def test_an_unreadable_summary_is_its_own_row(runs_dir, good_run, kind):
    shutil.copytree(good_run, runs_dir / "good")
    _bad_summary(runs_dir / "bad", kind)
    at = open_at({"model": "tiny", "tasks": "rte", "methods": "pals"})
    for view in VIEWS if kind == "deep" else ("designs", "runs"):  # the page itself failed on deep nesting
        show(at, view)
        assert not at.exception, (view, [e.value for e in at.exception])
        assert not [e for e in at.error if "failed" in e.value or "Bad input" in e.value], (view, page_errors(at))
        assert at.get("metric"), view  # the question is still answered
    show(at, "runs")
    runs = next(d.value for d in at.dataframe if "run" in d.value.columns and "status" in d.value.columns)
    rows = {r["run"]: r for _, r in runs.iterrows()}
    assert rows["good"]["status"] == "finished" and rows["good"]["problem"] == ""
    assert rows["bad"]["status"] == "unreadable", rows["bad"]
    reason = rows["bad"]["problem"]
    assert reason.startswith(BAD[kind]) and "\n" not in reason and str(runs_dir) not in reason, reason
    measured = next(d.value for d in at.dataframe if "design" in d.value.columns and "folder" in d.value.columns)
    assert list(measured["folder"]) == [str(runs_dir / "good")]  # the good run is measured, for this model and task
    assert list(measured["design"]) == ["pals @ all, d_s 8"]
    warning = " ".join(w.value for w in at.warning)
    assert "unreadable" in warning and f"`{runs_dir / 'bad'}`: {reason}" in warning
    assert not [e for e in at.error if e.value.startswith("died")]  # not mistaken for a run that died
