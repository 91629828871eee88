"""Add a task later: ``pals-train --from RUN_DIR --add-tasks F --out NEW`` trains only the new
tasks' parts on a run whose design shares nothing trained; every old task's outputs stay bit-identical; the new run
is priced as the calculator prices the whole task set; a design that trains the trunk (PALs as in the paper) or
shares modules across tasks (CA-MTL) is refused with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_predict import own_tasks

from pals_core.base_model import tiny_config_dict
from pals_core.cli.train import main as train_main
from pals_core.model import MultiTaskModel
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

BIN = Path(sys.executable).parent
COMMON = [
    "--model",
    "tiny",
    "--max-len",
    "32",
    "--batch-size",
    "8",
    "--eval-every",
    "20",
    "--lr",
    "3e-3",
    "--eval-batch-size",
    "16",
    "--no-progress",
]


def split_tasks(folder: Path) -> tuple[Path, Path]:
    """The three tasks of ``own_tasks``: intent and score first, tags added later (a second file, same folder)."""
    full = own_tasks(folder)
    lines = full.read_text().splitlines()
    first, later = folder / "first.yaml", folder / "later.yaml"
    first.write_text("\n".join(line for line in lines if not line.strip().startswith("tags:")) + "\n")
    later.write_text("\n".join(line for line in lines if not line.strip().startswith(("intent:", "score:"))) + "\n")
    return first, later


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("addtasks")
    first, later = split_tasks(root / "data")
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(first),
        model="tiny",
        out=str(root / "base"),
        steps=20,
        batch_size=8,
        max_len=32,
        eval_every=20,
        lr=3e-3,
        eval_batch_size=16,
        seed=0,
        adapter=AdapterConfig(method="lora", d_s=4, freeze_trunk=True),
    )
    train(cfg, progress=False)
    return root, root / "base", later


def _logits(model: MultiTaskModel, task: str):
    texts = [f"refund money back please {i}" for i in range(9)]
    pairs = [f"other {i}" for i in range(9)] if len(model.run.records[task].text) == 2 else None
    return torch.as_tensor(model.predict(texts, task=task, text_pair=pairs).logits)


@pytest.mark.slow
def test_added_task_trains_alone_and_old_outputs_stay_bit_identical(base, capsys):
    root, base_run, later = base
    new = root / "new"
    assert (
        train_main(
            [
                "--from",
                str(base_run),
                "--add-tasks",
                str(later),
                "--out",
                str(new),
                "--steps",
                "20",
                "--eval-every",
                "10",
                "--seed",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "added: tags trained on" in capsys.readouterr().out
    summary = json.loads((new / "summary.json").read_text())
    base_summary = json.loads((base_run / "summary.json").read_text())
    assert summary["config"]["tasks"] == ["intent", "score", "tags"]
    assert summary["added"]["tasks"] == ["tags"] and set(summary["task_steps"]) == {"tags"}
    assert summary["task_steps"]["tags"] == 20
    for t in ("intent", "score"):  # the base run's scores, named as such
        assert summary["scores"][t] == base_summary["scores"][t]
    # only the new task's parts trained: exactly its per-task count
    assert summary["params"]["trained"] == summary["params"]["per_task"]["tags"]
    old, grown = MultiTaskModel.from_run(base_run), MultiTaskModel.from_run(new)
    for t in ("intent", "score"):
        assert torch.equal(_logits(old, t), _logits(grown, t)), t
    for name, p in old.state_dict().items():  # the trunk and the old tasks' weights, bit for bit
        assert torch.equal(p, grown.state_dict()[name]), name
    # pals-budget prices the grown run as the whole task set, from the config alone
    (root / "tiny.json").write_text(json.dumps(tiny_config_dict()))
    out = subprocess.run(
        [
            str(BIN / "pals-budget"),
            "--tasks-file",
            str(root / "data" / "tasks.yaml"),
            "--model",
            str(root / "tiny.json"),
            "--method",
            "lora",
            "--d-s",
            "4",
            "--freeze-trunk",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rows"][0]["params_total"] == summary["params"]["total"]
    early = dict(MultiTaskModel.from_run(new, step=10).named_task_parameters("tags"))
    late = dict(MultiTaskModel.from_run(new, step=20).named_task_parameters("tags"))
    assert any(not torch.equal(early[k], late[k]) for k in late), "the added task's parts trained"


@pytest.mark.parametrize(
    "design, reason",
    [
        (["--method", "pals", "--d-s", "16", "--heads", "2"], "trains the shared trunk (all of its"),
        pytest.param(
            ["--method", "ca_mtl", "--d-s", "8", "--freeze-trunk"], "shared by all tasks", marks=pytest.mark.slow
        ),
    ],
)
def test_a_design_that_shares_trained_parts_is_refused_with_its_reason(tmp_path, design, reason, capsys):
    first, later = split_tasks(tmp_path / "data")
    assert train_main(["--tasks-file", str(first), *design, "--steps", "2", "--out", str(tmp_path / "b"), *COMMON]) == 0
    capsys.readouterr()
    assert (
        train_main(
            ["--from", str(tmp_path / "b"), "--add-tasks", str(later), "--out", str(tmp_path / "n"), "--no-progress"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert reason in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "n").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--method", "lora"], "the design is the base run's"),
        (["--tasks", "intent"], "leave out --tasks"),
    ],
)
def test_bad_extension_flags_are_one_line(tmp_path, extra, message, capsys):
    assert (
        train_main(
            [
                "--from",
                str(tmp_path / "base"),
                "--add-tasks",
                str(tmp_path / "later.yaml"),
                "--out",
                str(tmp_path / "n"),
                *extra,
            ]
        )
        == 2
    )
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_adding_a_name_the_run_has_or_from_an_unfinished_run_is_refused(base, tmp_path, capsys):
    root, base_run, _ = base
    same = root / "data" / "first.yaml"
    assert train_main(["--from", str(base_run), "--add-tasks", str(same), "--out", str(tmp_path / "n")]) == 2
    assert "already a task of the base run" in capsys.readouterr().err
    assert train_main(["--from", str(tmp_path), "--add-tasks", str(same), "--out", str(tmp_path / "m")]) == 2
    assert "no pals-train run there" in capsys.readouterr().err


@pytest.mark.slow
def test_adding_a_task_with_several_seeds_trains_it_once_per_seed_on_the_same_base(base, capsys):
    """``--from`` with ``--seeds``: one folder per seed, each growing the same base run; the base tasks' scores are
    the base run's (± 0, they did not train), the added task's weights differ by seed."""
    root, base_run, later = base
    out = root / "seeds"
    assert (
        train_main(
            [
                "--from",
                str(base_run),
                "--add-tasks",
                str(later),
                "--out",
                str(out),
                "--steps",
                "10",
                "--eval-every",
                "10",
                "--seeds",
                "0,1",
                "--no-progress",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "seeds 0,1" in text and "tags" in text
    base_scores = json.loads((base_run / "summary.json").read_text())["scores"]
    grown = [MultiTaskModel.from_run(out / f"seed-{s}") for s in (0, 1)]
    for s in (0, 1):
        summary = json.loads((out / f"seed-{s}" / "summary.json").read_text())
        assert summary["config"]["seed"] == s and summary["added"]["tasks"] == ["tags"]
        assert {t: summary["scores"][t] for t in ("intent", "score")} == {
            t: base_scores[t] for t in ("intent", "score")
        }
    a, b = (dict(m.named_task_parameters("tags")) for m in grown)
    assert any(not torch.equal(a[k], b[k]) for k in a), "each seed trains the added task afresh"
    old = MultiTaskModel.from_run(base_run).state_dict()
    for name, p in old.items():  # the base's weights, bit for bit, in every seed's run
        assert all(torch.equal(p, m.state_dict()[name]) for m in grown), name
