"""Your own tasks, trained: GLUE through a file equals GLUE built in; multilabel; runs know their data;
--seeds and --method separate on a tasks file; bad data never trains. The tiny BERT, real GLUE rows."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pals_core.data.glue_rows import read_tsv
from pals_core.data.load import TINY, load_tasks, load_tokenizer, tokenizer_path
from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.glue_tasks import GLUE_TASKS
from pals_core.tasks.taskfile import read_tasks_file
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

TASKS = ("rte", "mrpc", "stsb", "cola", "sst2")
KEEP = {"train": 48, "dev": 32}


def small_glue(glue_dir: Path, into: Path) -> Path:
    """The first rows of the real GLUE files, in GLUE's own layout (a GLUE folder, only shorter)."""
    for name in TASKS:
        t = GLUE_TASKS[name]
        for rel in t.files(True):
            src, dst = glue_dir / rel, into / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            lines = src.read_text(encoding="utf-8-sig").splitlines(keepends=True)
            head = 1 if t.header else 0
            n = KEEP["train" if rel.endswith(t.train_file) else "dev"]
            dst.write_text("".join(lines[: head + n]), encoding="utf-8")
    return into


def glue_as_files(glue: Path, into: Path) -> Path:
    """The same rows as CSV (rte, cola), JSON Lines (mrpc, stsb) and Parquet (sst2), other column names, GLUE's
    label order declared."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    into.mkdir(parents=True, exist_ok=True)
    fmt = {"rte": "csv", "cola": "csv", "mrpc": "jsonl", "stsb": "jsonl", "sst2": "parquet"}
    tasks = {}
    for name in TASKS:
        t = GLUE_TASKS[name]
        entry = {
            "text": ["premise", "hypothesis"] if t.text_b is not None else "utterance",
            "label": "gold",
            "kind": t.kind,
            "metric": t.main,
            "metrics": list(t.metrics),
        }
        if t.classes:
            entry["labels"] = list(t.classes)
        for split, rel in (("train", t.files(True)[0]), ("dev", t.files(True)[1])):
            raw = read_tsv(t, glue / rel)
            rows = []
            for i, y in enumerate(raw.labels):
                row = (
                    {"premise": raw.text_a[i], "hypothesis": raw.text_b[i]}
                    if raw.text_b is not None
                    else {"utterance": raw.text_a[i]}
                )
                row["gold"] = (
                    y if t.classes is None else (int(t.classes[y]) if t.classes[y].isdigit() else t.classes[y])
                )
                rows.append(row)
            path = into / f"{name}_{split}.{fmt[name]}"
            if fmt[name] == "csv":
                with open(path, "w", newline="", encoding="utf-8") as f:
                    w = csv.DictWriter(f, fieldnames=list(rows[0]))
                    w.writeheader()
                    w.writerows(rows)
            elif fmt[name] == "jsonl":
                path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            else:
                pq.write_table(pa.Table.from_pylist(rows), path)
            entry[split] = path.name
        tasks[f"my_{name}"] = entry
    f = into / "tasks.yaml"
    f.write_text(json.dumps({"tasks": tasks}, indent=1))
    return f


def run_config(out: Path, **kw) -> TrainConfig:
    base = dict(
        adapter=AdapterConfig(method="pals", d_s=24),
        model=TINY,
        out=str(out),
        steps=8,
        batch_size=4,
        max_len=64,
        eval_every=4,
        seed=3,
        sampling="annealed",
        epoch_steps=4,
    )
    return TrainConfig(**{**base, **kw})


def assert_resumes_to_the_same_numbers(root, cfg) -> None:
    """A run stopped at its first evaluation and resumed (``--resume``) ends with the numbers of the same run trained
    straight through; ``cfg(out)`` builds both runs' ``TrainConfig``."""

    class Stop(Exception):
        pass

    def stop(step, scores, average):
        raise Stop

    reference = train(cfg(root / "ref"), progress=False)
    with pytest.raises(Stop):
        train(cfg(root / "run"), progress=False, on_eval=stop)
    resumed = train(cfg(root / "run"), progress=False, resume=True)
    for key in ("scores", "average", "params", "steps", "task_steps", "final"):
        assert resumed[key] == reference[key], key


@pytest.mark.slow
def test_glue_through_a_file_is_glue_built_in(glue_dir, tmp_path):
    glue = small_glue(glue_dir, tmp_path / "glue")
    f = glue_as_files(glue, tmp_path / "mine")
    tok = load_tokenizer(tokenizer_path(TINY))
    built_in = load_tasks(list(TASKS), tok, glue_dir=str(glue), max_len=64, cache_dir=str(tmp_path / "cache"))
    mine = load_tasks(list(read_tasks_file(f).values()), tok, max_len=64, cache_dir=str(tmp_path / "cache"))
    for name in TASKS:  # the same tokenised rows
        a, b = built_in[name], mine[f"my_{name}"]
        for x, y in [(a.train, b.train), (a.dev[""], b.dev[""])]:
            for field in ("ids", "types", "offsets", "labels"):
                np.testing.assert_array_equal(getattr(x, field), getattr(y, field), err_msg=f"{name} {field}")
    s1 = train(run_config(tmp_path / "glue-run", tasks=list(TASKS), glue_dir=str(glue)), progress=False)
    s2 = train(run_config(tmp_path / "file-run", tasks=[], tasks_file=str(f)), progress=False)
    assert {f"my_{t}": s for t, s in s1["scores"].items()} == s2["scores"]  # metric for metric, to the bit
    assert s1["average"] == s2["average"]
    p1 = {**s1["params"], "per_task": {f"my_{t}": v for t, v in s1["params"]["per_task"].items()}}
    assert p1 == s2["params"]


def write_own_tasks(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    words = {"billing": "invoice charge bill", "refund": "money back return", "other": "hello weather time"}
    with open(folder / "intent.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["message", "intent"])
        for i in range(60):
            label = list(words)[i % 3]
            w.writerow([f"{words[label].split()[i % 3]} please {i}", label])
    (folder / "tags.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "body": f"ticket {i} about {'login' if i % 2 else 'payment'} {'slow' if i % 3 else ''}",
                    "tags": (["login"] if i % 2 else ["payment"]) + (["slow"] if i % 3 else []),
                }
            )
            + "\n"
            for i in range(60)
        )
    )
    (folder / "score.jsonl").write_text(
        "".join(json.dumps({"a": f"sentence {i}", "b": f"other {i % 7}", "y": (i % 11) / 2}) + "\n" for i in range(60))
    )
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  intent: {train: intent.csv, text: message, label: intent, metric: macro_f1}\n"
        "  tags: {train: tags.jsonl, text: body, label: tags, kind: multilabel}\n"
        "  score: {train: score.jsonl, text: [a, b], label: y, kind: regression, range: [0, 5]}\n"
    )
    return f


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_own_tasks_train_and_runs_know_their_data(tmp_path):
    f = write_own_tasks(tmp_path / "data")
    s = train(run_config(tmp_path / "run", tasks=[], tasks_file=str(f)), progress=False)
    assert set(s["scores"]["tags"]) == {"micro_f1", "macro_f1"}  # multilabel: BCE, threshold 0.5
    assert set(s["scores"]["intent"]) == {"macro_f1", "accuracy", "mcc"} and set(s["scores"]["score"]) == {
        "pearson",
        "spearman",
        "rmse",  # a regression reports its error in the user's units beside the correlations
        "mae",
    }
    assert s["tasks"]["tags"]["labels"] == ["login", "payment", "slow"] and s["tasks"]["tags"]["kind"] == "multilabel"
    assert s["dev_examples"] == {"intent": 6, "tags": 6, "score": 6}  # dev_fraction 0.1 of 60 rows
    from pals_core.base_model import tiny_config_dict
    from pals_core.budget.costs import design
    from pals_core.budget.solver import at_size
    from pals_core.budget.tasks import tasks_of_records
    from pals_core.families.shapes import from_hf_config

    shape = from_hf_config(tiny_config_dict(), name="tiny")
    d = shape.hidden  # heads d·C + C: the multilabel head is a classification head of C = 3 labels
    shared = at_size(design(shape, tasks_of_records(read_tasks_file(f).values()), AdapterConfig(method="shared")), None)
    assert shared.params_task_specific == (d * 3 + 3) + (d * 3 + 3) + (d + 1)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["data"]["intent"]["labels"] == ["billing", "other", "refund"]
    assert config["data"]["intent"]["files"]["train"]["sha256"]
    # --resume with a changed file is refused, naming the file
    with open(tmp_path / "data" / "intent.csv", "a") as fh:
        fh.write("one more invoice,billing\n")
    with pytest.raises(ValueError, match=r"intent.csv is not the train file the run was trained on"):
        train(run_config(tmp_path / "run", tasks=[], tasks_file=str(f), steps=12), resume=True, progress=False)


def test_resume_with_another_glue_dir_is_refused_only_when_its_files_differ(glue_dir, tmp_path):
    glue = small_glue(glue_dir, tmp_path / "glue")
    train(run_config(tmp_path / "run", tasks=["rte"], glue_dir=str(glue), steps=4), progress=False)
    copy = shutil.copytree(glue, tmp_path / "glue-copy")
    again = train(run_config(tmp_path / "run", tasks=["rte"], glue_dir=str(copy), steps=4), resume=True, progress=False)
    assert again["steps"] == 4  # the same files elsewhere: resumable
    with open(copy / "RTE" / "dev.tsv", "a", encoding="utf-8") as fh:
        fh.write("999\tA new premise.\tA new hypothesis.\tentailment\n")
    with pytest.raises(ValueError, match=r"glue-copy/RTE/dev.tsv is not the dev file the run was trained on"):
        train(run_config(tmp_path / "run", tasks=["rte"], glue_dir=str(copy), steps=6), resume=True, progress=False)


def test_bad_data_never_trains_and_leaves_no_run(tmp_path, pals_train):
    f = write_own_tasks(tmp_path / "data")
    with open(tmp_path / "data" / "score.jsonl", "a") as fh:
        fh.write(json.dumps({"a": "x", "b": "y", "y": 40}) + "\n")
    out = pals_train(
        "--model",
        TINY,
        "--tasks-file",
        str(f),
        "--method",
        "shared",
        "--steps",
        "2",
        "--out",
        str(tmp_path / "run"),
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "score.jsonl, line 61, column 'y': target 40 is outside the declared range [0, 5]" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_seeds_and_separate_take_a_tasks_file(tmp_path, pals_train):
    f = write_own_tasks(tmp_path / "data")
    common = [
        "--model",
        TINY,
        "--tasks-file",
        str(f),
        "--steps",
        "6",
        "--eval-every",
        "3",
        "--batch-size",
        "4",
        "--max-len",
        "32",
    ]
    out = pals_train(
        *common, "--method", "pals", "--d-s", "24", "--seeds", "0,1", "--out", str(tmp_path / "seeds"), cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    agg = json.loads((tmp_path / "seeds" / "summary.json").read_text())
    assert agg["seeds"] == [0, 1] and set(agg["scores"]) == {"intent", "tags", "score"}
    sep = pals_train(*common, "--method", "separate", "--out", str(tmp_path / "sep"), cwd=tmp_path)
    assert sep.returncode == 0, sep.stderr
    s = json.loads((tmp_path / "sep" / "summary.json").read_text())
    assert set(s["scores"]) == {"intent", "tags", "score"} and s["params"]["models"] == 3
    from pals_core.base_model import tiny_config_dict

    d = tiny_config_dict()["hidden_size"]
    assert s["params"]["per_task"]["tags"] - s["params"]["base"] == d * 3 + 3


def test_mt_uncertainty_refuses_a_multilabel_task(tmp_path):
    from pals_core.train.params import resolve

    f = write_own_tasks(tmp_path / "data")
    with pytest.raises(ValueError, match="a multilabel task has none"):
        resolve(run_config(tmp_path / "run", tasks=["tags"], tasks_file=str(f), sampling="mt_uncertainty"))
