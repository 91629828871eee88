"""An extractive-QA task (kind: span) trained beside a sentence task: its contexts read in windows, each window
trained on its answer's tokens, the dev questions answered from their windows put back together and scored as the
official SQuAD scripts score them; every sampler, --resume to the same numbers, --seeds, --method separate,
--from RUN --add-tasks, one forward pass over a span row and a sentence row, its weights in a task file."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_task_training import assert_resumes_to_the_same_numbers, run_config  # noqa: E402

from pals_core.data.samplers import SAMPLERS  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.train.trainer import train  # noqa: E402

NAMES = ["Anna", "Mary", "John", "Ines", "Ahmed", "Li"]
CITIES = ["Paris", "Lagos", "Kyoto", "Ouagadougou"]
FILLER = "the quick brown fox jumps over the lazy dog and".split()


def _row(rng: random.Random, i: int, unanswerable: bool = True) -> dict:
    """A context of filler around '<name> visited <city> today'; the question asks for the name or the city; with
    ``unanswerable``, every fourth question has no answer (SQuAD v2's empty answers)."""
    name, city = rng.choice(NAMES), rng.choice(CITIES)
    pre = " ".join(rng.choice(FILLER) for _ in range(rng.randint(2, 30)))
    post = " ".join(rng.choice(FILLER) for _ in range(rng.randint(2, 30)))
    context = f"{pre} {name} visited {city} today {post}."
    if unanswerable and i % 4 == 3:
        return {"question": "Who visited Rome?", "context": context, "answers": {"text": [], "answer_start": []}}
    question, answer = (f"Who visited {city}?", name) if i % 2 else (f"Where did {name} go?", city)
    start = context.index(f"{name} visited {city}") + (0 if answer == name else len(name) + len(" visited "))
    return {"question": question, "context": context, "answers": {"text": [answer], "answer_start": [start]}}


def write_span_tasks(folder: Path, n_train: int = 48, n_dev: int = 16, unanswerable: bool = True) -> Path:
    """A SQuAD-layout task (only its paths and kind in the tasks file) and a sentence task; returns the tasks file."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for split, n in (("train", n_train), ("dev", n_dev)):
        (folder / f"qa_{split}.jsonl").write_text(
            "".join(json.dumps(_row(rng, i, unanswerable)) + "\n" for i in range(n))
        )
        (folder / f"s_{split}.csv").write_text(
            "text,label\n"
            + "".join(f"{'good' if i % 2 else 'bad'} day {i},{'pos' if i % 2 else 'neg'}\n" for i in range(n))
        )
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n  qa: {train: qa_train.jsonl, dev: qa_dev.jsonl, kind: span}\n"
        "  s: {train: s_train.csv, dev: s_dev.csv}\n"
    )
    return f


def _answers_as_the_example_reads_them(run: Path, rows: list[dict], max_len: int, stride: int) -> list[str]:
    """Each question answered from the run's model on the tokenizer's own overflow windows (``only_second``, the
    run's stride), decoded by the kind (transformers' question-answering example)."""
    from pals_core.kinds.span.decoding import Window, decode_answer
    from pals_core.model import MultiTaskModel

    model = MultiTaskModel.from_run(run)
    tok = model.run.tokenizer()
    scale = model.run.config["data"]["qa"].get("scale")
    out = []
    for r in rows:
        enc = tok(
            r["question"].lstrip(),
            r["context"],
            truncation="only_second",
            max_length=max_len,
            stride=stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            return_token_type_ids=True,
        )
        windows = []
        for k, ids in enumerate(enc["input_ids"]):
            with torch.no_grad():
                z = model(
                    task="qa", input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([enc["token_type_ids"][k]])
                )[0].numpy()
            chars = [o if s == 1 else (-1, -1) for o, s in zip(enc["offset_mapping"][k], enc.sequence_ids(k))]
            windows.append(Window(z[:, 0], z[:, 1], np.asarray(chars)))
        out.append(decode_answer(r["context"], windows, bool((scale or {}).get("unanswerable"))).text)
    return out


@pytest.mark.parametrize("unanswerable", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["v1", "v2"])
def test_a_span_task_trains_beside_a_sentence_task_and_its_dev_scores_are_squads_on_its_windows(tmp_path, unanswerable):
    """Contexts longer than the max length are read in windows; the run's dev scores for the span task are the
    official SQuAD scores (v1.1's, or v2.0's with unanswerable questions) of the answers its model gives on the
    tokenizer's own windows of each dev question; "no answer" a prediction only where train holds such questions."""
    from pals_core.kinds.span.outputs import squad_scores

    f = write_span_tasks(tmp_path / "data", unanswerable=unanswerable)
    s = train(
        run_config(
            tmp_path / "run", tasks=[], tasks_file=str(f), steps=30, eval_every=30, max_len=32, lr=3e-3, batch_size=8
        ),
        progress=False,
    )
    assert set(s["scores"]["qa"]) == {"f1", "exact_match"} and s["tasks"]["qa"]["metric"] == "f1"
    assert s["windows"]["qa"]["train"]["rows"] > 10 and s["windows"]["qa"]["dev"]["windows"] > 16
    assert s["config"]["data"]["qa"]["scale"] == {"unanswerable": unanswerable}
    share = 0.25 if unanswerable else 0.0  # "no answer" to all: right on the unanswerable quarter
    assert s["majority"]["qa"] == {"f1": share, "exact_match": share}
    assert s["task_steps"]["qa"] > 0 and s["train_examples"]["qa"] == 48
    from pals_core.cli.train import format_summary

    assert "qa: contexts longer than --max-len 32, read in overlapping windows (stride 10): " in format_summary(s)
    dev = [json.loads(line) for line in (tmp_path / "data" / "qa_dev.jsonl").read_text().splitlines()]
    answers = _answers_as_the_example_reads_them(tmp_path / "run", dev, 32, 32 // 3)
    golds = [list(zip(r["answers"]["text"], r["answers"]["answer_start"])) for r in dev]
    assert squad_scores(answers, golds) == pytest.approx(s["scores"]["qa"], abs=1e-12)
    if not unanswerable:
        assert all(a not in ("", "empty") for a in answers) and s["scores"]["qa"]["f1"] > 0

    # pals-predict on the dev file: the answer, its probability and its characters; the same answers, the same scores
    from pals_core.cli.predict import main as predict_main

    out = tmp_path / "pred.jsonl"
    args = [str(tmp_path / "run"), "--input", str(tmp_path / "data" / "qa_dev.jsonl"), "--out", str(out)]
    assert predict_main([*args, "--tasks", "qa", "--no-progress"]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["qa"] for g in got] == answers
    assert squad_scores([g["qa"] for g in got], golds) == s["scores"]["qa"]
    for g in got:
        assert 0 < g["qa_prob"] <= 1 and g["question"] and g["answers"]  # the input's columns kept beside
        if g["qa"] not in ("", "empty"):
            assert g["context"][g["qa_start"] : g["qa_end"]] == g["qa"]
        else:
            assert (g["qa_start"], g["qa_end"]) == (-1, -1)


def test_one_pass_answers_a_span_row_and_a_sentence_row_together():
    from pals_core.base_model import tiny_config_dict
    from pals_core.model import MultiTaskModel

    torch.manual_seed(0)
    for method in ("pals", "lora", "shared"):
        cfg = AdapterConfig(method=method, d_s=12) if method != "shared" else AdapterConfig(method="shared")
        model = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"qa": 2, "intent": 3}, spans=["qa"])
        ids = torch.randint(1000, 2000, (2, 7))
        mask = torch.ones_like(ids)
        mask[1, 5:] = 0
        out = model.forward_mixed(ids, mask, torch.zeros_like(ids), tasks=["qa", "intent"])
        assert out[0].shape == (7, 2) and out[1].shape == (3,)
        torch.testing.assert_close(out[0], model(task="qa", input_ids=ids[:1], attention_mask=mask[:1])[0])
        torch.testing.assert_close(out[1], model(task="intent", input_ids=ids[1:], attention_mask=mask[1:])[0])
        every = model.predict_all(ids, mask, torch.zeros_like(ids))
        assert every["qa"].shape == (2, 7, 2) and every["intent"].shape == (2, 3)


def test_a_span_tasks_weights_travel_in_a_task_file(tmp_path):
    from pals_core.base_model import tiny_config_dict
    from pals_core.model import MultiTaskModel

    torch.manual_seed(0)
    cfg = AdapterConfig(method="lora", d_s=4)
    model = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"qa": 2, "intent": 3}, spans=["qa"])
    model.save_task("qa", tmp_path / "qa.safetensors")
    other = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"intent": 3})
    other.bert.load_state_dict(model.bert.state_dict())
    assert other.load_task(tmp_path / "qa.safetensors") == "qa" and other.spans == {"qa"}
    ids = torch.randint(1000, 2000, (2, 6))
    torch.testing.assert_close(other(task="qa", input_ids=ids), model(task="qa", input_ids=ids))
    with pytest.raises(ValueError, match="a sentence head in the model, a start and end head on every token"):
        MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"qa": 2}).load_task(tmp_path / "qa.safetensors")


def test_a_question_leaving_its_context_no_room_is_one_line_naming_file_and_row(tmp_path):
    from pals_core.kinds.errors import TaskDataError

    f = write_span_tasks(tmp_path / "data", n_train=8, n_dev=4)
    rows = (tmp_path / "data" / "qa_dev.jsonl").read_text().splitlines()
    long = json.loads(rows[2]) | {"question": " ".join(["which"] * 40) + "?"}
    rows[2] = json.dumps(long)
    (tmp_path / "data" / "qa_dev.jsonl").write_text("\n".join(rows) + "\n")
    with pytest.raises(TaskDataError, match=r"qa_dev.jsonl, row 3: its question and special tokens take \d+ of the 32"):
        train(run_config(tmp_path / "run", tasks=[], tasks_file=str(f), steps=2, max_len=32), progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("sampling", sorted(SAMPLERS))
def test_every_sampler_trains_a_span_task_beside_a_sentence_task(tmp_path, sampling):
    f = write_span_tasks(tmp_path / "data")
    s = train(
        run_config(tmp_path / "run", tasks=[], tasks_file=str(f), steps=6, eval_every=6, max_len=32, sampling=sampling),
        progress=False,
    )
    assert set(s["scores"]) == {"qa", "s"} and "f1" in s["scores"]["qa"]
    assert sum(s["task_steps"].values()) >= 6


@pytest.mark.slow
def test_a_run_with_a_span_task_resumes_to_the_same_numbers(tmp_path):
    f = write_span_tasks(tmp_path / "data")

    def cfg(out):
        return run_config(
            out, tasks=[], tasks_file=str(f), steps=8, eval_every=4, lr=1e-3, max_len=32, sampling="mt_uncertainty"
        )

    assert_resumes_to_the_same_numbers(tmp_path, cfg)


@pytest.mark.slow
def test_seeds_separate_and_an_added_span_task(tmp_path, pals_train):
    f = write_span_tasks(tmp_path / "data")
    common = ["--model", "tiny", "--tasks-file", str(f), "--steps", "4", "--eval-every", "4", "--batch-size", "4"]
    common += ["--max-len", "32"]
    out = pals_train(*common, "--method", "pals", "--d-s", "24", "--seeds", "0,1", "--out", "seeds", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    agg = json.loads((tmp_path / "seeds" / "summary.json").read_text())
    assert agg["seeds"] == [0, 1] and set(agg["scores"]) == {"qa", "s"}
    sep = pals_train(*common, "--method", "separate", "--out", "sep", cwd=tmp_path)
    assert sep.returncode == 0, sep.stderr
    s = json.loads((tmp_path / "sep" / "summary.json").read_text())
    assert set(s["scores"]) == {"qa", "s"} and s["params"]["models"] == 2
    (tmp_path / "data" / "s.yaml").write_text("tasks:\n  s: {train: s_train.csv, dev: s_dev.csv}\n")
    (tmp_path / "data" / "qa.yaml").write_text("tasks:\n  qa: {train: qa_train.jsonl, dev: qa_dev.jsonl, kind: span}\n")
    base = ["--model", "tiny", "--batch-size", "4", "--method", "lora", "--d-s", "4", "--freeze-trunk"]
    steps = ["--steps", "4", "--eval-every", "4"]
    out = pals_train(
        *base,
        *steps,
        "--max-len",
        "32",
        "--tasks-file",
        str(tmp_path / "data" / "s.yaml"),
        "--out",
        "base",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    added = pals_train(
        "--from", "base", "--add-tasks", str(tmp_path / "data" / "qa.yaml"), *steps, "--out", "more", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    more = json.loads((tmp_path / "more" / "summary.json").read_text())
    first = json.loads((tmp_path / "base" / "summary.json").read_text())
    assert more["added"]["tasks"] == ["qa"] and "f1" in more["scores"]["qa"]
    assert more["scores"]["s"] == first["scores"]["s"]


def test_the_profile_counts_each_contexts_windows_as_the_run_reads_them(tmp_path):
    """pals-tasks' figures for a span task: context and question tokens, windows per context and the sequences in
    all — each the windows ``pair_windows`` cuts (what training reads) — the share of unanswerable questions and the
    answers' length; a question leaving its context no room is refused naming file and row."""
    from pals_core.data.load import load_tokenizer, minilm_path
    from pals_core.data.profile import profile_tasks
    from pals_core.data.windows import pair_windows
    from pals_core.kinds import get_kind
    from pals_core.kinds.errors import TaskDataError
    from pals_core.tasks.taskfile import read_tasks_file

    f = write_span_tasks(tmp_path / "data")
    record = read_tasks_file(f)["qa"]
    (p,) = profile_tasks([record], max_len=32)
    rows = [
        json.loads(x) for s in ("train", "dev") for x in (tmp_path / "data" / f"qa_{s}.jsonl").read_text().splitlines()
    ]
    got = pair_windows(
        load_tokenizer(minilm_path()), [r["question"] for r in rows], [r["context"] for r in rows], 32, 10
    )
    per_row = np.bincount(got["row"], minlength=len(rows))
    t = p["tokens"]
    assert (t["stride"], t["windows"]["total"], t["windows"]["max"]) == (10, len(got["row"]), int(per_row.max()))
    assert t["contexts_windowed"] == int((per_row > 1).sum()) > 10
    context = [int((o[:, 0] >= 0).sum()) for k, o in enumerate(got["offsets"]) if per_row[got["row"][k]] == 1]
    assert max(context) <= t["context"]["max"]
    d = p["distribution"]["train"]
    assert (d["questions"], d["unanswerable"], d["answer_words"]["max"]) == (48, 12, 1)
    lines = get_kind("span").profile_lines(p, None)
    assert f"{t['windows']['total']:,} sequences in all" in lines[0] and "25.0 %" in lines[1]
    long = dict(rows[0], question=" ".join(["which"] * 40))
    (tmp_path / "data" / "qa_dev.jsonl").write_text(json.dumps(long) + "\n")
    with pytest.raises(TaskDataError, match=r"qa_dev.jsonl, row 1: its question and special tokens take \d+ of the 32"):
        profile_tasks([record], max_len=32)
