"""A tagging task (kind: tokens) in ``pals-tasks``, the explorer's "Your tasks" and ``pals-budget --tasks-file``:
sentences, words and sub-tokens per sentence, the sentences longer than ``--max-len`` and the windows they are read in
(and what cutting them would lose), entities per type as seqeval chunks them, the "O" share and the all-"O"
reference; its head priced per task."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pals_core.data.profile import profile_task, tokenizer_of
from pals_core.tasks.taskfile import read_tasks_file

TRAIN = [
    (
        ["John", "Smithson", "lives", "in", "New", "York", "since", "twenty", "twelve"],
        "B-PER I-PER O O B-LOC I-LOC O O O",
    ),
    (["Mary", "joined", "Acme", "Corp", "today"], "B-PER O B-ORG I-ORG O"),
    (["The", "parcel", "reached", "Leeds"], "O O O B-LOC"),
    (["Ask", "Bob", "about", "Zanzibarian", "logistics"], "O B-PER O B-LOC O"),
    (["Nothing", "here"], "O O"),
]
DEV = [(["Ann", "visited", "Porto"], "B-PER O B-LOC"), (["ok"], "O")]


def write(folder: Path) -> Path:
    """A CoNLL train file (words and tags: its first and last columns, the record's default ``text`` and
    ``label``), a JSON Lines dev file whose ``text`` and ``label`` keys hold lists, and a tasks file naming both."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["-DOCSTART- O", ""]
    for words, tags in TRAIN:
        lines += [f"{w} {t}" for w, t in zip(words, tags.split())] + [""]
    (folder / "train.conll").write_text("\n".join(lines))
    (folder / "dev.jsonl").write_text("".join(json.dumps({"text": w, "label": t.split()}) + "\n" for w, t in DEV))
    f = folder / "tasks.yaml"
    f.write_text("tasks:\n  ner: {train: train.conll, dev: dev.jsonl, kind: tokens}\n")
    return f


def kept_by_hand(tok, words: list[str], max_len: int) -> int:
    """Words whose first sub-token lies before the last position ([CLS] w1 … [SEP] in max_len tokens)."""
    pos, kept = 1, 0
    for w in words:
        if pos < max_len - 1:
            kept += 1
        pos += len(tok(w, add_special_tokens=False)["input_ids"])
    return kept


@pytest.fixture(scope="module")
def tok():
    return tokenizer_of("tiny")


@pytest.mark.slow  # the first tokenizer call of a process: ~4 s
def test_the_profile_counts_sentences_words_sub_tokens_cut_words_entities_and_o(tmp_path, tok):
    record = read_tasks_file(write(tmp_path))["ner"]
    p = profile_task(record, tokenizer=tok, max_len=8)
    assert (p["kind"], p["train_rows"], p["dev_rows"]) == ("tokens", 5, 2)
    assert p["labels"] == ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]
    train, dev = p["distribution"]["train"], p["distribution"]["dev"]
    lengths = [len(w) for w, _ in TRAIN]
    assert (train["sentences"], train["words"]) == (5, sum(lengths))
    assert train["words_per_sentence"] == {
        "p50": 5,
        "p95": math.ceil(np.percentile(lengths, 95)),
        "max": 9,
    }
    assert train["entities"] == {"LOC": 3, "PER": 3, "ORG": 1}  # New York is one LOC; John Smithson one PER
    tags = [t for _, ts in TRAIN for t in ts.split()]
    assert train["o_share"] == pytest.approx(tags.count("O") / len(tags))
    assert (dev["sentences"], dev["entities"], dev["o_share"]) == (2, {"PER": 1, "LOC": 1}, 0.5)
    # sub-tokens per sentence, special tokens included, untruncated; the words max_len leaves without a sub-token
    rows = [w for w, _ in TRAIN + DEV]
    subs = [len(tok(w, is_split_into_words=True)["input_ids"]) for w in rows]
    t = p["tokens"]
    assert (t["p50"], t["p95"], t["max"]) == (
        math.ceil(np.percentile(subs, 50)),
        math.ceil(np.percentile(subs, 95)),
        max(subs),
    )
    cut = [len(w) - kept_by_hand(tok, w, 8) for w in rows]
    assert (t["words"], t["words_cut"], t["rows_cut"]) == (sum(map(len, rows)), sum(cut), sum(c > 0 for c in cut))
    assert t["words_cut"] > 0  # what --truncate would cut at max_len 8: counted, not assumed
    # read in windows instead: 6 content tokens a window ([CLS] … [SEP] in 8), each 6 − stride 2 after the last
    windows = [1 if n <= 8 else math.ceil((n - 2 - 6) / 4) + 1 for n in subs]
    assert (t["stride"], t["fixed"]) == (2, 2)
    assert (t["rows_windowed"], t["windows_max"]) == (sum(w > 1 for w in windows), max(windows)) and max(windows) > 1
    m = p["majority"]
    assert m["metric"] == "entity_f1" and m["main"] == 0.0


def test_a_plain_tag_set_and_an_i_without_b_are_chunked_as_seqeval_chunks_them(tmp_path):
    from seqeval.metrics.sequence_labeling import get_entities

    from pals_core.kinds import get_kind

    rows = [["I-PER", "I-PER", "O", "B-LOC"], ["I-LOC", "B-LOC", "O"]]
    names = ("O", "B-LOC", "I-LOC", "I-PER")
    y = get_kind("tokens").label_array([[names.index(t) for t in r] for r in rows], 4)
    train, _ = get_kind("tokens").distribution(y, {"": y[:1]}, names)
    found = {}
    for kind, _, _ in get_entities(rows):
        found[kind] = found.get(kind, 0) + 1
    assert train["entities"] == found == {"PER": 1, "LOC": 3}


def test_pals_tasks_prints_the_tagging_profile(tmp_path, capsys):
    from pals_core.cli.tasks import main

    f = write(tmp_path)
    assert main([str(f), "--model", "tiny", "--max-len", "8"]) == 0
    out = capsys.readouterr().out
    assert "ner  (tokens) · train 5 rows · dev 2 rows" in out
    assert "  entities  train  dev" in out and "  LOC           3    1" in out
    assert "  train: 5 sentences · 25 words · words per sentence p50 5 · p95 9 · max 9 · 'O' on 60.0 % of words" in out
    line = next(x for x in out.splitlines() if "majority reference" in x)
    assert line.startswith("  majority reference, all O (entity F1 0): entity_f1 0.0 · ") and "token_accuracy" in line
    tokens = next(x for x in out.splitlines() if x.startswith("  tokens"))
    assert (
        " read in overlapping windows (stride 2; the longest in " in tokens
        and ", no word lost (--truncate would cut" in tokens
    )
    last = out.rstrip().splitlines()[-1]  # the suggested length says the windows its longest sentence takes
    assert last.startswith("suggested: --max-len 12 ") and last.endswith(
        "; ner: its longest sentence (12 tokens) fits in one window of 12: no word lost"
    )
    from pals_core.cli.tasks import suggestion
    from pals_core.data.profile import profile_task

    long = profile_task(read_tasks_file(f)["ner"], tokenizer=tokenizer_of("tiny"), max_len=8)
    assert suggestion([long], limit=9).endswith(
        "ner: its longest sentence (12 tokens) is read in 2 overlapping windows of 9 (stride 3): no word lost"
    )
    # the user's --stride where it holds at the suggested length, else the default a run there takes
    assert suggestion([long], limit=9, stride=1).endswith("2 overlapping windows of 9 (stride 1): no word lost")
    assert suggestion([long], limit=9, stride=5).endswith("2 overlapping windows of 9 (stride 3): no word lost")
    assert main([str(f), "--model", "tiny", "--max-len", "8", "--stride", "5"]) == 2
    assert "stride must be an integer from 0 to max_len // 2 = 4, got 5" in capsys.readouterr().err


def test_pals_budget_prices_a_tasks_file_with_a_tagging_task(tmp_path, capsys):
    """The kind and its tag count reach the calculator; the head is a Linear(d, C) applied to every token: d·C + C
    parameters for BERT (one per task; its FLOPs per token come with the per-token head)."""
    from pals_core.budget.costs import head_params
    from pals_core.budget.tasks import tasks_of_records
    from pals_core.cli.budget import main
    from pals_core.families.shapes import PRESETS

    f = write(tmp_path)
    (task,) = tasks_of_records(read_tasks_file(f).values())
    assert (task.name, task.kind, task.num_labels) == ("ner", "tokens", 7)
    bert = PRESETS["bert-base-uncased"]
    assert head_params(bert, task) == bert.hidden * 7 + 7
    assert main(["--tasks-file", str(f), "--budget", "1.13"]) == 0
    out = capsys.readouterr().out
    note, header = out.split("\n\n")[:2]  # the file names no model: the answer says whose it prices
    assert note.startswith("Priced for bert-base-uncased") and "1 tasks (ner)" in header.splitlines()[0]
    assert "\nRecommended: " in out


@pytest.mark.slow  # a page run with the tiny tokenizer: ~5 s
def test_the_explorer_task_panel_shows_the_tagging_profile(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from explorer.inputs import TASKS_FILE, TINY

    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    f = write(tmp_path / "data")
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120).run()
    at.sidebar.selectbox(key="model").set_value(TINY).run()
    at.sidebar.radio(key="task_mode").set_value(TASKS_FILE).run()
    at.sidebar.text_input(key="tasks_file").set_value(str(f)).run()
    at.segmented_control(key="view").set_value("tasks").run()
    assert [e.value for e in at.error] + [e.value for e in at.exception] == []
    table = next(d.value for d in at.dataframe if "tokens p95" in d.value.columns)
    assert list(table["task"]) == ["ner"] and table["labels (C_t)"][0] == 7
    assert table["majority class on dev"][0] == "0.0 (entity_f1)"
    text = next(m.value for m in at.markdown if "(one tag per word)" in m.value)
    assert "train: 5 sentences" in text and "'O' on 60.0%" in text
    assert "sentences longer than n = " not in text  # every sentence fits in the sidebar's n
    # the entities per type, train and dev, charted: the counts pals-tasks' entity table prints
    [chart] = [el for el in at.get("plotly_chart") if getattr(el, "key", "") == "fig_labels::ner"]
    bars = {t["name"].split()[0]: dict(zip(t["x"], t["customdata"])) for t in json.loads(chart.proto.spec)["data"]}
    assert bars["train"] == {"LOC": 3, "PER": 3, "ORG": 1}
    assert bars["dev"] == {"LOC": 1, "PER": 1, "ORG": 0}  # DEV: Ann (PER), Porto (LOC)
    at.sidebar.number_input(key="seq_len").set_value(8).run()
    text = next(m.value for m in at.markdown if "(one tag per word)" in m.value)
    assert "sentences longer than n = 8 read in overlapping windows (stride 2; the longest in " in text
    # the train form's suggested length says the windows the longest sentence takes at it
    at.segmented_control(key="view").set_value("train").run()
    assert [e.value for e in at.error] + [e.value for e in at.exception] == []
    caption = next(c.value for c in at.caption if c.value.startswith("Default "))
    assert caption.endswith(" ner: its longest sentence (12 tokens) fits in one window of 12: no word lost."), caption
