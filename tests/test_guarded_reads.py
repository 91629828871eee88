"""One guarded reader (``pals_core.atomic.open_regular``) under every JSON and data file the project opens: a FIFO, a
socket or a directory where a file should be is named and never opened (so never a hang), a file over its cap is
never read, and a ``datasets`` folder whose own files are malformed is one line naming the file."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Timeout
from pathlib import Path

import pytest

from pals_core.atomic import atomic_write_json, read_json, read_json_file
from pals_core.kinds.errors import TaskDataError
from pals_core.tasks.readers import read_columns, sha256_of
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.rows import read_rows


def bounded(fn, *fifos: Path, seconds: float = 10.0):
    """``fn()``, failing the test (not hanging it) if it blocks on one of ``fifos``: they are opened for writing and
    closed after ``seconds``, which ends a blocked reader's wait."""
    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(fn)
        try:
            return done.result(timeout=seconds)
        except Timeout:
            for f in fifos:
                try:
                    os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            pytest.fail(f"blocked on a FIFO for {seconds:g} s: {', '.join(map(str, fifos))}")


def fifo(path: Path) -> Path:
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


def saved(folder: Path) -> Path:
    import datasets

    datasets.Dataset.from_dict({"text": ["a b", "c d", "e f", "g h"], "label": ["x", "y", "x", "y"]}).save_to_disk(
        str(folder)
    )
    return folder


def test_read_json_never_opens_a_fifo(tmp_path):
    f = fifo(tmp_path / "progress.json")
    assert bounded(lambda: read_json(f, or_none=True), f) is None
    with pytest.raises(OSError) as e:
        bounded(lambda: read_json(f), f)
    assert e.value.strerror == "a FIFO (named pipe), not a regular file" and e.value.filename == str(f)
    with pytest.raises(ValueError, match=r"device profile .*profile.json is a FIFO \(named pipe\), not a regular"):
        bounded(lambda: read_json_file(fifo(tmp_path / "profile.json"), "device profile"), tmp_path / "profile.json")


def test_read_json_caps_the_size_it_reads(tmp_path):
    big = tmp_path / "summary.json"
    big.write_text(json.dumps({"x": "a" * 5000}))
    assert read_json(big, or_none=True, limit=1000) is None
    with pytest.raises(OSError, match="over the 1,000-byte limit"):
        read_json(big, limit=1000)


def test_a_save_to_disk_folder_whose_state_names_a_fifo_is_refused_naming_it(tmp_path):
    folder = saved(tmp_path / "ds")
    [entry] = json.loads((folder / "state.json").read_text())["_data_files"]
    data = fifo(folder / entry["filename"])
    with pytest.raises(TaskDataError) as e:
        bounded(lambda: read_columns(folder, ["text", "label"]), data)
    assert str(data) in str(e.value) and "FIFO" in str(e.value) and "\n" not in str(e.value)
    assert bounded(lambda: sha256_of(folder), data)  # the digest of the folder passes over it too


@pytest.mark.parametrize("name", ["state.json", "dataset_info.json"])
def test_a_save_to_disk_folder_whose_own_json_is_a_fifo_is_refused_naming_it(tmp_path, name):
    folder = saved(tmp_path / "ds")
    f = fifo(folder / name)
    with pytest.raises(TaskDataError) as e:
        bounded(lambda: read_columns(folder, ["text", "label"]), f)
    assert f"{f} is a FIFO (named pipe)" in str(e.value)


def test_a_data_file_named_outside_the_folder_is_refused(tmp_path):
    folder = saved(tmp_path / "ds")
    state = json.loads((folder / "state.json").read_text())
    os.rename(folder / state["_data_files"][0]["filename"], tmp_path / "elsewhere.arrow")
    state["_data_files"][0]["filename"] = "../elsewhere.arrow"
    (folder / "state.json").write_text(json.dumps(state))
    with pytest.raises(TaskDataError, match=r"data file '../elsewhere.arrow' lies outside"):
        read_columns(folder, ["text", "label"])


@pytest.mark.parametrize(
    "state, match",
    [
        ([], "a JSON object expected, got list"),
        ({"_data_files": 5}, "'_data_files' is a list of {filename: …}, got int 5"),
        ({"_data_files": [{"filename": 3}]}, "'_data_files' is a list"),
    ],
)
def test_a_malformed_state_json_is_one_line(tmp_path, state, match):
    folder = saved(tmp_path / "ds")
    (folder / "state.json").write_text(json.dumps(state))
    with pytest.raises(TaskDataError) as e:
        read_columns(folder, ["text"])
    assert str(folder / "state.json") in str(e.value) and match in str(e.value)


@pytest.mark.parametrize(
    "content, match",
    [
        ("[]", "a JSON object expected, got list []"),
        ('{"splits": 5}', "'splits' is a list of split names, got int 5"),
        ('{"splits": [1, 2]}', "'splits' is a list of split names"),
        ("{", "not JSON"),
    ],
)
def test_a_malformed_dataset_dict_json_is_one_line_and_exit_2(tmp_path, here, content, match):
    from pals_core.cli.tasks import main

    folder = tmp_path / "dd"
    folder.mkdir()
    (folder / "dataset_dict.json").write_text(content)
    (tmp_path / "t.yaml").write_text(f"tasks:\n  t: {{train: {folder}}}\n")
    done = here(main, str(tmp_path / "t.yaml"), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert str(folder / "dataset_dict.json") in line and match in line


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_data_file_that_is_a_fifo_is_named(tmp_path, suffix):
    f = fifo(tmp_path / f"train{suffix}")
    record = TaskRecord("t", train=str(f))
    with pytest.raises(TaskDataError, match=r"train\.\w+: not a regular file"):
        bounded(lambda: read_rows(record), f)


@pytest.mark.parametrize("name", ["progress.json", "summary.json", "cancel.json"])
def test_a_run_folder_file_that_is_a_fifo_is_named_and_passed_over(tmp_path, here, name):
    """pals-runs list (and the explorer's runs table, by ``Run.note``) lists the run at once and names the file."""
    from pals_core.cli.runs import main
    from pals_core.supervise.runs import list_runs

    run = tmp_path / "r1"
    run.mkdir()
    atomic_write_json(run / "launch.json", {"id": "r1", "started": 1.0})
    if name != "progress.json":
        atomic_write_json(run / "progress.json", {"status": "finished", "step": 4, "total": 4})
    f = fifo(run / name)
    done = bounded(lambda: here(main, "list", "--root", str(tmp_path), cwd=tmp_path), f)
    assert done.returncode == 0, done
    assert "r1" in done.stdout and f"r1: passed over (not regular files, never opened): {name} is a FIFO" in done.stdout
    [row] = [
        json.loads(line)
        for line in here(main, "list", "--json", "--root", str(tmp_path), cwd=tmp_path).stdout.splitlines()
    ]
    assert row["id"] == "r1" and f"{name} is a FIFO" in row["note"]
    [r] = bounded(lambda: list_runs(tmp_path), f)
    assert f"{name} is a FIFO" in (r.error or "")


def test_a_run_whose_only_file_is_a_fifo_is_listed_not_lost(tmp_path, here):
    from pals_core.cli.runs import main

    run = tmp_path / "r2"
    run.mkdir()
    f = fifo(run / "progress.json")
    done = bounded(lambda: here(main, "list", "--root", str(tmp_path), cwd=tmp_path), f)
    assert "r2" in done.stdout and "progress.json is a FIFO" in done.stdout


def test_the_explorer_runs_table_names_a_fifo(tmp_path):
    from explorer.runs_view import runs_table
    from pals_core.supervise.runs import list_runs

    run = tmp_path / "r3"
    run.mkdir()
    atomic_write_json(run / "progress.json", {"status": "finished", "step": 4, "total": 4})
    fifo(run / "cancel.json")
    frame = bounded(lambda: runs_table(list_runs(tmp_path), {}), run / "cancel.json")
    assert "cancel.json is a FIFO" in frame.loc[frame["run"] == "r3", "problem"].item()


def test_a_log_that_is_a_fifo_gives_an_empty_tail(tmp_path):
    """The runs view and pals-runs read a run's log.txt tail: a FIFO there is passed over, never waited on."""
    from pals_core.supervise.runs import load_run

    run = tmp_path / "r4"
    run.mkdir()
    atomic_write_json(run / "progress.json", {"status": "failed", "step": 1, "total": 4, "error": "boom"})
    f = fifo(run / "log.txt")
    assert bounded(lambda: load_run(run).log_tail(), f) == ""


def test_a_glue_file_that_is_a_fifo_is_named(tmp_path):
    from pals_core.data.glue_rows import GlueDataError, read_tsv
    from pals_core.tasks.glue_tasks import GLUE_TASKS

    f = fifo(tmp_path / "dev.tsv")
    with pytest.raises(GlueDataError, match=r"dev.tsv: a FIFO \(named pipe\), not a regular file"):
        bounded(lambda: read_tsv(GLUE_TASKS["rte"], f), f)
