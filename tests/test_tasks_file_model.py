"""One model unless told: a tasks file may name its model (``model:``); ``pals-budget``, ``pals-train`` and the page use
it, ``--model`` (the sidebar's model) overrides it, and ``pals-budget`` without a model says first that it prices
BERT-base while ``pals-train`` would train the embedded MiniLM, with the ``--model`` that prices that."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer import inputs
from pals_core.cli.budget import run as budget_run
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.kinds.errors import TaskRecordError
from pals_core.tasks.taskfile import read_tasks_file, tasks_file_model
from pals_core.train.args import build_parser, config_from_args

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tasks" / "tasks.yaml"
DATA = ROOT / "examples" / "tasks" / "data"


def tasks_file(folder: Path, model: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "tasks.yaml"
    head = "" if model is None else f"model: {model}\n"
    f.write_text(
        head + f"tasks:\n  intent: {{train: {DATA / 'intent_train.csv'}, dev: {DATA / 'intent_dev.csv'}, "
        "text: message, label: intent, labels: [billing, delivery, account]}\n"
    )
    return f


def configured(*argv: str):
    cfg, _ = config_from_args(vars(build_parser().parse_args(list(argv))))
    return cfg


def test_a_tasks_file_names_its_model_as_a_preset_or_a_path_beside_it(tmp_path):
    from tiny_models import save_tiny_checkpoint

    assert tasks_file_model(tasks_file(tmp_path / "a", "bert-base-uncased")) == "bert-base-uncased"
    assert tasks_file_model(tasks_file(tmp_path / "b", None)) is None
    ckpt = save_tiny_checkpoint(tmp_path / "c" / "ckpt", "bert")
    assert tasks_file_model(tasks_file(tmp_path / "c", "ckpt")) == str(ckpt)  # relative to the file's folder
    assert tasks_file_model(tasks_file(tmp_path / "d", "shapes/config.json")) == str(tmp_path / "d/shapes/config.json")
    assert list(read_tasks_file(tasks_file(tmp_path / "e", "all-MiniLM-L6-v2"))) == ["intent"]
    bad = tasks_file(tmp_path / "f", "[a, b]")
    with pytest.raises(TaskRecordError, match="'model' is a preset name or a path"):
        tasks_file_model(bad)
    (tmp_path / "g.yaml").write_text("modle: x\ntasks: {t: {glue: rte}}\n")
    with pytest.raises(TaskRecordError, match="unknown top-level key.*'modle'.*only 'tasks' and 'model'"):
        read_tasks_file(tmp_path / "g.yaml")


def test_pals_budget_prices_the_files_model_and_says_when_told_otherwise(tmp_path):
    minilm = tasks_file(tmp_path / "m", "all-MiniLM-L6-v2")
    text = budget_run(["--tasks-file", str(minilm), "--budget", "1.13"])
    assert text.startswith(f"{EMBEDDED_MODEL} (the tasks file's model) (22,713,216 params")
    told = budget_run(["--tasks-file", str(minilm), "--budget", "1.13", "--model", "bert-base-uncased"])
    assert (
        told.splitlines()[0] == f"Priced for --model bert-base-uncased, not the tasks file's model: {EMBEDDED_MODEL}."
    )
    assert "bert-base-uncased (109,482,240 params" in told
    same = budget_run(["--tasks-file", str(minilm), "--budget", "1.13", "--model", "minilm"])  # an alias: no note
    assert same.startswith(f"{EMBEDDED_MODEL} (22,713,216 params")
    out = json.loads(budget_run(["--tasks-file", str(minilm), "--budget", "1.13", "--json"]))
    assert out["model"]["name"] == EMBEDDED_MODEL and out["model_note"] is None


def test_pals_budget_without_a_model_says_it_is_not_what_pals_train_would_train(tmp_path):
    plain = tasks_file(tmp_path / "p", None)
    first = " ".join(budget_run(["--tasks-file", str(plain), "--budget", "1.13"]).split("\n\n")[0].split())
    assert first == (
        "Priced for bert-base-uncased, the calculator's default (the paper's); pals-train with these flags trains "
        f"the embedded {EMBEDDED_MODEL}: add --model {EMBEDDED_MODEL} to price what it trains."
    )
    assert configured("--tasks-file", str(plain), "--method", "shared", "--out", "x").model is None  # MiniLM
    out = json.loads(budget_run(["--tasks", "rte", "--budget", "1.13", "--json"]))
    assert out["model"]["name"] == "bert-base-uncased" and f"--model {EMBEDDED_MODEL}" in out["model_note"]


def test_the_readmes_own_tasks_commands_price_and_train_the_same_model_and_d_s():
    """`pals-budget --tasks-file examples/tasks/tasks.yaml --budget 1.13` and the README's `pals-train` command on the
    same file: one model (the file's), one d_s for the design trained."""
    from pals_core.train.params import resolve

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Your own tasks") :]
    budget = next(line for line in section.splitlines() if "pals-budget --tasks-file" in line)
    train = next(line for line in section.splitlines() if "pals-train --tasks-file" in line)
    budget_argv = shlex.split(budget.split("pals-budget", 1)[1].split("#")[0])
    train_argv = shlex.split(train.split("pals-train", 1)[1].split("#")[0])
    cfg = configured(*train_argv[: train_argv.index("--out")], "--out", "unused")
    resolved = resolve(cfg)
    method = resolved.adapter.method
    rows = json.loads(budget_run([*budget_argv, "--json"]))
    assert rows["model"]["name"] == EMBEDDED_MODEL and resolved.model is None  # the file's: the embedded MiniLM
    row = next(r for r in rows["rows"] if r["method"] == method and r["location"] == "all")
    assert resolved.adapter.d_s == row["d_s"] == 156  # five tasks (the fifth a choice task) share the budget


def test_pals_train_trains_the_files_model_unless_told(tmp_path, pals_train):
    tiny = tasks_file(tmp_path / "t", "tiny")
    assert configured("--tasks-file", str(tiny), "--method", "shared", "--out", "x").model == "tiny"
    told = configured("--tasks-file", str(tiny), "--method", "shared", "--out", "x", "--model", "none")
    assert told.model is None and told.to_argv()[-2:] == ["--model", "none"]  # the launcher says it too
    assert configured(*told.to_argv()) == told
    shape = tasks_file(tmp_path / "s", "bert-base-uncased")
    with pytest.raises(ValueError, match="the tasks file's model 'bert-base-uncased' is a shape the calculator"):
        configured("--tasks-file", str(shape), "--method", "shared", "--out", "x")
    p = pals_train("--tasks-file", str(shape), "--method", "shared", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "give --model" in p.stderr
    assert not (tmp_path / "run").exists()


def test_a_study_on_a_tasks_file_trains_its_model_unless_told(tmp_path):
    """A study's trials train the model pals-train would train on the file: its model:, else the embedded one;
    --model (or 'none': the embedded one) overrides it, and a shape-only model is refused in one line."""
    from studies.cli import build_parser, requested_settings
    from studies.errors import StudyError

    def settings(*argv: str):
        return requested_settings("design", build_parser().parse_args(["create", "design", *argv]))

    tiny = str(tasks_file(tmp_path / "t", "tiny"))
    made, given = settings("--tasks-file", tiny)
    assert made.model == "tiny" and "model" not in given  # the file's, not an option a joining worker must repeat
    assert settings("--tasks-file", tiny, "--model", "none")[0].model is None
    assert settings("--tasks-file", str(tasks_file(tmp_path / "n", None)))[0].model is None
    with pytest.raises(StudyError, match="is a shape the calculator prices"):
        settings("--tasks-file", str(tasks_file(tmp_path / "s", "bert-base-uncased")))


def test_a_link_to_a_tasks_file_takes_its_model_unless_the_link_names_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"tasks_file": str(EXAMPLE)})
    at.run()
    assert not at.exception and at.sidebar.selectbox(key="model").value == inputs.EMBEDDED
    assert any(re.search(rf"\*\*{re.escape(EMBEDDED_MODEL)}\*\*", m.value) for m in at.markdown)
    told = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    told.query_params.update({"tasks_file": str(EXAMPLE), "model": "bert-base-uncased"})
    told.run()
    assert not told.exception and told.sidebar.selectbox(key="model").value == "bert-base-uncased"


def test_pals_tasks_counts_tokens_with_the_model_pals_train_would_train(tmp_path, here):
    from pals_core.cli.tasks import main as tasks_main

    tiny = tasks_file(tmp_path / "t", "tiny")
    p = here(tasks_main, str(tiny), "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["model"] == "tiny"
    shape = tasks_file(tmp_path / "s", "bert-base-uncased")
    p = here(tasks_main, str(shape), cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "give --model" in p.stderr
