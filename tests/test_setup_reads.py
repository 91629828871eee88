"""A run's set-up goes through its data once: the config resolved once, the tasks file parsed once, each data file's
rows read and checked once — for a tasks file of one's own and for GLUE alike, and in each run of ``--seeds`` and
``--from``. Counted as opens through ``pals_core.atomic.open_regular``, the one guarded reader every read and every
hash goes through: a data file is opened once, its rows and its sha256 taken from the same bytes. The tiny BERT,
real rows (the example tasks, GLUE's RTE)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from pals_core import atomic
from pals_core.cli.train import main as train_main
from pals_core.train import params

ROOT = Path(__file__).resolve().parents[1]
ROWS_AND_HASH = 1  # a data file's opens in a run's set-up: one, for its rows and its sha256 alike
SMALL = [
    "--method",
    "lora",
    "--d-s",
    "4",
    "--model",
    "tiny",
    "--max-len",
    "32",
    "--batch-size",
    "4",
    "--eval-batch-size",
    "16",
    "--no-progress",
]


class Reads:
    """Counts, while a command runs: ``resolve`` calls, and each file's opens through the guarded reader."""

    def __init__(self, monkeypatch) -> None:
        for late in ("pals_core.train.trainer", "pals_core.train.orchestrate"):  # imported late by the CLI: bound now
            importlib.import_module(late)
        self.resolves = 0
        self.opens: Counter = Counter()
        opened, resolved = atomic.open_regular, params.resolve

        def open_regular(path, *a, **kw):
            self.opens[os.path.realpath(path)] += 1
            return opened(path, *a, **kw)

        def resolve(cfg, *a, **kw):
            self.resolves += 1
            return resolved(cfg, *a, **kw)

        for module in [m for n, m in sys.modules.items() if n.startswith("pals_core") and m is not None]:
            for name, original, counted in (("open_regular", opened, open_regular), ("resolve", resolved, resolve)):
                if getattr(module, name, None) is original:
                    monkeypatch.setattr(module, name, counted)

    def of(self, folder: Path) -> dict[str, int]:
        """Opens of the files under ``folder``, by their path relative to it."""
        root = os.path.realpath(folder)
        return {os.path.relpath(p, root): n for p, n in self.opens.items() if p.startswith(root + os.sep)}


def example_tasks(into: Path) -> Path:
    """A fresh copy of examples/tasks (fresh paths: nothing of them is remembered from an earlier test)."""
    shutil.copytree(ROOT / "examples" / "tasks", into, ignore=shutil.ignore_patterns("*.py", "*.md"))
    return into / "tasks.yaml"


def small_rte(glue_dir: Path, into: Path) -> Path:
    """GLUE's RTE, its first rows, in GLUE's own layout."""
    for name, n in (("train.tsv", 64), ("dev.tsv", 32)):
        lines = (glue_dir / "RTE" / name).read_text(encoding="utf-8-sig").splitlines(keepends=True)
        (into / "RTE").mkdir(parents=True, exist_ok=True)
        (into / "RTE" / name).write_text("".join(lines[: 1 + n]), encoding="utf-8")
    return into


def data_files(tasks_file: Path) -> list[str]:
    """The data files the tasks file names (the folder holds others: the tagging task's rows as JSON Lines too)."""
    tasks = yaml.safe_load(tasks_file.read_text())["tasks"].values()  # (not through the reader the test counts)
    return sorted(Path(t[role]).name for t in tasks for role in ("train", "dev") if t.get(role))


@pytest.mark.slow
def test_a_tasks_file_run_resolves_once_and_reads_each_file_once(tmp_path, monkeypatch):
    tasks = example_tasks(tmp_path / "tasks")
    reads = Reads(monkeypatch)
    assert train_main(["--tasks-file", str(tasks), "--steps", "2", "--out", str(tmp_path / "run"), *SMALL]) == 0
    assert reads.resolves == 1
    assert reads.of(tmp_path / "tasks") == {"tasks.yaml": 1, **{f"data/{f}": ROWS_AND_HASH for f in data_files(tasks)}}


@pytest.mark.slow
def test_a_glue_run_reads_each_glue_file_once(glue_dir, tmp_path, monkeypatch):
    glue = small_rte(glue_dir, tmp_path / "glue")
    reads = Reads(monkeypatch)
    out = tmp_path / "run"
    argv = ["--tasks", "rte", "--glue-dir", str(glue), "--steps", "2", "--out", str(out), *SMALL]
    assert train_main(argv) == 0
    assert reads.resolves == 1
    assert reads.of(glue) == {"RTE/train.tsv": ROWS_AND_HASH, "RTE/dev.tsv": ROWS_AND_HASH}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["train_examples"] == {"rte": 64} and summary["dev_examples"] == {"rte": 32}


@pytest.mark.slow
def test_each_run_of_seeds_reads_its_rows_once(tmp_path, monkeypatch):
    tasks = example_tasks(tmp_path / "tasks")
    reads = Reads(monkeypatch)
    argv = ["--tasks-file", str(tasks), "--seeds", "0,1", "--steps", "2", "--out", str(tmp_path / "s"), *SMALL]
    assert train_main(argv) == 0
    assert reads.resolves == 1 + 2  # the plan's template, then each run's own set-up
    files = {f"data/{f}": 1 + 2 for f in data_files(tasks)}  # hashed once (the template), each run's rows once
    assert reads.of(tmp_path / "tasks") == {"tasks.yaml": 1 + 2, **files}


@pytest.mark.slow
def test_a_run_adding_tasks_reads_each_file_once(tmp_path, monkeypatch):
    tasks = example_tasks(tmp_path / "tasks")
    table = yaml.safe_load(tasks.read_text())["tasks"]
    first, later = tasks.parent / "first.yaml", tasks.parent / "later.yaml"
    first.write_text(yaml.safe_dump({"tasks": {k: v for k, v in table.items() if k != "tickets"}}))
    later.write_text(yaml.safe_dump({"tasks": {"tickets": table["tickets"]}}))
    base = tmp_path / "base"
    assert train_main(["--tasks-file", str(first), "--steps", "2", "--out", str(base), *SMALL]) == 0
    reads = Reads(monkeypatch)
    argv = ["--from", str(base), "--add-tasks", str(later), "--steps", "2", "--out", str(tmp_path / "new")]
    assert train_main([*argv, "--no-progress"]) == 0
    assert reads.resolves == 1
    # the added task's file: its rows read, its sha256 theirs; the base run's: their rows read once (the dev rows measured
    # again; their sha256, compared with the base run's, remembered from the base run trained in this process)
    base_files = {f"data/{f}": 1 for f in data_files(tasks) if f != "tickets.parquet"}
    assert reads.of(tmp_path / "tasks") == {"later.yaml": 1, "data/tickets.parquet": ROWS_AND_HASH, **base_files}
    assert reads.of(base)["config.json"] == 1  # the base run's settings and records, read once


class _Stop(Exception):
    pass


@pytest.mark.slow
def test_a_resumed_run_reads_each_file_once(tmp_path, monkeypatch):
    from pals_core.train.args import build_parser, config_from_args
    from pals_core.train.trainer import train

    tasks = example_tasks(tmp_path / "tasks")
    out = tmp_path / "run"
    argv = ["--tasks-file", str(tasks), "--steps", "4", "--eval-every", "2", "--out", str(out), *SMALL]
    cfg, _ = config_from_args(vars(build_parser().parse_args(argv)))

    def stop(step, scores, average):
        raise _Stop

    with pytest.raises(_Stop):
        train(cfg, on_eval=stop, progress=False)
    reads = Reads(monkeypatch)
    assert train_main(["--resume", "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 4
    assert reads.resolves == 1
    # each file's rows read once; its sha256 remembered from the run's start in this process (same size and time)
    assert reads.of(tmp_path / "tasks") == {"tasks.yaml": 1, **{f"data/{f}": 1 for f in data_files(tasks)}}
