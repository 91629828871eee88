"""``pals-predict --out``: nothing a person owns is overwritten. The input file and a run's own files are never written
(``--overwrite`` or not), an existing file only with ``--overwrite``, a missing folder is named before anything is
read; an input column never loses its values to a prediction column of the same name, and a column the output format
cannot hold is named (file, row, column) before predicting. A real run of a tiny BERT, trained for one step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_models import train_tiny_run

from pals_core.cli.predict import main
from pals_core.tasks.readers import read_columns

pytestmark = pytest.mark.slow  # a run trained once for the module (5-30 s on two busy cores); each test then < 1.5 s


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A frozen-trunk PALs run of two tasks, ``intent`` and ``intent_prob`` (whose name is ``intent``'s probability
    column), on one text column ``text``."""
    return train_tiny_run(tmp_path_factory.mktemp("predict-safety"), ["intent", "intent_prob"])


def predict(here, cwd: Path, *args: str):
    return here(main, *args, "--no-progress", cwd=cwd)


def refused(p, *needles: str) -> None:
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    for needle in needles:
        assert needle in p.stderr, p.stderr


def rows_file(folder: Path) -> Path:
    f = folder / "new.csv"
    f.write_text("text\ninvoice to pay\nrefund my money\n")
    return f


@pytest.mark.parametrize("overwrite", [False, True])
def test_the_input_file_is_never_the_output(run, tmp_path, here, overwrite):
    f = rows_file(tmp_path)
    before = f.read_bytes()
    extra = ["--overwrite"] if overwrite else []
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(f), "--tasks", "intent", *extra)
    refused(p, "is the input file", "--overwrite does not apply")
    assert f.read_bytes() == before
    link = tmp_path / "link.csv"  # the same file under another name
    link.symlink_to(f)
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(link), "--tasks", "intent", *extra)
    refused(p, "is the input file")
    assert f.read_bytes() == before and link.is_symlink()


def test_an_existing_file_is_replaced_only_with_overwrite(run, tmp_path, here):
    f = rows_file(tmp_path)
    out = tmp_path / "mine.csv"
    out.write_text("a file of mine\n")
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(out), "--tasks", "intent")
    refused(p, f"--out {out} exists", "--overwrite")
    assert out.read_text() == "a file of mine\n"
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(out), "--tasks", "intent", "--overwrite")
    assert p.returncode == 0, p.stderr
    assert read_columns(out, None).values["text"] == ["invoice to pay", "refund my money"]
    assert [x.name for x in tmp_path.iterdir() if x.name.startswith(".")] == []  # no temporary file left


@pytest.mark.parametrize("name", ["metrics.jsonl", "checkpoints/p.csv", "progress.jsonl"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_runs_own_files_are_never_written(run, tmp_path, here, name, overwrite):
    f = rows_file(tmp_path)
    target = run / name
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    extra = ["--overwrite"] if overwrite else []
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(target), "--tasks", "intent", *extra)
    if name == "progress.jsonl":  # a new file of another name beside the run's own: allowed
        assert p.returncode == 0, p.stderr
        target.unlink()
    else:
        refused(p, "is a file of the run", "never writes a run's own files")
    link = tmp_path / "link.jsonl"  # a link into the run is followed
    link.symlink_to(run / "metrics.jsonl")
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(link), "--tasks", "intent", *extra)
    refused(p, "is a file of the run")
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_a_missing_output_folder_is_named_before_anything_is_read(run, tmp_path, here):
    f = rows_file(tmp_path)
    missing = tmp_path / "not-made"
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(missing / "p.csv"), "--tasks", "intent")
    refused(p, f"the folder {missing} does not exist")
    assert ".tmp" not in p.stderr and not missing.exists()
    # before the input is read (and so before any prediction): a missing input is not what is reported
    p = predict(here, tmp_path, str(run), "--input", "absent.csv", "--out", str(missing / "p.csv"))
    refused(p, f"the folder {missing} does not exist")


def test_an_input_column_never_loses_its_values_to_a_prediction(run, tmp_path, here):
    f = tmp_path / "dev.csv"
    f.write_text(
        "text,intent,intent (input),intent_prob\ninvoice to pay,billing,first,0.25\nrefund my money,refund,second,0.5\n"
    )
    out = tmp_path / "p.csv"
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(out), "--tasks", "intent")
    assert p.returncode == 0, p.stderr
    got = read_columns(out, None).values
    assert got["intent (input 2)"] == ["billing", "refund"]
    assert got["intent (input)"] == ["first", "second"]
    assert [float(v) for v in got["intent_prob (input)"]] == [0.25, 0.5]
    assert set(got["intent"]) <= {"billing", "refund"} and len(got["intent_prob"]) == 2
    assert "'intent' as 'intent (input 2)'" in p.stderr and "'intent_prob' as 'intent_prob (input)'" in p.stderr


def test_two_tasks_that_would_write_one_column_are_refused_before_predicting(run, tmp_path, here):
    f = rows_file(tmp_path)
    out = tmp_path / "p.jsonl"
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(out))
    refused(p, "tasks 'intent' and 'intent_prob' would both write the column 'intent_prob'")
    assert not out.exists()
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(out), "--tasks", "intent_prob")
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(
    "values, suffix, needle",
    [
        (["a note", 5], ".csv", "new.jsonl, line 2, column 'note': a number in a column whose line 1 holds a string"),
        (["a note", 5], ".parquet", "new.jsonl, line 2, column 'note': a number"),
        ([3, "x"], ".tsv", "new.jsonl, line 2, column 'note': a string in a column whose line 1 holds a number"),
        ([["x"], ["y"]], ".csv", "new.jsonl, column 'note': its list<item: string> values cannot be written"),
    ],
)
def test_a_column_the_output_cannot_hold_is_named_before_predicting(run, tmp_path, here, values, suffix, needle):
    f = tmp_path / "new.jsonl"
    f.write_text("".join(json.dumps({"text": t, "note": v}) + "\n" for t, v in zip(["invoice", "refund"], values)))
    out = tmp_path / f"p{suffix}"
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(out), "--tasks", "intent")
    refused(p, needle)
    assert not out.exists() and "rows/s" not in p.stderr
    p = predict(here, tmp_path, str(run), "--input", str(f), "--out", str(tmp_path / "p.jsonl"), "--tasks", "intent")
    assert p.returncode == 0, p.stderr  # JSON Lines keeps each value as it is
    assert [json.loads(x)["note"] for x in (tmp_path / "p.jsonl").read_text().splitlines()] == values


def test_an_unreadable_input_is_one_line_naming_it(run, tmp_path, here):
    mem = tmp_path / "mem.csv"
    mem.symlink_to("/proc/self/mem")  # opens, then fails to read (EIO), even for root
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    for given in (mem, folder):
        p = predict(here, tmp_path, str(run), "--input", str(given), "--out", str(tmp_path / "p.csv"))
        refused(p, str(given))
    assert not (tmp_path / "p.csv").exists()
