"""Task kinds as folders: one registry line per kind, its pure part free of torch, and no code
outside ``pals_core/kinds/`` that branches on a kind's name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pals_core.kinds import PACKAGES, get_kind
from pals_core.kinds.errors import TaskRecordError
from pals_core.tasks.record import TaskRecord

ROOT = Path(__file__).resolve().parents[1]


def test_each_registered_kind_is_one_folder_with_a_pure_part_and_a_torch_part():
    for name in PACKAGES:
        folder = ROOT / "pals_core" / "kinds" / name
        assert (folder / "__init__.py").is_file() and (folder / "module.py").is_file()
        assert get_kind(name).name == name
    code = "import sys, pals_core.kinds as k; [k.get_kind(n) for n in k.PACKAGES]; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_each_kind_declares_every_metric_with_the_range_of_its_values():
    """A run's recorded scores are checked against these ranges (``pals_core.results.problem``): a kind that reports
    a metric says, where it declares it, what values it can take."""
    for name in PACKAGES:
        kind = get_kind(name)
        assert kind.metrics and tuple(kind.metric_ranges) == kind.metrics, name
        for metric in kind.metrics:
            lo, hi = kind.metric_range(metric)
            assert lo < hi and lo in (-1.0, 0.0), (name, metric, lo, hi)
    assert get_kind("classification").metric_range("mcc") == (-1.0, 1.0)
    assert get_kind("regression").metric_range("rmse")[1] == float("inf")


def test_an_unknown_kind_is_named_with_the_registered_ones():
    with pytest.raises(
        TaskRecordError,
        match=r"unknown kind 'ranking' \(classification, regression, multilabel, tokens, choice, span\)",
    ):
        TaskRecord("t", kind="ranking", train="x").check()
    with pytest.raises(ValueError, match="unknown kind 'ranking'"):
        get_kind("ranking")


def test_a_field_of_another_kind_is_refused_naming_what_it_is_for():
    cases = {
        ("regression", "labels", ("a", "b")): "a regression task takes no 'labels'",
        ("multilabel", "positive", "a"): "'positive' is for binary classification (f1)",
        ("classification", "range", (0, 1)): "'range' is for regression tasks",
        ("classification", "label_sep", ";"): "'label_sep' is for multilabel tasks",
    }
    for (kind, field, value), message in cases.items():
        with pytest.raises(TaskRecordError, match=re.escape(message)):
            TaskRecord("t", kind=kind, train="x", **{field: value}).check()


BRANCH = re.compile(
    r"""(==|!=|\bin\b|\.get\()\s*\(?\s*["'](classification|regression|multilabel)["']|\.(regression|multilabel)\b"""
    r"""|(==|!=|\bin\b)\s*\(?\s*["']tokens["']"""  # .get("tokens"): a profile's token counts, no kind
    r"""|(==|!=|\bin\b|\.get\()\s*\(?\s*["']choice["']|\bchoice\.module\b|kinds\.choice\b"""
)


def test_no_code_outside_the_kinds_folders_branches_on_a_kind():
    found = []
    for top in ("pals_core", "explorer", "studies"):
        for path in (ROOT / top).rglob("*.py"):
            if "kinds" in path.relative_to(ROOT).parts[:2]:
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if BRANCH.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert found == []


# --- regression on the user's scale ----------------------------------------------------------------------


def test_regression_trains_on_standardised_targets_and_reports_error_in_user_units():
    import numpy as np
    import torch

    kind = get_kind("regression")
    y = np.array([30.0, 41.0, 52.0, 41.0])
    scale = kind.scale(y)
    assert scale == {"mean": 41.0, "std": float(np.std(y))}
    z = torch.tensor([[0.5], [-1.0], [0.0], [2.0]])
    loss = kind.module().loss(z, torch.tensor(y), scale)
    assert torch.isclose(loss, torch.mean((z[:, 0] - torch.tensor((y - 41.0) / scale["std"]).float()) ** 2))
    assert kind.scale(np.array([3.0, 3.0])) == {"mean": 3.0, "std": 1.0}  # all equal: no division by zero
    values = kind.decode("t", (), z.numpy(), scale=scale).label
    assert values == [float(v) for v in z.numpy()[:, 0].astype(np.float64) * scale["std"] + 41.0]
    scores = kind.scores(None, np.array(values), y, kind.metrics, 1)
    assert list(scores) == ["pearson", "spearman", "rmse", "mae"]
    assert scores["rmse"] == pytest.approx(float(np.sqrt(np.mean((np.array(values) - y) ** 2))))
    assert scores["mae"] == pytest.approx(float(np.mean(np.abs(np.array(values) - y))))
    with pytest.raises(TaskRecordError, match="'rmse' is lower-better and cannot be the main metric"):
        TaskRecord("t", kind="regression", train="x", metric="rmse").check()


@pytest.mark.slow
def test_the_printed_summary_shows_an_error_in_the_users_units_and_a_correlation_x100():
    """pals-train's table: RMSE 1.34 minutes is "rmse 1.34", not "rmse 134.00" (a fraction's ×100)."""
    from pals_core.cli.train import format_summary
    from pals_core.train.orchestrate import format_aggregate

    record = TaskRecord("minutes", kind="regression", train="x.jsonl", label="minutes").as_dict()
    config = {"tasks": ["minutes"], "data": {"minutes": {"record": record}}}
    scores = {"minutes": {"pearson": 0.8123, "spearman": 0.8, "rmse": 1.3412, "mae": 0.9}}
    params = {"total": 1, "ratio": 1.0, "task_specific": 0, "trained": 1}
    out = format_summary(
        {"config": config, "scores": scores, "average": 0.8123, "best_step": 1, "steps": 1, "params": params}
    )
    assert "pearson 81.23" in out and "rmse 1.341" in out and "mae 0.9" in out and "134" not in out
    agg = {"minutes": {m: {"mean": v, "ci95": v / 10} for m, v in scores["minutes"].items()}}
    summary = {"config": config, "scores": agg, "method": "shared", "seeds": [0, 1], "wall_time_s": 1.0}
    summary |= {
        "average": {"mean": 0.8123, "ci95": 0.01},
        "params": {"total": 1, "ratio": 1.0, "task_specific": 0, "trained": 1},
    }
    out = format_aggregate(summary)
    assert "pearson 81.23 ± 8.12" in out and "rmse 1.341 ± 0.1341" in out


def test_a_minutes_task_predicts_minutes_and_pals_predict_reproduces_its_dev_scores(tmp_path, capsys):
    """The newcomer's "minutes" task (trips of ~41 minutes): trained a few steps, its predictions are minutes (not
    the 2-8 a head trained on raw targets gives after as many steps), the run keeps the train rows' scale, reports
    RMSE and MAE, and pals-predict on the dev file scores exactly what the summary says."""
    import json

    import numpy as np

    from pals_core.cli.predict import main as predict_main
    from pals_core.data.metrics import task_scores
    from pals_core.pricing.config import AdapterConfig
    from pals_core.tasks.readers import read_columns
    from pals_core.train.config import TrainConfig
    from pals_core.train.trainer import train

    rng = np.random.default_rng(0)
    words = ["short", "long", "traffic", "highway", "rain", "clear", "bridge", "detour"]

    def rows(n: int) -> list[dict]:
        out = []
        for _ in range(n):
            w = list(rng.choice(words, 6))
            out.append({"text": " ".join(w), "minutes": round(41 + 4 * w.count("traffic") - 3 * w.count("clear"), 1)})
        return out

    train_rows, dev_rows = rows(64), rows(24)
    for name, data in (("train", train_rows), ("dev", dev_rows)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    (tmp_path / "tasks.yaml").write_text(
        "tasks:\n  minutes: {train: train.jsonl, dev: dev.jsonl, label: minutes, kind: regression}\n"
    )
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(tmp_path / "tasks.yaml"),
        adapter=AdapterConfig(method="shared"),
        model="tiny",
        out=str(tmp_path / "run"),
        steps=40,
        batch_size=8,
        max_len=16,
        eval_every=40,
        lr=3e-3,
        seed=0,
    )
    summary = train(cfg, progress=False)
    y = np.array([r["minutes"] for r in train_rows])
    scale = summary["config"]["data"]["minutes"]["scale"]
    assert scale == {"mean": float(y.mean()), "std": float(y.std())}
    scores = summary["scores"]["minutes"]
    assert set(scores) == {"pearson", "spearman", "rmse", "mae"} and summary["tasks"]["minutes"]["metric"] == "pearson"

    capsys.readouterr()
    out = tmp_path / "pred.jsonl"
    code = predict_main(
        [str(tmp_path / "run"), "--input", str(tmp_path / "dev.jsonl"), "--out", str(out), "--no-progress"]
    )
    assert code == 0, capsys.readouterr().err
    got = [json.loads(line) for line in out.read_text().splitlines()]
    pred = np.array([g["minutes"] for g in got], dtype=np.float64)
    assert 30 < pred.mean() < 52, pred  # minutes, the user's units
    gold = np.array([float(v) for v in read_columns(str(tmp_path / "dev.jsonl"), ["minutes"]).values["minutes"]])
    record = TaskRecord("minutes", kind="regression", train="x", label="minutes")
    assert task_scores(record, {"": (pred, gold)}, 1) == scores
    assert scores["mae"] < 8  # predicting ~0 (the raw head's start) would miss by ~41 minutes

    # the ONNX export names the scale, and pals-predict on the export gives the same minutes (within ONNX's 1e-4)
    from pals_core.export.onnx import export_onnx, read_export
    from pals_core.model import MultiTaskModel

    export_onnx(MultiTaskModel.from_run(tmp_path / "run"), tmp_path / "onnx")
    assert read_export(tmp_path / "onnx")["tasks"]["minutes"]["scale"] == scale
    out = tmp_path / "pred_onnx.jsonl"
    code = predict_main(
        [str(tmp_path / "onnx"), "--input", str(tmp_path / "dev.jsonl"), "--out", str(out), "--no-progress"]
    )
    assert code == 0, capsys.readouterr().err
    onnx_pred = np.array([json.loads(line)["minutes"] for line in out.read_text().splitlines()])
    assert np.allclose(onnx_pred, pred, rtol=0, atol=1e-4 * scale["std"] * 10)


def test_mt_uncertainty_is_refused_with_the_reason_the_kind_gives(tmp_path):
    import json

    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.config import TrainConfig
    from pals_core.train.params import resolve

    rows = [{"text": f"row {i}", "tags": ["a", "b"][: 1 + i % 2]} for i in range(6)]
    (tmp_path / "tags.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "tasks.yaml").write_text("tasks:\n  tags: {train: tags.jsonl, label: tags, kind: multilabel}\n")
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(tmp_path / "tasks.yaml"),
        adapter=AdapterConfig(method="shared"),
        model="tiny",
        out=str(tmp_path / "run"),
        sampling="mt_uncertainty",
    )
    with pytest.raises(ValueError, match="a multilabel task has none"):
        resolve(cfg)


def test_the_label_set_read_from_the_file_is_checked_by_the_kind(tmp_path):
    from pals_core.kinds.errors import TaskDataError
    from pals_core.tasks.rows import read_rows

    f = tmp_path / "t.csv"
    f.write_text("text,label\n" + "".join(f"row {i},{'abc'[i % 3]}\n" for i in range(9)))
    with pytest.raises(TaskDataError, match=r"column 'label': positive label 'z' is not a label \(a, b, c\)"):
        read_rows(TaskRecord("t", train=str(f), positive="z"))
    with pytest.raises(TaskDataError, match="metric 'f1' is binary; this task has 3 labels"):
        read_rows(TaskRecord("t", train=str(f), metric="f1"))
