"""The explorer on one's own tasks, driven through ``streamlit.testing.v1.AppTest``:
a tasks file priced as ``pals-budget --tasks-file`` prices it, the task panel (rows, labels, majority class, token
lengths and the p95 offered as n), a bad file or row as one error line, the launcher's ``--tasks-file``, and a run
trained on a tasks file found in Runs & measured by what its tasks are (their fingerprints), not by their names."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer import inputs
from explorer.inputs import TASKS_FILE, TINY
from pals_core import measured
from pals_core.budget.solver import Budget
from pals_core.budget.table import rows
from pals_core.budget.tasks import tasks_of_records
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.families.shapes import PRESETS
from pals_core.kinds import get_kind
from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.taskfile import read_tasks_file, tasks_file_model
from pals_core.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
EXAMPLE = ROOT / inputs.EXAMPLE_TASKS
MINILM = PRESETS[EMBEDDED_MODEL]


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    monkeypatch.setenv("PALS_RUNS_DIR", str(d))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    return d


@pytest.fixture
def app(runs_dir):
    return AppTest.from_file(APP, default_timeout=120).run()


@pytest.fixture(scope="module")
def example() -> Path:
    data = [
        EXAMPLE.parent / "data" / n
        for n in (
            "intent_train.csv",
            "intent_dev.csv",
            "reviews.jsonl",
            "tickets.parquet",
            "entities_train.conll",
            "entities_dev.conll",
        )
    ]
    if not all(p.is_file() for p in data):  # the example's data is written by its own (deterministic) script
        import subprocess
        import sys

        subprocess.run([sys.executable, str(EXAMPLE.parent / "make_data.py")], check=True, cwd=ROOT)
    return EXAMPLE


def errors(at) -> list[str]:
    return [e.value for e in at.error] + [e.value for e in at.exception]


def table_with(at, column: str):
    for d in at.dataframe:
        if column in d.value.columns:
            return d.value
    raise AssertionError(f"no table with a {column!r} column")


def fig(at, key: str) -> dict:
    for el in at.get("plotly_chart"):
        if getattr(el, "key", None) == key:
            return json.loads(el.proto.spec)
    raise AssertionError(f"no figure {key!r} on the page")


def show(at, view: str):
    return at.segmented_control(key="view").set_value(view).run()


def open_file(at, path, model=None):
    """The sidebar on a tasks file (and a model)."""
    if model is not None:
        at.sidebar.selectbox(key="model").set_value(model).run()
    at.sidebar.radio(key="task_mode").set_value(TASKS_FILE).run()
    return at.sidebar.text_input(key="tasks_file").set_value(str(path)).run()


def small_tasks(folder: Path, names=("intent", "score")) -> Path:
    """A tasks file of two small tasks: a 3-class CSV with a dev file, a regression JSON Lines without one."""
    folder.mkdir(parents=True, exist_ok=True)
    words = ["refund", "late", "login", "card", "parcel", "password", "invoice", "tracking", "reset"]
    for split, n in (("train", 36), ("dev", 12)):
        with open(folder / f"intent_{split}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["message", "intent"])
            for i in range(n):
                w.writerow(
                    [
                        f"my {words[i % 9]} {words[(i * 5) % 9]} please, ticket {i}",
                        ["billing", "delivery", "account"][i % 3],
                    ]
                )
    (folder / "score.jsonl").write_text(
        "".join(
            json.dumps({"a": f"a review of item {i} " + "good " * (i % 4), "b": f"rated {i % 5}", "y": float(i % 5)})
            + "\n"
            for i in range(40)
        ),
        encoding="utf-8",
    )
    a, b = names
    f = folder / "tasks.yaml"
    f.write_text(
        f"""tasks:
  {a}: {{train: intent_train.csv, dev: intent_dev.csv, text: message, label: intent}}
  {b}: {{train: score.jsonl, text: [a, b], label: y, kind: regression}}
""",
        encoding="utf-8",
    )
    return f


def test_the_example_tasks_are_priced_with_their_label_counts(app, example):
    """'Open the example tasks' → the calculator prices the file's records (each head from its label count) on the
    model the file names (``model:``), as pals-budget and pals-train take it."""
    app.sidebar.radio(key="task_mode").set_value(TASKS_FILE).run()
    app.sidebar.button(key="tasks_example").click().run()
    assert errors(app) == []
    assert app.sidebar.text_input(key="tasks_file").value == inputs.example_tasks_path()
    assert tasks_file_model(example) == EMBEDDED_MODEL and app.sidebar.selectbox(key="model").value == inputs.EMBEDDED
    records = read_tasks_file(example)
    tasks = tasks_of_records(records.values())
    assert [(t.name, t.num_labels) for t in tasks] == [
        ("intent", 3),
        ("reviews", 1),
        ("tickets", 4),
        ("entities", 8),
        ("replies", 4),
    ]
    table = table_with(app, "fits")
    want = {(c.method, c.location or "—"): c for c in rows(MINILM, tasks, budget=Budget(ratio=1.13))}
    assert len(table) == len(want) > 0
    for _, r in table.iterrows():
        c = want[(r["method"], r["location"])]
        assert r["task-specific (all tasks)"] == c.params_task_specific and r["d_s"] == (
            "—" if c.d_s is None else str(c.d_s)
        )
    # the heads are d·C_t + C_t: 3 + 1 + 4 + 8 outputs (the tagging head per token), not four binary tasks; the
    # choice task's head scores each of its 4 candidates with one output: d + 1
    shared = next(c for c in rows(MINILM, tasks, methods=["shared"], budget=Budget(ratio=1.13)))
    heads = [384 * t.num_labels + t.num_labels if t.name != "replies" else 384 + 1 for t in tasks]
    assert shared.params_task_specific == sum(heads)
    assert any("**5 tasks** (intent, reviews, tickets, entities, replies)" in m.value for m in app.markdown)
    assert app.query_params["tasks_file"] == inputs.example_tasks_path() and "tasks" not in app.query_params


def test_a_link_opens_a_tasks_file(runs_dir, example):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"tasks_file": str(example), "model": "tiny"})
    at.run()
    assert errors(at) == []
    assert at.sidebar.radio(key="task_mode").value == TASKS_FILE
    assert at.sidebar.text_input(key="tasks_file").value == str(example)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"tasks_file": str(example.parent / "nowhere.yaml")})
    at.run()
    assert any("the link's tasks_file=" in e and "no such file" in e for e in errors(at)), errors(at)
    assert not at.exception and at.get("metric")  # the rest of the page stands


def test_the_task_panel_shows_each_task_and_offers_its_p95(app, example):
    """Rows, label distribution, the majority class on dev and token lengths, as ``profile_tasks`` reads them; the
    largest p95 becomes the page's n at a click."""
    from pals_core.data.profile import profile_tasks

    open_file(app, example, model=TINY)
    show(app, "tasks")
    assert errors(app) == []
    records = list(read_tasks_file(example).values())
    want = profile_tasks(records, model="tiny", max_len=128)
    table = table_with(app, "tokens p95")
    assert list(table["task"]) == [p["name"] for p in want]
    for (_, r), p in zip(table.iterrows(), want):
        assert (r["train rows"], r["dev rows"], r["tokens p50"], r["tokens p95"], r["tokens max"]) == (
            p["train_rows"],
            p["dev_rows"],
            p["tokens"]["p50"],
            p["tokens"]["p95"],
            p["tokens"]["max"],
        )
        assert r["majority class on dev"] == f"{100 * p['majority']['main']:.1f} ({p['majority']['metric']})"
        assert r["truncated at n = 128"] == f"{100 * p['tokens']['truncated']:.1f}%"
    for p in want:  # a bar chart of the labels (the entities of a tagging task), train and dev, as its kind charts it
        chart = get_kind(p["kind"]).chart(p)
        if chart is not None:
            bars = {
                t["name"].split()[0]: dict(zip(t["x"], t["customdata"]))
                for t in fig(app, f"fig_labels::{p['name']}")["data"]
            }
            assert bars == chart["counts"]
    charted = {p["kind"] for p in want if get_kind(p["kind"]).chart(p) is not None}
    assert len(charted) == len(want) - 1  # every kind of the example but regression (mean ± std, said in words)
    p95 = max(p["tokens"]["p95"] for p in want)
    button = app.button(key="use_p95")
    assert button.label == f"Use p95 = {p95} as seq_len"
    button.click().run()
    assert app.sidebar.number_input(key="seq_len").value == p95
    assert app.query_params["seq_len"] == str(p95)
    assert any(f"n = {p95}" in m.value for m in app.markdown)  # the budget sentence prices at the new n
    assert not app.get("button") or all(b.key != "use_p95" for b in app.button)  # n is the p95 now: nothing to offer


def test_a_bad_tasks_file_or_row_is_one_error_line(app, tmp_path):
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("tasks:\n  a: {train: x.csv\n", encoding="utf-8")
    open_file(app, bad_yaml)
    [line] = [e for e in errors(app) if e.startswith("Bad input:")]
    assert str(bad_yaml) in line and "not YAML" in line and "\n" not in line
    assert not app.exception
    folder = tmp_path / "rows"
    f = small_tasks(folder)
    text = (folder / "intent_train.csv").read_text().splitlines()
    text[5] = text[5].rsplit(",", 1)[0] + ","  # row 5 loses its label
    (folder / "intent_train.csv").write_text("\n".join(text) + "\n")
    app.sidebar.text_input(key="tasks_file").set_value(str(f)).run()
    [line] = [e for e in errors(app) if e.startswith("Bad input:")]
    assert "intent_train.csv" in line and "intent" in line and "\n" not in line
    app.sidebar.text_input(key="tasks_file").set_value(str(tmp_path / "missing.yaml")).run()
    assert any("missing.yaml" in e and "not found" in e for e in errors(app)), errors(app)
    assert not app.exception


def test_an_upload_is_kept_on_the_server_and_needs_absolute_paths(tmp_path, example):
    """An uploaded file is saved under <runs>/uploads/<sha>/tasks.yaml (the same bytes, the same path); relative data
    paths cannot resolve there and are refused in one line."""
    records = read_tasks_file(example)
    absolute = {
        "tasks": {
            n: {**{k: v for k, v in r.as_dict().items() if v is not None and k not in ("name", "glue")}}
            for n, r in records.items()
        }
    }
    data = json.dumps(absolute).encode()
    path = inputs.save_upload(data, tmp_path)
    assert path.parent.parent == tmp_path / inputs.UPLOADS and path.name == "tasks.yaml"
    assert inputs.save_upload(data, tmp_path) == path
    assert [(t.name, t.num_labels) for t in tasks_of_records(read_tasks_file(path).values())] == [
        ("intent", 3),
        ("reviews", 1),
        ("tickets", 4),
        ("entities", 8),
        ("replies", 4),
    ]
    with pytest.raises(ValueError, match=r"relative path \(data/intent_train.csv\).*must be absolute"):
        inputs.save_upload(example.read_bytes(), tmp_path)


def test_the_measured_views_reference_takes_every_kind(example):
    """The measured view's majority-class line, for the example's five kinds (a tagging and a choice task among them),
    is the mean of the profile's majority scores (``pals-tasks``' and Your tasks'): one way to score a task's trivial
    baseline."""
    from pals_core.data.profile import profile_task

    records = list(read_tasks_file(example).values())
    assert {r.kind for r in records} == {"classification", "regression", "multilabel", "tokens", "choice"}
    mains = [profile_task(r)["majority"]["main"] for r in records]
    assert measured.majority_average(records) == pytest.approx(100 * sum(mains) / len(mains))


def test_choosing_a_tasks_file_before_entering_one_is_a_prompt_not_an_error(app):
    """Nothing entered yet is no bad input: the page asks for the file (an info line), it shows no error."""
    app.sidebar.radio(key="task_mode").set_value(TASKS_FILE).run()
    assert errors(app) == []
    [prompt] = [i.value for i in app.info if i.value.startswith("**Your tasks:**")]
    assert "Enter the path of a tasks file (YAML or JSON), upload one, or open the example tasks." in prompt


def test_a_rejected_upload_says_why_once_and_keeps_nothing(app, runs_dir, tmp_path, example):
    """An upload the page cannot use shows its own reason, once (no generic "enter the path" banner
    beside it), and leaves nothing under <runs>/uploads/; a good upload is then kept and used."""
    app.sidebar.radio(key="task_mode").set_value(TASKS_FILE).run()
    uploads = runs_dir / inputs.UPLOADS
    for name, data, reason in (
        ("relative.yaml", example.read_bytes(), "must be absolute"),
        ("broken.yaml", b"tasks:\n  a: {train: x.csv\n", "not a tasks file"),
        ("binary.yaml", b"\xff\xfe\x00tasks", "not UTF-8 text"),
    ):
        app.sidebar.file_uploader(key="tasks_upload").set_value((name, data, "application/x-yaml")).run()
        assert not app.exception
        [line] = errors(app)  # one message, the upload's own
        assert line.startswith(f"{name}: ") and reason in line and "\n" not in line, errors(app)
        assert ".upload-" not in line  # no staging path shown
        assert not uploads.exists() or not any(uploads.iterdir()), list(uploads.rglob("*"))
        assert app.sidebar.text_input(key="tasks_file").value == ""
    records = read_tasks_file(small_tasks(tmp_path / "mine")).values()
    keep = ("train", "dev", "text", "label", "kind")
    good = json.dumps({"tasks": {r.name: {k: v for k, v in r.as_dict().items() if k in keep and v} for r in records}})
    app.sidebar.file_uploader(key="tasks_upload").set_value(("mine.json", good.encode(), "application/json")).run()
    assert errors(app) == []
    [kept] = list(uploads.glob("*/tasks.yaml"))
    assert app.sidebar.text_input(key="tasks_file").value == str(kept) and kept.read_text() == good
    assert [p.name for p in uploads.iterdir()] == [kept.parent.name]  # no staging folder left


def test_the_launcher_trains_the_tasks_file(app, tmp_path):
    """The launcher's run names the tasks file (absolute) and chooses among its tasks; no GLUE folder is asked for."""
    f = small_tasks(tmp_path / "mine")
    open_file(app, f, model=TINY)
    show(app, "train")
    assert errors(app) == []
    assert app.multiselect(key="train_file_tasks").value == ["intent", "score"]
    assert not any(t.key == "train_glue_dir" for t in app.text_input)
    [cmd] = [c.value for c in app.code if c.value.startswith("pals-train")]
    assert f"--tasks-file {f}" in cmd and "--model tiny" in cmd
    # the max length the task panel suggests: the largest p95 of the tasks' token counts, under the run's tokenizer
    from pals_core.data.profile import profile_tasks

    p95 = max(p["tokens"]["p95"] for p in profile_tasks(list(read_tasks_file(f).values()), model="tiny", max_len=128))
    assert app.number_input(key="train_max_len").value == p95 != 128
    assert any(c.value.startswith(f"Default {p95}: the p95 of these tasks' token counts") for c in app.caption)
    assert f"--max-len {p95}" in cmd
    assert os.environ["PALS_GLUE_DIR"] not in cmd and "--glue-dir" not in cmd  # no GLUE task, no GLUE folder
    app.multiselect(key="train_file_tasks").set_value(["score"]).run()
    [cmd] = [c.value for c in app.code if c.value.startswith("pals-train")]
    assert "--tasks score " in cmd and f"--tasks-file {f}" in cmd


@pytest.mark.slow
def test_a_run_on_a_tasks_file_is_measured_with_its_tasks(app, runs_dir, tmp_path):
    """A run trained on a tasks file appears in Runs & measured for that file — and for the same tasks renamed —
    with the majority class of its own rows; once a data file changes, the tasks are other tasks."""
    from pals_core.train.trainer import train

    f = small_tasks(tmp_path / "mine")
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(f),
        adapter=AdapterConfig(method="pals", d_s=24),
        model="tiny",
        out=str(runs_dir / "mine-pals"),
        steps=6,
        batch_size=4,
        max_len=32,
        eval_every=6,
        seed=0,
    )
    summary = train(cfg, progress=False)
    open_file(app, f, model=TINY)
    show(app, "runs")
    assert errors(app) == []
    result = table_with(app, "folder")
    assert list(result["folder"]) == [str(runs_dir / "mine-pals")]
    assert list(result["dev average (0–100)"]) == [f"{100 * summary['average']:.1f} (1 run)"]
    assert list(result["note"]) == ["smoke run (6 steps)"]  # 6 steps: drawn apart from the measured, labelled
    [smoke] = fig(app, "fig_measured_smoke")["data"]
    assert smoke["x"] == [pytest.approx(100 * summary["average"])] and smoke["y"] == ["pals @ all, d_s 24 · seed 0"]
    majority = measured.majority_average(list(read_tasks_file(f).values()))
    assert majority is not None
    assert any(s.get("x0") == pytest.approx(majority) for s in fig(app, "fig_measured_smoke")["layout"]["shapes"])
    # the answer's ranking reads the measured score too (the Designs table's measured column)
    show(app, "designs")
    designs = table_with(app, "measured dev avg")
    row = designs[designs["design"] == "pals @ all"]
    size = "" if row["d_s"].item() == "24" else " at d_s 24, not this size"  # a score belongs to the size measured
    assert list(row["measured dev avg"]) == [
        f"{100 * summary['average']:.1f} (1 run){size}, a smoke run (6 steps): not ranked"
    ]
    show(app, "runs")
    # the same tasks under other names, in another file: the same tasks (their fingerprints)
    renamed = tmp_path / "renamed" / "tasks.yaml"
    renamed.parent.mkdir()
    renamed.write_text(
        f.read_text()
        .replace("intent:", "intents:")
        .replace("score:", "rating:")
        .replace("train: ", f"train: {f.parent}/")
        .replace("dev: ", f"dev: {f.parent}/")
    )
    app.sidebar.text_input(key="tasks_file").set_value(str(renamed)).run()
    assert [t.name for t in tasks_of_records(read_tasks_file(renamed).values())] == ["intents", "rating"]
    assert list(table_with(app, "folder")["folder"]) == [str(runs_dir / "mine-pals")]
    # one label changed in a copy of the data: other tasks, no measured result
    edited = tmp_path / "edited"
    shutil.copytree(f.parent, edited)
    csv_path = edited / "intent_train.csv"
    csv_path.write_text(csv_path.read_text().replace(",billing\n", ",account\n", 1))
    app.sidebar.text_input(key="tasks_file").set_value(str(edited / "tasks.yaml")).run()
    assert not any(d.value.columns.isin(["folder"]).any() for d in app.dataframe)
    assert any("No finished run" in i.value for i in app.info)


def test_a_tasks_file_with_a_tagging_task_is_priced_as_pals_budget_prices_it(app, tmp_path):
    """A tagging task's head is priced per token (kind: tokens), beside a sentence task, as the calculator does."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_tokens import write_tagging_tasks

    f = write_tagging_tasks(tmp_path / "tagging")
    electra = "electra-base-discriminator"  # its sentence head holds a dense layer, its token head does not
    open_file(app, f, model=electra)
    assert errors(app) == []
    tasks = tasks_of_records(read_tasks_file(f).values())
    assert [(t.name, t.num_labels, t.kind) for t in tasks] == [("ner", 3, "tokens"), ("intent", 2, "classification")]
    table = table_with(app, "fits")
    want = {(c.method, c.location or "—"): c for c in rows(PRESETS[electra], tasks, budget=Budget(ratio=1.13))}
    shared = next(c for c in rows(PRESETS[electra], tasks, methods=["shared"], budget=Budget(ratio=1.13)))
    assert shared.params_task_specific == (768 * 3 + 3) + (768 * 768 + 768 + 768 * 2 + 2)
    assert len(table) == len(want) > 0
    for _, r in table.iterrows():
        assert r["task-specific (all tasks)"] == want[(r["method"], r["location"])].params_task_specific
