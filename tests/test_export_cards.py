"""Exports the ecosystem loads as it expects (docs/design.md "Using a trained run"): each merged (hf) and peft task
folder's model card gives the transformers ``pipeline(...)`` call that reproduces ``pals-predict``, and the card's
code, run as written from another working directory, gives pals-predict's labels and probabilities on the dev file —
rows longer than the run's max length included — for a classification, a regression on pairs (in the task's own
units), a multilabel and a tagging task; a peft export stores the base weights once and names the base the run
started from, loads with ``AutoPeftModelFor…`` from anywhere that base loads and with ``PeftModel`` on the export's
own copy offline, and neither exporting nor loading prints a report the user cannot act on."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from test_tokens_predict import _tagging_rows
from tiny_models import save_tiny_checkpoint, tiny_config

from pals_core.cli.export import main as pals_export
from pals_core.data.load import minilm_path
from pals_core.export.cards import card_code, pipeline_call
from pals_core.export.origin import trunk_origin
from pals_core.families.bert.presets import EMBEDDED_HUB_ID
from pals_core.forward import words_of
from pals_core.kinds import get_kind
from pals_core.model import MultiTaskModel
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig
from pals_core.train.trainer import train

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")  # peft 0.21
MAX_LEN = 16
WORDS = {"billing": ["invoice", "charge", "bill"], "refund": ["money", "back", "return"], "other": ["hello", "time"]}
SILENT_ABOUT = ("MISSING", "huggingface.co", "Could not find", "couldn't connect", "not sharded")
"""What exporting or loading must not print: a load report of the head the base lacks, a hub look-up that fails."""


def write_tasks(folder: Path) -> Path:
    """A classification (CSV), a regression on pairs (JSON Lines), a multilabel and a tagging task, each dev file
    holding rows longer than ``MAX_LEN`` tokens."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 48), ("dev", 10)):
        labels = [list(WORDS)[i % 3] for i in range(n)]
        texts = [" ".join(WORDS[y][: 1 + i % 3]) + f" please {i}" for i, y in enumerate(labels)]
        if split == "dev":  # rows the run's tokenizer cuts at 16 tokens
            texts[1] = " ".join(["money back return"] * 9)
            texts[2] = "hello time " + " ".join(["invoice charge"] * 12)
        with open(folder / f"intent_{split}.csv", "w", newline="") as fh:
            csv.writer(fh).writerows([("message", "intent"), *zip(texts, labels)])
        score = [
            {"a": f"sentence {'good ' * (i % 5)}{i}", "b": f"other {'bad ' * (i % 3)}", "y": (i % 5) + 0.5 * (i % 2)}
            for i in range(n)
        ]
        tags = [
            {
                "body": f"ticket {i} {'login' if i % 2 else 'payment'} {'slow' if i % 3 else 'fine'}",
                "tags": (["login"] if i % 2 else ["payment"]) + (["slow"] if i % 3 else []),
            }
            for i in range(n)
        ]
        ner = _tagging_rows(n, 0 if split == "train" else 1)
        if split == "dev":
            score[0] = {"a": "good " * 20, "b": "bad " * 12, "y": 2.0}
            tags[0]["body"] = "login slow " * 12
            ner.append({"words": ["Mary"] + ["and", "Kyoto"] * 12, "tags": ["B-PER"] + ["O", "B-LOC"] * 12})
        for name, rows in (("score", score), ("tags", tags), ("ner", ner)):
            (folder / f"{name}_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    f = folder / "tasks.yaml"
    f.write_text(
        "tasks:\n"
        "  intent: {train: intent_train.csv, dev: intent_dev.csv, text: message, label: intent}\n"
        "  score: {train: score_train.jsonl, dev: score_dev.jsonl, text: [a, b], label: y, kind: regression}\n"
        "  tags: {train: tags_train.jsonl, dev: tags_dev.jsonl, text: body, label: tags, kind: multilabel}\n"
        "  ner: {train: ner_train.jsonl, dev: ner_dev.jsonl, text: words, label: tags, kind: tokens}\n"
    )
    return f


def dev_rows(folder: Path, task: str) -> tuple[list, list | None]:
    """A task's dev rows as pals-predict reads them: (texts or lists of words, second texts or None)."""
    if task == "intent":
        with open(folder / "intent_dev.csv", newline="") as fh:
            return [r["message"] for r in csv.DictReader(fh)], None
    rows = [json.loads(x) for x in (folder / f"{task}_dev.jsonl").read_text().splitlines()]
    column = {"score": "a", "tags": "body", "ner": "words"}[task]
    return [r[column] for r in rows], ([r["b"] for r in rows] if task == "score" else None)


def train_run(out: Path, tasks: Path, model: str, *, frozen: bool, steps: int = 40) -> Path:
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(tasks),
        adapter=AdapterConfig(method="lora", d_s=4, freeze_trunk=frozen),
        model=model,
        out=str(out),
        steps=steps,
        batch_size=8,
        max_len=MAX_LEN,
        eval_every=steps,
        lr=1e-2,
        warmup=0.0,
        seed=0,
        num_threads=1,
    )
    train(cfg, progress=False)
    return out


@contextlib.contextmanager
def printed():
    """What a user would see printed inside the block: ``with printed() as said: …; said()``. Every way out is
    caught, whatever pytest captures itself: the file descriptors 1 and 2 (native code), ``sys.stdout`` and
    ``sys.stderr`` (print, tqdm), transformers' log records (its handler keeps the stream it found at import) and
    Python warnings."""
    import io
    import logging
    import warnings

    sys.stdout.flush(), sys.stderr.flush()
    kept = {fd: os.dup(fd) for fd in (1, 2)}
    python = io.StringIO()
    handler = logging.StreamHandler(python)
    library = logging.getLogger("transformers")
    text: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        for fd in kept:
            os.dup2(sink.fileno(), fd)
        library.addHandler(handler)
        try:
            with contextlib.redirect_stdout(python), contextlib.redirect_stderr(python):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    yield lambda: "".join(text)
        finally:
            library.removeHandler(handler)
            sys.stdout.flush(), sys.stderr.flush()
            for fd, saved in kept.items():
                os.dup2(saved, fd)
                os.close(saved)
            sink.seek(0)
            shown = [f"{w.category.__name__}: {w.message}\n" for w in caught]
            text += [sink.read().decode("utf-8", "replace"), python.getvalue(), *shown]


def exported(run: Path, out: Path, fmt: str) -> str:
    """``pals-export RUN --format FMT --out OUT``; what it printed."""
    with printed() as said:
        code = pals_export([str(run), "--format", fmt, "--out", str(out)])
    assert code == 0, said()
    return said()


@pytest.fixture(scope="module")
def frozen(tmp_path_factory) -> dict:
    """A frozen-trunk LoRA run of a tiny BERT checkpoint on the four tasks, exported to peft and hf."""
    root = tmp_path_factory.mktemp("frozen")
    data = write_tasks(root / "data").parent
    checkpoint = save_tiny_checkpoint(root / "checkpoint", "bert", tiny_config("bert", initializer_range=0.3))
    run = train_run(root / "run", data / "tasks.yaml", str(checkpoint), frozen=True)
    said = {fmt: exported(run, root / fmt, fmt) for fmt in ("peft", "hf")}
    return {"root": root, "data": data, "checkpoint": checkpoint, "run": run, "said": said}


def card_namespace(card: str, block: int, cwd: Path, monkeypatch) -> tuple[dict, str]:
    """Run a model card's Python block as written, from ``cwd``: its namespace (``predict``: the pipeline) and what it
    printed. The logging filter it adds is taken off again."""
    from transformers.utils import logging

    reports = logging.get_logger("transformers.modeling_utils")
    filters = list(reports.filters)
    monkeypatch.chdir(cwd)
    space: dict = {}
    try:
        with printed() as said:
            exec(compile(card_code(card)[block], "README.md", "exec"), space)
    finally:
        reports.filters[:] = filters
    return space, said()


# --- comparing a pipeline's answers with pals-predict's -------------------------------------------------------------


def entities(words: list[str], tags: list[str], probs) -> list[tuple]:
    """pals-predict's tags of one row as the token-classification pipeline groups words (``group_entities``): runs of
    one tag (B- starts a run), "O" left out; (start, end, tag, mean probability) in the words joined by spaces."""
    out, start = [], 0
    for word, tag, p in zip(words, tags, probs):
        bi, kind = (tag[:1], tag[2:]) if tag[:2] in ("B-", "I-") else ("I", tag)
        if out and out[-1][2] == kind and bi != "B" and out[-1][1] == start - 1:
            out[-1] = (out[-1][0], start + len(word), kind, out[-1][3] + [p])
        else:
            out.append((start, start + len(word), kind, [p]))
        start += len(word) + 1
    return [(s, e, k, float(np.mean(ps))) for s, e, k, ps in out if k != "O"]


def word_types(words: list[str], found: list[dict]) -> list[str]:
    """The pipeline's entities read back word by word: the type of the entity holding a word's first character ("O"
    outside every entity), in the words joined by spaces as the pipeline joins them."""
    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
    return [next((e["entity_group"] for e in found if e["start"] <= s < e["end"]), "O") for s in starts]


def assert_same(kind: str, task: str, rows: list, want, got: list, shared: list | None = None) -> None:
    """The pipeline's answers ``got`` on ``rows`` equal pals-predict's outputs ``want`` (labels exactly, numbers within
    1e-5). ``shared``: per row of words, the words two or more of its windows read (empty for a row that fits): the
    pipeline keeps, of entities that overlap, the longest or best-scored, pals-predict each word from the window that
    gives it the most context — so on those words alone the two may differ, and every other word is compared."""
    names = list(want.labels)
    for i, answer in enumerate(got):
        if shared and shared[i]:  # a sentence read in windows: each word no two windows share, by its type
            mine = [t.split("-", 1)[-1] for t in want.label[i]]
            theirs = word_types(rows[i], answer)
            assert [t for k, t in enumerate(theirs) if k not in shared[i]] == [
                t for k, t in enumerate(mine) if k not in shared[i]
            ]
            continue
        if kind == "classification":
            assert answer[0]["label"] == want.label[i] and abs(answer[0]["score"] - want.prob[i]) < 1e-5
            scores = {d["label"]: d["score"] for d in answer}
            assert np.abs([scores[n] for n in names] - want.probs[i]).max() < 1e-5
        elif kind == "multilabel":
            scores = {d["label"]: d["score"] for d in answer}
            assert {n for n, p in scores.items() if p > 0.5} == set(want.label[i])
            assert np.abs([scores[n] for n in names] - want.probs[i]).max() < 1e-5
        elif kind == "regression":
            assert answer["label"] == task and abs(answer["score"] - want.label[i]) < 1e-5 * max(1, abs(want.label[i]))
        else:
            expected = entities(rows[i], want.label[i], want.prob[i])
            assert [(e["start"], e["end"], e["entity_group"]) for e in answer] == [x[:3] for x in expected]
            assert all(abs(e["score"] - x[3]) < 1e-5 for e, x in zip(answer, expected))


def check_card(model, task: str, folder: Path, block: int, data: Path, cwd: Path, monkeypatch) -> str:
    """Run ``folder``'s card block from ``cwd`` and its pipeline on the task's dev rows; compare with pals-predict.
    What the card's code printed comes back."""
    card = (folder / "README.md").read_text()
    call = pipeline_call(model, task)
    assert call.line("folder") in card or call.line("model", "folder") in card
    assert call.example_line() in card
    space, said = card_namespace(card, block, cwd, monkeypatch)
    texts, pairs = dev_rows(data, task)
    kind = get_kind(model.run.records[task].kind)
    tokenizer = space["predict"].tokenizer
    assert tokenizer.model_max_length == MAX_LEN == call.arguments.get("max_length", MAX_LEN)
    rows = [words_of(t) for t in texts] if kind.per_word else texts
    given = rows if pairs is None else [{"text": a, "text_pair": b} for a, b in zip(texts, pairs)]
    longest = max(len(tokenizer(t, is_split_into_words=kind.per_word, verbose=False)["input_ids"]) for t in rows)
    assert longest > MAX_LEN, "a dev row longer than the max length: the pipeline must cut it as the run did"
    got = call(space["predict"], given)
    want = model.predict_texts(texts, pairs, tasks=[task])[task]
    shared = None
    if kind.per_word and call.arguments.get("stride") is not None:  # the words two windows read, row by row
        shared = []
        for words in rows:
            cut = tokenizer(
                words,
                is_split_into_words=True,
                truncation=True,
                max_length=MAX_LEN,
                padding=True,
                stride=call.arguments["stride"],
                return_overflowing_tokens=True,
            )
            seen = Counter(w for k in range(len(cut["input_ids"])) for w in set(cut.word_ids(k)) if w is not None)
            shared.append({w for w, n in seen.items() if n > 1})
        assert any(shared) and not all(shared), "rows read in windows and rows that fit: both compared"
    assert_same(kind.name, task, rows, want, got, shared)
    if kind.per_word:  # answers that could differ: entities found, probabilities that move from row to row
        assert any(got), want.label
    elif want.probs is not None:
        assert np.ptp(np.stack(list(want.probs)), axis=0).max() > 1e-3
    return said


TASKS = ("intent", "score", "tags", "ner")


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_the_merged_folders_card_pipeline_gives_pals_predicts_labels_and_probabilities(
    frozen, task, tmp_path, monkeypatch
):
    model = MultiTaskModel.from_run(frozen["run"])
    said = check_card(model, task, frozen["root"] / "hf" / task, 0, frozen["data"], tmp_path, monkeypatch)
    assert not [w for w in SILENT_ABOUT if w in said], said


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_the_adapter_folders_card_pipeline_gives_pals_predicts_answers_from_another_folder(
    frozen, task, tmp_path, monkeypatch
):
    """Both of the card's calls: ``AutoPeftModelFor…`` on the checkpoint the adapter names, and — offline, or the
    export moved — ``PeftModel`` on the export's own copy of the base."""
    model = MultiTaskModel.from_run(frozen["run"])
    for block in (0, 1):
        said = check_card(model, task, frozen["root"] / "peft" / task, block, frozen["data"], tmp_path, monkeypatch)
        assert not [w for w in SILENT_ABOUT if w in said], said


def trained_parameters(model, task: str) -> int:
    """A task's own weights: its adapter, its head (and its pooler)."""
    parts = [model.adapters[task], model.heads[task]] + ([model.poolers[task]] if model.poolers is not None else [])
    return sum(p.numel() for part in parts for p in part.parameters())


@pytest.mark.slow
def test_a_frozen_trunks_adapters_store_the_base_once_and_name_the_checkpoint_it_started_from(frozen):
    model = MultiTaskModel.from_run(frozen["run"])
    out, checkpoint = frozen["root"] / "peft", frozen["checkpoint"]
    files = [p for p in out.rglob("*") if p.is_file()]
    assert [p for p in files if p.name == "model.safetensors"] == [out / "base" / "model.safetensors"]
    tokenizer = sum(p.stat().st_size for p in (out / "base").glob("tokenizer*"))
    assert tokenizer > 0
    # the base once, each task's adapter and head in float32, and per folder its tokenizer, configs, card and headers
    bound = (checkpoint / "model.safetensors").stat().st_size + 4 * sum(trained_parameters(model, t) for t in TASKS)
    bound += (len(TASKS) + 1) * (tokenizer + 64 * 1024)
    assert sum(p.stat().st_size for p in files) <= bound
    for task in TASKS:
        config = json.loads((out / task / "adapter_config.json").read_text())
        assert config["base_model_name_or_path"] == str(checkpoint.resolve()) and config["revision"] is None
        assert config["modules_to_save"] == ["classifier"]
        card = (out / task / "README.md").read_text()
        assert "base_model:" not in card.split("---")[1]  # a folder, not a hub id: no hub metadata
    for fmt in ("peft", "hf"):
        said = frozen["said"][fmt]
        assert not [w for w in SILENT_ABOUT if w in said], said
        assert "README.md gives the pipeline(...) call" in said
    assert f"base: {checkpoint.resolve()} (the trunk as trained: {out}/base)" in frozen["said"]["peft"]


def test_a_checkpoint_names_its_hub_id_only_where_it_records_its_own(tmp_path):
    """The embedded MiniLM by the hub id its package packs (its config.json's ``_name_or_path`` names the model it
    was trained from); a Hugging Face cache snapshot by its repository and commit; any other folder by its path."""
    embedded = trunk_origin(None)
    assert (embedded.hub_id, embedded.path) == (EMBEDDED_HUB_ID, os.path.abspath(minilm_path()))
    recorded = json.loads((Path(minilm_path()) / "config.json").read_text())["_name_or_path"]
    assert recorded != EMBEDDED_HUB_ID  # the reason it is not read
    snapshot = tmp_path / "hub" / "models--acme--tiny-bert" / "snapshots" / ("ab" * 20)
    assert trunk_origin(str(snapshot)) == type(embedded)("acme/tiny-bert", "ab" * 20, str(snapshot))
    plain = tmp_path / "models" / "mine"
    assert trunk_origin(str(plain)) == type(embedded)(None, None, str(plain))
    assert trunk_origin("tiny").name is None


@pytest.mark.slow
def test_an_adapter_of_a_hub_checkpoint_loads_by_its_hub_id_from_the_cache(tmp_path, monkeypatch):
    """A frozen-trunk run of a checkpoint read from the Hugging Face cache: the adapter names ``org/name`` at the
    snapshot's commit, and the card's ``AutoPeftModelFor…`` call — offline, from another working directory — loads
    that base by its hub id from the cache and gives pals-predict's answers, printing no load report."""
    import huggingface_hub

    commit = "0123456789abcdef" * 2 + "01234567"
    repo = tmp_path / "hub" / "models--acme--tiny-bert"
    snapshot = save_tiny_checkpoint(repo / "snapshots" / commit, "bert", tiny_config("bert", initializer_range=0.3))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    data = write_tasks(tmp_path / "data").parent
    (data / "one.yaml").write_text(
        "tasks:\n  intent: {train: intent_train.csv, dev: intent_dev.csv, text: message, label: intent}\n"
    )
    run = train_run(tmp_path / "run", data / "one.yaml", str(snapshot), frozen=True, steps=8)
    said = exported(run, tmp_path / "peft", "peft")
    assert not [w for w in SILENT_ABOUT if w in said], said
    folder = tmp_path / "peft" / "intent"
    config = json.loads((folder / "adapter_config.json").read_text())
    assert (config["base_model_name_or_path"], config["revision"]) == ("acme/tiny-bert", commit)
    assert "base_model: acme/tiny-bert\n" in (folder / "README.md").read_text()
    assert huggingface_hub.constants.HF_HUB_OFFLINE  # the hub is never asked: the cache answers
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    away = tmp_path / "elsewhere"
    away.mkdir()
    said = check_card(MultiTaskModel.from_run(run), "intent", folder, 0, data, away, monkeypatch)
    assert not [w for w in SILENT_ABOUT if w in said], said


@pytest.mark.slow
def test_a_fine_tuned_trunk_is_stored_once_and_its_adapters_load_after_the_export_moves(tmp_path, monkeypatch):
    """A run that fine-tuned its trunk: no checkpoint holds that trunk, so its adapters name the export's copy,
    ``DIR/base``, by its absolute path (``AutoPeftModelFor…`` from any folder); moved elsewhere, the card's second
    call with its one ``folder`` line changed gives pals-predict's answers."""
    import shutil

    data = write_tasks(tmp_path / "data").parent
    checkpoint = save_tiny_checkpoint(tmp_path / "checkpoint", "bert", tiny_config("bert", initializer_range=0.3))
    run = train_run(tmp_path / "run", data / "tasks.yaml", str(checkpoint), frozen=False, steps=8)
    model = MultiTaskModel.from_run(run)
    out = tmp_path / "peft"
    exported(run, out, "peft")
    assert [p.parent.name for p in out.rglob("model.safetensors")] == ["base"]
    for task in TASKS:
        assert json.loads((out / task / "adapter_config.json").read_text())["base_model_name_or_path"] == str(
            (out / "base").resolve()
        )
    away = tmp_path / "moved" / "adapters"
    away.parent.mkdir()
    shutil.move(str(out), str(away))
    for task in ("score", "ner"):
        card = (away / task / "README.md").read_text()
        assert "fine-tuned it" in card
        moved = card.replace(repr(str((out / task).resolve())), repr(str(away / task)))
        (away / task / "README.md").write_text(moved)
        said = check_card(model, task, away / task, 1, data, tmp_path, monkeypatch)
        assert not [w for w in SILENT_ABOUT if w in said], said
