"""``pals-study … --tasks-file F``: a study on the user's own tasks, as a user runs it — a CSV
classification task with string labels (3 classes) and a JSON Lines regression task, the random tiny BERT, a real
SQLite storage. The trials are priced from the tasks' real label counts (the same numbers ``pals-budget
--tasks-file`` gives), the report names each task's main metric, a worker whose data file changed is refused naming
the file, and a bad tasks file or a bad row is refused at ``create`` in one line."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from pals_core.base_model import tiny_config_dict
from pals_core.data.load import TINY
from pals_core.pricing.config import AdapterConfig
from studies.cli import main
from studies.runner import load_settings
from studies.settings import SETTINGS_VERSION, StudySettings
from studies.space import cost_of, model_shape

BIN = Path(sys.executable).parent
LABELS = ("billing", "refund", "other")
SMALL = [
    "--model",
    TINY,
    "--steps",
    "4",
    "--eval-every",
    "2",
    "--batch-size",
    "4",
    "--max-len",
    "16",
    "--budget",
    "1.05",
]


def _env() -> dict:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PALS_GLUE_DIR": "",
    }  # no GLUE folder: a study of one's own tasks needs none


def _write_csv(path: Path, rows: list[tuple[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["message", "intent"])
        w.writerows(rows)


def write_tasks(folder: Path) -> Path:
    """``intent`` (CSV, labels billing/refund/other, a dev file) and ``score`` (JSON Lines, a sentence pair, a
    real-valued label, dev held out of train), and the tasks file naming them with paths relative to it."""
    data = folder / "data"
    data.mkdir(parents=True)
    _write_csv(data / "intent.csv", [(f"a message {i} about {LABELS[i % 3]}", LABELS[i % 3]) for i in range(24)])
    _write_csv(data / "intent_dev.csv", [(f"dev message {i} on {LABELS[i % 3]}", LABELS[i % 3]) for i in range(9)])
    (data / "score.jsonl").write_text(
        "".join(
            json.dumps({"a": f"sentence {i}", "b": f"another {i % 5}", "y": i % 6 * 0.8}) + "\n" for i in range(30)
        ),
        encoding="utf-8",
    )
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  intent: {train: data/intent.csv, dev: data/intent_dev.csv, text: message, label: intent, metric: macro_f1}\n"
        "  score: {train: data/score.jsonl, text: [a, b], label: y, kind: regression, range: [0, 5]}\n",
        encoding="utf-8",
    )
    return f


def pals_budget_params(tmp_path: Path, tasks_file: Path, method: str, location, d_s) -> int:
    """``pals-budget --tasks-file`` on the tiny BERT's config: the task-specific parameters of one design."""
    config = tmp_path / "tiny-config" / "config.json"
    if not config.exists():
        config.parent.mkdir()
        config.write_text(json.dumps(tiny_config_dict()))
    argv = [
        str(BIN / "pals-budget"),
        "--model",
        str(config),
        "--tasks-file",
        str(tasks_file),
        "--method",
        method,
        "--convention",
        "exact",
        "--json",
    ]
    argv += ["--location", location] if location else []
    argv += ["--d-s", str(d_s)] if d_s is not None else []
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["rows"]
    assert len(rows) == 1, rows
    return rows[0]["params_task_specific"]


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pals-study: error: "), err
    return err[0]


@pytest.mark.slow
def test_a_study_on_a_tasks_file_trains_prices_and_reports_its_own_tasks(tmp_path, capsys):
    f = write_tasks(tmp_path / "mine")
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    assert main(["create", "design", "--storage", url, "--tasks-file", str(f), *SMALL]) == 0
    out = capsys.readouterr().out
    assert "intent (classification, 3 labels, macro_f1), score (regression, pearson)" in out, out

    # what the study stores: the file, its tasks' records and fingerprints; heads priced from the label counts
    study = optuna.load_study(study_name="design", storage=url)
    s = load_settings(study)
    assert s.tasks == ["intent", "score"] and s.tasks_file == str(f) and s.version == SETTINGS_VERSION
    assert {t: s.data[t]["num_labels"] for t in s.tasks} == {"intent": 3, "score": 1}
    assert s.data["intent"]["labels"] == sorted(LABELS) and s.data["intent"]["fingerprint"].startswith("sha256:")
    d = model_shape(TINY).hidden
    assert cost_of(model_shape(TINY), s.calc_tasks(), AdapterConfig(method="shared")).params_task_specific == (
        d * 3 + 3
    ) + (d * 1 + 1)  # a 3-class head and a regression head, not GLUE's 2-label ones

    # two trials, run as a user runs them: the console script, no GLUE folder
    run = subprocess.run(
        [
            str(BIN / "pals-study"),
            "run",
            "design",
            "--storage",
            url,
            "--trials",
            "2",
            "--out",
            str(tmp_path / "runs"),
            "--threads",
            "1",
            "--sampler-seed",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    trials = optuna.load_study(study_name="design", storage=url).get_trials()
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * 2
    for t in trials:
        a = t.user_attrs
        assert a["params_task_specific"] == pals_budget_params(tmp_path, f, a["method"], a["location"], a["d_s"]), a
        assert set(a["scores"]) == {"intent", "score"}
        assert a["main_metrics"] == {"intent": "macro_f1", "score": "pearson"}
        config = json.loads((Path(a["run_dir"]) / "config.json").read_text())
        assert config["tasks_file"] == str(f) and config["tasks"] == ["intent", "score"]
        assert {k: v["fingerprint"] for k, v in config["data"].items()} == {
            k: v["fingerprint"] for k, v in s.data.items()
        }

    # the report: the tasks with their kinds and metrics, one score column per task named by its metric
    assert main(["report", "design", "--storage", url, "--out", str(tmp_path / "report")]) == 0
    rep = capsys.readouterr().out
    assert "tasks intent (classification, 3 labels, macro_f1)" in rep and "score intent (macro_f1)" in rep, rep
    with open(tmp_path / "report" / "trials.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 and all(row["score intent (macro_f1)"] and row["score score (pearson)"] for row in rows)

    # another machine's copy of the same files joins (it is the same data, wherever it lies) ...
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "mine", copy)
    assert (
        main(
            [
                "run",
                "design",
                "--storage",
                url,
                "--trials",
                "2",
                "--tasks-file",
                str(copy / "tasks.yaml"),
                "--out",
                str(tmp_path / "runs"),
            ]
        )
        == 0
    )
    assert "this worker ran 0" in capsys.readouterr().out
    # ... a changed data file does not: the worker is refused, naming the file, before any trial
    with open(f.parent / "data" / "intent.csv", "a", encoding="utf-8") as fh:
        fh.write("one more message,refund\n")
    assert main(["run", "design", "--storage", url, "--trials", "3", "--out", str(tmp_path / "runs")]) == 2
    line = _error_line(capsys)
    assert str(f.parent / "data" / "intent.csv") in line and "not the data study 'design' was created on" in line, line
    assert len(optuna.load_study(study_name="design", storage=url).trials) == 2
    # and a worker asking for GLUE tasks in this study is told what the study is
    assert main(["run", "design", "--storage", url, "--tasks", "rte,mrpc"]) == 2
    assert "created with tasks = ['intent', 'score']" in _error_line(capsys)


BAD = [
    (
        "tasks:\n  intent: {train: data/intent.csv, text: message, label: intent, colour: red}\n",
        [],
        "unknown field(s) 'colour'",
    ),
    ("tasks: [intent]\n", [], "expected a top-level 'tasks:' mapping"),
    ("tasks:\n  intent: {train: data/missing.csv, text: message, label: intent}\n", [], "missing.csv: file not found"),
    ("tasks:\n  intent: {train: data/intent.csv, text: message, label: intent}\n", ["--tasks", "intent,nope"], "nope"),
    (
        "tasks:\n  intent: {train: data/bad.csv, text: message, label: intent}\n",
        [],
        "bad.csv, row 3, column 'message': empty text",
    ),
]


@pytest.mark.parametrize("text, extra, needle", BAD)
def test_a_bad_tasks_file_or_row_at_create_is_one_line_and_no_study(tmp_path, capsys, text, extra, needle):
    write_tasks(tmp_path)
    _write_csv(
        tmp_path / "data" / "bad.csv", [("fine", "billing"), ("also fine", "refund"), ("", "other"), ("last", "other")]
    )
    f = tmp_path / "bad.yaml"
    f.write_text(text, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    assert main(["create", "design", "--storage", url, "--tasks-file", str(f), *extra, *SMALL]) == 2
    assert needle in _error_line(capsys)
    assert "design" not in optuna.study.get_all_study_names(url), "a study on a bad tasks file is never created"


def test_settings_of_older_studies_load_and_newer_ones_are_refused():
    old = {"definition": "design", "tasks": ["rte", "mrpc"], "steps": 60, "version": 1}  # before tasks files
    s = StudySettings.from_dict(old)
    assert s.tasks_file is None and s.data is None and s.version == 1
    assert [(t.name, t.num_labels) for t in s.calc_tasks()] == [("rte", 2), ("mrpc", 2)]
    with pytest.raises(ValueError, match="newer pals-study"):
        StudySettings.from_dict({**old, "version": SETTINGS_VERSION + 1})
    with pytest.raises(ValueError, match="absolute path"):
        StudySettings(definition="design", tasks=["intent"], tasks_file="tasks.yaml", data={})


def test_the_explorer_rebuilds_a_tasks_file_study_workers_flags(tmp_path):
    """The Studies tab starts workers from the stored settings: a study on a tasks file gets its --tasks-file back
    (its task names alone would be read as GLUE names and refused)."""
    from studies.cli import build_parser, requested_settings
    from studies.workers import settings_flags, worker_argv

    f = write_tasks(tmp_path / "data")
    args = build_parser().parse_args(["create", "design", "--model", "tiny", "--tasks-file", str(f)])
    settings, _ = requested_settings("design", args)
    flags = settings_flags(settings)
    assert flags[flags.index("--tasks-file") + 1] == settings.tasks_file
    worker_argv(settings, f"sqlite:///{tmp_path / 's.db'}", "s", 2, tmp_path)  # raises unless they round-trip
