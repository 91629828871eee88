"""A data file is read once: the rows a run trains on and the sha256 it records come from the same bytes, so a file
replaced between two reads cannot give rows of one content and a fingerprint of another."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pals_core.data.glue_rows import read_tsv
from pals_core.data.load import TINY, describe_data
from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.glue_tasks import GLUE_TASKS
from pals_core.tasks.readers import read_columns, sha256_of
from pals_core.tasks.taskfile import read_tasks_file
from pals_core.train.config import TrainConfig

ROWS = [("a fine film", "pos"), ("dull and long", "neg"), ("loved it", "pos"), ("not again", "neg")]


def _write(path: Path, rows=ROWS) -> Path:
    """``rows`` as the file format ``path``'s extension names (CSV, TSV, JSON Lines, Parquet, CoNLL)."""
    fmt = path.suffix
    if fmt == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"text": [t for t, _ in rows], "label": [y for _, y in rows]}), path)
    elif fmt == ".jsonl":
        path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in rows))
    elif fmt == ".conll":
        path.write_text("\n".join(f"{t.split()[0]} {y}\n" for t, y in rows))
    else:
        sep = "," if fmt == ".csv" else "\t"
        path.write_text(f"text{sep}label\n" + "".join(f"{t}{sep}{y}\n" for t, y in rows))
    return path


@pytest.fixture
def opens(monkeypatch):
    """Every path ``os.open`` is asked for, in order (the real call runs: this counts, it does not replace)."""
    seen: list[str] = []
    real = os.open

    def counted(path, *a, **kw):
        seen.append(os.fspath(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(os, "open", counted)
    return seen


@pytest.mark.parametrize("ext", [".csv", ".tsv", ".jsonl", ".parquet", ".conll"])
def test_one_open_gives_a_files_rows_and_the_sha256_of_those_bytes(tmp_path, opens, ext):
    f = _write(tmp_path / f"t{ext}")
    cols = read_columns(f, None)
    assert len(cols) == 4
    assert cols.sha256 == hashlib.sha256(f.read_bytes()).hexdigest()
    assert sha256_of(f) == cols.sha256  # the run's description takes the digest of that read: no second open
    assert opens.count(str(f)) == 1, opens


def test_a_glue_file_is_opened_once_for_its_rows_and_its_sha256(glue_dir, opens):
    path = Path(glue_dir) / "RTE" / "dev.tsv"
    raw = read_tsv(GLUE_TASKS["rte"], path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    opened = opens.count(str(path))
    assert (raw.fingerprint, raw.read_from, len(raw.labels)) == (digest, (str(path), digest), 277)
    assert opened == 1, opens


def _config(tmp_path: Path, file: Path) -> TrainConfig:
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(json.dumps({"tasks": {"mood": {"train": file.name, "labels": ["neg", "pos"]}}}))
    assert list(read_tasks_file(tasks)) == ["mood"]
    return TrainConfig(
        adapter=AdapterConfig(method="pals", d_s=24),
        model=TINY,
        out=str(tmp_path / "run"),
        tasks=[],
        tasks_file=str(tasks),
        steps=2,
        batch_size=2,
        max_len=16,
    )


def test_a_run_records_the_sha256_of_the_bytes_it_reads_its_rows_from(tmp_path):
    from pals_core.train.params import resolve
    from pals_core.train.trainer import check_data

    f = _write(tmp_path / "mood.csv", ROWS * 3)
    cfg = resolve(_config(tmp_path, f))
    rows = check_data(cfg)
    splits, _ = rows["mood"]
    read = {raw.read_from for raw in splits.values()}  # train, and dev held out of it: one file, one read
    assert read == {(str(f), hashlib.sha256(f.read_bytes()).hexdigest())}
    assert cfg.data["mood"]["files"]["train"]["sha256"] == read.pop()[1]


def test_a_file_replaced_between_its_description_and_its_rows_refuses_the_run(tmp_path):
    """The run is described (config.json's sha256, its fingerprint), then the file is replaced before its rows are
    read: training on the new rows under the old fingerprint would record what was not trained on."""
    from pals_core.train.params import resolve
    from pals_core.train.trainer import check_data

    f = _write(tmp_path / "mood.csv", ROWS * 3)
    cfg = resolve(_config(tmp_path, f))
    described = cfg.data["mood"]["files"]["train"]["sha256"]
    other = _write(tmp_path / "other.csv", [(t + "!", y) for t, y in ROWS * 3])
    os.replace(other, f)  # a new file at the same path, as an editor or a sync would leave it
    assert describe_data(cfg.records())["mood"]["files"]["train"]["sha256"] != described
    with pytest.raises(ValueError, match=r"mood\.csv changed while the run was set up .*: start the run again"):
        check_data(cfg)
    assert not Path(cfg.out).exists()  # refused before the run folder is made


def _own_tasks(tmp_path: Path) -> Path:
    """Two tasks of one's own: one with its labels declared and a dev file, one whose labels are read from its
    train file and whose dev rows are held out of it."""
    _write(tmp_path / "mood.csv", ROWS * 3)
    _write(tmp_path / "mood_dev.csv", ROWS)
    _write(tmp_path / "tone.jsonl", ROWS * 3)
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(
        json.dumps(
            {
                "tasks": {
                    "mood": {"train": "mood.csv", "dev": "mood_dev.csv", "labels": ["neg", "pos"]},
                    "tone": {"train": "tone.jsonl"},
                }
            }
        )
    )
    return tasks


@pytest.mark.slow
@pytest.mark.parametrize("resolved_first", [False, True], ids=["train", "pals-train"])
def test_a_run_opens_each_data_file_once(tmp_path, opens, resolved_first):
    """A tiny run from its start to its summary: every data file is opened once (its rows, its sha256 and, for a
    task without declared labels, its label names all from that read), whether ``train`` resolves the run itself or
    is handed one ``pals-train`` resolved to refuse it early."""
    from pals_core.train.params import resolve
    from pals_core.train.trainer import train

    tasks = _own_tasks(tmp_path)
    cfg = TrainConfig(
        adapter=AdapterConfig(method="pals", d_s=24),
        model=TINY,
        out=str(tmp_path / "run"),
        tasks=[],
        tasks_file=str(tasks),
        steps=2,
        batch_size=2,
        max_len=16,
        eval_every=2,
    )
    opens.clear()
    summary = train(resolve(cfg, rows=True) if resolved_first else cfg, progress=False)
    files = [str(tmp_path / n) for n in ("mood.csv", "mood_dev.csv", "tone.jsonl")]
    counts = {f: sum(Path(o).resolve() == Path(f) for o in opens) for f in files}
    assert counts == dict.fromkeys(files, 1), opens
    recorded = {f["path"]: f["sha256"] for d in summary["config"]["data"].values() for f in d["files"].values()}
    assert recorded == {f: hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files}
    assert summary["config"]["data"]["tone"]["labels"] == ["neg", "pos"]
