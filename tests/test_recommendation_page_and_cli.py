"""One answer on the page and the command line: the explorer's recommendation and ``pals-budget``'s are the same
text and the same ranking for the same question, measured runs on disk included, and ``pals-budget`` sorts its table
as the page ranks and carries the recommendation in ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pals_core.cli.budget import main as pals_budget

ROOT = Path(__file__).resolve().parents[1]
QUESTION = {"model": "all-MiniLM-L6-v2", "tasks": "rte,mrpc", "budget": "1.13"}
ARGV = ["--model", "all-MiniLM-L6-v2", "--tasks", "rte,mrpc", "--budget", "1.13"]


def cli(capsys, *extra) -> str:
    assert pals_budget([*ARGV, *extra]) == 0
    return capsys.readouterr().out


def measured_run(root: Path, method: str, location: str, d_s, average: float) -> None:
    """A finished run of the embedded model on rte and mrpc, as pals-train writes its summary.json."""
    d = root / f"{method}-{location}"
    d.mkdir(parents=True)
    config = {
        "tasks": ["rte", "mrpc"],
        "model": None,
        "seed": 0,
        "steps": 400,
        "adapter": {"method": method, "d_s": d_s, "location": location},
    }
    summary = {"config": config, "average": average, "scores": {}, "steps": 400, "params": {"task_specific": 1}}
    (d / "summary.json").write_text(json.dumps(summary))


def page(monkeypatch, runs: Path) -> AppTest:
    monkeypatch.setenv("PALS_RUNS_DIR", str(runs))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in {**QUESTION, "view": "designs"}.items():
        at.query_params[k] = v
    return at.run()


@pytest.mark.slow
def test_the_page_and_pals_budget_give_one_recommendation_in_one_order(tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("PALS_RUNS_DIR", str(runs))
    unmeasured = json.loads(cli(capsys, "--json"))
    by_design = {r["design"]: r for r in unmeasured["recommendation"]["ranking"]}
    # a measured run of a design that does not lead on shares: the page and the CLI both rank it first
    measured_run(runs, "lora", "all", by_design["lora @ all"]["d_s"], 0.71)
    measured_run(runs, "lhuc", "all", None, 0.65)

    at = page(monkeypatch, runs)
    assert not at.exception and not [e.value for e in at.error]
    (said,) = [s.value for s in at.success if "Recommended:" in s.value]
    table = next(d.value for d in at.dataframe if "rank" in d.value.columns and "design" in d.value.columns)
    page_order = [d for r, d in zip(table["rank"], table["design"]) if str(r).strip() not in ("", "—", "None", "nan")]

    text = cli(capsys, "--wide")
    out = json.loads(cli(capsys, "--json"))
    answer = out["recommendation"]["text"]
    assert answer.startswith("Recommended: lora @ all with d_s = ")
    assert "best measured dev average here: 71.0" in answer
    assert said.replace("**", "").startswith(answer)  # the page adds its machine sentence after the same words
    lines = text.splitlines()
    dashes = next(i for i, line in enumerate(lines) if line.startswith("-----"))
    assert answer in lines[: dashes - 2]  # printed under the question, above the table (--wide: one line)
    assert [r["design"] for r in out["recommendation"]["ranking"]] == page_order
    assert out["recommendation"]["results"] == [str(runs), str(ROOT / "benchmarks" / "results")]
    # the table is sorted as the page ranks: the ranked designs first, in its order
    rows = [f"{r['method']} @ {r['location']}" if r["location"] else r["method"] for r in out["rows"]]
    assert rows[: len(page_order)] == page_order
    body = [line.split()[:2] for line in lines[dashes + 1 : dashes + 1 + len(page_order)]]
    table_order = [m if loc == "—" else f"{m} @ {loc}" for m, loc in body]
    assert table_order == page_order


def test_pals_budget_reads_runs_where_it_is_told(tmp_path, capsys):
    runs = tmp_path / "elsewhere"
    runs.mkdir()
    plain = json.loads(cli(capsys, "--json", "--results", str(runs)))
    assert "No run of this model and these tasks is measured yet" in plain["recommendation"]["text"]
    lhuc = next(r for r in plain["recommendation"]["ranking"] if r["design"] == "lhuc @ all")
    measured_run(runs, "lhuc", "all", None, 0.66)
    out = json.loads(cli(capsys, "--json", "--results", str(runs)))
    first = out["recommendation"]["ranking"][0]
    assert first["design"] == "lhuc @ all" and first["measured"]["mean"] == pytest.approx(66.0)
    assert lhuc["measured"] is None and out["recommendation"]["measured"] == 1
    assert out["rows"][0]["method"] == "lhuc"
    assert pals_budget([*ARGV, "--results", str(tmp_path / "missing")]) == 2
    assert "--results" in capsys.readouterr().err


def test_a_shape_only_model_reads_no_runs(capsys):
    out = json.loads(_run(capsys, "--model", "bert-base-uncased", "--tasks", "rte,mrpc"))
    assert out["recommendation"]["results"] == [] and out["recommendation"]["text"].startswith("Recommended: ")


def _run(capsys, *argv) -> str:
    assert pals_budget([*argv, "--budget", "1.13", "--json"]) == 0
    return capsys.readouterr().out


def test_tasks_whose_files_cannot_be_read_are_priced_and_say_their_runs_are_not_looked_up(tmp_path, capsys):
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(
        f"tasks:\n  mine:\n    train: {tmp_path / 'gone.csv'}\n    text: text\n    label: label\n    labels: [a, b]\n"
    )
    argv = ["--model", "all-MiniLM-L6-v2", "--tasks-file", str(tasks), "--budget", "1.13"]
    assert pals_budget(argv) == 0
    out = capsys.readouterr().out
    assert "\nRecommended: " in out and "measured results are not looked up: " in out and "gone.csv" in out
    assert pals_budget([*argv, "--json"]) == 0
    assert "gone.csv" in json.loads(capsys.readouterr().out)["recommendation"]["not_looked_up"]


def test_a_predicted_score_ranks_after_the_measured_and_before_the_rest():
    """``candidates`` takes predicted dev scores beside measured ones (a model fitted to measured runs gives them)."""
    from pals_core.budget.recommend import Score, answer, candidates
    from pals_core.budget.solver import Budget
    from pals_core.budget.table import rows
    from pals_core.budget.tasks import parse_tasks
    from pals_core.families.shapes import load_model

    costs = list(rows(load_model("all-MiniLM-L6-v2"), parse_tasks("rte,mrpc"), budget=Budget(ratio=1.13)))
    plain = [p.key for p in candidates(costs, Budget(ratio=1.13), hidden=384)]
    predicted = {("ia3", "all"): Score(70.0, 2.0, 5), ("lhuc", "all"): Score(72.0, 2.0, 5)}
    measured = {("shared", None): Score(60.0, None, 1)}
    picks = candidates(costs, Budget(ratio=1.13), measured, hidden=384, predicted=predicted)
    assert [p.key for p in picks][:3] == [("shared", None), ("lhuc", "all"), ("ia3", "all")]
    assert [p.key for p in picks][3:] == [k for k in plain if k not in {("shared", None), *predicted}]
    alone = candidates(costs, Budget(ratio=1.13), hidden=384, predicted=predicted)
    assert "best predicted dev average here: 72.0 ± 2.0 (5 runs)" in answer(alone, bold="")
