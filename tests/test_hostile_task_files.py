"""Hostile tasks files: read as written or refused in one line that names the file (line and column), in bounded time
and memory, by every entry point — pals-budget, pals-tasks, pals-train, pals-study (``--tasks-file``) and the
explorer's upload. No YAML alias is expanded, no key is renamed by YAML 1.1 (``yes`` → True, ``010`` → 8,
``null`` → None), no complex key or merge key reaches a reader."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import pytest

from explorer import inputs
from pals_core.kinds.errors import TaskRecordError
from pals_core.tasks.taskfile import read_tasks_file

# a billion laughs: nine levels of nine aliases, 9⁹ ≈ 3.9e8 strings once expanded (a file of 609 bytes)
BOMB = "".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n',
        *(f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
        "tasks:\n  t: {train: x.csv, labels: *i}\n",
    ]
)
ROW = "text,label\nhello,a\nbye,b\nhi,a\nciao,b\n"


def write(folder: Path, text: str, name: str = "tasks.yaml") -> Path:
    if not (folder / "x.csv").exists():
        (folder / "x.csv").write_text(ROW)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def refusal(path: Path, match: str) -> str:
    with pytest.raises(TaskRecordError) as e:
        read_tasks_file(path)
    line = str(e.value)
    assert "\n" not in line and str(path) in line and match in line, line
    return line


def test_an_alias_bomb_is_refused_at_once_by_the_reader(tmp_path):
    path = write(tmp_path, BOMB)
    assert len(BOMB) < 700
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    line = refusal(path, "alias *a")
    assert time.perf_counter() - t0 < 1.0
    assert "line 2, column " in line and len(line) < 300
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 50_000  # kB: nothing was expanded


@pytest.mark.parametrize("cli", ["pals-budget", "pals-tasks", "pals-train", "pals-study"])
def test_an_alias_bomb_is_one_line_and_exit_2_at_every_entry_point(cli, here, tmp_path):
    path = write(tmp_path, BOMB)
    if cli == "pals-budget":
        from pals_core.cli.budget import main

        args = ["--tasks-file", str(path)]
    elif cli == "pals-tasks":
        from pals_core.cli.tasks import main

        args = [str(path)]
    elif cli == "pals-train":
        from pals_core.cli.train import main

        args = ["--tasks-file", str(path), "--d-s", "8", "--out", str(tmp_path / "run"), "--no-progress"]
    else:
        from studies.cli import main

        args = [
            "run",
            "design",
            "--tasks-file",
            str(path),
            "--storage",
            f"sqlite:///{tmp_path / 's.db'}",
            "--trials",
            "1",
        ]
    t0 = time.perf_counter()
    done = here(main, *args, cwd=tmp_path)
    assert time.perf_counter() - t0 < 10.0
    assert done.returncode == 2, done
    [line] = done.stderr.strip().splitlines()
    assert str(path) in line and "alias *a" in line and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


def test_an_alias_bomb_upload_is_refused_without_expanding_it(tmp_path):
    """The explorer refuses the upload as it saves it (nothing kept under uploads/) and names what is wrong with it
    in one line (as for a typed path), with no expanded value in the message."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as e:
        inputs.save_upload(BOMB.encode(), tmp_path)
    assert not (tmp_path / "uploads").exists() or not any((tmp_path / "uploads").iterdir())
    assert time.perf_counter() - t0 < 2.0
    assert "alias *a" in str(e.value) and "lol" not in str(e.value) and len(str(e.value)) < 400
    assert not list(tmp_path.glob("uploads/*/*"))


@pytest.mark.parametrize(
    "text, match",
    [
        ("tasks:\n  ? [a, b]\n  : {train: x.csv}\n", "line 2, column 5: a complex key"),
        ("tasks:\n  ? {a: 1}\n  : {train: x.csv}\n", "a complex key"),
        ("defaults: &d {train: x.csv}\ntasks:\n  t: {<<: *d}\n", "alias *d"),
        ("tasks:\n  t:\n    <<: {train: x.csv}\n", "merge key '<<'"),
    ],
)
def test_complex_alias_and_merge_keys_are_refused_by_name(tmp_path, text, match):
    refusal(write(tmp_path, text), match)


@pytest.mark.parametrize(
    "key, kind",
    [
        ("1", "a number"),
        ("yes", "a boolean"),
        ("010", "a number"),
        ("null", "null"),
        ("~", "null"),
        ("on", "a boolean"),
    ],
)
def test_a_key_yaml_would_rename_is_refused_with_the_quoting_that_keeps_it(tmp_path, key, kind):
    line = refusal(write(tmp_path, f"tasks:\n  {key}: {{train: x.csv}}\n"), f"key {key} is read by YAML as {kind}")
    assert f"quote it ('{key}')" in line and "line 2, column 3" in line


def test_quoted_keys_are_the_names_as_written(tmp_path):
    """``'1'`` and ``'True'``, ``'010'`` and ``'null'`` are four tasks of those names; with the plain ``1:`` and
    ``yes:`` beside them the file is refused, never read as one task."""
    text = "tasks:\n" + "".join(f"  '{k}': {{train: x.csv}}\n" for k in ("1", "True", "010", "null"))
    assert list(read_tasks_file(write(tmp_path, text))) == ["1", "True", "010", "null"]
    refusal(write(tmp_path, text + "  1: {train: x.csv}\n"), "key 1 is read by YAML as a number")
    refusal(write(tmp_path, "tasks:\n  'True': {train: x.csv}\n  yes: {train: x.csv}\n"), "key yes is read by YAML")
    refusal(write(tmp_path, "tasks:\n  '1': {train: x.csv}\n  \"1\": {train: x.csv}\n"), "'1' is given twice")
    json_file = write(tmp_path, json.dumps({"tasks": {"1": {"train": "x.csv"}, "yes": {"train": "x.csv"}}}), "t.json")
    assert list(read_tasks_file(json_file)) == ["1", "yes"]


def test_values_are_read_as_written_where_a_field_is_text(tmp_path):
    """YAML 1.1 reads ``yes`` as true, ``010`` as 8 and ``1_0`` as 10: a field of text (labels, columns, the positive
    label) takes the text as written; a field of numbers (``range``, ``dev_fraction``) the number."""
    (tmp_path / "x.csv").write_text("010,1_0\nhello,yes\nbye,no\nhi,yes\nciao,no\n")
    text = (
        "tasks:\n"
        "  t: {train: x.csv, text: 010, label: 1_0, labels: [yes, no], positive: yes, dev_fraction: 0.5}\n"
        "  r: {train: x.csv, text: 010, label: 1_0, kind: regression, range: [0, 1_0]}\n"
    )
    records = read_tasks_file(write(tmp_path, text))
    t, r = records["t"], records["r"]
    assert (t.text, t.label, t.labels, t.positive, t.dev_fraction) == (("010",), "1_0", ("yes", "no"), "yes", 0.5)
    assert r.range == (0, 10)
    refusal(write(tmp_path, "tasks:\n  t: {train: x.csv, dev_fraction: yes}\n"), "dev_fraction is a number")
